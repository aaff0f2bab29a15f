//! The reason a database failed, as one lowercase clause without the driver's debug
//! wrapping: what every database error of protege quotes.

/// The useful part of a SeaORM error, without its debug wrapping.
pub fn db_reason(err: &sea_orm::DbErr) -> String {
    use sea_orm::{DbErr, RuntimeErr};
    let text = match err {
        DbErr::Conn(RuntimeErr::SqlxError(e))
        | DbErr::Exec(RuntimeErr::SqlxError(e))
        | DbErr::Query(RuntimeErr::SqlxError(e)) => return sqlx_reason(e),
        DbErr::Conn(RuntimeErr::Internal(e))
        | DbErr::Exec(RuntimeErr::Internal(e))
        | DbErr::Query(RuntimeErr::Internal(e)) => e.clone(),
        other => other.to_string(),
    };
    lowercase_first(text.trim().trim_end_matches('.'))
}

/// The useful part of a driver error; PostgreSQL's message without its source line.
pub(crate) fn sqlx_reason(err: &sea_orm::sqlx::Error) -> String {
    let text = match err {
        // PostgreSQL's error says `at line N` after its message: the line of the server's
        // own source file that raised it (with the file and routine in other fields), of no
        // use to the user and a detail of the server's build; only the message is kept.
        #[cfg(feature = "postgres")]
        sea_orm::sqlx::Error::Database(e) => {
            match e.try_downcast_ref::<sea_orm::sqlx::postgres::PgDatabaseError>() {
                Some(pg) => format!("error returned from database: {}", pg.message()),
                None => err.to_string(),
            }
        }
        _ => err.to_string(),
    };
    lowercase_first(text.trim().trim_end_matches('.'))
}

fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The server's own message in `err`, without the driver's wrapping; `None` when the
/// error did not come from the server.
pub fn server_message(err: &sea_orm::DbErr) -> Option<String> {
    use sea_orm::{DbErr, RuntimeErr};
    match err {
        DbErr::Exec(RuntimeErr::SqlxError(e)) | DbErr::Query(RuntimeErr::SqlxError(e)) => {
            match &**e {
                sea_orm::sqlx::Error::Database(db) => Some(db.message().to_owned()),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether `err` ended the whole transaction it happened in, not only a savepoint: a
/// deadlock or serialization failure (SQLSTATE class 40), or a lost connection (class 08,
/// or no answer from the server).
pub fn transaction_lost(err: &sea_orm::DbErr) -> bool {
    use sea_orm::{DbErr, RuntimeErr};
    match err {
        DbErr::Exec(RuntimeErr::SqlxError(e))
        | DbErr::Query(RuntimeErr::SqlxError(e))
        | DbErr::Conn(RuntimeErr::SqlxError(e)) => match &**e {
            // Class 40: transaction rollback; class 08: connection exception (MySQL's
            // "packet too large" closes the connection).
            sea_orm::sqlx::Error::Database(db) => db
                .code()
                .is_some_and(|code| code.starts_with("40") || code.starts_with("08")),
            _ => true,
        },
        DbErr::ConnectionAcquire(_) | DbErr::Conn(_) => true,
        _ => false,
    }
}
