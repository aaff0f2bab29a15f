//! The agent's jobs (§17), written: a job stored with the message it answers, claimed by
//! one conditional update in a transaction that holds its thread, and each change of its
//! state made only while the worker's lease is live.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, Order, Query, SimpleExpr, UpdateStatement};
use sea_orm::{
    ActiveValue::NotSet, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbBackend,
    EntityTrait,
};

use protege_core::db::entities::{agent_job, message, outbox, run as run_row};
use protege_core::db::{dates, job_state as state, jobs_select, outbox_state, select_jobs};
use protege_core::{ReplyCaps, Result};
use protege_mail::eml::parse::ParsedEml;

use crate::store;

/// A persona the agent answers for, as the store decides a message's job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentPersona {
    /// Its name.
    pub name: String,
    /// Its addresses, bare and lowercased.
    pub addresses: Vec<String>,
    /// `[agent] answer_cc`: mail naming it only in Cc gets a job.
    pub answer_cc: bool,
    /// `[agent] answer_automated`: mail a program sent is answered.
    pub answer_automated: bool,
    /// `[agent] max_age`: mail dated longer before it was received is `stale`.
    pub max_age: Duration,
}

/// Which inbound messages get a job (mail the agent receives: posted or fetched, never
/// imported).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobRule {
    /// The personas with an `[agent]` table, in the order of the set.
    pub personas: Vec<AgentPersona>,
    /// Every address of every persona of the installation, bare and lowercased: mail from
    /// one of them, or marked as a reply of one, is a `loop`.
    pub installation: Vec<String>,
    /// The persona whose `[inbox]` the message was fetched from: it answers when no agent
    /// persona's address is in the To or Cc (mail to an alias, or a Bcc).
    pub inbox: Option<String>,
}

/// The job a stored message gets: its persona, and the gate's verdict on its headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewJob {
    /// The persona that answers.
    pub persona: String,
    /// Why the headers say not to answer (`automated: …`, `no_reply_address`, `loop`,
    /// `stale`); `None` when they let it through.
    pub gate_reason: Option<String>,
}

impl JobRule {
    /// The job of `eml` received at `now`, or `None` when no agent persona is addressed:
    /// the persona whose address comes first in the To, then the Cc, then the persona whose
    /// inbox it came from.
    pub fn job_of(&self, eml: &ParsedEml, now: DateTime<Utc>) -> Option<NewJob> {
        let bare = |a: &String| protege_core::bare_address(a).trim().to_lowercase();
        let to: Vec<String> = eml.email.to.iter().map(bare).collect();
        let cc: Vec<String> = eml.email.cc.iter().map(bare).collect();
        let persona = to
            .iter()
            .find_map(|a| self.personas.iter().find(|p| p.addresses.contains(a)))
            .or_else(|| {
                cc.iter().find_map(|a| {
                    self.personas
                        .iter()
                        .find(|p| p.answer_cc && p.addresses.contains(a))
                })
            })
            .or_else(|| {
                // Mail naming the persona only in the Cc stays unanswered with
                // `answer_cc = false`, wherever it was fetched from.
                let inbox = self.inbox.as_deref()?;
                self.personas.iter().find(|p| {
                    p.name == inbox && (p.answer_cc || !cc.iter().any(|a| p.addresses.contains(a)))
                })
            })?;
        let from = bare(&eml.email.from);
        // A delivery report is never answered, whatever `answer_automated` says.
        let gate_reason = if eml.bounce_of.is_some() {
            Some("bounce".to_owned())
        } else if self.installation.contains(&from)
            || eml
                .loop_marks
                .iter()
                .any(|mark| self.installation.contains(mark))
        {
            Some("loop".to_owned())
        } else if let Some(why) = eml.automated.as_ref().filter(|_| !persona.answer_automated) {
            Some(format!("automated ({why})"))
        } else if protege_mail::eml::gate::no_reply_address(&from) {
            Some("no_reply_address".to_owned())
        } else if now.signed_duration_since(eml.email.sent_at)
            > chrono::Duration::from_std(persona.max_age).unwrap_or(chrono::Duration::MAX)
        {
            Some("stale".to_owned())
        } else {
            None
        };
        Some(NewJob {
            persona: persona.name.clone(),
            gate_reason,
        })
    }
}

