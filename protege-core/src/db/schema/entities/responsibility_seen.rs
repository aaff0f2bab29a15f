//! `responsibilities_seen`: when the agent first saw each responsibility of a persona (§19),
//! so its first slot is the first one after that instant, on every replica.

use sea_orm::entity::prelude::*;

/// A row of `responsibilities_seen`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
#[sea_orm(table_name = "responsibilities_seen")]
pub struct Model {
    /// The auto-increment id.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The persona.
    pub persona: String,
    /// The responsibility's name, unique per persona.
    pub responsibility: String,
    /// When the agent first saw it (UTC).
    pub seen_at: DateTimeUtc,
}

/// `responsibilities_seen` has no relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
