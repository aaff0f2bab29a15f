//! The declarative `LoadRecord` query: built with sea-query (identifiers quoted for the
//! backend, every value a bound parameter) and each row turned into a JSON object with
//! its columns in table order.
//!
//! Column values become JSON: integers and floats as numbers, booleans as booleans, NULL
//! as `null`, text as strings, blobs as Base64 strings, timestamps, dates and times as the
//! text the backend prints for them (PostgreSQL `2026-01-05 10:00:00+00`, MySQL
//! `2026-01-05 10:00:00`, SQLite: the stored text), JSON columns as JSON, and decimals as
//! numbers.

use base64::Engine as _;
use sea_orm::sea_query::{Alias, Asterisk, Expr, ExprTrait, Order, Query};
use sea_orm::sqlx::mysql::MySql;
use sea_orm::sqlx::{Column, Row, Type, TypeInfo, ValueRef};
use sea_orm::{ConnectionTrait, DatabaseConnection, QueryResult};
use serde_json::{Map, Number, Value};

use crate::db::db_reason;
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

/// Runs `SELECT * FROM table WHERE ... ORDER BY ... LIMIT n` and returns the rows.
///
/// On a SQLite file the statement runs through the SQLite C library (like the history
/// reads); each value is rendered from its storage class, as SeaORM's SQLite driver does.
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
    if let Some(reader) = super::embedded::reader(db) {
        let cannot = |e: Error| {
            let reason = e.database_reason().unwrap_or(e.detail()).to_owned();
            e.with_detail(format!("cannot read table `{table}`: {reason}"))
        };
        return reader
            .run(|conn| {
                let mut out = Vec::new();
                conn.query(&q, |row| {
                    out.push(sqlite_storage_row(row, table)?);
                    Ok(())
                })?;
                Ok(out)
            })
            .map_err(cannot);
    }
    let rows = db.query_all(&q).await.map_err(|e| {
        Error::new(
            ErrorKind::Database,
            format!("cannot read table `{table}`: {}", db_reason(&e)),
        )
        .with_db_err(e)
    })?;
    rows.iter().map(|row| row_to_json(row, table)).collect()
}

fn unsupported(table: &str, column: &str, ty: &str) -> Error {
    Error::new(
        ErrorKind::Database,
        format!(
            "column `{column}` of table `{table}` has type `{ty}`, which LoadRecord cannot render; select it through a view that casts it to text"
        ),
    )
}

fn decode_error(table: &str, column: &str, e: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::Database,
        format!("cannot read column `{column}` of table `{table}`: {e}"),
    )
}

fn float(f: f64) -> Value {
    Number::from_f64(f).map_or(Value::Null, Value::Number)
}

