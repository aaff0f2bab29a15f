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

use sea_orm::sea_query::{Alias, Expr, ExprTrait, JoinType, Order, Query, SelectStatement};
use sea_orm::{ConnectionTrait, DatabaseConnection};

use super::embedded;
use super::entities::{attachment, message, tool_use};
use super::rows::{
    ATTACHMENT_COLUMNS, MESSAGE_COLUMNS, Row, attachment_from_row, message_from_row,
};
use crate::error::Result;
use crate::mail::MailMessage;

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

/// The bounded sub-select of the prior messages' ids (§6 rule 2).
fn prior_ids(current: &MailMessage, limit: Option<u64>) -> SelectStatement {
    use message::Column as M;
    let mut q = Query::select();
    q.column((message::Entity, M::Id))
        .from(message::Entity)
        .and_where(Expr::col((message::Entity, M::EmailThreadId)).eq(current.thread_id))
        .and_where(Expr::col((message::Entity, M::SentAt)).lte(current.sent_at))
        .and_where(Expr::col((message::Entity, M::Id)).ne(current.id))
        .order_by((message::Entity, M::SentAt), Order::Desc)
        .order_by((message::Entity, M::Id), Order::Desc);
    if let Some(n) = limit {
        q.limit(n);
    }
    q
}

fn prior_alias() -> Alias {
    Alias::new("prior")
}

/// The three statements of one history read.
struct Statements {
    messages: SelectStatement,
    attachments: SelectStatement,
    tool_uses: Option<SelectStatement>,
}

/// The columns of the tool uses statement, in the order [`Turns::tool_use`] reads them.
const TOOL_USE_COLUMNS: [tool_use::Column; 9] = {
    use tool_use::Column as U;
    [
        U::MessageId,
        U::Id,
        U::RunId,
        U::TurnIndex,
        U::Position,
        U::ToolCallId,
        U::Name,
        U::Input,
        U::Result,
    ]
};

impl Statements {
    fn new(current: &MailMessage, limit: Option<u64>, with_tools: bool) -> Self {
        use message::Column as M;
        let mut messages = prior_ids(current, limit);
        messages.clear_selects();
        messages.columns(MESSAGE_COLUMNS.map(|c| (message::Entity, c)));

        use attachment::Column as A;
        // The attachments without their bytes: the history only names them.
        let mut attachments = Query::select();
        attachments
            .columns(
                ATTACHMENT_COLUMNS[..5]
                    .iter()
                    .map(|c| (attachment::Entity, *c)),
            )
            .from(attachment::Entity)
            .join_subquery(
                JoinType::InnerJoin,
                prior_ids(current, limit),
                prior_alias(),
                Expr::col((prior_alias(), M::Id)).equals((attachment::Entity, A::MessageId)),
            )
            .order_by((attachment::Entity, A::Id), Order::Asc);

        let tool_uses = with_tools.then(|| {
            use tool_use::Column as U;
            let mut q = Query::select();
            q.columns(TOOL_USE_COLUMNS.map(|c| (tool_use::Entity, c)))
                .from(tool_use::Entity)
                .join_subquery(
                    JoinType::InnerJoin,
                    prior_ids(current, limit),
                    prior_alias(),
                    Expr::col((prior_alias(), M::Id)).equals((tool_use::Entity, U::MessageId)),
                );
            q
        });
        Self {
            messages,
            attachments,
            tool_uses,
        }
    }
}

/// The turns being built from the rows of the three statements, whichever driver reads
/// them.
struct Turns {
    turns: Vec<PriorTurn>,
    /// `(message id, position in turns)`, sorted by id, once the messages are read.
    index: Vec<(i64, usize)>,
}

impl Turns {
    fn new() -> Self {
        Self {
            turns: Vec::new(),
            index: Vec::new(),
        }
    }

    /// One row of the messages statement (newest first).
    fn message(&mut self, row: &impl Row) -> Result<()> {
        self.turns.push(PriorTurn {
            message: message_from_row(row)?,
            tool_uses: Vec::new(),
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
        let (message_id, attachment) = attachment_from_row(row, false)?;
        if let Some(turn) = self.turn(message_id) {
            turn.message.attachments.push(attachment);
        }
        Ok(())
    }

    /// One row of the tool uses statement.
    fn tool_use(&mut self, row: &impl Row) -> Result<()> {
        let message_id = row.int(0)?;
        if let Some(turn) = self.turn(message_id) {
            turn.tool_uses.push(StoredToolUse {
                id: row.int(1)?,
                run_id: row.text(2)?,
                turn_index: row.int32(3)?,
                position: row.int32(4)?,
                tool_call_id: row.text(5)?,
                name: row.text(6)?,
                input: row.text(7)?,
                result: row.opt_text(8)?,
            });
        }
        Ok(())
    }
}

/// Reads the prior messages of `current` (oldest first) with their attachments and, when
/// `with_tools`, their tool uses: on a SQLite file through the SQLite C library
/// ([`embedded`]), elsewhere through SeaORM; the same statements either way.
pub(crate) async fn read(
    db: &DatabaseConnection,
    current: &MailMessage,
    limit: Option<u64>,
    with_tools: bool,
) -> Result<Vec<PriorTurn>> {
    if limit == Some(0) {
        return Ok(Vec::new());
    }
    let statements = Statements::new(current, limit, with_tools);
    let mut turns = Turns::new();
    if let Some(reader) = embedded::reader(db) {
        return reader.run(|conn| {
            conn.query(&statements.messages, |row| turns.message(row))?;
            if turns.turns.is_empty() {
                return Ok(Vec::new());
            }
            turns.messages_done();
            conn.query(&statements.attachments, |row| turns.attachment(row))?;
            if let Some(tool_uses) = &statements.tool_uses {
                conn.query(tool_uses, |row| turns.tool_use(row))?;
            }
            Ok(turns.turns)
        });
    }
    for row in db.query_all(&statements.messages).await? {
        turns.message(&row)?;
    }
    if turns.turns.is_empty() {
        return Ok(Vec::new());
    }
    turns.messages_done();
    for row in db.query_all(&statements.attachments).await? {
        turns.attachment(&row)?;
    }
    if let Some(tool_uses) = &statements.tool_uses {
        for row in db.query_all(tool_uses).await? {
            turns.tool_use(&row)?;
        }
    }
    Ok(turns.turns)
}
