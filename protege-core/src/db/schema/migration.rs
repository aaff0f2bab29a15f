//! The schema migrations, applied with [`migrate`](super::migrate) or `protege db migrate`.
//!
//! Column types are chosen per backend so one schema holds the same data everywhere:
//! long text is `LONGTEXT` on MySQL/MariaDB (its `TEXT` stops at 64 KiB), timestamps are
//! `timestamp with time zone` on PostgreSQL, `DATETIME(6)` on MySQL/MariaDB (no 2038 limit)
//! and RFC 3339 text on SQLite, and MySQL tables use `utf8mb4` with a binary collation so
//! Message-IDs compare exactly.

use sea_orm::{ConnectionTrait, DbBackend};
use sea_orm_migration::prelude::*;

use super::entities::{
    attachment, email_thread, message, run, run_round, thread_summary, tool_use,
};

/// The migrator of the protege schema: every migration, in order.
#[derive(Debug)]
pub struct Migrator;

impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(CreateTables),
            Box::new(CreateThreadSummaries),
            Box::new(IndexInReplyTo),
            Box::new(StoreHtmlText),
            Box::new(CreateRuns),
            Box::new(CreateSettings),
            Box::new(ConvertHtmlAgain),
        ]
    }

    fn migration_table_name() -> DynIden {
        "protege_migrations".into_iden()
    }
}

/// The first migration: the four tables and their indexes.
#[derive(Debug)]
struct CreateTables;

impl MigrationName for CreateTables {
    fn name(&self) -> &str {
        "m20260101_000001_create_tables"
    }
}

/// Column helpers that pick the right type for the backend.
struct Types(DbBackend);

impl Types {
    fn pk(&self, col: impl IntoIden) -> ColumnDef {
        ColumnDef::new(col)
            .big_integer()
            .not_null()
            .auto_increment()
            .primary_key()
            .to_owned()
    }

    fn long_text(&self, col: impl IntoIden) -> ColumnDef {
        let mut def = ColumnDef::new(col);
        match self.0 {
            DbBackend::MySql => def.custom("LONGTEXT".into_iden()),
            _ => def.text(),
        };
        def
    }

    fn key(&self, col: impl IntoIden) -> ColumnDef {
        ColumnDef::new(col).string_len(512).not_null().to_owned()
    }

    fn timestamp(&self, col: impl IntoIden) -> ColumnDef {
        let mut def = ColumnDef::new(col);
        match self.0 {
            DbBackend::MySql => def.custom("DATETIME(6)".into_iden()),
            _ => def.timestamp_with_time_zone(),
        };
        def.not_null();
        def
    }

    fn blob(&self, col: impl IntoIden) -> ColumnDef {
        let mut def = ColumnDef::new(col);
        match self.0 {
            DbBackend::MySql => def.custom("LONGBLOB".into_iden()),
            _ => def.blob(),
        };
        def
    }

    fn table(&self, name: impl IntoIden) -> TableCreateStatement {
        let mut table = Table::create();
        table.table(name).if_not_exists();
        if self.0 == DbBackend::MySql {
            table.character_set("utf8mb4").collate("utf8mb4_bin");
        }
        table
    }
}

#[sea_orm_migration::async_trait::async_trait]
impl MigrationTrait for CreateTables {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let t = Types(manager.get_database_backend());
        create_threads(manager, &t).await?;
        create_messages(manager, &t).await?;
        create_attachments(manager, &t).await?;
        create_tool_uses(manager, &t).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            tool_use::Entity.into_iden(),
            attachment::Entity.into_iden(),
            message::Entity.into_iden(),
            email_thread::Entity.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).if_exists().to_owned())
                .await?;
        }
        Ok(())
    }
}

/// `email_threads`.
async fn create_threads(manager: &SchemaManager<'_>, t: &Types) -> Result<(), DbErr> {
    manager
        .create_table(
            t.table(email_thread::Entity)
                .col(t.pk(email_thread::Column::Id))
                .col(t.long_text(email_thread::Column::Subject).not_null())
                .col(t.timestamp(email_thread::Column::CreatedAt))
                .to_owned(),
        )
        .await?;
    Ok(())
}

