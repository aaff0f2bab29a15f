//! The writes of a batch: threads, messages and attachments with multi-row inserts, each
//! statement bounded in rows and bytes (well under every backend's limits on bound
//! parameters and packet size).
//!
//! The rows are built by the same functions as the one-message path (`store/mod.rs`), so
//! they hold the same values; rows are inserted in batch order, so their ids increase in
//! that order as they do one by one. PostgreSQL and SQLite give the new ids back with
//! `RETURNING`; MySQL/MariaDB has no `RETURNING`, so there threads and messages are
//! inserted one row at a time (their ids are needed) and only attachments many at a time.

use std::ops::Range;

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{OnConflict, Query};
use sea_orm::{ConnectionTrait, DbBackend, EntityTrait, QueryTrait};

use super::{attachment_row, check_dates, message_row, mysql_insert, thread_row};
use protege_core::db::entities::{attachment, email_thread, message, message_address};
use protege_core::{Error, ErrorKind, Result};
use protege_mail::Email;

/// The most rows one statement inserts.
const MAX_ROWS: usize = 1024;

/// The most bytes of text and data one statement carries (a single larger row goes alone).
const MAX_BYTES: usize = 4 << 20;

/// Roughly how many bytes a message row carries (its attachments apart).
fn row_weight(row: &Email) -> usize {
    let text = |t: &Option<String>| t.as_ref().map_or(0, String::len);
    256 + row.subject.len()
        + row.from.len()
        + row.to.iter().chain(&row.cc).map(String::len).sum::<usize>()
        + text(&row.text_body)
        // The HTML body, and its readable text stored beside it (at most about as long).
        + 2 * text(&row.html_body)
        + text(&row.in_reply_to)
}

/// Splits `0..weights.len()` into consecutive ranges of at most [`MAX_ROWS`] items and
/// [`MAX_BYTES`] (a range holds at least one item).
fn ranges(weights: impl Iterator<Item = usize>) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut bytes, mut end) = (0, 0, 0);
    for weight in weights {
        if end > start && (end - start >= MAX_ROWS || bytes + weight > MAX_BYTES) {
            out.push(start..end);
            (start, bytes) = (end, 0);
        }
        bytes += weight;
        end += 1;
    }
    if end > start {
        out.push(start..end);
    }
    out
}

/// The error for a database that answered an insert with fewer ids than rows.
fn missing_ids(table: &str) -> Error {
    Error::new(
        ErrorKind::Database,
        format!("database error: the insert into `{table}` returned fewer ids than rows"),
    )
}

/// Inserts the threads `(subject, created_at)` in order; returns their ids in order.
pub(crate) async fn insert_threads<C: ConnectionTrait>(
    db: &C,
    rows: &[(&str, DateTime<Utc>)],
) -> Result<Vec<i64>> {
    for (_, created_at) in rows {
        protege_core::db::dates::check("the start of the thread", created_at)?;
    }
    let mut ids = Vec::with_capacity(rows.len());
    if db.get_database_backend() == DbBackend::MySql {
        for &(subject, created_at) in rows {
            let insert = email_thread::Entity::insert(thread_row(subject, created_at));
            ids.push(mysql_insert(db, &insert.into_query()).await?);
        }
        return Ok(ids);
    }
    for range in ranges(rows.iter().map(|(subject, _)| 64 + subject.len())) {
        let chunk = &rows[range];
        let mut insert = email_thread::Entity::insert_many(
            chunk
                .iter()
                .map(|&(subject, created_at)| thread_row(subject, created_at)),
        )
        .into_query();
        insert.returning_col(email_thread::Column::Id);
        let mut got = Vec::with_capacity(chunk.len());
        for row in db.query_all(&insert).await? {
            got.push(row.try_get::<i64>("", "id")?);
        }
        if got.len() != chunk.len() {
            return Err(missing_ids("email_threads"));
        }
        // The rows took increasing ids in statement order; RETURNING lists them in any order.
        got.sort_unstable();
        ids.extend(got);
    }
    Ok(ids)
}

