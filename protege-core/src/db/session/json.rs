//! A row of any table as a JSON object, as `LoadRecord` renders it, whichever driver read
//! it: its columns in the order the backend returns them.
//!
//! # Decoding
//!
//! A value is read by the driver's typed access: the first Rust type, in a fixed order per
//! backend, whose SQL types include the value's (`Type::compatible`, the check `try_get`
//! makes before it decodes) decides how it is read and rendered. Decimals are recognised by
//! `Decimal`'s check and read from the backend's text or wire format, which holds more
//! digits than a `Decimal` (and PostgreSQL's NaN). SQLite is dynamically typed, so there
//! the value's storage class decides, whichever driver read it (SeaORM for an in-memory
//! database, the SQLite C library for a file), and one function renders both
//! ([`stored`]).
//!
//! On PostgreSQL an enum is rendered as its label (its kind, which sqlx looks up, says it is
//! one), a `uuid` as PostgreSQL prints it (recognised by its fixed OID: sqlx reads it only
//! with a feature this crate does not use), and a one-dimensional array of text, integers
//! or booleans as a JSON array. A domain arrives as its base type.
//!
//! Two decisions read a type's name, both on MySQL/MariaDB: sqlx keeps MySQL's column type
//! private, and its typed checks take a `TINYINT(1)` (which it names `BOOLEAN`) for any
//! other `TINYINT`, and a `BIT` for an unsigned integer; the name alone tells them apart.
//!
//! SeaORM renders a row as JSON itself (`FromQueryResult for serde_json::Value`, behind
//! `into_json`), but not as LoadRecord does, and its JSON cannot be turned into
//! LoadRecord's afterwards because it has lost what that would need (compared on SQLite,
//! PostgreSQL 15 and MariaDB 10.11 with the table of every type in `tests/load_record.rs`):
//! blobs become arrays of numbers, as a JSON column holding an array does; timestamps are
//! printed by chrono (`2026-01-05T10:00:00.250`, `2026-01-05T10:00:00Z`), not by the
//! backend, and SQLite's `2026-01-05T10:00:00+02:00` loses its zone; columns it has no type
//! for are left out of the object (SQLite `NUMERIC` and untyped columns, MySQL `MEDIUMINT`
//! and `BIT`, a PostgreSQL `NUMERIC` holding `NaN`); SQLite `REAL`s are read as `f32` first
//! (`1e308` becomes `null`); MySQL's `BOOLEAN` becomes `0` while SQLite's stored 0 becomes
//! `false`; decimals become strings.

// A build without every driver leaves some of the shared value helpers unused.
#![cfg_attr(
    not(all(feature = "sqlite", feature = "postgres", feature = "mysql")),
    allow(dead_code, unused_imports)
)]
use base64::Engine as _;
use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use rusqlite::types::ValueRef;
use sea_orm::QueryResult;
use sea_orm::prelude::Decimal;
#[cfg(feature = "mysql")]
use sea_orm::sqlx::mysql::{MySql, MySqlRow};
#[cfg(feature = "postgres")]
use sea_orm::sqlx::postgres::{PgRow, PgTypeKind, Postgres};
#[cfg(feature = "sqlite")]
use sea_orm::sqlx::sqlite::{Sqlite, SqliteRow};
use sea_orm::sqlx::{Column, ColumnIndex, Database, Row, Type, TypeInfo, ValueRef as _};
use serde_json::{Map, Number, Value};

use super::AnyRow;
use crate::error::{Error, ErrorKind, Result};

/// `row` of `table` as a JSON object, its columns in the order the backend returns them.
pub(crate) fn record(row: &AnyRow<'_>, table: &str) -> Result<Map<String, Value>> {
    match row {
        AnyRow::Embedded(row) => embedded_row(row, table),
        AnyRow::Orm(row) => row_to_json(row, table),
        #[cfg(feature = "postgres")]
        AnyRow::Part(_) => Err(Error::new(
            ErrorKind::Database,
            "a record is not read as part of a joined read",
        )),
    }
}

