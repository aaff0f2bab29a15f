//! The agent (§17, §19): `agent_jobs` and `responsibility_slots`.

use sea_orm::DbErr;
use sea_orm::sea_query::*;

use super::{Migration, SchemaManager, Types};
use crate::db::entities::{agent_job, message, responsibility_slot, run};

/// The migration of the agent's jobs: the tables `responsibility_slots` and `agent_jobs`.
/// Down drops them.
#[derive(Debug)]
pub(super) struct CreateAgentJobs;

#[async_trait::async_trait]
impl Migration for CreateAgentJobs {
    fn name(&self) -> &'static str {
        "m20261209_000001_create_agent_jobs"
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let t = Types(manager.backend());
        create_slots(manager, &t).await?;
        create_jobs(manager, &t).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(
                Table::drop()
                    .table(agent_job::Entity)
                    .if_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(
                Table::drop()
                    .table(responsibility_slot::Entity)
                    .if_exists()
                    .to_owned(),
            )
            .await
    }
}

/// `responsibility_slots`, unique by persona, responsibility and due time.
async fn create_slots(manager: &SchemaManager<'_>, t: &Types) -> Result<(), DbErr> {
    use responsibility_slot::Column as S;
    manager
        .create_table(
            t.table(responsibility_slot::Entity)
                .col(t.pk(S::Id))
                .col(ColumnDef::new(S::Persona).string_len(255).not_null())
                .col(ColumnDef::new(S::Responsibility).string_len(255).not_null())
                .col(t.timestamp(S::SlotAt))
                .col(t.timestamp(S::CreatedAt))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(
            Index::create()
                .name("idx_responsibility_slots_slot")
                .table(responsibility_slot::Entity)
                .if_not_exists()
                .col(S::Persona)
                .col(S::Responsibility)
                .col(S::SlotAt)
                .unique()
                .to_owned(),
        )
        .await
}

/// `agent_jobs`, unique by message and by slot, with the indexes workers claim by.
async fn create_jobs(manager: &SchemaManager<'_>, t: &Types) -> Result<(), DbErr> {
    use agent_job::Column as J;
    manager
        .create_table(
            t.table(agent_job::Entity)
                .col(t.pk(J::Id))
                .col(ColumnDef::new(J::MessageId).big_integer().null())
                .col(ColumnDef::new(J::SlotId).big_integer().null())
                .col(ColumnDef::new(J::Persona).string_len(255).not_null())
                .col(ColumnDef::new(J::State).string_len(16).not_null())
                .col(t.long_text(J::Reason).null())
                .col(t.long_text(J::GateReason).null())
                .col(ColumnDef::new(J::RunId).string_len(64).null())
                .col(ColumnDef::new(J::Attempts).integer().not_null())
                .col(t.timestamp(J::NextAttemptAt).null())
                .col(t.long_text(J::LeaseOwner).null())
                .col(t.timestamp(J::LeaseUntil).null())
                .col(t.long_text(J::Approval).null())
                .col(t.long_text(J::Error).null())
                .col(t.timestamp(J::CreatedAt))
                .col(t.timestamp(J::UpdatedAt))
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_agent_jobs_message")
                        .from(agent_job::Entity, J::MessageId)
                        .to(message::Entity, message::Column::Id)
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_agent_jobs_slot")
                        .from(agent_job::Entity, J::SlotId)
                        .to(responsibility_slot::Entity, responsibility_slot::Column::Id)
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_agent_jobs_run")
                        .from(agent_job::Entity, J::RunId)
                        .to(run::Entity, run::Column::Id)
                        .on_delete(ForeignKeyAction::SetNull),
                )
                .to_owned(),
        )
        .await?;
    super::create_indexes(
        manager,
        agent_job::Entity,
        &[
            ("idx_agent_jobs_message", &[J::MessageId][..], true),
            ("idx_agent_jobs_slot", &[J::SlotId], true),
            (
                "idx_agent_jobs_state_due",
                &[J::State, J::NextAttemptAt],
                false,
            ),
            (
                "idx_agent_jobs_persona_state",
                &[J::Persona, J::State],
                false,
            ),
        ],
    )
    .await
}
