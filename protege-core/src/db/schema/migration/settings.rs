//! The engine's own settings (§14): `settings` and its `fence_key`.

use sea_orm::DbErr;
use sea_orm::sea_query::*;

use super::{Migration, SchemaManager, Types};

/// The migration of the engine's own settings (§14): the table `settings` (`name`,
/// `value`) and its first row, `fence_key`, 32 random bytes in hex from which the fences of
/// `[mail] fence = true` derive their nonces. Down drops the table.
#[derive(Debug)]
pub(super) struct CreateSettings;

#[async_trait::async_trait]
impl Migration for CreateSettings {
    fn name(&self) -> &'static str {
        "m20261204_000001_create_settings"
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let t = Types(manager.backend());
        manager
            .create_table(
                t.table(crate::db::settings::Settings::Table)
                    .col(
                        ColumnDef::new(crate::db::settings::Settings::Name)
                            .string_len(64)
                            .not_null()
                            .primary_key(),
                    )
                    .col(t.long_text(crate::db::settings::Settings::Value).not_null())
                    .to_owned(),
            )
            .await?;
        crate::db::settings::insert_fence_key(manager.connection()).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(
                Table::drop()
                    .table(crate::db::settings::Settings::Table)
                    .if_exists()
                    .to_owned(),
            )
            .await
    }
}
