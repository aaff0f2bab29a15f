//! Mail in over IMAP (§19): `inbox_state`, unique by folder, and `inbox_rejects`, unique by
//! folder, `UIDVALIDITY` and UID.

use sea_orm::DbErr;
use sea_orm::sea_query::*;

use super::{Migration, SchemaManager, Types};
use crate::db::entities::{inbox_reject, inbox_state};

/// The migration of the IMAP tables. Down drops them.
#[derive(Debug)]
pub(super) struct CreateInbox;

#[async_trait::async_trait]
impl Migration for CreateInbox {
    fn name(&self) -> &'static str {
        "m20261211_000001_create_inbox"
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let t = Types(manager.backend());
        {
            use inbox_state::Column as S;
            manager
                .create_table(
                    t.table(inbox_state::Entity)
                        .col(t.pk(S::Id))
                        .col(t.key(S::Mailbox))
                        .col(ColumnDef::new(S::Persona).string_len(255).not_null())
                        .col(ColumnDef::new(S::UidValidity).big_integer().null())
                        .col(ColumnDef::new(S::HighestUid).big_integer().not_null())
                        .col(t.timestamp(S::LastSyncAt).null())
                        .col(ColumnDef::new(S::PendingUid).big_integer().null())
                        .col(ColumnDef::new(S::PendingAttempts).integer().not_null())
                        .col(t.long_text(S::LeaseOwner).null())
                        .col(t.timestamp(S::LeaseUntil).null())
                        .col(t.timestamp(S::UpdatedAt))
                        .to_owned(),
                )
                .await?;
            super::create_indexes(
                manager,
                inbox_state::Entity,
                &[("idx_inbox_state_mailbox", &[S::Mailbox][..], true)],
            )
            .await?;
        }
        use inbox_reject::Column as R;
        manager
            .create_table(
                t.table(inbox_reject::Entity)
                    .col(t.pk(R::Id))
                    .col(t.key(R::Mailbox))
                    .col(ColumnDef::new(R::Uid).big_integer().not_null())
                    .col(ColumnDef::new(R::UidValidity).big_integer().not_null())
                    .col(t.long_text(R::MessageId).null())
                    .col(t.long_text(R::FromAddress).null())
                    .col(t.long_text(R::Reason).not_null())
                    .col(t.timestamp(R::CreatedAt))
                    .to_owned(),
            )
            .await?;
        super::create_indexes(
            manager,
            inbox_reject::Entity,
            &[(
                "idx_inbox_rejects_uid",
                &[R::Mailbox, R::UidValidity, R::Uid][..],
                true,
            )],
        )
        .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            inbox_reject::Entity.into_iden(),
            inbox_state::Entity.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).if_exists().to_owned())
                .await?;
        }
        Ok(())
    }
}
