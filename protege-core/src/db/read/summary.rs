//! The reads of running summaries, behind `ThreadSummary` and `ThreadHistory`'s
//! `after_summary` (storing one is `store::summary`).
//!
//! The summary that applies to a reply run is the newest one of the current thread (by
//! `created_at`, ties by `id`) whose through-message is prior to the current message
//! (same thread, sent at or before it, not itself).

use sea_orm::ConnectionTrait;
use sea_orm::sea_query::{
    Alias, Cond, Expr, ExprTrait, JoinType, Order, Query, SelectStatement, SubQueryStatement,
};

use super::rows::{self, Row as _};
use crate::db::entities::{message, thread_summary};
use crate::error::Result;
use crate::mail::MailMessage;

fn through_alias() -> Alias {
    Alias::new("through")
}

/// `FROM thread_summaries JOIN messages AS through ON through.id =
/// thread_summaries.through_message_id`, to which the callers add their selection.
fn summaries_with_through(q: &mut SelectStatement, t: &Alias) {
    q.from(thread_summary::Entity).join_as(
        JoinType::InnerJoin,
        message::Entity,
        t.clone(),
        Expr::col((t.clone(), message::Column::Id)).equals((
            thread_summary::Entity,
            thread_summary::Column::ThroughMessageId,
        )),
    );
}

/// `SELECT thread_summaries.id` of the summary that applies to `current` (at most one row).
fn applicable(current: &MailMessage) -> SelectStatement {
    use thread_summary::Column as S;
    let t = through_alias();
    let mut q = Query::select();
    q.column((thread_summary::Entity, S::Id));
    summaries_with_through(&mut q, &t);
    q.and_where(Expr::col((thread_summary::Entity, S::EmailThreadId)).eq(current.thread_id))
        .and_where(Expr::col((t.clone(), message::Column::SentAt)).lte(current.sent_at))
        .and_where(Expr::col((t, message::Column::Id)).ne(current.id))
        .order_by((thread_summary::Entity, S::CreatedAt), Order::Desc)
        .order_by((thread_summary::Entity, S::Id), Order::Desc)
        .limit(1);
    q
}

/// The row id and content of the summary that applies to `current`, if any (one
/// statement).
pub(crate) async fn latest<C: ConnectionTrait>(
    db: &C,
    current: &MailMessage,
) -> Result<Option<(i64, String)>> {
    let mut q = applicable(current);
    q.clear_selects()
        .column((thread_summary::Entity, thread_summary::Column::Id))
        .column((thread_summary::Entity, thread_summary::Column::Content));
    db.query_one_raw(crate::db::dates::statement(db, &q))
        .await?
        .map(|row| {
            Ok((
                row.get(thread_summary::Column::Id)?,
                rows::summary_content(&row)?,
            ))
        })
        .transpose()
}

/// The condition, on a `messages` row, "sent after the through-message of the summary that
/// applies to `current`" (always true when none applies): no applicable summary's
/// through-message comes at or after the row in (`sent_at`, `id`) order.
pub(crate) fn after_applicable(current: &MailMessage) -> Cond {
    use thread_summary::Column as S;
    let t = through_alias();
    let mut later = Query::select();
    later.expr(Expr::val(1));
    summaries_with_through(&mut later, &t);
    later
        .and_where(
            Expr::col((thread_summary::Entity, S::Id))
                .eq(Expr::from(SubQueryStatement::from(applicable(current)))),
        )
        .cond_where(
            Cond::any()
                .add(
                    Expr::col((t.clone(), message::Column::SentAt))
                        .gt(Expr::col((message::Entity, message::Column::SentAt))),
                )
                .add(
                    Cond::all()
                        .add(
                            Expr::col((t.clone(), message::Column::SentAt))
                                .eq(Expr::col((message::Entity, message::Column::SentAt))),
                        )
                        .add(
                            Expr::col((t, message::Column::Id))
                                .gte(Expr::col((message::Entity, message::Column::Id))),
                        ),
                ),
        );
    Cond::all().add(Expr::not_exists(later))
}