fn blob(bytes: &[u8]) -> Value {
    Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// Turns one row into a JSON object, columns in the order the backend returns them.
pub(crate) fn row_to_json(row: &QueryResult, table: &str) -> Result<Map<String, Value>> {
    if let Some(r) = row.try_as_sqlite_row() {
        return sqlite_row(r, table);
    }
    if let Some(r) = row.try_as_pg_row() {
        return pg_row(r, table);
    }
    if let Some(r) = row.try_as_mysql_row() {
        return mysql_row(r, table);
    }
    Err(Error::new(
        ErrorKind::Database,
        "LoadRecord supports SQLite, PostgreSQL and MySQL/MariaDB connections only",
    ))
}

fn sqlite_row(row: &sea_orm::sqlx::sqlite::SqliteRow, table: &str) -> Result<Map<String, Value>> {
    let mut out = Map::with_capacity(row.columns().len());
    for (i, column) in row.columns().iter().enumerate() {
        let name = column.name();
        let err = |e| decode_error(table, name, e);
        let raw = row.try_get_raw(i).map_err(err)?;
        // SQLite is dynamically typed: the stored value's class decides.
        let value = if raw.is_null() {
            Value::Null
        } else {
            match raw.type_info().name() {
                "INTEGER" | "BOOLEAN" => {
                    Value::from(row.try_get_unchecked::<i64, _>(i).map_err(err)?)
                }
                "REAL" | "NUMERIC" => float(row.try_get_unchecked::<f64, _>(i).map_err(err)?),
                "BLOB" => blob(&row.try_get_unchecked::<Vec<u8>, _>(i).map_err(err)?),
                _ => Value::String(row.try_get_unchecked::<String, _>(i).map_err(err)?),
            }
        };
        out.insert(name.to_owned(), value);
    }
    Ok(out)
}

/// A row read through the SQLite C library, rendered from each value's storage class.
fn sqlite_storage_row(row: &rusqlite::Row<'_>, table: &str) -> Result<Map<String, Value>> {
    use rusqlite::types::ValueRef;
    let statement = row.as_ref();
    let mut out = Map::with_capacity(statement.column_count());
    for i in 0..statement.column_count() {
        let name = statement.column_name(i)?;
        let err = |e: rusqlite::Error| decode_error(table, name, e);
        let value = match row.get_ref(i).map_err(err)? {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(n) => Value::from(n),
            ValueRef::Real(x) => float(x),
            ValueRef::Blob(bytes) => blob(bytes),
            ValueRef::Text(text) => Value::String(
                std::str::from_utf8(text)
                    .map_err(|e| decode_error(table, name, e))?
                    .to_owned(),
            ),
        };
        out.insert(name.to_owned(), value);
    }
    Ok(out)
}

fn pg_row(row: &sea_orm::sqlx::postgres::PgRow, table: &str) -> Result<Map<String, Value>> {
    use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};
    let mut out = Map::with_capacity(row.columns().len());
    for (i, column) in row.columns().iter().enumerate() {
        let name = column.name();
        let err = |e| decode_error(table, name, e);
        let ty = column.type_info().name();
        let raw = row.try_get_raw(i).map_err(err)?;
        if raw.is_null() {
            out.insert(name.to_owned(), Value::Null);
            continue;
        }
        let value = match ty {
            "INT2" => Value::from(row.try_get::<i16, _>(i).map_err(err)?),
            "INT4" => Value::from(row.try_get::<i32, _>(i).map_err(err)?),
            "INT8" => Value::from(row.try_get::<i64, _>(i).map_err(err)?),
            "FLOAT4" => float(row.try_get::<f32, _>(i).map_err(err)?.into()),
            "FLOAT8" => float(row.try_get::<f64, _>(i).map_err(err)?),
            "BOOL" => Value::Bool(row.try_get::<bool, _>(i).map_err(err)?),
            "TEXT" | "VARCHAR" | "BPCHAR" | "NAME" | "CHAR" | "CITEXT" => {
                Value::String(row.try_get::<String, _>(i).map_err(err)?)
            }
            "BYTEA" => blob(&row.try_get::<Vec<u8>, _>(i).map_err(err)?),
            "TIMESTAMPTZ" => Value::String(
                row.try_get::<DateTime<Utc>, _>(i)
                    .map_err(err)?
                    .format("%Y-%m-%d %H:%M:%S%.f+00")
                    .to_string(),
            ),
            "TIMESTAMP" => Value::String(
                row.try_get::<NaiveDateTime, _>(i)
                    .map_err(err)?
                    .format("%Y-%m-%d %H:%M:%S%.f")
                    .to_string(),
            ),
            "DATE" => Value::String(
                row.try_get::<NaiveDate, _>(i)
                    .map_err(err)?
                    .format("%Y-%m-%d")
                    .to_string(),
            ),
            "TIME" => Value::String(
                row.try_get::<NaiveTime, _>(i)
                    .map_err(err)?
                    .format("%H:%M:%S%.f")
                    .to_string(),
            ),
            "JSON" | "JSONB" => row.try_get::<Value, _>(i).map_err(err)?,
            "NUMERIC" => {
                let bytes = raw.as_bytes().map_err(|e| decode_error(table, name, e))?;
                pg_numeric(bytes).ok_or_else(|| unsupported(table, name, ty))?
            }
            other => return Err(unsupported(table, name, other)),
        };
        out.insert(name.to_owned(), value);
    }
    Ok(out)
}

