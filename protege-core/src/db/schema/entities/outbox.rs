//! `outbox`: a reply stored before it is sent (§18), with its exact bytes and its delivery.

use sea_orm::entity::prelude::*;

/// A row of `outbox`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
#[sea_orm(table_name = "outbox")]
pub struct Model {
    /// The auto-increment id.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The reply's message (→ `messages.id`), unique.
    #[sea_orm(unique)]
    pub message_id: i64,
    /// The run whose answer it is (→ `runs.id`), unique when set; `None` for a reply
    /// written by a person.
    #[sea_orm(unique)]
    pub run_id: Option<String>,
    /// The persona that sends it.
    pub persona: String,
    /// `waiting`, `queued`, `sending`, `sent`, `failed` or `rejected`.
    pub state: String,
    /// Why it waits (`draft`, `first_contact`, `unauthenticated`, `max_cc`, `contains a
    /// secret`), failed (the server's reply or the error) or was rejected (the reason given).
    #[sea_orm(column_type = "Text", nullable)]
    pub reason: Option<String>,
    /// Why a queued row is not delivered now (`reply = "off"`, `reply = "draft"`, the
    /// persona removed, an operator's hold); `None` when it may leave.
    #[sea_orm(column_type = "Text", nullable)]
    pub held_reason: Option<String>,
    /// The envelope sender (the persona's address).
    #[sea_orm(column_type = "Text")]
    pub envelope_from: String,
    /// The envelope recipients still to deliver to: a JSON array of bare addresses.
    #[sea_orm(column_type = "Text")]
    pub recipients: String,
    /// The recipients a server refused with a 5xx, with its reply: a JSON array of
    /// `{"address","reply"}`.
    #[sea_orm(column_type = "Text")]
    pub refused_recipients: String,
    /// Delivery attempts made.
    pub attempts: i32,
    /// When the next attempt is due; `None` when it is due now.
    pub next_attempt_at: Option<DateTimeUtc>,
    /// The worker or application holding the row while it is `sending`.
    #[sea_orm(column_type = "Text", nullable)]
    pub lease_owner: Option<String>,
    /// When that lease runs out.
    pub lease_until: Option<DateTimeUtc>,
    /// The last reply of the SMTP server (or the error of the last attempt).
    #[sea_orm(column_type = "Text", nullable)]
    pub smtp_reply: Option<String>,
    /// Who approved it.
    #[sea_orm(column_type = "Text", nullable)]
    pub approved_by: Option<String>,
    /// When it was approved.
    pub approved_at: Option<DateTimeUtc>,
    /// When it became `queued` (its `Date` header); `None` while it waits.
    pub queued_at: Option<DateTimeUtc>,
    /// When the server accepted it.
    pub sent_at: Option<DateTimeUtc>,
    /// The exact bytes to send (RFC 5322, CRLF line ends, ASCII).
    #[sea_orm(column_type = "Text")]
    pub raw: String,
    /// When the row was made.
    pub created_at: DateTimeUtc,
    /// When the row last changed.
    pub updated_at: DateTimeUtc,
}

/// The relations of `outbox`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The reply's message.
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
