//! PostgreSQL reads driven by the thread that resolves.
//!
//! A resolve in `protege serve` runs on a thread of the blocking pool, off the runtime's
//! workers (its CPU, a huge mail's parsing or a long thread's rendering, must never hold a
//! worker). Its reads through the shared SeaORM pool then cost thread hand-offs and a round
//! trip more per statement: the answer's readiness is seen by a worker's I/O driver, which
//! wakes the resolving thread; giving the connection back to the pool spawns a task that
//! wakes a worker again, and that task pings the server before the connection is idle.
//!
//! Inside [`drive_reads_here`], a thread keeps a current-thread runtime and one connection
//! of its own to each PostgreSQL database it reads (opened with the shared pool's connect
//! options: host or socket, user, password, TLS; within its timeout to acquire a
//! connection), and runs the session's reads on it with the statements SeaORM would run
//! (prepared once per connection): the thread waits for the server's answer itself, and
//! nothing else wakes or pings. A read that finds its connection lost (the server ended it,
//! restarted, or the network dropped it while idle) is read again through the shared pool,
//! which tests its connection first ([`lost`]), and the next read connects again. Outside
//! [`drive_reads_here`] (an application's task on a worker, a transaction, a write) the
//! shared pool serves, as before. The connections are closed when the thread ends, or at the
//! thread's next new connection once their shared pool is gone; a thread keeps at most
//! [`MOST_DATABASES`].

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::sync::{Arc, Weak};

use sea_orm::sqlx::postgres::{PgConnectOptions, PgConnection};
use sea_orm::sqlx::{ConnectOptions as _, Connection as _};
use sea_orm::{DatabaseConnection, DbBackend, DbErr, QueryResult, RuntimeErr, Statement};
use sea_query_sqlx::SqlxValues;

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

/// A thread's own runtime and connections, by the connect options of the shared pool they
/// stand in for, held weakly: a connection whose pool is gone is closed at the next
/// connection made.
struct Local {
    runtime: tokio::runtime::Runtime,
    connections: Vec<(Weak<PgConnectOptions>, PgConnection)>,
}

impl Drop for Local {
    fn drop(&mut self) {
        let connections = std::mem::take(&mut self.connections);
        self.runtime.block_on(async {
            for (_, conn) in connections {
                let _ = conn.close().await;
            }
        });
    }
}

/// Runs `statement` on this thread's own connection to the PostgreSQL database behind `db`,
/// to its end; `None`, with nothing run, outside [`drive_reads_here`], on another backend,
/// or when a read of this thread is already under way.
pub(super) fn query(
    db: &DatabaseConnection,
    statement: &Statement,
) -> Option<Result<Vec<QueryResult>, DbErr>> {
    if !HERE.get() || db.get_database_backend() != DbBackend::Postgres {
        return None;
    }
    let shared = db.get_postgres_connection_pool();
    let options = shared.connect_options();
    let connect_within = shared.options().get_acquire_timeout();
    LOCAL.with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        if slot.is_none() {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            *slot = Some(Local {
                runtime,
                connections: Vec::new(),
            });
        }
        let Local {
            runtime,
            connections,
        } = slot.as_mut()?;
        Some(runtime.block_on(async {
            let at = match connections
                .iter()
                .position(|(known, _)| std::ptr::eq(known.as_ptr(), Arc::as_ptr(&options)))
            {
                Some(at) => at,
                None => {
                    let conn = tokio::time::timeout(connect_within, options.connect())
                        .await
                        .map_err(|_| DbErr::Custom("the connection timed out".to_owned()))?
                        .map_err(query_error)?;
                    for (_, gone) in
                        connections.extract_if(.., |(pool, _)| pool.strong_count() == 0)
                    {
                        let _ = gone.close().await;
                    }
                    if connections.len() == MOST_DATABASES {
                        let (_, oldest) = connections.remove(0);
                        let _ = oldest.close().await;
                    }
                    connections.push((Arc::downgrade(&options), conn));
                    connections.len() - 1
                }
            };
            let values = SqlxValues(
                statement
                    .values
                    .clone()
                    .unwrap_or(sea_orm::Values(Vec::new())),
            );
            let sql = sea_orm::sqlx::AssertSqlSafe(statement.sql.as_str());
            match sea_orm::sqlx::query_with(sql, values)
                .fetch_all(&mut connections[at].1)
                .await
            {
                Ok(rows) => Ok(rows.into_iter().map(QueryResult::from).collect()),
                Err(e) => {
                    let e = query_error(e);
                    if lost(&e) {
                        // Connected again at the next read.
                        connections.remove(at);
                    }
                    Err(e)
                }
            }
        }))
    })
}

/// A driver error as SeaORM reports the same error of a query.
fn query_error(e: sea_orm::sqlx::Error) -> DbErr {
    DbErr::Query(RuntimeErr::SqlxError(Arc::new(e)))
}

/// Whether `err`, the error of a read on a thread's own connection, says the connection is
/// gone (or could not be made) rather than that the statement failed: the read, which
/// changed nothing, is then made again through the shared pool, which reports the server's
/// state as it always has.
pub(super) fn lost(err: &DbErr) -> bool {
    use sea_orm::sqlx::Error as Sqlx;
    match err {
        DbErr::Query(RuntimeErr::SqlxError(e)) => match &**e {
            Sqlx::Database(db) => db
                .code()
                // A connection exception, or the server ending the backend (an
                // administrator's command, a crash, a shutdown): its last words.
                .is_some_and(|code| code.starts_with("08") || code.starts_with("57P0")),
            Sqlx::Io(_)
            | Sqlx::Protocol(_)
            | Sqlx::Tls(_)
            | Sqlx::WorkerCrashed
            | Sqlx::Configuration(_) => true,
            _ => false,
        },
        // The connection not made in time.
        DbErr::Custom(_) => true,
        _ => false,
    }
}