/// Stores the job of message row `message` in `txn` (the transaction that stores the
/// message): `queued`, or `skipped` with the gate's reason.
pub(crate) async fn insert_job<C: ConnectionTrait>(
    txn: &C,
    message: i64,
    job: &NewJob,
    now: DateTime<Utc>,
) -> Result<()> {
    insert_job_row(txn, (Some(message), None), job, now).await
}

/// Stores a job that answers message row `message` or fires slot row `slot` (exactly one
/// of the two is set): `queued`, or `skipped` with the gate's reason.
pub(crate) async fn insert_job_row<C: ConnectionTrait>(
    txn: &C,
    (message, slot): (Option<i64>, Option<i64>),
    job: &NewJob,
    now: DateTime<Utc>,
) -> Result<()> {
    let row = agent_job::ActiveModel {
        id: NotSet,
        message_id: sea_orm::Set(message),
        slot_id: sea_orm::Set(slot),
        persona: sea_orm::Set(job.persona.clone()),
        state: sea_orm::Set(
            if job.gate_reason.is_some() {
                state::SKIPPED
            } else {
                state::QUEUED
            }
            .to_owned(),
        ),
        reason: sea_orm::Set(job.gate_reason.clone()),
        gate_reason: sea_orm::Set(job.gate_reason.clone()),
        run_id: sea_orm::Set(None),
        attempts: sea_orm::Set(0),
        next_attempt_at: sea_orm::Set(None),
        lease_owner: sea_orm::Set(None),
        lease_until: sea_orm::Set(None),
        approval: sea_orm::Set(None),
        error: sea_orm::Set(None),
        created_at: sea_orm::Set(now),
        updated_at: sea_orm::Set(now),
    };
    let insert = agent_job::Entity::insert(row);
    if txn.get_database_backend() == DbBackend::MySql {
        store::mysql_insert(txn, &sea_orm::QueryTrait::into_query(insert)).await?;
    } else {
        insert.exec(txn).await?;
    }
    Ok(())
}

/// The condition that a job may be claimed at `now`: queued and due, or running under a
/// lease that ran out.
fn may_claim(now: DateTime<Utc>) -> SimpleExpr {
    use agent_job::Column as J;
    let col = |c: J| Expr::col((agent_job::Entity, c));
    let due = col(J::NextAttemptAt)
        .is_null()
        .or(col(J::NextAttemptAt).lte(now));
    col(J::State).eq(state::QUEUED).and(due).or(col(J::State)
        .eq(state::RUNNING)
        .and(col(J::LeaseUntil).lt(now)))
}

/// A job claimed by [`claim_job`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedJob {
    /// The job as the claim left it (`running`, the lease the worker's).
    pub job: agent_job::Model,
    /// Whether another worker's lease had run out on it (a crash or a stop).
    pub resumed: bool,
    /// Earlier queued jobs of the thread, persona and sender, now `skipped`
    /// (`superseded`).
    pub superseded: u64,
    /// The daily cap its persona's replies reached when it was claimed (`persona_cap`,
    /// `thread_cap`, `correspondent_cap`), counting the persona's other jobs under way as
    /// replies to come; `None` under every cap, and for a job without a message.
    pub capped: Option<&'static str>,
}

/// The daily reply caps of a persona, by its name; `None` for a persona without them.
pub type CapsOf<'a> = &'a (dyn Fn(&str) -> Option<ReplyCaps> + Sync);

