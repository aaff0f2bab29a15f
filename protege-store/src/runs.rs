//! Writing runs (§13): a run's row when it starts, and each round in one transaction with
//! the tool uses it adds to the trigger message.
//!
//! Two writers recording the same round of one run race on the run's row: the round is
//! written only by the writer whose `UPDATE runs ... WHERE rounds = K AND status =
//! 'started'` changes the row (it holds the row's lock until it commits, and the
//! `run_rounds` key `(run_id, round)` backs it), and the other learns that it lost
//! ([`RoundWrite::Raced`]) with nothing written, to read what the winner stored.
//!
//! A round may be stored in two steps ([`record_pending`], then [`record_round`] with
//! [`NewRound::pending`]): its response first, as a `run_rounds` row whose `results` is
//! `null`, then its results. Storing a pending round leaves the run's count as it is, so
//! the update of the run's row alone does not keep a second writer of round K out: that
//! writer's insert of K meets the key `(run_id, round)`, and it rolls back and reports
//! [`RoundWrite::Raced`] too. On SQLite, where writers take turns and the SQLite C library's
//! error is not told apart, the run's update is also guarded by `NOT EXISTS` a row of K.

use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveValue::{NotSet, Set},
    ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, FromQueryResult, QueryFilter,
    QueryOrder, QuerySelect, QueryTrait, TransactionSession, TransactionTrait,
    sea_query::{Expr, ExprTrait, InsertStatement, UpdateStatement},
};

use protege_core::Result;
use protege_core::db::dates;
use protege_core::db::entities::{message, run, run_round, run_source, tool_use};
use protege_core::db::tx::Tx;
use protege_mail::without_nul;

use crate::store::is_unique_violation;

/// The status of a run that goes on.
pub const RUN_STARTED: &str = run::STARTED;
/// The status of a run given up by the application.
pub const RUN_ABANDONED: &str = run::ABANDONED;

/// A run about to start: its row of `runs` with nothing recorded yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRun {
    /// `run_` and a ULID.
    pub id: String,
    /// The persona.
    pub persona: String,
    /// The row id of the inbound message answered; `None` for a scheduled run.
    pub message_id: Option<i64>,
    /// The responsibility fired; `None` for a reply run.
    pub responsibility: Option<String>,
    /// The wire format of its bodies.
    pub format: run::RunFormat,
    /// The model.
    pub model: String,
    /// The SHA-256 of round 0's body (hex).
    pub request_sha256: String,
    /// Round 0's request as the engine keeps it.
    pub request: String,
    /// When it starts.
    pub started_at: DateTime<Utc>,
    /// The SHA-256 (lowercase hex) of the Message-ID of each stored message its request
    /// holds, for a scheduled run (`run_sources`, so erasing one of them erases the run);
    /// empty for a reply run, which its trigger finds.
    pub sources: Vec<String>,
}

/// Inserts the row of a run that starts, with its `run_sources` rows in the same
/// transaction.
pub async fn insert_run<C: ConnectionTrait + TransactionTrait>(db: &C, new: &NewRun) -> Result<()> {
    dates::check("the start of the run", &new.started_at)?;
    if new.sources.is_empty() {
        return insert_run_row(db, new).await;
    }
    let txn = db.begin().await?;
    let written = async {
        insert_run_row(&txn, new).await?;
        let mut hashes: Vec<&str> = new.sources.iter().map(String::as_str).collect();
        hashes.sort_unstable();
        hashes.dedup();
        for chunk in hashes.chunks(crate::store::IN_CHUNK) {
            let mut insert = sea_orm::sea_query::Query::insert();
            insert
                .into_table(run_source::Entity)
                .columns([run_source::Column::RunId, run_source::Column::MessageSha256]);
            for hash in chunk {
                insert.values_panic([new.id.as_str().into(), (*hash).into()]);
            }
            ConnectionTrait::execute(&txn, &insert).await?;
        }
        Ok::<(), protege_core::Error>(())
    }
    .await;
    match written {
        Ok(()) => Ok(txn.commit().await?),
        Err(e) => {
            txn.rollback().await.ok();
            Err(e)
        }
    }
}