/// `messages` and their index by thread and date.
async fn create_messages(manager: &SchemaManager<'_>, t: &Types) -> Result<(), DbErr> {
    use message::Column as M;
    manager
        .create_table(
            t.table(message::Entity)
                .col(t.pk(M::Id))
                .col(ColumnDef::new(M::EmailThreadId).big_integer().not_null())
                .col(t.key(M::MessageId).unique_key())
                .col(ColumnDef::new(M::Direction).string_len(16).not_null())
                .col(t.long_text(M::FromAddress).not_null())
                .col(t.long_text(M::ToAddresses).not_null())
                .col(t.long_text(M::CcAddresses).not_null())
                .col(t.long_text(M::Subject).not_null())
                .col(t.long_text(M::TextBody).null())
                .col(t.long_text(M::HtmlBody).null())
                .col(t.long_text(M::InReplyTo).null())
                .col(t.timestamp(M::SentAt))
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_messages_email_thread")
                        .from(message::Entity, M::EmailThreadId)
                        .to(email_thread::Entity, email_thread::Column::Id)
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .to_owned(),
        )
        .await?;
    manager
        .create_index(
            Index::create()
                .name("idx_messages_thread_sent_at")
                .table(message::Entity)
                .col(M::EmailThreadId)
                .col(M::SentAt)
                .col(M::Id)
                .if_not_exists()
                .to_owned(),
        )
        .await?;
    Ok(())
}

/// `attachments` and their index by message.
async fn create_attachments(manager: &SchemaManager<'_>, t: &Types) -> Result<(), DbErr> {
    use attachment::Column as A;
    manager
        .create_table(
            t.table(attachment::Entity)
                .col(t.pk(A::Id))
                .col(ColumnDef::new(A::MessageId).big_integer().not_null())
                .col(t.key(A::AttachmentId).unique_key())
                .col(t.long_text(A::Filename).not_null())
                .col(t.long_text(A::ContentType).not_null())
                .col(ColumnDef::new(A::ByteSize).big_integer().not_null())
                .col(t.blob(A::Data).null())
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_attachments_message")
                        .from(attachment::Entity, A::MessageId)
                        .to(message::Entity, message::Column::Id)
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .to_owned(),
        )
        .await?;
    manager
        .create_index(
            Index::create()
                .name("idx_attachments_message")
                .table(attachment::Entity)
                .col(A::MessageId)
                .if_not_exists()
                .to_owned(),
        )
        .await?;
    Ok(())
}

/// `tool_uses` and their index by message.
async fn create_tool_uses(manager: &SchemaManager<'_>, t: &Types) -> Result<(), DbErr> {
    use tool_use::Column as U;
    manager
        .create_table(
            t.table(tool_use::Entity)
                .col(t.pk(U::Id))
                .col(ColumnDef::new(U::MessageId).big_integer().not_null())
                .col(t.key(U::RunId))
                .col(ColumnDef::new(U::TurnIndex).integer().not_null())
                .col(ColumnDef::new(U::Position).integer().not_null())
                .col(t.key(U::ToolCallId))
                .col(t.key(U::Name))
                .col(t.long_text(U::Input).not_null())
                .col(t.long_text(U::Result).null())
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_tool_uses_message")
                        .from(tool_use::Entity, U::MessageId)
                        .to(message::Entity, message::Column::Id)
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .to_owned(),
        )
        .await?;
    manager
        .create_index(
            Index::create()
                .name("idx_tool_uses_message")
                .table(tool_use::Entity)
                .col(U::MessageId)
                .if_not_exists()
                .to_owned(),
        )
        .await?;

    Ok(())
}

/// The second migration: `thread_summaries`, the running summaries of a thread.
#[derive(Debug)]
struct CreateThreadSummaries;

impl MigrationName for CreateThreadSummaries {
    fn name(&self) -> &str {
        "m20260601_000001_create_thread_summaries"
    }
}

