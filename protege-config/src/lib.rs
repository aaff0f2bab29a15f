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
//!
//! # What is where
//!
//! - [`Persona`]: one TOML file, parsed and checked into its chains;
//! - [`Registry`]: the resolvers a persona may name, the built-ins and your own;
//! - [`PersonaSet`]: a folder of personas, swapped whole on reload, and [`Watch`], which
//!   reloads it on change and reports each reload as an [`Event`];
//! - [`Diagnostic`] and [`Diagnostics`]: every problem of a file, pointing at its place,
//!   rendered as `path:line:col` with the line and a caret ([`render`]);
//! - one error type: [`Error`] with its [`ErrorKind`].
//!
//! Loading a persona runs in stages, one module each, read top to bottom: `source` (the
//! file's text), `syntax` (TOML), `persona` (the schema, with `agent` for the `[agent]`
//! and `[outbox]` tables, `tools` for `[[tools]]` and `responsibilities` for
//! `[[responsibilities]]`), `chains` (the resolver entries,
//! with `registry` and `builtins` for each resolver's options); `set` loads a folder of
//! them and `watch` reloads it.

mod agent;
mod builtins;
mod chains;
mod custom;
mod diagnostic;
mod env;
mod error;
mod event;
mod inbox;
mod json_schema;
mod names;
mod persona;
mod reader;
mod registry;
mod resources;
mod responsibilities;
mod set;
mod source;
mod syntax;
mod template_span;
mod templates;
mod tools;
mod watch;

// One persona file and the resolvers it may name.
pub use persona::{Persona, addresses_in};
pub use registry::Registry;
pub use resources::{Catalogue, Resources};
pub use source::PERSONA_FILE_MAX_BYTES;

// A folder of personas, reloaded while the application runs.
pub use event::Event;
pub use set::{PersonaSet, PersonaSetBuilder};
pub use watch::{DEFAULT_DEBOUNCE, Watch};

// The environment variables personas name, checked when asked.
pub use env::{EnvLookup, process_env};

// Problems in a file, pointing at their place.
pub use diagnostic::{Diagnostic, Diagnostics, render};

// Errors.
pub use error::{Error, ErrorKind, Result};
