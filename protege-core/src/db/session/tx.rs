//! The statements of one write transaction, whatever driver runs them: SeaORM's (a
//! transaction on PostgreSQL, MySQL/MariaDB or SQLite) or, on a SQLite file, the SQLite C
//! library ([`Writes`], through [`embedded_write`](super::embedded_write)). A write that
//! takes a [`Tx`] is written once, with sea-query statements and row visitors by column
//! position, and runs on both; on a SQLite file its statements then cost SQLite's own work
//! rather than a hand-off to sqlx's connection thread and back for each.

use std::future::Future;

use sea_orm::sea_query::{Alias, InsertStatement, SelectStatement};
use sea_orm::{ConnectionTrait, DbBackend, DbErr, QueryResult};

use super::dates;
use super::embedded::Writes;

/// The columns of one row a [`Tx::select`] reads, by their place in the select list.
pub trait Cells {
    /// The integer in column `index`.
    fn int(&self, index: usize) -> Result<i64, DbErr>;
    /// The text in column `index`, `None` when it is NULL.
    fn text(&self, index: usize) -> Result<Option<String>, DbErr>;
}

/// One write transaction's statements (see the module documentation).
pub trait Tx {
    /// The backend the statements are built for.
    fn backend(&self) -> DbBackend;

    /// Runs an `INSERT`, `UPDATE` or `DELETE`; the number of rows it changed.
    fn execute<S>(&self, statement: &S) -> impl Future<Output = Result<u64, DbErr>>
    where
        S: sea_orm::sea_query::QueryStatementWriter + sea_orm::StatementBuilder;

    /// Runs a one-row `INSERT` into a table whose key is the integer `id`; the new row's
    /// id, `None` when it inserted nothing (`ON CONFLICT DO NOTHING`). On MySQL/MariaDB,
    /// which has no such clause, a taken key is the driver's error.
    fn insert(
        &self,
        statement: &InsertStatement,
    ) -> impl Future<Output = Result<Option<i64>, DbErr>>;

    /// Runs `statement`, calling `each` for every row in order.
    fn select(
        &self,
        statement: &SelectStatement,
        each: impl FnMut(&dyn Cells) -> Result<(), DbErr>,
    ) -> impl Future<Output = Result<(), DbErr>>;
}

impl Cells for QueryResult {
    fn int(&self, index: usize) -> Result<i64, DbErr> {
        // PostgreSQL types a literal or a `CASE` of literals `INT4`, a count `INT8`.
        match self.try_get_by_index::<i64>(index) {
            Ok(n) => Ok(n),
            Err(e) => self
                .try_get_by_index::<i32>(index)
                .map(i64::from)
                .map_err(|_| e),
        }
    }

    fn text(&self, index: usize) -> Result<Option<String>, DbErr> {
        self.try_get_by_index(index)
    }
}

impl<C: ConnectionTrait> Tx for C {
    fn backend(&self) -> DbBackend {
        self.get_database_backend()
    }

    async fn execute<S>(&self, statement: &S) -> Result<u64, DbErr>
    where
        S: sea_orm::sea_query::QueryStatementWriter + sea_orm::StatementBuilder,
    {
        Ok(self
            .execute_raw(dates::statement(self, statement))
            .await?
            .rows_affected())
    }

    async fn insert(&self, statement: &InsertStatement) -> Result<Option<i64>, DbErr> {
        match self.get_database_backend() {
            DbBackend::Postgres => {
                let mut statement = statement.clone();
                statement.returning_col(Alias::new("id"));
                let row = self
                    .query_one_raw(dates::statement(self, &statement))
                    .await?;
                row.map(|row| row.try_get_by_index(0)).transpose()
            }
            _ => {
                let done = self.execute_raw(dates::statement(self, statement)).await?;
                if done.rows_affected() == 0 {
                    return Ok(None);
                }
                let id = done.last_insert_id();
                i64::try_from(id)
                    .map(Some)
                    .map_err(|_| DbErr::Custom(format!("the new row's id {id} is out of range")))
            }
        }
    }

    async fn select(
        &self,
        statement: &SelectStatement,
        mut each: impl FnMut(&dyn Cells) -> Result<(), DbErr>,
    ) -> Result<(), DbErr> {
        for row in self
            .query_all_raw(dates::statement(self, statement))
            .await?
        {
            each(&row)?;
        }
        Ok(())
    }
}

impl Cells for rusqlite::Row<'_> {
    fn int(&self, index: usize) -> Result<i64, DbErr> {
        self.get(index).map_err(sqlite_error)
    }

    fn text(&self, index: usize) -> Result<Option<String>, DbErr> {
        self.get(index).map_err(sqlite_error)
    }
}

/// A SQLite C library error as the error of a write's statements.
pub(crate) fn sqlite_error(e: impl std::fmt::Display) -> DbErr {
    DbErr::Custom(format!("SQLite: {e}"))
}

impl Tx for Writes<'_> {
    fn backend(&self) -> DbBackend {
        DbBackend::Sqlite
    }

    async fn execute<S>(&self, statement: &S) -> Result<u64, DbErr>
    where
        S: sea_orm::sea_query::QueryStatementWriter + sea_orm::StatementBuilder,
    {
        Writes::execute(self, statement)
            .map(|n| n as u64)
            .map_err(sqlite_error)
    }

    async fn insert(&self, statement: &InsertStatement) -> Result<Option<i64>, DbErr> {
        self.insert_row(statement).map_err(sqlite_error)
    }

    async fn select(
        &self,
        statement: &SelectStatement,
        each: impl FnMut(&dyn Cells) -> Result<(), DbErr>,
    ) -> Result<(), DbErr> {
        self.select_rows(statement, each)
    }
}

/// Runs `write` in one transaction through the SQLite C library when `db` is a SQLite
/// file (`None` otherwise, and nothing runs), as [`embedded_write`](super::embedded_write)
/// does: committed when it answers `Some(Ok(_))`, rolled back otherwise. `write` runs a
/// write over a [`Tx`] with [`now`]: on [`Writes`] every statement completes at once.
pub fn embedded_tx<T, E>(
    db: &sea_orm::DatabaseConnection,
    write: impl FnOnce(&Writes<'_>) -> Option<Result<T, E>>,
) -> Option<Result<T, E>>
where
    E: From<crate::Error>,
{
    let mut out: Option<Result<T, E>> = None;
    let done = super::embedded_write(db, |tx| match write(tx) {
        Some(Ok(value)) => {
            out = Some(Ok(value));
            Ok(())
        }
        Some(Err(e)) => {
            out = Some(Err(e));
            // Rolls the transaction back.
            Err(crate::Error::database("the write was refused"))
        }
        None => Err(crate::Error::database(
            "a write on the SQLite file waited for something other than SQLite",
        )),
    })?;
    Some(match (done, out) {
        (_, Some(Err(e))) => Err(e),
        (Ok(()), Some(Ok(value))) => Ok(value),
        // The commit failed, or the write waited.
        (Err(e), _) => Err(e.into()),
        (Ok(()), None) => unreachable!("a committed write has its value"),
    })
}

/// The output of `future` when it is ready at its first poll (a write over [`Writes`]
/// always is); `None` when it would wait.
pub fn now<F: Future>(future: F) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(out) => Some(out),
        std::task::Poll::Pending => None,
    }
}
