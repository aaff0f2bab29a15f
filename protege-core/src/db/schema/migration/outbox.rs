//! The outbox (§18): `outbox`, and `messages.reply_headers` (what a reply to a message
//! needs of its headers).

use sea_orm::DbErr;
use sea_orm::sea_query::*;

use super::{Migration, SchemaManager, Types};
use crate::db::entities::{message, outbox, run};

/// The migration of the outbox: the table `outbox` and the column `messages.reply_headers`.
/// Down drops them.
#[derive(Debug)]
pub(super) struct CreateOutbox;

#[async_trait::async_trait]
impl Migration for CreateOutbox {
    fn name(&self) -> &'static str {
        "m20261208_000001_create_outbox"
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let t = Types(manager.backend());
        // A MySQL/MariaDB migration is not one transaction: each step may already be done.
        if !manager.has_column("messages", "reply_headers").await? {
            manager
                .alter_table(
                    Table::alter()
                        .table(message::Entity)
                        .add_column(t.long_text(message::Column::ReplyHeaders).null())
                        .to_owned(),
                )
                .await?;
        }
        create_outbox(manager, &t).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(outbox::Entity).if_exists().to_owned())
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(message::Entity)
                    .drop_column(message::Column::ReplyHeaders)
                    .to_owned(),
            )
            .await
    }
}

/// `outbox`, unique by message and by run, with the index the delivery worker claims by.
async fn create_outbox(manager: &SchemaManager<'_>, t: &Types) -> Result<(), DbErr> {
    use outbox::Column as O;
    manager
        .create_table(
            t.table(outbox::Entity)
                .col(t.pk(O::Id))
                .col(ColumnDef::new(O::MessageId).big_integer().not_null())
                .col(ColumnDef::new(O::RunId).string_len(64).null())
                .col(ColumnDef::new(O::Persona).string_len(255).not_null())
                .col(ColumnDef::new(O::State).string_len(16).not_null())
                .col(t.long_text(O::Reason).null())
                .col(t.long_text(O::HeldReason).null())
                .col(t.long_text(O::EnvelopeFrom).not_null())
                .col(t.long_text(O::Recipients).not_null())
                .col(t.long_text(O::RefusedRecipients).not_null())
                .col(ColumnDef::new(O::Attempts).integer().not_null())
                .col(t.timestamp(O::NextAttemptAt).null())
                .col(t.long_text(O::LeaseOwner).null())
                .col(t.timestamp(O::LeaseUntil).null())
                .col(t.long_text(O::SmtpReply).null())
                .col(t.long_text(O::ApprovedBy).null())
                .col(t.timestamp(O::ApprovedAt).null())
                .col(t.timestamp(O::QueuedAt).null())
                .col(t.timestamp(O::SentAt).null())
                .col(t.long_text(O::Raw).not_null())
                .col(t.timestamp(O::CreatedAt))
                .col(t.timestamp(O::UpdatedAt))
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_outbox_message")
                        .from(outbox::Entity, O::MessageId)
                        .to(message::Entity, message::Column::Id)
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_outbox_run")
                        .from(outbox::Entity, O::RunId)
                        .to(run::Entity, run::Column::Id)
                        .on_delete(ForeignKeyAction::SetNull),
                )
                .to_owned(),
        )
        .await?;
    super::create_indexes(
        manager,
        outbox::Entity,
        &[
            ("idx_outbox_message", &[O::MessageId][..], true),
            ("idx_outbox_run", &[O::RunId], true),
            ("idx_outbox_state_due", &[O::State, O::NextAttemptAt], false),
            ("idx_outbox_persona_state", &[O::Persona, O::State], false),
        ],
    )
    .await
}

/// The index the agent's daily cap counts a persona's replies by (§17): `outbox` by
/// persona, creation time and state, so the count reads the day's entries of the index and
/// no row, however many replies the persona sent before. Down drops it.
#[derive(Debug)]
pub(super) struct IndexOutboxPersonaCreated;

/// The index of [`IndexOutboxPersonaCreated`].
const PERSONA_CREATED: &str = "idx_outbox_persona_created";

#[async_trait::async_trait]
impl Migration for IndexOutboxPersonaCreated {
    fn name(&self) -> &'static str {
        "m20261213_000001_index_outbox_persona_created"
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use outbox::Column as O;
        super::create_indexes(
            manager,
            outbox::Entity,
            &[(
                PERSONA_CREATED,
                &[O::Persona, O::CreatedAt, O::State][..],
                false,
            )],
        )
        .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name(PERSONA_CREATED)
                    .table(outbox::Entity)
                    .to_owned(),
            )
            .await
    }
}
