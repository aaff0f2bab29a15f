//! What the session keeps for one pool of connections (a `DatabaseConnection` and its
//! clones), for as long as the pool lives.

// Used by the SQLite and MySQL/MariaDB drivers only.
#![cfg_attr(not(any(feature = "sqlite", feature = "mysql")), allow(dead_code))]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

/// A value per pool, found by the address of the pool's connect options (`O`), which the
/// entry holds weakly: while the entry exists the address cannot be given to another
/// allocation, so it names no other pool. The entries of pools gone (their last clone
/// dropped, the options with them) are dropped when a value is next added.
pub(super) struct PerPool<O, V> {
    entries: Mutex<HashMap<usize, (Weak<O>, V)>>,
}

impl<O, V: Clone> PerPool<O, V> {
    pub(super) fn new() -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<usize, (Weak<O>, V)>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The value kept for the pool of `options`.
    #[cfg_attr(not(feature = "mysql"), allow(dead_code))]
    pub(super) fn get(&self, options: &Arc<O>) -> Option<V> {
        let key = Arc::as_ptr(options) as usize;
        self.lock().get(&key).map(|(_, value)| value.clone())
    }

    /// The value kept for the pool of `options`, or the one `make` gives, kept from now on
    /// (`None`, nothing kept, when `make` gives none). One lock around both: two callers
    /// never make two values for one pool.
    pub(super) fn get_or_make(
        &self,
        options: &Arc<O>,
        make: impl FnOnce() -> Option<V>,
    ) -> Option<V> {
        let key = Arc::as_ptr(options) as usize;
        let mut entries = self.lock();
        if let Some((_, value)) = entries.get(&key) {
            return Some(value.clone());
        }
        let value = make()?;
        entries.retain(|_, (pool, _)| pool.strong_count() > 0);
        entries.insert(key, (Arc::downgrade(options), value.clone()));
        Some(value)
    }
}
