//! Running summaries written by the application: [`Engine::store_summary`].

use crate::db::{self, StoredSummary};

use super::{Engine, EngineError, EngineErrorKind};

/// The largest summary `store_summary` accepts, in bytes (1 MiB).
pub const SUMMARY_MAX_BYTES: usize = 1024 * 1024;

impl Engine {
    /// Stores `content` as the running summary of the thread of the message `message_id`,
    /// through that message (protege never writes summaries itself). `ThreadSummary`
    /// contributes the newest one prior to the message being answered, and `ThreadHistory`
    /// with `after_summary` starts its window after its through-message. An unknown
    /// message is [`EngineErrorKind::NotFound`]; a blank or oversized summary
    /// [`EngineErrorKind::InvalidInput`].
    pub async fn store_summary(
        &self,
        message_id: &str,
        content: &str,
    ) -> Result<StoredSummary, EngineError> {
        if content.len() > SUMMARY_MAX_BYTES {
            return Err(EngineError::new(
                EngineErrorKind::InvalidInput,
                format!(
                    "the summary through `{message_id}` is {} bytes, over the limit of {SUMMARY_MAX_BYTES}",
                    content.len()
                ),
            ));
        }
        let conn = self.db().await?;
        match db::store_summary(conn, message_id, content, chrono::Utc::now()).await? {
            Some(stored) => Ok(stored),
            None => Err(super::unknown_message(conn, message_id).await),
        }
    }
}
