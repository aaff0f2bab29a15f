//! Applying the migrations and rolling them back, and the table that records the applied
//! ones.
//!
//! `protege_migrations` holds one row per applied migration: `version`, the migration's
//! name (text, the primary key), and `applied_at`, when it was applied (Unix seconds, a big
//! integer). It is created when missing, before the first read. On PostgreSQL each
//! migration runs in a transaction of its own (a savepoint when the caller's connection is
//! a transaction), its row written or deleted in it; on MySQL/MariaDB and SQLite its
//! statements run as they come, and its row is written or deleted after them.

use async_trait::async_trait;
use sea_orm::sea_query::{
    ColumnDef, Expr, ExprTrait, IndexCreateStatement, IndexDropStatement, Query, Table,
    TableAlterStatement, TableCreateStatement, TableDropStatement,
};
use sea_orm::{
    ConnectionTrait, DatabaseExecutor, DbBackend, DbErr, IntoDatabaseExecutor, Statement,
    StatementBuilder, TransactionTrait,
};

use super::Migrator;

/// The table that records the applied migrations.
const TABLE: &str = "protege_migrations";

/// The column of a migration's name.
const VERSION: &str = "version";

/// The column of when a migration was applied.
const APPLIED_AT: &str = "applied_at";

/// One migration of the schema: its name, recorded in `protege_migrations` once it is
/// applied, and the statements that apply it and roll it back.
#[async_trait]
pub(super) trait Migration: Send + Sync {
    /// The name recorded for the migration.
    fn name(&self) -> &'static str;

    /// Applies the migration.
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr>;

    /// Rolls the migration back.
    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr>;
}

/// The connection or transaction a migration runs on, with the schema statements and the
/// catalog query the migrations use.
#[derive(Debug)]
pub(super) struct SchemaManager<'c> {
    conn: DatabaseExecutor<'c>,
}

impl<'c> SchemaManager<'c> {
    /// A manager over `conn`.
    fn new(conn: impl IntoDatabaseExecutor<'c>) -> Self {
        Self {
            conn: conn.into_database_executor(),
        }
    }

    /// The connection or transaction, for the statements a migration builds itself.
    pub(super) fn connection(&self) -> &DatabaseExecutor<'c> {
        &self.conn
    }

    /// The database's backend.
    pub(super) fn backend(&self) -> DbBackend {
        self.conn.get_database_backend()
    }

    /// Runs `CREATE TABLE`.
    pub(super) async fn create_table(&self, stmt: TableCreateStatement) -> Result<(), DbErr> {
        self.execute(&stmt).await
    }

    /// Runs `ALTER TABLE`.
    pub(super) async fn alter_table(&self, stmt: TableAlterStatement) -> Result<(), DbErr> {
        self.execute(&stmt).await
    }

    /// Runs `DROP TABLE`.
    pub(super) async fn drop_table(&self, stmt: TableDropStatement) -> Result<(), DbErr> {
        self.execute(&stmt).await
    }

    /// Runs `CREATE INDEX`. MySQL has no `IF NOT EXISTS` for an index (sea-query leaves
    /// it out there): a named index the database already has is left as it is, so a
    /// migration stopped half-way (MySQL's schema statements are not transactional) runs
    /// again to its end. protege's index names are unique across its tables.
    pub(super) async fn create_index(&self, stmt: IndexCreateStatement) -> Result<(), DbErr> {
        if self.backend() == DbBackend::MySql
            && let Some(name) = stmt.get_index_spec().get_name()
            && self.has_index(name).await?
        {
            return Ok(());
        }
        self.execute(&stmt).await
    }

    /// True when the current MySQL/MariaDB database has an index named `name`, on any
    /// table.
    async fn has_index(&self, name: &str) -> Result<bool, DbErr> {
        let sql = "SELECT COUNT(*) AS `found` FROM `information_schema`.`statistics`
                   WHERE `table_schema` = DATABASE() AND `index_name` = ?";
        self.count(sql, vec![name.into()]).await.map(|n| n > 0)
    }

    /// The count `sql` (a `SELECT COUNT(*) AS found`) gives with `values`.
    async fn count(&self, sql: &str, values: Vec<sea_orm::Value>) -> Result<i64, DbErr> {
        let statement = Statement::from_sql_and_values(self.backend(), sql, values);
        let found = self
            .conn
            .query_one_raw(statement)
            .await?
            .map(|row| row.try_get::<i64>("", "found"))
            .transpose()?;
        Ok(found.unwrap_or(0))
    }

    /// Runs `DROP INDEX`.
    pub(super) async fn drop_index(&self, stmt: IndexDropStatement) -> Result<(), DbErr> {
        self.execute(&stmt).await
    }

    /// Runs one statement.
    async fn execute(&self, stmt: &impl StatementBuilder) -> Result<(), DbErr> {
        self.conn.execute(stmt).await.map(|_| ())
    }

    /// True when `table` has a column `column`, as the catalog says: `pragma_table_info` on
    /// SQLite, `information_schema.columns` of the current schema on PostgreSQL (the first
    /// of the `search_path` that exists) and of the current database on MySQL/MariaDB.
    pub(super) async fn has_column(&self, table: &str, column: &str) -> Result<bool, DbErr> {
        let backend = self.backend();
        let sql = match backend {
            DbBackend::Sqlite => {
                r#"SELECT COUNT(*) AS "found" FROM pragma_table_info(?) WHERE "name" = ?"#
            }
            DbBackend::Postgres => {
                r#"SELECT COUNT(*) AS "found" FROM "information_schema"."columns"
                   WHERE "table_schema" = CURRENT_SCHEMA()
                   AND "table_name" = $1 AND "column_name" = $2"#
            }
            _ => {
                "SELECT COUNT(*) AS `found` FROM `information_schema`.`columns`
                 WHERE `table_schema` = DATABASE() AND `table_name` = ? AND `column_name` = ?"
            }
        };
        let found = self.count(sql, vec![table.into(), column.into()]).await?;
        Ok(found > 0)
    }
}

