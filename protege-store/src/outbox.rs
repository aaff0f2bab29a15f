//! The outbox's writes (§18): a reply stored with its message in one transaction, and each
//! change of its state as one conditional update, so two processes never both win.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, Query, SimpleExpr, UpdateStatement};
use sea_orm::{ActiveValue::NotSet, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait};

use protege_core::db::dates;
use protege_core::db::entities::{message, outbox};
use protege_core::db::tx::Tx;
use protege_core::{Email, Error, ErrorKind, Result};

use crate::store;
use protege_mail::eml::parse::thread_subject;

pub use protege_core::db::outbox_state as state;

/// A reply to store: its message, its bytes and where it starts.
#[derive(Debug, Clone)]
pub struct NewReply {
    /// The message it answers (`messages.id`); the reply is stored only while it exists.
    pub trigger: Option<i64>,
    /// The thread it joins; `None` for a new thread (the answer of a scheduled run).
    pub thread: Option<i64>,
    /// The run whose answer it is.
    pub run_id: Option<String>,
    /// The persona that sends it.
    pub persona: String,
    /// The reply as a stored message (outbound).
    pub email: Email,
    /// The bytes to send.
    pub raw: String,
    /// The envelope sender.
    pub envelope_from: String,
    /// The envelope recipients, bare.
    pub recipients: Vec<String>,
    /// Whether it waits for approval (`waiting`) or may leave (`queued`).
    pub waiting: bool,
    /// Why it waits, if it does.
    pub reason: Option<String>,
    /// Now.
    pub now: DateTime<Utc>,
}

/// What [`store_reply`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredReply {
    /// The reply was stored: its outbox row, and its thread.
    Stored(Box<outbox::Model>, i64),
    /// The run had a reply already: outbox row `id`, unchanged.
    Existing(i64),
    /// The trigger is gone (erased meanwhile): nothing was stored.
    TriggerGone,
}

/// Marks `bounced` the sent replies whose Message-IDs are in `returned` (the messages a
/// delivery report returns), with the report's Message-ID as the reason; in `txn`, the
/// transaction that stores the report. Returns how many changed.
pub(crate) async fn mark_bounced<C: ConnectionTrait>(
    txn: &C,
    returned: &[String],
    report: &str,
) -> Result<u64> {
    use outbox::Column as O;
    let replies = Query::select()
        .column(message::Column::Id)
        .from(message::Entity)
        .and_where(Expr::col(message::Column::MessageId).is_in(returned.iter().cloned()))
        .to_owned();
    let update = Query::update()
        .table(outbox::Entity)
        .value(O::State, state::BOUNCED)
        .value(O::Reason, format!("delivery report {report}"))
        .value(O::UpdatedAt, Utc::now())
        .and_where(Expr::col(O::State).eq(state::SENT))
        .and_where(Expr::col(O::MessageId).in_subquery(replies))
        .to_owned();
    let rows = txn
        .execute_raw(dates::statement(txn, &update))
        .await?
        .rows_affected();
    Ok(rows)
}

/// Stores `reply`: its message in its thread and its outbox row, in one transaction under
/// the import lock that first finds the trigger still stored and the run without a reply;
/// the message's Message-ID is claimed before any byte leaves. A run that has a reply
/// already keeps it (composing twice answers the same row).
pub async fn store_reply(db: &DatabaseConnection, reply: &NewReply) -> Result<StoredReply> {
    protege_core::write_transaction!(db, protege_core::db::lock::begin_import(db), |tx| {
        store_reply_in(tx, reply)
    })
}

