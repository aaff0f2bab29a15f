//! Retention (§15): dropping the threads whose newest message is older than a duration,
//! with everything hanging on them, in one transaction.
//!
//! A thread's age is the `sent_at` of its newest message, the column its history is
//! ordered by: a thread where an old message got a recent reply is kept whole. The
//! threads are read once (`GROUP BY` on the `(email_thread_id, sent_at, id)` index), then
//! their messages, and both go through the deletes [`forget`](crate::forget) uses. A
//! thread without any message (protege never leaves one; only a write from outside makes
//! it) has no age and is left alone. Scheduled runs (no message) are never touched.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use sea_orm::sea_query::{Expr, Func, Query};
use sea_orm::{ConnectionTrait, DatabaseConnection, ExprTrait, TransactionTrait};

use protege_core::db::dates;
use protege_core::db::entities::message;
use protege_core::{Error, ErrorKind, Result};
use protege_mail::in_range;

use crate::erase::{Attempt, Removed, finish, remove_messages, waiting_for_sending};
use crate::store::IN_CHUNK;

/// What [`prune`] removed (or, for a dry run, would remove): rows per table.
pub type Pruned = Removed;

/// The longest duration [`parse_duration`] accepts, in days: about 10,000 years, more than
/// the span of the dates the database stores (1970 to 9999).
pub const MAX_DURATION_DAYS: u64 = 3_652_500;

/// The usage line of the error sentences.
const EXAMPLES: &str = "such as `365d`, `12w` or `48h`";

/// Parses a retention duration: a whole number above zero and a unit, `h` (hours), `d`
/// (days) or `w` (weeks), e.g. `365d` or `12w`; surrounding spaces are ignored. Anything
/// else (empty, zero, negative, no unit, another unit, over [`MAX_DURATION_DAYS`]) is an
/// [`ErrorKind::InvalidInput`] error of one sentence.
///
/// ```
/// use std::time::Duration;
/// assert_eq!(protege::db::parse_duration("12w").unwrap(), Duration::from_secs(12 * 7 * 86_400));
/// assert_eq!(
///     protege::db::parse_duration("0d").unwrap_err().to_string(),
///     "`0d` is zero: the duration must be above zero, such as `365d`, `12w` or `48h`"
/// );
/// ```
pub fn parse_duration(text: &str) -> Result<Duration> {
    let invalid = |why: String| Err(Error::new(ErrorKind::InvalidInput, why));
    let text = text.trim();
    if text.is_empty() {
        return invalid(format!(
            "the duration is empty: write a number and a unit, {EXAMPLES}"
        ));
    }
    if text.starts_with('-') {
        return invalid(format!(
            "`{text}` is negative: the duration must be above zero, {EXAMPLES}"
        ));
    }
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    if digits.is_empty() || (unit.chars().count() > 1) {
        return invalid(format!(
            "`{text}` is not a duration: write a whole number and a unit, {EXAMPLES}"
        ));
    }
    let unit_secs: u64 = match unit {
        "h" => 3_600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        "" => {
            return invalid(format!(
                "`{text}` has no unit: write `{text}h` (hours), `{text}d` (days) or `{text}w` (weeks)"
            ));
        }
        other => {
            return invalid(format!(
                "`{text}` has an unknown unit `{other}`: use `h` (hours), `d` (days) or `w` (weeks)"
            ));
        }
    };
    let max_secs = MAX_DURATION_DAYS * 86_400;
    let secs = digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit_secs))
        .filter(|&secs| secs <= max_secs);
    match secs {
        Some(0) => invalid(format!(
            "`{text}` is zero: the duration must be above zero, {EXAMPLES}"
        )),
        Some(secs) => Ok(Duration::from_secs(secs)),
        None => invalid(format!(
            "`{text}` is too long: the longest duration is {MAX_DURATION_DAYS}d (about 10,000 years)"
        )),
    }
}