/// Which way a migration runs.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// Applied, then recorded.
    Up,
    /// Rolled back, then its record deleted.
    Down,
}

impl Migrator {
    /// The names of the shipped migrations, in the order they run.
    pub fn names() -> Vec<&'static str> {
        Self::migrations().iter().map(|m| m.name()).collect()
    }

    /// The names of the shipped migrations the database has not applied, in the order they
    /// run. Creates `protege_migrations` when it is missing.
    ///
    /// # Errors
    ///
    /// A database error, or a migration recorded as applied that this build does not ship.
    pub async fn pending<C: ConnectionTrait>(db: &C) -> Result<Vec<&'static str>, DbErr> {
        let applied = applied(db).await?;
        Ok(Self::names()
            .into_iter()
            .filter(|name| !applied.iter().any(|a| a == name))
            .collect())
    }

    /// Applies the pending migrations in order, recording each after it ran, and returns
    /// their names.
    ///
    /// # Errors
    ///
    /// The first migration that fails, with the ones before it applied and recorded; or an
    /// error of [`pending`](Self::pending).
    pub async fn up<'c>(db: impl IntoDatabaseExecutor<'c>) -> Result<Vec<&'static str>, DbErr> {
        let manager = SchemaManager::new(db);
        let applied = applied(manager.connection()).await?;
        let mut names = Vec::new();
        for migration in Migrator::migrations() {
            if !applied.iter().any(|a| a == migration.name()) {
                run(&manager, migration.as_ref(), Step::Up).await?;
                names.push(migration.name());
            }
        }
        Ok(names)
    }

    /// Rolls back the last `steps` applied migrations (every one with `None`), the latest
    /// first, deleting the record of each after it ran.
    ///
    /// # Errors
    ///
    /// The first migration that fails, with the ones before it rolled back; or an error of
    /// [`pending`](Self::pending).
    pub async fn down<'c>(
        db: impl IntoDatabaseExecutor<'c>,
        steps: Option<u32>,
    ) -> Result<(), DbErr> {
        let manager = SchemaManager::new(db);
        let applied = applied(manager.connection()).await?;
        let steps = steps.map_or(usize::MAX, |n| n as usize);
        let latest_first = Migrator::migrations()
            .into_iter()
            .rev()
            .filter(|m| applied.iter().any(|a| a == m.name()));
        for migration in latest_first.take(steps) {
            run(&manager, migration.as_ref(), Step::Down).await?;
        }
        Ok(())
    }
}

