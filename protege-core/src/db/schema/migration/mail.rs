//! The mail store: the four tables of §6, the index on `in_reply_to` and the addresses
//! of every message (`message_addresses`).

use sea_orm::sea_query::*;
use sea_orm::{ConnectionTrait, DbBackend, DbErr};

use super::{Migration, SchemaManager, Types};
use crate::db::entities::{attachment, email_thread, message, message_address, tool_use};
use crate::mail::Direction;

/// The first migration: the four tables and their indexes.
#[derive(Debug)]
pub(super) struct CreateTables;

#[async_trait::async_trait]
impl Migration for CreateTables {
    fn name(&self) -> &'static str {
        "m20260101_000001_create_tables"
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let t = Types(manager.backend());
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

/// The third migration: an index on `messages.in_reply_to`, so that finding the stored
/// replies to a message being imported costs a lookup, not a scan of every message.
///
/// A hash index on PostgreSQL (a B-tree entry holds at most about 2.7 KB and an
/// In-Reply-To may be longer), a 255-character prefix on MySQL/MariaDB (a `LONGTEXT`
/// column is indexed by a prefix), a plain index on SQLite.
#[derive(Debug)]
pub(super) struct IndexInReplyTo;

/// The name of the index on `messages.in_reply_to`.
const IN_REPLY_TO_INDEX: &str = "idx_messages_in_reply_to";

#[async_trait::async_trait]
impl Migration for IndexInReplyTo {
    fn name(&self) -> &'static str {
        "m20261201_000001_index_messages_in_reply_to"
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let mut index = Index::create();
        index
            .name(IN_REPLY_TO_INDEX)
            .table(message::Entity)
            .if_not_exists();
        match manager.backend() {
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

/// The migration of `message_addresses` (§14): one row per distinct From, To and Cc address
/// of each message, with its thread, and the index by address and thread through which
/// `CorrespondentHistory` finds a correspondent's threads with a persona. The rows of the
/// messages stored before it are written here, [`BACKFILL_PAGE`] messages at a time, so a
/// database of any size migrates in bounded memory. Down drops the table.
#[derive(Debug)]
pub(super) struct CreateMessageAddresses;

/// The name of the index by address and thread.
const ADDRESS_INDEX: &str = "idx_message_addresses_address_thread";

/// The name of the index by message.
const ADDRESS_MESSAGE_INDEX: &str = "idx_message_addresses_message";

/// How many messages one page of the backfill reads.
const BACKFILL_PAGE: u64 = 500;

#[async_trait::async_trait]
impl Migration for CreateMessageAddresses {
    fn name(&self) -> &'static str {
        "m20261205_000001_create_message_addresses"
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use message_address::Column as A;
        let t = Types(manager.backend());
        manager
            .create_table(
                t.table(message_address::Entity)
                    .col(t.pk(A::Id))
                    .col(ColumnDef::new(A::MessageId).big_integer().not_null())
                    .col(ColumnDef::new(A::EmailThreadId).big_integer().not_null())
                    .col(
                        ColumnDef::new(A::Address)
                            .string_len(message_address::MAX_ADDRESS_CHARS as u32)
                            .not_null(),
                    )
                    .col(ColumnDef::new(A::Participant).boolean().not_null())
                    .foreign_key(
                        ForeignKey::create()
                            .from(message_address::Entity, A::MessageId)
                            .to(message::Entity, message::Column::Id),
                    )
                    .to_owned(),
            )
            .await?;
        for (name, columns) in [
            (ADDRESS_INDEX, &[A::Address, A::EmailThreadId][..]),
            (ADDRESS_MESSAGE_INDEX, &[A::MessageId][..]),
        ] {
            let mut index = Index::create();
            index
                .name(name)
                .table(message_address::Entity)
                .if_not_exists();
            for column in columns {
                index.col(*column);
            }
            manager.create_index(index.to_owned()).await?;
        }
        backfill_addresses(manager.connection()).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(
                Table::drop()
                    .table(message_address::Entity)
                    .if_exists()
                    .to_owned(),
            )
            .await
    }
}

/// Writes the address rows of every stored message, in pages by id.
async fn backfill_addresses<C: ConnectionTrait>(db: &C) -> Result<(), DbErr> {
    use message::Column as M;
    let mut after = 0_i64;
    loop {
        let page = Query::select()
            .columns([
                M::Id,
                M::EmailThreadId,
                M::Direction,
                M::FromAddress,
                M::ToAddresses,
                M::CcAddresses,
            ])
            .from(message::Entity)
            .and_where(Expr::col(M::Id).gt(after))
            .order_by(M::Id, Order::Asc)
            .limit(BACKFILL_PAGE)
            .to_owned();
        let rows = db.query_all(&page).await?;
        let Some(last) = rows.last() else {
            return Ok(());
        };
        after = last.try_get("", "id")?;
        let mut values: Vec<[Expr; 4]> = Vec::new();
        for row in &rows {
            let id: i64 = row.try_get("", "id")?;
            let thread: i64 = row.try_get("", "email_thread_id")?;
            let direction: String = row.try_get("", "direction")?;
            let from: String = row.try_get("", "from_address")?;
            let list = |column: &str| -> Result<Vec<String>, DbErr> {
                let text: String = row.try_get("", column)?;
                Ok(serde_json::from_str(&text).unwrap_or_default())
            };
            let (to, cc) = (list("to_addresses")?, list("cc_addresses")?);
            let direction = Direction::parse(&direction).unwrap_or(Direction::Inbound);
            for (address, participant) in message_address::keys(direction, &from, &to, &cc) {
                values.push([id.into(), thread.into(), address.into(), participant.into()]);
            }
        }
        // Bounded statements: every backend's parameter limit is far above 4 x 1000.
        for chunk in values.chunks(1000) {
            let mut insert = Query::insert();
            insert.into_table(message_address::Entity).columns([
                message_address::Column::MessageId,
                message_address::Column::EmailThreadId,
                message_address::Column::Address,
                message_address::Column::Participant,
            ]);
            for row in chunk {
                insert.values_panic(row.clone());
            }
            db.execute(&insert).await?;
        }
    }
}
