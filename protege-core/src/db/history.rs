//! The reads behind `ThreadHistory`: three statements whatever the thread length.
//!
//! 1. the prior messages: `ORDER BY sent_at DESC, id DESC LIMIT N` on the
//!    `(email_thread_id, sent_at, id)` index;
//! 2. their attachments (without the bytes), joined to the same bounded sub-select;
//! 3. their tool uses, joined the same way.
//!
//! The sub-select is a derived table rather than `IN (SELECT ... LIMIT N)`, which
//! MySQL/MariaDB reject, and rather than a list of ids, whose length would be bounded by
//! each backend's parameter limit.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{
    Alias, Asterisk, Expr, ExprTrait, Func, JoinType, Order, Query, SelectStatement,
    WindowStatement,
};
use sea_orm::{ConnectionTrait, QueryResult};

use super::entities::{attachment, message, tool_use};
use super::{address_list, bad_direction, summary};
use crate::error::Result;
use crate::mail::{Attachment, Direction, MailMessage};

/// A stored tool use, as replayed.
#[derive(Debug, Clone)]
pub(crate) struct StoredToolUse {
    pub(crate) id: i64,
    pub(crate) run_id: String,
    pub(crate) turn_index: i32,
    pub(crate) position: i32,
    pub(crate) tool_call_id: String,
    pub(crate) name: String,
    pub(crate) input: String,
    pub(crate) result: Option<String>,
}

/// A prior message and the tool uses of the runs that answered it.
#[derive(Debug)]
pub(crate) struct PriorTurn {
    pub(crate) message: MailMessage,
    pub(crate) tool_uses: Vec<StoredToolUse>,
}

/// The bounded sub-select of the prior messages' ids (§6 rule 2): the `limit` most recent,
/// or with `step` (a cache-stable window) the most recent `limit + (count - limit) mod step`
/// of the `count` prior messages, which keeps the window's first message in place until
/// it jumps by `step`.
fn prior_ids(
    current: &MailMessage,
    limit: Option<u64>,
    step: Option<u64>,
    after_summary: bool,
) -> SelectStatement {
    use message::Column as M;
    let mut q = Query::select();
    q.column((message::Entity, M::Id)).from(message::Entity);
    prior_of(&mut q, current, after_summary);
    q.order_by((message::Entity, M::SentAt), Order::Desc)
        .order_by((message::Entity, M::Id), Order::Desc);
    match (limit, step) {
        (Some(n), Some(step)) => {
            q.and_where(Expr::col((message::Entity, M::Id)).in_subquery(stable_ids(
                current,
                n,
                step,
                after_summary,
            )));
            q.limit(n.saturating_add(step - 1));
        }
        (Some(n), None) => {
            q.limit(n);
        }
        (None, _) => {}
    }
    q
}

/// The conditions of a prior message of `current`: same thread, sent at or before it, not
/// itself; with `after_summary`, sent after the through-message of the summary that
/// applies to `current`.
fn prior_of(q: &mut SelectStatement, current: &MailMessage, after_summary: bool) {
    use message::Column as M;
    q.and_where(Expr::col((message::Entity, M::EmailThreadId)).eq(current.thread_id))
        .and_where(Expr::col((message::Entity, M::SentAt)).lte(current.sent_at))
        .and_where(Expr::col((message::Entity, M::Id)).ne(current.id));
    if after_summary {
        q.cond_where(summary::after_applicable(current));
    }
}

/// The ids of a cache-stable window of `n` (step `step`, at least 1): each prior message
/// numbered newest first (`rn`) next to their count (`cnt`), kept while
/// `rn <= n + (cnt - n) % step`. With `cnt > n` that is the `cnt - floor((cnt - n) / step)
/// * step` newest; with `cnt <= n` every one (the remainder of a negative dividend is not
/// positive on every backend, and never below `cnt - n`).
fn stable_ids(current: &MailMessage, n: u64, step: u64, after_summary: bool) -> SelectStatement {
    use message::Column as M;
    let n = i64::try_from(n).unwrap_or(i64::MAX);
    let step = i64::try_from(Ord::max(step, 1)).unwrap_or(i64::MAX);
    let mut numbered = Query::select();
    numbered
        .column((message::Entity, M::Id))
        .from(message::Entity);
    prior_of(&mut numbered, current, after_summary);
    let mut newest_first = WindowStatement::new();
    newest_first
        .order_by((message::Entity, M::SentAt), Order::Desc)
        .order_by((message::Entity, M::Id), Order::Desc);
    numbered
        .expr_window_as(Func::cust("ROW_NUMBER"), newest_first, Alias::new("rn"))
        .expr_window_as(
            Func::count(Expr::col(Asterisk)),
            WindowStatement::new(),
            Alias::new("cnt"),
        );
    let w = Alias::new("stable");
    let mut q = Query::select();
    q.column((w.clone(), M::Id))
        .from_subquery(numbered, w.clone())
        .and_where(
            Expr::col((w.clone(), Alias::new("rn")))
                .lte(Expr::val(n).add(Expr::col((w, Alias::new("cnt"))).sub(n).modulo(step))),
        );
    q
}

fn prior_alias() -> Alias {
    Alias::new("prior")
}

