//! Mail in over IMAP (§19), written: the state of each folder the agent reads
//! (`inbox_state`: its lease, `UIDVALIDITY`, the highest UID stored, the UID being stored
//! and how often its storing began) and the messages refused for what they are
//! (`inbox_rejects`). Every write after the claim is conditional on the caller's lease, so a
//! process that lost the folder to another changes nothing.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Asterisk, Expr, ExprTrait, Query, UpdateStatement};
use sea_orm::{ActiveValue::NotSet, ConnectionTrait, DatabaseConnection, FromQueryResult, Set};
use sea_orm::{EntityTrait, QueryTrait};

use protege_core::Result;
use protege_core::db::dates;
use protege_core::db::entities::{inbox_reject, inbox_state};

use crate::jobs::changed;
use crate::slots::insert_or_skip;

/// A message refused for what it is, as [`reject_message`] records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// The folder's `UIDVALIDITY`.
    pub uid_validity: i64,
    /// The message's UID.
    pub uid: i64,
    /// Its `Message-ID` header, when one was read.
    pub message_id: Option<String>,
    /// Its bare From address, when one was read.
    pub from_address: Option<String>,
    /// Why it was refused.
    pub reason: String,
}

/// The state of folder `mailbox`, when it was ever claimed.
pub async fn inbox_state<C: ConnectionTrait>(
    db: &C,
    mailbox: &str,
) -> Result<Option<inbox_state::Model>> {
    let select = Query::select()
        .column(Asterisk)
        .from(inbox_state::Entity)
        .and_where(Expr::col(inbox_state::Column::Mailbox).eq(mailbox))
        .to_owned();
    let row = db.query_one_raw(dates::statement(db, &select)).await?;
    Ok(match row {
        Some(row) => Some(inbox_state::Model::from_query_result(&row, "")?),
        None => None,
    })
}

