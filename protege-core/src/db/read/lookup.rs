//! Finding stored mail: a message by its Message-ID (the trigger of a reply run), the
//! messages of a thread, and a thread's inbound messages.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, Order, Query, SelectStatement};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, Iterable as _, QueryFilter,
    QueryOrder,
};

use super::rows::{self, TableColumn, columns};
use crate::db::entities::{attachment, email_thread, message, message_address, tool_use};
use crate::db::session::{Part, Row as _, Session};
use crate::error::Result;
use crate::mail::{Direction, MailMessage};

/// The ids of the messages of thread `thread`: a subquery for `IN`.
pub fn thread_message_ids(thread: i64) -> SelectStatement {
    Query::select()
        .column(message::Column::Id)
        .from(message::Entity)
        .and_where(Expr::col(message::Column::EmailThreadId).eq(thread))
        .to_owned()
}

/// The thread of message row `message`: a subquery.
pub(crate) fn thread_of(message: i64) -> SelectStatement {
    Query::select()
        .column(message::Column::EmailThreadId)
        .from(message::Entity)
        .and_where(Expr::col(message::Column::Id).eq(message))
        .to_owned()
}

/// The ids of the messages of the thread of message row `message`: a subquery for `IN`.
pub fn thread_message_ids_of(message: i64) -> SelectStatement {
    Query::select()
        .column(message::Column::Id)
        .from(message::Entity)
        .and_where(Expr::col(message::Column::EmailThreadId).in_subquery(thread_of(message)))
        .to_owned()
}

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
    // Stored without NUL, as every import stores it (PostgreSQL rejects NUL in text).
    let is_it = || {
        Expr::col((message::Entity, message::Column::MessageId))
            .eq(crate::mail::without_nul(message_id).as_ref())
    };
    // A Message-ID is stored once (a unique key), so its attachments are those of the
    // messages carrying it.
    let mut its_id = Query::select();
    its_id
        .column((message::Entity, message::Column::Id))
        .from(message::Entity)
        .and_where(is_it());
    let attachments = attachments_where(
        Expr::col((attachment::Entity, attachment::Column::MessageId)).in_subquery(its_id),
    );
    load_message_found(db, &message_where(is_it()), &attachments).await
}

/// The message whose row id (`messages.id`) is `row`, with its attachments; `None` when
/// there is none.
pub async fn load_message_by_row(db: &DatabaseConnection, row: i64) -> Result<Option<MailMessage>> {
    let by_row = message_where(Expr::col((message::Entity, message::Column::Id)).eq(row));
    let attachments =
        attachments_where(Expr::col((attachment::Entity, attachment::Column::MessageId)).eq(row));
    load_message_found(db, &by_row, &attachments).await
}

/// The newest inbound message (by `sent_at`, ties by `id`), with its attachments; `None`
/// when there is none: the message `protege demo` answers.
pub async fn newest_inbound_message(db: &DatabaseConnection) -> Result<Option<MailMessage>> {
    let mut newest = Query::select();
    newest
        .column((message::Entity, message::Column::Id))
        .from(message::Entity)
        .and_where(
            Expr::col((message::Entity, message::Column::Direction))
                .eq(Direction::Inbound.as_str()),
        )
        .order_by((message::Entity, message::Column::SentAt), Order::Desc)
        .order_by((message::Entity, message::Column::Id), Order::Desc)
        .limit(1);
    let id = Session::rows(db, &newest, |row| row.get::<i64>(message::Column::Id)).await?;
    match id.first() {
        Some(&id) => load_message_by_row(db, id).await,
        None => Ok(None),
    }
}

