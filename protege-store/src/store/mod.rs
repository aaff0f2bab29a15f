//! Writing mail: the one place that inserts threads, messages, attachments and tool uses.
//!
//! Fixture import (`fixture/import.rs`) and email import (`eml/`, one message at a time, in
//! batches, and `ingest_eml`) parse and decide what goes where; the functions here write
//! it. Every row is built here ([`thread_row`], [`message_row`], [`attachment_row`],
//! [`tool_use_row`]): header values on one line and NUL removed from every text, whichever
//! path and backend wrote it. A message is inserted or skipped by its Message-ID
//! ([`insert_message`]); a batch inserts many rows per statement ([`bulk`]) and gets the
//! same rows, ids included. A running summary of a thread is stored here too
//! ([`store_summary`]).

mod bulk;
mod summary;

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveValue::{NotSet, Set},
    ColumnTrait, ConnectionTrait, DbBackend, DbErr, EntityTrait, QueryFilter, QuerySelect,
    QueryTrait, SqlErr,
    sea_query::{Expr, InsertStatement, OnConflict},
};
use serde_json::Value;

use crate::fixture::FixtureToolUse;
use protege_core::db::dates;
use protege_core::db::entities::{attachment, email_thread, message, message_address, tool_use};
use protege_core::db::tx::Tx;
use protege_core::{Error, Result};
use protege_mail::html_to_text;
use protege_mail::{Attachment, Email, one_line, without_nul};

pub(crate) use bulk::{insert_addresses, insert_attachments, insert_messages, insert_threads};
pub use summary::{StoredSummary, store_summary};

/// The most values bound in one `IN (...)` list, well under every backend's limit.
pub(crate) const IN_CHUNK: usize = 500;

/// The thread of each of `message_ids` that is already stored, by Message-ID.
pub(crate) async fn stored_threads<C: ConnectionTrait>(
    db: &C,
    message_ids: &[&str],
) -> Result<HashMap<String, i64>> {
    let mut found = HashMap::new();
    for chunk in message_ids.chunks(IN_CHUNK) {
        let rows: Vec<(String, i64)> = message::Entity::find()
            .select_only()
            .column(message::Column::MessageId)
            .column(message::Column::EmailThreadId)
            .filter(message::Column::MessageId.is_in(chunk.iter().copied()))
            .into_tuple()
            .all(db)
            .await?;
        found.extend(rows);
    }
    Ok(found)
}

/// Those of `message_ids` that were erased (`erased_messages` holds the SHA-256 of each).
pub(crate) async fn erased_ids<C: ConnectionTrait>(
    db: &C,
    message_ids: &[&str],
) -> Result<HashSet<String>> {
    use protege_core::db::entities::erased_message;
    let mut found = HashSet::new();
    for chunk in message_ids.chunks(IN_CHUNK) {
        let by_hash: HashMap<String, &str> = chunk
            .iter()
            .map(|id| (crate::message_sha256(id), *id))
            .collect();
        let rows: Vec<String> = erased_message::Entity::find()
            .select_only()
            .column(erased_message::Column::MessageSha256)
            .filter(erased_message::Column::MessageSha256.is_in(by_hash.keys().map(String::as_str)))
            .into_tuple()
            .all(db)
            .await?;
        found.extend(
            rows.iter()
                .filter_map(|h| by_hash.get(h))
                .map(|id| (*id).to_owned()),
        );
    }
    Ok(found)
}

/// What a stored message is, to tell the same message stored again from another message
/// claiming its Message-ID: its direction, sender and content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Identity {
    /// `inbound` or `outbound`, as stored.
    pub(crate) direction: String,
    /// The From header form, as stored.
    pub(crate) from: String,
    /// The subject, as stored.
    pub(crate) subject: String,
    /// The text body, as stored.
    pub(crate) text_body: Option<String>,
    /// The HTML body, as stored.
    pub(crate) html_body: Option<String>,
}

