//! `responsibility_slots`: each due time of a responsibility that was fired (§19), unique,
//! so several replicas fire a slot once.

use sea_orm::entity::prelude::*;

/// A row of `responsibility_slots`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
#[sea_orm(table_name = "responsibility_slots")]
pub struct Model {
    /// The auto-increment id.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The persona.
    pub persona: String,
    /// The responsibility's name.
    pub responsibility: String,
    /// The due time fired (UTC).
    pub slot_at: DateTimeUtc,
    /// When it was fired.
    pub created_at: DateTimeUtc,
}

/// `responsibility_slots` has no relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
