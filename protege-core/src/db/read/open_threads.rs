//! The read behind `OpenThreads`: a persona's threads waiting for an answer, in one
//! statement whatever their number.
//!
//! A thread is the persona's when one of its addresses appears in a From, To or Cc of one
//! of its messages (`message_addresses`). Its *waiting* messages are its inbound messages
//! that no outbound message follows (sent at or after them; a reply that waits for
//! approval, failed or was rejected was not sent and follows nothing). A thread is open
//! when it has waiting messages, that is when its newest message is inbound; it is listed
//! when its newest waiting message is sent within the window. Only messages sent at or
//! before `now` count: the read answers as of the run's clock.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Alias, Expr, ExprTrait, JoinType, Order, Query, SelectStatement};
use sea_orm::{ConnectionTrait, DatabaseConnection};

use super::rows::not_unsent_reply;
use crate::db::dates;
use crate::db::entities::{email_thread, message, message_address};
use crate::error::Result;

/// One open thread, as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OpenThread {
    /// The thread's row id.
    pub(crate) id: i64,
    /// Its subject, as stored.
    pub(crate) subject: String,
    /// How many of its messages were sent by `now` (replies not sent left out).
    pub(crate) messages: i64,
    /// When its earliest waiting message was sent: how long the thread has waited.
    pub(crate) since: DateTime<Utc>,
    /// The From of its newest waiting message, as stored (header form).
    pub(crate) from: String,
    /// The Message-ID of that message.
    pub(crate) message_id: String,
}

/// What is asked: whose threads, which window, at most how many.
#[derive(Debug)]
pub(crate) struct Asked<'a> {
    /// The persona's address keys (not empty).
    pub(crate) persona: &'a [String],
    /// The start of the window: a thread whose newest waiting message is older is left
    /// out.
    pub(crate) since: DateTime<Utc>,
    /// The clock: later messages do not count.
    pub(crate) now: DateTime<Utc>,
    /// The most threads listed.
    pub(crate) limit: u64,
}

/// The largest `LIMIT` bound every backend binds (a signed 64-bit integer).
const MAX_LIMIT: u64 = i64::MAX as u64;

fn alias(name: &str) -> Alias {
    Alias::new(name)
}

/// The open threads `asked` names, longest waiting first (ties by thread id).
pub(crate) async fn read(db: &DatabaseConnection, asked: &Asked<'_>) -> Result<Vec<OpenThread>> {
    if asked.limit == 0 || asked.persona.is_empty() {
        return Ok(Vec::new());
    }
    let select = statement(asked);
    let rows = db.query_all_raw(dates::statement(db, &select)).await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        out.push(OpenThread {
            id: row.try_get("", "id")?,
            subject: row.try_get("", "subject")?,
            messages: row.try_get("", "messages")?,
            since: row.try_get("", "since")?,
            from: row
                .try_get::<Option<String>>("", "from_address")?
                .unwrap_or_default(),
            message_id: row
                .try_get::<Option<String>>("", "newest_message_id")?
                .unwrap_or_default(),
        });
    }
    Ok(out)
}

/// The condition that the `messages` row of `table` was sent by `now`.
fn sent_by(table: Alias, now: DateTime<Utc>) -> Expr {
    Expr::col((table, message::Column::SentAt)).lte(now)
}

/// `SELECT email_thread_id AS thread_id, MIN(sent_at) AS since FROM messages AS w WHERE
/// w is inbound, of the persona's threads, sent by now, and no outbound message of its
/// thread follows it GROUP BY email_thread_id HAVING MAX(sent_at) >= window start`.
fn waiting(asked: &Asked<'_>) -> SelectStatement {
    use message::Column as M;
    use message_address::Column as A;
    let (w, o) = (alias("w"), alias("o"));
    let mut personas_threads = Query::select();
    personas_threads
        .column(A::EmailThreadId)
        .from(message_address::Entity)
        .and_where(Expr::col(A::Address).is_in(asked.persona.iter().cloned()));
    let mut answered = Query::select();
    answered
        .expr(Expr::val(1))
        .from_as(message::Entity, o.clone())
        .and_where(Expr::col((o.clone(), M::EmailThreadId)).equals((w.clone(), M::EmailThreadId)))
        .and_where(Expr::col((o.clone(), M::Direction)).eq("outbound"))
        .and_where(Expr::col((o.clone(), M::SentAt)).gte(Expr::col((w.clone(), M::SentAt))))
        .and_where(sent_by(o.clone(), asked.now))
        .and_where(not_unsent_reply(o));
    let mut q = Query::select();
    q.expr_as(Expr::col((w.clone(), M::EmailThreadId)), alias("thread_id"))
        .expr_as(Expr::col((w.clone(), M::SentAt)).min(), alias("since"))
        .from_as(message::Entity, w.clone())
        .and_where(Expr::col((w.clone(), M::Direction)).eq("inbound"))
        .and_where(sent_by(w.clone(), asked.now))
        .and_where(Expr::col((w.clone(), M::EmailThreadId)).in_subquery(personas_threads))
        .and_where(Expr::exists(answered).not())
        .group_by_col((w.clone(), M::EmailThreadId))
        .and_having(Expr::col((w, M::SentAt)).max().gte(asked.since));
    q
}

/// The whole read: each open thread's row, its count of messages and its newest waiting
/// message's From and Message-ID, longest waiting first.
fn statement(asked: &Asked<'_>) -> SelectStatement {
    use email_thread::Column as T;
    use message::Column as M;
    let (t, c, l, open) = (alias("t"), alias("c"), alias("l"), alias("open"));
    let mut count = Query::select();
    count
        .expr(Expr::col((c.clone(), M::Id)).count())
        .from_as(message::Entity, c.clone())
        .and_where(Expr::col((c.clone(), M::EmailThreadId)).equals((t.clone(), T::Id)))
        .and_where(sent_by(c.clone(), asked.now))
        .and_where(not_unsent_reply(c));
    // The newest inbound message sent by now is the newest waiting one: the thread is open.
    let newest = |column: M| {
        let mut q = Query::select();
        q.column((l.clone(), column))
            .from_as(message::Entity, l.clone())
            .and_where(Expr::col((l.clone(), M::EmailThreadId)).equals((t.clone(), T::Id)))
            .and_where(Expr::col((l.clone(), M::Direction)).eq("inbound"))
            .and_where(sent_by(l.clone(), asked.now))
            .order_by((l.clone(), M::SentAt), Order::Desc)
            .order_by((l.clone(), M::Id), Order::Desc)
            .limit(1);
        Expr::from(q)
    };
    let mut q = Query::select();
    q.column((t.clone(), T::Id))
        .column((t.clone(), T::Subject))
        .column((open.clone(), alias("since")))
        .expr_as(Expr::from(count), alias("messages"))
        .expr_as(newest(M::FromAddress), alias("from_address"))
        .expr_as(newest(M::MessageId), alias("newest_message_id"))
        .from_as(email_thread::Entity, t.clone())
        .join_subquery(
            JoinType::InnerJoin,
            waiting(asked),
            open.clone(),
            Expr::col((open.clone(), alias("thread_id"))).equals((t.clone(), T::Id)),
        )
        .order_by((open, alias("since")), Order::Asc)
        .order_by((t, T::Id), Order::Asc)
        .limit(Ord::min(asked.limit, MAX_LIMIT));
    q
}
