//! What erasing a correspondent ([`forget`](crate::forget)) and dropping old threads
//! ([`prune`](crate::prune)) share: the counts they give, the transaction they run in and
//! the deletes of a set of messages with what hangs on them.
//!
//! Every delete is bounded by a list of at most [`IN_CHUNK`] ids, on every backend,
//! children first: the summaries of the threads touched, then per chunk of messages run
//! rounds, runs, tool uses, attachments, address rows and the messages, and last the
//! threads left without a message.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Alias, Expr, LockType, Query, SelectStatement};
use sea_orm::{
    ConnectionTrait, DatabaseTransaction, DbErr, EntityName, ExprTrait, TransactionTrait,
};

use protege_core::db::dates;
use protege_core::db::entities::{
    agent_job, attachment, email_thread, erased_message, inbox_reject, message, message_address,
    message_strip, outbox, responsibility_seen, responsibility_slot, run, run_round, run_source,
    thread_summary, tool_use,
};
use protege_core::{Error, ErrorKind, Result};

use crate::store::IN_CHUNK;

/// What an erasure removed (or, for a dry run, would remove): rows per table. The counts
/// of [`forget`](crate::forget) ([`Forgotten`](crate::Forgotten)) and of
/// [`prune`](crate::prune) ([`Pruned`](crate::Pruned)).
///
/// Serialised as an object with the tables in the order of [`rows`](Self::rows); displayed
/// as one `table: count` line per table in the same order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Removed {
    /// Rows of `messages`.
    pub messages: u64,
    /// Rows of `attachments`.
    pub attachments: u64,
    /// Rows of `tool_uses`.
    pub tool_uses: u64,
    /// Rows of `runs`: the runs answering the messages removed, and the scheduled runs whose
    /// request held one of them.
    pub runs: u64,
    /// Rows of `run_rounds`.
    pub run_rounds: u64,
    /// Rows of `thread_summaries`.
    pub thread_summaries: u64,
    /// Rows of `message_addresses`.
    pub message_addresses: u64,
    /// Rows of `email_threads`.
    pub email_threads: u64,
    /// Rows of `agent_jobs`: the jobs answering the messages removed and those of the
    /// scheduled runs removed.
    pub agent_jobs: u64,
    /// Rows of `outbox`: the replies removed with their messages, their bytes included (a
    /// reply still queued or waiting is never sent).
    pub outbox: u64,
    /// The tool approvals removed: the jobs among [`agent_jobs`](Self::agent_jobs) that
    /// held a person's decision on tool calls (with its edited inputs).
    pub tool_approvals: u64,
    /// Rows of `inbox_rejects`: the refused messages of the mail removed (by Message-ID),
    /// those sent by the address forgotten, and those older than a prune's cut-off.
    pub inbox_rejects: u64,
    /// Rows of `responsibility_slots`: the slots of the scheduled runs removed, and those
    /// older than a prune's cut-off.
    pub responsibility_slots: u64,
    /// Rows added to `erased_messages` ([`forget`](crate::forget) only): the SHA-256 of each
    /// Message-ID erased, so the same mail is never stored again.
    pub erased_messages: u64,
}

impl Removed {
    /// Each table with its count, in a fixed order: `messages`, `attachments`,
    /// `tool_uses`, `runs`, `run_rounds`, `thread_summaries`, `message_addresses`,
    /// `email_threads`, `agent_jobs`, `outbox`, `tool_approvals`, `inbox_rejects`,
    /// `responsibility_slots`, `erased_messages`.
    pub fn rows(&self) -> [(&'static str, u64); 14] {
        [
            ("messages", self.messages),
            ("attachments", self.attachments),
            ("tool_uses", self.tool_uses),
            ("runs", self.runs),
            ("run_rounds", self.run_rounds),
            ("thread_summaries", self.thread_summaries),
            ("message_addresses", self.message_addresses),
            ("email_threads", self.email_threads),
            ("agent_jobs", self.agent_jobs),
            ("outbox", self.outbox),
            ("tool_approvals", self.tool_approvals),
            ("inbox_rejects", self.inbox_rejects),
            ("responsibility_slots", self.responsibility_slots),
            ("erased_messages", self.erased_messages),
        ]
    }
}

impl fmt::Display for Removed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (table, count)) in self.rows().iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{table}: {count}")?;
        }
        Ok(())
    }
}

