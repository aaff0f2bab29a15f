//! Erasure that reaches the agent's tables (§18): `erased_messages`, unique by the SHA-256
//! of an erased Message-ID, and `run_sources`, the messages a scheduled run's request held.

use sea_orm::DbErr;
use sea_orm::sea_query::*;

use super::{Migration, SchemaManager, Types};
use crate::db::entities::{erased_message, run_source};

/// The migration of the erasure tables. Down drops them.
#[derive(Debug)]
pub(super) struct CreateErasure;

#[async_trait::async_trait]
impl Migration for CreateErasure {
    fn name(&self) -> &'static str {
        "m20261212_000001_create_erasure"
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let t = Types(manager.backend());
        {
            use erased_message::Column as E;
            manager
                .create_table(
                    t.table(erased_message::Entity)
                        .col(t.pk(E::Id))
                        .col(ColumnDef::new(E::MessageSha256).string_len(64).not_null())
                        .col(t.timestamp(E::ErasedAt))
                        .to_owned(),
                )
                .await?;
            super::create_indexes(
                manager,
                erased_message::Entity,
                &[("idx_erased_messages_sha256", &[E::MessageSha256][..], true)],
            )
            .await?;
        }
        use run_source::Column as S;
        manager
            .create_table(
                t.table(run_source::Entity)
                    .col(t.pk(S::Id))
                    .col(ColumnDef::new(S::RunId).string_len(64).not_null())
                    .col(ColumnDef::new(S::MessageSha256).string_len(64).not_null())
                    .to_owned(),
            )
            .await?;
        super::create_indexes(
            manager,
            run_source::Entity,
            &[
                ("idx_run_sources_sha256", &[S::MessageSha256][..], false),
                ("idx_run_sources_run", &[S::RunId][..], false),
            ],
        )
        .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            run_source::Entity.into_iden(),
            erased_message::Entity.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).if_exists().to_owned())
                .await?;
        }
        Ok(())
    }
}