/// Inserts the row of `new` alone.
async fn insert_run_row<C: ConnectionTrait>(db: &C, new: &NewRun) -> Result<()> {
    let row = run::ActiveModel {
        id: Set(new.id.clone()),
        persona: Set(new.persona.clone()),
        message_id: Set(new.message_id),
        responsibility: Set(new.responsibility.clone()),
        format: Set(new.format),
        model: Set(without_nul(&new.model).into_owned()),
        status: Set(run::RunStatus::Started),
        rounds: Set(0),
        input_tokens: Set(0),
        output_tokens: Set(0),
        cache_read_tokens: Set(0),
        cache_write_tokens: Set(0),
        request_sha256: Set(new.request_sha256.clone()),
        request: Set(without_nul(&new.request).into_owned()),
        started_at: Set(new.started_at),
        finished_at: Set(None),
    };
    let insert = run::Entity::insert(row).into_query();
    db.execute_raw(dates::statement(db, &insert)).await?;
    Ok(())
}

/// The Message-ID of the message whose row id is `row`.
pub async fn message_id_of<C: ConnectionTrait>(db: &C, row: i64) -> Result<Option<String>> {
    Ok(message::Entity::find_by_id(row)
        .select_only()
        .column(message::Column::MessageId)
        .into_tuple()
        .one(db)
        .await?)
}

/// The Message-ID and the thread of the message whose row id is `row`, when it is stored.
pub async fn message_key_of<C: ConnectionTrait>(db: &C, row: i64) -> Result<Option<(String, i64)>> {
    Ok(message::Entity::find_by_id(row)
        .select_only()
        .column(message::Column::MessageId)
        .column(message::Column::EmailThreadId)
        .into_tuple()
        .one(db)
        .await?)
}

/// The runs of `persona` started at or after `since` (all of them with `None`), oldest
/// first.
pub async fn persona_runs<C: ConnectionTrait>(
    db: &C,
    persona: &str,
    since: Option<DateTime<Utc>>,
) -> Result<Vec<run::Model>> {
    let mut query = run::Entity::find().filter(run::Column::Persona.eq(persona));
    if let Some(since) = since {
        query = query.filter(run::Column::StartedAt.gte(since));
    }
    let select = query
        .order_by_asc(run::Column::StartedAt)
        .order_by_asc(run::Column::Id)
        .into_query();
    let rows = db.query_all_raw(dates::statement(db, &select)).await?;
    rows.iter()
        .map(|row| Ok(run::Model::from_query_result(row, "")?))
        .collect()
}

/// A tool call of a round with its result, as it becomes a `tool_uses` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundToolUse {
    /// The call id.
    pub tool_call_id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments: a JSON object as text.
    pub input: String,
    /// The result text.
    pub result: String,
    /// Whether the tool failed.
    pub is_error: bool,
}

/// A round to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRound {
    /// The round's number: the run's `rounds` so far.
    pub round: i32,
    /// Whether the round is stored pending already ([`record_pending`]): [`record_round`]
    /// then writes its results into that row, and adds nothing to the run's usage (the
    /// pending round added it).
    pub pending: bool,
    /// The response as recorded.
    pub response: String,
    /// The results as recorded (a JSON array).
    pub results: String,
    /// The response's stop reason.
    pub stop_reason: String,
    /// Input, output, cache read and cache write tokens.
    pub usage: [i64; 4],
    /// The run's status once the round is recorded.
    pub status: run::RunStatus,
    /// The calls with their results, as `tool_uses` rows of the trigger message (none for
    /// a scheduled run or a round without calls).
    pub tool_uses: Vec<RoundToolUse>,
    /// When it is recorded.
    pub at: DateTime<Utc>,
}

/// What [`record_round`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundWrite {
    /// The round is stored.
    Recorded,
    /// Another writer changed the run first (recorded this round, or ended the run):
    /// nothing was written.
    Raced,
}

/// The write of a round's row: its insert, or the update of its pending row.
enum RoundRow {
    Insert(InsertStatement),
    Complete(UpdateStatement),
}

/// Records `round` of `run` in one transaction: the run's count, status and usage, the
/// round's row (inserted, or its pending row completed with its results), and its tool uses
/// as rows of the run's trigger message (`run_id` the run, `turn_index` the round,
/// `position` the call's place). Three statements.
pub async fn record_round(
    db: &DatabaseConnection,
    run: &run::Model,
    round: &NewRound,
) -> Result<RoundWrite> {
    let (update, row, insert_uses) = round_statements(run, round, is_sqlite(db));
    let statements: Vec<Statement<'_>> = [Statement::Update(&update), row.statement()]
        .into_iter()
        .chain(insert_uses.as_ref().map(Statement::Insert))
        .collect();
    write_round(db, &statements).await
}