/// Claims one job for `owner` until `until`: queued and due, or running under a lease that
/// ran out; of a thread's queued jobs the newest, and only while no other job of the thread
/// is running or waiting and no reply of the thread waits for approval. Earlier queued jobs
/// of the same thread, persona and sender are `skipped` (`superseded`), and the persona's
/// daily caps (`caps`) counted, in the same transaction. Oldest work first; `persona`: only
/// that persona's jobs.
pub async fn claim_job(
    db: &DatabaseConnection,
    owner: &str,
    until: DateTime<Utc>,
    now: DateTime<Utc>,
    persona: Option<&str>,
    caps: CapsOf<'_>,
) -> Result<Option<ClaimedJob>> {
    use agent_job::Column as J;
    use message::Column as M;
    // The candidates, with their thread (none for a scheduled job).
    let mut select = Query::select();
    select
        .column((agent_job::Entity, J::Id))
        .column((message::Entity, M::EmailThreadId))
        .from(agent_job::Entity)
        .left_join(
            message::Entity,
            Expr::col((message::Entity, M::Id)).equals((agent_job::Entity, J::MessageId)),
        )
        .and_where(may_claim(now))
        .order_by((agent_job::Entity, J::Id), Order::Asc)
        .limit(32);
    if let Some(persona) = persona {
        select.and_where(Expr::col((agent_job::Entity, J::Persona)).eq(persona));
    }
    let rows = db.query_all_raw(dates::statement(db, &select)).await?;
    let mut seen_threads = Vec::new();
    for row in rows {
        let id: i64 = row.try_get_by_index(0)?;
        let thread: Option<i64> = row.try_get_by_index(1)?;
        let claimed = match thread {
            Some(t) if seen_threads.contains(&t) => continue,
            Some(t) => {
                seen_threads.push(t);
                let claim = ThreadClaim {
                    thread: t,
                    owner,
                    until,
                    now,
                };
                claim.claim(db, id, persona, caps).await?
            }
            None => claim_update(db, id, owner, until, now)
                .await?
                .map(|(job, resumed)| ClaimedJob {
                    job,
                    resumed,
                    superseded: 0,
                    capped: None,
                }),
        };
        if claimed.is_some() {
            return Ok(claimed);
        }
    }
    Ok(None)
}

/// A claim of one of a thread's jobs, made in one transaction holding the thread.
struct ThreadClaim<'a> {
    thread: i64,
    owner: &'a str,
    until: DateTime<Utc>,
    now: DateTime<Utc>,
}

impl ThreadClaim<'_> {
    /// Claims the thread's newest queued job (of `persona` when named; job `id` is the
    /// candidate that led here); `None` when another worker or the thread's state forbids
    /// it.
    async fn claim(
        &self,
        db: &DatabaseConnection,
        id: i64,
        persona: Option<&str>,
        caps: CapsOf<'_>,
    ) -> Result<Option<ClaimedJob>> {
        use agent_job::Column as J;
        let txn = protege_core::db::lock::begin_thread(db, self.thread).await?;
        if self.busy(&txn, id).await? {
            txn.rollback().await?;
            return Ok(None);
        }
        // Of the thread's queued jobs, the newest (of the same persona when one is named).
        let mut newest = jobs_select();
        newest
            .and_where(
                Expr::col(J::MessageId)
                    .in_subquery(protege_core::db::thread_message_ids(self.thread)),
            )
            .and_where(may_claim(self.now))
            .order_by(J::Id, Order::Desc)
            .limit(1);
        if let Some(persona) = persona {
            newest.and_where(Expr::col(J::Persona).eq(persona));
        }
        let chosen = select_jobs(&txn, &newest).await?.into_iter().next();
        let claimed = match chosen {
            Some(chosen) => claim_update(&txn, chosen.id, self.owner, self.until, self.now).await?,
            None => None,
        };
        let Some((job, resumed)) = claimed else {
            txn.rollback().await?;
            return Ok(None);
        };
        let (mut superseded, mut capped) = (0, None);
        if let Some(message) = job.message_id
            && let Some(from) = sender_of(&txn, message).await?
        {
            superseded = self.supersede(&txn, &job, &from).await?;
            if let Some(caps) = caps(&job.persona) {
                let day = self.now - chrono::Duration::hours(24);
                let counts = protege_core::db::reply_counts(
                    &txn,
                    &job.persona,
                    day,
                    u64::from(caps.persona),
                    self.thread,
                    &protege_mail::address_key(&from),
                    job.id,
                )
                .await?;
                capped = counts.reached(&caps);
            }
        }
        txn.commit().await?;
        Ok(Some(ClaimedJob {
            job,
            resumed,
            superseded,
            capped,
        }))
    }

    /// Whether another job of the thread than `id` is at work, or a reply of it waits for
    /// a person.
    async fn busy(&self, txn: &DatabaseTransaction, id: i64) -> Result<bool> {
        use agent_job::Column as J;
        let mut busy = jobs_select();
        busy.and_where(
            Expr::col(J::MessageId).in_subquery(protege_core::db::thread_message_ids(self.thread)),
        )
        .and_where(Expr::col(J::Id).ne(id))
        .and_where(
            Expr::col(J::State)
                .eq(state::WAITING)
                .or(Expr::col(J::State)
                    .eq(state::RUNNING)
                    .and(Expr::col(J::LeaseUntil).gte(self.now))),
        )
        .limit(1);
        if !select_jobs(txn, &busy).await?.is_empty() {
            return Ok(true);
        }
        let mut waiting_reply = Query::select();
        waiting_reply
            .expr(Expr::val(1))
            .from(outbox::Entity)
            .and_where(Expr::col(outbox::Column::State).eq(outbox_state::WAITING))
            .and_where(
                Expr::col(outbox::Column::MessageId)
                    .in_subquery(protege_core::db::thread_message_ids(self.thread)),
            )
            .limit(1);
        Ok(txn
            .query_one_raw(dates::statement(txn, &waiting_reply))
            .await?
            .is_some())
    }

    /// Skips (`superseded`) the earlier queued jobs of `job`'s persona answering mail of
    /// the thread from `from`: the newer run has them in its history. How many.
    async fn supersede(
        &self,
        txn: &DatabaseTransaction,
        job: &agent_job::Model,
        from: &str,
    ) -> Result<u64> {
        use agent_job::Column as J;
        use message::Column as M;
        let mut same_sender = Query::select();
        same_sender
            .column(M::Id)
            .from(message::Entity)
            .and_where(Expr::col(M::EmailThreadId).eq(self.thread))
            .and_where(Expr::col(M::FromAddress).eq(from));
        let mut update = Query::update();
        update
            .table(agent_job::Entity)
            .value(J::State, state::SKIPPED)
            .value(J::Reason, "superseded")
            .value(J::UpdatedAt, self.now)
            .and_where(Expr::col(J::State).eq(state::QUEUED))
            .and_where(Expr::col(J::Persona).eq(job.persona.as_str()))
            .and_where(Expr::col(J::Id).lt(job.id))
            .and_where(Expr::col(J::MessageId).in_subquery(same_sender));
        Ok(txn
            .execute_raw(dates::statement(txn, &update))
            .await?
            .rows_affected())
    }
}