/// The SHA-256 of a stored Message-ID (angle brackets included), in lowercase hex: how
/// `erased_messages` and `run_sources` name a message without keeping its Message-ID.
pub fn message_sha256(message_id: &str) -> String {
    protege_core::Source::sha256_hex(message_id.as_bytes())
}

/// How long an erasure waits for a reply of the messages it removes that is being sent
/// (an SMTP exchange under a live lease) before it gives up.
pub(crate) const SENDING_WAIT: Duration = Duration::from_secs(300);

/// How often an erasure that waits for a reply being sent looks again.
const SENDING_POLL: Duration = Duration::from_millis(200);

/// What one attempt of an erasure came to: its counts, or the outbox row of a reply of its
/// messages that is being sent (nothing was removed; the attempt is made again once the
/// exchange is over).
pub(crate) enum Attempt {
    Done(Removed),
    Sending(i64),
}

/// Runs `attempt` (an erasure in a transaction of its own) until no reply of the messages
/// it removes is being sent, at most [`SENDING_WAIT`]: a reply whose SMTP exchange is under
/// way is sent, and recorded, before its message goes; a queued or waiting one is removed
/// with it and never sent. Gives up with an [`ErrorKind::Conflict`] error naming the row.
pub(crate) async fn waiting_for_sending<F, Fut>(mut attempt: F) -> Result<Removed>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Attempt>>,
{
    let deadline = std::time::Instant::now() + SENDING_WAIT;
    loop {
        match attempt().await? {
            Attempt::Done(removed) => return Ok(removed),
            Attempt::Sending(id) if std::time::Instant::now() >= deadline => {
                return Err(Error::new(
                    ErrorKind::Conflict,
                    format!(
                        "the reply of outbox row {id} has been being sent for over {} s: nothing was removed; try again once it is sent",
                        SENDING_WAIT.as_secs()
                    ),
                ));
            }
            Attempt::Sending(_) => tokio::time::sleep(SENDING_POLL).await,
        }
    }
}

/// Ends the transaction of an erasure, `txn` (begun with the import lock), whose deletes
/// gave `outcome`: committed, or rolled back for a dry run (the counts are still those
/// of a real run at that moment), when a reply is being sent, and on an error.
pub(crate) async fn finish(
    txn: DatabaseTransaction,
    outcome: Result<Attempt>,
    dry_run: bool,
) -> Result<Attempt> {
    match outcome {
        Ok(Attempt::Done(counts)) => {
            if dry_run {
                txn.rollback().await?;
            } else {
                txn.commit().await?;
            }
            Ok(Attempt::Done(counts))
        }
        Ok(sending) => {
            txn.rollback().await?;
            Ok(sending)
        }
        Err(err) => {
            txn.rollback().await.ok();
            Err(err)
        }
    }
}

/// The outbox row of one of `messages` whose reply is being sent now (`sending` under a
/// live lease), if any. The outbox rows of `messages` are locked for the transaction
/// (PostgreSQL, MariaDB; SQLite's write lock does it there), so no worker claims one of
/// them until it ends.
async fn sending_row<C: ConnectionTrait>(
    db: &C,
    messages: &[i64],
    now: DateTime<Utc>,
) -> Result<Option<i64>> {
    use outbox::Column as O;
    for chunk in messages.chunks(IN_CHUNK) {
        let rows = Query::select()
            .columns([O::Id, O::State, O::LeaseUntil])
            .from(outbox::Entity)
            .and_where(Expr::col(O::MessageId).is_in(chunk.iter().copied()))
            .lock(LockType::Update)
            .to_owned();
        for row in db
            .query_all_raw(protege_core::db::dates::statement(db, &rows))
            .await?
        {
            let state: String = row.try_get_by_index(1)?;
            let until: Option<DateTime<Utc>> = row.try_get_by_index(2)?;
            if state == protege_core::db::outbox_state::SENDING && until.is_some_and(|u| u >= now) {
                return Ok(Some(row.try_get_by_index(0)?));
            }
        }
    }
    Ok(None)
}

