//! The agent's jobs (§17), read: one job, a message's job, and a listing.

use sea_orm::sea_query::{
    Asterisk, Expr, ExprTrait, Order, Query, SelectStatement, SubQueryStatement, UnionType,
};
use sea_orm::{ConnectionTrait, FromQueryResult};

use crate::db::entities::agent_job;
use crate::error::Result;

/// The states of a job.
pub mod job_state {
    /// Waiting for a worker (due now, or at `next_attempt_at`).
    pub const QUEUED: &str = "queued";
    /// Claimed by a worker under a lease.
    pub const RUNNING: &str = "running";
    /// Stopped until a person approves or rejects a tool call.
    pub const WAITING: &str = "waiting";
    /// Its reply is stored (whatever the outbox does next).
    pub const DONE: &str = "done";
    /// Not answered, for the reason recorded.
    pub const SKIPPED: &str = "skipped";
    /// Given up, with the error recorded.
    pub const FAILED: &str = "failed";

    /// Every state, in the order a job goes through them.
    pub const ALL: [&str; 6] = [QUEUED, RUNNING, WAITING, DONE, SKIPPED, FAILED];
}

/// Which jobs [`list_jobs`] lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobFilter {
    /// Only jobs in this state.
    pub state: Option<String>,
    /// Only this persona's jobs.
    pub persona: Option<String>,
    /// At most this many (newest first).
    pub limit: u64,
}

/// The rows `select` (every column of `agent_jobs`) finds, dates bound as the backend
/// stores them.
pub async fn select_jobs<C: ConnectionTrait>(
    db: &C,
    select: &SelectStatement,
) -> Result<Vec<agent_job::Model>> {
    let rows = db
        .query_all_raw(crate::db::dates::statement(db, select))
        .await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        out.push(agent_job::Model::from_query_result(&row, "")?);
    }
    Ok(out)
}

/// A select of every column of `agent_jobs`.
pub fn jobs_select() -> SelectStatement {
    use agent_job::Column as J;
    Query::select()
        .columns([
            J::Id,
            J::MessageId,
            J::SlotId,
            J::Persona,
            J::State,
            J::Reason,
            J::GateReason,
            J::RunId,
            J::Attempts,
            J::NextAttemptAt,
            J::LeaseOwner,
            J::LeaseUntil,
            J::Approval,
            J::Error,
            J::CreatedAt,
            J::UpdatedAt,
        ])
        .from(agent_job::Entity)
        .to_owned()
}

/// Job `id`, when it exists.
pub async fn load_job<C: ConnectionTrait>(db: &C, id: i64) -> Result<Option<agent_job::Model>> {
    let select = jobs_select()
        .and_where(Expr::col(agent_job::Column::Id).eq(id))
        .to_owned();
    Ok(select_jobs(db, &select).await?.into_iter().next())
}

/// The job of the message whose row id is `message`, when it has one.
pub async fn job_of_message<C: ConnectionTrait>(
    db: &C,
    message: i64,
) -> Result<Option<agent_job::Model>> {
    let select = jobs_select()
        .and_where(Expr::col(agent_job::Column::MessageId).eq(message))
        .to_owned();
    Ok(select_jobs(db, &select).await?.into_iter().next())
}

/// The jobs `filter` names, newest first.
pub async fn list_jobs<C: ConnectionTrait>(
    db: &C,
    filter: &JobFilter,
) -> Result<Vec<agent_job::Model>> {
    use agent_job::Column as J;
    let mut select = jobs_select();
    if let Some(state) = &filter.state {
        select.and_where(Expr::col(J::State).eq(state.as_str()));
    }
    if let Some(persona) = &filter.persona {
        select.and_where(Expr::col(J::Persona).eq(persona.as_str()));
    }
    select.order_by(J::Id, Order::Desc).limit(filter.limit);
    select_jobs(db, &select).await
}