/// The From of message row `message`, as stored (header form).
async fn sender_of(txn: &DatabaseTransaction, message: i64) -> Result<Option<String>> {
    use message::Column as M;
    let mut sender = Query::select();
    sender
        .column(M::FromAddress)
        .from(message::Entity)
        .and_where(Expr::col(M::Id).eq(message));
    Ok(txn
        .query_one_raw(dates::statement(txn, &sender))
        .await?
        .map(|row| row.try_get_by_index(0))
        .transpose()?)
}

/// The conditional update that claims job `id`; the job as it left it, and whether a
/// lapsed lease was taken over.
async fn claim_update<C: ConnectionTrait>(
    db: &C,
    id: i64,
    owner: &str,
    until: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<Option<(agent_job::Model, bool)>> {
    use agent_job::Column as J;
    let Some(before) = protege_core::db::load_job(db, id).await? else {
        return Ok(None);
    };
    let mut update = Query::update();
    update
        .table(agent_job::Entity)
        .value(J::State, state::RUNNING)
        .value(J::LeaseOwner, owner)
        .value(J::LeaseUntil, until)
        .value(J::Attempts, Expr::col(J::Attempts).add(1))
        .value(J::UpdatedAt, now)
        .and_where(Expr::col(J::Id).eq(id))
        .and_where(may_claim(now));
    if db
        .execute_raw(dates::statement(db, &update))
        .await?
        .rows_affected()
        != 1
    {
        return Ok(None);
    }
    let resumed = before.state == state::RUNNING;
    let job = agent_job::Model {
        state: state::RUNNING.to_owned(),
        lease_owner: Some(owner.to_owned()),
        lease_until: Some(until),
        attempts: before.attempts + 1,
        updated_at: now,
        ..before
    };
    Ok(Some((job, resumed)))
}

/// The reason of a job handed back by a worker that stops (SIGTERM) between two rounds:
/// queued, due at once, its claim not counted against `[agent] max_attempts`.
pub const RELEASED: &str = "released";

/// How a job's run ends, or why it goes back to the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobEnd {
    /// Its reply is stored.
    Done,
    /// Not answered, for `reason`.
    Skipped(String),
    /// Stopped until a person decides on its tool calls.
    Waiting,
    /// Given up: `reason` (`crashed`, `provider`, `gave_up`) and the error.
    Failed {
        /// The kind of failure.
        reason: String,
        /// The error, e.g. the provider's error body.
        error: String,
    },
    /// Back to the queue until `at`: `reason` (`retry`, `deferred`, `paused`, [`RELEASED`]) and the
    /// error that sent it back, if any.
    Queued {
        /// When it is due again.
        at: DateTime<Utc>,
        /// Why it waits.
        reason: String,
        /// The error, if any.
        error: Option<String>,
    },
}