/// Stores `round` of `run` pending, in one transaction: its response and usage (added to
/// the run's), its results `null`; the run's count and status stay. `round.status`,
/// `round.results` and `round.tool_uses` are not used: [`record_round`] writes them once the
/// results are known. [`RoundWrite::Raced`] when the run is no longer at round
/// `round.round` or that round is stored already (pending or recorded), with nothing
/// written. Two statements.
pub async fn record_pending(
    db: &DatabaseConnection,
    run: &run::Model,
    round: &NewRound,
) -> Result<RoundWrite> {
    let mut update = usage_update(round.usage)
        .filter(run::Column::Id.eq(&run.id))
        .filter(run::Column::Rounds.eq(round.round))
        .filter(run::Column::Status.eq(RUN_STARTED));
    if is_sqlite(db) {
        update = update.filter(round_stored(&run.id, round.round).not());
    }
    let update = update.into_query();
    let insert =
        run_round::Entity::insert(round_row(run, round, run_round::PENDING_RESULTS.to_owned()))
            .into_query();
    write_round(
        db,
        &[Statement::Update(&update), Statement::Insert(&insert)],
    )
    .await
}

/// A statement of a round's transaction.
enum Statement<'a> {
    Update(&'a UpdateStatement),
    Insert(&'a InsertStatement),
}

impl RoundRow {
    fn statement(&self) -> Statement<'_> {
        match self {
            RoundRow::Insert(insert) => Statement::Insert(insert),
            RoundRow::Complete(update) => Statement::Update(update),
        }
    }
}

