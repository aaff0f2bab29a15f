//! Dates as every backend stores them: the years 1970 to 9999 in UTC.
//!
//! PostgreSQL (`timestamp with time zone`), MySQL/MariaDB (`DATETIME(6)`) and SQLite
//! (RFC 3339 text) all hold that range. The MySQL driver binds a `DateTime<Utc>` as a
//! `TIMESTAMP` parameter, whose range ends at 2038-01-19T03:14:07Z and starts at 1970:
//! MariaDB turns a value outside it into NULL before it reaches the `DATETIME(6)` column.
//! [`statement`] therefore binds every date of a statement run on MySQL/MariaDB as a
//! `DATETIME` in UTC (the connection's time zone is `+00:00`). A date outside the range is
//! refused before it is written ([`check`]), as invalid input, never as a database error.

use chrono::{DateTime, Utc};
use protege_mail::{FIRST_YEAR, LAST_YEAR, in_range, rfc3339_z};
use sea_orm::sea_query::Value;
use sea_orm::{ConnectionTrait, DbBackend, Statement, StatementBuilder};

use crate::error::{Error, ErrorKind, Result};

/// `Ok` when every backend stores `at`; else an error of kind
/// [`InvalidInput`](ErrorKind::InvalidInput) naming `what` (e.g. the `sent_at` of a
/// message) and the date.
pub fn check(what: &str, at: &DateTime<Utc>) -> Result<()> {
    if in_range(at) {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::InvalidInput,
        format!(
            "{what} {} is outside the years {FIRST_YEAR} to {LAST_YEAR} (UTC) that the database stores",
            rfc3339_z(at)
        ),
    ))
}

/// `stmt` built for `db`'s backend; on MySQL/MariaDB its dates are bound as `DATETIME`
/// values in UTC instead of the driver's `TIMESTAMP`.
pub fn statement<C: ConnectionTrait, S: StatementBuilder>(db: &C, stmt: &S) -> Statement {
    built_for(db.get_database_backend(), stmt)
}

fn built_for<S: StatementBuilder>(backend: DbBackend, stmt: &S) -> Statement {
    let mut built = stmt.build(&backend);
    if backend == DbBackend::MySql
        && let Some(values) = &mut built.values
    {
        for value in &mut values.0 {
            if let Value::ChronoDateTimeUtc(at) = value {
                *value = Value::ChronoDateTime(at.map(|at| at.naive_utc()));
            }
        }
    }
    built
}

#[cfg(test)]
mod tests {
    use super::*;
    use sea_orm::sea_query::{Expr, ExprTrait, Query};

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap().to_utc()
    }

    #[test]
    fn the_range_is_1970_to_9999() {
        assert!(in_range(&at("1970-01-01T00:00:00Z")));
        assert!(in_range(&at("9999-12-31T23:59:59.999999Z")));
        assert!(!in_range(&at("1969-12-31T23:59:59Z")));
        assert_eq!(
            check("the `sent_at` of `<a@x>`", &at("1969-12-31T23:59:59Z"))
                .unwrap_err()
                .to_string(),
            "the `sent_at` of `<a@x>` 1969-12-31T23:59:59Z is outside the years 1970 to 9999 (UTC) that the database stores"
        );
    }

    #[test]
    fn mysql_binds_dates_as_datetime() {
        let when = at("2038-01-19T03:14:08Z");
        let mut q = Query::select();
        q.expr(Expr::val(1)).and_where(Expr::val(when).lte(when));
        let values = built_for(DbBackend::MySql, &q).values.unwrap().0;
        assert_eq!(values[1], Value::ChronoDateTime(Some(when.naive_utc())));
        let values = built_for(DbBackend::Postgres, &q).values.unwrap().0;
        assert_eq!(values[1], Value::ChronoDateTimeUtc(Some(when)));
    }
}