/// The message `message` finds (a select of [`message_where`]) with the attachments
/// `attachments` finds (a select of [`attachments_where`]): one read of a fixed shape, in
/// one snapshot.
async fn load_message_found(
    db: &DatabaseConnection,
    message: &SelectStatement,
    attachments: &SelectStatement,
) -> Result<Option<MailMessage>> {
    let parts = [
        Part::new(db, message, message::Column::iter),
        Part::new(db, attachments, attachment::Column::iter).when_rows_in(0),
    ];
    let mut found: Option<MailMessage> = None;
    Session::parts(db, &parts, |part, row| {
        match (part, found.as_mut()) {
            (0, _) => found = Some(rows::message(row)?),
            (_, Some(message)) => message.attachments.push(rows::attachment(row, true)?.1),
            (_, None) => {}
        }
        Ok(())
    })
    .await?;
    Ok(found)
}

/// The message (every column) that `condition` finds, at most one.
fn message_where(condition: sea_orm::sea_query::Expr) -> SelectStatement {
    let mut q = Query::select();
    q.columns(columns(message::Entity))
        .from(message::Entity)
        .and_where(condition)
        .limit(1);
    q
}

/// The attachments (every column, their bytes too) that `condition` finds, in insertion
/// order.
fn attachments_where(condition: sea_orm::sea_query::Expr) -> SelectStatement {
    let mut q = Query::select();
    q.columns(columns(attachment::Entity))
        .from(attachment::Entity)
        .and_where(condition)
        .order_by((attachment::Entity, attachment::Column::Id), Order::Asc);
    q
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
    messages_of_thread(db, thread_id, true).await
}