/// The newest of `persona`'s jobs that wait, queued, for its pause to end after `now` (the
/// provider refused its key or model), if any: `/readyz`'s report of a paused persona.
pub async fn paused_job<C: ConnectionTrait>(
    db: &C,
    persona: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Option<agent_job::Model>> {
    use agent_job::Column as J;
    let select = jobs_select()
        .and_where(Expr::col(J::Persona).eq(persona))
        .and_where(Expr::col(J::State).eq(job_state::QUEUED))
        .and_where(Expr::col(J::Reason).eq("paused"))
        .and_where(Expr::col(J::NextAttemptAt).gt(now))
        // The job the provider refused carries the error; the others were paused with it.
        .order_by_expr(Expr::col(J::Error).is_null(), Order::Asc)
        .order_by(J::Id, Order::Desc)
        .limit(1)
        .to_owned();
    Ok(select_jobs(db, &select).await?.into_iter().next())
}

/// The attachment `attachment_id` of a message of thread `thread`, when there is one (the
/// newest, should two messages carry the same id).
pub async fn attachment_in_thread<C: ConnectionTrait>(
    db: &C,
    thread: i64,
    attachment_id: &str,
) -> Result<Option<crate::db::entities::attachment::Model>> {
    use crate::db::entities::attachment;
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
    let messages = super::thread_message_ids(thread);
    Ok(attachment::Entity::find()
        .filter(attachment::Column::AttachmentId.eq(attachment_id))
        .filter(attachment::Column::MessageId.in_subquery(messages))
        .order_by_desc(attachment::Column::Id)
        .limit(1)
        .one(db)
        .await?)
}

/// The images and PDFs the calls of the built-in `read_attachment` among `calls` (each its
/// call id, tool name and input; only successful calls are to be given) returned in the
/// thread of message row `message`, by call id, rebuilt from the attachments' stored bytes
/// (see [`attachment_part`](crate::attachment_part)): a result stores only its text. One
/// statement; none when no call is of `read_attachment`. A call whose attachment is gone,
/// has no stored data or is neither an image nor a PDF has no entry.
pub async fn read_attachment_parts<'a, C: ConnectionTrait>(
    db: &C,
    message: i64,
    calls: impl IntoIterator<Item = (&'a str, &'a str, &'a serde_json::Value)>,
) -> Result<std::collections::HashMap<String, crate::Part>> {
    use crate::db::entities::attachment;
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
    let read = crate::BuiltinTool::ReadAttachment.as_str();
    let calls: Vec<(&str, String)> = calls
        .into_iter()
        .filter(|(_, name, _)| *name == read)
        .filter_map(|(call, _, input)| Some((call, crate::read_attachment_id(input)?)))
        .collect();
    let mut parts = std::collections::HashMap::new();
    if calls.is_empty() {
        return Ok(parts);
    }
    let found = attachment::Entity::find()
        .filter(attachment::Column::AttachmentId.is_in(calls.iter().map(|(_, id)| id.clone())))
        .filter(attachment::Column::MessageId.in_subquery(super::thread_message_ids_of(message)))
        .order_by_desc(attachment::Column::Id)
        .all(db)
        .await?;
    // Newest first: the first of an id is the one `read_attachment` read.
    let mut by_id = std::collections::HashMap::new();
    for a in found {
        if by_id.contains_key(&a.attachment_id) {
            continue;
        }
        let part = a
            .data
            .as_deref()
            .and_then(|data| crate::attachment_part(&a.filename, &a.content_type, data));
        by_id.insert(a.attachment_id, part);
    }
    for (call, id) in calls {
        if let Some(Some(part)) = by_id.get(&id) {
            parts.insert(call.to_owned(), part.clone());
        }
    }
    Ok(parts)
}

/// How many replies `persona` made since `since` (in any state but `rejected`) or has
/// under way: in all (up to a bound), in thread `thread`, and to `correspondent` (a bare
/// address, compared lowercased): what the agent's daily caps count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplyCounts {
    /// Every reply of the persona, counted up to the bound asked for.
    pub persona: u64,
    /// The replies in the thread.
    pub thread: u64,
    /// The replies with the correspondent among their recipients.
    pub correspondent: u64,
}

