//! PostgreSQL reads driven by the thread that resolves.
//!
//! A resolve in `protege serve` runs on a thread of the blocking pool, off the runtime's
//! workers (its CPU, a huge mail's parsing or a long thread's rendering, must never hold a
//! worker). Its reads through the shared SeaORM pool then cost two thread hand-offs per
//! statement: the answer's readiness is seen by a worker's I/O driver, which wakes the
//! resolving thread, and giving the connection back to the pool spawns a task that wakes a
//! worker again. On PostgreSQL that switching was about half of a resolve's CPU.
//!
//! Inside [`drive_reads_here`], a thread keeps a current-thread runtime and one connection
//! of its own to each PostgreSQL database it reads (the same connect options as the shared
//! pool: host or socket, user, password, TLS; and its timeout to acquire a connection), and
//! runs the session's reads on them: the
//! thread waits for the server's answer itself, and nothing else wakes. Outside it (an
//! application's task on a worker, a transaction, a write) the shared pool serves, as
//! before. The connections are closed when the thread ends; a thread keeps at most
//! [`MOST_DATABASES`] of them.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::sync::Arc;

use sea_orm::sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sea_orm::{DatabaseConnection, DbBackend, SqlxPostgresConnector};

/// The most databases a thread keeps a connection to (a primary and a read replica, with
/// room for a reconnected engine); the oldest is closed beyond.
const MOST_DATABASES: usize = 4;

thread_local! {
    /// Whether this thread drives its own reads ([`drive_reads_here`]).
    static HERE: Cell<bool> = const { Cell::new(false) };
    /// This thread's runtime and connections, made at its first read.
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

/// Runs `work` to its end on the calling thread, blocking it, with `runtime`'s context
/// entered (its timers, tasks and sockets work as on the runtime) and the PostgreSQL reads
/// of the database session driven by this thread (see the module documentation). For a
/// thread of the blocking pool; never on a runtime's worker.
pub fn drive_reads_here<T>(runtime: &tokio::runtime::Handle, work: impl Future<Output = T>) -> T {
    /// Turns the flag off again, also when `work` panics.
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            HERE.set(self.0);
        }
    }
    let _context = runtime.enter();
    let _reset = Reset(HERE.replace(true));
    futures::executor::block_on(work)
}

/// A thread's own runtime and connections.
struct Local {
    runtime: tokio::runtime::Runtime,
    databases: Vec<(Arc<PgConnectOptions>, DatabaseConnection)>,
}

impl Drop for Local {
    fn drop(&mut self) {
        let databases = std::mem::take(&mut self.databases);
        self.runtime.block_on(async {
            for (_, db) in databases {
                let _ = db.close().await;
            }
        });
    }
}

impl Local {
    /// The connection of this thread to the database of `shared` (the shared pool), made
    /// when missing with the pool's connect options and its timeout and test to acquire a
    /// connection: a server gone away fails a read here as it fails one there.
    fn database(&mut self, shared: &PgPool) -> &DatabaseConnection {
        let options = shared.connect_options();
        let at = match self
            .databases
            .iter()
            .position(|(known, _)| Arc::ptr_eq(known, &options))
        {
            Some(at) => at,
            None => {
                if self.databases.len() == MOST_DATABASES {
                    let (_, oldest) = self.databases.remove(0);
                    let _ = self.runtime.block_on(oldest.close());
                }
                let _context = self.runtime.enter();
                // One connection, opened at the first read, never closed for being idle
                // (which would need a maintenance task) while the thread lives.
                let pool = PgPoolOptions::new()
                    .acquire_timeout(shared.options().get_acquire_timeout())
                    .test_before_acquire(shared.options().get_test_before_acquire())
                    .max_connections(1)
                    .min_connections(0)
                    .idle_timeout(None)
                    .max_lifetime(None)
                    .connect_lazy_with((*options).clone());
                self.databases.push((
                    options,
                    SqlxPostgresConnector::from_sqlx_postgres_pool(pool),
                ));
                self.databases.len() - 1
            }
        };
        &self.databases[at].1
    }
}

/// Runs `read` on this thread's own connection to the PostgreSQL database behind `db`, to
/// its end (it is handed this thread's runtime to block on and the connection); `None`,
/// with nothing run, outside [`drive_reads_here`], on another backend, or when a read of
/// this thread is already under way.
pub(super) fn read<T>(
    db: &DatabaseConnection,
    read: impl FnOnce(&tokio::runtime::Runtime, &DatabaseConnection) -> T,
) -> Option<T> {
    if !HERE.get() || db.get_database_backend() != DbBackend::Postgres {
        return None;
    }
    let shared = db.get_postgres_connection_pool();
    LOCAL.with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        if slot.is_none() {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            *slot = Some(Local {
                runtime,
                databases: Vec::new(),
            });
        }
        let local = slot.as_mut()?;
        let database = local.database(shared).clone();
        Some(read(&local.runtime, &database))
    })
}
