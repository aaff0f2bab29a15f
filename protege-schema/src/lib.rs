//! The built-in protege resolvers and their options, and the names a template may use,
//! declared once.
//!
//! Each built-in is declared once, in its own file under `builtins/`, and registered by one
//! line of [`BUILTINS`]. Five places read that table: the TOML reader of `protege-config`
//! (which keys an entry may have, which are required, how each value is read), its JSON
//! Schema, the `resolvers!` macro (the same names and forms, checked at compile time), the
//! check of the names a template uses (the variable a built-in's `template` sees) and the
//! documentation (the options table of the guide, `docs/src/reference.md`, rendered by
//! [`markdown_table`]). The one "did you mean" rule both front ends use lives here too
//! ([`did_you_mean`]), and so do the template variables and the check of the names a
//! template uses ([`names`]): both front ends check templates, and the macro crate cannot
//! depend on the engine or the TOML front end.
//!
//! ```
//! use protege_schema::{Kind, builtin};
//! let history = builtin("ThreadHistoryResolver").unwrap();
//! assert_eq!(history.name, "ThreadHistory");
//! assert_eq!(history.option("window").unwrap().kind, Kind::Window);
//! assert_eq!(
//!     protege_schema::did_you_mean("limt", history.toml_names()),
//!     Some("limit")
//! );
//! ```

mod builtins;
mod docs;
mod duration;
mod persona;
mod suggest;

// The template variables and the check of the names a template uses.
pub mod names;

// The table: each built-in, its options and how each is read; the values it refers to
// (defaults, the valid roles and windows, identifiers).
pub use builtins::*;

// The keys of a persona file outside its chains.
pub use persona::{
    AFTER_PERSON, AGENT, APPROVALS, BUILTIN_TOOLS, CACHE_MODES, CACHE_TTLS, CATCH_UP,
    DURATION_MAX_DAYS, FROM_NAME_MAX_CHARS, HTTP_TOOL, INBOX, Key, LIMITS, MAIL, MCP_TOOL, MODEL,
    OPENAI_APIS, OUTBOX, PERSONA, PRICES, PROVIDERS, REPLY_MODES, RESPONSIBILITY,
    SUBJECT_MAX_CHARS, Shape, TLS_MODES, TOOL, TOOL_RUNNERS, UNAUTHENTICATED, key_names,
};

// Durations, as persona files and `resolvers!` write them.
pub use duration::{DurationError, parse_duration};

// The guide's options table, rendered from the table.
pub use docs::markdown_table;

// The one "did you mean" rule of both front ends.
pub use suggest::{did_you_mean, suggestion};