/// Turns one row into a JSON object, columns in the order the backend returns them.
fn row_to_json(row: &QueryResult, table: &str) -> Result<Map<String, Value>> {
    #[cfg(feature = "sqlite")]
    if let Some(r) = row.try_as_sqlite_row() {
        return object(r, table, sqlite_value);
    }
    #[cfg(feature = "postgres")]
    if let Some(r) = row.try_as_pg_row() {
        return object(r, table, pg_value);
    }
    #[cfg(feature = "mysql")]
    if let Some(r) = row.try_as_mysql_row() {
        return object(r, table, mysql_value);
    }
    Err(Error::new(
        ErrorKind::Database,
        "LoadRecord supports SQLite, PostgreSQL and MySQL/MariaDB connections only",
    ))
}

/// Why a value was not rendered.
enum Unreadable {
    /// The driver could not decode it.
    Decode(sea_orm::sqlx::Error),
    /// Its type is not one LoadRecord renders.
    Unsupported,
}

impl From<sea_orm::sqlx::Error> for Unreadable {
    fn from(e: sea_orm::sqlx::Error) -> Self {
        Unreadable::Decode(e)
    }
}

type Rendered = std::result::Result<Value, Unreadable>;

/// The type of a non-NULL value, as the driver reports it.
type TypeOf<R> = <<R as Row>::Database as Database>::TypeInfo;

/// A row read by SeaORM as a JSON object: each non-NULL value rendered by `value`, which
/// is given the value's type.
fn object<R>(
    row: &R,
    table: &str,
    value: fn(&R, usize, &TypeOf<R>) -> Rendered,
) -> Result<Map<String, Value>>
where
    R: Row,
    usize: ColumnIndex<R>,
{
    let mut out = Map::with_capacity(row.columns().len());
    for (i, column) in row.columns().iter().enumerate() {
        let name = column.name();
        let raw = row
            .try_get_raw(i)
            .map_err(|e| decode_error(table, name, e))?;
        let rendered = if raw.is_null() {
            Value::Null
        } else {
            let ty = raw.type_info().into_owned();
            value(row, i, &ty).map_err(|e| match e {
                Unreadable::Decode(e) => decode_error(table, name, e),
                Unreadable::Unsupported => unsupported(table, name, ty.name()),
            })?
        };
        out.insert(name.to_owned(), rendered);
    }
    Ok(out)
}

