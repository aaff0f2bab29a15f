//! Erasing a correspondent (§15): every message whose From, To or Cc holds an address, with
//! what hangs on it, in one transaction.
//!
//! The messages are found through `message_addresses` (headers only: an address quoted in a
//! body is not indexed, so it does not count). Their ids are read once, then every delete
//! is bounded by a list of at most [`IN_CHUNK`] ids, on every backend, children first: run
//! rounds, runs, tool uses, attachments, the summaries of the threads touched, address
//! rows, messages, and last the threads left without a message.

use std::collections::BTreeSet;
use std::fmt;

use sea_orm::sea_query::{Alias, Expr, Query, SelectStatement};
use sea_orm::{
    ConnectionTrait, DatabaseConnection, DbErr, EntityName, ExprTrait, TransactionTrait,
};

use protege_core::db::entities::{
    attachment, email_thread, message, message_address, run, run_round, thread_summary, tool_use,
};
use protege_core::{Error, ErrorKind, Result};
use protege_mail::address_key;

use crate::store::IN_CHUNK;

/// What [`forget`] removed (or, for a dry run, would remove): rows per table.
///
/// Serialised as an object with the tables in the order of [`rows`](Self::rows); displayed
/// as one `table: count` line per table in the same order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Forgotten {
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
}

impl Forgotten {
    /// Each table with its count, in a fixed order: `messages`, `attachments`,
    /// `tool_uses`, `runs`, `run_rounds`, `thread_summaries`, `message_addresses`,
    /// `email_threads`.
    pub fn rows(&self) -> [(&'static str, u64); 8] {
        [
            ("messages", self.messages),
            ("attachments", self.attachments),
            ("tool_uses", self.tool_uses),
            ("runs", self.runs),
            ("run_rounds", self.run_rounds),
            ("thread_summaries", self.thread_summaries),
            ("message_addresses", self.message_addresses),
            ("email_threads", self.email_threads),
        ]
    }
}

impl fmt::Display for Forgotten {
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

/// The key of the address to forget: [`address_key`] of `address` (so any case and a
/// display name match), or an [`ErrorKind::InvalidInput`] error when it is no address.
fn key_of(address: &str) -> Result<String> {
    let invalid = |why: String| Err(Error::new(ErrorKind::InvalidInput, why));
    let key = address_key(address);
    let chars = key.chars().count();
    if key.is_empty() {
        return invalid("the address to forget is empty".to_owned());
    }
    if chars > message_address::MAX_ADDRESS_CHARS {
        return invalid(format!(
            "the address to forget is {chars} characters long, over the limit of {}",
            message_address::MAX_ADDRESS_CHARS
        ));
    }
    if !key.contains('@') {
        return invalid(format!("`{key}` is not an email address: it has no `@`"));
    }
    if key.chars().any(char::is_whitespace) {
        return invalid(format!(
            "`{key}` is not an email address: it has a space inside"
        ));
    }
    Ok(key)
}

/// Erases the correspondent `address`: every message whose From, To or Cc holds it, with
/// their attachments, tool uses, runs and those runs' rounds, their `message_addresses`
/// rows, the summaries of every thread they touched, and the threads left without a
/// message; in one transaction, which takes the import lock (§6) so no import interleaves.
///
/// With `dry_run` the same deletes run and the transaction is rolled back: the counts are
/// those a real run would give at that moment, and nothing changes. An empty or malformed
/// address (no `@`, a space inside, longer than 320 characters) is an
/// [`ErrorKind::InvalidInput`] error.
pub async fn forget(db: &DatabaseConnection, address: &str, dry_run: bool) -> Result<Forgotten> {
    let key = key_of(address)?;
    let txn = protege_core::db::lock::begin_import(db).await?;
    match erase(&txn, &key).await {
        Ok(counts) => {
            if dry_run {
                txn.rollback().await?;
            } else {
                txn.commit().await?;
            }
            Ok(counts)
        }
        Err(err) => {
            txn.rollback().await.ok();
            Err(err)
        }
    }
}

/// The deletes of [`forget`], in `db` (a transaction).
async fn erase<C: ConnectionTrait + TransactionTrait>(db: &C, key: &str) -> Result<Forgotten> {
    use message_address::Column as A;
    let found = Query::select()
        .columns([A::MessageId, A::EmailThreadId])
        .from(message_address::Entity)
        .and_where(Expr::col(A::Address).eq(key))
        .to_owned();
    let mut messages = BTreeSet::new();
    let mut threads = BTreeSet::new();
    for row in db.query_all(&found).await? {
        messages.insert(row.try_get::<i64>("", "message_id")?);
        threads.insert(row.try_get::<i64>("", "email_thread_id")?);
    }
    let messages: Vec<i64> = messages.into_iter().collect();
    let threads: Vec<i64> = threads.into_iter().collect();

    let mut out = Forgotten::default();
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
        out.message_addresses +=
            delete_in(db, message_address::Entity, A::MessageId, chunk).await?;
        out.messages += delete_in(db, message::Entity, message::Column::Id, chunk).await?;
    }
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
    Ok(out)
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
    fn the_key_matches_any_case_and_a_display_name() {
        assert_eq!(
            key_of("Ann Smith <Ann@Example.COM>").unwrap(),
            "ann@example.com"
        );
        assert_eq!(key_of("  ann@example.com ").unwrap(), "ann@example.com");
    }

    #[test]
    fn what_is_no_address_is_invalid_input_in_one_sentence() {
        let long = format!("{}@example.com", "a".repeat(320));
        for (input, message) in [
            ("", "the address to forget is empty"),
            ("   ", "the address to forget is empty"),
            ("<>", "the address to forget is empty"),
            ("ann", "`ann` is not an email address: it has no `@`"),
            (
                "ann smith@example.com",
                "`ann smith@example.com` is not an email address: it has a space inside",
            ),
            (
                long.as_str(),
                "the address to forget is 332 characters long, over the limit of 320",
            ),
        ] {
            let err = key_of(input).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{input:?}");
            assert_eq!(err.to_string(), message, "{input:?}");
        }
    }

    #[test]
    fn the_counts_print_one_line_per_table_in_a_fixed_order() {
        let f = Forgotten {
            messages: 3,
            attachments: 1,
            tool_uses: 2,
            runs: 1,
            run_rounds: 2,
            thread_summaries: 1,
            message_addresses: 9,
            email_threads: 0,
        };
        assert_eq!(
            f.to_string(),
            "messages: 3\nattachments: 1\ntool_uses: 2\nruns: 1\nrun_rounds: 2\n\
             thread_summaries: 1\nmessage_addresses: 9\nemail_threads: 0"
        );
        assert_eq!(
            serde_json::to_string(&f).unwrap(),
            r#"{"messages":3,"attachments":1,"tool_uses":2,"runs":1,"run_rounds":2,"thread_summaries":1,"message_addresses":9,"email_threads":0}"#
        );
    }
}
