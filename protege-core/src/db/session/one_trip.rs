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

use std::any::TypeId;
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use sea_orm::QueryResult;
use sea_orm::sea_query::backend::TableBuilder as _;
use sea_orm::sea_query::{PostgresQueryBuilder, QueryBuilder as _, SqlWriterValues};

use super::Part;
use super::decode::{Decode, Row};
use crate::db::read::rows::TableColumn;
use crate::error::Result;

/// A part's shape: its entity's column type and how many of its columns, from the first.
type Shape = (TypeId, usize);

/// The select lists of the parts of a read, by the sequence of its parts' shapes.
type SelectLists = HashMap<Vec<Option<Shape>>, Arc<[String]>>;

/// The columns of a part: its shape (its entity's column type and how many of its columns,
/// from the first) and the name and SQL type of each, in that order.
#[derive(Clone, Debug, Default)]
pub(super) struct Columns {
    shape: Option<Shape>,
    list: Arc<[(&'static str, String)]>,
}

impl Columns {
    /// How many columns.
    pub(super) fn len(&self) -> usize {
        self.list.len()
    }
}

thread_local! {
    /// The columns of each shape met on this thread: a read's parts have a handful of
    /// shapes, and their SQL types need not be rendered at every read.
    static COLUMNS: RefCell<HashMap<Shape, Columns>> = RefCell::default();
    /// The select list of each part of each sequence of shapes met on this thread (see
    /// [`statement`]).
    static SELECTS: RefCell<SelectLists> = RefCell::default();
}

/// The name and SQL type of each of `columns`, in that order: its entity's columns in
/// declaration order, from the first (a row of the part reads them by index). Rendered once
/// per shape and thread.
pub(super) fn typed<C: TableColumn + 'static>(columns: impl IntoIterator<Item = C>) -> Columns {
    let columns: Vec<C> = columns.into_iter().collect();
    for (at, c) in columns.iter().enumerate() {
        debug_assert_eq!(
            c.position(),
            at,
            "a part selects its entity's columns in order"
        );
    }
    let shape = (TypeId::of::<C>(), columns.len());
    COLUMNS.with_borrow_mut(|known| {
        known
            .entry(shape)
            .or_insert_with(|| Columns {
                shape: Some(shape),
                list: columns
                    .iter()
                    .map(|c| {
                        let mut sql = String::new();
                        PostgresQueryBuilder
                            .prepare_column_type(c.def().get_column_type(), &mut sql);
                        (c.as_str(), sql)
                    })
                    .collect(),
            })
            .clone()
    })
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

/// Part `i`'s select list: `i AS "k"`, its row number as `"o"`, then every part's columns
/// under the prefix `p{j}_`, its own from the sub-select and a typed `NULL` for the others'.
fn select_list(i: usize, parts: &[Part<'_>]) -> String {
    let mut list = format!(r#"{i} AS "k", ROW_NUMBER() OVER () AS "o""#);
    for (j, other) in parts.iter().enumerate() {
        for (name, sql_type) in other.columns.list.iter() {
            if i == j {
                let _ = write!(list, r#", "part"."{name}" AS "p{j}_{name}""#);
            } else {
                let _ = write!(list, r#", CAST(NULL AS {sql_type}) AS "p{j}_{name}""#);
            }
        }
    }
    list
}

/// `parts` as one statement for PostgreSQL (see the module's documentation); `None` for no
/// parts.
///
/// The select lists depend only on the parts' shapes: built once per sequence of shapes and
/// thread. Around them, each part's own statement is rendered in place, its values numbered
/// on from the last part's, as sea-query renders a union of sub-selects; nothing is cloned
/// into a statement of its own to be rendered and dropped again.
pub(super) fn statement(parts: &[Part<'_>]) -> Option<sea_orm::Statement> {
    if parts.is_empty() {
        return None;
    }
    let shapes: Vec<_> = parts.iter().map(|p| p.columns.shape).collect();
    let lists = SELECTS.with_borrow_mut(|known| {
        Arc::clone(
            known
                .entry(shapes)
                .or_insert_with(|| (0..parts.len()).map(|i| select_list(i, parts)).collect()),
        )
    });
    let (placeholder, numbered) = PostgresQueryBuilder.placeholder();
    let mut sql = SqlWriterValues::new(placeholder, numbered);
    for (i, (part, list)) in parts.iter().zip(lists.iter()).enumerate() {
        let (open, close) = if i == 0 {
            ("", "")
        } else {
            (" UNION ALL (", ")")
        };
        // Writing to a `String` cannot fail.
        let _ = write!(sql, "{open}SELECT {list} FROM (");
        PostgresQueryBuilder.prepare_select_statement(part.statement, &mut sql);
        let _ = write!(sql, r#") AS "part"{close}"#);
    }
    let (sql, values) = sql.into_parts();
    Some(sea_orm::Statement::from_sql_and_values(
        sea_orm::DbBackend::Postgres,
        sql,
        values,
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
    use sea_orm::sea_query::{Expr, ExprTrait, Query};

    use super::{statement, typed};
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
        b.columns([A::Id, A::MessageId])
            .from(attachment::Entity)
            .and_where(Expr::col(A::MessageId).eq(7));
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
        let statement = statement(&parts).unwrap();
        assert_eq!(
            statement.sql,
            concat!(
                r#"SELECT 0 AS "k", ROW_NUMBER() OVER () AS "o", "part"."id" AS "p0_id", "#,
                r#""part"."email_thread_id" AS "p0_email_thread_id", "#,
                r#""part"."message_id" AS "p0_message_id", CAST(NULL AS bigint) AS "p1_id", "#,
                r#"CAST(NULL AS bigint) AS "p1_message_id" FROM (SELECT "id", "email_thread_id", "#,
                r#""message_id" FROM "messages" WHERE "message_id" = $1) AS "part" UNION ALL "#,
                r#"(SELECT 1 AS "k", ROW_NUMBER() OVER () AS "o", CAST(NULL AS bigint) AS "p0_id", "#,
                r#"CAST(NULL AS bigint) AS "p0_email_thread_id", "#,
                r#"CAST(NULL AS varchar) AS "p0_message_id", "part"."id" AS "p1_id", "#,
                r#""part"."message_id" AS "p1_message_id" FROM (SELECT "id", "message_id" "#,
                r#"FROM "attachments" WHERE "message_id" = $2) AS "part")"#
            )
        );
        assert_eq!(
            statement.values.unwrap().0,
            ["<m@x>".into(), 7.into()],
            "the values in the order of their numbers"
        );
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
