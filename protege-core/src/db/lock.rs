//! Locks that let several processes write one database at once: migrations and fixture
//! imports each run under a lock, per backend.
//!
//! - PostgreSQL: a transaction-scoped advisory lock (`pg_advisory_xact_lock`), released by
//!   the commit or rollback.
//! - MySQL/MariaDB: migrations take the named lock `GET_LOCK('protege_migrate', ...)` (its
//!   DDL commits implicitly, so only a session lock spans it); imports lock the row of the
//!   first migration with `SELECT ... FOR UPDATE`, held until the commit or rollback.
//! - SQLite: a `BEGIN IMMEDIATE` transaction, which takes the database's write lock up
//!   front; other connections wait for it up to the busy timeout.

use sea_orm::{
    ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbBackend, DbErr, IsolationLevel,
    SqliteTransactionMode, Statement, TransactionOptions, TransactionTrait,
};

use super::Migrator;

/// The advisory lock key of migrations (PostgreSQL): "protege" + 1.
const MIGRATE_KEY: i64 = 0x7072_6f74_6567_6501;
/// The advisory lock key of imports (PostgreSQL): "protege" + 2.
const IMPORT_KEY: i64 = 0x7072_6f74_6567_6502;
/// The named lock of migrations (MySQL).
const MIGRATE_LOCK_NAME: &str = "protege_migrate";
/// How long a MySQL migration waits for `GET_LOCK`, in seconds.
const MYSQL_LOCK_WAIT_SECS: i64 = 300;

/// Runs the pending migrations under the migration lock.
pub(super) async fn migrate_locked(db: &DatabaseConnection) -> Result<Vec<String>, DbErr> {
    if up_to_date(db).await {
        return Ok(Vec::new());
    }
    let backend = db.get_database_backend();
    let txn = begin_exclusive(db).await?;
    match backend {
        DbBackend::Postgres => {
            exec(&txn, "SELECT pg_advisory_xact_lock($1)", MIGRATE_KEY).await?;
        }
        DbBackend::MySql => {
            let got = txn
                .query_one_raw(Statement::from_sql_and_values(
                    backend,
                    "SELECT GET_LOCK(?, ?) AS got",
                    [MIGRATE_LOCK_NAME.into(), MYSQL_LOCK_WAIT_SECS.into()],
                ))
                .await?
                .and_then(|row| row.try_get::<Option<i64>>("", "got").ok().flatten());
            if got != Some(1) {
                return Err(DbErr::Custom(format!(
                    "another process held the migration lock for more than {MYSQL_LOCK_WAIT_SECS} s"
                )));
            }
        }
        _ => {}
    }
    // What this call applies: another process may have applied some of them meanwhile.
    let outcome = Migrator::up(&txn)
        .await
        .map(|names| names.into_iter().map(str::to_owned).collect());
    if backend == DbBackend::MySql {
        // Released on every path: the connection goes back to the pool afterwards.
        let released = txn
            .execute_raw(Statement::from_sql_and_values(
                backend,
                "SELECT RELEASE_LOCK(?)",
                [MIGRATE_LOCK_NAME.into()],
            ))
            .await;
        if let (Ok(_), Err(e)) = (&outcome, released) {
            return Err(e);
        }
    }
    match outcome {
        Ok(names) => txn.commit().await.map(|()| names),
        Err(e) => {
            txn.rollback().await.ok();
            Err(e)
        }
    }
}

/// True when the migrations recorded as applied are exactly the shipped ones: there is
/// nothing to run, so no lock to take. One statement, where the lock's transaction and the
/// migrator's reading of its record take six on PostgreSQL, each a round trip, paid by
/// every command that opens the database. Anything else (no table yet, a migration missing, or
/// one this build does not know) goes the locked way, which decides and reports as before.
async fn up_to_date(db: &DatabaseConnection) -> bool {
    let backend = db.get_database_backend();
    let read = db
        .query_all_raw(Statement::from_string(
            backend,
            "SELECT version FROM protege_migrations",
        ))
        .await;
    let Ok(rows) = read else {
        return false;
    };
    let mut applied: Vec<String> = Vec::with_capacity(rows.len());
    for row in &rows {
        match row.try_get::<String>("", "version") {
            Ok(version) => applied.push(version),
            Err(_) => return false,
        }
    }
    let mut shipped = Migrator::names();
    applied.sort_unstable();
    shipped.sort_unstable();
    applied == shipped
}

/// Begins the transaction of a fixture import and takes the import lock in it: imports
/// run one at a time, each seeing what the previous ones committed.
pub async fn begin_import(db: &DatabaseConnection) -> Result<DatabaseTransaction, DbErr> {
    let backend = db.get_database_backend();
    let txn = begin_exclusive(db).await?;
    match backend {
        DbBackend::Postgres => {
            exec(&txn, "SELECT pg_advisory_xact_lock($1)", IMPORT_KEY).await?;
        }
        DbBackend::MySql => {
            let name = first_migration();
            txn.query_one_raw(Statement::from_sql_and_values(
                backend,
                "SELECT version FROM protege_migrations WHERE version = ? FOR UPDATE",
                [name.into()],
            ))
            .await?;
        }
        _ => {}
    }
    Ok(txn)
}

/// Begins a transaction that holds thread `thread` until its commit or rollback: the row
/// of `email_threads` locked for update (PostgreSQL, MySQL), the database's write lock
/// (SQLite). Two such transactions of one thread run one after the other, so a decision
/// about the thread's work (the agent's claim of a job) sees the other's commit.
pub async fn begin_thread(
    db: &DatabaseConnection,
    thread: i64,
) -> Result<DatabaseTransaction, DbErr> {
    let backend = db.get_database_backend();
    let txn = begin_exclusive(db).await?;
    let sql = match backend {
        DbBackend::Postgres => "SELECT id FROM email_threads WHERE id = $1 FOR UPDATE",
        DbBackend::MySql => "SELECT id FROM email_threads WHERE id = ? FOR UPDATE",
        _ => return Ok(txn),
    };
    txn.query_one_raw(Statement::from_sql_and_values(
        backend,
        sql,
        [thread.into()],
    ))
    .await?;
    Ok(txn)
}

/// Begins a transaction that writes at once: it reads committed data (PostgreSQL, MySQL)
/// or holds the database's write lock from its start (SQLite), so a unique key another
/// writer takes meanwhile is a conflict it sees, never a stale snapshot.
pub async fn begin_write(db: &DatabaseConnection) -> Result<DatabaseTransaction, DbErr> {
    begin_exclusive(db).await
}

/// A transaction that reads committed data (PostgreSQL, MySQL) or holds the write lock
/// from its start (SQLite).
async fn begin_exclusive(db: &DatabaseConnection) -> Result<DatabaseTransaction, DbErr> {
    let options = match db.get_database_backend() {
        DbBackend::Sqlite => TransactionOptions {
            isolation_level: None,
            access_mode: None,
            sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
        },
        _ => TransactionOptions {
            isolation_level: Some(IsolationLevel::ReadCommitted),
            access_mode: None,
            sqlite_transaction_mode: None,
        },
    };
    db.begin_with_options(options).await
}

async fn exec(txn: &DatabaseTransaction, sql: &str, key: i64) -> Result<(), DbErr> {
    txn.execute_raw(Statement::from_sql_and_values(
        txn.get_database_backend(),
        sql,
        [key.into()],
    ))
    .await
    .map(|_| ())
}

/// The name of the first migration, whose row in `protege_migrations` is the import lock
/// of MySQL.
fn first_migration() -> &'static str {
    Migrator::names().first().copied().unwrap_or_default()
}