/// Inserts the messages `(thread id, message)` in order, skipping none; returns their ids
/// in order, or `None` when a Message-ID was stored meanwhile by another writer (on
/// PostgreSQL and SQLite: insert-or-skip; on MySQL/MariaDB the duplicate is an error).
pub(crate) async fn insert_messages<C: ConnectionTrait>(
    db: &C,
    rows: &[(i64, &Email)],
) -> Result<Option<Vec<i64>>> {
    for (_, msg) in rows {
        check_dates(msg)?;
    }
    let mut ids = Vec::with_capacity(rows.len());
    if db.get_database_backend() == DbBackend::MySql {
        for &(thread, msg) in rows {
            let insert = message::Entity::insert(message_row(thread, msg));
            ids.push(mysql_insert(db, &insert.into_query()).await?);
        }
        return Ok(Some(ids));
    }
    for range in ranges(rows.iter().map(|(_, msg)| row_weight(msg))) {
        let chunk = &rows[range];
        let mut insert = message::Entity::insert_many(
            chunk.iter().map(|&(thread, msg)| message_row(thread, msg)),
        )
        .into_query();
        insert
            .on_conflict(
                OnConflict::column(message::Column::MessageId)
                    .do_nothing()
                    .to_owned(),
            )
            .returning(
                Query::returning().columns([message::Column::Id, message::Column::MessageId]),
            );
        let mut got = std::collections::HashMap::with_capacity(chunk.len());
        for row in db.query_all(&insert).await? {
            got.insert(
                row.try_get::<String>("", "message_id")?,
                row.try_get::<i64>("", "id")?,
            );
        }
        if got.len() != chunk.len() {
            return Ok(None);
        }
        for (_, msg) in chunk {
            // Message-IDs are stored without NUL; an eml Message-ID never holds one.
            let stored = protege_mail::without_nul(&msg.message_id);
            match got.get(stored.as_ref()) {
                Some(&id) => ids.push(id),
                None => return Err(missing_ids("messages")),
            }
        }
    }
    Ok(Some(ids))
}

/// Inserts the attachments of the messages `rows`, whose ids are `message_ids`, in order.
pub(crate) async fn insert_attachments<C: ConnectionTrait>(
    db: &C,
    rows: &[(i64, &Email)],
    message_ids: &[i64],
) -> Result<()> {
    let all: Vec<attachment::ActiveModel> = rows
        .iter()
        .zip(message_ids)
        .flat_map(|((_, msg), &id)| msg.attachments.iter().map(move |a| attachment_row(id, a)))
        .collect();
    if all.is_empty() {
        return Ok(());
    }
    let weights: Vec<usize> = rows
        .iter()
        .flat_map(|(_, msg)| &msg.attachments)
        .map(|a| a.data.as_ref().map_or(0, Vec::len) + a.filename.len() + 64)
        .collect();
    let mut all = all.into_iter();
    for range in ranges(weights.into_iter()) {
        let chunk: Vec<attachment::ActiveModel> = all.by_ref().take(range.len()).collect();
        db.execute(&attachment::Entity::insert_many(chunk).into_query())
            .await?;
    }
    Ok(())
}

/// The `message_addresses` rows of message `id` of thread `thread`.
pub(crate) fn address_rows(thread: i64, id: i64, msg: &Email) -> Vec<message_address::ActiveModel> {
    use sea_orm::ActiveValue::{NotSet, Set};
    message_address::keys(msg.direction, &msg.from, &msg.to, &msg.cc)
        .into_iter()
        .map(|(address, participant)| message_address::ActiveModel {
            id: NotSet,
            message_id: Set(id),
            email_thread_id: Set(thread),
            address: Set(address),
            participant: Set(participant),
        })
        .collect()
}

/// Inserts the `message_addresses` rows of the messages `rows`, whose ids are
/// `message_ids`, in order, [`MAX_ROWS`] rows per statement.
pub(crate) async fn insert_addresses<C: ConnectionTrait>(
    db: &C,
    rows: &[(i64, &Email)],
    message_ids: &[i64],
) -> Result<()> {
    let all: Vec<message_address::ActiveModel> = rows
        .iter()
        .zip(message_ids)
        .flat_map(|(&(thread, msg), &id)| address_rows(thread, id, msg))
        .collect();
    let mut all = all.into_iter().peekable();
    while all.peek().is_some() {
        let chunk: Vec<message_address::ActiveModel> = all.by_ref().take(MAX_ROWS).collect();
        db.execute(&message_address::Entity::insert_many(chunk).into_query())
            .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_bound_rows_and_bytes() {
        assert_eq!(ranges([1, 2, 3].into_iter()), vec![0..3]);
        assert_eq!(ranges(std::iter::empty()), Vec::<Range<usize>>::new());
        assert_eq!(
            ranges([MAX_BYTES, 1, MAX_BYTES - 1, 1].into_iter()),
            vec![0..1, 1..3, 3..4]
        );
        assert_eq!(
            ranges(std::iter::repeat_n(1, MAX_ROWS * 2 + 1)),
            vec![
                0..MAX_ROWS,
                MAX_ROWS..2 * MAX_ROWS,
                2 * MAX_ROWS..2 * MAX_ROWS + 1
            ]
        );
    }
}
