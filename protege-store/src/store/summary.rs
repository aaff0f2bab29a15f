//! Storing a running summary of a thread, the one row written by the application rather
//! than by an import; the reads that apply it to a reply run are in `protege-core` (`db/read/summary.rs`).

use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveValue, ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, QueryFilter, QueryTrait,
};

use protege_core::db::entities::{message, thread_summary};
use protege_core::{Error, ErrorKind, Result};
use protege_mail::without_nul;

/// A summary just stored by [`store_summary`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StoredSummary {
    /// The summary's id.
    pub id: i64,
    /// The thread it summarises.
    pub thread_id: i64,
    /// The Message-ID of the last message it covers.
    pub through_message_id: String,
}

/// Stores `content` as the summary of the thread of the message `message_id`, through that
/// message, at `now`. `Ok(None)` when no message has this Message-ID; NUL characters are
/// removed (as on import), and a blank summary is an error.
pub async fn store_summary<C: ConnectionTrait>(
    db: &C,
    message_id: &str,
    content: &str,
    now: DateTime<Utc>,
) -> Result<Option<StoredSummary>> {
    let content = without_nul(content).into_owned();
    if content.trim().is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("the summary through `{message_id}` is empty"),
        ));
    }
    protege_core::db::dates::check("the time of the summary", &now)?;
    let Some(through) = message::Entity::find()
        .filter(message::Column::MessageId.eq(without_nul(message_id).as_ref()))
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    let insert = thread_summary::Entity::insert(thread_summary::ActiveModel {
        id: ActiveValue::NotSet,
        email_thread_id: ActiveValue::Set(through.email_thread_id),
        through_message_id: ActiveValue::Set(through.id),
        content: ActiveValue::Set(content),
        created_at: ActiveValue::Set(now),
    });
    let id = if db.get_database_backend() == DbBackend::MySql {
        super::mysql_insert(db, &insert.into_query()).await?
    } else {
        insert.exec(db).await?.last_insert_id
    };
    Ok(Some(StoredSummary {
        id,
        thread_id: through.email_thread_id,
        through_message_id: through.message_id,
    }))
}
