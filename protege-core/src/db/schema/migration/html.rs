//! The readable text of HTML bodies, stored once (`messages.html_text`).

use sea_orm::ConnectionTrait;
use sea_orm::DbErr;
use sea_orm::sea_query::*;

use super::{Migration, SchemaManager, Types};
use crate::db::entities::message;

/// The migration that stores the readable text of HTML bodies: the column
/// `messages.html_text`, filled for the rows stored before it, so that a read never
/// converts HTML again (a message's HTML is converted once, when it is stored).
///
/// Each HTML body is converted with the same converter the reads used, so the rendering of
/// every stored message stays byte for byte the same. Rows are read a few at a time (at
/// most [`CONVERT_BYTES`] of HTML, or one larger row), so a database of any size migrates
/// in bounded memory. Down drops the column; reads then convert again.
#[derive(Debug)]
pub(super) struct StoreHtmlText;

/// How many rows one page of the conversion lists.
const CONVERT_PAGE: u64 = 256;

/// The most bytes of HTML loaded at once by the conversion (a larger body alone).
const CONVERT_BYTES: i64 = 8 << 20;

#[async_trait::async_trait]
impl Migration for StoreHtmlText {
    fn name(&self) -> &'static str {
        "m20261202_000002_store_html_text"
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use message::Column as M;
        let t = Types(manager.backend());
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
        convert_html_bodies(manager.connection()).await
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

/// Forgets the texts of the earlier converter, then converts as `StoreHtmlText` does (a
/// MySQL/MariaDB run stopped half-way goes on with the rows left without text).
pub(super) async fn convert_again<C: ConnectionTrait>(db: &C) -> Result<(), DbErr> {
    use message::Column as M;
    let forget = Query::update()
        .table(message::Entity)
        .value(M::HtmlText, Option::<String>::None)
        .and_where(Expr::col(M::HtmlBody).is_not_null())
        .to_owned();
    db.execute(&forget).await?;
    convert_html_bodies(db).await
}

/// The HTML bodies converted again (§14): the converter now drops the text a reader does
/// not see (hidden elements, text coloured as its background, zero-width characters), and
/// every stored `html_text` is made by it. Down keeps the texts: they are what the
/// converter gives.
#[derive(Debug)]
pub(super) struct ConvertHtmlAgain;

#[async_trait::async_trait]
impl Migration for ConvertHtmlAgain {
    fn name(&self) -> &'static str {
        "m20261204_000002_convert_html_again"
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        convert_again(manager.connection()).await
    }

    async fn down(&self, _manager: &SchemaManager) -> Result<(), DbErr> {
        Ok(())
    }
}