impl JobEnd {
    /// The state it leaves the job in.
    pub fn state(&self) -> &'static str {
        match self {
            JobEnd::Done => state::DONE,
            JobEnd::Skipped(_) => state::SKIPPED,
            JobEnd::Waiting => state::WAITING,
            JobEnd::Failed { .. } => state::FAILED,
            JobEnd::Queued { .. } => state::QUEUED,
        }
    }

    /// The reason it records (`approval` for a run that waits; none when done).
    pub fn reason(&self) -> Option<&str> {
        match self {
            JobEnd::Done => None,
            JobEnd::Waiting => Some("approval"),
            JobEnd::Skipped(reason)
            | JobEnd::Failed { reason, .. }
            | JobEnd::Queued { reason, .. } => Some(reason),
        }
    }

    /// The error it records, if any.
    pub fn error(&self) -> Option<&str> {
        match self {
            JobEnd::Failed { error, .. } => Some(error),
            JobEnd::Queued { error, .. } => error.as_deref(),
            JobEnd::Done | JobEnd::Skipped(_) | JobEnd::Waiting => None,
        }
    }
}

/// An update of job `id` that applies only while `owner` holds its lease at `now`.
fn leased(id: i64, owner: &str, now: DateTime<Utc>) -> UpdateStatement {
    use agent_job::Column as J;
    Query::update()
        .table(agent_job::Entity)
        .value(J::UpdatedAt, now)
        .and_where(Expr::col(J::Id).eq(id))
        .and_where(Expr::col(J::State).eq(state::RUNNING))
        .and_where(Expr::col(J::LeaseOwner).eq(owner))
        .and_where(Expr::col(J::LeaseUntil).gte(now))
        .to_owned()
}

/// Runs `update`; whether it changed one row.
pub(crate) async fn changed<C: ConnectionTrait>(db: &C, update: &UpdateStatement) -> Result<bool> {
    Ok(db
        .execute_raw(dates::statement(db, update))
        .await?
        .rows_affected()
        == 1)
}

