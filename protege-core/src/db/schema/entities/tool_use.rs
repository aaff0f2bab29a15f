//! `tool_uses`: the tool calls made while answering an inbound message, with their results.

use sea_orm::entity::prelude::*;

/// A row of `tool_uses`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
#[sea_orm(table_name = "tool_uses")]
pub struct Model {
    /// The auto-increment id.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The inbound message whose run made the call (→ `messages.id`).
    pub message_id: i64,
    /// The run that made the call.
    pub run_id: String,
    /// The round within the run.
    pub turn_index: i32,
    /// The position of the call within its round.
    pub position: i32,
    /// The id the tool result answers.
    pub tool_call_id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments: text holding a JSON object.
    #[sea_orm(column_type = "Text")]
    pub input: String,
    /// The result text, replayed byte for byte; `None` when none was recorded.
    #[sea_orm(column_type = "Text", nullable)]
    pub result: Option<String>,
    /// Whether the tool failed (sent as the `tool_result`'s `is_error` to Anthropic).
    pub is_error: bool,
}

/// The relations of `tool_uses`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The inbound message whose run made the call.
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