/// Deletes, in `db` (a transaction), the messages whose row ids are `messages` with what
/// hangs on them: run rounds, runs, tool uses, attachments, `message_addresses` and
/// `message_strips` rows, the agent's jobs, the outbox rows and the `inbox_rejects` rows of
/// their Message-IDs; the summaries of `threads` (the threads those messages belong to);
/// and those of `threads` left without a message. The messages left in `threads` are
/// stripped again.
///
/// A scheduled run whose request held one of the messages (`run_sources`) goes too, with
/// its rounds, its job and slot, and the mail it sent (which is removed like the messages,
/// with its thread when nothing else is left in it). With `keep_erased` (`forget`), the
/// SHA-256 of each Message-ID removed is kept in `erased_messages`.
pub(crate) async fn remove_messages<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    messages: &[i64],
    threads: &[i64],
    keep_erased: bool,
) -> Result<Attempt> {
    let Scope {
        messages,
        threads,
        ids,
        runs,
    } = Scope::of(db, messages, threads).await?;
    if let Some(id) = sending_row(db, &messages, Utc::now()).await? {
        return Ok(Attempt::Sending(id));
    }
    let mut out = Removed::default();
    for chunk in threads.chunks(IN_CHUNK) {
        out.thread_summaries += delete_in(
            db,
            thread_summary::Entity,
            thread_summary::Column::EmailThreadId,
            chunk,
        )
        .await?;
    }
    remove_runs(db, &runs, &mut out).await?;
    for chunk in messages.chunks(IN_CHUNK) {
        remove_message_rows(db, chunk, &mut out).await?;
    }
    let removed_ids: Vec<&str> = messages
        .iter()
        .filter_map(|m| ids.get(m))
        .map(String::as_str)
        .collect();
    for chunk in removed_ids.chunks(IN_CHUNK) {
        out.inbox_rejects += delete_in(
            db,
            inbox_reject::Entity,
            inbox_reject::Column::MessageId,
            chunk,
        )
        .await?;
    }
    if keep_erased {
        let hashes: Vec<String> = removed_ids.iter().map(|id| message_sha256(id)).collect();
        out.erased_messages += keep_erased_hashes(db, &hashes, Utc::now()).await?;
    }
    // The messages left in those threads were stripped against the ones removed.
    protege_core::db::strips::restrip(db, &threads, &HashSet::new()).await?;
    for chunk in threads.chunks(IN_CHUNK) {
        out.email_threads += remove_empty_threads(db, chunk).await?;
    }
    Ok(Attempt::Done(out))
}

/// What [`remove_messages`] removes: the messages asked for, the scheduled runs that
/// quoted one of them and the mail those runs sent, with their threads.
struct Scope {
    /// The row ids of the messages, in order.
    messages: Vec<i64>,
    /// The threads of the messages, in order.
    threads: Vec<i64>,
    /// The Message-IDs of the messages, by row id.
    ids: BTreeMap<i64, String>,
    /// The ids of the scheduled runs, in order.
    runs: Vec<String>,
}

impl Scope {
    /// The scope of removing `messages` of `threads`: the scheduled runs that quoted a
    /// message removed, and the mail they sent, until no new one turns up (that mail may
    /// itself be quoted by a later digest).
    async fn of<C: ConnectionTrait>(db: &C, messages: &[i64], threads: &[i64]) -> Result<Self> {
        let mut messages: BTreeSet<i64> = messages.iter().copied().collect();
        let mut threads: BTreeSet<i64> = threads.iter().copied().collect();
        let mut ids: BTreeMap<i64, String> = BTreeMap::new();
        let mut runs: BTreeSet<String> = BTreeSet::new();
        loop {
            let unread: Vec<i64> = messages
                .iter()
                .copied()
                .filter(|m| !ids.contains_key(m))
                .collect();
            if unread.is_empty() {
                break;
            }
            ids.extend(message_ids(db, &unread).await?);
            let hashes: Vec<String> = unread
                .iter()
                .filter_map(|m| ids.get(m))
                .map(|id| message_sha256(id))
                .collect();
            let found = runs_quoting(db, &hashes).await?;
            let new: Vec<String> = found.into_iter().filter(|r| !runs.contains(r)).collect();
            if new.is_empty() {
                break;
            }
            let sent = mail_of_runs(db, &new).await?;
            runs.extend(new);
            for (message, thread) in sent {
                messages.insert(message);
                threads.insert(thread);
            }
        }
        Ok(Scope {
            messages: messages.into_iter().collect(),
            threads: threads.into_iter().collect(),
            ids,
            runs: runs.into_iter().collect(),
        })
    }
}