impl Identity {
    /// The identity `email` has once stored: the values its row holds (see
    /// [`message_row`]).
    pub(crate) fn of(email: &Email) -> Self {
        let text = |v: &Option<String>| v.as_deref().map(|t| without_nul(t).into_owned());
        Self {
            direction: email.direction.as_str().to_owned(),
            from: one_line(&email.from).into_owned(),
            subject: one_line(&email.subject).into_owned(),
            text_body: text(&email.text_body),
            html_body: text(&email.html_body),
        }
    }

    /// How `other` differs from this message, in words (`direction`, `sender`, `content`):
    /// the sender is the From address (bare, without regard to case), the content the
    /// subject and both bodies; `None` when it is the same message.
    pub(crate) fn differs(&self, other: &Identity) -> Option<String> {
        let key = |from: &str| protege_mail::bare_address(from).to_lowercase();
        let mut what = Vec::new();
        if self.direction != other.direction {
            what.push(format!("direction (`{}`)", self.direction));
        }
        if key(&self.from) != key(&other.from) {
            what.push(format!("sender (`{}`)", key(&self.from)));
        }
        if (&self.subject, &self.text_body, &self.html_body)
            != (&other.subject, &other.text_body, &other.html_body)
        {
            what.push("content".to_owned());
        }
        let last = what.pop()?;
        Some(if what.is_empty() {
            last
        } else {
            format!("{} and {last}", what.join(", "))
        })
    }
}

/// What is stored under each of `message_ids` that is stored.
pub(crate) async fn stored_identities<C: ConnectionTrait>(
    db: &C,
    message_ids: &[&str],
) -> Result<HashMap<String, Identity>> {
    type Row = (
        String,
        String,
        String,
        String,
        Option<String>,
        Option<String>,
    );
    let mut found = HashMap::new();
    for chunk in message_ids.chunks(IN_CHUNK) {
        let rows: Vec<Row> = message::Entity::find()
            .select_only()
            .column(message::Column::MessageId)
            .column(message::Column::Direction)
            .column(message::Column::FromAddress)
            .column(message::Column::Subject)
            .column(message::Column::TextBody)
            .column(message::Column::HtmlBody)
            .filter(message::Column::MessageId.is_in(chunk.iter().copied()))
            .into_tuple()
            .all(db)
            .await?;
        for (id, direction, from, subject, text_body, html_body) in rows {
            found.insert(
                id,
                Identity {
                    direction,
                    from,
                    subject,
                    text_body,
                    html_body,
                },
            );
        }
    }
    Ok(found)
}

/// The sentence of a message whose Message-ID `id` is stored for another message, which
/// differs from it as `how` says.
pub(crate) fn conflict_reason(id: &str, how: &str) -> String {
    format!(
        "Message-ID `{id}` is already stored with another {how}: not imported, a Message-ID belongs to the message stored first"
    )
}

/// The row of a new thread: its subject on one line.
fn thread_row(subject: &str, created_at: DateTime<Utc>) -> email_thread::ActiveModel {
    email_thread::ActiveModel {
        id: NotSet,
        subject: Set(one_line(subject).into_owned()),
        created_at: Set(created_at),
    }
}

/// The row of `email` in thread `thread_id`: header values on one line, NUL removed from
/// every text.
fn message_row(thread_id: i64, email: &Email) -> message::ActiveModel {
    let line = |v: &str| one_line(v).into_owned();
    let text = |v: &str| without_nul(v).into_owned();
    let json = |list: &Vec<String>| {
        let list: Vec<String> = list.iter().map(|a| line(a)).collect();
        serde_json::to_string(&list).unwrap_or_else(|_| "[]".into())
    };
    message::ActiveModel {
        id: NotSet,
        email_thread_id: Set(thread_id),
        message_id: Set(text(&email.message_id)),
        direction: Set(email.direction.as_str().to_owned()),
        from_address: Set(line(&email.from)),
        to_addresses: Set(json(&email.to)),
        cc_addresses: Set(json(&email.cc)),
        subject: Set(line(&email.subject)),
        text_body: Set(email.text_body.as_deref().map(text)),
        html_body: Set(email.html_body.as_deref().map(text)),
        in_reply_to: Set(email.in_reply_to.as_deref().map(text)),
        sent_at: Set(email.sent_at),
        html_text: Set(html_text(email)),
        reply_headers: Set(email.reply_headers.to_stored().map(|json| text(&json))),
    }
}

