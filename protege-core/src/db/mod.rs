//! The database: connecting and migrating ([`open`]), finding a message by its Message-ID
//! ([`load_message`]) and the messages of its thread ([`thread_messages`]), protege's SeaORM
//! entities ([`entities`]), and SeaORM itself ([`sea_orm`]). The same tables feed
//! `ThreadHistory`, `ThreadSummary` and `LoadRecord`. Importing mail and every other write
//! are `protege-store`'s; the `protege::db` module holds both.
//!
//! SQLite is the embedded default; PostgreSQL and MySQL/MariaDB run the same code.
//!
//! The module by responsibility:
//!
//! - `connect`: database URLs, the connect timeout, connecting, and the redaction of
//!   passwords in URLs and driver messages;
//! - `reason`: the reason a database failed, as every database error quotes it;
//! - `schema`: the entities, the migrations and applying them;
//! - `lock`: the locks under which migrations and imports write, one process at a time;
//! - `dates`: the dates every backend stores, and statements that bind them alike;
//! - `session`: the one place that chooses the driver a statement runs on (the SQLite C
//!   library on a SQLite file, SeaORM elsewhere, PostgreSQL's reads joined into one
//!   statement), and how each driver's rows become values;
//! - `read`: every read, each written once over the session: the trigger lookup, thread
//!   history, `LoadRecord`'s records, summaries, runs, jobs and the outbox.

mod connect;
#[doc(hidden)]
pub mod dates;
#[doc(hidden)]
pub mod lock;
pub(crate) mod read;
mod reason;
mod schema;
#[doc(hidden)]
pub mod session;
pub mod settings;
pub mod strips;
#[doc(hidden)]
pub use session::tx;

pub use connect::{
    DEFAULT_CONNECT_TIMEOUT, SQLITE_BUSY_TIMEOUT, connect, connect_within, open,
    parse_connect_timeout, redact_text, redact_url,
};
pub use read::records::{table_columns, table_names};
pub use read::{
    AttachmentListing, MessageListing, ThreadListing, list_thread_messages, list_threads,
    load_message, load_message_by_row, newest_inbound_message, thread_messages,
};
// The reads only the engine of the `protege` crate, the store and the tests use: public for
// them, out of the documented surface (an application reads through `Engine`).
pub use read::jobs::{
    JobFilter, ReplyCounts, attachment_in_thread, job_of_message, job_state, jobs_select,
    list_jobs, load_job, message_row_of, paused_job, person_replied, read_attachment_parts,
    reply_counts, select_jobs, tokens_since,
};
pub use read::{
    OutboxFilter, claimable_outbox, first_contacts, last_delivery, list_outbox, load_outbox,
    may_claim, outbox_of_run, outbox_state,
};
#[doc(hidden)]
pub use read::{
    call_id_taken_in_thread, load_rounds, load_run, persona_addressed, recent_inbound_to,
    replayed_tool_use, runs_of_message, thread_inbound_messages, thread_message_ids,
    thread_message_ids_of,
};
pub use read::{first_seen, newest_slot};
pub use schema::entities::run::{RunFormat, RunStatus};
pub use schema::{Migrator, entities, migrate};

// Used by `protege-store`, the write side; not a public API.
#[doc(hidden)]
pub use reason::{db_reason, server_message, transaction_lost};
#[doc(hidden)]
pub use session::begin_snapshot as read_snapshot;
pub use session::{Writes, direct_round_trips, embedded_statements};

/// SeaORM, the database layer protege is built on, re-exported so an application queries
/// protege's tables ([`entities`]) and its own with the same version and features, without
/// pinning SeaORM itself. Its [`DatabaseConnection`] is the
/// connection every function here takes.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> protege::Result<()> {
/// use protege::db::entities::message;
/// use protege::db::sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
/// let conn = protege::db::open("sqlite::memory:").await?;
/// let inbound = message::Entity::find()
///     .filter(message::Column::Direction.eq("inbound"))
///     .count(&conn)
///     .await?;
/// assert_eq!(inbound, 0);
/// # Ok(()) }
/// ```
///
/// [`DatabaseConnection`]: sea_orm::DatabaseConnection
// Shown as a re-export, not as a copy of SeaORM's documentation.
#[doc(no_inline)]
pub use sea_orm;
