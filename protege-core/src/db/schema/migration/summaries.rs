//! `thread_summaries`, the running summaries of a thread (§12).

use sea_orm::DbErr;
use sea_orm::sea_query::*;

use super::{Migration, SchemaManager, Types};
use crate::db::entities::{email_thread, message, thread_summary};

/// The second migration: `thread_summaries`, the running summaries of a thread.
#[derive(Debug)]
pub(super) struct CreateThreadSummaries;

#[async_trait::async_trait]
impl Migration for CreateThreadSummaries {
    fn name(&self) -> &'static str {
        "m20260601_000001_create_thread_summaries"
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let t = Types(manager.backend());
        use thread_summary::Column as S;
        manager
            .create_table(
                t.table(thread_summary::Entity)
                    .col(t.pk(S::Id))
                    .col(ColumnDef::new(S::EmailThreadId).big_integer().not_null())
                    .col(ColumnDef::new(S::ThroughMessageId).big_integer().not_null())
                    .col(t.long_text(S::Content).not_null())
                    .col(t.timestamp(S::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_thread_summaries_email_thread")
                            .from(thread_summary::Entity, S::EmailThreadId)
                            .to(email_thread::Entity, email_thread::Column::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_thread_summaries_message")
                            .from(thread_summary::Entity, S::ThroughMessageId)
                            .to(message::Entity, message::Column::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_thread_summaries_thread")
                    .table(thread_summary::Entity)
                    .col(S::EmailThreadId)
                    .col(S::CreatedAt)
                    .col(S::Id)
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(
                Table::drop()
                    .table(thread_summary::Entity)
                    .if_exists()
                    .to_owned(),
            )
            .await
    }
}
