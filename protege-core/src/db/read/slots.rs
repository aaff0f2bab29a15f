//! Responsibilities on time (§19), read: when the agent first saw a responsibility, and the
//! newest slot of it that was fired.

use chrono::{DateTime, NaiveDateTime, Utc};
use sea_orm::ConnectionTrait;
use sea_orm::sea_query::{Expr, ExprTrait, Order, Query};

use crate::db::entities::{responsibility_seen, responsibility_slot};
use crate::error::{Error, ErrorKind, Result};
use crate::schedule::{LOCAL_TIME_FORMAT, Slot};

/// When the agent first saw `persona`'s responsibility `responsibility`, if it did.
pub async fn first_seen<C: ConnectionTrait>(
    db: &C,
    persona: &str,
    responsibility: &str,
) -> Result<Option<DateTime<Utc>>> {
    use responsibility_seen::Column as R;
    let select = Query::select()
        .column(R::SeenAt)
        .from(responsibility_seen::Entity)
        .and_where(Expr::col(R::Persona).eq(persona))
        .and_where(Expr::col(R::Responsibility).eq(responsibility))
        .to_owned();
    let row = db
        .query_one_raw(crate::db::dates::statement(db, &select))
        .await?;
    Ok(match row {
        Some(row) => Some(row.try_get("", "seen_at")?),
        None => None,
    })
}

/// The newest slot fired of `persona`'s responsibility `responsibility` (by its instant),
/// if any.
pub async fn newest_slot<C: ConnectionTrait>(
    db: &C,
    persona: &str,
    responsibility: &str,
) -> Result<Option<Slot>> {
    use responsibility_slot::Column as S;
    let select = Query::select()
        .columns([S::LocalTime, S::SlotAt])
        .from(responsibility_slot::Entity)
        .and_where(Expr::col(S::Persona).eq(persona))
        .and_where(Expr::col(S::Responsibility).eq(responsibility))
        .order_by(S::SlotAt, Order::Desc)
        .order_by(S::Id, Order::Desc)
        .limit(1)
        .to_owned();
    let Some(row) = db
        .query_one_raw(crate::db::dates::statement(db, &select))
        .await?
    else {
        return Ok(None);
    };
    let local: String = row.try_get("", "local_time")?;
    let at: DateTime<Utc> = row.try_get("", "slot_at")?;
    let local = NaiveDateTime::parse_from_str(&local, LOCAL_TIME_FORMAT).map_err(|_| {
        Error::new(
            ErrorKind::Database,
            format!(
                "the slot of responsibility `{responsibility}` of persona `{persona}` fired at {} has no wall-clock time (`{local}`)",
                protege_mail::rfc3339_z(&at)
            ),
        )
    })?;
    Ok(Some(Slot { local, at }))
}
