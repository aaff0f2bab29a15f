//! Responsibilities on time (§19), written: when the agent first saw a responsibility, and
//! a slot fired with its job in one transaction, unique so that several replicas fire a
//! slot once.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Alias, Expr, ExprTrait, InsertStatement, OnConflict};
use sea_orm::{ActiveValue::NotSet, ConnectionTrait, DatabaseConnection, DbBackend, DbErr, Set};
use sea_orm::{EntityTrait, QueryTrait};

use protege_core::db::entities::{agent_job, responsibility_seen, responsibility_slot};
use protege_core::db::{dates, first_seen, jobs_select, select_jobs};
use protege_core::{Error, ErrorKind, Result, Slot};

use crate::jobs::{NewJob, insert_job_row};
use crate::store::{is_unique_violation, mysql_insert};

/// Records that the agent saw `persona`'s responsibility `responsibility` at `now`, unless
/// it was seen before; returns when it was first seen: `now`, or an earlier time this or
/// another process recorded.
pub async fn see_responsibility(
    db: &DatabaseConnection,
    persona: &str,
    responsibility: &str,
    now: DateTime<Utc>,
) -> Result<DateTime<Utc>> {
    if let Some(seen) = first_seen(db, persona, responsibility).await? {
        return Ok(seen);
    }
    dates::check("the clock", &now)?;
    let row = responsibility_seen::ActiveModel {
        id: NotSet,
        persona: Set(persona.to_owned()),
        responsibility: Set(responsibility.to_owned()),
        seen_at: Set(now),
    };
    // Another process may record it first: the unique key keeps its time.
    insert_or_skip(db, responsibility_seen::Entity::insert(row).into_query()).await?;
    first_seen(db, persona, responsibility)
        .await?
        .ok_or_else(|| {
            Error::new(
                ErrorKind::Database,
                format!(
                    "responsibility `{responsibility}` of persona `{persona}` was recorded as seen, and the record is gone"
                ),
            )
        })
}

/// Fires `slot` of `persona`'s responsibility `responsibility` at `now`: in one
/// transaction, its `responsibility_slots` row and its job, `queued` (no message, the slot
/// set). `None` when the slot was fired already, here or by another process: the unique
/// key of the slot's wall-clock time (or of its instant) holds its first firing.
pub async fn fire_slot(
    db: &DatabaseConnection,
    persona: &str,
    responsibility: &str,
    slot: &Slot,
    now: DateTime<Utc>,
) -> Result<Option<agent_job::Model>> {
    dates::check(
        &format!("the slot {} of `{responsibility}`", slot.local_text()),
        &slot.at,
    )?;
    dates::check("the clock", &now)?;
    let row = responsibility_slot::ActiveModel {
        id: NotSet,
        persona: Set(persona.to_owned()),
        responsibility: Set(responsibility.to_owned()),
        slot_at: Set(slot.at),
        created_at: Set(now),
        local_time: Set(slot.local_text()),
    };
    let txn = protege_core::db::lock::begin_write(db).await?;
    let inserted =
        insert_or_skip(&txn, responsibility_slot::Entity::insert(row).into_query()).await;
    let slot_id = match inserted {
        Ok(Some(id)) => id,
        Ok(None) => {
            txn.rollback().await?;
            return Ok(None);
        }
        Err(e) => {
            txn.rollback().await.ok();
            return Err(e.into());
        }
    };
    let job = NewJob {
        persona: persona.to_owned(),
        gate_reason: None,
    };
    insert_job_row(&txn, (None, Some(slot_id)), &job, now).await?;
    let select = jobs_select()
        .and_where(Expr::col(agent_job::Column::SlotId).eq(slot_id))
        .to_owned();
    let fired = select_jobs(&txn, &select).await?.into_iter().next();
    txn.commit().await?;
    Ok(fired)
}

/// Runs the one-row `insert` unless a unique key holds its values already; the new row's
/// id, or `None` when another writer stored the same row first.
pub(crate) async fn insert_or_skip<C: ConnectionTrait>(
    db: &C,
    mut insert: InsertStatement,
) -> std::result::Result<Option<i64>, DbErr> {
    let outcome = if db.get_database_backend() == DbBackend::MySql {
        // MySQL has no `ON CONFLICT DO NOTHING`, and `INSERT IGNORE` would also hide other
        // errors; a duplicate key rolls back only its own statement there.
        mysql_insert(db, &insert).await
    } else {
        insert.on_conflict(OnConflict::new().do_nothing().to_owned());
        insert.returning_col(Alias::new("id"));
        match db.query_one_raw(dates::statement(db, &insert)).await? {
            Some(row) => row.try_get_by_index::<i64>(0),
            None => return Ok(None),
        }
    };
    match outcome {
        Ok(id) => Ok(Some(id)),
        Err(e) if is_unique_violation(&e) => Ok(None),
        Err(e) => Err(e),
    }
}