#[sea_orm_migration::async_trait::async_trait]
impl MigrationTrait for CreateThreadSummaries {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let t = Types(manager.get_database_backend());
        use thread_summary::Column as S;
        manager
            .create_table(
                t.table(thread_summary::Entity)
                    .col(t.pk(S::Id))
                    .col(ColumnDef::new(S::EmailThreadId).big_integer().not_null())
                    .col(ColumnDef::new(S::ThroughMessageId).big_integer().not_null())
                    .col(t.long_text(S::Content).not_null())
                    .col(t.timestamp(S::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_thread_summaries_email_thread")
                            .from(thread_summary::Entity, S::EmailThreadId)
                            .to(email_thread::Entity, email_thread::Column::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_thread_summaries_message")
                            .from(thread_summary::Entity, S::ThroughMessageId)
                            .to(message::Entity, message::Column::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_thread_summaries_thread")
                    .table(thread_summary::Entity)
                    .col(S::EmailThreadId)
                    .col(S::CreatedAt)
                    .col(S::Id)
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(
                Table::drop()
                    .table(thread_summary::Entity)
                    .if_exists()
                    .to_owned(),
            )
            .await
    }
}

/// The third migration: an index on `messages.in_reply_to`, so that finding the stored
/// replies to a message being imported costs a lookup, not a scan of every message.
///
/// A hash index on PostgreSQL (a B-tree entry holds at most about 2.7 KB and an
/// In-Reply-To may be longer), a 255-character prefix on MySQL/MariaDB (a `LONGTEXT`
/// column is indexed by a prefix), a plain index on SQLite.
#[derive(Debug)]
struct IndexInReplyTo;

impl MigrationName for IndexInReplyTo {
    fn name(&self) -> &str {
        "m20261201_000001_index_messages_in_reply_to"
    }
}

/// The name of the index on `messages.in_reply_to`.
const IN_REPLY_TO_INDEX: &str = "idx_messages_in_reply_to";

#[sea_orm_migration::async_trait::async_trait]
impl MigrationTrait for IndexInReplyTo {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let mut index = Index::create();
        index
            .name(IN_REPLY_TO_INDEX)
            .table(message::Entity)
            .if_not_exists();
        match manager.get_database_backend() {
            DbBackend::Postgres => index
                .col(message::Column::InReplyTo)
                .index_type(IndexType::Hash),
            DbBackend::MySql => index.col((message::Column::InReplyTo, 255)),
            _ => index.col(message::Column::InReplyTo),
        };
        manager.create_index(index).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name(IN_REPLY_TO_INDEX)
                    .table(message::Entity)
                    .to_owned(),
            )
            .await
    }
}

/// The migration that stores the readable text of HTML bodies: the column
/// `messages.html_text`, filled for the rows stored before it, so that a read never
/// converts HTML again (a message's HTML is converted once, when it is stored).
///
/// Each HTML body is converted with the same converter the reads used, so the rendering of
/// every stored message stays byte for byte the same. Rows are read a few at a time (at
/// most [`CONVERT_BYTES`] of HTML, or one larger row), so a database of any size migrates
/// in bounded memory. Down drops the column; reads then convert again.
#[derive(Debug)]
struct StoreHtmlText;

impl MigrationName for StoreHtmlText {
    fn name(&self) -> &str {
        "m20261202_000002_store_html_text"
    }
}

/// How many rows one page of the conversion lists.
const CONVERT_PAGE: u64 = 256;

/// The most bytes of HTML loaded at once by the conversion (a larger body alone).
const CONVERT_BYTES: i64 = 8 << 20;

#[sea_orm_migration::async_trait::async_trait]
impl MigrationTrait for StoreHtmlText {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use message::Column as M;
        let t = Types(manager.get_database_backend());
        // A MySQL/MariaDB migration is not one transaction: a run stopped half-way left the
        // column in place, and the next run goes on converting.
        if !manager.has_column("messages", "html_text").await? {
            manager
                .alter_table(
                    Table::alter()
                        .table(message::Entity)
                        .add_column(t.long_text(M::HtmlText).null())
                        .to_owned(),
                )
                .await?;
        }
        convert_html_bodies(manager.get_connection()).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(message::Entity)
                    .drop_column(message::Column::HtmlText)
                    .to_owned(),
            )
            .await
    }
}