/// Claims folder `mailbox` for `owner` until `until`: its row is made on the first claim;
/// the claim succeeds when no other process holds a live lease (or `owner` holds it).
/// Returns the folder's state, or `None` when another process holds it.
pub async fn claim_inbox(
    db: &DatabaseConnection,
    mailbox: &str,
    persona: &str,
    owner: &str,
    until: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<Option<inbox_state::Model>> {
    use inbox_state::Column as S;
    dates::check("the clock", &now)?;
    dates::check("the lease's end", &until)?;
    if inbox_state(db, mailbox).await?.is_none() {
        let row = inbox_state::ActiveModel {
            id: NotSet,
            mailbox: Set(mailbox.to_owned()),
            persona: Set(persona.to_owned()),
            uid_validity: Set(None),
            highest_uid: Set(0),
            last_sync_at: Set(None),
            pending_uid: Set(None),
            pending_attempts: Set(0),
            lease_owner: Set(None),
            lease_until: Set(None),
            updated_at: Set(now),
        };
        // Another process may make it first: the unique key keeps one row.
        insert_or_skip(db, inbox_state::Entity::insert(row).into_query()).await?;
    }
    let update = Query::update()
        .table(inbox_state::Entity)
        .value(S::LeaseOwner, owner)
        .value(S::LeaseUntil, until)
        .value(S::Persona, persona)
        .value(S::UpdatedAt, now)
        .and_where(Expr::col(S::Mailbox).eq(mailbox))
        .and_where(
            Expr::col(S::LeaseOwner)
                .is_null()
                .or(Expr::col(S::LeaseUntil).lt(now))
                .or(Expr::col(S::LeaseOwner).eq(owner)),
        )
        .to_owned();
    if !changed(db, &update).await? {
        return Ok(None);
    }
    inbox_state(db, mailbox).await
}

/// Renews `owner`'s lease of `mailbox` until `until`; false when it was lost (the session
/// must stop at once).
pub async fn renew_inbox(
    db: &DatabaseConnection,
    mailbox: &str,
    owner: &str,
    until: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<bool> {
    let mut update = leased(mailbox, owner, now);
    update.value(inbox_state::Column::LeaseUntil, until);
    changed(db, &update).await
}

/// Gives up `owner`'s lease of `mailbox` (another process may take the folder at once).
pub async fn release_inbox(
    db: &DatabaseConnection,
    mailbox: &str,
    owner: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    let mut update = leased(mailbox, owner, now);
    update
        .value(inbox_state::Column::LeaseOwner, Option::<String>::None)
        .value(
            inbox_state::Column::LeaseUntil,
            Option::<DateTime<Utc>>::None,
        );
    changed(db, &update).await
}

/// Starts reading `mailbox` afresh at `uid_validity`: the first sync, or a changed
/// `UIDVALIDITY`. The highest UID becomes `highest_uid` (the folder's `UIDNEXT` − 1 on a
/// first sync, 0 when a changed validity has every message re-read).
pub async fn reset_inbox(
    db: &DatabaseConnection,
    mailbox: &str,
    owner: &str,
    uid_validity: i64,
    highest_uid: i64,
    now: DateTime<Utc>,
) -> Result<bool> {
    use inbox_state::Column as S;
    let mut update = leased(mailbox, owner, now);
    update
        .value(S::UidValidity, uid_validity)
        .value(S::HighestUid, highest_uid)
        .value(S::PendingUid, Option::<i64>::None)
        .value(S::PendingAttempts, 0);
    changed(db, &update).await
}

/// Records that storing `uid` of `mailbox` begins; how many times it began (the first time
/// 1): a UID that began three times and never ended crashed the process each time.
pub async fn begin_storing(
    db: &DatabaseConnection,
    mailbox: &str,
    owner: &str,
    uid: i64,
    now: DateTime<Utc>,
) -> Result<Option<i32>> {
    use inbox_state::Column as S;
    let Some(state) = inbox_state(db, mailbox).await? else {
        return Ok(None);
    };
    let attempts = if state.pending_uid == Some(uid) {
        state.pending_attempts + 1
    } else {
        1
    };
    let mut update = leased(mailbox, owner, now);
    update
        .value(S::PendingUid, uid)
        .value(S::PendingAttempts, attempts);
    Ok(changed(db, &update).await?.then_some(attempts))
}

/// Raises the highest UID of `mailbox` to `uid` (never lowers it) and ends the storing of
/// `uid`; false when the lease was lost.
pub async fn raise_highest_uid(
    db: &DatabaseConnection,
    mailbox: &str,
    owner: &str,
    uid: i64,
    now: DateTime<Utc>,
) -> Result<bool> {
    use inbox_state::Column as S;
    let mut update = leased(mailbox, owner, now);
    update
        .value(
            S::HighestUid,
            Expr::case(Expr::col(S::HighestUid).lt(uid), uid).finally(Expr::col(S::HighestUid)),
        )
        .value(S::PendingUid, Option::<i64>::None)
        .value(S::PendingAttempts, 0);
    changed(db, &update).await
}

/// Records that a sync which began at `began` read `mailbox` to its end (at `now`): mail
/// the server received before `began` has been read.
pub async fn finish_sync(
    db: &DatabaseConnection,
    mailbox: &str,
    owner: &str,
    began: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<bool> {
    let mut update = leased(mailbox, owner, now);
    update.value(inbox_state::Column::LastSyncAt, began);
    changed(db, &update).await
}

/// Records a message of `mailbox` refused for what it is (once per folder, validity and
/// UID); false when it was recorded before.
pub async fn reject_message(
    db: &DatabaseConnection,
    mailbox: &str,
    rejected: &Rejected,
    now: DateTime<Utc>,
) -> Result<bool> {
    dates::check("the clock", &now)?;
    let row = inbox_reject::ActiveModel {
        id: NotSet,
        mailbox: Set(mailbox.to_owned()),
        uid: Set(rejected.uid),
        uid_validity: Set(rejected.uid_validity),
        message_id: Set(rejected.message_id.clone()),
        from_address: Set(rejected.from_address.clone()),
        reason: Set(rejected.reason.clone()),
        created_at: Set(now),
    };
    Ok(
        insert_or_skip(db, inbox_reject::Entity::insert(row).into_query())
            .await?
            .is_some(),
    )
}

/// The messages of `mailbox` refused so far, oldest first.
pub async fn inbox_rejects<C: ConnectionTrait>(
    db: &C,
    mailbox: &str,
) -> Result<Vec<inbox_reject::Model>> {
    let select = Query::select()
        .column(Asterisk)
        .from(inbox_reject::Entity)
        .and_where(Expr::col(inbox_reject::Column::Mailbox).eq(mailbox))
        .order_by(inbox_reject::Column::Id, sea_orm::Order::Asc)
        .to_owned();
    let rows = db.query_all_raw(dates::statement(db, &select)).await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        out.push(inbox_reject::Model::from_query_result(&row, "")?);
    }
    Ok(out)
}

/// An update of `mailbox`'s row, conditional on `owner`'s live lease.
fn leased(mailbox: &str, owner: &str, now: DateTime<Utc>) -> UpdateStatement {
    use inbox_state::Column as S;
    Query::update()
        .table(inbox_state::Entity)
        .value(S::UpdatedAt, now)
        .and_where(Expr::col(S::Mailbox).eq(mailbox))
        .and_where(Expr::col(S::LeaseOwner).eq(owner))
        .and_where(Expr::col(S::LeaseUntil).gte(now))
        .to_owned()
}
