//! Reads on PostgreSQL in one round trip and one prepared statement: the statements of a
//! read (the trigger message and its attachments; a history's messages, attachments and
//! tool uses) joined with `UNION ALL` into one `SELECT`.
//!
//! One statement sees one snapshot at any isolation level, so the parts of a read always
//! agree (an erasure never leaves a history's messages without their tool uses) without a
//! `BEGIN … COMMIT` around them. Its values are bound parameters, so the statement's text
//! depends only on the read's shape: the driver prepares it once per connection, and the
//! server parses and plans it once instead of on every read (parsing and planning the
//! statements of a simple query took half of PostgreSQL's CPU time per resolve). A prepared
//! statement passes PgBouncer in transaction pooling from version 1.21
//! (`max_prepared_statements`).
//!
//! Each part is a sub-select; a row of part `i` carries `k = i`, its place `o` in that
//! part's own order, its columns under the prefix `p{i}_`, and a `NULL` of each column's
//! type under the other parts' prefixes (PostgreSQL resolves a `UNION`'s column types pair
//! by pair, so an untyped `NULL` in two parts would be taken as text). The rows are handed
//! on ordered by `k, o`: each part complete and in its own order, the parts in the order
//! given.

use sea_orm::QueryResult;
use sea_orm::sea_query::backend::TableBuilder as _;
use sea_orm::sea_query::{
    Alias, Expr, Func, PostgresQueryBuilder, Query, SelectStatement, UnionType, WindowStatement,
};

use super::Part;
use super::decode::{Decode, Row};
use crate::db::read::rows::TableColumn;
use crate::error::Result;

/// The name and SQL type of each of `columns`, in that order: its entity's columns in
/// declaration order, from the first (a row of the part reads them by index).
pub(super) fn typed<C: TableColumn>(
    columns: impl IntoIterator<Item = C>,
) -> Vec<(&'static str, String)> {
    columns
        .into_iter()
        .enumerate()
        .map(|(at, c)| {
            debug_assert_eq!(
                c.position(),
                at,
                "a part selects its entity's columns in order"
            );
            let mut sql = String::new();
            PostgresQueryBuilder.prepare_column_type(c.def().get_column_type(), &mut sql);
            (c.as_str(), sql)
        })
        .collect()
}

/// A row of one part. A part's columns are its entity's in declaration order (all of them,
/// or the first ones), so a column sits at the part's first index plus its
/// [`TableColumn::position`]: read by index, no name is built or compared per row.
pub(crate) struct PartRow<'a> {
    row: &'a QueryResult,
    first: usize,
}

impl Row for PartRow<'_> {
    fn get<T: Decode>(&self, column: impl TableColumn) -> Result<T> {
        Ok(self.row.try_get_by_index(self.first + column.position())?)
    }
}

fn prefix(part: usize) -> String {
    format!("p{part}_")
}