/// [`store_reply`]'s statements in the transaction `tx`: an error leaves it to be rolled
/// back; an answer other than [`StoredReply::Stored`] wrote nothing.
async fn store_reply_in<W: Tx>(tx: &W, reply: &NewReply) -> Result<StoredReply> {
    use message::Column as M;
    // Whether the trigger is still stored (it may have been erased meanwhile), and whether
    // the reply is dated at or after it.
    let mut not_earlier = None;
    if let Some(trigger) = reply.trigger {
        let select = Query::select()
            .expr(Expr::case(Expr::col(M::SentAt).lte(reply.email.sent_at), 1).finally(0))
            .from(message::Entity)
            .and_where(Expr::col(M::Id).eq(trigger))
            .to_owned();
        tx.select(&select, |row| {
            not_earlier = Some(row.int(0)? == 1);
            Ok(())
        })
        .await?;
        if not_earlier.is_none() {
            return Ok(StoredReply::TriggerGone);
        }
    }
    if let Some(run) = &reply.run_id {
        // Another call composed it first.
        let select = Query::select()
            .column(outbox::Column::Id)
            .from(outbox::Entity)
            .and_where(Expr::col(outbox::Column::RunId).eq(run.as_str()))
            .limit(1)
            .to_owned();
        let mut stored = None;
        tx.select(&select, |row| {
            stored = Some(row.int(0)?);
            Ok(())
        })
        .await?;
        if let Some(id) = stored {
            return Ok(StoredReply::Existing(id));
        }
    }
    // A reply dated at or after its trigger never starts its thread earlier: the thread's
    // start is not touched then.
    let stored = match reply.thread {
        Some(thread) if not_earlier == Some(true) => {
            store::insert_into_thread(tx, thread, &reply.email)
                .await?
                .map(|id| (thread, id))
        }
        thread => {
            let subject = thread_subject(&reply.email.subject);
            store::insert_email(tx, thread, &subject, &reply.email).await?
        }
    };
    let Some((thread, message_row)) = stored else {
        return Err(Error::new(
            ErrorKind::Conflict,
            format!(
                "Message-ID `{}` is stored already: the reply is not stored",
                reply.email.message_id
            ),
        ));
    };
    let json = |list: &[String]| serde_json::to_string(list).unwrap_or_else(|_| "[]".into());
    let mut row = outbox::Model {
        id: 0,
        message_id: message_row,
        run_id: reply.run_id.clone(),
        persona: reply.persona.clone(),
        state: if reply.waiting {
            state::WAITING
        } else {
            state::QUEUED
        }
        .to_owned(),
        reason: reply.reason.clone(),
        held_reason: None,
        envelope_from: reply.envelope_from.clone(),
        recipients: json(&reply.recipients),
        refused_recipients: "[]".to_owned(),
        attempts: 0,
        next_attempt_at: None,
        lease_owner: None,
        lease_until: None,
        smtp_reply: None,
        approved_by: None,
        approved_at: None,
        queued_at: (!reply.waiting).then_some(reply.email.sent_at),
        sent_at: None,
        raw: reply.raw.clone(),
        created_at: reply.now,
        updated_at: reply.now,
    };
    let mut active: outbox::ActiveModel = row.clone().into();
    active.id = NotSet;
    let insert = sea_orm::QueryTrait::into_query(outbox::Entity::insert(active));
    row.id = tx.insert(&insert).await?.ok_or_else(|| {
        Error::from(DbErr::Custom(
            "the reply's outbox row was not inserted".into(),
        ))
    })?;
    Ok(StoredReply::Stored(Box::new(row), thread))
}

/// A change of one outbox row, made only when the row is as [`Change::when`] says.
#[derive(Debug, Clone)]
pub struct Change {
    update: UpdateStatement,
}

impl Change {
    /// A change of row `id` at `now`.
    pub fn of(id: i64, now: DateTime<Utc>) -> Self {
        let mut update = Query::update();
        update
            .table(outbox::Entity)
            .value(outbox::Column::UpdatedAt, now)
            .and_where(Expr::col(outbox::Column::Id).eq(id));
        Self { update }
    }

    /// Sets `column` to `value`.
    pub fn set(mut self, column: outbox::Column, value: impl Into<sea_orm::Value>) -> Self {
        self.update.value(column, value.into());
        self
    }

    /// Sets `column` to the expression `value`.
    pub fn set_expr(mut self, column: outbox::Column, value: SimpleExpr) -> Self {
        self.update.value(column, value);
        self
    }

    /// Only when `condition` holds of the row.
    pub fn when(mut self, condition: SimpleExpr) -> Self {
        self.update.and_where(condition);
        self
    }

    /// Only when the row is in `state`.
    pub fn in_state(self, state: &str) -> Self {
        self.when(Expr::col(outbox::Column::State).eq(state))
    }

    /// Makes the change on the connection `db` (one statement, no transaction around it);
    /// whether the row was as required (and so changed).
    pub async fn apply_on(self, db: &DatabaseConnection) -> Result<bool> {
        Ok(protege_core::db::session::execute(db, &self.update).await? == 1)
    }

    /// Makes the change in `db` (a connection or a transaction); whether the row was as
    /// required (and so changed).
    pub async fn apply<C: ConnectionTrait>(self, db: &C) -> Result<bool> {
        Ok(Tx::execute(db, &self.update).await? == 1)
    }
}

