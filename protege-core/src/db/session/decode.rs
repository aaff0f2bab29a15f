//! How a column of a row becomes a Rust value on each driver: by name on SeaORM's rows, by
//! its place in the select list on the SQLite C library's (see [`super::super::read`]'s
//! `rows`, whose decoders ask a [`Row`] for the columns of a table).

use chrono::{DateTime, FixedOffset, NaiveDateTime, Offset, TimeZone, Utc};
use rusqlite::types::ValueRef;
use sea_orm::{QueryResult, TryGetable};

use crate::db::read::rows::TableColumn;
use crate::error::{Error, ErrorKind, Result};

/// A row as a session hands it on, from whichever driver read it.
pub(crate) enum AnyRow<'a> {
    /// Read through the SQLite C library.
    Embedded(&'a rusqlite::Row<'a>),
    /// Read through SeaORM.
    Orm(&'a QueryResult),
    /// A row of one part of a read joined into one statement.
    #[cfg(feature = "postgres")]
    Part(&'a super::one_trip::PartRow<'a>),
}

impl Row for AnyRow<'_> {
    fn get<T: Decode>(&self, column: impl TableColumn) -> Result<T> {
        match self {
            AnyRow::Embedded(row) => Row::get(*row, column),
            AnyRow::Orm(row) => Row::get(*row, column),
            #[cfg(feature = "postgres")]
            AnyRow::Part(row) => Row::get(*row, column),
        }
    }
}

/// One result row, whichever driver produced it.
pub(crate) trait Row {
    /// The value of `column`, decoded as `T`.
    fn get<T: Decode>(&self, column: impl TableColumn) -> Result<T>;
}

impl Row for QueryResult {
    fn get<T: Decode>(&self, column: impl TableColumn) -> Result<T> {
        Ok(self.try_get("", column.as_str())?)
    }
}

impl Row for rusqlite::Row<'_> {
    fn get<T: Decode>(&self, column: impl TableColumn) -> Result<T> {
        let index = column.position();
        debug_assert_eq!(
            self.as_ref().column_name(index).ok(),
            Some(column.as_str()),
            "the select list was not built by `columns`"
        );
        T::from_sqlite(self, index, column.as_str())
    }
}

