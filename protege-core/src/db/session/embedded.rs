//! The hot reads on the embedded SQLite file, through the SQLite C library.
//!
//! SeaORM reaches SQLite through sqlx, whose driver runs every connection on a thread of
//! its own and hands each row across a channel as an owned copy; for the reads behind
//! `ThreadHistory` and the trigger lookup that hand-off costs more than SQLite's own work.
//! For a SQLite *file*, those reads run the very same sea-query statements through
//! rusqlite (the same SQLite library, linked once) on a small pool of read-only
//! connections. In-memory databases, PostgreSQL and MySQL/MariaDB keep the SeaORM path;
//! both paths decode rows with the same decoders, by column name ([`super::rows`]), so they
//! build the same values.
//!
//! The pool belongs to SeaORM's pool of the same file (one per `DatabaseConnection` and its
//! clones, dropped after it) and is emptied and reopened when the path starts naming
//! another file (the database was deleted and created again), so a reader never serves
//! rows of a file that is gone.

// Without the `sqlite` feature no connection is SQLite's, and the reader is never made.
#![cfg_attr(not(feature = "sqlite"), allow(dead_code, unused_imports))]
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use chrono::SecondsFormat;
use rusqlite::config::DbConfig;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OpenFlags};
use sea_orm::sea_query::{QueryStatementWriter, SelectStatement, SqliteQueryBuilder, Value};
#[cfg(feature = "sqlite")]
use sea_orm::sqlx::sqlite::SqliteConnectOptions;
use sea_orm::{DatabaseConnection, DatabaseConnectionType};

use super::per_pool::PerPool;
use crate::db::SQLITE_BUSY_TIMEOUT;
use crate::error::{Error, Result};

/// Idle connections kept per database file.
const MAX_IDLE: usize = 16;

/// Prepared statements kept per connection.
const STATEMENT_CACHE: usize = 64;

/// The page cache of each read connection, in KiB (SQLite's `cache_size` takes a negative
/// number as KiB): 8 MiB, four times SQLite's default.
///
/// With the default 2 MB the reader of the 1,000,000-message benchmark database kept no
/// page from one history to the next (125 reads from the file per `limit = 50` history, one
/// interior page read 50 times in one statement) and took 1.4× as long as in a
/// 10,000-message database; from 2.5 MB up the pages stay cached and the ratio is 1.0×.
/// The bundled SQLite counts the pages of every connection of the process against one
/// budget (`SQLITE_ENABLE_MEMORY_MANAGEMENT`), so the room a reader has depends on the
/// other connections too: 8 MiB leaves a margin. At most [`MAX_IDLE`] connections keep a
/// cache, and a cache only grows with the pages read.
///
/// Memory-mapped reads (`mmap_size`) were as fast and rejected: a database file truncated
/// by another program then kills the process with `SIGBUS`, where a cached read reports
/// a malformed database.
const CACHE_KIB: i64 = 8 * 1024;

impl From<rusqlite::Error> for Error {
    /// Worded as SeaORM's SQLite driver words the same failure, so both read paths give
    /// the same message.
    fn from(err: rusqlite::Error) -> Self {
        let reason = match &err {
            rusqlite::Error::SqliteFailure(e, Some(message)) => format!(
                "error returned from database: (code: {}) {message}",
                e.extended_code
            ),
            other => other.to_string(),
        };
        Error::database(reason.trim_end_matches('.'))
    }
}

/// A statement's parameter as SeaORM's SQLite driver binds it.
/// `statement`'s SQL for SQLite and its values bound as SeaORM's SQLite driver binds them.
fn built(statement: &impl QueryStatementWriter) -> Result<(String, Vec<SqlValue>)> {
    let (sql, values) = statement.build(SqliteQueryBuilder);
    let params = values.into_iter().map(bind).collect::<Result<Vec<_>>>()?;
    Ok((sql, params))
}

