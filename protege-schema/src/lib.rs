//! The built-in protege resolvers and their options, declared once.
//!
//! Three places read this table: the TOML reader of `protege-config` (which keys an entry
//! may have, which are required, how each value is read), the `resolvers!` macro (the same
//! names, checked at compile time) and the documentation (the options table of the README,
//! rendered by [`markdown_table`]). The one "did you mean" rule both front ends use lives
//! here too ([`did_you_mean`]).
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
mod suggest;

// The table: each built-in, its options and how each is read.
pub use builtins::{
    Applies, BUILTINS, Builtin, Default, Kind, LOAD_FILE, LOAD_RECORD, LOAD_TEXT, OptionSpec,
    Positional, THREAD_HISTORY, THREAD_SUMMARY, builtin,
};

// The values the table refers to: defaults, the valid roles and windows, identifiers.
pub use builtins::{
    HISTORY_LIMIT, HISTORY_RESULT_LIMIT, ROLES, SUMMARY_TEMPLATE, WINDOWS, is_identifier,
};

// The README's options table, rendered from the table.
pub use docs::markdown_table;

// The one "did you mean" rule of both front ends.
pub use suggest::{did_you_mean, suggestion};
