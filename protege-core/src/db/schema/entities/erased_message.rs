//! `erased_messages`: the SHA-256 of each Message-ID `forget` erased (§18), so the same mail
//! is never stored again; the Message-ID itself is not kept.

use sea_orm::entity::prelude::*;

/// A row of `erased_messages`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
#[sea_orm(table_name = "erased_messages")]
pub struct Model {
    /// The auto-increment id.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The SHA-256 of the Message-ID as it was stored (angle brackets included), in
    /// lowercase hex; unique.
    #[sea_orm(unique)]
    pub message_sha256: String,
    /// When it was erased.
    pub erased_at: DateTimeUtc,
}

/// `erased_messages` has no relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
