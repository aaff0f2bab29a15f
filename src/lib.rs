//! protege assembles what a large language model sees before it answers an email: the
//! ordered system, user, assistant and tool messages of a request, from personas written
//! as TOML files or as Rust code.
//!
//! This crate is the facade: it re-exports [`protege_core`] (the engine) and
//! [`protege_config`] (TOML personas), and ships the `protege` command line.
//!
//! # Template variables
//!
//! Every template (`LoadText` `template`, a templated `LoadFile` path, `LoadRecord` `where`
//! values and per-record `template`) is minijinja and sees:
//!
//! - `persona`: `name`, `instructions` (empty when unset), `vars` (the `[vars]` table) —
//!   `{{ persona.vars.team | slugify }}`;
//! - `message`, in reply runs only: `message_id`, `from` (bare address), `from_display`
//!   (`Alice <alice@example.com>`), `to` and `cc` (lists of bare addresses), `subject`,
//!   `sent_at` (RFC 3339 UTC, `2026-01-05T10:00:00Z`), `body`, `thread_id` —
//!   `Reply to {{ message.from_display }}`;
//! - `responsibility`, in scheduled runs only: `name`, `schedule`, `instructions` —
//!   `Task {{ responsibility.name }}`;
//! - `correlation_id` (absent when unset) — `{% if correlation_id %}{{ correlation_id }}{% endif %}`;
//! - `now` (RFC 3339 UTC) — `run at {{ now }}`;
//! - `record`, in a `LoadRecord` per-record template only: the row as a map —
//!   `{{ record.name }} ({{ record.plan }})`.
//!
//! The names are checked when a persona file loads and when `resolvers!` compiles a literal
//! template: an unknown variable, an attribute the object does not have, a `persona.vars` key
//! missing from `[vars]` (TOML only), or printing `message`, `responsibility` or `record`
//! where it never exists is an error, with a suggestion for a near miss. Testing such a
//! variable (`{% if message %}...{% endif %}`) is allowed:
//!
//! ```compile_fail
//! let chain = protege::resolvers! {
//!     use LoadText("Reply to {{ mesage.from }}."); // did you mean `message`?
//! };
//! ```

pub use protege_config as config;
pub use protege_core as core;
pub use protege_core::*;

mod engine;

pub use engine::{
    CacheReport, CacheReportRow, Engine, EngineBuilder, EngineError, EngineErrorKind, Format,
    Resolution, ResolveInput, SUMMARY_MAX_BYTES, problem_summary,
};