/// Runs `statements` in one transaction, the first the conditional update of the run's row:
/// [`RoundWrite::Raced`], with nothing written, when an update changes no row or when the
/// round's row is taken by another writer (the key `(run_id, round)`).
async fn write_round(db: &DatabaseConnection, statements: &[Statement<'_>]) -> Result<RoundWrite> {
    let done = protege_core::write_transaction!(db, db.begin(), |tx| round_in(tx, statements));
    match done {
        Err(e) if is_raced(&e) => Ok(RoundWrite::Raced),
        other => other,
    }
}

/// [`write_round`]'s statements in the transaction `tx`; a lost race is an error, so that
/// the transaction rolls back.
async fn round_in<W: Tx>(tx: &W, statements: &[Statement<'_>]) -> Result<RoundWrite> {
    for statement in statements {
        let done = match statement {
            Statement::Update(update) => tx.execute(*update).await,
            Statement::Insert(insert) => tx.execute(*insert).await,
        };
        let lost = match done {
            Ok(changed) => changed == 0 && matches!(statement, Statement::Update(_)),
            // Another writer stored the round (pending, which leaves the run's count as it
            // is) after this one read the run. Not on SQLite, whose one writer at a time
            // (`BEGIN IMMEDIATE`) makes the guard of the run's update see every round
            // written before.
            Err(e) if is_unique_violation(&e) => true,
            Err(e) => return Err(e.into()),
        };
        if lost {
            return Err(raced());
        }
    }
    Ok(RoundWrite::Recorded)
}

/// The error that rolls back a round's transaction that lost the race.
fn raced() -> protege_core::Error {
    protege_core::Error::new(protege_core::ErrorKind::Conflict, RACED)
}

const RACED: &str = "the round was written by another writer";

fn is_raced(e: &protege_core::Error) -> bool {
    e.kind() == protege_core::ErrorKind::Conflict && e.detail() == RACED
}

/// Whether `db` is SQLite's, where the run's update of a round is guarded by
/// [`round_stored`]. Not on MySQL/MariaDB, where InnoDB locks the rows (and the gap) that a
/// sub-select of an `UPDATE` reads, so two writers of one round would deadlock on the
/// insert; nor on PostgreSQL, whose update that waited for the run's row reads the rows of
/// its own snapshot: the key `(run_id, round)` decides there.
fn is_sqlite(db: &DatabaseConnection) -> bool {
    db.get_database_backend() == sea_orm::DbBackend::Sqlite
}

/// `EXISTS` a row of round `round` of run `run_id` in `run_rounds`.
fn round_stored(run_id: &str, round: i32) -> sea_orm::sea_query::SimpleExpr {
    use sea_orm::sea_query::Query;
    let mut stored = Query::select();
    stored
        .expr(Expr::val(1))
        .from(run_round::Entity)
        .and_where(Expr::col((run_round::Entity, run_round::Column::RunId)).eq(run_id))
        .and_where(Expr::col((run_round::Entity, run_round::Column::Round)).eq(round));
    Expr::exists(stored)
}

/// The update of a run's row adding `usage` (input, output, cache read, cache write) to
/// its counts.
fn usage_update(usage: [i64; 4]) -> sea_orm::UpdateMany<run::Entity> {
    let [input, output, cache_read, cache_write] = usage;
    run::Entity::update_many()
        .col_expr(
            run::Column::InputTokens,
            Expr::col(run::Column::InputTokens).add(input),
        )
        .col_expr(
            run::Column::OutputTokens,
            Expr::col(run::Column::OutputTokens).add(output),
        )
        .col_expr(
            run::Column::CacheReadTokens,
            Expr::col(run::Column::CacheReadTokens).add(cache_read),
        )
        .col_expr(
            run::Column::CacheWriteTokens,
            Expr::col(run::Column::CacheWriteTokens).add(cache_write),
        )
}

/// The `run_rounds` row of `round` of `run` with `results`.
fn round_row(run: &run::Model, round: &NewRound, results: String) -> run_round::ActiveModel {
    let [input, output, cache_read, cache_write] = round.usage;
    run_round::ActiveModel {
        id: NotSet,
        run_id: Set(run.id.clone()),
        round: Set(round.round),
        response: Set(without_nul(&round.response).into_owned()),
        results: Set(results),
        stop_reason: Set(without_nul(&round.stop_reason).into_owned()),
        input_tokens: Set(input),
        output_tokens: Set(output),
        cache_read_tokens: Set(cache_read),
        cache_write_tokens: Set(cache_write),
        created_at: Set(round.at),
    }
}

/// The statements of [`record_round`]: the run's update (it changes no row when another
/// writer changed the run first, nor, with `guard`, when a round not pending meets a row of
/// its number), the round's insert or the completion of its pending row, and the insert of
/// its tool uses (`None` without any).
fn round_statements(
    run: &run::Model,
    round: &NewRound,
    guard: bool,
) -> (UpdateStatement, RoundRow, Option<InsertStatement>) {
    // A pending round added its usage when it was stored.
    let usage = if round.pending { [0; 4] } else { round.usage };
    let mut update = usage_update(usage)
        .col_expr(run::Column::Rounds, Expr::value(round.round + 1))
        .col_expr(run::Column::Status, Expr::value(round.status.as_str()));
    if round.status != run::RunStatus::Started {
        update = update.col_expr(run::Column::FinishedAt, Expr::value(round.at));
    }
    let mut update = update
        .filter(run::Column::Id.eq(&run.id))
        .filter(run::Column::Rounds.eq(round.round))
        .filter(run::Column::Status.eq(RUN_STARTED));
    // A pending round's row exists (its writer read it) until the round is completed, which
    // changes the run's count.
    if guard && !round.pending {
        update = update.filter(round_stored(&run.id, round.round).not());
    }
    let update = update.into_query();
    let results = without_nul(&round.results).into_owned();
    let row = if round.pending {
        RoundRow::Complete(
            run_round::Entity::update_many()
                .col_expr(run_round::Column::Results, Expr::value(results))
                .filter(run_round::Column::RunId.eq(&run.id))
                .filter(run_round::Column::Round.eq(round.round))
                .filter(run_round::Column::Results.eq(run_round::PENDING_RESULTS))
                .into_query(),
        )
    } else {
        RoundRow::Insert(run_round::Entity::insert(round_row(run, round, results)).into_query())
    };
    let uses: Vec<tool_use::ActiveModel> = match run.message_id {
        Some(message_id) => round
            .tool_uses
            .iter()
            .enumerate()
            .map(|(position, use_)| {
                let text = |v: &str| without_nul(v).into_owned();
                tool_use::ActiveModel {
                    id: NotSet,
                    message_id: Set(message_id),
                    run_id: Set(run.id.clone()),
                    turn_index: Set(round.round),
                    position: Set(i32::try_from(position).unwrap_or(i32::MAX)),
                    tool_call_id: Set(text(&use_.tool_call_id)),
                    name: Set(text(&use_.name)),
                    input: Set(text(&use_.input)),
                    result: Set(Some(text(&use_.result))),
                    is_error: Set(use_.is_error),
                }
            })
            .collect(),
        None => Vec::new(),
    };
    let insert_uses = (!uses.is_empty()).then(|| tool_use::Entity::insert_many(uses).into_query());
    (update, row, insert_uses)
}

/// Ends run `id` as `abandoned` at `at` when it goes on (`started` or `waiting`); `false`
/// when it does not (it ended, or there is no such run). One statement.
pub async fn abandon_run<C: ConnectionTrait>(db: &C, id: &str, at: DateTime<Utc>) -> Result<bool> {
    let update = run::Entity::update_many()
        .col_expr(run::Column::Status, Expr::value(RUN_ABANDONED))
        .col_expr(run::Column::FinishedAt, Expr::value(at))
        .filter(run::Column::Id.eq(id))
        .filter(run::Column::Status.is_in(run::GOING_ON))
        .into_query();
    let done = db.execute_raw(dates::statement(db, &update)).await?;
    Ok(done.rows_affected() > 0)
}

/// Ends run `run` as `stopped` without recording a round (a loop over `[limits]
/// max_rounds`), unless another writer changed it since it was read.
pub async fn stop_run<C: ConnectionTrait>(
    db: &C,
    run: &run::Model,
    at: DateTime<Utc>,
) -> Result<RoundWrite> {
    let update = run::Entity::update_many()
        .col_expr(run::Column::Status, Expr::value("stopped"))
        .col_expr(run::Column::FinishedAt, Expr::value(at))
        .filter(run::Column::Id.eq(&run.id))
        .filter(run::Column::Rounds.eq(run.rounds))
        .filter(run::Column::Status.eq(RUN_STARTED))
        .into_query();
    let done = db.execute_raw(dates::statement(db, &update)).await?;
    Ok(if done.rows_affected() == 0 {
        RoundWrite::Raced
    } else {
        RoundWrite::Recorded
    })
}

/// The round 0 of a run, with the run's stored request and the usage the round reported:
/// one sample of a token calibration.
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
pub struct UsageSample {
    /// The round's row id (rows are numbered in the order they are written).
    pub round_id: i64,
    /// The run's stored round-0 request.
    pub request: String,
    /// Uncached input tokens.
    pub input_tokens: i64,
    /// Input tokens read from the cache.
    pub cache_read_tokens: i64,
    /// Input tokens written to the cache.
    pub cache_write_tokens: i64,
}

/// The round-0 rows of the runs of `model` that reported input tokens.
fn usage_rounds(model: &str) -> sea_orm::Select<run_round::Entity> {
    let billed = Expr::col((run_round::Entity, run_round::Column::InputTokens))
        .add(Expr::col((
            run_round::Entity,
            run_round::Column::CacheReadTokens,
        )))
        .add(Expr::col((
            run_round::Entity,
            run_round::Column::CacheWriteTokens,
        )));
    run_round::Entity::find()
        .join(
            sea_orm::JoinType::InnerJoin,
            sea_orm::RelationTrait::def(&run_round::Relation::Run),
        )
        .filter(run::Column::Model.eq(model))
        .filter(run_round::Column::Round.eq(0))
        .filter(billed.gt(0))
}

/// How many runs of `model` have a round 0 that reported input tokens, and the highest
/// row id of those rounds.
pub async fn usage_sample_stats<C: ConnectionTrait>(
    db: &C,
    model: &str,
) -> Result<(u64, Option<i64>)> {
    let row: Option<(i64, Option<i64>)> = usage_rounds(model)
        .select_only()
        .column_as(
            Expr::col((run_round::Entity, run_round::Column::Id)).count(),
            "n",
        )
        .column_as(
            Expr::col((run_round::Entity, run_round::Column::Id)).max(),
            "max_id",
        )
        .into_tuple()
        .one(db)
        .await?;
    Ok(row.map_or((0, None), |(n, max)| {
        (u64::try_from(n).unwrap_or_default(), max)
    }))
}

/// The samples of [`usage_sample_stats`] whose round row id is over `after` (all of them
/// with `None`), in the order they were written.
pub async fn usage_samples<C: ConnectionTrait>(
    db: &C,
    model: &str,
    after: Option<i64>,
) -> Result<Vec<UsageSample>> {
    let mut query = usage_rounds(model);
    if let Some(after) = after {
        query = query.filter(run_round::Column::Id.gt(after));
    }
    Ok(query
        .select_only()
        .column_as(run_round::Column::Id, "round_id")
        .column_as(run::Column::Request, "request")
        .column_as(run_round::Column::InputTokens, "input_tokens")
        .column_as(run_round::Column::CacheReadTokens, "cache_read_tokens")
        .column_as(run_round::Column::CacheWriteTokens, "cache_write_tokens")
        .order_by_asc(run_round::Column::Id)
        .into_model::<UsageSample>()
        .all(db)
        .await?)
}
