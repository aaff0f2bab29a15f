//! `inbox_state`: where the agent stands in each IMAP folder it reads (§19): the folder's
//! `UIDVALIDITY`, the highest UID stored (only ever raised), the last completed sync, the
//! UID whose storing is under way, and the lease of the one session that reads the folder.

use sea_orm::entity::prelude::*;

/// A row of `inbox_state`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
#[sea_orm(table_name = "inbox_state")]
pub struct Model {
    /// The auto-increment id.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The folder, `user@host:port/FOLDER`: unique.
    pub mailbox: String,
    /// The persona that reads it.
    pub persona: String,
    /// The folder's `UIDVALIDITY` when it was last read; `None` before the first sync.
    pub uid_validity: Option<i64>,
    /// The highest UID stored (or skipped on the first sync): later UIDs are new.
    pub highest_uid: i64,
    /// When the last sync that read the folder to its end began: mail the server received
    /// before it was read.
    pub last_sync_at: Option<DateTimeUtc>,
    /// The UID whose storing began and has not ended, if any.
    pub pending_uid: Option<i64>,
    /// How many times storing `pending_uid` began.
    pub pending_attempts: i32,
    /// The process holding the folder's session.
    pub lease_owner: Option<String>,
    /// Until when it holds it.
    pub lease_until: Option<DateTimeUtc>,
    /// When the row last changed.
    pub updated_at: DateTimeUtc,
}

/// `inbox_state` has no relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
