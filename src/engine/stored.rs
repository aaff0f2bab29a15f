//! What is stored, listed: [`Engine::threads`] and [`Engine::thread_messages`].

use crate::db::{self, MessageListing, ThreadListing};

use super::{Engine, EngineError, EngineErrorKind};

impl Engine {
    /// The threads that hold messages, the one with the newest message first, at most
    /// `limit` of them (`protege db threads`).
    pub async fn threads(&self, limit: u64) -> Result<Vec<ThreadListing>, EngineError> {
        let conn = self.db().await?;
        Ok(db::list_threads(conn, limit).await?)
    }

    /// The messages of thread `thread_id`, oldest first as a history orders them, with
    /// their attachments (without bytes) and the number of tool calls recorded under each
    /// (`protege db messages --thread ID`). An unknown thread is
    /// [`EngineErrorKind::NotFound`].
    pub async fn thread_messages(
        &self,
        thread_id: i64,
    ) -> Result<Vec<MessageListing>, EngineError> {
        let conn = self.db().await?;
        db::list_thread_messages(conn, thread_id)
            .await?
            .ok_or_else(|| {
                EngineError::new(
                    EngineErrorKind::NotFound,
                    format!("unknown thread `{thread_id}`: no thread with this id in the database"),
                )
            })
    }
}
