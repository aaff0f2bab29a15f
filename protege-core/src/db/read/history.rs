//! The reads behind `ThreadHistory`: three statements whatever the thread length, four
//! with `quoted = "strip"`.
//!
//! 1. the prior messages: `ORDER BY sent_at DESC, id DESC LIMIT N` on the
//!    `(email_thread_id, sent_at, id)` index;
//! 2. their attachments (without the bytes), joined to the same bounded sub-select;
//! 3. their tool uses, joined the same way, less those of runs that did not end `done` or
//!    `stopped` (a `NOT EXISTS` on the key of `runs`);
//! 4. with `quoted = "strip"`, their stored stripped bodies (`message_strips`), joined the
//!    same way, and the current message's.
//!
//! The sub-select is a derived table rather than `IN (SELECT ... LIMIT N)`, which
//! MySQL/MariaDB reject, and rather than a list of ids, whose length would be bounded by
//! each backend's parameter limit.

use sea_orm::sea_query::{
    Alias, Asterisk, Expr, ExprTrait, Func, JoinType, Order, Query, SelectStatement, UnionType,
    WindowStatement,
};
use sea_orm::{DatabaseConnection, Iterable as _};

pub(crate) use super::rows::StoredToolUse;
use super::rows::{self, Row, TableColumn, columns};
use super::summary;
use crate::db::entities::{attachment, message, message_strip, tool_use};
use crate::db::session::{Part, Session};
use crate::db::strips::{STRIP_RULES, StoredStrip};
use crate::error::Result;
use crate::mail::MailMessage;

/// A prior message and the tool uses of the runs that answered it.
#[derive(Debug)]
pub(crate) struct PriorTurn {
    pub(crate) message: MailMessage,
    pub(crate) tool_uses: Vec<StoredToolUse>,
    /// Its stored stripped body (of the current rules), when asked for and stored.
    pub(crate) strip: Option<StoredStrip>,
}

/// What one history read gives: the prior turns, oldest first, and, when the stripped
/// bodies were asked for, the current message's (when stored).
#[derive(Debug, Default)]
pub(crate) struct History {
    pub(crate) turns: Vec<PriorTurn>,
    pub(crate) current_strip: Option<StoredStrip>,
}

/// The largest `LIMIT` bound: every backend takes a signed 64-bit limit (a larger `u64`
/// would not bind on PostgreSQL or SQLite). A larger `limit` or `limit + step - 1` asks for
/// every row all the same.
const MAX_LIMIT: u64 = i64::MAX as u64;

/// The bounded sub-select of the prior messages' ids: the `limit` most recent,
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
            q.limit(Ord::min(
                n.saturating_add(step.saturating_sub(1)),
                MAX_LIMIT,
            ));
        }
        (Some(n), None) => {
            q.limit(Ord::min(n, MAX_LIMIT));
        }
        (None, _) => {}
    }
    q
}

