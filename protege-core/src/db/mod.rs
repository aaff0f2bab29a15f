//! The database: SeaORM entities and migrations (§6), connecting, fixture import, and the
//! reads behind `ThreadHistory`, `LoadRecord` and the reply-run trigger.
//!
//! SQLite is the embedded default; PostgreSQL and MySQL/MariaDB run the same code.
//!
//! ```
//! # async fn demo() -> protege_core::Result<()> {
//! use protege_core::db;
//! let conn = db::open("sqlite::memory:").await?;
//! let fixture = db::parse_fixture(r#"{"threads":[]}"#)?;
//! let summary = db::import_fixture(&conn, &fixture).await?;
//! assert_eq!(summary.to_string(), "imported 0 threads, 0 messages (0 already present)");
//! # Ok(()) }
//! ```

mod eml;
pub mod entities;
mod fixture;
pub(crate) mod history;
mod migration;
pub(crate) mod records;

use std::time::Duration;

use sea_orm::{ColumnTrait, ConnectOptions, Database, EntityTrait, QueryFilter, QueryOrder};
use sea_orm_migration::MigratorTrait;

use crate::error::{Error, ErrorKind, Result};
use crate::mail::{Attachment, Direction, MailMessage};

pub use eml::{DEFAULT_MAX_ATTACHMENT_BYTES, EmlFailure, EmlOptions, EmlSummary, import_eml_paths};
pub use fixture::{
    Fixture, FixtureAttachment, FixtureMessage, FixtureThread, FixtureToolUse, ImportSummary,
    import_fixture, import_fixture_str, parse_fixture,
};
pub use migration::Migrator;
pub use sea_orm::DatabaseConnection;

/// Connects to `url`: `sqlite://PATH` (the file is created if missing), `sqlite::memory:`,
/// `postgres://` / `postgresql://`, or `mysql://` / `mariadb://`.
///
/// An unreachable server or unopenable file is an error of kind
/// [`Database`](ErrorKind::Database) naming the URL without its password.
pub async fn connect(url: &str) -> Result<DatabaseConnection> {
    let shown = redact_url(url);
    let url = if let Some(rest) = url.strip_prefix("mariadb://") {
        format!("mysql://{rest}")
    } else if url.starts_with("sqlite:")
        || url.starts_with("postgres://")
        || url.starts_with("postgresql://")
        || url.starts_with("mysql://")
    {
        url.to_owned()
    } else {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "unsupported database URL `{shown}`: expected `sqlite://PATH`, `sqlite::memory:`, `postgres://...` or `mysql://...`"
            ),
        ));
    };
    // One direct attempt first: a pool retries a refused connection until its acquire
    // timeout, while an unreachable server should be reported at once.
    probe(&url).await.map_err(|e| {
        Error::new(
            ErrorKind::Database,
            format!("cannot connect to database `{shown}`: {}", sqlx_reason(&e)),
        )
        .with_source(e)
    })?;
    let create = url.starts_with("sqlite:") && !url.contains("mode=");
    let mut options = ConnectOptions::new(url);
    options
        .sqlx_logging(false)
        .connect_timeout(Duration::from_secs(10))
        .acquire_timeout(Duration::from_secs(30))
        .map_sqlx_sqlite_opts(move |o| o.create_if_missing(create));
    Database::connect(options).await.map_err(|e| {
        Error::new(
            ErrorKind::Database,
            format!("cannot connect to database `{shown}`: {}", db_reason(&e)),
        )
        .with_source(e)
    })
}

/// Opens and closes one connection to a server URL (SQLite files need no probe).
async fn probe(url: &str) -> std::result::Result<(), sea_orm::sqlx::Error> {
    use sea_orm::sqlx::{ConnectOptions as _, Connection as _};
    if url.starts_with("postgres") {
        let options: sea_orm::sqlx::postgres::PgConnectOptions = url.parse()?;
        options.connect().await?.close().await?;
    } else if url.starts_with("mysql") {
        let options: sea_orm::sqlx::mysql::MySqlConnectOptions = url.parse()?;
        options.connect().await?.close().await?;
    }
    Ok(())
}