/// The messages of thread `thread_id` as [`thread_messages`] reads them; the attachments'
/// bytes only `with_data` (the last column of `attachments`).
async fn messages_of_thread(
    db: &DatabaseConnection,
    thread_id: i64,
    with_data: bool,
) -> Result<Vec<MailMessage>> {
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
    let ids = thread_message_ids(thread_id);
    let attachment_columns = columns(attachment::Entity)
        .take(attachment::Column::Data.position() + usize::from(with_data));
    let mut of_thread = Query::select();
    of_thread
        .columns(attachment_columns)
        .from(attachment::Entity)
        .and_where(Expr::col((attachment::Entity, attachment::Column::MessageId)).in_subquery(ids))
        .order_by((attachment::Entity, attachment::Column::Id), Order::Asc);
    let position: HashMap<i64, usize> = messages
        .iter()
        .enumerate()
        .map(|(i, m)| (m.id, i))
        .collect();
    for row in db.query_all(&of_thread).await? {
        let (message_id, attachment) = rows::attachment(&row, with_data)?;
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
    if !thread_exists(db, thread_id).await? {
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

/// A thread as `protege db threads` lists it: its id and subject, how many messages it
/// holds, and its newest message.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ThreadListing {
    /// The database id (`email_threads.id`).
    pub thread: i64,
    /// The thread's subject (that of its first message, without `Re:`/`Fwd:`).
    pub subject: String,
    /// Its messages, inbound and outbound.
    pub messages: u64,
    /// The Message-ID of its newest message (by `sent_at`, ties by `id`).
    pub last_message_id: String,
    /// When that message was sent (UTC).
    pub last_sent_at: DateTime<Utc>,
}

/// The threads that hold messages, the one with the newest message (by `sent_at`, ties by
/// `id`) first, at most `limit` of them. Three statements whatever the number of threads:
/// the counts per thread (ordered by their newest `sent_at`), the threads, and their
/// newest messages.
pub async fn list_threads(db: &DatabaseConnection, limit: u64) -> Result<Vec<ThreadListing>> {
    use sea_orm::sea_query::Alias;
    let mut per_thread = Query::select();
    per_thread
        .expr_as(Expr::col(message::Column::EmailThreadId), "thread")
        .expr_as(Expr::col(message::Column::Id).count(), "messages")
        .from(message::Entity)
        .group_by_col(message::Column::EmailThreadId)
        .order_by_expr(Expr::col(message::Column::SentAt).max(), Order::Desc)
        .order_by_expr(Expr::col(message::Column::Id).max(), Order::Desc)
        .limit(limit);
    let mut counts = Vec::new();
    for row in db.query_all(&per_thread).await? {
        let thread: i64 = row.try_get("", "thread")?;
        let messages: i64 = row.try_get("", "messages")?;
        counts.push((thread, u64::try_from(messages).unwrap_or(0)));
    }
    if counts.is_empty() {
        return Ok(Vec::new());
    }
    let subjects: HashMap<i64, String> = email_thread::Entity::find()
        .filter(email_thread::Column::Id.is_in(counts.iter().map(|c| c.0)))
        .all(db)
        .await?
        .into_iter()
        .map(|t| (t.id, t.subject))
        .collect();
    // A thread's newest message: no message of its thread is sent later, or at the same
    // time and stored later.
    let newer = Alias::new("newer");
    let col = |c: message::Column| Expr::col((newer.clone(), c));
    let this = |c: message::Column| Expr::col((message::Entity, c));
    let mut later = Query::select();
    later
        .expr(Expr::val(1))
        .from_as(message::Entity, newer.clone())
        .and_where(col(message::Column::EmailThreadId).eq(this(message::Column::EmailThreadId)))
        .and_where(
            col(message::Column::SentAt)
                .gt(this(message::Column::SentAt))
                .or(col(message::Column::SentAt)
                    .eq(this(message::Column::SentAt))
                    .and(col(message::Column::Id).gt(this(message::Column::Id)))),
        );
    let last: HashMap<i64, (String, DateTime<Utc>)> = message::Entity::find()
        .filter(message::Column::EmailThreadId.is_in(counts.iter().map(|c| c.0)))
        .filter(Expr::exists(later).not())
        .all(db)
        .await?
        .into_iter()
        .map(|m| (m.email_thread_id, (m.message_id, m.sent_at)))
        .collect();
    Ok(counts
        .into_iter()
        .filter_map(|(thread, messages)| {
            let (last_message_id, last_sent_at) = last.get(&thread)?.clone();
            Some(ThreadListing {
                thread,
                subject: subjects.get(&thread)?.clone(),
                messages,
                last_message_id,
                last_sent_at,
            })
        })
        .collect())
}

/// Whether thread `thread_id` exists.
pub(crate) async fn thread_exists(db: &DatabaseConnection, thread_id: i64) -> Result<bool> {
    Ok(email_thread::Entity::find_by_id(thread_id)
        .one(db)
        .await?
        .is_some())
}

/// The number of tool uses recorded per message of thread `thread_id` (messages without
/// any are left out).
pub(crate) async fn thread_tool_use_counts(
    db: &DatabaseConnection,
    thread_id: i64,
) -> Result<HashMap<i64, u64>> {
    let ids = thread_message_ids(thread_id);
    let mut counts = Query::select();
    counts
        .expr_as(Expr::col(tool_use::Column::MessageId), "message")
        .expr_as(Expr::col(tool_use::Column::Id).count(), "calls")
        .from(tool_use::Entity)
        .and_where(Expr::col(tool_use::Column::MessageId).in_subquery(ids))
        .group_by_col(tool_use::Column::MessageId);
    let mut out = HashMap::new();
    for row in db.query_all(&counts).await? {
        let message: i64 = row.try_get("", "message")?;
        let calls: i64 = row.try_get("", "calls")?;
        out.insert(message, u64::try_from(calls).unwrap_or(0));
    }
    Ok(out)
}

/// A stored message as `protege db messages` lists it: its headers, the size of its
/// readable body, its attachments (without their bytes) and the tool calls recorded
/// under it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MessageListing {
    /// The database id (`messages.id`).
    pub id: i64,
    /// The RFC 5322 Message-ID.
    pub message_id: String,
    /// `inbound` or `outbound`.
    pub direction: Direction,
    /// The From address, in header form.
    pub from: String,
    /// The To addresses, in header form.
    pub to: Vec<String>,
    /// The Cc addresses, in header form.
    pub cc: Vec<String>,
    /// The subject.
    pub subject: String,
    /// When it was sent (UTC).
    pub sent_at: DateTime<Utc>,
    /// The Message-ID it answers, when it names one.
    pub in_reply_to: Option<String>,
    /// The characters of its readable body (the text body, else the HTML converted).
    pub body_chars: usize,
    /// Its attachments, in insertion order.
    pub attachments: Vec<AttachmentListing>,
    /// The tool calls recorded under it (the runs that answered it).
    pub tool_uses: u64,
}

/// An attachment as [`MessageListing`] lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AttachmentListing {
    /// The stable id shown to the model and to tools.
    pub attachment_id: String,
    /// The file name.
    pub filename: String,
    /// The MIME type.
    pub content_type: String,
    /// The size in bytes.
    pub byte_size: i64,
}

