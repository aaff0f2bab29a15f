//! The reads behind `CorrespondentHistory`: a correspondent's earlier threads with a
//! persona, in at most four statements whatever the number of threads and messages.
//!
//! The threads chosen (`chosen`, a derived table each statement joins) are the threads
//! other than the current one in which the sender's address makes them a participant
//! (`message_addresses.participant`) and one of the persona's addresses appears, whose
//! newest message is sent at or before the trigger: the `threads` most recent of them by
//! that newest message, found on the `(address, email_thread_id)` index.
//!
//! 1. the chosen threads (`email_threads` rows), oldest first;
//! 2. the newest summary of each of them;
//! 3. the last `messages` messages of each chosen thread without a summary;
//! 4. the attachments of those messages, without their bytes.

use sea_orm::DatabaseConnection;
use sea_orm::sea_query::{
    Alias, Expr, ExprTrait, Func, JoinType, Order, Query, SelectStatement, WindowStatement,
};

use super::rows::{self, Row, TableColumn, columns};
use crate::db::entities::{attachment, email_thread, message, message_address, thread_summary};
use crate::db::session::Session;
use crate::error::Result;
use crate::mail::MailMessage;

/// Who is asking: the trigger, its sender's address key and the persona's address keys.
#[derive(Debug)]
pub(crate) struct Correspondent<'a> {
    /// The trigger of the reply run.
    pub(crate) current: &'a MailMessage,
    /// The sender's address key ([`address_key`](crate::mail::address_key)).
    pub(crate) sender: String,
    /// The persona's address keys (not empty).
    pub(crate) persona: Vec<String>,
}

/// An earlier thread of the correspondent.
#[derive(Debug)]
pub(crate) struct EarlierThread {
    /// The thread's subject.
    pub(crate) subject: String,
    /// Its newest summary, when it has one.
    pub(crate) summary: Option<String>,
    /// That summary's row id.
    pub(crate) summary_id: Option<i64>,
    /// Its last messages, oldest first, with their attachments (none when it has a
    /// summary).
    pub(crate) messages: Vec<MailMessage>,
}

/// The largest `LIMIT` bound every backend binds (a signed 64-bit integer).
const MAX_LIMIT: u64 = i64::MAX as u64;

fn alias(name: &str) -> Alias {
    Alias::new(name)
}

/// `SELECT email_thread_id AS thread_id, MAX(sent_at) AS newest FROM messages WHERE
/// email_thread_id IN (the sender's threads with the persona) GROUP BY email_thread_id
/// HAVING MAX(sent_at) <= trigger ORDER BY newest DESC LIMIT threads`.
fn chosen(who: &Correspondent<'_>, threads: u64) -> SelectStatement {
    use message::Column as M;
    use message_address::Column as A;
    let (sender, persona) = (alias("sender"), alias("persona"));
    let mut with_persona = Query::select();
    with_persona
        .expr(Expr::val(1))
        .from_as(message_address::Entity, persona.clone())
        .and_where(
            Expr::col((persona.clone(), A::EmailThreadId))
                .equals((sender.clone(), A::EmailThreadId)),
        )
        .and_where(Expr::col((persona, A::Address)).is_in(who.persona.iter().cloned()));
    let mut of_sender = Query::select();
    of_sender
        .column((sender.clone(), A::EmailThreadId))
        .from_as(message_address::Entity, sender.clone())
        .and_where(Expr::col((sender.clone(), A::Address)).eq(who.sender.as_str()))
        .and_where(Expr::col((sender.clone(), A::Participant)).eq(true))
        .and_where(Expr::col((sender, A::EmailThreadId)).ne(who.current.thread_id))
        .and_where(Expr::exists(with_persona));
    let newest = || Expr::col((message::Entity, M::SentAt)).max();
    let mut q = Query::select();
    q.expr_as(
        Expr::col((message::Entity, M::EmailThreadId)),
        alias("thread_id"),
    )
    .expr_as(newest(), alias("newest"))
    .from(message::Entity)
    .and_where(Expr::col((message::Entity, M::EmailThreadId)).in_subquery(of_sender))
    .group_by_col((message::Entity, M::EmailThreadId))
    .and_having(newest().lte(who.current.sent_at))
    .order_by_expr(newest(), Order::Desc)
    .order_by((message::Entity, M::EmailThreadId), Order::Desc)
    .limit(Ord::min(threads, MAX_LIMIT));
    q
}

