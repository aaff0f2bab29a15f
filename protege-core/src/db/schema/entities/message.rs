//! `messages`: one row per email, inbound or outbound.

use sea_orm::entity::prelude::*;

/// A row of `messages`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
#[sea_orm(table_name = "messages")]
pub struct Model {
    /// The auto-increment id (the tie-breaker of ordering).
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The thread (→ `email_threads.id`).
    pub email_thread_id: i64,
    /// The RFC 5322 Message-ID, unique.
    #[sea_orm(unique)]
    pub message_id: String,
    /// `inbound` or `outbound`.
    pub direction: String,
    /// The From header form, e.g. `Alice <alice@example.com>`.
    #[sea_orm(column_type = "Text")]
    pub from_address: String,
    /// A JSON array of header-form addresses.
    #[sea_orm(column_type = "Text")]
    pub to_addresses: String,
    /// A JSON array of header-form addresses.
    #[sea_orm(column_type = "Text")]
    pub cc_addresses: String,
    /// The subject.
    #[sea_orm(column_type = "Text")]
    pub subject: String,
    /// The plain-text body.
    #[sea_orm(column_type = "Text", nullable)]
    pub text_body: Option<String>,
    /// The HTML body.
    #[sea_orm(column_type = "Text", nullable)]
    pub html_body: Option<String>,
    /// The Message-ID this message replies to.
    #[sea_orm(column_type = "Text", nullable)]
    pub in_reply_to: Option<String>,
    /// When it was sent (UTC).
    pub sent_at: DateTimeUtc,
    /// The HTML body as readable text, converted once when the message was stored (`NULL`
    /// when there is no HTML body).
    #[sea_orm(column_type = "Text", nullable)]
    pub html_text: Option<String>,
    /// What a reply to it needs of its headers besides its addresses, as JSON
    /// ([`ReplyHeaders`](protege_mail::ReplyHeaders)); `NULL` when it has none of them.
    #[sea_orm(column_type = "Text", nullable)]
    pub reply_headers: Option<String>,
}

/// The relations of `messages`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The thread the message belongs to.
    #[sea_orm(
        belongs_to = "super::email_thread::Entity",
        from = "Column::EmailThreadId",
        to = "super::email_thread::Column::Id"
    )]
    EmailThread,
    /// The attachments of the message.
    #[sea_orm(has_many = "super::attachment::Entity")]
    Attachments,
    /// The tool uses of the runs that answered the message.
    #[sea_orm(has_many = "super::tool_use::Entity")]
    ToolUses,
}

impl Related<super::email_thread::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::EmailThread.def()
    }
}

impl Related<super::attachment::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Attachments.def()
    }
}

impl Related<super::tool_use::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::ToolUses.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
