//! The database: connecting and migrating ([`open`]), importing mail
//! ([`import_fixture_file`], [`import_eml_paths`]), finding a message by its Message-ID
//! ([`load_message`]) and the messages of its thread ([`thread_messages`]), protege's SeaORM
//! entities ([`entities`]), and SeaORM itself ([`sea_orm`]). The same tables feed
//! `ThreadHistory`, `ThreadSummary` and `LoadRecord`.
//!
//! SQLite is the embedded default; PostgreSQL and MySQL/MariaDB run the same code.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> protege::Result<()> {
//! use protege::db;
//! let conn = db::open("sqlite::memory:").await?;
//! let fixture = db::parse_fixture(r#"{"threads":[]}"#)?;
//! let summary = db::import_fixture(&conn, &fixture).await?;
//! assert_eq!(summary.to_string(), "imported 0 threads, 0 messages (0 already present)");
//! # Ok(()) }
//! ```
//!
//! The module by responsibility:
//!
//! - `connect`: database URLs, the connect timeout, connecting, and the redaction of
//!   passwords in URLs and driver messages;
//! - `reason`: the reason a database failed, as every database error quotes it;
//! - `schema`: the entities, the migrations and applying them;
//! - `lock`: the locks under which migrations and imports write, one process at a time;
//! - `read`: every read: rows decoded by column name, the SQLite file read through the
//!   SQLite C library, the trigger lookup, thread history, `LoadRecord`'s records and
//!   summaries;
//! - `fixture` and `eml`: importing mail; `store`: every write of mail, and storing a
//!   running summary.

mod connect;
mod dates;
mod eml;
mod fixture;
mod lock;
mod packet;
pub(crate) mod read;
mod reason;
mod schema;
mod store;

pub use connect::{
    DEFAULT_CONNECT_TIMEOUT, SQLITE_BUSY_TIMEOUT, connect, connect_timeout, connect_within, open,
    redact_text, redact_url,
};
pub use eml::{
    DEFAULT_MAX_ATTACHMENT_BYTES, EmlFailure, EmlOptions, EmlSummary, Ingested, import_eml_paths,
    ingest_eml,
};
pub use fixture::{
    Fixture, FixtureMessage, FixtureThread, FixtureToolUse, ImportSummary, import_fixture,
    import_fixture_file, import_fixture_str, parse_fixture,
};
pub use read::{embedded_statements, load_message, thread_inbound_messages, thread_messages};
pub(crate) use reason::db_reason;
pub use schema::{Migrator, entities, migrate};
pub use store::{StoredSummary, store_summary};

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
