//! The declarative `LoadRecord` query: built with sea-query (identifiers quoted for the
//! backend, every value a bound parameter) and each row turned into a JSON object with
//! its columns in table order.
//!
//! Column values become JSON: integers and floats as numbers (NaN and infinities as
//! `null`), booleans as booleans, NULL as `null`, text as strings, blobs as Base64 strings,
//! timestamps, dates and times as the text the backend prints for them (PostgreSQL
//! `2026-01-05 10:00:00+00`, MySQL `2026-01-05 10:00:00`, SQLite: the stored text), JSON
//! columns as JSON, and exact decimals (`NUMERIC`, `DECIMAL`) as strings of their exact text
//! with their scale (`"129.90"`: money printed as a float would read `129.9`, and a float
//! holds 17 digits). SQLite has no exact decimal: its `NUMERIC` columns store integers and
//! floats, rendered as numbers.
//! How each driver's values become JSON is the session's ([`crate::db::session`]).

use sea_orm::sea_query::{Alias, Asterisk, Expr, ExprTrait, Func, Order, Query};
use sea_orm::{ConnectionTrait, DatabaseConnection};
use serde_json::{Map, Value};

use crate::db::db_reason;
use crate::db::session::{self, Session, float};
use crate::error::{Error, ErrorKind, Result};

/// A `where` value after templates are rendered.
#[derive(Debug, Clone)]
pub(crate) enum Bound {
    Text(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Null,
}

impl Bound {
    /// The value as JSON.
    pub(crate) fn to_json(&self) -> Value {
        match self {
            Bound::Text(s) => Value::String(s.clone()),
            Bound::Int(n) => Value::from(*n),
            Bound::Float(f) => float(*f),
            Bound::Bool(b) => Value::Bool(*b),
            Bound::Null => Value::Null,
        }
    }
}

/// Whether a `where` text is an email address (one `@` with text on both sides, no white
/// space, at most 320 characters): addresses compare without regard to case.
fn is_address(text: &str) -> bool {
    text.len() <= 320
        && text.matches('@').count() == 1
        && !text.starts_with('@')
        && !text.ends_with('@')
        && !text.contains(char::is_whitespace)
}

/// Runs `SELECT * FROM table WHERE ... ORDER BY ... LIMIT n` and returns the rows. A text
/// value that is an email address matches its column without regard to ASCII case
/// (`LOWER(column) = lower-cased value`): `Kim@Example.com` in a mail finds the row of
/// `kim@example.com`.
///
pub(crate) async fn select(
    db: &DatabaseConnection,
    table: &str,
    filters: &[(String, Bound)],
    order_by: &[(String, bool)],
    limit: Option<u64>,
) -> Result<Vec<Map<String, Value>>> {
    let mut q = Query::select();
    q.column(Asterisk).from(Alias::new(table));
    for (column, value) in filters {
        let col = Expr::col(Alias::new(column.as_str()));
        q.and_where(match value {
            Bound::Text(s) if is_address(s) => {
                Expr::expr(Func::lower(col)).eq(s.to_ascii_lowercase())
            }
            Bound::Text(s) => col.eq(s.as_str()),
            Bound::Int(n) => col.eq(*n),
            Bound::Float(f) => col.eq(*f),
            Bound::Bool(b) => col.eq(*b),
            Bound::Null => col.is_null(),
        });
    }
    for (column, desc) in order_by {
        q.order_by(
            Alias::new(column.as_str()),
            if *desc { Order::Desc } else { Order::Asc },
        );
    }
    if let Some(n) = limit {
        q.limit(n);
    }
    let cannot = |e: Error| {
        let reason = e.database_reason().unwrap_or(e.detail()).to_owned();
        e.with_detail(format!("cannot read table `{table}`: {reason}"))
    };
    // A value that cannot be rendered names its column and table itself.
    let rows = Session::rows(db, &q, |row| Ok(session::json::record(row, table)))
        .await
        .map_err(cannot)?;
    rows.into_iter().collect()
}

/// The columns of `table`'s primary key, in key order (empty when it has none or does not
/// exist), read from the backend's catalogue in one statement.
pub(crate) async fn primary_key(db: &DatabaseConnection, table: &str) -> Result<Vec<String>> {
    let sql = match db.get_database_backend() {
        sea_orm::DbBackend::Sqlite => {
            "SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk"
        }
        sea_orm::DbBackend::Postgres => {
            // The table the name resolves to through `search_path`, as a query finds it.
            "SELECT a.attname::text FROM pg_index i \
             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) \
             WHERE i.indrelid = to_regclass(quote_ident($1)) AND i.indisprimary \
             ORDER BY array_position(i.indkey::int2[], a.attnum)"
        }
        _ => {
            "SELECT CAST(COLUMN_NAME AS CHAR) FROM information_schema.KEY_COLUMN_USAGE \
             WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND CONSTRAINT_NAME = 'PRIMARY' \
             ORDER BY ORDINAL_POSITION"
        }
    };
    catalogue(db, sql, Some(table), || {
        format!("cannot read the primary key of table `{table}`")
    })
    .await
}

/// The columns of `table`, in table order (empty when it does not exist), read from the
/// backend's catalogue in one statement; on PostgreSQL of the table the name resolves to
/// through `search_path`.
pub async fn table_columns(db: &DatabaseConnection, table: &str) -> Result<Vec<String>> {
    let sql = match db.get_database_backend() {
        sea_orm::DbBackend::Sqlite => "SELECT name FROM pragma_table_info(?) ORDER BY cid",
        sea_orm::DbBackend::Postgres => {
            "SELECT attname::text FROM pg_attribute \
             WHERE attrelid = to_regclass(quote_ident($1)) AND attnum > 0 AND NOT attisdropped \
             ORDER BY attnum"
        }
        _ => {
            "SELECT CAST(COLUMN_NAME AS CHAR) FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION"
        }
    };
    catalogue(db, sql, Some(table), || {
        format!("cannot read the columns of table `{table}`")
    })
    .await
}

/// The tables and views of the database (on PostgreSQL, those its `search_path` reaches,
/// as an unqualified name in a query does), sorted, in one statement.
pub async fn table_names(db: &DatabaseConnection) -> Result<Vec<String>> {
    let sql = match db.get_database_backend() {
        sea_orm::DbBackend::Sqlite => {
            "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') \
             AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
        }
        sea_orm::DbBackend::Postgres => {
            "SELECT c.relname::text FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f') AND pg_table_is_visible(c.oid) \
             AND n.nspname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1"
        }
        _ => {
            "SELECT CAST(TABLE_NAME AS CHAR) FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME"
        }
    };
    catalogue(db, sql, None, || "cannot list the tables".to_owned()).await
}

/// The first column of every row `sql` (with `table` bound, when given) answers, as text;
/// an error says `what()` and the database's reason.
async fn catalogue(
    db: &DatabaseConnection,
    sql: &str,
    table: Option<&str>,
    what: impl Fn() -> String,
) -> Result<Vec<String>> {
    use sea_orm::Statement;
    let backend = db.get_database_backend();
    let statement = match table {
        Some(table) => Statement::from_sql_and_values(backend, sql, [table.into()]),
        None => Statement::from_string(backend, sql),
    };
    let failed = |e: sea_orm::DbErr| {
        Error::new(
            ErrorKind::Database,
            format!("{}: {}", what(), db_reason(&e)),
        )
        .with_db_err(e)
    };
    let rows = db.query_all_raw(statement).await.map_err(failed)?;
    rows.iter()
        .map(|row| row.try_get_by_index::<String>(0).map_err(failed))
        .collect()
}