/// A Rust type a column decodes into, through either driver.
pub(crate) trait Decode: TryGetable + Sized {
    /// The value at `index` of a rusqlite row, whose column is `name`.
    fn from_sqlite(row: &rusqlite::Row<'_>, index: usize, name: &str) -> Result<Self>;
}

macro_rules! decode_as_rusqlite_does {
    ($($t:ty),*) => {$(
        impl Decode for $t {
            fn from_sqlite(row: &rusqlite::Row<'_>, index: usize, _: &str) -> Result<Self> {
                Ok(row.get(index)?)
            }
        }
    )*};
}

decode_as_rusqlite_does!(
    i64,
    i32,
    bool,
    String,
    Option<i64>,
    Option<String>,
    Option<Vec<u8>>
);

/// A column stored as a name (a run's status or format): read from the name; another
/// text is a database error naming the column.
macro_rules! decode_named {
    ($($ty:ty => $what:literal),* $(,)?) => {$(
        impl Decode for $ty {
            fn from_sqlite(row: &rusqlite::Row<'_>, index: usize, name: &str) -> Result<Self> {
                let text: String = row.get(index)?;
                Self::parse(&text).ok_or_else(|| {
                    Error::new(
                        ErrorKind::Database,
                        format!(
                            concat!("database error: column `{}` holds `{}`, which is not ", $what),
                            name, text
                        ),
                    )
                })
            }
        }
    )*};
}

decode_named!(
    crate::db::entities::run::RunStatus => "a run status",
    crate::db::entities::run::RunFormat => "a wire format",
);

impl Decode for DateTime<Utc> {
    /// Read as SeaORM's SQLite driver reads it, from whichever storage class holds it.
    fn from_sqlite(row: &rusqlite::Row<'_>, index: usize, name: &str) -> Result<Self> {
        let value = row.get_ref(index)?;
        let parsed = match value {
            ValueRef::Text(bytes) => std::str::from_utf8(bytes).ok().and_then(time_from_text),
            ValueRef::Integer(n) => Utc.fix().timestamp_opt(n, 0).single(),
            ValueRef::Real(days) => time_from_julian_day(days),
            ValueRef::Null | ValueRef::Blob(_) => None,
        };
        parsed.map(|t| t.with_timezone(&Utc)).ok_or_else(|| {
            Error::new(
                ErrorKind::Database,
                format!(
                    "database error: column `{name}` holds `{}`, which is not a date and time",
                    shown(value)
                ),
            )
        })
    }
}

impl Decode for Option<DateTime<Utc>> {
    fn from_sqlite(row: &rusqlite::Row<'_>, index: usize, name: &str) -> Result<Self> {
        match row.get_ref(index)? {
            ValueRef::Null => Ok(None),
            _ => DateTime::<Utc>::from_sqlite(row, index, name).map(Some),
        }
    }
}

fn shown(value: ValueRef<'_>) -> String {
    match value {
        ValueRef::Null => "NULL".to_owned(),
        ValueRef::Integer(n) => n.to_string(),
        ValueRef::Real(x) => x.to_string(),
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
        ValueRef::Blob(b) => format!("{} bytes", b.len()),
    }
}

/// A timestamp stored as text, read as SeaORM's SQLite driver reads it: RFC 3339 (what
/// protege writes), then SQLite's own date and time formats, naive ones taken as UTC.
fn time_from_text(text: &str) -> Option<DateTime<FixedOffset>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t);
    }
    const FORMATS: [&str; 12] = [
        "%F %T%.f",
        "%F %R",
        "%F %RZ",
        "%F %R%:z",
        "%F %T%.fZ",
        "%F %T%.f%:z",
        "%FT%R",
        "%FT%RZ",
        "%FT%R%:z",
        "%FT%T%.f",
        "%FT%T%.fZ",
        "%FT%T%.f%:z",
    ];
    FORMATS.iter().find_map(|format| {
        DateTime::parse_from_str(text, format).ok().or_else(|| {
            NaiveDateTime::parse_from_str(text, format)
                .ok()
                .map(|t| Utc.fix().from_utc_datetime(&t))
        })
    })
}

/// A timestamp stored as a Julian day number.
fn time_from_julian_day(days: f64) -> Option<DateTime<FixedOffset>> {
    const UNIX_EPOCH_JULIAN_DAY: f64 = 2_440_587.5;
    let seconds = (days - UNIX_EPOCH_JULIAN_DAY) * 86_400.0;
    if !seconds.is_finite() || seconds.abs() > 1e15 {
        return None;
    }
    // In range by the check above; the fraction is below one second.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let (whole, nanos) = (seconds.trunc() as i64, (seconds.fract() * 1e9).abs() as u32);
    Utc.fix().timestamp_opt(whole, nanos).single()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_like_the_sqlx_driver() {
        let t = |s: &str| time_from_text(s).map(|t| t.with_timezone(&Utc).to_rfc3339());
        assert_eq!(
            t("2026-03-02T09:14:00+00:00").as_deref(),
            Some("2026-03-02T09:14:00+00:00")
        );
        assert_eq!(
            t("2026-03-02T10:14:00+01:00").as_deref(),
            Some("2026-03-02T09:14:00+00:00")
        );
        assert_eq!(
            t("2026-03-02 09:14:00").as_deref(),
            Some("2026-03-02T09:14:00+00:00")
        );
        assert_eq!(
            t("2026-03-02 09:14").as_deref(),
            Some("2026-03-02T09:14:00+00:00")
        );
        assert_eq!(t("yesterday"), None);
        let day = time_from_julian_day(2_440_588.5).map(|t| t.to_rfc3339());
        assert_eq!(day.as_deref(), Some("1970-01-02T00:00:00+00:00"));
        assert_eq!(time_from_julian_day(f64::NAN), None);
    }
}