/// Approves the reply whose message is `message_row` in thread `thread`: `change` (which
/// must find the draft still waiting, or nothing is written), the message's `sent_at` (its
/// `Date`, the time it is queued) and, with `text` (an edited draft), its text body and
/// stripped body, in one transaction.
pub async fn edit_reply(
    db: &DatabaseConnection,
    message_row: i64,
    thread: i64,
    text: Option<&str>,
    sent_at: DateTime<Utc>,
    change: Change,
) -> Result<bool> {
    let txn = protege_core::db::lock::begin_import(db).await?;
    if !change.apply(&txn).await? {
        txn.rollback().await?;
        return Ok(false);
    }
    let mut update = Query::update();
    update
        .table(message::Entity)
        .value(message::Column::SentAt, sent_at)
        .and_where(Expr::col(message::Column::Id).eq(message_row));
    if let Some(text) = text {
        update.value(
            message::Column::TextBody,
            protege_mail::without_nul(text).into_owned(),
        );
    }
    txn.execute_raw(dates::statement(&txn, &update)).await?;
    if text.is_some() {
        protege_core::db::strips::restrip(
            &txn,
            &[thread],
            &std::collections::HashSet::from([message_row]),
        )
        .await?;
    }
    txn.commit().await?;
    Ok(true)
}

/// Claims up to `limit` rows that may leave now for `owner` until `until`: queued, due,
/// not held, with no earlier reply of their thread queued or sending; or sending under a
/// lease that ran out. Each claim is a conditional update, so two claimers never hold one
/// row. `persona`: only that persona's rows. Returns the claimed rows' ids.
pub async fn claim(
    db: &DatabaseConnection,
    owner: &str,
    until: DateTime<Utc>,
    now: DateTime<Utc>,
    limit: u64,
    persona: Option<&str>,
) -> Result<Vec<i64>> {
    use outbox::Column as O;
    let candidates = protege_core::db::claimable_outbox(
        db,
        now,
        Ord::max(limit.saturating_mul(4), limit),
        persona,
    )
    .await?;
    let mut claimed = Vec::new();
    for id in candidates {
        if claimed.len() as u64 >= limit {
            break;
        }
        let change = Change::of(id, now)
            .set(O::State, state::SENDING)
            .set(O::LeaseOwner, owner)
            .set(O::LeaseUntil, until)
            .when(protege_core::db::may_claim(now));
        if change.apply_on(db).await? {
            claimed.push(id);
        }
    }
    Ok(claimed)
}

/// The condition that `owner` holds the lease of the row at `now`.
pub fn leased_by(owner: &str, now: DateTime<Utc>) -> SimpleExpr {
    use outbox::Column as O;
    Expr::col(O::State)
        .eq(state::SENDING)
        .and(Expr::col(O::LeaseOwner).eq(owner))
        .and(Expr::col(O::LeaseUntil).gte(now))
}

/// Holds (`reason` set) or releases (`None`) the queued rows no person approved, of
/// `persona` or of every persona; returns how many changed.
pub async fn hold(
    db: &DatabaseConnection,
    persona: Option<&str>,
    reason: Option<&str>,
    now: DateTime<Utc>,
) -> Result<u64> {
    use outbox::Column as O;
    let mut update = Query::update();
    update
        .table(outbox::Entity)
        .value(O::HeldReason, reason.map(str::to_owned))
        .value(O::UpdatedAt, now)
        .and_where(Expr::col(O::State).eq(state::QUEUED))
        .and_where(Expr::col(O::ApprovedBy).is_null());
    match reason {
        Some(_) => update.and_where(Expr::col(O::HeldReason).is_null()),
        None => update.and_where(Expr::col(O::HeldReason).is_not_null()),
    };
    if let Some(persona) = persona {
        update.and_where(Expr::col(O::Persona).eq(persona));
    }
    Ok(db
        .execute_raw(dates::statement(db, &update))
        .await?
        .rows_affected())
}

/// The held reason of the rows an operator held (`protege outbox hold`): only a release
/// lets them go.
pub const OPERATOR_HOLD: &str = "held by an operator";

/// Lets go the queued rows of `persona` that the delivery held because of its settings
/// (`reply = "off"` or `"draft"`, the persona gone), now that they allow sending; an
/// operator's hold stays. How many were let go.
pub async fn release_setting_holds(
    db: &DatabaseConnection,
    persona: &str,
    now: DateTime<Utc>,
) -> Result<u64> {
    use outbox::Column as O;
    let mut update = Query::update();
    update
        .table(outbox::Entity)
        .value(O::HeldReason, Option::<String>::None)
        .value(O::UpdatedAt, now)
        .and_where(Expr::col(O::Persona).eq(persona))
        .and_where(Expr::col(O::State).eq(state::QUEUED))
        .and_where(Expr::col(O::HeldReason).is_not_null())
        .and_where(Expr::col(O::HeldReason).ne(OPERATOR_HOLD));
    protege_core::db::session::execute(db, &update).await
}