/// Fills `html_text` of every row that has an HTML body and no text yet.
async fn convert_html_bodies<C: ConnectionTrait>(db: &C) -> Result<(), DbErr> {
    use message::Column as M;
    let mut after = 0i64;
    loop {
        let page = Query::select()
            .column(M::Id)
            .expr(Func::char_length(Expr::col(M::HtmlBody)))
            .from(message::Entity)
            .and_where(Expr::col(M::Id).gt(after))
            .and_where(Expr::col(M::HtmlBody).is_not_null())
            .and_where(Expr::col(M::HtmlText).is_null())
            .order_by(M::Id, Order::Asc)
            .limit(CONVERT_PAGE)
            .to_owned();
        let rows = db.query_all(&page).await?;
        let Some(last) = rows.last() else {
            return Ok(());
        };
        after = last.try_get_by_index(0)?;
        let mut group: Vec<i64> = Vec::new();
        let mut bytes = 0i64;
        for row in &rows {
            let id: i64 = row.try_get_by_index(0)?;
            // A 32-bit integer on PostgreSQL, 64 bits elsewhere.
            let len = match row.try_get_by_index::<Option<i64>>(1) {
                Ok(len) => len,
                Err(_) => row.try_get_by_index::<Option<i32>>(1)?.map(i64::from),
            }
            .unwrap_or(0);
            if !group.is_empty() && bytes + len > CONVERT_BYTES {
                convert_group(db, &std::mem::take(&mut group)).await?;
                bytes = 0;
            }
            group.push(id);
            bytes += len;
        }
        convert_group(db, &group).await?;
    }
}

/// Converts the HTML bodies of the rows `ids` and stores their text.
async fn convert_group<C: ConnectionTrait>(db: &C, ids: &[i64]) -> Result<(), DbErr> {
    use message::Column as M;
    let select = Query::select()
        .columns([M::Id, M::HtmlBody])
        .from(message::Entity)
        .and_where(Expr::col(M::Id).is_in(ids.iter().copied()))
        .to_owned();
    for row in db.query_all(&select).await? {
        let id: i64 = row.try_get_by_index(0)?;
        let Some(html) = row.try_get_by_index::<Option<String>>(1)? else {
            continue;
        };
        let update = Query::update()
            .table(message::Entity)
            .value(M::HtmlText, protege_mail::html_to_text(&html))
            .and_where(Expr::col(M::Id).eq(id))
            .to_owned();
        db.execute(&update).await?;
    }
    Ok(())
}

/// The migration of runs (§13): the tables `runs` and `run_rounds`, and `tool_uses.is_error`
/// (whether a recorded tool result is an error). Down drops them.
#[derive(Debug)]
struct CreateRuns;

impl MigrationName for CreateRuns {
    fn name(&self) -> &str {
        "m20261203_000001_create_runs"
    }
}

/// The name of the unique index of a run's rounds.
const RUN_ROUND_INDEX: &str = "idx_run_rounds_run_round";

#[sea_orm_migration::async_trait::async_trait]
impl MigrationTrait for CreateRuns {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let t = Types(manager.get_database_backend());
        // A MySQL/MariaDB migration is not one transaction: each step may already be done.
        if !manager.has_column("tool_uses", "is_error").await? {
            manager
                .alter_table(
                    Table::alter()
                        .table(tool_use::Entity)
                        .add_column(
                            ColumnDef::new(tool_use::Column::IsError)
                                .boolean()
                                .not_null()
                                .default(false),
                        )
                        .to_owned(),
                )
                .await?;
        }
        create_runs(manager, &t).await?;
        create_run_rounds(manager, &t).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [run_round::Entity.into_iden(), run::Entity.into_iden()] {
            manager
                .drop_table(Table::drop().table(table).if_exists().to_owned())
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(tool_use::Entity)
                    .drop_column(tool_use::Column::IsError)
                    .to_owned(),
            )
            .await
    }
}

/// `runs`, with its indexes by persona and start (`cache-report --from-runs`) and by message.
async fn create_runs(manager: &SchemaManager<'_>, t: &Types) -> Result<(), DbErr> {
    use run::Column as R;
    let count = |col: R| ColumnDef::new(col).big_integer().not_null().to_owned();
    manager
        .create_table(
            t.table(run::Entity)
                .col(
                    ColumnDef::new(R::Id)
                        .string_len(64)
                        .not_null()
                        .primary_key(),
                )
                .col(ColumnDef::new(R::Persona).string_len(255).not_null())
                .col(ColumnDef::new(R::MessageId).big_integer().null())
                .col(t.long_text(R::Responsibility).null())
                .col(ColumnDef::new(R::Format).string_len(16).not_null())
                .col(t.long_text(R::Model).not_null())
                .col(ColumnDef::new(R::Status).string_len(16).not_null())
                .col(ColumnDef::new(R::Rounds).integer().not_null())
                .col(count(R::InputTokens))
                .col(count(R::OutputTokens))
                .col(count(R::CacheReadTokens))
                .col(count(R::CacheWriteTokens))
                .col(ColumnDef::new(R::RequestSha256).string_len(64).not_null())
                .col(t.long_text(R::Request).not_null())
                .col(t.timestamp(R::StartedAt))
                .col(t.timestamp(R::FinishedAt).null())
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_runs_message")
                        .from(run::Entity, R::MessageId)
                        .to(message::Entity, message::Column::Id)
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .to_owned(),
        )
        .await?;
    for (name, cols) in [
        ("idx_runs_persona_started", vec![R::Persona, R::StartedAt]),
        ("idx_runs_message", vec![R::MessageId]),
    ] {
        let mut index = Index::create();
        index.name(name).table(run::Entity).if_not_exists();
        for col in cols {
            index.col(col);
        }
        manager.create_index(index).await?;
    }
    Ok(())
}

