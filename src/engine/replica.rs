//! The read replica of [`EngineBuilder::read_database`](super::EngineBuilder::read_database):
//! a database the reads of a resolve go to, connected without migrating (a standby refuses
//! writes), and left alone for a while when it fails.
//!
//! A resolve runs on the replica first. When the replica does not have the trigger message
//! (a mail ingested on the primary a moment ago, not replayed yet), or cannot be reached or
//! fails, the resolve runs again on the primary and the fallback is counted
//! ([`Engine::replica_fallbacks`](super::Engine::replica_fallbacks)). A replica that failed
//! is marked down: resolves go straight to the primary (each one counted) while a
//! background task pings the replica every [`RETRY`] and marks it up once it answers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use protege_core::db;
use sea_orm::DatabaseConnection;
use tokio::sync::OnceCell;

use super::EngineError;

/// How long connecting to the replica, or waiting for one of its pooled connections, may
/// take at most (less when the engine's connect timeout is shorter): a resolve waits this
/// long at worst before it falls back to the primary.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// How often a replica marked down is pinged.
pub(crate) const RETRY: Duration = Duration::from_secs(1);

/// How long `/readyz` waits for the replica's answer before it says `down`.
pub(crate) const PING_TIMEOUT: Duration = Duration::from_secs(1);

/// A read replica: its URL, its connection (made on first use, never migrated), whether it
/// is marked down, and the fallbacks counted.
pub(crate) struct Replica {
    url: String,
    connect_timeout: Duration,
    conn: OnceCell<DatabaseConnection>,
    /// Set while the replica is marked down; a background task clears it.
    down: AtomicBool,
    /// The resolves that ran on the primary instead of the replica.
    fallbacks: AtomicU64,
}

/// The URL without its password.
impl std::fmt::Debug for Replica {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replica")
            .field("url", &protege_core::db::redact_url(&self.url))
            .field("connect_timeout", &self.connect_timeout)
            .field("conn", &self.conn)
            .field("down", &self.down)
            .field("fallbacks", &self.fallbacks)
            .finish()
    }
}

impl Replica {
    pub(crate) fn new(url: String, connect_timeout: Duration) -> Self {
        Self {
            url,
            connect_timeout: connect_timeout.min(CONNECT_TIMEOUT),
            conn: OnceCell::new(),
            down: AtomicBool::new(false),
            fallbacks: AtomicU64::new(0),
        }
    }

    /// Whether the replica is marked down.
    pub(crate) fn is_down(&self) -> bool {
        self.down.load(Ordering::Relaxed)
    }

    /// The replica's connection, connected (never migrated) on first use.
    pub(crate) async fn conn(&self) -> Result<&DatabaseConnection, EngineError> {
        self.conn
            .get_or_try_init(|| async {
                Ok::<_, EngineError>(db::connect_within(&self.url, self.connect_timeout).await?)
            })
            .await
    }

    /// Connects when needed and pings the replica.
    pub(crate) async fn ping(&self) -> Result<(), EngineError> {
        self.conn()
            .await?
            .ping()
            .await
            .map_err(|e| protege_core::Error::from(e).into())
    }

    /// Counts one resolve that ran on the primary instead.
    pub(crate) fn count_fallback(&self) {
        self.fallbacks.fetch_add(1, Ordering::Relaxed);
    }

    /// The resolves that ran on the primary instead.
    pub(crate) fn fallbacks(&self) -> u64 {
        self.fallbacks.load(Ordering::Relaxed)
    }

    /// Marks the replica down, and starts the task that marks it up again once it answers
    /// (unless it is marked down already: one task at a time).
    pub(crate) fn mark_down(self: &Arc<Self>, reason: &EngineError) {
        if self.down.swap(true, Ordering::AcqRel) {
            return;
        }
        tracing::warn!(error = %reason, "read replica down: reads go to the primary");
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // No runtime to ping from: the next resolve tries the replica again.
            self.down.store(false, Ordering::Release);
            return;
        };
        // Weak: the task ends with the engine.
        let weak = Arc::downgrade(self);
        runtime.spawn(async move {
            loop {
                tokio::time::sleep(RETRY).await;
                let Some(replica) = weak.upgrade() else {
                    return;
                };
                let answered = tokio::time::timeout(replica.connect_timeout, replica.ping()).await;
                if matches!(answered, Ok(Ok(()))) {
                    replica.down.store(false, Ordering::Release);
                    tracing::info!("read replica up: reads go to it again");
                    return;
                }
            }
        });
    }
}