/// Drops every thread whose newest message was sent before `now - older_than` (strictly:
/// a thread whose newest message is exactly that old is kept), with its messages and their
/// attachments, tool uses, runs and those runs' rounds, `message_addresses` rows, agent
/// jobs and outbox rows, and the thread's summaries; the scheduled runs started, the slots
/// fired and the `inbox_rejects` rows recorded before the cut-off; in one transaction, which takes the import lock (§6) so no import
/// interleaves.
///
/// With `dry_run` the same deletes run and the transaction is rolled back: the counts are
/// those a real run would give at that moment, and nothing changes. A zero `older_than`,
/// or a `now` outside the years the database stores, is an [`ErrorKind::InvalidInput`]
/// error; a cut-off before 1970 removes nothing.
pub async fn prune(
    db: &DatabaseConnection,
    older_than: Duration,
    now: DateTime<Utc>,
    dry_run: bool,
) -> Result<Pruned> {
    if older_than.is_zero() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("the duration must be above zero, {EXAMPLES}"),
        ));
    }
    dates::check("the time of the prune", &now)?;
    let cutoff = TimeDelta::from_std(older_than)
        .ok()
        .and_then(|age| now.checked_sub_signed(age))
        // Before 1970 no stored message is older.
        .filter(in_range);
    waiting_for_sending(|| async {
        let txn = protege_core::db::lock::begin_import(db).await?;
        let outcome = match cutoff {
            Some(cutoff) => drop_older(&txn, cutoff).await,
            None => Ok(Attempt::Done(Removed::default())),
        };
        finish(txn, outcome, dry_run).await
    })
    .await
}

/// The deletes of [`prune`], in `db` (a transaction): the threads whose newest message was
/// sent before `cutoff`.
async fn drop_older<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    cutoff: DateTime<Utc>,
) -> Result<Attempt> {
    use message::Column as M;
    // The cut-off is bound as a `DATETIME` on MySQL/MariaDB (see `db::dates`).
    let old = Query::select()
        .column(M::EmailThreadId)
        .from(message::Entity)
        .group_by_col(M::EmailThreadId)
        .and_having(Expr::expr(Func::max(Expr::col(M::SentAt))).lt(cutoff))
        .to_owned();
    let mut threads = Vec::new();
    for row in db.query_all_raw(dates::statement(db, &old)).await? {
        threads.push(row.try_get::<i64>("", "email_thread_id")?);
    }
    threads.sort_unstable();
    let mut messages = Vec::new();
    for chunk in threads.chunks(IN_CHUNK) {
        let of_chunk = Query::select()
            .column(M::Id)
            .from(message::Entity)
            .and_where(Expr::col(M::EmailThreadId).is_in(chunk.iter().copied()))
            .to_owned();
        for row in db.query_all(&of_chunk).await? {
            messages.push(row.try_get::<i64>("", "id")?);
        }
    }
    messages.sort_unstable();
    let mut removed = remove_messages(db, &messages, &threads, false).await?;
    if let Attempt::Done(out) = &mut removed {
        drop_older_agent_rows(db, cutoff, out).await?;
    }
    Ok(removed)
}

