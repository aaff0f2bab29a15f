//! protege personas as TOML files: a schema with precise diagnostics, a registry of
//! resolvers, and a folder of personas that reloads itself while the application runs.
//!
//! ```
//! use protege::config::{Persona, Registry};
//! let source = r#"
//! instructions = "You answer billing questions."
//! [[message_resolvers]]
//! use = "LoadText"
//! template = "{{ persona.instructions }}"
//! "#;
//! let persona = Persona::parse("personas/billing.toml".as_ref(), source, &Registry::new()).unwrap();
//! assert_eq!(persona.name(), "billing");
//! assert_eq!(format!("{:?}", persona.message_chain), r#"["LoadText"]"#);
//! ```

mod builtins;
mod diagnostic;
mod error;
mod names;
mod persona;
mod reader;
mod registry;
mod set;
mod template_span;
mod watch;

pub use diagnostic::{Diagnostic, Diagnostics, render};
pub use error::{Error, ErrorKind, Result};
pub use persona::{PERSONA_FILE_MAX_BYTES, Persona};
pub use registry::Registry;
pub use set::PersonaSet;
pub use watch::{DEFAULT_DEBOUNCE, Event, Watch};
