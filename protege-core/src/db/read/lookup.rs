//! Finding stored mail: a message by its Message-ID (the trigger of a reply run), the
//! messages of a thread, and a thread's inbound messages.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, Order, Query};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder,
};

use super::embedded;
use super::rows::{self, columns};
use crate::db::entities::{attachment, email_thread, message};
use crate::error::Result;
use crate::mail::{Direction, MailMessage};

/// Loads the stored message with the RFC 5322 `message_id`, with its attachments (and
/// their data) in insertion order; `None` when there is none.
///
/// This is how an application finds the message a reply run answers, and its thread:
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> protege::Result<()> {
/// use protege::db;
/// let conn = db::open("sqlite::memory:").await?;
/// db::import_fixture_str(&conn, r#"{"threads":[{"subject":"Refund","messages":[
///   {"message_id":"<m1@example.com>","direction":"inbound","from":"Alice <alice@example.com>",
///    "to":["support@acme.test"],"subject":"Refund","sent_at":"2026-01-05T10:00:00Z",
///    "text_body":"Hi, my parcel arrived damaged."}]}]}"#).await?;
///
/// let found = db::load_message(&conn, "<m1@example.com>").await?.expect("stored");
/// assert_eq!((found.from_address(), found.subject.as_str()), ("alice@example.com", "Refund"));
/// assert!(db::load_message(&conn, "<nope@example.com>").await?.is_none());
/// # Ok(()) }
/// ```
pub async fn load_message(
    db: &DatabaseConnection,
    message_id: &str,
) -> Result<Option<MailMessage>> {
    let mut by_message_id = Query::select();
    by_message_id
        .columns(columns(message::Entity))
        .from(message::Entity)
        // Stored without NUL, as every import stores it (PostgreSQL rejects NUL in text).
        .and_where(
            Expr::col((message::Entity, message::Column::MessageId))
                .eq(crate::mail::without_nul(message_id).as_ref()),
        )
        .limit(1);
    let attachments_of = |id: i64| {
        let mut q = Query::select();
        q.columns(columns(attachment::Entity))
            .from(attachment::Entity)
            .and_where(Expr::col((attachment::Entity, attachment::Column::MessageId)).eq(id))
            .order_by((attachment::Entity, attachment::Column::Id), Order::Asc);
        q
    };
    if let Some(reader) = embedded::reader(db) {
        return reader.run(|conn| {
            let mut found = None;
            conn.query(&by_message_id, |row| {
                found = Some(rows::message(row)?);
                Ok(())
            })?;
            let Some(mut message) = found else {
                return Ok(None);
            };
            conn.query(&attachments_of(message.id), |row| {
                message.attachments.push(rows::attachment(row, true)?.1);
                Ok(())
            })?;
            Ok(Some(message))
        });
    }
    let Some(row) = db.query_one(&by_message_id).await? else {
        return Ok(None);
    };
    let mut message = rows::message(&row)?;
    for row in db.query_all(&attachments_of(message.id)).await? {
        message.attachments.push(rows::attachment(&row, true)?.1);
    }
    Ok(Some(message))
}

/// The messages of the thread `thread_id` ([`MailMessage::thread_id`]), oldest first
/// (by `sent_at`, ties by insertion order), each with its attachments (and their data) in
/// insertion order; empty when the thread does not exist. Two queries, whatever the
/// thread's length.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> protege::Result<()> {
/// use protege::db;
/// let conn = db::open("sqlite::memory:").await?;
/// db::import_fixture_str(&conn, r#"{"threads":[{"subject":"Refund","messages":[
///   {"message_id":"<m2@example.com>","direction":"outbound","from":"Acme <support@acme.test>",
///    "to":["alice@example.com"],"subject":"Re: Refund","sent_at":"2026-01-05T11:00:00Z",
///    "text_body":"Sorry! Could you send a photo?"},
///   {"message_id":"<m1@example.com>","direction":"inbound","from":"Alice <alice@example.com>",
///    "to":["support@acme.test"],"subject":"Refund","sent_at":"2026-01-05T10:00:00Z",
///    "text_body":"Hi, my parcel arrived damaged."}]}]}"#).await?;
///
/// let reply = db::load_message(&conn, "<m2@example.com>").await?.expect("stored");
/// let thread = db::thread_messages(&conn, reply.thread_id).await?;
/// let ids: Vec<&str> = thread.iter().map(|m| m.message_id.as_str()).collect();
/// assert_eq!(ids, ["<m1@example.com>", "<m2@example.com>"]);
/// # Ok(()) }
/// ```
pub async fn thread_messages(db: &DatabaseConnection, thread_id: i64) -> Result<Vec<MailMessage>> {
    let mut in_thread = Query::select();
    in_thread
        .columns(columns(message::Entity))
        .from(message::Entity)
        .and_where(Expr::col((message::Entity, message::Column::EmailThreadId)).eq(thread_id))
        .order_by((message::Entity, message::Column::SentAt), Order::Asc)
        .order_by((message::Entity, message::Column::Id), Order::Asc);
    let mut messages = Vec::new();
    for row in db.query_all(&in_thread).await? {
        messages.push(rows::message(&row)?);
    }
    if messages.is_empty() {
        return Ok(messages);
    }
    let mut ids = Query::select();
    ids.column(message::Column::Id)
        .from(message::Entity)
        .and_where(Expr::col(message::Column::EmailThreadId).eq(thread_id));
    let mut of_thread = Query::select();
    of_thread
        .columns(columns(attachment::Entity))
        .from(attachment::Entity)
        .and_where(Expr::col((attachment::Entity, attachment::Column::MessageId)).in_subquery(ids))
        .order_by((attachment::Entity, attachment::Column::Id), Order::Asc);
    let position: HashMap<i64, usize> = messages
        .iter()
        .enumerate()
        .map(|(i, m)| (m.id, i))
        .collect();
    for row in db.query_all(&of_thread).await? {
        let (message_id, attachment) = rows::attachment(&row, true)?;
        if let Some(&i) = position.get(&message_id) {
            messages[i].attachments.push(attachment);
        }
    }
    Ok(messages)
}

/// The inbound messages of thread `thread_id`, oldest first (by `sent_at`, ties by `id`):
/// their Message-IDs and `sent_at`. `None` when there is no such thread.
pub async fn thread_inbound_messages(
    db: &DatabaseConnection,
    thread_id: i64,
) -> Result<Option<Vec<(String, DateTime<Utc>)>>> {
    if email_thread::Entity::find_by_id(thread_id)
        .one(db)
        .await?
        .is_none()
    {
        return Ok(None);
    }
    let rows = message::Entity::find()
        .filter(message::Column::EmailThreadId.eq(thread_id))
        .filter(message::Column::Direction.eq(Direction::Inbound.as_str()))
        .order_by_asc(message::Column::SentAt)
        .order_by_asc(message::Column::Id)
        .all(db)
        .await?;
    Ok(Some(
        rows.into_iter()
            .map(|m| (m.message_id, m.sent_at))
            .collect(),
    ))
}