/// Marks row `id` `sent` with the server's `reply`, when `owner` holds its lease at `now`;
/// whether it did.
pub async fn mark_sent(
    db: &DatabaseConnection,
    id: i64,
    owner: &str,
    reply: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    use outbox::Column as O;
    Change::of(id, now)
        .set(O::State, state::SENT)
        .set(O::SentAt, now)
        .set(O::SmtpReply, protege_mail::one_line(reply).into_owned())
        .set(O::LeaseOwner, Option::<String>::None)
        .set(O::LeaseUntil, Option::<DateTime<Utc>>::None)
        .set_expr(O::Attempts, Expr::col(O::Attempts).add(1))
        .when(leased_by(owner, now))
        .apply_on(db)
        .await
}

/// Records a failed attempt of row `id` with the server's `reply` (or the error), when
/// `owner` holds its lease at `now`: queued again for `retry_at`, or `failed` without it.
/// `refused`: recipients a server refused for good, with its reply, recorded and removed
/// from the envelope (`recipients`: those left). Whether it did.
pub async fn mark_failed(
    db: &DatabaseConnection,
    id: i64,
    owner: &str,
    reply: &str,
    retry_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<bool> {
    use outbox::Column as O;
    let reply = protege_mail::one_line(reply).into_owned();
    let change = Change::of(id, now)
        .set(O::SmtpReply, reply.clone())
        .set(O::LeaseOwner, Option::<String>::None)
        .set(O::LeaseUntil, Option::<DateTime<Utc>>::None)
        .set_expr(O::Attempts, Expr::col(O::Attempts).add(1))
        .when(leased_by(owner, now));
    let change = match retry_at {
        Some(at) => change
            .set(O::State, state::QUEUED)
            .set(O::NextAttemptAt, at),
        None => change.set(O::State, state::FAILED).set(O::Reason, reply),
    };
    change.apply_on(db).await
}

/// Records that the recipients `refused` (with the server's replies) were refused for good,
/// leaving `left` in the envelope, when `owner` holds the lease of row `id` at `now`.
pub async fn drop_recipients(
    db: &DatabaseConnection,
    id: i64,
    owner: &str,
    left: &[String],
    refused: &serde_json::Value,
    now: DateTime<Utc>,
) -> Result<bool> {
    use outbox::Column as O;
    Change::of(id, now)
        .set(
            O::Recipients,
            serde_json::to_string(left).unwrap_or_else(|_| "[]".into()),
        )
        .set(O::RefusedRecipients, refused.to_string())
        .when(leased_by(owner, now))
        .apply_on(db)
        .await
}

/// Renews `owner`'s lease of row `id` until `until`; whether it still held it at `now`.
pub async fn renew_lease(
    db: &DatabaseConnection,
    id: i64,
    owner: &str,
    until: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<bool> {
    Change::of(id, now)
        .set(outbox::Column::LeaseUntil, until)
        .when(leased_by(owner, now))
        .apply_on(db)
        .await
}

/// Returns row `id`, claimed by `owner`, to `queued` with `reason` as the held reason
/// (`None`: not held), without counting an attempt: the persona forbids sending now.
pub async fn unclaim(
    db: &DatabaseConnection,
    id: i64,
    owner: &str,
    held: Option<&str>,
    now: DateTime<Utc>,
) -> Result<bool> {
    use outbox::Column as O;
    Change::of(id, now)
        .set(O::State, state::QUEUED)
        .set(O::HeldReason, held.map(str::to_owned))
        .set(O::LeaseOwner, Option::<String>::None)
        .set(O::LeaseUntil, Option::<DateTime<Utc>>::None)
        .when(leased_by(owner, now))
        .apply_on(db)
        .await
}

/// How long after a failed attempt (the row's `attempts` before it) the next one is due:
/// one minute, doubling with each attempt, at most an hour.
pub fn retry_after(attempts: i32) -> chrono::Duration {
    let doublings = u32::try_from(attempts.clamp(0, 6)).unwrap_or(0);
    chrono::Duration::seconds(Ord::min(60 * (1i64 << doublings), 3600))
}
