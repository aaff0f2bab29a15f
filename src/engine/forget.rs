//! Erasing a correspondent: [`Engine::forget`].

use crate::db::{self, Forgotten};

use super::{Engine, EngineError, EngineErrorKind};

impl Engine {
    /// Erases the correspondent `address` (§15): every message whose From, To or Cc holds
    /// it (any case, with or without a display name; an address only quoted in a body does
    /// not count), with its attachments, tool uses, runs and their rounds; the summaries of
    /// every thread it touched; and the threads left without a message. One transaction;
    /// with `dry_run`, the counts of what would be removed and nothing changes.
    ///
    /// An empty or malformed address is [`EngineErrorKind::InvalidInput`]; so is the
    /// address of a live persona, which every thread of that persona holds (erasing it
    /// erases them all: [`Engine::forget_any`] does, when that is what is meant); a
    /// database failure [`EngineErrorKind::Unavailable`].
    pub async fn forget(&self, address: &str, dry_run: bool) -> Result<Forgotten, EngineError> {
        // Compared as `forget` reads an address; a malformed one is refused by `forget_any`.
        let key = db::forget_key(address).unwrap_or_default();
        if let Some(persona) = self.personas().into_iter().find(|p| {
            p.info()
                .addresses
                .iter()
                .any(|a| db::forget_key(a).as_deref() == Some(key.as_str()))
        }) {
            return Err(EngineError::new(
                EngineErrorKind::InvalidInput,
                format!(
                    "`{key}` is an address of persona `{}`: forgetting it erases every thread of that persona; force it (`--force`, `\"force\": true`) if that is meant",
                    persona.name()
                ),
            ));
        }
        self.forget_any(address, dry_run).await
    }

    /// [`Engine::forget`], also for the address of a persona (every thread it holds).
    pub async fn forget_any(&self, address: &str, dry_run: bool) -> Result<Forgotten, EngineError> {
        let conn = self.db().await?;
        Ok(db::forget(conn, address, dry_run).await?)
    }
}
