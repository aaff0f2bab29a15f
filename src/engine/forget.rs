//! Erasing a correspondent: [`Engine::forget`].

use crate::db::{self, Forgotten};

use super::{Engine, EngineError};

impl Engine {
    /// Erases the correspondent `address` (§15): every message whose From, To or Cc holds
    /// it (any case, with or without a display name; an address only quoted in a body does
    /// not count), with its attachments, tool uses, runs and their rounds; the summaries of
    /// every thread it touched; and the threads left without a message. One transaction;
    /// with `dry_run`, the counts of what would be removed and nothing changes.
    ///
    /// An empty or malformed address is [`EngineErrorKind::InvalidInput`](super::EngineErrorKind::InvalidInput);
    /// a database failure [`EngineErrorKind::Unavailable`](super::EngineErrorKind::Unavailable).
    pub async fn forget(&self, address: &str, dry_run: bool) -> Result<Forgotten, EngineError> {
        let conn = self.db().await?;
        Ok(db::forget(conn, address, dry_run).await?)
    }
}