/// The rest of [`prune`]'s deletes: the scheduled runs started before `cutoff` (with their
/// rounds, jobs and slots), the slots that fired before it (with their jobs), and the
/// `inbox_rejects` rows recorded before it.
async fn drop_older_agent_rows<C: ConnectionTrait>(
    db: &C,
    cutoff: DateTime<Utc>,
    out: &mut Removed,
) -> Result<()> {
    use protege_core::db::entities::{agent_job, inbox_reject, responsibility_slot, run};
    let old_runs = Query::select()
        .column(run::Column::Id)
        .from(run::Entity)
        .and_where(Expr::col(run::Column::MessageId).is_null())
        .and_where(Expr::col(run::Column::StartedAt).lt(cutoff))
        .to_owned();
    let mut runs: Vec<String> = Vec::new();
    for row in db.query_all_raw(dates::statement(db, &old_runs)).await? {
        runs.push(row.try_get_by_index(0)?);
    }
    crate::erase::remove_runs(db, &runs, out).await?;
    let old_slots = Query::select()
        .column(responsibility_slot::Column::Id)
        .from(responsibility_slot::Entity)
        .and_where(Expr::col(responsibility_slot::Column::SlotAt).lt(cutoff))
        .to_owned();
    let mut slots: Vec<i64> = Vec::new();
    for row in db.query_all_raw(dates::statement(db, &old_slots)).await? {
        slots.push(row.try_get_by_index(0)?);
    }
    for chunk in slots.chunks(IN_CHUNK) {
        // A job whose run was not removed above (none started, or one of a message).
        out.agent_jobs +=
            crate::erase::delete_in(db, agent_job::Entity, agent_job::Column::SlotId, chunk)
                .await?;
    }
    crate::erase::remove_slots(db, &slots, out).await?;
    let old_rejects = Query::delete()
        .from_table(inbox_reject::Entity)
        .and_where(Expr::col(inbox_reject::Column::CreatedAt).lt(cutoff))
        .to_owned();
    out.inbox_rejects += db
        .execute_raw(dates::statement(db, &old_rejects))
        .await?
        .rows_affected();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hours_days_and_weeks() {
        for (text, secs) in [
            ("48h", 48 * 3_600),
            ("365d", 365 * 86_400),
            ("12w", 12 * 7 * 86_400),
            (" 1d ", 86_400),
            ("007d", 7 * 86_400),
            ("3652500d", 3_652_500 * 86_400),
        ] {
            assert_eq!(
                parse_duration(text).unwrap(),
                Duration::from_secs(secs),
                "{text:?}"
            );
        }
    }

    #[test]
    fn what_is_no_duration_is_invalid_input_in_one_sentence() {
        for (input, message) in [
            (
                "",
                "the duration is empty: write a number and a unit, such as `365d`, `12w` or `48h`",
            ),
            (
                "  ",
                "the duration is empty: write a number and a unit, such as `365d`, `12w` or `48h`",
            ),
            (
                "0d",
                "`0d` is zero: the duration must be above zero, such as `365d`, `12w` or `48h`",
            ),
            (
                "0w",
                "`0w` is zero: the duration must be above zero, such as `365d`, `12w` or `48h`",
            ),
            (
                "-3d",
                "`-3d` is negative: the duration must be above zero, such as `365d`, `12w` or `48h`",
            ),
            (
                "12",
                "`12` has no unit: write `12h` (hours), `12d` (days) or `12w` (weeks)",
            ),
            (
                "12x",
                "`12x` has an unknown unit `x`: use `h` (hours), `d` (days) or `w` (weeks)",
            ),
            (
                "12D",
                "`12D` has an unknown unit `D`: use `h` (hours), `d` (days) or `w` (weeks)",
            ),
            (
                "d",
                "`d` is not a duration: write a whole number and a unit, such as `365d`, `12w` or `48h`",
            ),
            (
                "1.5d",
                "`1.5d` is not a duration: write a whole number and a unit, such as `365d`, `12w` or `48h`",
            ),
            (
                "+3d",
                "`+3d` is not a duration: write a whole number and a unit, such as `365d`, `12w` or `48h`",
            ),
            (
                "3 d",
                "`3 d` is not a duration: write a whole number and a unit, such as `365d`, `12w` or `48h`",
            ),
            (
                "3652501d",
                "`3652501d` is too long: the longest duration is 3652500d (about 10,000 years)",
            ),
            (
                "99999999999999999999d",
                "`99999999999999999999d` is too long: the longest duration is 3652500d (about 10,000 years)",
            ),
            (
                "3000000000000000000w",
                "`3000000000000000000w` is too long: the longest duration is 3652500d (about 10,000 years)",
            ),
        ] {
            let err = parse_duration(input).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{input:?}");
            assert_eq!(err.to_string(), message, "{input:?}");
        }
    }
}
