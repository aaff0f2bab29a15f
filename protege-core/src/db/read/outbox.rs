//! The outbox (§18), read: one row, a run's reply, a listing, and whether an address ever
//! received a persona's mail (`approval = "first_contact"`).

use sea_orm::sea_query::{Alias, Expr, ExprTrait, Order, Query};
use sea_orm::{ConnectionTrait, DatabaseConnection, IdenStatic};

use super::embedded;
use super::rows::{self, columns};
use crate::db::entities::{message, message_address, outbox};
use crate::error::Result;

/// The rows of `select` decoded as outbox rows.
async fn rows_of(
    db: &DatabaseConnection,
    select: &sea_orm::sea_query::SelectStatement,
) -> Result<Vec<outbox::Model>> {
    let mut out = Vec::new();
    if let Some(reader) = embedded::reader(db) {
        reader.run(|conn| {
            conn.query(select, |row| {
                out.push(rows::outbox(row)?);
                Ok(())
            })
        })?;
    } else {
        for row in db.query_all(select).await? {
            out.push(rows::outbox(&row)?);
        }
    }
    Ok(out)
}

/// The outbox row `id`, when there is one.
pub async fn load_outbox(db: &DatabaseConnection, id: i64) -> Result<Option<outbox::Model>> {
    let mut select = Query::select();
    select
        .columns(columns(outbox::Entity))
        .from(outbox::Entity)
        .and_where(Expr::col((outbox::Entity, outbox::Column::Id)).eq(id))
        .limit(1);
    Ok(rows_of(db, &select).await?.into_iter().next())
}

/// The outbox row of run `run_id`'s reply, when it has one.
pub async fn outbox_of_run(db: &DatabaseConnection, run_id: &str) -> Result<Option<outbox::Model>> {
    let mut select = Query::select();
    select
        .columns(columns(outbox::Entity))
        .from(outbox::Entity)
        .and_where(Expr::col((outbox::Entity, outbox::Column::RunId)).eq(run_id))
        .limit(1);
    Ok(rows_of(db, &select).await?.into_iter().next())
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
    rows_of(db, &select).await
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