/// The readable text of `email`'s HTML body, stored beside it so that no read converts
/// HTML again: its [`Email::html_text`] when set, else the stored HTML (NUL removed)
/// converted now; `None` without an HTML body.
fn html_text(email: &Email) -> Option<String> {
    let html = email.html_body.as_deref()?;
    Some(match email.html_text.as_deref() {
        Some(text) => without_nul(text).into_owned(),
        // The converter writes no NUL when its input has none.
        None => html_to_text(&without_nul(html)),
    })
}

/// The row of attachment `att` of the message whose row id is `message_id`.
fn attachment_row(message_id: i64, att: &Attachment) -> attachment::ActiveModel {
    attachment::ActiveModel {
        id: NotSet,
        message_id: Set(message_id),
        attachment_id: Set(without_nul(&att.attachment_id).into_owned()),
        filename: Set(one_line(&att.filename).into_owned()),
        content_type: Set(one_line(&att.content_type).into_owned()),
        byte_size: Set(att.byte_size),
        data: Set(att.data.clone()),
    }
}

/// The row of tool use `use_` of the message whose row id is `message_id`.
fn tool_use_row(message_id: i64, use_: &FixtureToolUse) -> tool_use::ActiveModel {
    let text = |v: &str| without_nul(v).into_owned();
    tool_use::ActiveModel {
        id: NotSet,
        message_id: Set(message_id),
        run_id: Set(text(&use_.run_id)),
        turn_index: Set(use_.turn_index),
        position: Set(use_.position),
        tool_call_id: Set(text(&use_.tool_call_id)),
        name: Set(text(&use_.name)),
        input: Set(Value::Object(use_.input.clone()).to_string()),
        result: Set(use_.result.as_deref().map(text)),
        is_error: Set(use_.is_error),
    }
}

/// Inserts a thread row; returns its id.
pub(crate) async fn insert_thread<W: Tx>(
    db: &W,
    subject: &str,
    created_at: DateTime<Utc>,
) -> Result<i64> {
    dates::check("the start of the thread", &created_at)?;
    let insert = email_thread::Entity::insert(thread_row(subject, created_at)).into_query();
    db.insert(&insert).await?.ok_or_else(|| {
        Error::from(DbErr::Custom(
            "the new thread's row was not inserted".into(),
        ))
    })
}

/// Runs the one-row `insert` on MySQL/MariaDB, its dates bound as `DATETIME` (see
/// [`dates::statement`]); returns the new row's id.
pub(crate) async fn mysql_insert<C: ConnectionTrait>(
    db: &C,
    insert: &InsertStatement,
) -> std::result::Result<i64, DbErr> {
    let id = db
        .execute_raw(dates::statement(db, insert))
        .await?
        .last_insert_id();
    i64::try_from(id).map_err(|_| DbErr::Custom(format!("the new row's id {id} is out of range")))
}

/// Deletes thread `thread` (one created for messages that another writer stored first).
pub(crate) async fn delete_thread<C: ConnectionTrait>(db: &C, thread: i64) -> Result<()> {
    email_thread::Entity::delete_by_id(thread).exec(db).await?;
    Ok(())
}

/// When a message sent at `sent_at` is older than thread `thread`'s start, the thread
/// takes `subject` and that start (so a thread's subject is its earliest message's).
pub(crate) async fn backdate_thread<W: Tx>(
    db: &W,
    thread: i64,
    subject: &str,
    sent_at: DateTime<Utc>,
) -> Result<()> {
    let update = email_thread::Entity::update_many()
        .col_expr(
            email_thread::Column::Subject,
            Expr::value(one_line(subject).into_owned()),
        )
        .col_expr(email_thread::Column::CreatedAt, Expr::value(sent_at))
        .filter(email_thread::Column::Id.eq(thread))
        .filter(email_thread::Column::CreatedAt.gt(sent_at))
        .into_query();
    db.execute(&update).await?;
    Ok(())
}

