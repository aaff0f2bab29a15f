//! What erasing a correspondent ([`forget`](crate::forget)) and dropping old threads
//! ([`prune`](crate::prune)) share: the counts they give, the transaction they run in and
//! the deletes of a set of messages with what hangs on them.
//!
//! Every delete is bounded by a list of at most [`IN_CHUNK`] ids, on every backend,
//! children first: the summaries of the threads touched, then per chunk of messages run
//! rounds, runs, tool uses, attachments, address rows and the messages, and last the
//! threads left without a message.

use std::collections::HashSet;
use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Alias, Expr, LockType, Query, SelectStatement};
use sea_orm::{
    ConnectionTrait, DatabaseTransaction, DbErr, EntityName, ExprTrait, TransactionTrait,
};

use protege_core::db::entities::{
    agent_job, attachment, email_thread, message, message_address, message_strip, outbox, run,
    run_round, thread_summary, tool_use,
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
    /// Rows of `runs`.
    pub runs: u64,
    /// Rows of `run_rounds`.
    pub run_rounds: u64,
    /// Rows of `thread_summaries`.
    pub thread_summaries: u64,
    /// Rows of `message_addresses`.
    pub message_addresses: u64,
    /// Rows of `email_threads`.
    pub email_threads: u64,
    /// Rows of `outbox`: the replies removed with their messages, their bytes included (a
    /// reply still queued or waiting is never sent).
    pub outbox: u64,
}

impl Removed {
    /// Each table with its count, in a fixed order: `messages`, `attachments`,
    /// `tool_uses`, `runs`, `run_rounds`, `thread_summaries`, `message_addresses`,
    /// `email_threads`, `outbox`.
    pub fn rows(&self) -> [(&'static str, u64); 9] {
        [
            ("messages", self.messages),
            ("attachments", self.attachments),
            ("tool_uses", self.tool_uses),
            ("runs", self.runs),
            ("run_rounds", self.run_rounds),
            ("thread_summaries", self.thread_summaries),
            ("message_addresses", self.message_addresses),
            ("email_threads", self.email_threads),
            ("outbox", self.outbox),
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

/// Deletes, in `db` (a transaction), the messages whose row ids are `messages` with their
/// run rounds, runs, tool uses, attachments, `message_addresses` and `message_strips` rows;
/// the summaries of `threads` (the threads those messages belong to); and those of
/// `threads` left without a message. The messages left in `threads` are stripped again.
pub(crate) async fn remove_messages<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    messages: &[i64],
    threads: &[i64],
) -> Result<Attempt> {
    if let Some(id) = sending_row(db, messages, Utc::now()).await? {
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
    for chunk in messages.chunks(IN_CHUNK) {
        out.outbox += delete_in(db, outbox::Entity, outbox::Column::MessageId, chunk).await?;
        // The agent's jobs of the messages: bookkeeping of the answer, not counted.
        delete_in(db, agent_job::Entity, agent_job::Column::MessageId, chunk).await?;
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
        out.tool_uses +=
            delete_in(db, tool_use::Entity, tool_use::Column::MessageId, chunk).await?;
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
    }
    // The messages left in those threads were stripped against the ones removed.
    protege_core::db::strips::restrip(db, threads, &HashSet::new()).await?;
    for chunk in threads.chunks(IN_CHUNK) {
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
        out.email_threads += db.execute(&empty).await?.rows_affected();
    }
    Ok(Attempt::Done(out))
}

/// `DELETE FROM table WHERE column IN (ids)`: the rows removed.
async fn delete_in<C, E, Col>(db: &C, table: E, column: Col, ids: &[i64]) -> Result<u64, DbErr>
where
    C: ConnectionTrait,
    E: EntityName + 'static,
    Col: sea_orm::sea_query::IntoIden + 'static,
{
    let delete = Query::delete()
        .from_table(table)
        .and_where(Expr::col(column).is_in(ids.iter().copied()))
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
            outbox: 1,
        };
        assert_eq!(
            f.to_string(),
            "messages: 3\nattachments: 1\ntool_uses: 2\nruns: 1\nrun_rounds: 2\n\
             thread_summaries: 1\nmessage_addresses: 9\nemail_threads: 0\noutbox: 1"
        );
        assert_eq!(
            serde_json::to_string(&f).unwrap(),
            r#"{"messages":3,"attachments":1,"tool_uses":2,"runs":1,"run_rounds":2,"thread_summaries":1,"message_addresses":9,"email_threads":0,"outbox":1}"#
        );
    }
}