/// Renews `owner`'s lease of job `id` until `until`; false when the lease was lost (the
/// worker must stop at once).
pub async fn renew_job(
    db: &DatabaseConnection,
    id: i64,
    owner: &str,
    until: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<bool> {
    let mut update = leased(id, owner, now);
    update.value(agent_job::Column::LeaseUntil, until);
    changed(db, &update).await
}

/// Records run `run_id` on job `id` while `owner` holds it.
pub async fn set_job_run(
    db: &DatabaseConnection,
    id: i64,
    owner: &str,
    run_id: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    let mut update = leased(id, owner, now);
    update.value(agent_job::Column::RunId, run_id);
    changed(db, &update).await
}

/// Ends `owner`'s claim of job `id` as `end` says; false when the lease was lost.
pub async fn end_job<C: ConnectionTrait>(
    db: &C,
    id: i64,
    owner: &str,
    end: &JobEnd,
    now: DateTime<Utc>,
) -> Result<bool> {
    use agent_job::Column as J;
    let mut update = leased(id, owner, now);
    update
        .value(J::LeaseOwner, Option::<String>::None)
        .value(J::LeaseUntil, Option::<DateTime<Utc>>::None);
    update
        .value(J::State, end.state())
        .value(J::Reason, end.reason());
    match end {
        JobEnd::Done => {
            update.value(J::Error, Option::<String>::None);
        }
        JobEnd::Failed { error, .. } => {
            update.value(J::Error, error.as_str());
        }
        JobEnd::Queued { at, error, reason } => {
            update
                .value(J::NextAttemptAt, *at)
                .value(J::Error, error.clone());
            // A job handed back by a worker that stops is not a claim that failed.
            if reason == RELEASED {
                update.value(J::Attempts, Expr::col(J::Attempts).sub(1));
            }
        }
        JobEnd::Skipped(_) | JobEnd::Waiting => {}
    }
    changed(db, &update).await
}

/// The update that queues failed jobs again, due now, their counts of claims reset.
fn requeue_failed(now: DateTime<Utc>) -> UpdateStatement {
    use agent_job::Column as J;
    Query::update()
        .table(agent_job::Entity)
        .value(J::State, state::QUEUED)
        .value(J::Reason, Option::<String>::None)
        .value(J::Error, Option::<String>::None)
        .value(J::NextAttemptAt, Option::<DateTime<Utc>>::None)
        .value(J::Attempts, 0)
        .value(J::UpdatedAt, now)
        .and_where(Expr::col(J::State).eq(state::FAILED))
        .to_owned()
}

/// Queues failed job `id` again, due now, its count of claims reset; false unless it was
/// `failed`.
pub async fn retry_job(db: &DatabaseConnection, id: i64, now: DateTime<Utc>) -> Result<bool> {
    let mut update = requeue_failed(now);
    update.and_where(Expr::col(agent_job::Column::Id).eq(id));
    changed(db, &update).await
}

/// Gives job `id` (of a message stored without one, or whose job ended) to `persona` for
/// a foreground run: inserts it `running` for `owner`, or takes it over when it is not
/// running under a live lease and `again` allows a `done` one. The job, or `None` when
/// another worker holds it or it is done and `again` is false.
pub async fn take_job(
    db: &DatabaseConnection,
    message: i64,
    persona: &str,
    owner: &str,
    until: DateTime<Utc>,
    now: DateTime<Utc>,
    again: bool,
) -> Result<Option<agent_job::Model>> {
    use agent_job::Column as J;
    if protege_core::db::job_of_message(db, message)
        .await?
        .is_none()
    {
        let job = NewJob {
            persona: persona.to_owned(),
            gate_reason: None,
        };
        // Another caller may insert it first: the unique key keeps one.
        if let Err(e) = insert_job(db, message, &job, now).await
            && protege_core::db::job_of_message(db, message)
                .await?
                .is_none()
        {
            return Err(e);
        }
    }
    let Some(before) = protege_core::db::job_of_message(db, message).await? else {
        return Ok(None);
    };
    let mut allowed = vec![state::QUEUED, state::FAILED, state::SKIPPED];
    if again {
        allowed.push(state::DONE);
    }
    let mut update = Query::update();
    update
        .table(agent_job::Entity)
        .value(J::State, state::RUNNING)
        .value(J::Persona, persona)
        .value(J::LeaseOwner, owner)
        .value(J::LeaseUntil, until)
        .value(J::Attempts, Expr::col(J::Attempts).add(1))
        .value(J::UpdatedAt, now)
        .and_where(Expr::col(J::Id).eq(before.id))
        .and_where(
            Expr::col(J::State).is_in(allowed).or(Expr::col(J::State)
                .eq(state::RUNNING)
                .and(Expr::col(J::LeaseUntil).lt(now))),
        );
    if again {
        // A new run answers it again.
        update.value(J::RunId, Option::<String>::None);
    }
    if !changed(db, &update).await? {
        return Ok(None);
    }
    protege_core::db::load_job(db, before.id).await
}

/// Stops run `run_id` of job `id` for a person's decision on its calls: the run `waiting`
/// (from `started`) and the job `waiting` (while `owner` holds it), in one transaction;
/// false when either was not as required.
pub async fn wait_for_approval(
    db: &DatabaseConnection,
    id: i64,
    owner: &str,
    run_id: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    use sea_orm::TransactionTrait;
    let txn = db.begin().await?;
    let run = run_status(run_id, run_row::STARTED, run_row::WAITING);
    if !changed(&txn, &run).await? || !end_job(&txn, id, owner, &JobEnd::Waiting, now).await? {
        txn.rollback().await?;
        return Ok(false);
    }
    txn.commit().await?;
    Ok(true)
}

/// Records a person's `decision` (the JSON of `agent_jobs.approval`) on the calls run
/// `run_id` waits for: the run `started` again (from `waiting`: the first decision wins)
/// and its job `queued`, due now, in one transaction. The job's id, or `None` when the run
/// was not waiting.
pub async fn decide_calls(
    db: &DatabaseConnection,
    run_id: &str,
    decision: &str,
    now: DateTime<Utc>,
) -> Result<Option<i64>> {
    use agent_job::Column as J;
    use sea_orm::TransactionTrait;
    let txn = db.begin().await?;
    let run = run_status(run_id, run_row::WAITING, run_row::STARTED);
    if !changed(&txn, &run).await? {
        txn.rollback().await?;
        return Ok(None);
    }
    let mut find = jobs_select();
    find.and_where(Expr::col(J::RunId).eq(run_id))
        .and_where(Expr::col(J::State).eq(state::WAITING));
    let Some(job) = select_jobs(&txn, &find).await?.into_iter().next() else {
        txn.rollback().await?;
        return Ok(None);
    };
    let update = Query::update()
        .table(agent_job::Entity)
        .value(J::State, state::QUEUED)
        .value(J::Reason, Option::<String>::None)
        .value(J::Approval, decision)
        .value(J::NextAttemptAt, Option::<DateTime<Utc>>::None)
        .value(J::UpdatedAt, now)
        .and_where(Expr::col(J::Id).eq(job.id))
        .and_where(Expr::col(J::State).eq(state::WAITING))
        .to_owned();
    if !changed(&txn, &update).await? {
        txn.rollback().await?;
        return Ok(None);
    }
    txn.commit().await?;
    Ok(Some(job.id))
}

/// The update of run `run_id`'s status from `from` to `to`.
fn run_status(run_id: &str, from: &str, to: &str) -> UpdateStatement {
    Query::update()
        .table(run_row::Entity)
        .value(run_row::Column::Status, to)
        .and_where(Expr::col(run_row::Column::Id).eq(run_id))
        .and_where(Expr::col(run_row::Column::Status).eq(from))
        .to_owned()
}

/// Holds back the queued jobs of `persona` until `until` with `reason` (the provider refused
/// the persona's access): none of them is claimed before. Returns how many changed.
pub async fn pause_persona(
    db: &DatabaseConnection,
    persona: &str,
    until: DateTime<Utc>,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<u64> {
    use agent_job::Column as J;
    let update = Query::update()
        .table(agent_job::Entity)
        .value(J::NextAttemptAt, until)
        .value(J::Reason, reason)
        .value(J::UpdatedAt, now)
        .and_where(Expr::col(J::Persona).eq(persona))
        .and_where(Expr::col(J::State).eq(state::QUEUED))
        .and_where(
            Expr::col(J::NextAttemptAt)
                .is_null()
                .or(Expr::col(J::NextAttemptAt).lt(until)),
        )
        .to_owned();
    Ok(db
        .execute_raw(dates::statement(db, &update))
        .await?
        .rows_affected())
}

/// Ends the pause of `persona`'s queued jobs (its file changed, or an agent started): they
/// are due at `now`. Returns how many changed.
pub async fn resume_paused(
    db: &DatabaseConnection,
    persona: &str,
    now: DateTime<Utc>,
) -> Result<u64> {
    use agent_job::Column as J;
    let update = Query::update()
        .table(agent_job::Entity)
        .value(J::NextAttemptAt, now)
        .value(J::UpdatedAt, now)
        .and_where(Expr::col(J::Persona).eq(persona))
        .and_where(Expr::col(J::State).eq(state::QUEUED))
        .and_where(Expr::col(J::Reason).eq("paused"))
        .and_where(Expr::col(J::NextAttemptAt).gt(now))
        .to_owned();
    Ok(db
        .execute_raw(dates::statement(db, &update))
        .await?
        .rows_affected())
}

/// Queues every failed job again (of `persona` only, and updated at or after `since`, when
/// named), due now, their counts of claims reset; returns how many.
pub async fn retry_failed_jobs(
    db: &DatabaseConnection,
    persona: Option<&str>,
    since: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<u64> {
    use agent_job::Column as J;
    let mut update = requeue_failed(now);
    if let Some(persona) = persona {
        update.and_where(Expr::col(J::Persona).eq(persona));
    }
    if let Some(since) = since {
        update.and_where(Expr::col(J::UpdatedAt).gte(since));
    }
    Ok(db
        .execute_raw(dates::statement(db, &update))
        .await?
        .rows_affected())
}
