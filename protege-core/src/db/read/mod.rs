//! Every read of protege's tables.
//!
//! - `lookup`: a message by its Message-ID (the trigger of a reply run) and the messages of
//!   a thread;
//! - `history`: the prior turns behind `ThreadHistory`;
//! - `correspondents`: a correspondent's earlier threads behind `CorrespondentHistory`;
//! - `summary`: the running summary that applies to a reply run;
//! - `open_threads`: a persona's threads waiting for an answer, behind `OpenThreads`;
//! - `records`: `LoadRecord`'s rows of any table, as JSON;
//! - `runs`: a run and its rounds;
//! - `slots`: when a responsibility was first seen, and its newest slot fired;
//! - `rows`: how a row of protege's tables becomes a value, whichever driver read it;
//! - `embedded`: a SQLite file read through the SQLite C library.
//!
//! On a SQLite file the trigger lookup, the history and `LoadRecord` run their sea-query
//! statements through `embedded`; in-memory SQLite, PostgreSQL and MySQL/MariaDB run the
//! same statements through SeaORM.

// The rows of a select decoded by a decoder of `rows`, through the embedded reader on
// a SQLite file and SeaORM elsewhere.
macro_rules! all {
    ($db:expr, $select:expr, $decode:path) => {{
        let mut out = Vec::new();
        if let Some(reader) = crate::db::read::embedded::reader($db) {
            reader.run(|conn| {
                conn.query($select, |row| {
                    out.push($decode(row)?);
                    Ok(())
                })
            })?;
        } else {
            // Dates bound as MySQL/MariaDB stores them (see `dates::statement`).
            for row in $db
                .query_all_raw(crate::db::dates::statement($db, $select))
                .await?
            {
                out.push($decode(&row)?);
            }
        }
        out
    }};
}

pub(crate) mod correspondents;
mod embedded;
pub(crate) mod history;
pub(crate) mod jobs;
mod lookup;
#[cfg(feature = "postgres")]
mod one_trip;
pub(crate) mod open_threads;
mod outbox;
pub(crate) mod records;
pub(crate) mod rows;
mod runs;
mod slots;
pub(crate) mod summary;

pub use embedded::{Writes, embedded_statements, embedded_write};
pub use slots::{first_seen, newest_slot};

use sea_orm::{
    AccessMode, DatabaseConnection, DatabaseTransaction, DbBackend, IsolationLevel,
    TransactionTrait,
};

/// A read-only transaction whose statements all see one snapshot of the database
/// (`REPEATABLE READ` on PostgreSQL and MySQL/MariaDB; SQLite's transactions always do), for
/// the reads that take several statements: a concurrent erasure or import commits either
/// before all of them or after.
pub async fn snapshot(db: &DatabaseConnection) -> crate::error::Result<DatabaseTransaction> {
    Ok(match db.get_database_backend() {
        DbBackend::Sqlite => db.begin().await?,
        _ => {
            db.begin_with_config(
                Some(IsolationLevel::RepeatableRead),
                Some(AccessMode::ReadOnly),
            )
            .await?
        }
    })
}
pub use lookup::{
    AttachmentListing, MessageListing, ThreadListing, list_thread_messages, list_threads,
    load_message, load_message_by_row, newest_inbound_message, recent_inbound_to,
    thread_inbound_messages, thread_message_ids, thread_message_ids_of, thread_messages,
};
pub use outbox::{
    OutboxFilter, claimable_outbox, first_contacts, last_delivery, list_outbox, load_outbox,
    may_claim, outbox_of_run, outbox_state,
};
pub use runs::{
    call_id_taken_in_thread, load_rounds, load_run, persona_addressed, replayed_tool_use,
    runs_of_message,
};

/// The round trips made so far in this process on the database behind `db` outside SeaORM,
/// whose metric callback does not see them: the statements run through the SQLite C
/// library on a SQLite file.
///
/// Together with SeaORM's metric callback it gives the full count of a read's round trips.
pub fn direct_round_trips(db: &DatabaseConnection) -> u64 {
    embedded_statements(db).unwrap_or(0)
}
