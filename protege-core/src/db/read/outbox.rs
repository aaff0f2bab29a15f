//! The outbox (§18), read: one row, a run's reply, a listing, and whether an address ever
//! received a persona's mail (`approval = "first_contact"`).

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Alias, Expr, ExprTrait, JoinType, Order, Query, SimpleExpr};
use sea_orm::{ConnectionTrait, DatabaseConnection, IdenStatic};

use super::rows::{self, columns};
use crate::db::entities::{message, message_address, outbox};
use crate::db::session::Session;
use crate::error::Result;

/// The states of an outbox row.
pub mod outbox_state {
    /// Waiting for a person's approval.
    pub const WAITING: &str = "waiting";
    /// Waiting to be delivered.
    pub const QUEUED: &str = "queued";
    /// Claimed by a worker or an application under a lease.
    pub const SENDING: &str = "sending";
    /// Accepted by the SMTP server.
    pub const SENT: &str = "sent";
    /// Refused for good (a 5xx, or 4xx until `give_up_after`).
    pub const FAILED: &str = "failed";
    /// Rejected by a person.
    pub const REJECTED: &str = "rejected";
    /// Sent, then returned by a delivery report (a bounce) naming its Message-ID.
    pub const BOUNCED: &str = "bounced";
}

/// The condition that an outbox row may be claimed at `now`, its columns named by table
/// (for the select that joins and for the claiming update): queued, due and not held, or
/// sending under a lease that ran out.
pub fn may_claim(now: DateTime<Utc>) -> SimpleExpr {
    use outbox::Column as O;
    let col = |c: O| Expr::col((outbox::Entity, c));
    let due = col(O::NextAttemptAt)
        .is_null()
        .or(col(O::NextAttemptAt).lte(now));
    let queued = col(O::State)
        .eq(outbox_state::QUEUED)
        .and(col(O::HeldReason).is_null())
        .and(due);
    let lapsed = col(O::State)
        .eq(outbox_state::SENDING)
        .and(col(O::LeaseUntil).lt(now));
    queued.or(lapsed)
}

/// The ids of the outbox rows that may be claimed at `now`, oldest first, at most `limit`
/// (of `persona` only, when named): [`may_claim`], and no earlier reply of the same thread
/// queued or sending. On a SQLite file through the embedded reader.
pub async fn claimable_outbox(
    db: &DatabaseConnection,
    now: DateTime<Utc>,
    limit: u64,
    persona: Option<&str>,
) -> Result<Vec<i64>> {
    use message::Column as M;
    use outbox::Column as O;
    let (earlier, earlier_message, mine) = (
        Alias::new("earlier"),
        Alias::new("earlier_message"),
        Alias::new("mine"),
    );
    // An earlier reply of the same thread still queued or sending holds this one back.
    let mut before = Query::select();
    before
        .expr(Expr::val(1))
        .from_as(outbox::Entity, earlier.clone())
        .join_as(
            JoinType::InnerJoin,
            message::Entity,
            earlier_message.clone(),
            Expr::col((earlier_message.clone(), M::Id)).equals((earlier.clone(), O::MessageId)),
        )
        .and_where(
            Expr::col((earlier_message, M::EmailThreadId)).equals((mine.clone(), M::EmailThreadId)),
        )
        .and_where(Expr::col((earlier.clone(), O::Id)).lt(Expr::col((outbox::Entity, O::Id))))
        .and_where(
            Expr::col((earlier, O::State)).is_in([outbox_state::QUEUED, outbox_state::SENDING]),
        );
    let mut select = Query::select();
    select
        .column((outbox::Entity, O::Id))
        .from(outbox::Entity)
        .join_as(
            JoinType::InnerJoin,
            message::Entity,
            mine.clone(),
            Expr::col((mine, M::Id)).equals((outbox::Entity, O::MessageId)),
        )
        .and_where(may_claim(now))
        .and_where(Expr::exists(before).not())
        .order_by((outbox::Entity, O::Id), Order::Asc)
        .limit(limit);
    if let Some(persona) = persona {
        select.and_where(Expr::col((outbox::Entity, O::Persona)).eq(persona));
    }
    Session::rows(db, &select, |row| outbox_id(row)).await
}

/// The id of an outbox row from a select of that column alone.
fn outbox_id(row: &impl rows::Row) -> Result<i64> {
    row.get(outbox::Column::Id)
}

/// The outbox row `id`, when there is one.
pub async fn load_outbox(db: &DatabaseConnection, id: i64) -> Result<Option<outbox::Model>> {
    let mut select = Query::select();
    select
        .columns(columns(outbox::Entity))
        .from(outbox::Entity)
        .and_where(Expr::col((outbox::Entity, outbox::Column::Id)).eq(id))
        .limit(1);
    Ok(Session::rows(db, &select, |row| rows::outbox(row))
        .await?
        .into_iter()
        .next())
}

