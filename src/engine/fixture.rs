//! The database doors of the engine that need no persona: the schema, fixtures, and the
//! application's own tables.

use std::path::Path;

use crate::db::{self, ExportSummary, ImportSummary};

use super::{Engine, EngineError};

impl Engine {
    /// Connects to the database and brings its schema up to date, as `protege db migrate`
    /// does (every other call does it on first use); the names of the migrations the
    /// engine's connection applied (none when the schema was up to date).
    pub async fn migrate(&self) -> Result<Vec<String>, EngineError> {
        self.db().await?;
        Ok(self.migrations_applied().to_vec())
    }

    /// Imports the JSON fixture at `path`, all or nothing, as `protege db import` does: the
    /// file is read and validated before anything is written (see
    /// [`db::import_fixture_file`]).
    pub async fn import_fixture(&self, path: &Path) -> Result<ImportSummary, EngineError> {
        let conn = self.db().await?;
        Ok(db::import_fixture_file(conn, path).await?)
    }

    /// Every stored thread as a fixture that [`Engine::import_fixture`] reads back, as
    /// `protege db export` writes it (see [`db::export_fixture`] for what it holds and
    /// leaves out), with the counts of what it holds.
    pub async fn export_fixture(&self) -> Result<(serde_json::Value, ExportSummary), EngineError> {
        let conn = self.db().await?;
        Ok(db::export_fixture(conn).await?)
    }

    /// Whether the database has a table `name`: protege's own or the application's (on
    /// PostgreSQL, in the connection's search path).
    pub async fn has_table(&self, name: &str) -> Result<bool, EngineError> {
        let conn = self.db().await?;
        Ok(db::table_names(conn).await?.iter().any(|t| t == name))
    }

    /// Runs `script` in one transaction: SQL statements, each ending with `;` at the end of
    /// a line, lines starting with `--` being comments. For the application's own tables
    /// (the demo's `customers`, which its persona's `LoadRecord` reads); a statement that
    /// fails leaves nothing of the script. The error names the statement by its place.
    pub async fn run_sql_script(&self, script: &str) -> Result<(), EngineError> {
        use sea_orm::{ConnectionTrait, TransactionTrait};
        let conn = self.db().await?;
        let body: Vec<&str> = script
            .lines()
            .filter(|l| !l.trim_start().starts_with("--"))
            .collect();
        let body = body.join("\n");
        let txn = conn.begin().await.map_err(protege_core::Error::from)?;
        let statements = body
            .split(";\n")
            .map(|s| s.trim().trim_end_matches(';'))
            .filter(|s| !s.is_empty());
        for (i, statement) in statements.enumerate() {
            if let Err(e) = txn.execute_unprepared(statement).await {
                return Err(EngineError::new(
                    super::EngineErrorKind::InvalidInput,
                    format!("statement {} of the script failed: {e}", i + 1),
                ));
            }
        }
        txn.commit().await.map_err(protege_core::Error::from)?;
        Ok(())
    }
}
