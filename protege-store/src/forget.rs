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

use sea_orm::sea_query::{Expr, Func, LikeExpr, Query};
use sea_orm::{ConnectionTrait, DatabaseConnection, ExprTrait, TransactionTrait};

use protege_core::db::entities::{inbox_reject, message_address};
use protege_core::{Error, ErrorKind, Result};
use protege_mail::address_key;

use crate::erase::{Attempt, Removed, finish, remove_messages, waiting_for_sending};

/// What [`forget`] removed (or, for a dry run, would remove): rows per table.
pub type Forgotten = Removed;

/// The key of an address to forget, as [`forget`] reads it (`None` when it is no address).
pub fn forget_key(address: &str) -> Option<String> {
    key_of(address).ok()
}

/// The key of the address to forget: [`address_key`] of `address` (so any case and a
/// display name match), a quoted local part that needs no quotes unquoted
/// (`"kim"@example.com` is `kim@example.com`), or an [`ErrorKind::InvalidInput`] error when
/// it is no address.
fn key_of(address: &str) -> Result<String> {
    let invalid = |why: String| Err(Error::new(ErrorKind::InvalidInput, why));
    let key = unquoted(&address_key(address));
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
    let Some((local, domain)) = key.rsplit_once('@') else {
        return invalid(format!("`{key}` is not an email address: it has no `@`"));
    };
    if local.is_empty() || domain.is_empty() {
        return invalid(format!(
            "`{key}` is not an email address: it has nothing {} its `@`",
            if local.is_empty() { "before" } else { "after" }
        ));
    }
    if key.chars().any(char::is_whitespace) {
        return invalid(format!(
            "`{key}` is not an email address: it has a space inside"
        ));
    }
    Ok(key)
}

/// `key` with a quoted local part unquoted when its text needs no quotes (letters, digits
/// and the dot-atom signs of RFC 5322).
fn unquoted(key: &str) -> String {
    let Some((local, domain)) = key.rsplit_once('@') else {
        return key.to_owned();
    };
    match local.strip_prefix('"').and_then(|l| l.strip_suffix('"')) {
        Some(inner)
            if !inner.is_empty()
                && !inner.starts_with('.')
                && !inner.ends_with('.')
                && !inner.contains("..")
                && inner
                    .chars()
                    .all(|c| c.is_alphanumeric() || "!#$%&'*+-/=?^_`{|}~.".contains(c)) =>
        {
            format!("{inner}@{domain}")
        }
        _ => key.to_owned(),
    }
}

/// The forms an address key may be stored in: as it is, and with its local part quoted.
fn stored_forms(key: &str) -> Vec<String> {
    let mut forms = vec![key.to_owned()];
    if let Some((local, domain)) = key.rsplit_once('@')
        && !local.starts_with('"')
    {
        forms.push(format!("\"{local}\"@{domain}"));
    }
    forms
}

/// Erases the correspondent `address`: every message whose From, To, Cc or Reply-To holds
/// it, with their attachments, tool uses, runs and those runs' rounds, their
/// `message_addresses` rows, the agent's jobs, tool approvals and outbox rows, the
/// scheduled runs whose request held one of them (with their slots and the mail they
/// sent), the summaries of every thread they touched, the threads left without a message,
/// and the `inbox_rejects` rows of their Message-IDs or of mail the address sent; the
/// SHA-256 of each Message-ID erased is kept in `erased_messages`, so the same mail is
/// never stored again. In one transaction, which takes the import lock (§6) so no import
/// interleaves.
///
/// With `dry_run` the same deletes run and the transaction is rolled back: the counts are
/// those a real run would give at that moment, and nothing changes. An empty or malformed
/// address (no `@`, a space inside, longer than 320 characters) is an
/// [`ErrorKind::InvalidInput`] error.
pub async fn forget(db: &DatabaseConnection, address: &str, dry_run: bool) -> Result<Forgotten> {
    let key = key_of(address)?;
    waiting_for_sending(|| async {
        let txn = protege_core::db::lock::begin_import(db).await?;
        let outcome = erase(&txn, &key).await;
        finish(txn, outcome, dry_run).await
    })
    .await
}

