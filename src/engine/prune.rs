//! Retention: [`Engine::prune`].

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::db::{self, Pruned};

use super::{Engine, EngineError};

impl Engine {
    /// Drops every thread whose newest message was sent before `now - older_than` (§15),
    /// with its messages and their attachments, tool uses, runs and those runs' rounds, and
    /// the thread's summaries. One transaction; with `dry_run`, the counts of what would be
    /// removed and nothing changes. [`db::parse_duration`] reads a duration such as `365d`
    /// or `12w`.
    ///
    /// A zero `older_than`, or a `now` outside the years 1970 to 9999, is
    /// [`EngineErrorKind::InvalidInput`](super::EngineErrorKind::InvalidInput); a database
    /// failure [`EngineErrorKind::Unavailable`](super::EngineErrorKind::Unavailable).
    pub async fn prune(
        &self,
        older_than: Duration,
        now: DateTime<Utc>,
        dry_run: bool,
    ) -> Result<Pruned, EngineError> {
        let conn = self.db().await?;
        Ok(db::prune(conn, older_than, now, dry_run).await?)
    }
}
