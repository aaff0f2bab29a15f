//! `run_rounds`: each recorded round of a run, its response and results as recorded.
//!
//! A round may be **pending**: its response stored before the results of its tool calls
//! (`Engine::record_response`), so a resumed job never asks the provider again. A pending
//! round's `results` holds the JSON text `null` ([`PENDING_RESULTS`]); recording the round
//! with its results replaces it with the array. At most one round of a run is pending: the
//! one after the run's recorded `rounds`.

use sea_orm::entity::prelude::*;

/// A row of `run_rounds`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
#[sea_orm(table_name = "run_rounds")]
pub struct Model {
    /// The auto-increment id.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The run (→ `runs.id`).
    pub run_id: String,
    /// The round's number, from 0; unique within the run.
    pub round: i32,
    /// The provider's response body as recorded (compact JSON).
    #[sea_orm(column_type = "Text")]
    pub response: String,
    /// The tool results as recorded: a JSON array of `{"tool_call_id","content","is_error"}`;
    /// the JSON text `null` ([`PENDING_RESULTS`]) while the round is pending.
    #[sea_orm(column_type = "Text")]
    pub results: String,
    /// The response's stop reason, as the provider gave it.
    pub stop_reason: String,
    /// Uncached input tokens the response reported.
    pub input_tokens: i64,
    /// Output tokens the response reported.
    pub output_tokens: i64,
    /// Input tokens read from the cache.
    pub cache_read_tokens: i64,
    /// Input tokens written to the cache.
    pub cache_write_tokens: i64,
    /// When the round was recorded.
    pub created_at: DateTimeUtc,
}

/// The `results` of a pending round: the JSON text `null`.
pub const PENDING_RESULTS: &str = "null";

impl Model {
    /// Whether the round is pending: its response is stored, its results are not.
    pub fn is_pending(&self) -> bool {
        self.results == PENDING_RESULTS
    }
}

/// The relations of `run_rounds`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The run.
    #[sea_orm(
        belongs_to = "super::run::Entity",
        from = "Column::RunId",
        to = "super::run::Column::Id"
    )]
    Run,
}

impl Related<super::run::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Run.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