/// The deletes of [`forget`], in `db` (a transaction).
async fn erase<C: ConnectionTrait + TransactionTrait>(db: &C, key: &str) -> Result<Attempt> {
    use message_address::Column as A;
    let forms = stored_forms(key);
    let found = Query::select()
        .columns([A::MessageId, A::EmailThreadId])
        .from(message_address::Entity)
        .and_where(Expr::col(A::Address).is_in(forms.clone()))
        .to_owned();
    let mut messages = BTreeSet::new();
    let mut threads = BTreeSet::new();
    for row in db.query_all(&found).await? {
        messages.insert(row.try_get::<i64>("", "message_id")?);
        threads.insert(row.try_get::<i64>("", "email_thread_id")?);
    }
    for (message, thread) in replying_to(db, key).await? {
        messages.insert(message);
        threads.insert(thread);
    }
    let messages: Vec<i64> = messages.into_iter().collect();
    let threads: Vec<i64> = threads.into_iter().collect();
    let mut removed = remove_messages(db, &messages, &threads, true).await?;
    if let Attempt::Done(out) = &mut removed {
        resubject(db, &threads).await?;
        // The refused mail the person sent, whatever its Message-ID.
        out.inbox_rejects += crate::erase::delete_in(
            db,
            inbox_reject::Entity,
            inbox_reject::Column::FromAddress,
            &forms,
        )
        .await?;
    }
    Ok(removed)
}

/// The messages whose `Reply-To` holds the address `key`, as `(message, thread)`: their
/// stored reply headers are searched for its domain, then read.
async fn replying_to<C: ConnectionTrait>(db: &C, key: &str) -> Result<Vec<(i64, i64)>> {
    use protege_core::db::entities::message::{self, Column as M};
    let Some((_, domain)) = key.rsplit_once('@') else {
        return Ok(Vec::new());
    };
    let escaped: String = domain
        .chars()
        .flat_map(|c| match c {
            '%' | '_' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect();
    let select = Query::select()
        .columns([M::Id, M::EmailThreadId, M::ReplyHeaders])
        .from(message::Entity)
        .and_where(Expr::col(M::ReplyHeaders).is_not_null())
        .and_where(
            Expr::expr(Func::lower(Expr::col(M::ReplyHeaders)))
                .like(LikeExpr::new(format!("%{escaped}%")).escape('\\')),
        )
        .to_owned();
    let forms = stored_forms(key);
    let mut out = Vec::new();
    for row in db.query_all(&select).await? {
        let text: String = row.try_get_by_index(2)?;
        let Ok(headers) = serde_json::from_str::<protege_mail::ReplyHeaders>(&text) else {
            continue;
        };
        if headers
            .reply_to
            .iter()
            .any(|a| forms.contains(&unquoted(&address_key(a))))
        {
            out.push((row.try_get_by_index(0)?, row.try_get_by_index(1)?));
        }
    }
    Ok(out)
}

/// Gives each of `threads` that is left the subject of its first message left (without
/// `Re:`/`Fwd:`, as a stored thread's is): the subject it had came from a message now
/// erased, and may name what the person wrote.
async fn resubject<C: ConnectionTrait>(db: &C, threads: &[i64]) -> Result<()> {
    use protege_core::db::entities::{email_thread as t, message as m};
    for chunk in threads.chunks(crate::store::IN_CHUNK) {
        let first = Query::select()
            .columns([m::Column::EmailThreadId, m::Column::Subject])
            .from(m::Entity)
            .and_where(Expr::col(m::Column::EmailThreadId).is_in(chunk.iter().copied()))
            .order_by(m::Column::EmailThreadId, sea_orm::Order::Asc)
            .order_by(m::Column::SentAt, sea_orm::Order::Asc)
            .order_by(m::Column::Id, sea_orm::Order::Asc)
            .to_owned();
        let mut seen = BTreeSet::new();
        for row in db.query_all(&first).await? {
            let thread: i64 = row.try_get("", "email_thread_id")?;
            if !seen.insert(thread) {
                continue;
            }
            let subject: String = row.try_get("", "subject")?;
            let subject = protege_mail::eml::parse::thread_subject(&subject);
            let update = Query::update()
                .table(t::Entity)
                .value(t::Column::Subject, subject)
                .and_where(Expr::col(t::Column::Id).eq(thread))
                .to_owned();
            db.execute(&update).await?;
        }
    }
    Ok(())
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
        assert_eq!(key_of("\"Kim\"@Example.com").unwrap(), "kim@example.com");
        assert_eq!(
            key_of("\"kim lee\"@example.com").unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
        assert_eq!(
            stored_forms("kim@example.com"),
            ["kim@example.com", "\"kim\"@example.com"]
        );
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
                "alice@",
                "`alice@` is not an email address: it has nothing after its `@`",
            ),
            (
                "@example.com",
                "`@example.com` is not an email address: it has nothing before its `@`",
            ),
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