/// Whether the driver reads a value of type `ty` as a `T` (the check `try_get` makes).
fn is<T: Type<DB>, DB: Database>(ty: &DB::TypeInfo) -> bool {
    T::compatible(ty)
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

pub(crate) fn float(f: f64) -> Value {
    Number::from_f64(f).map_or(Value::Null, Value::Number)
}

fn blob(bytes: &[u8]) -> Value {
    Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// A SQLite value rendered from its storage class, whichever driver read it.
fn stored(value: ValueRef<'_>) -> std::result::Result<Value, std::str::Utf8Error> {
    Ok(match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(n) => Value::from(n),
        ValueRef::Real(x) => float(x),
        ValueRef::Blob(bytes) => blob(bytes),
        ValueRef::Text(text) => Value::String(std::str::from_utf8(text)?.to_owned()),
    })
}

/// A row read through the SQLite C library.
fn embedded_row(row: &rusqlite::Row<'_>, table: &str) -> Result<Map<String, Value>> {
    let statement = row.as_ref();
    let mut out = Map::with_capacity(statement.column_count());
    for i in 0..statement.column_count() {
        let name = statement.column_name(i)?;
        let value = row.get_ref(i).map_err(|e| decode_error(table, name, e))?;
        let value = stored(value).map_err(|e| decode_error(table, name, e))?;
        out.insert(name.to_owned(), value);
    }
    Ok(out)
}

#[cfg(feature = "sqlite")]
/// A value read by SeaORM's SQLite driver, whose type is the value's storage class.
fn sqlite_value(row: &SqliteRow, i: usize, ty: &TypeOf<SqliteRow>) -> Rendered {
    type S = Sqlite;
    let value = if is::<i64, S>(ty) {
        ValueRef::Integer(row.try_get(i)?)
    } else if is::<f64, S>(ty) {
        ValueRef::Real(row.try_get(i)?)
    } else if is::<&str, S>(ty) {
        ValueRef::Text(row.try_get::<&str, _>(i)?.as_bytes())
    } else {
        ValueRef::Blob(row.try_get::<&[u8], _>(i)?)
    };
    stored(value).map_err(|e| Unreadable::Decode(sea_orm::sqlx::Error::Decode(e.into())))
}

#[cfg(feature = "postgres")]
fn pg_value(row: &PgRow, i: usize, ty: &TypeOf<PgRow>) -> Rendered {
    type P = Postgres;
    Ok(if is::<i16, P>(ty) {
        Value::from(row.try_get::<i16, _>(i)?)
    } else if is::<i32, P>(ty) {
        Value::from(row.try_get::<i32, _>(i)?)
    } else if is::<i64, P>(ty) {
        Value::from(row.try_get::<i64, _>(i)?)
    } else if is::<f32, P>(ty) {
        float(row.try_get::<f32, _>(i)?.into())
    } else if is::<f64, P>(ty) {
        float(row.try_get::<f64, _>(i)?)
    } else if is::<bool, P>(ty) {
        Value::Bool(row.try_get::<bool, _>(i)?)
    } else if is::<String, P>(ty) {
        Value::String(row.try_get::<String, _>(i)?)
    } else if is::<Vec<u8>, P>(ty) {
        blob(row.try_get::<&[u8], _>(i)?)
    } else if is::<DateTime<Utc>, P>(ty) {
        let t: DateTime<Utc> = row.try_get(i)?;
        Value::String(t.format("%Y-%m-%d %H:%M:%S%.f+00").to_string())
    } else if is::<NaiveDateTime, P>(ty) {
        date_time(row.try_get(i)?)
    } else if is::<NaiveDate, P>(ty) {
        date(row.try_get(i)?)
    } else if is::<NaiveTime, P>(ty) {
        time(row.try_get(i)?)
    } else if is::<Value, P>(ty) {
        row.try_get::<Value, _>(i)?
    } else if is::<Decimal, P>(ty) {
        // From the wire format rather than as a `Decimal`, which holds 28 digits and no NaN.
        pg_numeric(pg_wire(row, i)?).ok_or(Unreadable::Unsupported)?
    } else if matches!(ty.kind(), PgTypeKind::Enum(_)) {
        // An enum's wire value is its label.
        let label = std::str::from_utf8(pg_wire(row, i)?)
            .map_err(|e| Unreadable::Decode(sea_orm::sqlx::Error::Decode(e.into())))?;
        Value::String(label.to_owned())
    } else if ty.oid() == Some(PG_UUID) {
        Value::String(uuid_text(pg_wire(row, i)?).ok_or(Unreadable::Unsupported)?)
    } else if is::<Vec<Option<String>>, P>(ty) {
        Value::from(row.try_get::<Vec<Option<String>>, _>(i)?)
    } else if is::<Vec<Option<i64>>, P>(ty) {
        Value::from(row.try_get::<Vec<Option<i64>>, _>(i)?)
    } else if is::<Vec<Option<i32>>, P>(ty) {
        Value::from(row.try_get::<Vec<Option<i32>>, _>(i)?)
    } else if is::<Vec<Option<i16>>, P>(ty) {
        Value::from(row.try_get::<Vec<Option<i16>>, _>(i)?)
    } else if is::<Vec<Option<bool>>, P>(ty) {
        Value::from(row.try_get::<Vec<Option<bool>>, _>(i)?)
    } else {
        return Err(Unreadable::Unsupported);
    })
}

#[cfg(feature = "postgres")]
/// The bytes of column `i` as the server sent them (binary format), for the types read
/// without a Rust type of their own.
fn pg_wire(row: &PgRow, i: usize) -> std::result::Result<&[u8], Unreadable> {
    let raw = row.try_get_raw(i)?;
    Ok(raw.as_bytes().map_err(sea_orm::sqlx::Error::Decode)?)
}

#[cfg(feature = "postgres")]
/// PostgreSQL's `uuid`, a built-in type whose OID never changes.
const PG_UUID: sea_orm::sqlx::postgres::types::Oid = sea_orm::sqlx::postgres::types::Oid(2950);

#[cfg(feature = "postgres")]
/// A UUID's 16 bytes as PostgreSQL prints them: `a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11`.
fn uuid_text(bytes: &[u8]) -> Option<String> {
    let bytes: &[u8; 16] = bytes.try_into().ok()?;
    let hex = protege_mail::hex(bytes);
    Some(format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    ))
}

