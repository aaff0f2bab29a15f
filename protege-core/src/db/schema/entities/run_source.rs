//! `run_sources`: the stored messages a scheduled run's request held (§18), one row per
//! message, so erasing a message also erases the digests that quoted it. A reply run is
//! found through its trigger (`runs.message_id`) and has no rows here.

use sea_orm::entity::prelude::*;

/// A row of `run_sources`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
#[sea_orm(table_name = "run_sources")]
pub struct Model {
    /// The auto-increment id.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The run (→ `runs.id`).
    pub run_id: String,
    /// The SHA-256 of the message's Message-ID (as stored), in lowercase hex, as
    /// `erased_messages` keeps it.
    pub message_sha256: String,
}

/// `run_sources` has no relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
