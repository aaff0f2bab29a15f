//! The database doors of the engine that need no persona: the schema and fixtures.

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
}
