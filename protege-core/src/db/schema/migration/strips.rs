//! Each message's body as `quoted = "strip"` shows it, stored once (`message_strips`).

use sea_orm::DbErr;
use sea_orm::sea_query::*;

use super::{Migration, SchemaManager, Types};
use crate::db::entities::{message, message_strip};

/// The migration that creates `message_strips` and strips every stored message (see
/// [`crate::db::strips`]). Down drops the table; reads then strip again.
#[derive(Debug)]
pub(super) struct CreateMessageStrips;

/// The name of the unique index by message.
const STRIP_MESSAGE_INDEX: &str = "idx_message_strips_message";

#[async_trait::async_trait]
impl Migration for CreateMessageStrips {
    fn name(&self) -> &'static str {
        "m20261206_000001_create_message_strips"
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use message_strip::Column as S;
        let t = Types(manager.backend());
        manager
            .create_table(
                t.table(message_strip::Entity)
                    .col(t.pk(S::Id))
                    .col(ColumnDef::new(S::MessageId).big_integer().not_null())
                    .col(ColumnDef::new(S::Rules).integer().not_null())
                    .col(t.long_text(S::Text).null())
                    .col(ColumnDef::new(S::Removed).big_integer().not_null())
                    .col(ColumnDef::new(S::BodyHash).big_integer().not_null())
                    .foreign_key(
                        // A message deleted by hand takes its row with it.
                        ForeignKey::create()
                            .from(message_strip::Entity, S::MessageId)
                            .to(message::Entity, message::Column::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name(STRIP_MESSAGE_INDEX)
                    .table(message_strip::Entity)
                    .col(S::MessageId)
                    .unique()
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        // A MySQL/MariaDB run stopped half-way left some rows: they are made again.
        crate::db::strips::restrip_all(manager.connection()).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(
                Table::drop()
                    .table(message_strip::Entity)
                    .if_exists()
                    .to_owned(),
            )
            .await
    }
}

/// The stored mail made again by the rules of [`STRIP_RULES`](protege_mail::STRIP_RULES) 2:
/// the HTML bodies converted again (the converter drops more text a reader does not see)
/// and every message stripped again (a message is stripped against the messages stored
/// before it alone, the persona's own against its own). Down keeps the rows: a read ignores
/// rows of other rules.
#[derive(Debug)]
pub(super) struct MailRulesAgain;

#[async_trait::async_trait]
impl Migration for MailRulesAgain {
    fn name(&self) -> &'static str {
        "m20261207_000001_mail_rules_again"
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.connection();
        super::html::convert_again(db).await?;
        crate::db::strips::restrip_all(db).await
    }

    async fn down(&self, _manager: &SchemaManager) -> Result<(), DbErr> {
        Ok(())
    }
}