fn sqlx_reason(err: &sea_orm::sqlx::Error) -> String {
    lowercase_first(err.to_string().trim().trim_end_matches('.'))
}

fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Connects to `url` and applies pending migrations: what the CLI does on first use of
/// a database.
pub async fn open(url: &str) -> Result<DatabaseConnection> {
    let db = connect(url).await?;
    migrate(&db).await?;
    Ok(db)
}

/// Creates or upgrades the schema (the shipped [`Migrator`]'s pending migrations).
pub async fn migrate(db: &DatabaseConnection) -> Result<()> {
    Migrator::up(db, None).await.map_err(|e| {
        Error::new(
            ErrorKind::Database,
            format!("cannot migrate the database: {}", db_reason(&e)),
        )
        .with_source(e)
    })
}

/// Loads the stored message with the RFC 5322 `message_id`, with its attachments (and
/// their data) in insertion order; `None` when there is none.
pub async fn load_message(
    db: &DatabaseConnection,
    message_id: &str,
) -> Result<Option<MailMessage>> {
    use entities::{attachment, message};
    let Some(row) = message::Entity::find()
        .filter(message::Column::MessageId.eq(message_id))
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    let attachments = attachment::Entity::find()
        .filter(attachment::Column::MessageId.eq(row.id))
        .order_by_asc(attachment::Column::Id)
        .all(db)
        .await?
        .into_iter()
        .map(|a| Attachment {
            attachment_id: a.attachment_id,
            filename: a.filename,
            content_type: a.content_type,
            byte_size: a.byte_size,
            data: a.data,
        })
        .collect();
    let direction = Direction::parse(&row.direction)
        .ok_or_else(|| bad_direction(&row.direction, &row.message_id))?;
    Ok(Some(MailMessage {
        id: row.id,
        thread_id: row.email_thread_id,
        to: address_list(&row.to_addresses, "to_addresses", &row.message_id)?,
        cc: address_list(&row.cc_addresses, "cc_addresses", &row.message_id)?,
        message_id: row.message_id,
        direction,
        from: row.from_address,
        subject: row.subject,
        sent_at: row.sent_at,
        text_body: row.text_body,
        html_body: row.html_body,
        in_reply_to: row.in_reply_to,
        attachments,
    }))
}

/// Parses a stored JSON array of addresses.
pub(crate) fn address_list(text: &str, column: &str, message_id: &str) -> Result<Vec<String>> {
    serde_json::from_str(text).map_err(|_| {
        Error::new(
            ErrorKind::Database,
            format!("column `{column}` of message `{message_id}` is not a JSON array of strings"),
        )
    })
}

pub(crate) fn bad_direction(direction: &str, message_id: &str) -> Error {
    Error::new(
        ErrorKind::Database,
        format!(
            "message `{message_id}` has direction `{direction}`; expected `inbound` or `outbound`"
        ),
    )
}

/// The URL with its password replaced by `***`.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let Some(at) = authority.rfind('@') else {
        return url.to_owned();
    };
    let userinfo = &authority[..at];
    match userinfo.find(':') {
        Some(colon) => format!(
            "{}{}:***{}",
            &url[..scheme_end + 3],
            &userinfo[..colon],
            &rest[at..]
        ),
        None => url.to_owned(),
    }
}

/// The useful part of a SeaORM error, without its debug wrapping.
pub(crate) fn db_reason(err: &sea_orm::DbErr) -> String {
    use sea_orm::{DbErr, RuntimeErr};
    let text = match err {
        DbErr::Conn(RuntimeErr::SqlxError(e))
        | DbErr::Exec(RuntimeErr::SqlxError(e))
        | DbErr::Query(RuntimeErr::SqlxError(e)) => e.to_string(),
        DbErr::Conn(RuntimeErr::Internal(e))
        | DbErr::Exec(RuntimeErr::Internal(e))
        | DbErr::Query(RuntimeErr::Internal(e)) => e.clone(),
        other => other.to_string(),
    };
    lowercase_first(text.trim().trim_end_matches('.'))
}