/// `JOIN (chosen) AS chosen ON chosen.thread_id = <column>`.
fn join_chosen(
    q: &mut SelectStatement,
    who: &Correspondent<'_>,
    threads: u64,
    column: impl sea_orm::sea_query::IntoColumnRef,
) {
    q.join_subquery(
        JoinType::InnerJoin,
        chosen(who, threads),
        alias("chosen"),
        Expr::col((alias("chosen"), alias("thread_id"))).equals(column),
    );
}

/// The four statements of one read.
struct Statements {
    threads: SelectStatement,
    summaries: SelectStatement,
    messages: SelectStatement,
    attachments: SelectStatement,
}

impl Statements {
    /// The statements of the `threads` chosen threads of `who`, with the last `messages`
    /// messages of those without a summary.
    fn new(who: &Correspondent<'_>, threads: u64, messages: u64) -> Self {
        use message::Column as M;

        let n = alias("numbered");
        let numbered_messages = numbered_messages(who, threads);
        let kept =
            Expr::col((n.clone(), alias("rn"))).lte(i64::try_from(messages).unwrap_or(i64::MAX));
        let mut message_rows = Query::select();
        message_rows
            .columns(columns(message::Entity).map(|(_, c)| (n.clone(), c)))
            .from_subquery(numbered_messages.clone(), n.clone())
            .and_where(kept.clone())
            .order_by((n.clone(), M::EmailThreadId), Order::Asc)
            .order_by((n.clone(), M::SentAt), Order::Asc)
            .order_by((n.clone(), M::Id), Order::Asc);

        let mut kept_ids = Query::select();
        kept_ids
            .column((n.clone(), M::Id))
            .from_subquery(numbered_messages, n)
            .and_where(kept);
        Self {
            threads: thread_rows(who, threads),
            summaries: newest_summaries(who, threads),
            messages: message_rows,
            attachments: attachments_of(kept_ids),
        }
    }
}

/// The `email_threads` rows of the chosen threads, oldest first (by their newest message).
fn thread_rows(who: &Correspondent<'_>, threads: u64) -> SelectStatement {
    let mut thread_rows = Query::select();
    thread_rows
        .columns(columns(email_thread::Entity))
        .from(email_thread::Entity);
    join_chosen(
        &mut thread_rows,
        who,
        threads,
        (email_thread::Entity, email_thread::Column::Id),
    );
    thread_rows
        .order_by((alias("chosen"), alias("newest")), Order::Asc)
        .order_by((alias("chosen"), alias("thread_id")), Order::Asc);
    thread_rows
}

/// The newest summary of each chosen thread (by `created_at`, ties by `id`).
fn newest_summaries(who: &Correspondent<'_>, threads: u64) -> SelectStatement {
    use thread_summary::Column as S;
    let mut numbered_summaries = Query::select();
    numbered_summaries
        .columns(columns(thread_summary::Entity))
        .from(thread_summary::Entity);
    join_chosen(
        &mut numbered_summaries,
        who,
        threads,
        (thread_summary::Entity, S::EmailThreadId),
    );
    let mut newest_first =
        WindowStatement::partition_by((thread_summary::Entity, S::EmailThreadId));
    newest_first
        .order_by((thread_summary::Entity, S::CreatedAt), Order::Desc)
        .order_by((thread_summary::Entity, S::Id), Order::Desc);
    numbered_summaries.expr_window_as(Func::cust("ROW_NUMBER"), newest_first, alias("rn"));
    let n = alias("numbered");
    let mut summaries = Query::select();
    summaries
        .columns(columns(thread_summary::Entity).map(|(_, c)| (n.clone(), c)))
        .from_subquery(numbered_summaries, n.clone())
        .and_where(Expr::col((n, alias("rn"))).eq(1));
    summaries
}

/// The messages of each chosen thread that has no summary, numbered newest first within
/// their thread (`rn`).
fn numbered_messages(who: &Correspondent<'_>, threads: u64) -> SelectStatement {
    use message::Column as M;
    use thread_summary::Column as S;
    let mut no_summary = Query::select();
    no_summary
        .expr(Expr::val(1))
        .from(thread_summary::Entity)
        .and_where(
            Expr::col((thread_summary::Entity, S::EmailThreadId))
                .equals((message::Entity, M::EmailThreadId)),
        );
    let mut numbered_messages = Query::select();
    for (table, column) in columns(message::Entity) {
        rows::history_column(&mut numbered_messages, table, column);
    }
    numbered_messages.from(message::Entity);
    join_chosen(
        &mut numbered_messages,
        who,
        threads,
        (message::Entity, M::EmailThreadId),
    );
    numbered_messages
        .and_where(Expr::exists(no_summary).not())
        .and_where(rows::not_unsent_reply(message::Entity));
    let mut last_first = WindowStatement::partition_by((message::Entity, M::EmailThreadId));
    last_first
        .order_by((message::Entity, M::SentAt), Order::Desc)
        .order_by((message::Entity, M::Id), Order::Desc);
    numbered_messages.expr_window_as(Func::cust("ROW_NUMBER"), last_first, alias("rn"));
    numbered_messages
}