/// Deletes the messages whose row ids are `chunk` (at most [`IN_CHUNK`]) with the rows
/// that hang on them, children first: outbox rows, jobs, run rounds, runs, tool uses,
/// attachments, `message_addresses` and `message_strips` rows; adds the counts to `out`.
async fn remove_message_rows<C: ConnectionTrait>(
    db: &C,
    chunk: &[i64],
    out: &mut Removed,
) -> Result<()> {
    out.outbox += delete_in(db, outbox::Entity, outbox::Column::MessageId, chunk).await?;
    remove_jobs(db, agent_job::Column::MessageId, chunk, out).await?;
    let runs_of_chunk: SelectStatement = Query::select()
        .column(run::Column::Id)
        .from(run::Entity)
        .and_where(Expr::col(run::Column::MessageId).is_in(chunk.iter().copied()))
        .to_owned();
    let rounds = Query::delete()
        .from_table(run_round::Entity)
        .and_where(Expr::col(run_round::Column::RunId).in_subquery(runs_of_chunk))
        .to_owned();
    out.run_rounds += db.execute(&rounds).await?.rows_affected();
    out.runs += delete_in(db, run::Entity, run::Column::MessageId, chunk).await?;
    out.tool_uses += delete_in(db, tool_use::Entity, tool_use::Column::MessageId, chunk).await?;
    out.attachments +=
        delete_in(db, attachment::Entity, attachment::Column::MessageId, chunk).await?;
    out.message_addresses += delete_in(
        db,
        message_address::Entity,
        message_address::Column::MessageId,
        chunk,
    )
    .await?;
    // The stored stripped bodies hold the messages' text too; a cache, not counted.
    delete_in(
        db,
        message_strip::Entity,
        message_strip::Column::MessageId,
        chunk,
    )
    .await?;
    out.messages += delete_in(db, message::Entity, message::Column::Id, chunk).await?;
    Ok(())
}

/// Deletes those of the threads `chunk` (at most [`IN_CHUNK`]) left without a message:
/// how many.
async fn remove_empty_threads<C: ConnectionTrait>(db: &C, chunk: &[i64]) -> Result<u64> {
    let t = Alias::new(email_thread::Entity.table_name());
    let m = Alias::new(message::Entity.table_name());
    let left = Query::select()
        .expr(Expr::val(1))
        .from(message::Entity)
        .and_where(
            Expr::col((m, message::Column::EmailThreadId))
                .equals((t.clone(), email_thread::Column::Id)),
        )
        .to_owned();
    let empty = Query::delete()
        .from_table(email_thread::Entity)
        .and_where(Expr::col((t, email_thread::Column::Id)).is_in(chunk.iter().copied()))
        .and_where(Expr::exists(left).not())
        .to_owned();
    Ok(db.execute(&empty).await?.rows_affected())
}

/// The Message-IDs of the messages whose row ids are `rows`, by row id.
async fn message_ids<C: ConnectionTrait>(db: &C, rows: &[i64]) -> Result<BTreeMap<i64, String>> {
    use message::Column as M;
    let mut out = BTreeMap::new();
    for chunk in rows.chunks(IN_CHUNK) {
        let select = Query::select()
            .columns([M::Id, M::MessageId])
            .from(message::Entity)
            .and_where(Expr::col(M::Id).is_in(chunk.iter().copied()))
            .to_owned();
        for row in db.query_all(&select).await? {
            out.insert(row.try_get_by_index(0)?, row.try_get_by_index(1)?);
        }
    }
    Ok(out)
}

/// The runs whose request held a message of one of `hashes` (`run_sources`).
async fn runs_quoting<C: ConnectionTrait>(db: &C, hashes: &[String]) -> Result<BTreeSet<String>> {
    use run_source::Column as S;
    let mut out = BTreeSet::new();
    for chunk in hashes.chunks(IN_CHUNK) {
        let select = Query::select()
            .distinct()
            .column(S::RunId)
            .from(run_source::Entity)
            .and_where(Expr::col(S::MessageSha256).is_in(chunk.iter().map(String::as_str)))
            .to_owned();
        for row in db.query_all(&select).await? {
            out.insert(row.try_get_by_index(0)?);
        }
    }
    Ok(out)
}

