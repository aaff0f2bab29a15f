//! Runs (§13): `runs`, `run_rounds` and `tool_uses.is_error`.

use sea_orm::DbErr;
use sea_orm::sea_query::*;

use super::{Migration, SchemaManager, Types};
use crate::db::entities::{message, run, run_round, tool_use};

/// The migration of runs (§13): the tables `runs` and `run_rounds`, and `tool_uses.is_error`
/// (whether a recorded tool result is an error). Down drops them.
#[derive(Debug)]
pub(super) struct CreateRuns;

/// The name of the unique index of a run's rounds.
const RUN_ROUND_INDEX: &str = "idx_run_rounds_run_round";

#[async_trait::async_trait]
impl Migration for CreateRuns {
    fn name(&self) -> &'static str {
        "m20261203_000001_create_runs"
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let t = Types(manager.backend());
        // A MySQL/MariaDB migration is not one transaction: each step may already be done.
        if !manager.has_column("tool_uses", "is_error").await? {
            manager
                .alter_table(
                    Table::alter()
                        .table(tool_use::Entity)
                        .add_column(
                            ColumnDef::new(tool_use::Column::IsError)
                                .boolean()
                                .not_null()
                                .default(false),
                        )
                        .to_owned(),
                )
                .await?;
        }
        create_runs(manager, &t).await?;
        create_run_rounds(manager, &t).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [run_round::Entity.into_iden(), run::Entity.into_iden()] {
            manager
                .drop_table(Table::drop().table(table).if_exists().to_owned())
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(tool_use::Entity)
                    .drop_column(tool_use::Column::IsError)
                    .to_owned(),
            )
            .await
    }
}

/// `runs`, with its indexes by persona and start (`cache-report --from-runs`) and by message.
async fn create_runs(manager: &SchemaManager<'_>, t: &Types) -> Result<(), DbErr> {
    use run::Column as R;
    let count = |col: R| ColumnDef::new(col).big_integer().not_null().to_owned();
    manager
        .create_table(
            t.table(run::Entity)
                .col(
                    ColumnDef::new(R::Id)
                        .string_len(64)
                        .not_null()
                        .primary_key(),
                )
                .col(ColumnDef::new(R::Persona).string_len(255).not_null())
                .col(ColumnDef::new(R::MessageId).big_integer().null())
                .col(t.long_text(R::Responsibility).null())
                .col(ColumnDef::new(R::Format).string_len(16).not_null())
                .col(t.long_text(R::Model).not_null())
                .col(ColumnDef::new(R::Status).string_len(16).not_null())
                .col(ColumnDef::new(R::Rounds).integer().not_null())
                .col(count(R::InputTokens))
                .col(count(R::OutputTokens))
                .col(count(R::CacheReadTokens))
                .col(count(R::CacheWriteTokens))
                .col(ColumnDef::new(R::RequestSha256).string_len(64).not_null())
                .col(t.long_text(R::Request).not_null())
                .col(t.timestamp(R::StartedAt))
                .col(t.timestamp(R::FinishedAt).null())
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_runs_message")
                        .from(run::Entity, R::MessageId)
                        .to(message::Entity, message::Column::Id)
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .to_owned(),
        )
        .await?;
    for (name, cols) in [
        ("idx_runs_persona_started", vec![R::Persona, R::StartedAt]),
        ("idx_runs_message", vec![R::MessageId]),
    ] {
        let mut index = Index::create();
        index.name(name).table(run::Entity).if_not_exists();
        for col in cols {
            index.col(col);
        }
        manager.create_index(index).await?;
    }
    Ok(())
}

/// `run_rounds`, one row per recorded round, unique by run and round.
async fn create_run_rounds(manager: &SchemaManager<'_>, t: &Types) -> Result<(), DbErr> {
    use run_round::Column as R;
    let count = |col: R| ColumnDef::new(col).big_integer().not_null().to_owned();
    manager
        .create_table(
            t.table(run_round::Entity)
                .col(t.pk(R::Id))
                .col(ColumnDef::new(R::RunId).string_len(64).not_null())
                .col(ColumnDef::new(R::Round).integer().not_null())
                .col(t.long_text(R::Response).not_null())
                .col(t.long_text(R::Results).not_null())
                .col(t.long_text(R::StopReason).not_null())
                .col(count(R::InputTokens))
                .col(count(R::OutputTokens))
                .col(count(R::CacheReadTokens))
                .col(count(R::CacheWriteTokens))
                .col(t.timestamp(R::CreatedAt))
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_run_rounds_run")
                        .from(run_round::Entity, R::RunId)
                        .to(run::Entity, run::Column::Id)
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .to_owned(),
        )
        .await?;
    manager
        .create_index(
            Index::create()
                .name(RUN_ROUND_INDEX)
                .table(run_round::Entity)
                .col(R::RunId)
                .col(R::Round)
                .unique()
                .if_not_exists()
                .to_owned(),
        )
        .await
}
