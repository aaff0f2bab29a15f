//! A run and its rounds (§13), read for [`Engine::record_round`]'s check of the round
//! expected next and for the next body; on a SQLite file through the embedded reader.
//!
//! [`Engine::record_round`]: https://docs.rs/protege/latest/protege/struct.Engine.html#method.record_round

use sea_orm::sea_query::{Expr, ExprTrait, Order, Query};
use sea_orm::{ConnectionTrait, DatabaseConnection};

use super::embedded;
use super::rows::{self, columns};
use crate::db::entities::{run, run_round};
use crate::error::Result;

/// The rows of a select decoded by a decoder of [`rows`], through the embedded reader on
/// a SQLite file and SeaORM elsewhere.
macro_rules! all {
    ($db:expr, $select:expr, $decode:path) => {{
        let mut out = Vec::new();
        if let Some(reader) = embedded::reader($db) {
            reader.run(|conn| {
                conn.query($select, |row| {
                    out.push($decode(row)?);
                    Ok(())
                })
            })?;
        } else {
            for row in $db.query_all($select).await? {
                out.push($decode(&row)?);
            }
        }
        out
    }};
}

/// The run `id`, when there is one. One query.
pub async fn load_run(db: &DatabaseConnection, id: &str) -> Result<Option<run::Model>> {
    let mut by_id = Query::select();
    by_id
        .columns(columns(run::Entity))
        .from(run::Entity)
        .and_where(Expr::col((run::Entity, run::Column::Id)).eq(id))
        .limit(1);
    Ok(all!(db, &by_id, rows::run).into_iter().next())
}

/// The recorded rounds of run `id`, in order. One query.
pub async fn load_rounds(db: &DatabaseConnection, id: &str) -> Result<Vec<run_round::Model>> {
    let mut of_run = Query::select();
    of_run
        .columns(columns(run_round::Entity))
        .from(run_round::Entity)
        .and_where(Expr::col((run_round::Entity, run_round::Column::RunId)).eq(id))
        .order_by((run_round::Entity, run_round::Column::Round), Order::Asc);
    Ok(all!(db, &of_run, rows::run_round))
}
