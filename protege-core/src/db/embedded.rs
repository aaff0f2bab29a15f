//! The hot reads on the embedded SQLite file, through the SQLite C library.
//!
//! SeaORM reaches SQLite through sqlx, whose driver runs every connection on a thread of
//! its own and hands each row across a channel as an owned copy; for the reads behind
//! `ThreadHistory` and the trigger lookup that hand-off costs more than SQLite's own work.
//! For a SQLite *file*, those reads run the very same sea-query statements through
//! rusqlite (the same SQLite library, linked once) on a small pool of read-only
//! connections. In-memory databases, PostgreSQL and MySQL/MariaDB keep the SeaORM path;
//! both paths decode rows through the same accessors ([`super::rows::Row`]), so they build
//! the same values.
//!
//! The pool belongs to the database file (one per path per process) and is dropped and
//! reopened when the path starts naming another file (the database was deleted and
//! created again), so a reader never serves rows of a file that is gone.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use chrono::SecondsFormat;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OpenFlags};
use sea_orm::sea_query::{QueryBuilder, SelectStatement, SqlWriter, SqliteQueryBuilder, Value};
use sea_orm::{DatabaseConnection, DatabaseConnectionType};

use super::SQLITE_BUSY_TIMEOUT;
use crate::error::{Error, Result};

/// Idle connections kept per database file.
const MAX_IDLE: usize = 16;

/// Prepared statements kept per connection.
const STATEMENT_CACHE: usize = 64;

/// The SQL text and parameters of a statement for this read path: sea-query's SQLite
/// rendering, except that `LIMIT` and `OFFSET` counts are written as integer literals.
///
/// SQLite's planner reads a bound `LIMIT` value, so a statement with `LIMIT ?` is parsed
/// and planned again every time it is bound, which is every run: the statement cache
/// would save nothing, and in a resolve that re-preparation took a fifth of the CPU. A
/// count is an integer the engine computed, never text from outside.
#[derive(Default)]
struct Sql {
    text: String,
    values: Vec<Value>,
}

impl std::fmt::Write for Sql {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.text.push_str(s);
        Ok(())
    }
}

impl std::fmt::Display for Sql {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl SqlWriter for Sql {
    fn push_param<T: QueryBuilder>(&mut self, value: Value, _: &T) {
        if self.text.ends_with(" LIMIT ") || self.text.ends_with(" OFFSET ") {
            let count = match &value {
                Value::BigUnsigned(Some(n)) => i64::try_from(*n).ok(),
                Value::Unsigned(Some(n)) => Some(i64::from(*n)),
                Value::BigInt(Some(n)) => Some(*n),
                Value::Int(Some(n)) => Some(i64::from(*n)),
                _ => None,
            };
            if let Some(n) = count {
                self.text.push_str(&n.to_string());
                return;
            }
        }
        self.text.push('?');
        self.values.push(value);
    }

    fn as_writer(&mut self) -> &mut dyn std::fmt::Write {
        self as _
    }
}

/// [`Sql`] of `statement`.
fn sql(statement: &SelectStatement) -> Sql {
    let mut out = Sql::default();
    statement.build_collect_into(SqliteQueryBuilder, &mut out);
    out
}

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

/// A pool of read-only connections to one SQLite database file.
#[derive(Debug)]
pub(crate) struct Reader {
    path: PathBuf,
    state: Mutex<Pool>,
    statements: AtomicU64,
}

/// A connection of the pool, lent to one read.
pub(crate) struct Session<'a> {
    conn: &'a Connection,
    statements: &'a AtomicU64,
}

#[derive(Debug, Default)]
struct Pool {
    identity: Option<(u64, u64)>,
    idle: Vec<Connection>,
}

/// The reader for `db` when it is a SQLite database file; `None` for an in-memory
/// database, another backend, or a file that does not exist.
pub(crate) fn reader(db: &DatabaseConnection) -> Option<Arc<Reader>> {
    let DatabaseConnectionType::SqlxSqlitePoolConnection(_) = &db.inner else {
        return None;
    };
    let options = db.get_sqlite_connection_pool().connect_options();
    let path = options.get_filename();
    static READERS: OnceLock<Mutex<HashMap<PathBuf, Arc<Reader>>>> = OnceLock::new();
    let mut readers = READERS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(reader) = readers.get(path) {
        return Some(Arc::clone(reader));
    }
    // An in-memory database (`file:sqlx-in-memory-N`) names no file.
    file_identity(path)?;
    let reader = Arc::new(Reader {
        path: path.to_owned(),
        state: Mutex::new(Pool::default()),
        statements: AtomicU64::new(0),
    });
    readers.insert(path.to_owned(), Arc::clone(&reader));
    Some(reader)
}