/// The messages of thread `thread_id` as a history orders them (by `sent_at`, ties by
/// `id`), listed; `None` when there is no such thread. Four statements whatever the
/// thread's length.
pub async fn list_thread_messages(
    db: &DatabaseConnection,
    thread_id: i64,
) -> Result<Option<Vec<MessageListing>>> {
    if !thread_exists(db, thread_id).await? {
        return Ok(None);
    }
    let tool_uses = thread_tool_use_counts(db, thread_id).await?;
    // The listing names attachments: their bytes stay in the database.
    let messages = messages_of_thread(db, thread_id, false).await?;
    Ok(Some(
        messages
            .into_iter()
            .map(|m| MessageListing {
                id: m.id,
                body_chars: m.readable().chars().count(),
                tool_uses: tool_uses.get(&m.id).copied().unwrap_or(0),
                attachments: m
                    .email
                    .attachments
                    .iter()
                    .map(|a| AttachmentListing {
                        attachment_id: a.attachment_id.clone(),
                        filename: a.filename.clone(),
                        content_type: a.content_type.clone(),
                        byte_size: a.byte_size,
                    })
                    .collect(),
                message_id: m.email.message_id,
                direction: m.email.direction,
                from: m.email.from,
                to: m.email.to,
                cc: m.email.cc,
                subject: m.email.subject,
                sent_at: m.email.sent_at,
                in_reply_to: m.email.in_reply_to,
            })
            .collect(),
    ))
}

/// The Message-IDs of the most recent inbound messages (by `sent_at`, ties by `id`,
/// newest first) where one of `addresses` appears in the From, To or Cc (through
/// `message_addresses`), sent at or after `since` when given, at most `limit`: the
/// messages `Engine::diff` resolves for a persona. One statement.
pub async fn recent_inbound_to(
    db: &DatabaseConnection,
    addresses: &[String],
    since: Option<DateTime<Utc>>,
    limit: u64,
) -> Result<Vec<String>> {
    let keys: Vec<String> = addresses
        .iter()
        .map(|a| crate::mail::address_key(a))
        .filter(|k| !k.is_empty())
        .collect();
    if keys.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let mut to = Query::select();
    to.column(message_address::Column::MessageId)
        .from(message_address::Entity)
        .and_where(Expr::col(message_address::Column::Address).is_in(keys));
    let mut recent = Query::select();
    recent
        .column((message::Entity, message::Column::MessageId))
        .from(message::Entity)
        .and_where(
            Expr::col((message::Entity, message::Column::Direction))
                .eq(Direction::Inbound.as_str()),
        )
        .and_where(Expr::col((message::Entity, message::Column::Id)).in_subquery(to))
        .order_by((message::Entity, message::Column::SentAt), Order::Desc)
        .order_by((message::Entity, message::Column::Id), Order::Desc)
        .limit(limit);
    if let Some(since) = since {
        recent.and_where(Expr::col((message::Entity, message::Column::SentAt)).gte(since));
    }
    let mut out = Vec::new();
    for row in db
        .query_all_raw(crate::db::dates::statement(db, &recent))
        .await?
    {
        out.push(row.try_get::<String>("", "message_id")?);
    }
    Ok(out)
}