fn bind(value: Value) -> Result<SqlValue> {
    use SqlValue::{Integer, Null, Real, Text};
    Ok(match value {
        Value::Bool(v) => v.map_or(Null, |b| Integer(i64::from(b))),
        Value::TinyInt(v) => v.map_or(Null, |n| Integer(n.into())),
        Value::SmallInt(v) => v.map_or(Null, |n| Integer(n.into())),
        Value::Int(v) => v.map_or(Null, |n| Integer(n.into())),
        Value::BigInt(v) => v.map_or(Null, Integer),
        Value::TinyUnsigned(v) => v.map_or(Null, |n| Integer(n.into())),
        Value::SmallUnsigned(v) => v.map_or(Null, |n| Integer(n.into())),
        Value::Unsigned(v) => v.map_or(Null, |n| Integer(n.into())),
        Value::BigUnsigned(v) => match v {
            None => Null,
            Some(n) => Integer(i64::try_from(n).map_err(|_| {
                Error::database(&format!("the parameter {n} is too large for SQLite"))
            })?),
        },
        Value::Float(v) => v.map_or(Null, |x| Real(x.into())),
        Value::Double(v) => v.map_or(Null, Real),
        Value::String(v) => v.map_or(Null, Text),
        Value::Char(v) => v.map_or(Null, |c| Text(c.to_string())),
        Value::Bytes(v) => v.map_or(Null, SqlValue::Blob),
        Value::Json(v) => v.map_or(Null, |j| Text(j.to_string())),
        Value::ChronoDateTimeUtc(v) => v.map_or(Null, |t| {
            Text(t.to_rfc3339_opts(SecondsFormat::AutoSi, false))
        }),
        other => {
            return Err(Error::database(&format!(
                "cannot bind the parameter {other:?} on SQLite"
            )));
        }
    })
}

/// The identity of the file a path names, to notice a database deleted and created again.
#[cfg(unix)]
fn file_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path)
        .ok()
        .filter(std::fs::Metadata::is_file)
        .map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn file_identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path)
        .ok()
        .filter(std::fs::Metadata::is_file)
        .map(|_| (0, 0))
}

/// A pool of read-only connections to one SQLite database file, and its one read-write
/// connection for the writes of a hot path.
#[derive(Debug)]
pub(crate) struct Reader {
    path: PathBuf,
    state: Mutex<Pool>,
    statements: AtomicU64,
    writer: Mutex<WriterSlot>,
}

/// The read-write connection of a file, opened at the first write, with the identity of
/// the file it was opened on.
#[derive(Debug, Default)]
struct WriterSlot {
    identity: Option<(u64, u64)>,
    conn: Option<Connection>,
}

#[derive(Debug, Default)]
struct Pool {
    identity: Option<(u64, u64)>,
    idle: Vec<Connection>,
}

/// The reader for `db` when it is a SQLite database file; `None` for an in-memory
/// database, another backend, or a file that does not exist.
#[cfg(not(feature = "sqlite"))]
pub(crate) fn reader(_db: &DatabaseConnection) -> Option<Arc<Reader>> {
    None
}

/// The reader for `db` when it is a SQLite database file; `None` for an in-memory
/// database, another backend, or a file that does not exist.
///
/// A reader belongs to `db`'s pool (every clone of a `DatabaseConnection` shares it; see
/// [`PerPool`]): made at the pool's first read; once the pool is gone (its last clone
/// dropped), its reader and connections are dropped at the next read of a pool not known
/// yet.
#[cfg(feature = "sqlite")]
pub(crate) fn reader(db: &DatabaseConnection) -> Option<Arc<Reader>> {
    let DatabaseConnectionType::SqlxSqlitePoolConnection(_) = &db.inner else {
        return None;
    };
    static READERS: OnceLock<PerPool<SqliteConnectOptions, Arc<Reader>>> = OnceLock::new();
    let options = db.get_sqlite_connection_pool().connect_options();
    READERS.get_or_init(PerPool::new).get_or_make(&options, || {
        let path = options.get_filename();
        // An in-memory database (`file:sqlx-in-memory-N`) names no file.
        file_identity(path)?;
        Some(Arc::new(Reader {
            path: path.to_owned(),
            state: Mutex::new(Pool::default()),
            statements: AtomicU64::new(0),
            writer: Mutex::default(),
        }))
    })
}

