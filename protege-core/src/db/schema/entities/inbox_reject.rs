//! `inbox_rejects`: the messages of an IMAP folder that could not be stored for what they
//! are (§19: not mail, over the limits, a Message-ID conflict, a storing that crashed three
//! times). Each is marked on the server like a stored one, so it is never fetched again.

use sea_orm::entity::prelude::*;

/// A row of `inbox_rejects`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
#[sea_orm(table_name = "inbox_rejects")]
pub struct Model {
    /// The auto-increment id.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The folder, `user@host:port/FOLDER`.
    pub mailbox: String,
    /// The message's UID in the folder.
    pub uid: i64,
    /// The folder's `UIDVALIDITY` the UID belongs to.
    pub uid_validity: i64,
    /// The message's `Message-ID` header as found, when one could be read.
    pub message_id: Option<String>,
    /// The bare From address, when one could be read (so `forget` finds the row).
    pub from_address: Option<String>,
    /// Why it was refused.
    pub reason: String,
    /// When.
    pub created_at: DateTimeUtc,
}

/// `inbox_rejects` has no relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
