//! The schema migrations, applied with [`migrate`](super::migrate) or `protege db migrate`.
//!
//! Column types are chosen per backend so one schema holds the same data everywhere:
//! long text is `LONGTEXT` on MySQL/MariaDB (its `TEXT` stops at 64 KiB), timestamps are
//! `timestamp with time zone` on PostgreSQL, `DATETIME(6)` on MySQL/MariaDB (no 2038 limit)
//! and RFC 3339 text on SQLite, and MySQL tables use `utf8mb4` with a binary collation so
//! Message-IDs compare exactly.

use sea_orm::sea_query::{ColumnDef, Index, IntoIden, Table, TableCreateStatement};
use sea_orm::{DbBackend, DbErr};

mod erasure;
mod html;
mod inbox;
mod jobs;
mod mail;
mod migrator;
mod outbox;
mod runs;
mod settings;
mod slots;
mod strips;
mod summaries;

use erasure::CreateErasure;
use html::{ConvertHtmlAgain, StoreHtmlText};
use inbox::CreateInbox;
use jobs::CreateAgentJobs;
use mail::{CreateMessageAddresses, CreateTables, IndexInReplyTo};
use migrator::{Migration, SchemaManager};
use outbox::{CreateOutbox, IndexOutboxPersonaCreated};
use runs::CreateRuns;
use settings::CreateSettings;
use slots::SlotTimes;
use strips::{CreateMessageStrips, MailRulesAgain};
use summaries::CreateThreadSummaries;

/// The migrator of the protege schema: every migration, in order, applied and rolled back
/// with the record of the applied ones in `protege_migrations`.
#[derive(Debug)]
pub struct Migrator;

impl Migrator {
    /// Every migration, in the order they run.
    fn migrations() -> Vec<Box<dyn Migration>> {
        vec![
            Box::new(CreateTables),
            Box::new(CreateThreadSummaries),
            Box::new(IndexInReplyTo),
            Box::new(StoreHtmlText),
            Box::new(CreateRuns),
            Box::new(CreateSettings),
            Box::new(ConvertHtmlAgain),
            Box::new(CreateMessageAddresses),
            Box::new(CreateMessageStrips),
            Box::new(MailRulesAgain),
            Box::new(CreateOutbox),
            Box::new(CreateAgentJobs),
            Box::new(SlotTimes),
            Box::new(CreateInbox),
            Box::new(CreateErasure),
            Box::new(IndexOutboxPersonaCreated),
        ]
    }
}

/// Creates the indexes of `table`, each `(name, columns, unique)`, unless they exist.
async fn create_indexes<T: IntoIden + Clone, C: IntoIden + Clone>(
    manager: &SchemaManager<'_>,
    table: T,
    indexes: &[(&str, &[C], bool)],
) -> Result<(), DbErr> {
    for (name, cols, unique) in indexes {
        let mut index = Index::create();
        index.name(*name).table(table.clone()).if_not_exists();
        for col in cols.iter() {
            index.col(col.clone());
        }
        if *unique {
            index.unique();
        }
        manager.create_index(index).await?;
    }
    Ok(())
}

/// Column helpers that pick the right type for the backend.
pub(super) struct Types(pub(super) DbBackend);

impl Types {
    pub(super) fn pk(&self, col: impl IntoIden) -> ColumnDef {
        ColumnDef::new(col)
            .big_integer()
            .not_null()
            .auto_increment()
            .primary_key()
            .to_owned()
    }

    pub(super) fn long_text(&self, col: impl IntoIden) -> ColumnDef {
        let mut def = ColumnDef::new(col);
        match self.0 {
            DbBackend::MySql => def.custom("LONGTEXT".into_iden()),
            _ => def.text(),
        };
        def
    }

    pub(super) fn key(&self, col: impl IntoIden) -> ColumnDef {
        ColumnDef::new(col).string_len(512).not_null().to_owned()
    }

    pub(super) fn timestamp(&self, col: impl IntoIden) -> ColumnDef {
        let mut def = ColumnDef::new(col);
        match self.0 {
            DbBackend::MySql => def.custom("DATETIME(6)".into_iden()),
            _ => def.timestamp_with_time_zone(),
        };
        def.not_null();
        def
    }

    pub(super) fn blob(&self, col: impl IntoIden) -> ColumnDef {
        let mut def = ColumnDef::new(col);
        match self.0 {
            DbBackend::MySql => def.custom("LONGBLOB".into_iden()),
            _ => def.blob(),
        };
        def
    }

    pub(super) fn table(&self, name: impl IntoIden) -> TableCreateStatement {
        let mut table = Table::create();
        table.table(name).if_not_exists();
        if self.0 == DbBackend::MySql {
            table.character_set("utf8mb4").collate("utf8mb4_bin");
        }
        table
    }
}
