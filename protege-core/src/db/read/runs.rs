//! A run and its rounds (§13), read for [`Engine::record_round`]'s check of the round
//! expected next and for the next body; on a SQLite file through the embedded reader.
//!
//! [`Engine::record_round`]: https://docs.rs/protege/latest/protege/struct.Engine.html#method.record_round

use sea_orm::DatabaseConnection;
use sea_orm::sea_query::{Expr, ExprTrait, Order, Query, SubQueryStatement};

use super::rows::{self, columns};
use crate::db::entities::{run, run_round};
use crate::db::session::Session;
use crate::error::Result;

/// The run `id`, when there is one. One query.
pub async fn load_run(db: &DatabaseConnection, id: &str) -> Result<Option<run::Model>> {
    let mut by_id = Query::select();
    by_id
        .columns(columns(run::Entity))
        .from(run::Entity)
        .and_where(Expr::col((run::Entity, run::Column::Id)).eq(id))
        .limit(1);
    Ok(Session::rows(db, &by_id, |row| rows::run(row))
        .await?
        .into_iter()
        .next())
}

/// The recorded rounds of run `id`, in order. One query.
pub async fn load_rounds(db: &DatabaseConnection, id: &str) -> Result<Vec<run_round::Model>> {
    let mut of_run = Query::select();
    of_run
        .columns(columns(run_round::Entity))
        .from(run_round::Entity)
        .and_where(Expr::col((run_round::Entity, run_round::Column::RunId)).eq(id))
        .order_by((run_round::Entity, run_round::Column::Round), Order::Asc);
    Session::rows(db, &of_run, |row| rows::run_round(row)).await
}

/// The runs of the message whose Message-ID is `message_id`, oldest first (by start, ties
/// by id); `None` when no message has this Message-ID. One query, two when the message has
/// no run.
pub async fn runs_of_message(
    db: &DatabaseConnection,
    message_id: &str,
) -> Result<Option<Vec<run::Model>>> {
    use crate::db::entities::message as m;
    let row = Query::select()
        .column((m::Entity, m::Column::Id))
        .from(m::Entity)
        .and_where(Expr::col((m::Entity, m::Column::MessageId)).eq(message_id))
        .to_owned();
    let mut of_message = Query::select();
    of_message
        .columns(columns(run::Entity))
        .from(run::Entity)
        .and_where(Expr::col((run::Entity, run::Column::MessageId)).in_subquery(row.clone()))
        .order_by((run::Entity, run::Column::StartedAt), Order::Asc)
        .order_by((run::Entity, run::Column::Id), Order::Asc);
    let runs = Session::rows(db, &of_message, |row| rows::run(row)).await?;
    if !runs.is_empty() {
        return Ok(Some(runs));
    }
    let mut row = row;
    row.limit(1);
    let stored = Session::rows(db, &row, |row| message_row(row)).await?;
    Ok((!stored.is_empty()).then(Vec::new))
}

/// The id of a `messages` row selected alone.
fn message_row(row: &impl rows::Row) -> Result<i64> {
    row.get(crate::db::entities::message::Column::Id)
}

/// The condition on a `tool_uses` row that a thread's history replays it: it belongs to no
/// stored run (a row imported from a fixture) or to a run that ended `done` or `stopped`
/// ([`run::REPLAYED`]). A `NOT EXISTS` on the key of `runs`, in the statement that reads the
/// rows.
#[doc(hidden)]
pub fn replayed_tool_use() -> sea_orm::sea_query::SimpleExpr {
    use crate::db::entities::tool_use as t;
    let unfinished = Query::select()
        .expr(Expr::val(1))
        .from(run::Entity)
        .and_where(Expr::col((run::Entity, run::Column::Id)).equals((t::Entity, t::Column::RunId)))
        .and_where(Expr::col((run::Entity, run::Column::Status)).is_not_in(run::REPLAYED))
        .to_owned();
    Expr::exists(unfinished).not()
}

/// The first of the tool call ids `ids` that another run than `run_id` recorded in the
/// thread of message `message` (a `messages.id`), with that run's id: the ids one replay of
/// a thread holds must differ. One query.
pub async fn call_id_taken_in_thread(
    db: &DatabaseConnection,
    message: i64,
    run_id: &str,
    ids: &[&str],
) -> Result<Option<(String, String)>> {
    use crate::db::entities::tool_use as t;
    if ids.is_empty() {
        return Ok(None);
    }
    let in_thread = super::thread_message_ids_of(message);
    // Every column, so the embedded reader finds each at its place.
    let select = Query::select()
        .columns(columns(t::Entity))
        .from(t::Entity)
        .and_where(Expr::col(t::Column::MessageId).in_subquery(in_thread))
        .and_where(Expr::col(t::Column::RunId).ne(run_id))
        .and_where(Expr::col(t::Column::ToolCallId).is_in(ids.iter().copied()))
        .order_by(t::Column::Id, Order::Asc)
        .limit(1)
        .to_owned();
    Ok(Session::rows(db, &select, |row| call_and_run(row))
        .await?
        .into_iter()
        .next())
}

/// The call id and the run of a `tool_uses` row selected with every column.
fn call_and_run(row: &impl rows::Row) -> Result<(String, String)> {
    use crate::db::entities::tool_use as t;
    Ok((row.get(t::Column::ToolCallId)?, row.get(t::Column::RunId)?))
}

/// Whether message `message` (a `messages.id`) was sent to one of `addresses` (bare and
/// lowercased): one of them is in its To or Cc, or sent a message of its thread (a
/// participant's row of `message_addresses`). One query, which reads only the rows of
/// `addresses` in the message's thread: a row of `message_addresses` carries its message's
/// thread, so the message's own rows are among them, and the index by address and thread
/// finds them (a condition on either the message or the thread would read every row of the
/// persona's address instead).
pub async fn persona_addressed(
    db: &DatabaseConnection,
    message: i64,
    addresses: &[String],
) -> Result<bool> {
    use crate::db::entities::message_address as a;
    let thread = super::lookup::thread_of(message);
    // The first column, `id`, as the embedded reader finds it.
    let select = Query::select()
        .columns(columns(a::Entity).take(1))
        .from(a::Entity)
        .and_where(Expr::col(a::Column::Address).is_in(addresses.iter().cloned()))
        .and_where(
            Expr::col(a::Column::EmailThreadId).eq(Expr::from(SubQueryStatement::from(thread))),
        )
        .and_where(
            Expr::col(a::Column::MessageId)
                .eq(message)
                .or(Expr::col(a::Column::Participant).eq(true)),
        )
        .limit(1)
        .to_owned();
    Ok(!Session::rows(db, &select, |row| address_row(row))
        .await?
        .is_empty())
}

/// The id of a `message_addresses` row selected alone.
fn address_row(row: &impl rows::Row) -> Result<i64> {
    row.get(crate::db::entities::message_address::Column::Id)
}
