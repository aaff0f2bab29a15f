//! The one place that chooses how a statement reaches the database.
//!
//! Three drivers run protege's sea-query statements:
//!
//! - on a SQLite **file**, the SQLite C library through rusqlite (`embedded`): a small
//!   pool of read-only connections and one read-write connection per file, used on the
//!   calling task (SeaORM's SQLite driver hands every row across a thread, which costs more
//!   than SQLite's own work on the hot reads);
//! - on **PostgreSQL**, SeaORM, with the parts of a read joined into one statement, one
//!   round trip and one prepared statement (`one_trip`);
//! - everywhere else (MySQL/MariaDB, in-memory SQLite), SeaORM statement by statement.
//!
//! And inside `drive_reads_here` (a resolve in `protege serve`), PostgreSQL's reads outside a
//! transaction run on the resolving thread's own connection (`local`).
//!
//! A read or a write outside this module is written once, over the calls here, and never
//! asks which driver runs it:
//!
//! - `Session::parts`: a read of a fixed shape (a message and its attachments; a
//!   history's messages, attachments, tool uses and stripped bodies), in one snapshot;
//! - `Session::snapshot` then `Session::query` step by step, for a read whose next
//!   statement depends on what the last one found (and that may stop early), ended by
//!   `Session::finish`;
//! - `Session::rows`: the rows of one statement;
//! - [`execute`]: one `INSERT`, `UPDATE` or `DELETE`;
//! - [`write_transaction!`](crate::write_transaction): a write of several statements in
//!   one transaction, written once over [`Tx`](tx::Tx).
//!
//! Rows reach the caller as an `AnyRow`, which the decoders of each table
//! (`read::rows`) ask for columns by name (`decode`); `LoadRecord` renders any row as
//! JSON (`json`).

pub(crate) mod decode;
mod embedded;
pub(crate) mod json;
#[cfg(feature = "postgres")]
mod local;
#[cfg(feature = "postgres")]
mod one_trip;
mod per_pool;
pub mod tx;

use std::sync::Arc;

use sea_orm::sea_query::{QueryStatementWriter, SelectStatement};
use sea_orm::{
    AccessMode, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbBackend,
    IsolationLevel, StatementBuilder, TransactionTrait,
};

pub(crate) use decode::{AnyRow, Row};
#[doc(hidden)]
pub use embedded::embedded_write;
pub use embedded::{Writes, embedded_statements};
pub(crate) use json::float;
#[cfg(feature = "postgres")]
pub use local::drive_reads_here;
pub use tx::{embedded_tx, now};

/// Runs `work` to its end on the calling thread, blocking it, with `runtime`'s context
/// entered: a build without PostgreSQL has no reads of its own to drive.
#[cfg(not(feature = "postgres"))]
pub fn drive_reads_here<T>(
    runtime: &tokio::runtime::Handle,
    work: impl std::future::Future<Output = T>,
) -> T {
    let _context = runtime.enter();
    futures::executor::block_on(work)
}

use crate::db::dates;
use crate::error::Result;
use embedded::Reader;

/// One statement of a read of a fixed shape ([`Session::parts`]), with the columns it
/// selects: on PostgreSQL their names and types join the parts into one statement.
pub(crate) struct Part<'a> {
    statement: &'a SelectStatement,
    /// Run only when the part at this index gave rows (a statement after the other
    /// saves it; one joined statement has nothing to save).
    when_rows_in: Option<usize>,
    #[cfg(feature = "postgres")]
    columns: one_trip::Columns,
}

impl<'a> Part<'a> {
    /// `statement`, which selects `columns` (under their own names) in that order; the
    /// columns are looked at only on PostgreSQL.
    pub(crate) fn new<C, I>(
        db: &DatabaseConnection,
        statement: &'a SelectStatement,
        columns: impl FnOnce() -> I,
    ) -> Self
    where
        C: crate::db::read::rows::TableColumn + 'static,
        I: IntoIterator<Item = C>,
    {
        #[cfg(feature = "postgres")]
        let columns = if one_trip_reads(db) {
            one_trip::typed(columns())
        } else {
            one_trip::Columns::default()
        };
        #[cfg(not(feature = "postgres"))]
        let _ = (db, columns);
        Self {
            statement,
            when_rows_in: None,
            #[cfg(feature = "postgres")]
            columns,
        }
    }

    /// The part, run only when the part at `index` (an earlier one) gave rows: its rows
    /// depend on those.
    pub(crate) fn when_rows_in(mut self, index: usize) -> Self {
        self.when_rows_in = Some(index);
        self
    }
}

/// Whether `db`'s reads of several parts run as one statement: PostgreSQL's.
#[cfg(feature = "postgres")]
fn one_trip_reads(db: &DatabaseConnection) -> bool {
    db.get_database_backend() == DbBackend::Postgres
}