impl ReplyCounts {
    /// The cap these counts reach, first the persona's, then the thread's, then the
    /// correspondent's (the reason a job is skipped for); `None` under all three.
    pub fn reached(&self, caps: &crate::ReplyCaps) -> Option<&'static str> {
        let over = |count: u64, cap: u32| count >= u64::from(cap);
        if over(self.persona, caps.persona) {
            Some("persona_cap")
        } else if over(self.thread, caps.thread) {
            Some("thread_cap")
        } else if over(self.correspondent, caps.correspondent) {
            Some("correspondent_cap")
        } else {
            None
        }
    }
}

/// [`ReplyCounts`] of `persona` since `since`, counting as a reply to come each of the
/// persona's jobs still under way (`running` or `waiting`, whatever their lease says: a
/// lapsed one is resumed) other than `besides`, the job being claimed. Read in the
/// claiming transaction (§17), so that two jobs of one correspondent in two threads,
/// claimed one after the other, see each other before either has replied.
///
/// The persona's count reads the day's entries of its index (`outbox` by persona,
/// creation time and state), no row, and no more than `bound` of them: a cap needs to know
/// only whether it is reached; its jobs under way, the `(persona, state)` index. The
/// thread's and the correspondent's read only the replies and jobs of the thread's
/// messages and of the messages that carry the correspondent's address
/// (`message_addresses`, bare and lowercased), by their message key, and keep the
/// persona's in the row visitor: a condition on the persona in the statement would let a
/// planner without statistics walk the persona's whole day instead.
pub async fn reply_counts<C: ConnectionTrait>(
    db: &C,
    persona: &str,
    since: chrono::DateTime<chrono::Utc>,
    bound: u64,
    thread: i64,
    correspondent: &str,
    besides: i64,
) -> Result<ReplyCounts> {
    use crate::db::entities::{message_address, outbox};
    use crate::db::tx::Tx;
    let replies = |select: &mut SelectStatement| {
        select
            .from(outbox::Entity)
            .and_where(Expr::col((outbox::Entity, outbox::Column::State)).ne("rejected"))
            .and_where(Expr::col((outbox::Entity, outbox::Column::CreatedAt)).gte(since));
    };
    let under_way = |select: &mut SelectStatement| {
        select
            .from(agent_job::Entity)
            .and_where(
                Expr::col((agent_job::Entity, agent_job::Column::State))
                    .is_in([job_state::RUNNING, job_state::WAITING]),
            )
            .and_where(Expr::col((agent_job::Entity, agent_job::Column::Id)).ne(besides));
    };
    let mut day = Query::select();
    day.column((outbox::Entity, outbox::Column::Id))
        .and_where(Expr::col((outbox::Entity, outbox::Column::Persona)).eq(persona))
        .limit(bound);
    replies(&mut day);
    let mut jobs = Query::select();
    jobs.expr(Expr::col(Asterisk).count())
        .and_where(Expr::col((agent_job::Entity, agent_job::Column::Persona)).eq(persona));
    under_way(&mut jobs);
    let all = Query::select()
        .expr(Expr::col(Asterisk).count())
        .expr(Expr::from(SubQueryStatement::from(jobs)))
        .from_subquery(day, "day")
        .to_owned();
    let mut counts = ReplyCounts::default();
    db.select(&all, |row| {
        counts.persona =
            u64::try_from(row.int(0)?).unwrap_or(0) + u64::try_from(row.int(1)?).unwrap_or(0);
        Ok(())
    })
    .await?;
    let their_messages = || {
        Query::select()
            .column(message_address::Column::MessageId)
            .from(message_address::Entity)
            .and_where(Expr::col(message_address::Column::Address).eq(correspondent.to_lowercase()))
            .to_owned()
    };
    let in_thread = || super::thread_message_ids(thread);
    // The thread's jobs under way are none: a job is claimed only when its thread has none.
    let mut thread_replies = Query::select();
    thread_replies
        .column((outbox::Entity, outbox::Column::Persona))
        .and_where(Expr::col((outbox::Entity, outbox::Column::MessageId)).in_subquery(in_thread()));
    replies(&mut thread_replies);
    let mut their_replies = Query::select();
    their_replies
        .column((outbox::Entity, outbox::Column::Persona))
        .and_where(
            Expr::col((outbox::Entity, outbox::Column::MessageId)).in_subquery(their_messages()),
        );
    replies(&mut their_replies);
    let mut their_jobs = Query::select();
    their_jobs
        .column((agent_job::Entity, agent_job::Column::Persona))
        .and_where(
            Expr::col((agent_job::Entity, agent_job::Column::MessageId))
                .in_subquery(their_messages()),
        );
    under_way(&mut their_jobs);
    for (select, count) in [
        (thread_replies, &mut counts.thread),
        (
            their_replies.union(UnionType::All, their_jobs).to_owned(),
            &mut counts.correspondent,
        ),
    ] {
        db.select(&select, |row| {
            if row.text(0)?.as_deref() == Some(persona) {
                *count += 1;
            }
            Ok(())
        })
        .await?;
    }
    Ok(counts)
}