/// Inserts `email` with its attachments and `tool_uses` into thread `thread_id`, one row
/// at a time; returns the message's row id, or `None` when its Message-ID is stored
/// already (by another writer since it was looked up): then nothing is written.
pub(crate) async fn insert_message<W: Tx>(
    db: &W,
    thread_id: i64,
    email: &Email,
    tool_uses: &[FixtureToolUse],
) -> Result<Option<i64>> {
    check_dates(email)?;
    let Some(id) = insert_or_skip(db, message_row(thread_id, email)).await? else {
        return Ok(None);
    };
    // One row at a time keeps insertion order (the `id` order) equal to the given order on
    // every backend.
    for att in &email.attachments {
        db.execute(&attachment::Entity::insert(attachment_row(id, att)).into_query())
            .await?;
    }
    for use_ in tool_uses {
        db.execute(&tool_use::Entity::insert(tool_use_row(id, use_)).into_query())
            .await?;
    }
    let addresses = bulk::address_rows(thread_id, id, email);
    if !addresses.is_empty() {
        db.execute(&message_address::Entity::insert_many(addresses).into_query())
            .await?;
    }
    Ok(Some(id))
}

/// Inserts `email` into thread `thread`, which takes `subject` and an older start (see
/// [`backdate_thread`]), or into a new thread named `subject` when `thread` is `None`.
/// Returns the thread and the message's row id, or `None` when the Message-ID is stored
/// already (a new thread is then left empty: the caller rolls its savepoint back).
pub(crate) async fn insert_email<W: Tx>(
    db: &W,
    thread: Option<i64>,
    subject: &str,
    email: &Email,
) -> Result<Option<(i64, i64)>> {
    check_dates(email)?;
    let thread = match thread {
        Some(t) => {
            backdate_thread(db, t, subject, email.sent_at).await?;
            t
        }
        None => insert_thread(db, subject, email.sent_at).await?,
    };
    Ok(insert_into_thread(db, thread, email)
        .await?
        .map(|id| (thread, id)))
}

/// Inserts `email` into thread `thread`, whose start it does not precede, and strips it;
/// the message's row id, or `None` when its Message-ID is stored already.
pub(crate) async fn insert_into_thread<W: Tx>(
    db: &W,
    thread: i64,
    email: &Email,
) -> Result<Option<i64>> {
    check_dates(email)?;
    let Some(id) = insert_message(db, thread, email, &[]).await? else {
        return Ok(None);
    };
    protege_core::db::strips::restrip(db, &[thread], &HashSet::from([id])).await?;
    Ok(Some(id))
}

/// Inserts a message row unless its Message-ID is stored already; returns the new row's
/// id, or `None` when it was skipped.
async fn insert_or_skip<W: Tx>(db: &W, row: message::ActiveModel) -> Result<Option<i64>> {
    let mut insert = message::Entity::insert(row).into_query();
    // MySQL has no `ON CONFLICT DO NOTHING`, and `INSERT IGNORE` would also hide other
    // errors; a duplicate key rolls back only its own statement there.
    if db.backend() != DbBackend::MySql {
        insert.on_conflict(
            OnConflict::column(message::Column::MessageId)
                .do_nothing()
                .to_owned(),
        );
    }
    match db.insert(&insert).await {
        Ok(id) => Ok(id),
        Err(e) if is_unique_violation(&e) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// `Ok` when every backend stores the date of `email`; else the error of kind
/// [`InvalidInput`](protege_core::ErrorKind::InvalidInput) naming the message.
pub(crate) fn check_dates(email: &Email) -> Result<()> {
    dates::check(
        &format!("the date of message `{}`", one_line(&email.message_id)),
        &email.sent_at,
    )
}

/// Whether `err` is a unique-key violation: another writer stored the same row (a
/// message, a run's round).
pub(crate) fn is_unique_violation(err: &DbErr) -> bool {
    matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_)))
}

/// Whether `err` is a database error that says another writer stored the same message.
pub(crate) fn is_duplicate(err: &Error) -> bool {
    err.db_err().is_some_and(is_unique_violation)
}