/// A read on the database behind `db`: its statements, and the connection or transaction
/// they run on.
pub(crate) struct Session<'a> {
    db: &'a DatabaseConnection,
    via: Via,
}

/// How a [`Session`] reaches the database.
enum Via {
    /// A SQLite file: a read connection of its pool, in a read transaction when
    /// `snapshot`.
    Embedded {
        reader: Arc<Reader>,
        conn: rusqlite::Connection,
        snapshot: bool,
    },
    /// SeaORM: on the connection itself, or in a read-only transaction for a snapshot.
    Orm(Option<DatabaseTransaction>),
}

impl<'a> Session<'a> {
    /// A read whose statements all see one snapshot of the database (`REPEATABLE READ` on
    /// PostgreSQL and MySQL/MariaDB; SQLite's transactions always do): a concurrent
    /// erasure or import commits either before all of them or after.
    pub(crate) async fn snapshot(db: &'a DatabaseConnection) -> Result<Self> {
        Self::open(db, true).await
    }

    async fn open(db: &'a DatabaseConnection, snapshot: bool) -> Result<Self> {
        if let Some(reader) = embedded::reader(db) {
            let conn = reader.lend(snapshot)?;
            return Ok(Self {
                db,
                via: Via::Embedded {
                    reader,
                    conn,
                    snapshot,
                },
            });
        }
        let txn = if snapshot {
            Some(begin_snapshot(db).await?)
        } else {
            None
        };
        Ok(Self {
            db,
            via: Via::Orm(txn),
        })
    }