/// Whether the newest outbound message of thread `thread` (in the order they were stored)
/// is a person's: one no outbox row composed (§17's `person_replied`).
pub async fn person_replied<C: ConnectionTrait>(db: &C, thread: i64) -> Result<bool> {
    use crate::db::entities::{message, outbox};
    let select = Query::select()
        .column((outbox::Entity, outbox::Column::Id))
        .from(message::Entity)
        .left_join(
            outbox::Entity,
            Expr::col((outbox::Entity, outbox::Column::MessageId))
                .equals((message::Entity, message::Column::Id)),
        )
        .and_where(Expr::col((message::Entity, message::Column::EmailThreadId)).eq(thread))
        .and_where(Expr::col((message::Entity, message::Column::Direction)).eq("outbound"))
        .order_by((message::Entity, message::Column::Id), Order::Desc)
        .limit(1)
        .to_owned();
    let Some(row) = db
        .query_one_raw(crate::db::dates::statement(db, &select))
        .await?
    else {
        return Ok(false);
    };
    let outbox: Option<i64> = row.try_get_by_index(0)?;
    Ok(outbox.is_none())
}

/// The tokens (input, cached, written and output) of `persona`'s runs started since
/// `since`: what `[agent] tokens_per_day` counts.
pub async fn tokens_since<C: ConnectionTrait>(
    db: &C,
    persona: &str,
    since: chrono::DateTime<chrono::Utc>,
) -> Result<u64> {
    use crate::db::entities::run;
    let select = Query::select()
        .column(run::Column::InputTokens)
        .column(run::Column::OutputTokens)
        .column(run::Column::CacheReadTokens)
        .column(run::Column::CacheWriteTokens)
        .from(run::Entity)
        .and_where(Expr::col(run::Column::Persona).eq(persona))
        .and_where(Expr::col(run::Column::StartedAt).gte(since))
        .to_owned();
    let rows = db
        .query_all_raw(crate::db::dates::statement(db, &select))
        .await?;
    let mut total: u64 = 0;
    for row in rows {
        for i in 0..4 {
            let n: i64 = row.try_get_by_index(i)?;
            total = total.saturating_add(u64::try_from(n).unwrap_or(0));
        }
    }
    Ok(total)
}

/// The row id of the message whose Message-ID is `message_id`, when it is stored.
pub async fn message_row_of<C: ConnectionTrait>(db: &C, message_id: &str) -> Result<Option<i64>> {
    use crate::db::entities::message;
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QuerySelect};
    Ok(message::Entity::find()
        .select_only()
        .column(message::Column::Id)
        .filter(message::Column::MessageId.eq(message_id))
        .into_tuple()
        .one(db)
        .await?)
}