impl Reader {
    /// A connection of the pool, lent to one read on the calling task, in a read
    /// transaction when `snapshot` (every statement then sees the same snapshot of the
    /// file: in WAL mode a writer's commit in between is not seen).
    ///
    /// Not on a blocking thread: the hand-off to another thread and back costs more than
    /// the read itself, and under load it waits for a free core twice. A read waits for a
    /// writer's commit (at most [`SQLITE_BUSY_TIMEOUT`]) as any SQLite reader does; in WAL
    /// mode it never waits. A connection not given back (the read failed) is closed, its
    /// transaction with it.
    pub(super) fn lend(&self, snapshot: bool) -> Result<Connection> {
        let conn = self.take()?;
        if snapshot {
            conn.execute_batch("BEGIN")?;
        }
        Ok(conn)
    }

    /// `conn` back to the pool once its read is done, its transaction ended.
    pub(super) fn give_back_read(&self, conn: Connection, snapshot: bool) -> Result<()> {
        if snapshot {
            conn.execute_batch("COMMIT")?;
        }
        self.give_back(conn);
        Ok(())
    }

    /// Runs `statement` on `conn`, a connection of this pool, calling `each` for every row
    /// in order.
    pub(super) fn query(
        &self,
        conn: &Connection,
        statement: &SelectStatement,
        mut each: impl FnMut(&rusqlite::Row<'_>) -> Result<()>,
    ) -> Result<()> {
        let (sql, params) = built(statement)?;
        self.statements.fetch_add(1, Ordering::Relaxed);
        let mut prepared = conn.prepare_cached(&sql)?;
        let mut rows = prepared.query(rusqlite::params_from_iter(params))?;
        while let Some(row) = rows.next()? {
            each(row)?;
        }
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pool> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn take(&self) -> Result<Connection> {
        let identity = file_identity(&self.path);
        {
            let mut pool = self.lock();
            if pool.identity != identity {
                pool.idle.clear();
                pool.identity = identity;
            }
            if let Some(conn) = pool.idle.pop() {
                return Ok(conn);
            }
        }
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(SQLITE_BUSY_TIMEOUT)?;
        // The query planner's stability guarantee: a plan that does not depend on the
        // values bound. Without it SQLite plans again at every run a statement whose plan
        // could depend on them (a bound `LIMIT`, or any indexed equality once `ANALYZE` has
        // written `sqlite_stat4`), and the statement cache saves nothing: that re-planning
        // took a fifth of a resolve's CPU. The plans of these reads come from their indexes.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        conn.pragma_update(None, "cache_size", -CACHE_KIB)?;
        Ok(conn)
    }

    fn give_back(&self, conn: Connection) {
        let mut pool = self.lock();
        if pool.idle.len() < MAX_IDLE {
            pool.idle.push(conn);
        }
    }
}

impl Reader {
    /// Runs `write` in one transaction on the file's read-write connection, on the calling
    /// task: `BEGIN IMMEDIATE` (it waits for another writer at most
    /// [`SQLITE_BUSY_TIMEOUT`], as any SQLite writer does), committed when `write` returns
    /// `Ok`, rolled back otherwise.
    fn write<T>(&self, write: impl FnOnce(&Writes<'_>) -> Result<T>) -> Result<T> {
        let mut slot = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let identity = file_identity(&self.path);
        if slot.identity != identity {
            slot.conn = None;
            slot.identity = identity;
        }
        if slot.conn.is_none() {
            let conn = Connection::open_with_flags(
                &self.path,
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )?;
            conn.busy_timeout(SQLITE_BUSY_TIMEOUT)?;
            // As SeaORM's SQLite driver opens its connections (`connect`): the file is in WAL
            // mode already, and `synchronous` is a setting of each connection.
            conn.pragma_update(None, "foreign_keys", true)?;
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            // Plans that do not depend on the values bound, as on the read connections.
            conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
            conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
            slot.conn = Some(conn);
        }
        let Some(conn) = slot.conn.as_mut() else {
            unreachable!("opened above")
        };
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let out = write(&Writes { tx: &tx })?;
        tx.commit()?;
        Ok(out)
    }
}

/// The statements of one write transaction on a SQLite file ([`embedded_write`]).
#[derive(Debug)]
pub struct Writes<'a> {
    tx: &'a rusqlite::Transaction<'a>,
}

impl Writes<'_> {
    /// Runs an `INSERT`, `UPDATE` or `DELETE` built by sea-query, bound as SeaORM's SQLite
    /// driver binds it; the number of rows it changed.
    pub fn execute(&self, statement: &impl QueryStatementWriter) -> Result<usize> {
        let (sql, params) = built(statement)?;
        Ok(self
            .tx
            .prepare_cached(&sql)?
            .execute(rusqlite::params_from_iter(params))?)
    }

    /// Runs a one-row `INSERT`; the new row's id, `None` when it inserted nothing.
    pub(crate) fn insert_row(&self, statement: &impl QueryStatementWriter) -> Result<Option<i64>> {
        Ok(match self.execute(statement)? {
            0 => None,
            _ => Some(self.tx.last_insert_rowid()),
        })
    }

    /// Runs `statement`, calling `each` for every row in order.
    pub(crate) fn select_rows(
        &self,
        statement: &SelectStatement,
        mut each: impl FnMut(&dyn super::tx::Cells) -> std::result::Result<(), sea_orm::DbErr>,
    ) -> std::result::Result<(), sea_orm::DbErr> {
        use super::tx::sqlite_error;
        let (sql, params) = built(statement).map_err(sqlite_error)?;
        let mut prepared = self.tx.prepare_cached(&sql).map_err(sqlite_error)?;
        let mut rows = prepared
            .query(rusqlite::params_from_iter(params))
            .map_err(sqlite_error)?;
        while let Some(row) = rows.next().map_err(sqlite_error)? {
            each(row)?;
        }
        Ok(())
    }
}

/// Runs `write` in one transaction through the SQLite C library when `db` is a SQLite
/// database file (`None` otherwise, and nothing runs): committed when it returns `Ok`,
/// rolled back otherwise. For writes on a hot path, where SeaORM's driver costs more than
/// SQLite's own work (a run's round); the statements are the sea-query statements the
/// other backends run through SeaORM.
#[doc(hidden)]
pub fn embedded_write<T>(
    db: &DatabaseConnection,
    write: impl FnOnce(&Writes<'_>) -> Result<T>,
) -> Option<Result<T>> {
    Some(reader(db)?.write(write))
}

/// The number of statements run so far in this process on the SQLite file behind `db`
/// through the SQLite C library rather than through SeaORM (whose metric callback does
/// not see them); `None` when `db` is not a SQLite file.
///
/// Together with SeaORM's metric callback it gives the full count of a read's statements.
pub fn embedded_statements(db: &DatabaseConnection) -> Option<u64> {
    reader(db).map(|r| r.statements.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_bind_like_the_sqlx_driver() {
        let t = chrono::DateTime::parse_from_rfc3339("2026-03-02T09:14:00.5Z")
            .unwrap()
            .to_utc();
        assert_eq!(
            bind(Value::ChronoDateTimeUtc(Some(t))).unwrap(),
            SqlValue::Text("2026-03-02T09:14:00.500+00:00".to_owned())
        );
        assert_eq!(bind(Value::BigInt(Some(7))).unwrap(), SqlValue::Integer(7));
        assert_eq!(bind(Value::BigInt(None)).unwrap(), SqlValue::Null);
        assert_eq!(
            bind(Value::BigUnsigned(Some(u64::MAX)))
                .unwrap_err()
                .to_string(),
            "database error: the parameter 18446744073709551615 is too large for SQLite"
        );
    }

    /// A reader of a new database file in `dir` made by `sql`.
    fn reader_of(dir: &tempfile::TempDir, sql: &str) -> Reader {
        let path = dir.path().join("t.db");
        Connection::open(&path).unwrap().execute_batch(sql).unwrap();
        Reader {
            path,
            state: Mutex::new(Pool::default()),
            statements: AtomicU64::new(0),
            writer: Mutex::default(),
        }
    }

    /// The bundled SQLite is built with the query planner stability guarantee on
    /// (`.cargo/config.toml`), so SeaORM's connections, which protege cannot configure
    /// without unsafe code, keep their cached statements' plans too.
    #[test]
    fn sqlite_is_built_with_stable_plans() {
        let conn = Connection::open_in_memory().unwrap();
        assert!(
            conn.db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG)
                .unwrap()
        );
    }

    /// A read connection has an 8 MiB page cache and does not map the file.
    #[test]
    fn read_connections_cache_8_mib_and_map_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let reader = reader_of(&dir, "CREATE TABLE t (id INTEGER PRIMARY KEY);");
        let conn = reader.take().unwrap();
        let pragma = |name: &str| -> i64 {
            conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(pragma("cache_size"), -8192);
        assert_eq!(pragma("mmap_size"), 0);
    }

    /// A cached statement runs again without being parsed and planned again, even with a
    /// bound `LIMIT` and `sqlite_stat4` written by `ANALYZE` (each of which alone made SQLite
    /// re-plan at every run).
    #[test]
    fn a_cached_statement_is_not_prepared_again() {
        use rusqlite::StatementStatus;
        use sea_orm::sea_query::{Alias, Expr, ExprTrait as _, Query};
        let dir = tempfile::tempdir().unwrap();
        let reader = reader_of(
            &dir,
            "CREATE TABLE t (id INTEGER PRIMARY KEY, k INTEGER);
             CREATE INDEX t_k ON t (k);
             WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 500)
             INSERT INTO t (k) SELECT x % 7 FROM c;
             ANALYZE;",
        );
        let query = Query::select()
            .column(Alias::new("id"))
            .from(Alias::new("t"))
            .and_where(Expr::col(Alias::new("k")).eq(3))
            .limit(2)
            .to_owned();
        for _ in 0..3 {
            let conn = reader.lend(false).unwrap();
            let mut ids = Vec::new();
            reader
                .query(&conn, &query, |row| {
                    ids.push(row.get::<_, i64>(0)?);
                    Ok(())
                })
                .unwrap();
            reader.give_back_read(conn, false).unwrap();
            assert_eq!(ids, [3, 10]);
        }
        let conn = reader.take().unwrap();
        let stat4: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_stat4", [], |r| r.get(0))
            .unwrap();
        assert!(stat4 > 0);
        let (sql, _) = query.build(SqliteQueryBuilder);
        assert!(sql.ends_with("LIMIT ?"), "{sql}");
        let prepared = conn.prepare_cached(&sql).unwrap();
        assert_eq!(prepared.get_status(StatementStatus::RePrepare), 0);
        drop(prepared);
        assert_eq!(reader.statements.load(Ordering::Relaxed), 3);
    }

    /// A reader belongs to its SeaORM pool: every clone of the connection finds the same
    /// one, another connection to the same file its own, and once the pool is gone its
    /// reader (and the reader's connections) is dropped at the next new pool's first read.
    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn a_reader_lives_as_long_as_its_pool() {
        let dir = tempfile::tempdir().unwrap();
        let url = |name: &str| {
            let path = dir.path().join(name);
            Connection::open(&path).unwrap();
            format!("sqlite://{}", path.display())
        };
        let first = sea_orm::Database::connect(url("a.db")).await.unwrap();
        let mine = reader(&first).unwrap();
        assert!(Arc::ptr_eq(&mine, &reader(&first.clone()).unwrap()));
        let again = sea_orm::Database::connect(url("a.db")).await.unwrap();
        assert!(!Arc::ptr_eq(&mine, &reader(&again).unwrap()));
        let mine = {
            let only = Arc::downgrade(&mine);
            drop(mine);
            only
        };
        let pool = Arc::downgrade(&first.get_sqlite_connection_pool().connect_options());
        drop(first);
        // The driver's tasks that still hold the pool (a connection going back to it) end.
        let watchdog = std::time::Instant::now();
        while pool.strong_count() > 0 {
            assert!(
                watchdog.elapsed().as_secs() < 30,
                "the pool is never dropped"
            );
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        assert!(
            mine.upgrade().is_some(),
            "kept until a new pool's first read"
        );
        let other = sea_orm::Database::connect(url("b.db")).await.unwrap();
        reader(&other).unwrap();
        assert!(mine.upgrade().is_none());
        assert!(reader(&again).is_some());
    }
}
