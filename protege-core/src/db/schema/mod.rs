//! The schema: protege's SeaORM entities ([`entities`]), the migrations that create and
//! upgrade their tables ([`Migrator`]), and applying them under the migration lock
//! ([`migrate`]).

pub mod entities;
mod migration;

use sea_orm::DatabaseConnection;

use crate::db::{db_reason, lock};
use crate::error::{Error, ErrorKind, Result};

pub use migration::Migrator;

/// Creates or upgrades the schema (the shipped [`Migrator`]'s pending migrations).
///
/// Runs under a lock held for the whole run, so any number of processes may migrate the
/// same database at once and all succeed: a transaction-scoped advisory lock on
/// PostgreSQL, `GET_LOCK` on MySQL/MariaDB, and a `BEGIN IMMEDIATE` transaction on SQLite.
/// Returns the names of the migrations this call applied (none when the schema was up to
/// date).
pub async fn migrate(db: &DatabaseConnection) -> Result<Vec<String>> {
    lock::migrate_locked(db).await.map_err(|e| {
        Error::new(
            ErrorKind::Database,
            format!("cannot migrate the database: {}", db_reason(&e)),
        )
        .with_db_err(e)
    })
}
