//! `email_threads`: one row per conversation.

use sea_orm::entity::prelude::*;

/// A row of `email_threads`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
#[sea_orm(table_name = "email_threads")]
pub struct Model {
    /// The auto-increment id.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The subject of the thread.
    #[sea_orm(column_type = "Text")]
    pub subject: String,
    /// When the thread started (the `sent_at` of its first imported message).
    pub created_at: DateTimeUtc,
}

/// The relations of `email_threads`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The messages of the thread.
    #[sea_orm(has_many = "super::message::Entity")]
    Messages,
}

impl Related<super::message::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Messages.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