/// The attachments, without their bytes, of the messages whose ids `kept_ids` selects.
fn attachments_of(kept_ids: SelectStatement) -> SelectStatement {
    use attachment::Column as At;
    let k = alias("kept");
    let mut attachments = Query::select();
    attachments
        .columns(columns(attachment::Entity).take(At::Data.position()))
        .from(attachment::Entity)
        .join_subquery(
            JoinType::InnerJoin,
            kept_ids,
            k.clone(),
            Expr::col((k, message::Column::Id)).equals((attachment::Entity, At::MessageId)),
        )
        .order_by((attachment::Entity, At::Id), Order::Asc);
    attachments
}

/// The threads being built from the rows of the four statements, whichever driver reads
/// them.
#[derive(Default)]
struct Threads {
    ids: Vec<i64>,
    threads: Vec<EarlierThread>,
    /// `(message id, thread position, message position)`, sorted by id.
    index: Vec<(i64, usize, usize)>,
}

impl Threads {
    fn position(&self, thread: i64) -> Option<usize> {
        self.ids.iter().position(|&t| t == thread)
    }

    fn thread(&mut self, row: &impl Row) -> Result<()> {
        self.ids.push(row.get(email_thread::Column::Id)?);
        self.threads.push(EarlierThread {
            subject: row.get(email_thread::Column::Subject)?,
            summary: None,
            summary_id: None,
            messages: Vec::new(),
        });
        Ok(())
    }

    fn summary(&mut self, row: &impl Row) -> Result<()> {
        let thread: i64 = row.get(thread_summary::Column::EmailThreadId)?;
        if let Some(at) = self.position(thread) {
            self.threads[at].summary = Some(rows::summary_content(row)?);
            self.threads[at].summary_id = Some(row.get(thread_summary::Column::Id)?);
        }
        Ok(())
    }

    fn message(&mut self, row: &impl Row) -> Result<()> {
        let m = rows::message(row)?;
        if let Some(at) = self.position(m.thread_id) {
            let messages = &mut self.threads[at].messages;
            self.index.push((m.id, at, messages.len()));
            messages.push(m);
        }
        Ok(())
    }

    fn messages_done(&mut self) {
        self.index.sort_unstable();
    }

    fn attachment(&mut self, row: &impl Row) -> Result<()> {
        let (message_id, attachment) = rows::attachment(row, false)?;
        if let Ok(at) = self
            .index
            .binary_search_by_key(&message_id, |(id, _, _)| *id)
        {
            let (_, thread, position) = self.index[at];
            self.threads[thread].messages[position]
                .attachments
                .push(attachment);
        }
        Ok(())
    }

    fn all_summarised(&self) -> bool {
        self.threads.iter().all(|t| t.summary.is_some())
    }
}

/// Reads the earlier threads of `who` (oldest first), step by step in one snapshot: each
/// statement reads only what the last ones left to read.
pub(crate) async fn read(
    db: &DatabaseConnection,
    who: &Correspondent<'_>,
    threads: u64,
    messages: u64,
) -> Result<Vec<EarlierThread>> {
    if threads == 0 || who.persona.is_empty() {
        return Ok(Vec::new());
    }
    let statements = Statements::new(who, threads, messages);
    let mut out = Threads::default();
    // One snapshot for the four, so an erasure never leaves a thread half read.
    let mut session = Session::snapshot(db).await?;
    session
        .query(&statements.threads, |row| out.thread(row))
        .await?;
    if !out.threads.is_empty() {
        session
            .query(&statements.summaries, |row| out.summary(row))
            .await?;
    }
    if !out.threads.is_empty() && messages > 0 && !out.all_summarised() {
        session
            .query(&statements.messages, |row| out.message(row))
            .await?;
        out.messages_done();
        session
            .query(&statements.attachments, |row| out.attachment(row))
            .await?;
    }
    session.finish().await?;
    Ok(out.threads)
}
