//! Reads on PostgreSQL in one round trip: a read of several statements sent as one simple
//! query, `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`, the statements and `COMMIT`,
//! whose results come back in order on one connection: one snapshot, one round trip, and no
//! prepared statement (so it passes PgBouncer in any pooling mode).
//!
//! The simple query protocol takes no parameters: the statements carry their values in
//! their text. Numbers and timestamps are written by the query builder; text from outside
//! is written only by [`literal`], a dollar-quoted string whose tag the text cannot hold.

use sea_orm::{DatabaseConnection, QueryResult};

use crate::error::{Error, Result};

/// What a read sees, statement by statement (0 is the first statement given).
pub(crate) enum Event {
    /// A row of a statement.
    Row(usize, QueryResult),
    /// The end of a statement's rows.
    Done(usize),
}

/// Runs `statements` in one snapshot and one round trip, handing each row and each end of a
/// statement to `on`, in order. A failure (of the database or of `on`) rolls the snapshot
/// back on its connection before the connection returns to the pool, or closes it.
pub(crate) async fn read(
    db: &DatabaseConnection,
    statements: &[String],
    mut on: impl FnMut(Event) -> Result<()>,
) -> Result<()> {
    use futures::TryStreamExt as _;
    use sea_orm::sqlx::{self, Either};

    let mut sql = String::from("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;\n");
    for statement in statements {
        sql.push_str(statement);
        sql.push_str(";\n");
    }
    sql.push_str("COMMIT");
    let failed = |e: sqlx::Error| {
        Error::from(sea_orm::DbErr::Query(sea_orm::RuntimeErr::SqlxError(
            std::sync::Arc::new(e),
        )))
    };
    // Named as SeaORM names the errors of taking a pooled connection.
    let mut conn = db
        .get_postgres_connection_pool()
        .acquire()
        .await
        .map_err(|e| {
            use sea_orm::{ConnAcquireErr, DbErr};
            Error::from(match e {
                sqlx::Error::PoolTimedOut => DbErr::ConnectionAcquire(ConnAcquireErr::Timeout),
                sqlx::Error::PoolClosed => {
                    DbErr::ConnectionAcquire(ConnAcquireErr::ConnectionClosed)
                }
                other => DbErr::Conn(sea_orm::RuntimeErr::SqlxError(std::sync::Arc::new(other))),
            })
        })?;
    let outcome = async {
        // Each statement's rows come before its completion; `BEGIN` completes first.
        let mut completed = 0;
        let mut results = sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).fetch_many(&mut *conn);
        while let Some(item) = results.try_next().await.map_err(failed)? {
            match item {
                Either::Left(_) => {
                    if (1..=statements.len()).contains(&completed) {
                        on(Event::Done(completed - 1))?;
                    }
                    completed += 1;
                }
                Either::Right(row) if (1..=statements.len()).contains(&completed) => {
                    on(Event::Row(completed - 1, QueryResult::from(row)))?;
                }
                Either::Right(_) => {}
            }
        }
        Ok::<_, Error>(())
    }
    .await;
    count(db);
    if outcome.is_err() {
        let rolled_back = sqlx::raw_sql("ROLLBACK").execute(&mut *conn).await;
        if rolled_back.is_err() {
            conn.close_on_drop();
        }
    }
    outcome
}

/// `text` as a PostgreSQL dollar-quoted string literal: `$p$text$p$`, with a tag that does
/// not occur in `text`, so nothing in it can end the literal. Text holds no NUL (every
/// stored identifier is stored without).
pub(crate) fn literal(text: &str) -> String {
    let mut tag = String::from("p");
    let mut n = 0u32;
    while text.contains(&format!("${tag}$")) {
        n += 1;
        tag = format!("p{n}");
    }
    format!("${tag}${text}${tag}$")
}

/// The reads made in one round trip so far per PostgreSQL database (host, port, name).
static READS: std::sync::Mutex<Vec<(String, u64)>> = std::sync::Mutex::new(Vec::new());

fn database_key(db: &DatabaseConnection) -> Option<String> {
    if db.get_database_backend() != sea_orm::DbBackend::Postgres {
        return None;
    }
    let options = db.get_postgres_connection_pool().connect_options();
    Some(format!(
        "{}:{}/{}",
        options.get_host(),
        options.get_port(),
        options.get_database().unwrap_or_default()
    ))
}

fn count(db: &DatabaseConnection) {
    let Some(key) = database_key(db) else {
        return;
    };
    let mut counts = READS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match counts.iter_mut().find(|(k, _)| *k == key) {
        Some((_, n)) => *n += 1,
        None => counts.push((key, 1)),
    }
}

/// The reads made in one round trip so far in this process on `db`'s database.
pub(crate) fn reads(db: &DatabaseConnection) -> u64 {
    let Some(key) = database_key(db) else {
        return 0;
    };
    READS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .find(|(k, _)| *k == key)
        .map_or(0, |(_, n)| *n)
}

#[cfg(test)]
mod tests {
    use super::literal;

    #[test]
    fn a_literal_cannot_be_ended_by_its_text() {
        assert_eq!(literal("<m1@example.com>"), "$p$<m1@example.com>$p$");
        assert_eq!(literal("a$p$b"), "$p1$a$p$b$p1$");
        assert_eq!(literal("$p$ $p1$ $p2$"), "$p3$$p$ $p1$ $p2$$p3$");
        assert_eq!(
            literal("'; DROP TABLE messages; --"),
            "$p$'; DROP TABLE messages; --$p$"
        );
    }
}
