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
