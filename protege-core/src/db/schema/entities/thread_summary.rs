//! `thread_summaries`: running summaries of a thread, written by the application.

use sea_orm::entity::prelude::*;

/// A row of `thread_summaries`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
#[sea_orm(table_name = "thread_summaries")]
pub struct Model {
    /// The auto-increment id.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The thread summarised (→ `email_threads.id`).
    pub email_thread_id: i64,
    /// The last message the summary covers (→ `messages.id`).
    pub through_message_id: i64,
    /// The summary's text.
    #[sea_orm(column_type = "Text")]
    pub content: String,
    /// When it was stored.
    pub created_at: DateTimeUtc,
}

/// The relations of `thread_summaries`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The last message the summary covers.
    #[sea_orm(
        belongs_to = "super::message::Entity",
        from = "Column::ThroughMessageId",
        to = "super::message::Column::Id"
    )]
    Message,
}

impl Related<super::message::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Message.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
