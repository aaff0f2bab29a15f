//! Responsibilities on time (§19): a slot is unique by its wall-clock time
//! (`responsibility_slots.local_time`), and `responsibilities_seen` keeps when the agent
//! first saw each responsibility.

use sea_orm::DbErr;
use sea_orm::sea_query::*;

use super::{Migration, SchemaManager, Types};
use crate::db::entities::{responsibility_seen, responsibility_slot};

/// The migration of the slots' wall-clock times: the column
/// `responsibility_slots.local_time` with its unique index, and the table
/// `responsibilities_seen`. No slot was fired before it, so the column's default fills no
/// real row. Down drops them.
#[derive(Debug)]
pub(super) struct SlotTimes;

/// The unique index of a slot's wall-clock time.
const LOCAL_INDEX: &str = "idx_responsibility_slots_local";

#[async_trait::async_trait]
impl Migration for SlotTimes {
    fn name(&self) -> &'static str {
        "m20261210_000001_responsibility_slot_times"
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use responsibility_slot::Column as S;
        let t = Types(manager.backend());
        // A MySQL/MariaDB migration is not one transaction: a run stopped half-way left the
        // column in place.
        if !manager
            .has_column("responsibility_slots", "local_time")
            .await?
        {
            manager
                .alter_table(
                    Table::alter()
                        .table(responsibility_slot::Entity)
                        .add_column(
                            ColumnDef::new(S::LocalTime)
                                .string_len(32)
                                .not_null()
                                .default(""),
                        )
                        .to_owned(),
                )
                .await?;
        }
        super::create_indexes(
            manager,
            responsibility_slot::Entity,
            &[(
                LOCAL_INDEX,
                &[S::Persona, S::Responsibility, S::LocalTime][..],
                true,
            )],
        )
        .await?;
        create_seen(manager, &t).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(
                Table::drop()
                    .table(responsibility_seen::Entity)
                    .if_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .drop_index(
                Index::drop()
                    .name(LOCAL_INDEX)
                    .table(responsibility_slot::Entity)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(responsibility_slot::Entity)
                    .drop_column(responsibility_slot::Column::LocalTime)
                    .to_owned(),
            )
            .await
    }
}

/// `responsibilities_seen`, unique by persona and responsibility.
async fn create_seen(manager: &SchemaManager<'_>, t: &Types) -> Result<(), DbErr> {
    use responsibility_seen::Column as R;
    manager
        .create_table(
            t.table(responsibility_seen::Entity)
                .col(t.pk(R::Id))
                .col(ColumnDef::new(R::Persona).string_len(255).not_null())
                .col(ColumnDef::new(R::Responsibility).string_len(255).not_null())
                .col(t.timestamp(R::SeenAt))
                .to_owned(),
        )
        .await?;
    super::create_indexes(
        manager,
        responsibility_seen::Entity,
        &[(
            "idx_responsibilities_seen_name",
            &[R::Persona, R::Responsibility][..],
            true,
        )],
    )
    .await
}
