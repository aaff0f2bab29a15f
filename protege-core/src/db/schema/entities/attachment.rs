//! `attachments`: files attached to messages.

use sea_orm::entity::prelude::*;

/// A row of `attachments`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
#[sea_orm(table_name = "attachments")]
pub struct Model {
    /// The auto-increment id (insertion order).
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The message (→ `messages.id`).
    pub message_id: i64,
    /// The stable id shown to the model and to tools, unique.
    #[sea_orm(unique)]
    pub attachment_id: String,
    /// The file name.
    #[sea_orm(column_type = "Text")]
    pub filename: String,
    /// The MIME type.
    #[sea_orm(column_type = "Text")]
    pub content_type: String,
    /// The size in bytes.
    pub byte_size: i64,
    /// The bytes, when stored.
    #[sea_orm(column_type = "Blob", nullable)]
    pub data: Option<Vec<u8>>,
}

/// The relations of `attachments`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The message the file is attached to.
    #[sea_orm(
        belongs_to = "super::message::Entity",
        from = "Column::MessageId",
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
