//! Erasing a correspondent (§15): every message whose From, To or Cc holds an address, with
//! what hangs on it, in one transaction.
//!
//! The messages are found through `message_addresses` (headers only: an address quoted in a
//! body is not indexed, so it does not count). Their ids are read once, then deleted with
//! what hangs on them by the deletes [`prune`](crate::prune) shares (`erase`): bounded by
//! lists of at most `IN_CHUNK` ids, on every backend, children first: the summaries of the
//! threads touched, run rounds, runs, tool uses, attachments, address rows, messages, and
//! last the threads left without a message.

use std::collections::BTreeSet;

use sea_orm::sea_query::{Expr, Query};
use sea_orm::{ConnectionTrait, DatabaseConnection, ExprTrait, TransactionTrait};

use protege_core::db::entities::message_address;
use protege_core::{Error, ErrorKind, Result};
use protege_mail::address_key;

use crate::erase::{Removed, finish, remove_messages};

/// What [`forget`] removed (or, for a dry run, would remove): rows per table.
pub type Forgotten = Removed;

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
    let outcome = erase(&txn, &key).await;
    finish(txn, outcome, dry_run).await
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
    remove_messages(db, &messages, &threads).await
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
}