/// The parts as one statement (see the module's documentation).
fn union(parts: &[Part<'_>]) -> Option<SelectStatement> {
    let (k, o, sub) = (Alias::new("k"), Alias::new("o"), Alias::new("part"));
    let mut selects = parts.iter().enumerate().map(|(i, part)| {
        let mut q = Query::select();
        q.expr_as(Expr::cust(i.to_string()), k.clone())
            // Numbers the rows in the order the sub-select gives them.
            .expr_window_as(Func::cust("ROW_NUMBER"), WindowStatement::new(), o.clone());
        for (j, other) in parts.iter().enumerate() {
            for (name, sql_type) in &other.columns {
                let alias = Alias::new(format!("{}{name}", prefix(j)));
                if i == j {
                    q.expr_as(Expr::col((sub.clone(), Alias::new(*name))), alias);
                } else {
                    q.expr_as(Expr::cust(format!("CAST(NULL AS {sql_type})")), alias);
                }
            }
        }
        q.from_subquery(part.statement.clone(), sub.clone());
        q
    });
    let mut all = selects.next()?;
    for q in selects {
        all.union(UnionType::All, q);
    }
    Some(all)
}

/// `parts` as one statement for PostgreSQL (see the module's documentation); `None` for no
/// parts.
pub(super) fn statement(parts: &[Part<'_>]) -> Option<sea_orm::Statement> {
    Some(sea_orm::StatementBuilder::build(
        &union(parts)?,
        &sea_orm::DbBackend::Postgres,
    ))
}

/// Hands each of `rows` (the answer to [`statement`]) to `on` with the index of its part,
/// the parts in the order given and each in its own order.
pub(super) fn visit(
    parts: &[Part<'_>],
    rows: &[QueryResult],
    mut on: impl FnMut(usize, &PartRow<'_>) -> Result<()>,
) -> Result<()> {
    // Put in order here rather than by the server, which would sort whole rows (bodies
    // included) for what is almost always the order they come in.
    let mut order = Vec::with_capacity(rows.len());
    for (at, row) in rows.iter().enumerate() {
        let part: i32 = row.try_get_by_index(0)?;
        let place: i64 = row.try_get_by_index(1)?;
        order.push((part, place, at));
    }
    order.sort_unstable();
    // After `k` and `o`, each part's columns in the order of the parts.
    let firsts: Vec<usize> = parts
        .iter()
        .scan(2, |first, part| {
            let this = *first;
            *first += part.columns.len();
            Some(this)
        })
        .collect();
    for (part, _, at) in order {
        let part = usize::try_from(part).unwrap_or(usize::MAX);
        let Some(&first) = firsts.get(part) else {
            continue;
        };
        on(
            part,
            &PartRow {
                row: &rows[at],
                first,
            },
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use sea_orm::sea_query::{Expr, ExprTrait, PostgresQueryBuilder, Query};

    use super::{typed, union};
    use crate::db::entities::{attachment, message};
    use crate::db::session::Part;

    #[test]
    fn the_parts_become_one_statement_with_typed_nulls_and_bound_values() {
        use attachment::Column as A;
        use message::Column as M;
        let mut a = Query::select();
        a.columns([M::Id, M::EmailThreadId, M::MessageId])
            .from(message::Entity)
            .and_where(Expr::col(M::MessageId).eq("<m@x>"));
        let mut b = Query::select();
        b.columns([A::Id, A::MessageId]).from(attachment::Entity);
        let parts = [
            Part {
                statement: &a,
                when_rows_in: None,
                columns: typed([M::Id, M::EmailThreadId, M::MessageId]),
            },
            Part {
                statement: &b,
                when_rows_in: None,
                columns: typed([A::Id, A::MessageId]),
            },
        ];
        let (sql, values) = union(&parts).unwrap().build(PostgresQueryBuilder);
        assert_eq!(
            sql,
            concat!(
                r#"SELECT 0 AS "k", ROW_NUMBER() OVER (  ) AS "o", "part"."id" AS "p0_id", "#,
                r#""part"."email_thread_id" AS "p0_email_thread_id", "#,
                r#""part"."message_id" AS "p0_message_id", CAST(NULL AS bigint) AS "p1_id", "#,
                r#"CAST(NULL AS bigint) AS "p1_message_id" FROM (SELECT "id", "email_thread_id", "#,
                r#""message_id" FROM "messages" WHERE "message_id" = $1) AS "part" UNION ALL "#,
                r#"(SELECT 1 AS "k", ROW_NUMBER() OVER (  ) AS "o", CAST(NULL AS bigint) AS "p0_id", "#,
                r#"CAST(NULL AS bigint) AS "p0_email_thread_id", "#,
                r#"CAST(NULL AS varchar) AS "p0_message_id", "part"."id" AS "p1_id", "#,
                r#""part"."message_id" AS "p1_message_id" FROM (SELECT "id", "message_id" "#,
                r#"FROM "attachments") AS "part")"#
            )
        );
        assert_eq!(values.0.len(), 1);
    }

    /// A part's columns are read by their place: a list that is not its entity's columns
    /// from the first, in order, is refused (in a debug build).
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "a part selects its entity's columns in order")]
    fn a_part_with_columns_out_of_place_is_refused() {
        typed([message::Column::Id, message::Column::SentAt]);
    }
}