/// The conditions of a prior message of `current`: same thread, sent at or before it (or the
/// message it answers, whatever its Date), not itself, not a reply the customer never
/// received; with `after_summary`, sent after the through-message of the summary that
/// applies to `current`.
fn prior_of(q: &mut SelectStatement, current: &MailMessage, after_summary: bool) {
    use message::Column as M;
    // Sent at or before it, or the message it answers whatever that one's Date says (a
    // clock that is wrong must not hide what the customer replied to).
    let mut before = Expr::col((message::Entity, M::SentAt)).lte(current.sent_at);
    if let Some(parent) = &current.in_reply_to {
        before = before.or(Expr::col((message::Entity, M::MessageId)).eq(parent.as_str()));
    }
    q.and_where(Expr::col((message::Entity, M::EmailThreadId)).eq(current.thread_id))
        .and_where(before)
        .and_where(Expr::col((message::Entity, M::Id)).ne(current.id))
        .and_where(rows::not_unsent_reply(message::Entity));
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

/// The statements of one history read: three, and a fourth with the stripped bodies.
struct Statements {
    messages: SelectStatement,
    attachments: SelectStatement,
    tool_uses: Option<SelectStatement>,
    strips: Option<SelectStatement>,
}

/// The stored stripped bodies (of the current rules) of the prior messages and of the
/// current message: the rows of the window joined to the same bounded sub-select, then the
/// current message's row.
fn strips(
    current: &MailMessage,
    limit: Option<u64>,
    step: Option<u64>,
    after_summary: bool,
) -> SelectStatement {
    use message::Column as M;
    use message_strip::Column as S;
    let mut window = Query::select();
    window
        .columns(columns(message_strip::Entity))
        .from(message_strip::Entity)
        .join_subquery(
            JoinType::InnerJoin,
            prior_ids(current, limit, step, after_summary),
            prior_alias(),
            Expr::col((prior_alias(), M::Id)).equals((message_strip::Entity, S::MessageId)),
        )
        .and_where(Expr::col((message_strip::Entity, S::Rules)).eq(STRIP_RULES));
    let mut own = Query::select();
    own.columns(columns(message_strip::Entity))
        .from(message_strip::Entity)
        .and_where(Expr::col((message_strip::Entity, S::MessageId)).eq(current.id))
        .and_where(Expr::col((message_strip::Entity, S::Rules)).eq(STRIP_RULES));
    window.union(UnionType::All, own);
    window
}

impl Statements {
    fn new(
        current: &MailMessage,
        limit: Option<u64>,
        step: Option<u64>,
        after_summary: bool,
        with_tools: bool,
        with_strips: bool,
    ) -> Self {
        use message::Column as M;
        let mut messages = prior_ids(current, limit, step, after_summary);
        messages.clear_selects();
        for (table, column) in columns(message::Entity) {
            rows::history_column(&mut messages, table, column);
        }

        use attachment::Column as A;
        // The attachments without their bytes (the last column): the history only names
        // them.
        let mut attachments = Query::select();
        attachments
            .columns(columns(attachment::Entity).take(A::Data.position()))
            .from(attachment::Entity)
            .join_subquery(
                JoinType::InnerJoin,
                prior_ids(current, limit, step, after_summary),
                prior_alias(),
                Expr::col((prior_alias(), M::Id)).equals((attachment::Entity, A::MessageId)),
            )
            .order_by((attachment::Entity, A::Id), Order::Asc);

        let tool_uses = with_tools.then(|| {
            use tool_use::Column as U;
            let mut q = Query::select();
            q.columns(columns(tool_use::Entity))
                .from(tool_use::Entity)
                .join_subquery(
                    JoinType::InnerJoin,
                    prior_ids(current, limit, step, after_summary),
                    prior_alias(),
                    Expr::col((prior_alias(), M::Id)).equals((tool_use::Entity, U::MessageId)),
                )
                // Only the rounds of runs that ended `done` or `stopped` (and rows of no
                // stored run, imported from a fixture).
                .and_where(super::runs::replayed_tool_use());
            q
        });
        Self {
            messages,
            attachments,
            tool_uses,
            strips: with_strips.then(|| strips(current, limit, step, after_summary)),
        }
    }
}

/// The turns being built from the rows of the statements, whichever driver reads
/// them.
struct Turns {
    turns: Vec<PriorTurn>,
    /// `(message id, position in turns)`, sorted by id, once the messages are read.
    index: Vec<(i64, usize)>,
    /// The current message's row id, and its stripped body once read.
    current: (i64, Option<StoredStrip>),
}

impl Turns {
    fn new(current: i64) -> Self {
        Self {
            turns: Vec::new(),
            index: Vec::new(),
            current: (current, None),
        }
    }

    fn done(self) -> History {
        History {
            turns: self.turns,
            current_strip: self.current.1,
        }
    }

    /// One row of the messages statement (newest first).
    fn message(&mut self, row: &impl Row) -> Result<()> {
        self.turns.push(PriorTurn {
            message: rows::message(row)?,
            tool_uses: Vec::new(),
            strip: None,
        });
        Ok(())
    }

    /// Puts the messages oldest first and indexes them for the attachments and tool uses.
    fn messages_done(&mut self) {
        self.turns.reverse();
        // Ids ascend with insertion; positions of the turns by message id for the joins.
        self.index = self
            .turns
            .iter()
            .enumerate()
            .map(|(i, t)| (t.message.id, i))
            .collect();
        self.index.sort_unstable();
    }

    fn turn(&mut self, message_id: i64) -> Option<&mut PriorTurn> {
        let at = self
            .index
            .binary_search_by_key(&message_id, |(id, _)| *id)
            .ok()?;
        self.turns.get_mut(self.index[at].1)
    }

    /// One row of the attachments statement.
    fn attachment(&mut self, row: &impl Row) -> Result<()> {
        let (message_id, attachment) = rows::attachment(row, false)?;
        if let Some(turn) = self.turn(message_id) {
            turn.message.attachments.push(attachment);
        }
        Ok(())
    }

    /// One row of the stripped bodies statement.
    fn strip(&mut self, row: &impl Row) -> Result<()> {
        let (message_id, strip) = StoredStrip::read(row)?;
        if message_id == self.current.0 {
            self.current.1 = Some(strip);
        } else if let Some(turn) = self.turn(message_id) {
            turn.strip = Some(strip);
        }
        Ok(())
    }

    /// One row of the tool uses statement.
    fn tool_use(&mut self, row: &impl Row) -> Result<()> {
        let (message_id, tool_use) = rows::tool_use(row)?;
        if let Some(turn) = self.turn(message_id) {
            turn.tool_uses.push(tool_use);
        }
        Ok(())
    }
}

/// Reads the prior messages of `current` (oldest first) with their attachments and, when
/// `with_tools`, their tool uses, and when `with_strips` the stored stripped bodies of them
/// and of `current`; `step` selects a cache-stable window (see `prior_ids`) and
/// `after_summary` keeps only messages after the applicable summary's through-message. The
/// statements are one read of a fixed shape ([`Session::parts`]): one round trip on
/// PostgreSQL.
pub(crate) async fn read(
    db: &DatabaseConnection,
    current: &MailMessage,
    limit: Option<u64>,
    step: Option<u64>,
    after_summary: bool,
    with_tools: bool,
    with_strips: bool,
) -> Result<History> {
    if limit == Some(0) && !with_strips {
        return Ok(History::default());
    }
    let statements = Statements::new(current, limit, step, after_summary, with_tools, with_strips);
    let mut turns = Turns::new(current.id);
    // Without prior messages there are no attachments or tool uses to read.
    let mut parts = vec![
        Part::new(db, &statements.messages, message::Column::iter),
        Part::new(db, &statements.attachments, || {
            attachment::Column::iter().take(attachment::Column::Data.position())
        })
        .when_rows_in(0),
    ];
    let tools = statements.tool_uses.is_some();
    if let Some(tool_uses) = &statements.tool_uses {
        parts.push(Part::new(db, tool_uses, tool_use::Column::iter).when_rows_in(0));
    }
    if let Some(strips) = &statements.strips {
        parts.push(Part::new(db, strips, message_strip::Column::iter));
    }
    // One snapshot for them all, so an erasure never leaves messages without their rounds.
    let mut messages_done = false;
    Session::parts(db, &parts, |part, row| {
        if part > 0 && !messages_done {
            turns.messages_done();
            messages_done = true;
        }
        match (part, tools) {
            (0, _) => turns.message(row),
            (1, _) => turns.attachment(row),
            (2, true) => turns.tool_use(row),
            _ => turns.strip(row),
        }
    })
    .await?;
    if !messages_done {
        turns.messages_done();
    }
    Ok(turns.done())
}