/// Reads the prior messages of `current` (oldest first) with their attachments and, when
/// `with_tools`, their tool uses; `step` selects a cache-stable window (see `prior_ids`) and
/// `after_summary` keeps only messages after the applicable summary's through-message.
pub(crate) async fn read<C: ConnectionTrait>(
    db: &C,
    current: &MailMessage,
    limit: Option<u64>,
    step: Option<u64>,
    after_summary: bool,
    with_tools: bool,
) -> Result<Vec<PriorTurn>> {
    if limit == Some(0) {
        return Ok(Vec::new());
    }
    use message::Column as M;
    let mut q = prior_ids(current, limit, step, after_summary);
    q.columns([
        (message::Entity, M::MessageId),
        (message::Entity, M::Direction),
        (message::Entity, M::FromAddress),
        (message::Entity, M::ToAddresses),
        (message::Entity, M::CcAddresses),
        (message::Entity, M::Subject),
        (message::Entity, M::SentAt),
        (message::Entity, M::TextBody),
        (message::Entity, M::HtmlBody),
        (message::Entity, M::InReplyTo),
    ]);
    let rows = db.query_all(&q).await?;
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let mut turns = Vec::with_capacity(rows.len());
    for row in rows.iter().rev() {
        turns.push(PriorTurn {
            message: message_row(row, current.thread_id)?,
            tool_uses: Vec::new(),
        });
    }
    // Ids ascend with insertion; positions of the turns by message id for the joins.
    let mut index: Vec<(i64, usize)> = turns
        .iter()
        .enumerate()
        .map(|(i, t)| (t.message.id, i))
        .collect();
    index.sort_unstable();
    let position = |id: i64| {
        index
            .binary_search_by_key(&id, |(id, _)| *id)
            .ok()
            .map(|i| index[i].1)
    };

    use attachment::Column as A;
    let mut q = Query::select();
    q.columns([
        (attachment::Entity, A::MessageId),
        (attachment::Entity, A::AttachmentId),
        (attachment::Entity, A::Filename),
        (attachment::Entity, A::ContentType),
        (attachment::Entity, A::ByteSize),
    ])
    .from(attachment::Entity)
    .join_subquery(
        JoinType::InnerJoin,
        prior_ids(current, limit, step, after_summary),
        prior_alias(),
        Expr::col((prior_alias(), M::Id)).equals((attachment::Entity, A::MessageId)),
    )
    .order_by((attachment::Entity, A::Id), Order::Asc);
    for row in db.query_all(&q).await? {
        let message_id: i64 = row.try_get_by_index(0)?;
        if let Some(i) = position(message_id) {
            turns[i].message.attachments.push(Attachment {
                attachment_id: row.try_get_by_index(1)?,
                filename: row.try_get_by_index(2)?,
                content_type: row.try_get_by_index(3)?,
                byte_size: row.try_get_by_index(4)?,
                data: None,
            });
        }
    }

    if with_tools {
        use tool_use::Column as U;
        let mut q = Query::select();
        q.columns([
            (tool_use::Entity, U::MessageId),
            (tool_use::Entity, U::Id),
            (tool_use::Entity, U::RunId),
            (tool_use::Entity, U::TurnIndex),
            (tool_use::Entity, U::Position),
            (tool_use::Entity, U::ToolCallId),
            (tool_use::Entity, U::Name),
            (tool_use::Entity, U::Input),
            (tool_use::Entity, U::Result),
        ])
        .from(tool_use::Entity)
        .join_subquery(
            JoinType::InnerJoin,
            prior_ids(current, limit, step, after_summary),
            prior_alias(),
            Expr::col((prior_alias(), M::Id)).equals((tool_use::Entity, U::MessageId)),
        );
        for row in db.query_all(&q).await? {
            let message_id: i64 = row.try_get_by_index(0)?;
            if let Some(i) = position(message_id) {
                turns[i].tool_uses.push(StoredToolUse {
                    id: row.try_get_by_index(1)?,
                    run_id: row.try_get_by_index(2)?,
                    turn_index: row.try_get_by_index(3)?,
                    position: row.try_get_by_index(4)?,
                    tool_call_id: row.try_get_by_index(5)?,
                    name: row.try_get_by_index(6)?,
                    input: row.try_get_by_index(7)?,
                    result: row.try_get_by_index(8)?,
                });
            }
        }
    }
    Ok(turns)
}

fn message_row(row: &QueryResult, thread_id: i64) -> Result<MailMessage> {
    let message_id: String = row.try_get_by_index(1)?;
    let direction: String = row.try_get_by_index(2)?;
    let direction =
        Direction::parse(&direction).ok_or_else(|| bad_direction(&direction, &message_id))?;
    let to: String = row.try_get_by_index(4)?;
    let cc: String = row.try_get_by_index(5)?;
    let sent_at: DateTime<Utc> = row.try_get_by_index(7)?;
    Ok(MailMessage {
        id: row.try_get_by_index(0)?,
        thread_id,
        direction,
        from: row.try_get_by_index(3)?,
        to: address_list(&to, "to_addresses", &message_id)?,
        cc: address_list(&cc, "cc_addresses", &message_id)?,
        subject: row.try_get_by_index(6)?,
        sent_at,
        text_body: row.try_get_by_index(8)?,
        html_body: row.try_get_by_index(9)?,
        in_reply_to: row.try_get_by_index(10)?,
        message_id,
        attachments: Vec::new(),
    })
}
