//! The `protege` command line, as a library: [`main`] is the shipped binary, and
//! [`main_with`] the same command with resolvers of your own, so a team whose personas use
//! custom resolvers gets `check`, `resolve`, `watch`, `cache-report` and `serve` for them.
//!
//! ```no_run
//! use protege::config::Registry;
//!
//! fn main() -> std::process::ExitCode {
//!     let mut registry = Registry::new();
//!     // registry.register::<OpenOrders>("OpenOrders");
//!     protege_cli::main_with(registry)
//! }
//! ```
//!
//! The commands live in `commands/`, one module each; the HTTP service's connection loop
//! in `serve/` (its routes are the library's `protege::serve`).

mod commands;
mod serve;

use std::process::ExitCode;

use protege::config::Registry;

/// Runs the `protege` command with the built-in resolvers: parses the process's arguments,
/// runs the command and returns its exit code.
pub fn main() -> ExitCode {
    main_with(Registry::new())
}

/// Runs the `protege` command with the resolvers of `registry`: every command that loads
/// personas (`check`, `resolve`, `cache-report`, `watch`, `serve`, `demo`, `db import-eml`)
/// accepts personas that use them.
pub fn main_with(registry: Registry) -> ExitCode {
    commands::main(registry)
}
