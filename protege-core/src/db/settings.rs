//! The engine's own settings, kept in the database: the table `settings` (`name` →
//! `value`), made by the migration `m20261204_000001_create_settings`.
//!
//! Its one row so far is `fence_key`: the secret from which the fences of `[mail] fence =
//! true` derive their nonces (DESIGN §14), 32 random bytes in hex, drawn when the table is
//! created, so every process on one database draws the same fences and a thread's
//! requests keep their cached prefix across restarts.

use sea_orm::sea_query::{Expr, ExprTrait, Query};
use sea_orm::{ConnectionTrait, DbErr};

use crate::error::Result;

/// The table (`Settings::Table`, `settings`) and its columns.
#[derive(Debug, Clone, Copy, sea_orm::DeriveIden)]
pub(crate) enum Settings {
    /// The table.
    Table,
    /// The setting's name, the primary key.
    Name,
    /// Its value.
    Value,
}

/// The name of the fence key's row.
const FENCE_KEY: &str = "fence_key";

/// The fence key kept in the database: `None` when the database has no settings table yet
/// (not migrated) or no key.
pub async fn fence_key<C: ConnectionTrait>(db: &C) -> Result<Option<String>> {
    let select = Query::select()
        .column(Settings::Value)
        .from(Settings::Table)
        .and_where(Expr::col(Settings::Name).eq(FENCE_KEY))
        .to_owned();
    let row = db.query_one(&select).await?;
    Ok(match row {
        Some(row) => Some(row.try_get_by_index::<String>(0)?),
        None => None,
    })
}

/// Inserts a new random fence key, unless one is there already (a key another process
/// inserted first stays: the insert of this one then fails and is ignored).
#[doc(hidden)]
pub async fn insert_fence_key<C: ConnectionTrait>(db: &C) -> std::result::Result<(), DbErr> {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key)
        .map_err(|e| DbErr::Custom(format!("cannot draw a fence key: {e}")))?;
    let hex = protege_mail::hex(&key);
    if fence_key(db)
        .await
        .map_err(|e| DbErr::Custom(e.to_string()))?
        .is_some()
    {
        return Ok(());
    }
    let insert = Query::insert()
        .into_table(Settings::Table)
        .columns([Settings::Name, Settings::Value])
        .values_panic([FENCE_KEY.into(), hex.into()])
        .to_owned();
    if let Err(e) = db.execute(&insert).await {
        // Another process's key went in first: keep it.
        if fence_key(db)
            .await
            .map_err(|e| DbErr::Custom(e.to_string()))?
            .is_none()
        {
            return Err(e);
        }
    }
    Ok(())
}