#[cfg(feature = "mysql")]
fn mysql_value(row: &MySqlRow, i: usize, ty: &TypeOf<MySqlRow>) -> Rendered {
    type M = MySql;
    // The two decisions made on the type's name (see the module documentation).
    let name = ty.name();
    Ok(if name == "BOOLEAN" {
        Value::Bool(row.try_get::<bool, _>(i)?)
    } else if name == "BIT" {
        blob(row.try_get_unchecked::<&[u8], _>(i)?)
    } else if is::<i64, M>(ty) {
        Value::from(row.try_get::<i64, _>(i)?)
    } else if is::<u64, M>(ty) {
        Value::from(row.try_get::<u64, _>(i)?)
    } else if *ty == <f32 as Type<M>>::type_info() {
        float(row.try_get::<f32, _>(i)?.into())
    } else if is::<f64, M>(ty) {
        float(row.try_get::<f64, _>(i)?)
    } else if is::<Decimal, M>(ty) {
        // Its exact text (`129.90`), rather than a `Decimal`, which holds 28 digits, or a
        // float, which would print money as `129.9`.
        Value::String(row.try_get_unchecked::<&str, _>(i)?.to_owned())
    } else if is::<DateTime<Utc>, M>(ty) {
        // A `DATETIME` or `TIMESTAMP`, read in the connection's UTC.
        date_time(row.try_get::<DateTime<Utc>, _>(i)?.naive_utc())
    } else if is::<NaiveDate, M>(ty) {
        date(row.try_get(i)?)
    } else if is::<NaiveTime, M>(ty) {
        time(row.try_get(i)?)
    } else if is::<String, M>(ty) {
        // Text with a binary collation is a blob to sqlx, and rendered as one (below).
        Value::String(row.try_get::<String, _>(i)?)
    } else if is::<Value, M>(ty) && !is::<Vec<u8>, M>(ty) {
        // MySQL's own `JSON` type (MariaDB's is text).
        row.try_get::<Value, _>(i)?
    } else {
        blob(row.try_get_unchecked::<&[u8], _>(i)?)
    })
}

fn date_time(t: NaiveDateTime) -> Value {
    Value::String(t.format("%Y-%m-%d %H:%M:%S%.f").to_string())
}

fn date(d: NaiveDate) -> Value {
    Value::String(d.format("%Y-%m-%d").to_string())
}

fn time(t: NaiveTime) -> Value {
    Value::String(t.format("%H:%M:%S%.f").to_string())
}
#[cfg(feature = "postgres")]
/// Decodes PostgreSQL's binary `NUMERIC` (base-10000 digits) into its exact text with its
/// scale (`129.90`), as a JSON string; `NaN` is `null`.
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
    Some(Value::String(text))
}