/// The outbox row of run `run_id`'s reply, when it has one.
pub async fn outbox_of_run(db: &DatabaseConnection, run_id: &str) -> Result<Option<outbox::Model>> {
    let mut select = Query::select();
    select
        .columns(columns(outbox::Entity))
        .from(outbox::Entity)
        .and_where(Expr::col((outbox::Entity, outbox::Column::RunId)).eq(run_id))
        .limit(1);
    Ok(Session::rows(db, &select, |row| rows::outbox(row))
        .await?
        .into_iter()
        .next())
}

/// The outbox row of `persona` whose delivery was attempted last (it holds the server's
/// answer or why the server could not be reached), if any: `/readyz`'s outbox report.
pub async fn last_delivery(
    db: &DatabaseConnection,
    persona: &str,
) -> Result<Option<outbox::Model>> {
    let mut select = Query::select();
    select
        .columns(columns(outbox::Entity))
        .from(outbox::Entity)
        .and_where(Expr::col((outbox::Entity, outbox::Column::Persona)).eq(persona))
        .and_where(Expr::col((outbox::Entity, outbox::Column::SmtpReply)).is_not_null())
        .order_by((outbox::Entity, outbox::Column::UpdatedAt), Order::Desc)
        .order_by((outbox::Entity, outbox::Column::Id), Order::Desc)
        .limit(1);
    Ok(Session::rows(db, &select, |row| rows::outbox(row))
        .await?
        .into_iter()
        .next())
}

/// Which outbox rows [`list_outbox`] lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutboxFilter {
    /// Only rows in this state.
    pub state: Option<String>,
    /// Only rows of this persona.
    pub persona: Option<String>,
    /// At most this many, newest first.
    pub limit: u64,
}

/// The outbox rows `filter` names, newest first.
pub async fn list_outbox(
    db: &DatabaseConnection,
    filter: &OutboxFilter,
) -> Result<Vec<outbox::Model>> {
    use outbox::Column as O;
    let mut select = Query::select();
    select.columns(columns(outbox::Entity)).from(outbox::Entity);
    if let Some(state) = &filter.state {
        select.and_where(Expr::col((outbox::Entity, O::State)).eq(state.as_str()));
    }
    if let Some(persona) = &filter.persona {
        select.and_where(Expr::col((outbox::Entity, O::Persona)).eq(persona.as_str()));
    }
    select
        .order_by((outbox::Entity, O::Id), Order::Desc)
        .limit(filter.limit);
    Session::rows(db, &select, |row| rows::outbox(row)).await
}

/// Of `recipients` (bare, lowercased), those that never received mail from one of
/// `persona` (its addresses, bare and lowercased): no outbound message that names them in
/// its To or Cc, sent by a persona address, whose reply is not waiting, failed or rejected.
pub async fn first_contacts(
    db: &DatabaseConnection,
    recipients: &[String],
    persona: &[String],
) -> Result<Vec<String>> {
    use message_address::Column as A;
    if recipients.is_empty() || persona.is_empty() {
        return Ok(recipients.to_vec());
    }
    let sender = Alias::new("sender");
    let mut by_persona = Query::select();
    by_persona
        .expr(Expr::val(1))
        .from_as(message_address::Entity, sender.clone())
        .and_where(
            Expr::col((sender.clone(), A::MessageId))
                .equals((message_address::Entity, A::MessageId)),
        )
        .and_where(Expr::col((sender, A::Address)).is_in(persona.iter().cloned()));
    let mut select = Query::select();
    select
        .distinct()
        .column((message_address::Entity, A::Address))
        .from(message_address::Entity)
        .inner_join(
            message::Entity,
            Expr::col((message::Entity, message::Column::Id))
                .equals((message_address::Entity, A::MessageId)),
        )
        .and_where(
            Expr::col((message_address::Entity, A::Address)).is_in(recipients.iter().cloned()),
        )
        .and_where(Expr::col((message_address::Entity, A::Participant)).eq(true))
        .and_where(Expr::col((message::Entity, message::Column::Direction)).eq("outbound"))
        .and_where(Expr::exists(by_persona))
        .and_where(rows::not_unsent_reply(message::Entity));
    let mut known = std::collections::HashSet::new();
    for row in db.query_all(&select).await? {
        known.insert(row.try_get::<String>("", A::Address.as_str())?);
    }
    Ok(recipients
        .iter()
        .filter(|r| !known.contains(*r))
        .cloned()
        .collect())
}