    /// Runs `statement`, calling `each` for every row in order.
    pub(crate) async fn query(
        &mut self,
        statement: &SelectStatement,
        mut each: impl FnMut(&AnyRow<'_>) -> Result<()>,
    ) -> Result<()> {
        match &mut self.via {
            Via::Embedded { reader, conn, .. } => {
                reader.query(conn, statement, |row| each(&AnyRow::Embedded(row)))
            }
            Via::Orm(txn) => {
                // Dates bound as MySQL/MariaDB stores them (see `dates::statement`).
                let statement = dates::statement(self.db, statement);
                let rows = match txn {
                    Some(txn) => txn.query_all_raw(statement).await?,
                    None => Self::one_statement(self.db, statement).await?,
                };
                for row in &rows {
                    each(&AnyRow::Orm(row))?;
                }
                Ok(())
            }
        }
    }

    /// Ends the read: its transaction committed, its connection back to its pool.
    pub(crate) async fn finish(self) -> Result<()> {
        match self.via {
            Via::Embedded {
                reader,
                conn,
                snapshot,
            } => reader.give_back_read(conn, snapshot),
            Via::Orm(Some(txn)) => Ok(txn.commit().await?),
            Via::Orm(None) => Ok(()),
        }
    }

    /// The rows of `statement`, outside a transaction: on PostgreSQL, inside
    /// [`drive_reads_here`], on this thread's own connection ([`local`]); otherwise, or when
    /// that connection was lost, through the shared pool.
    async fn one_statement(
        db: &DatabaseConnection,
        statement: sea_orm::Statement,
    ) -> Result<Vec<sea_orm::QueryResult>> {
        #[cfg(feature = "postgres")]
        match local::query(db, &statement) {
            Some(Ok(rows)) => return Ok(rows),
            Some(Err(e)) if !local::lost(&e) => return Err(e.into()),
            _ => {}
        }
        Ok(db.query_all_raw(statement).await?)
    }

    /// The rows of `statement`, each decoded by `decode`.
    pub(crate) async fn rows<T>(
        db: &'a DatabaseConnection,
        statement: &SelectStatement,
        mut decode: impl FnMut(&AnyRow<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut session = Self::open(db, false).await?;
        let mut out = Vec::new();
        session
            .query(statement, |row| {
                out.push(decode(row)?);
                Ok(())
            })
            .await?;
        session.finish().await?;
        Ok(out)
    }

    /// Runs `parts` as one read in one snapshot, calling `each` with the index of the part
    /// of every row, the parts in the order given and each in its own order: on
    /// PostgreSQL as one statement (one round trip), elsewhere one statement after the
    /// other.
    pub(crate) async fn parts(
        db: &'a DatabaseConnection,
        parts: &[Part<'_>],
        mut each: impl FnMut(usize, &AnyRow<'_>) -> Result<()>,
    ) -> Result<()> {
        #[cfg(feature = "postgres")]
        if one_trip_reads(db) {
            let Some(statement) = one_trip::statement(parts) else {
                return Ok(());
            };
            let rows = Self::one_statement(db, statement).await?;
            return one_trip::visit(parts, &rows, |part, row| each(part, &AnyRow::Part(row)));
        }
        let mut session = Self::open(db, parts.len() > 1).await?;
        let mut found = vec![false; parts.len()];
        for (at, part) in parts.iter().enumerate() {
            if part.when_rows_in.is_some_and(|earlier| !found[earlier]) {
                continue;
            }
            session
                .query(part.statement, |row| {
                    found[at] = true;
                    each(at, row)
                })
                .await?;
        }
        session.finish().await
    }
}

/// A read-only transaction whose statements all see one snapshot of the database
/// (`REPEATABLE READ` on PostgreSQL and MySQL/MariaDB; SQLite's transactions always do),
/// for the reads that take several statements: a concurrent erasure or import commits
/// either before all of them or after.
pub async fn begin_snapshot(db: &DatabaseConnection) -> Result<DatabaseTransaction> {
    Ok(match db.get_database_backend() {
        DbBackend::Sqlite => db.begin().await?,
        _ => {
            db.begin_with_config(
                Some(IsolationLevel::RepeatableRead),
                Some(AccessMode::ReadOnly),
            )
            .await?
        }
    })
}

/// Runs one `INSERT`, `UPDATE` or `DELETE` (no transaction around it); the number of rows
/// it changed. On a SQLite file through the SQLite C library, without a driver's round
/// trip.
pub async fn execute<S>(db: &DatabaseConnection, statement: &S) -> Result<u64>
where
    S: QueryStatementWriter + StatementBuilder,
{
    if let Some(done) = embedded_write(db, |tx| tx.execute(statement)) {
        return Ok(done? as u64);
    }
    Ok(tx::Tx::execute(db, statement).await?)
}

/// The server's `max_allowed_packet` (the largest statement it takes), in bytes, on
/// MySQL/MariaDB; `None` on PostgreSQL and SQLite, which take rows far larger than an
/// import's caps. Read with `SELECT @@max_allowed_packet` the first time for each pool of
/// connections (a `DatabaseConnection` and its clones), then kept as long as the pool.
pub async fn max_allowed_packet(db: &DatabaseConnection) -> Result<Option<u64>> {
    if db.get_database_backend() != DbBackend::MySql {
        return Ok(None);
    }
    #[cfg(not(feature = "mysql"))]
    return Ok(None);
    #[cfg(feature = "mysql")]
    mysql_max_allowed_packet(db).await
}

/// [`max_allowed_packet`] on a MySQL/MariaDB connection, kept for its pool
/// ([`PerPool`](per_pool::PerPool)).
#[cfg(feature = "mysql")]
async fn mysql_max_allowed_packet(db: &DatabaseConnection) -> Result<Option<u64>> {
    use std::sync::OnceLock;

    use sea_orm::Statement;
    use sea_orm::sqlx::mysql::MySqlConnectOptions;

    use per_pool::PerPool;

    static LIMITS: OnceLock<PerPool<MySqlConnectOptions, u64>> = OnceLock::new();
    let limits = LIMITS.get_or_init(PerPool::new);
    let options = db.get_mysql_connection_pool().connect_options();
    if let Some(limit) = limits.get(&options) {
        return Ok(Some(limit));
    }
    let row = db
        .query_one_raw(Statement::from_string(
            DbBackend::MySql,
            "SELECT CAST(@@max_allowed_packet AS UNSIGNED) AS packet",
        ))
        .await?;
    let Some(limit) = row.map(|r| r.try_get::<u64>("", "packet")).transpose()? else {
        return Ok(None);
    };
    // Two first reads at once both ask the server; the first answer kept is as good.
    Ok(limits.get_or_make(&options, || Some(limit)))
}

/// The round trips made so far in this process on the database behind `db` outside SeaORM,
/// whose metric callback does not see them: the statements run through the SQLite C
/// library on a SQLite file.
///
/// Together with SeaORM's metric callback it gives the full count of a read's round trips.
pub fn direct_round_trips(db: &DatabaseConnection) -> u64 {
    embedded_statements(db).unwrap_or(0)
}

/// Runs `$body`, an expression over `$tx` (a `&impl Tx`) whose value is a
/// `Result<T, E>` with `E: From<protege_core::Error>`, in one write transaction: on a
/// SQLite file through the SQLite C library (every statement completes at once), elsewhere
/// in the SeaORM transaction `$begin` opens. Committed when the body answers `Ok`, rolled
/// back otherwise. Written once, the body runs on either driver.
#[doc(hidden)]
#[macro_export]
macro_rules! write_transaction {
    ($db:expr, $begin:expr, |$tx:ident| $body:expr) => {{
        match $crate::db::session::embedded_tx($db, |$tx| $crate::db::session::now($body)) {
            Some(done) => done,
            None => match $begin.await {
                Err(e) => Err(e.into()),
                Ok(txn) => {
                    let $tx = &txn;
                    match $body.await {
                        Ok(value) => match txn.commit().await {
                            Ok(()) => Ok(value),
                            Err(e) => Err(e.into()),
                        },
                        Err(e) => {
                            // The body's error is the one to report.
                            let _ = txn.rollback().await;
                            Err(e)
                        }
                    }
                }
            },
        }
    }};
}