/// `run_rounds`, one row per recorded round, unique by run and round.
async fn create_run_rounds(manager: &SchemaManager<'_>, t: &Types) -> Result<(), DbErr> {
    use run_round::Column as R;
    let count = |col: R| ColumnDef::new(col).big_integer().not_null().to_owned();
    manager
        .create_table(
            t.table(run_round::Entity)
                .col(t.pk(R::Id))
                .col(ColumnDef::new(R::RunId).string_len(64).not_null())
                .col(ColumnDef::new(R::Round).integer().not_null())
                .col(t.long_text(R::Response).not_null())
                .col(t.long_text(R::Results).not_null())
                .col(t.long_text(R::StopReason).not_null())
                .col(count(R::InputTokens))
                .col(count(R::OutputTokens))
                .col(count(R::CacheReadTokens))
                .col(count(R::CacheWriteTokens))
                .col(t.timestamp(R::CreatedAt))
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_run_rounds_run")
                        .from(run_round::Entity, R::RunId)
                        .to(run::Entity, run::Column::Id)
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .to_owned(),
        )
        .await?;
    manager
        .create_index(
            Index::create()
                .name(RUN_ROUND_INDEX)
                .table(run_round::Entity)
                .col(R::RunId)
                .col(R::Round)
                .unique()
                .if_not_exists()
                .to_owned(),
        )
        .await
}

/// The migration of the engine's own settings (§14): the table `settings` (`name`,
/// `value`) and its first row, `fence_key`, 32 random bytes in hex from which the fences of
/// `[mail] fence = true` derive their nonces. Down drops the table.
#[derive(Debug)]
struct CreateSettings;

impl MigrationName for CreateSettings {
    fn name(&self) -> &str {
        "m20261204_000001_create_settings"
    }
}

#[sea_orm_migration::async_trait::async_trait]
impl MigrationTrait for CreateSettings {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let t = Types(manager.get_database_backend());
        manager
            .create_table(
                t.table(crate::db::settings::Settings::Table)
                    .col(
                        ColumnDef::new(crate::db::settings::Settings::Name)
                            .string_len(64)
                            .not_null()
                            .primary_key(),
                    )
                    .col(t.long_text(crate::db::settings::Settings::Value).not_null())
                    .to_owned(),
            )
            .await?;
        crate::db::settings::insert_fence_key(manager.get_connection()).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(
                Table::drop()
                    .table(crate::db::settings::Settings::Table)
                    .if_exists()
                    .to_owned(),
            )
            .await
    }
}

/// The HTML bodies converted again (§14): the converter now drops the text a reader does
/// not see (hidden elements, text coloured as its background, zero-width characters), and
/// every stored `html_text` is made by it. Down keeps the texts: they are what the
/// converter gives.
#[derive(Debug)]
struct ConvertHtmlAgain;

impl MigrationName for ConvertHtmlAgain {
    fn name(&self) -> &str {
        "m20261204_000002_convert_html_again"
    }
}

#[sea_orm_migration::async_trait::async_trait]
impl MigrationTrait for ConvertHtmlAgain {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use message::Column as M;
        let db = manager.get_connection();
        // Forget the texts of the earlier converter, then convert as `StoreHtmlText` does (a
        // MySQL/MariaDB run stopped half-way goes on with the rows left without text).
        let forget = Query::update()
            .table(message::Entity)
            .value(M::HtmlText, Option::<String>::None)
            .and_where(Expr::col(M::HtmlBody).is_not_null())
            .to_owned();
        db.execute(&forget).await?;
        convert_html_bodies(db).await
    }

    async fn down(&self, _manager: &SchemaManager) -> Result<(), DbErr> {
        Ok(())
    }
}