impl Reader {
    /// Runs `read` on one of the pool's connections, on the calling task.
    ///
    /// Not on a blocking thread: the hand-off to another thread and back costs more than
    /// the read itself, and under load it waits for a free core twice. A read waits for a
    /// writer's commit (at most [`SQLITE_BUSY_TIMEOUT`]) as any SQLite reader does; in WAL
    /// mode it never waits.
    pub(crate) fn run<T>(&self, read: impl FnOnce(&Session<'_>) -> Result<T>) -> Result<T> {
        let conn = self.take()?;
        let out = read(&Session {
            conn: &conn,
            statements: &self.statements,
        });
        if out.is_ok() {
            self.give_back(conn);
        }
        out
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
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        Ok(conn)
    }

    fn give_back(&self, conn: Connection) {
        let mut pool = self.lock();
        if pool.idle.len() < MAX_IDLE {
            pool.idle.push(conn);
        }
    }
}

impl Session<'_> {
    /// Runs `statement`, calling `each` for every row in order.
    pub(crate) fn query(
        &self,
        statement: &SelectStatement,
        mut each: impl FnMut(&rusqlite::Row<'_>) -> Result<()>,
    ) -> Result<()> {
        let Sql { text, values } = sql(statement);
        let params = values.into_iter().map(bind).collect::<Result<Vec<_>>>()?;
        self.statements.fetch_add(1, Ordering::Relaxed);
        let mut prepared = self.conn.prepare_cached(&text)?;
        let mut rows = prepared.query(rusqlite::params_from_iter(params))?;
        while let Some(row) = rows.next()? {
            each(row)?;
        }
        Ok(())
    }
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

    /// `LIMIT`/`OFFSET` counts become literals, in sub-selects too; every other value stays
    /// a parameter, text that merely ends in "LIMIT " included.
    #[test]
    fn limits_are_literals_and_values_parameters() {
        use sea_orm::sea_query::{Alias, Expr, ExprTrait as _, Query};
        let inner = Query::select()
            .column(Alias::new("id"))
            .from(Alias::new("messages"))
            .and_where(Expr::col(Alias::new("subject")).eq("see LIMIT "))
            .limit(50)
            .to_owned();
        let outer = Query::select()
            .column(Alias::new("id"))
            .from(Alias::new("tool_uses"))
            .and_where(Expr::col(Alias::new("message_id")).in_subquery(inner))
            .limit(3)
            .offset(2)
            .to_owned();
        let Sql { text, values } = sql(&outer);
        assert_eq!(
            text,
            r#"SELECT "id" FROM "tool_uses" WHERE "message_id" IN (SELECT "id" FROM "messages" WHERE "subject" = ? LIMIT 50) LIMIT 3 OFFSET 2"#
        );
        assert_eq!(values, [Value::from("see LIMIT ")]);
        // A count SQLite cannot hold stays a parameter, and fails as before when bound.
        let huge = Query::select()
            .column(Alias::new("id"))
            .from(Alias::new("messages"))
            .limit(u64::MAX)
            .to_owned();
        let Sql { text, values } = sql(&huge);
        assert_eq!(text, r#"SELECT "id" FROM "messages" LIMIT ?"#);
        assert_eq!(values, [Value::BigUnsigned(Some(u64::MAX))]);
    }

    /// The point of the literals: a cached statement runs again without being parsed
    /// and planned again.
    #[test]
    fn a_cached_statement_with_a_limit_is_not_prepared_again() {
        use rusqlite::StatementStatus;
        use sea_orm::sea_query::{Alias, Expr, ExprTrait as _, Query};
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("t.db")).unwrap();
        conn.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, k INTEGER); INSERT INTO t (k) VALUES (1), (1), (2);")
            .unwrap();
        let statements = AtomicU64::new(0);
        let session = Session {
            conn: &conn,
            statements: &statements,
        };
        let query = Query::select()
            .column(Alias::new("id"))
            .from(Alias::new("t"))
            .and_where(Expr::col(Alias::new("k")).eq(1))
            .limit(1)
            .to_owned();
        for _ in 0..3 {
            let mut ids = Vec::new();
            session
                .query(&query, |row| {
                    ids.push(row.get::<_, i64>(0)?);
                    Ok(())
                })
                .unwrap();
            assert_eq!(ids, [1]);
        }
        let prepared = conn.prepare_cached(&sql(&query).text).unwrap();
        assert_eq!(prepared.get_status(StatementStatus::RePrepare), 0);
        assert_eq!(statements.load(Ordering::Relaxed), 3);
    }
}