/// The stored mail `runs` sent (their outbox rows' messages), as `(message, thread)`.
async fn mail_of_runs<C: ConnectionTrait>(db: &C, runs: &[String]) -> Result<Vec<(i64, i64)>> {
    let (o, m) = (
        Alias::new(outbox::Entity.table_name()),
        Alias::new(message::Entity.table_name()),
    );
    let mut out = Vec::new();
    for chunk in runs.chunks(IN_CHUNK) {
        let select = Query::select()
            .column((m.clone(), message::Column::Id))
            .column((m.clone(), message::Column::EmailThreadId))
            .from(outbox::Entity)
            .inner_join(
                message::Entity,
                Expr::col((m.clone(), message::Column::Id))
                    .equals((o.clone(), outbox::Column::MessageId)),
            )
            .and_where(
                Expr::col((o.clone(), outbox::Column::RunId))
                    .is_in(chunk.iter().map(String::as_str)),
            )
            .to_owned();
        for row in db.query_all(&select).await? {
            out.push((row.try_get_by_index(0)?, row.try_get_by_index(1)?));
        }
    }
    Ok(out)
}

/// Deletes the runs `runs` (scheduled ones: no message of theirs is removed) with their
/// rounds, their `run_sources` rows, and their jobs with those jobs' slots.
pub(crate) async fn remove_runs<C: ConnectionTrait>(
    db: &C,
    runs: &[String],
    out: &mut Removed,
) -> Result<()> {
    for chunk in runs.chunks(IN_CHUNK) {
        let chunk: Vec<&str> = chunk.iter().map(String::as_str).collect();
        let slots = Query::select()
            .column(agent_job::Column::SlotId)
            .from(agent_job::Entity)
            .and_where(Expr::col(agent_job::Column::RunId).is_in(chunk.iter().copied()))
            .and_where(Expr::col(agent_job::Column::SlotId).is_not_null())
            .to_owned();
        let mut slot_ids: Vec<i64> = Vec::new();
        for row in db.query_all(&slots).await? {
            slot_ids.push(row.try_get_by_index(0)?);
        }
        remove_jobs(db, agent_job::Column::RunId, &chunk, out).await?;
        remove_slots(db, &slot_ids, out).await?;
        out.run_rounds +=
            delete_in(db, run_round::Entity, run_round::Column::RunId, &chunk).await?;
        delete_in(db, run_source::Entity, run_source::Column::RunId, &chunk).await?;
        out.runs += delete_in(db, run::Entity, run::Column::Id, &chunk).await?;
    }
    Ok(())
}

/// Deletes the jobs whose `column` is in `values`, counting them and their tool approvals.
async fn remove_jobs<C, V>(
    db: &C,
    column: agent_job::Column,
    values: &[V],
    out: &mut Removed,
) -> Result<()>
where
    C: ConnectionTrait,
    V: Into<sea_orm::Value> + Clone,
{
    let approved = Query::select()
        .expr(Expr::col(agent_job::Column::Id).count())
        .from(agent_job::Entity)
        .and_where(Expr::col(column).is_in(values.iter().cloned()))
        .and_where(Expr::col(agent_job::Column::Approval).is_not_null())
        .to_owned();
    if let Some(row) = db.query_one(&approved).await? {
        out.tool_approvals += u64::try_from(row.try_get_by_index::<i64>(0)?).unwrap_or(0);
    }
    out.agent_jobs += delete_in(db, agent_job::Entity, column, values).await?;
    Ok(())
}

/// Deletes the `responsibility_slots` rows `slots`. Each responsibility is then counted as
/// first seen no earlier than the newest slot removed, so a slot removed is never fired
/// again.
pub(crate) async fn remove_slots<C: ConnectionTrait>(
    db: &C,
    slots: &[i64],
    out: &mut Removed,
) -> Result<()> {
    use responsibility_slot::Column as S;
    for chunk in slots.chunks(IN_CHUNK) {
        let select = Query::select()
            .columns([S::Persona, S::Responsibility, S::SlotAt])
            .from(responsibility_slot::Entity)
            .and_where(Expr::col(S::Id).is_in(chunk.iter().copied()))
            .to_owned();
        let mut newest: BTreeMap<(String, String), DateTime<Utc>> = BTreeMap::new();
        for row in db.query_all_raw(dates::statement(db, &select)).await? {
            let key = (row.try_get_by_index(0)?, row.try_get_by_index(1)?);
            let at: DateTime<Utc> = row.try_get_by_index(2)?;
            let entry = newest.entry(key).or_insert(at);
            *entry = Ord::max(*entry, at);
        }
        for ((persona, responsibility), at) in newest {
            use responsibility_seen::Column as R;
            let update = Query::update()
                .table(responsibility_seen::Entity)
                .value(R::SeenAt, at)
                .and_where(Expr::col(R::Persona).eq(persona))
                .and_where(Expr::col(R::Responsibility).eq(responsibility))
                .and_where(Expr::col(R::SeenAt).lt(at))
                .to_owned();
            db.execute_raw(dates::statement(db, &update)).await?;
        }
        out.responsibility_slots +=
            delete_in(db, responsibility_slot::Entity, S::Id, chunk).await?;
    }
    Ok(())
}