/// Decodes PostgreSQL's binary `NUMERIC` (base-10000 digits) into a JSON number.
fn pg_numeric(bytes: &[u8]) -> Option<Value> {
    let word = |i: usize| -> Option<i16> {
        Some(i16::from_be_bytes([
            *bytes.get(2 * i)?,
            *bytes.get(2 * i + 1)?,
        ]))
    };
    let ndigits = usize::try_from(word(0)?).ok()?;
    let weight = i32::from(word(1)?);
    let sign = word(2)? as u16;
    let dscale = usize::try_from(word(3)?).ok()?;
    if sign == 0xC000 {
        return Some(Value::Null); // NaN
    }
    let digits: Vec<i16> = (0..ndigits).map(|k| word(4 + k)).collect::<Option<_>>()?;
    let mut int_part = String::new();
    let mut frac_part = String::new();
    for k in 0..=weight {
        let d = usize::try_from(k)
            .ok()
            .and_then(|k| digits.get(k))
            .copied()
            .unwrap_or(0);
        if int_part.is_empty() {
            if d != 0 {
                int_part = d.to_string();
            }
        } else {
            int_part.push_str(&format!("{d:04}"));
        }
    }
    if int_part.is_empty() {
        int_part.push('0');
    }
    let mut k = weight + 1;
    while frac_part.len() < dscale {
        let d = if k < 0 {
            0
        } else {
            usize::try_from(k)
                .ok()
                .and_then(|k| digits.get(k))
                .copied()
                .unwrap_or(0)
        };
        frac_part.push_str(&format!("{d:04}"));
        k += 1;
    }
    frac_part.truncate(dscale);
    let mut text = String::new();
    if sign == 0x4000 {
        text.push('-');
    }
    text.push_str(&int_part);
    if !frac_part.is_empty() {
        text.push('.');
        text.push_str(&frac_part);
    }
    number_from_text(&text)
}

/// A JSON number from decimal text: an integer when it is one, else a float.
fn number_from_text(text: &str) -> Option<Value> {
    if let Ok(n) = text.parse::<i64>() {
        return Some(Value::from(n));
    }
    text.parse::<f64>().ok().map(float)
}

fn mysql_row(row: &sea_orm::sqlx::mysql::MySqlRow, table: &str) -> Result<Map<String, Value>> {
    use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
    let mut out = Map::with_capacity(row.columns().len());
    for (i, column) in row.columns().iter().enumerate() {
        let name = column.name();
        let err = |e| decode_error(table, name, e);
        let ty = column.type_info().name();
        let raw = row.try_get_raw(i).map_err(err)?;
        if raw.is_null() {
            out.insert(name.to_owned(), Value::Null);
            continue;
        }
        let value = match ty {
            "BOOLEAN" => Value::Bool(row.try_get::<bool, _>(i).map_err(err)?),
            "TINYINT" | "SMALLINT" | "MEDIUMINT" | "INT" | "BIGINT" | "YEAR" => {
                Value::from(row.try_get::<i64, _>(i).map_err(err)?)
            }
            t if t.ends_with("UNSIGNED") => Value::from(row.try_get::<u64, _>(i).map_err(err)?),
            "FLOAT" => float(row.try_get::<f32, _>(i).map_err(err)?.into()),
            "DOUBLE" => float(row.try_get::<f64, _>(i).map_err(err)?),
            "DECIMAL" => {
                let text = row.try_get_unchecked::<String, _>(i).map_err(err)?;
                number_from_text(&text).ok_or_else(|| unsupported(table, name, ty))?
            }
            "DATETIME" | "TIMESTAMP" => Value::String(
                row.try_get::<NaiveDateTime, _>(i)
                    .map_err(err)?
                    .format("%Y-%m-%d %H:%M:%S%.f")
                    .to_string(),
            ),
            "DATE" => Value::String(
                row.try_get::<NaiveDate, _>(i)
                    .map_err(err)?
                    .format("%Y-%m-%d")
                    .to_string(),
            ),
            "TIME" => Value::String(
                row.try_get::<NaiveTime, _>(i)
                    .map_err(err)?
                    .format("%H:%M:%S%.f")
                    .to_string(),
            ),
            "JSON" => row.try_get::<Value, _>(i).map_err(err)?,
            // Text columns with a binary collation are reported as blobs: the charset
            // tells them apart.
            _ if <String as Type<MySql>>::compatible(column.type_info()) => {
                Value::String(row.try_get::<String, _>(i).map_err(err)?)
            }
            _ => blob(&row.try_get_unchecked::<Vec<u8>, _>(i).map_err(err)?),
        };
        out.insert(name.to_owned(), value);
    }
    Ok(out)
}
