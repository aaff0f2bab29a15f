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

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveValue::{NotSet, Set},
    ColumnTrait, ConnectionTrait, DbBackend, DbErr, EntityTrait, QueryFilter, QuerySelect, SqlErr,
    sea_query::{Expr, OnConflict},
};
use serde_json::Value;

use crate::db::entities::{attachment, email_thread, message, tool_use};
use crate::db::fixture::FixtureToolUse;
use crate::error::{Error, Result};
use crate::html_text::html_to_text;
use crate::mail::{Attachment, Email, one_line, without_nul};

pub(in crate::db) use bulk::{insert_attachments, insert_messages, insert_threads};
pub use summary::{StoredSummary, store_summary};

/// The most values bound in one `IN (...)` list, well under every backend's limit.
pub(in crate::db) const IN_CHUNK: usize = 500;

/// The thread of each of `message_ids` that is already stored, by Message-ID.
pub(in crate::db) async fn stored_threads<C: ConnectionTrait>(
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
    }
}

/// Inserts a thread row; returns its id.
pub(in crate::db) async fn insert_thread<C: ConnectionTrait>(
    db: &C,
    subject: &str,
    created_at: DateTime<Utc>,
) -> Result<i64> {
    Ok(
        email_thread::Entity::insert(thread_row(subject, created_at))
            .exec(db)
            .await?
            .last_insert_id,
    )
}

/// Deletes thread `thread` (one created for messages that another writer stored first).
pub(in crate::db) async fn delete_thread<C: ConnectionTrait>(db: &C, thread: i64) -> Result<()> {
    email_thread::Entity::delete_by_id(thread).exec(db).await?;
    Ok(())
}

/// When a message sent at `sent_at` is older than thread `thread`'s start, the thread
/// takes `subject` and that start (so a thread's subject is its earliest message's).
pub(in crate::db) async fn backdate_thread<C: ConnectionTrait>(
    db: &C,
    thread: i64,
    subject: &str,
    sent_at: DateTime<Utc>,
) -> Result<()> {
    email_thread::Entity::update_many()
        .col_expr(
            email_thread::Column::Subject,
            Expr::value(one_line(subject).into_owned()),
        )
        .col_expr(email_thread::Column::CreatedAt, Expr::value(sent_at))
        .filter(email_thread::Column::Id.eq(thread))
        .filter(email_thread::Column::CreatedAt.gt(sent_at))
        .exec(db)
        .await?;
    Ok(())
}

/// Inserts `email` with its attachments and `tool_uses` into thread `thread_id`, one row
/// at a time; returns the message's row id, or `None` when its Message-ID is stored
/// already (by another writer since it was looked up): then nothing is written.
pub(in crate::db) async fn insert_message<C: ConnectionTrait>(
    db: &C,
    thread_id: i64,
    email: &Email,
    tool_uses: &[FixtureToolUse],
) -> Result<Option<i64>> {
    let Some(id) = insert_or_skip(db, message_row(thread_id, email)).await? else {
        return Ok(None);
    };
    // One row at a time keeps insertion order (the `id` order) equal to the given order on
    // every backend.
    for att in &email.attachments {
        attachment::Entity::insert(attachment_row(id, att))
            .exec(db)
            .await?;
    }
    for use_ in tool_uses {
        tool_use::Entity::insert(tool_use_row(id, use_))
            .exec(db)
            .await?;
    }
    Ok(Some(id))
}

/// Inserts `email` into thread `thread`, which takes `subject` and an older start (see
/// [`backdate_thread`]), or into a new thread named `subject` when `thread` is `None`.
/// Returns the thread, or `None` when the Message-ID is stored already (a new thread is
/// then left empty: the caller rolls its savepoint back).
pub(in crate::db) async fn insert_email<C: ConnectionTrait>(
    db: &C,
    thread: Option<i64>,
    subject: &str,
    email: &Email,
) -> Result<Option<i64>> {
    let thread = match thread {
        Some(t) => {
            backdate_thread(db, t, subject, email.sent_at).await?;
            t
        }
        None => insert_thread(db, subject, email.sent_at).await?,
    };
    Ok(insert_message(db, thread, email, &[])
        .await?
        .map(|_| thread))
}

/// Inserts a message row unless its Message-ID is stored already; returns the new row's
/// id, or `None` when it was skipped.
async fn insert_or_skip<C: ConnectionTrait>(
    db: &C,
    row: message::ActiveModel,
) -> Result<Option<i64>> {
    let outcome = if db.get_database_backend() == DbBackend::MySql {
        // MySQL has no `ON CONFLICT DO NOTHING`, and `INSERT IGNORE` would also hide other
        // errors; a duplicate key rolls back only its own statement there.
        message::Entity::insert(row).exec(db).await
    } else {
        message::Entity::insert(row)
            .on_conflict(
                OnConflict::column(message::Column::MessageId)
                    .do_nothing()
                    .to_owned(),
            )
            .exec(db)
            .await
    };
    match outcome {
        Ok(result) => Ok(Some(result.last_insert_id)),
        Err(DbErr::RecordNotInserted) => Ok(None),
        Err(e) if is_unique_violation(&e) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Whether `err` is a unique-key violation: another writer stored the same message.
fn is_unique_violation(err: &DbErr) -> bool {
    matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_)))
}

/// Whether `err` is a database error that says another writer stored the same message.
pub(in crate::db) fn is_duplicate(err: &Error) -> bool {
    err.db_err().is_some_and(is_unique_violation)
}