/// Adds each of `hashes` not kept yet to `erased_messages`; the rows added.
async fn keep_erased_hashes<C: ConnectionTrait>(
    db: &C,
    hashes: &[String],
    now: DateTime<Utc>,
) -> Result<u64> {
    use erased_message::Column as E;
    let mut added = 0;
    let mut wanted: Vec<&str> = hashes.iter().map(String::as_str).collect();
    wanted.sort_unstable();
    wanted.dedup();
    for chunk in wanted.chunks(IN_CHUNK) {
        let select = Query::select()
            .column(E::MessageSha256)
            .from(erased_message::Entity)
            .and_where(Expr::col(E::MessageSha256).is_in(chunk.iter().copied()))
            .to_owned();
        let mut kept: HashSet<String> = HashSet::new();
        for row in db.query_all(&select).await? {
            kept.insert(row.try_get_by_index(0)?);
        }
        let new: Vec<&str> = chunk
            .iter()
            .copied()
            .filter(|h| !kept.contains(*h))
            .collect();
        if new.is_empty() {
            continue;
        }
        let mut insert = Query::insert();
        insert
            .into_table(erased_message::Entity)
            .columns([E::MessageSha256, E::ErasedAt]);
        for hash in &new {
            insert.values_panic([(*hash).into(), now.into()]);
        }
        db.execute_raw(dates::statement(db, &insert)).await?;
        added += new.len() as u64;
    }
    Ok(added)
}

/// `DELETE FROM table WHERE column IN (values)`: the rows removed.
pub(crate) async fn delete_in<C, E, Col, V>(
    db: &C,
    table: E,
    column: Col,
    values: &[V],
) -> Result<u64, DbErr>
where
    C: ConnectionTrait,
    E: EntityName + 'static,
    Col: sea_orm::sea_query::IntoIden + 'static,
    V: Into<sea_orm::Value> + Clone,
{
    if values.is_empty() {
        return Ok(0);
    }
    let delete = Query::delete()
        .from_table(table)
        .and_where(Expr::col(column).is_in(values.iter().cloned()))
        .to_owned();
    Ok(db.execute(&delete).await?.rows_affected())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counts_print_one_line_per_table_in_a_fixed_order() {
        let f = Removed {
            messages: 3,
            attachments: 1,
            tool_uses: 2,
            runs: 1,
            run_rounds: 2,
            thread_summaries: 1,
            message_addresses: 9,
            email_threads: 0,
            agent_jobs: 1,
            outbox: 1,
            tool_approvals: 1,
            inbox_rejects: 2,
            responsibility_slots: 1,
            erased_messages: 3,
        };
        assert_eq!(
            f.to_string(),
            "messages: 3\nattachments: 1\ntool_uses: 2\nruns: 1\nrun_rounds: 2\n\
             thread_summaries: 1\nmessage_addresses: 9\nemail_threads: 0\nagent_jobs: 1\n\
             outbox: 1\ntool_approvals: 1\ninbox_rejects: 2\nresponsibility_slots: 1\n\
             erased_messages: 3"
        );
        assert_eq!(
            serde_json::to_string(&f).unwrap(),
            r#"{"messages":3,"attachments":1,"tool_uses":2,"runs":1,"run_rounds":2,"thread_summaries":1,"message_addresses":9,"email_threads":0,"agent_jobs":1,"outbox":1,"tool_approvals":1,"inbox_rejects":2,"responsibility_slots":1,"erased_messages":3}"#
        );
    }
}
