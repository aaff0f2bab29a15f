//! `message_strips`: each message's body as `quoted = "strip"` shows it, made once when the
//! message is stored (and again when an earlier message of its thread arrives or goes), so
//! that a read strips nothing.
//!
//! A message's stripped text depends on its own readable body and on the readable bodies of
//! the messages before it in its thread (by `sent_at`, ties by `id`); see
//! [`crate::db::strips`].

use sea_orm::entity::prelude::*;

/// A row of `message_strips`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
#[sea_orm(table_name = "message_strips")]
pub struct Model {
    /// The auto-increment id.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The message (→ `messages.id`), one row each.
    #[sea_orm(unique)]
    pub message_id: i64,
    /// The version of the strip rules that made the row
    /// ([`STRIP_RULES`](protege_mail::STRIP_RULES)); a read ignores a row of another version.
    pub rules: i32,
    /// The readable body with its quoted text, attributions, signature and tagline removed;
    /// `NULL` when nothing was removed (the readable body stands as it is).
    #[sea_orm(column_type = "Text", nullable)]
    pub text: Option<String>,
    /// The characters (Unicode scalar values) removed: 0 when `text` is `NULL`.
    pub removed: i64,
    /// A hash of the readable body the row was made from: a read that finds another body
    /// (changed since, by another program) strips it again instead of using `text`.
    pub body_hash: i64,
}

/// The relations of `message_strips`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The message whose body was stripped.
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