/// Runs `migration` one way and writes or deletes its record: in a transaction of its own
/// on PostgreSQL, on `manager`'s connection elsewhere.
async fn run(
    manager: &SchemaManager<'_>,
    migration: &dyn Migration,
    step: Step,
) -> Result<(), DbErr> {
    if manager.backend() != DbBackend::Postgres {
        return run_on(manager, migration, step).await;
    }
    let txn = manager.connection().begin().await?;
    run_on(&SchemaManager::new(&txn), migration, step).await?;
    txn.commit().await
}

/// Runs `migration` one way on `manager`, then writes or deletes its record.
async fn run_on(
    manager: &SchemaManager<'_>,
    migration: &dyn Migration,
    step: Step,
) -> Result<(), DbErr> {
    let name = migration.name();
    let db = manager.connection();
    match step {
        Step::Up => {
            migration.up(manager).await?;
            let insert = Query::insert()
                .into_table(TABLE)
                .columns([VERSION, APPLIED_AT])
                .values_panic([name.into(), chrono::Utc::now().timestamp().into()])
                .to_owned();
            db.execute(&insert).await?;
            tracing::info!(migration = name, "applied a migration");
        }
        Step::Down => {
            migration.down(manager).await?;
            let delete = Query::delete()
                .from_table(TABLE)
                .and_where(Expr::col(VERSION).eq(name))
                .to_owned();
            db.execute(&delete).await?;
            tracing::info!(migration = name, "rolled back a migration");
        }
    }
    Ok(())
}

/// The names recorded in `protege_migrations`, which is created first when missing.
async fn applied<C: ConnectionTrait>(db: &C) -> Result<Vec<String>, DbErr> {
    db.execute(&install_statement()).await?;
    let select = Query::select().column(VERSION).from(TABLE).to_owned();
    let mut applied = Vec::new();
    for row in db.query_all(&select).await? {
        applied.push(row.try_get::<String>("", VERSION)?);
    }
    let shipped = Migrator::names();
    let mut unknown: Vec<&str> = applied
        .iter()
        .map(String::as_str)
        .filter(|name| !shipped.contains(name))
        .collect();
    if unknown.is_empty() {
        return Ok(applied);
    }
    unknown.sort_unstable();
    Err(DbErr::Custom(format!(
        "the database has migrations this build of protege does not ship: {}",
        unknown.join(", ")
    )))
}

/// `CREATE TABLE IF NOT EXISTS protege_migrations`.
fn install_statement() -> TableCreateStatement {
    Table::create()
        .table(TABLE)
        .if_not_exists()
        .col(ColumnDef::new(VERSION).string().not_null().primary_key())
        .col(ColumnDef::new(APPLIED_AT).big_integer().not_null())
        .to_owned()
}

#[cfg(test)]
mod tests {
    use sea_orm::DbBackend;

    use super::install_statement;

    /// The table is created as databases migrated by earlier versions of protege have it.
    #[test]
    fn the_record_table_keeps_its_shape() {
        let sql = |backend: DbBackend| backend.build(&install_statement()).to_string();
        assert_eq!(
            sql(DbBackend::Sqlite),
            r#"CREATE TABLE IF NOT EXISTS "protege_migrations" ( "version" varchar NOT NULL PRIMARY KEY, "applied_at" integer NOT NULL )"#
        );
        assert_eq!(
            sql(DbBackend::Postgres),
            r#"CREATE TABLE IF NOT EXISTS "protege_migrations" ( "version" varchar NOT NULL PRIMARY KEY, "applied_at" bigint NOT NULL )"#
        );
        assert_eq!(
            sql(DbBackend::MySql),
            "CREATE TABLE IF NOT EXISTS `protege_migrations` ( `version` varchar(255) NOT NULL PRIMARY KEY, `applied_at` bigint NOT NULL )"
        );
    }
}
