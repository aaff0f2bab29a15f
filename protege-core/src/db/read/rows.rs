//! Rows of protege's tables decoded by column name, whichever driver reads them.
//!
//! Each table read here has one decoder ([`message`], [`attachment`], [`tool_use`],
//! [`summary_content`]) that asks a [`Row`] for columns of the table's SeaORM entity:
//! `row.get(message::Column::Subject)`. The session's drivers provide rows
//! ([`crate::db::session::decode`]), and each finds the column its own way:
//!
//! - SeaORM's `QueryResult` (PostgreSQL, MySQL/MariaDB, in-memory SQLite) looks the
//!   column up by its name, `subject`, as SeaORM decodes its own models.
//! - A rusqlite row (the embedded SQLite file) reads the index the
//!   select list gives the column. Every select list of these tables is built by
//!   [`columns`] from the entity's columns in declaration order, so a column's index is its
//!   place in the entity ([`TableColumn::position`]), known at compile time: no name is
//!   compared per row, and the embedded reads stay as fast as a read written by hand
//!   (`benches/thread_history.rs`). Debug builds check the name at that index.
//!
//! SeaORM's own decoding (`FromQueryResult` on the entities' models, or partial models)
//! would serve the first driver only: the embedded rows are not SeaORM rows, so each table
//! would need a second, positional decoder for them, and the two could drift apart. One
//! decoder per table over both drivers keeps one definition of how a row becomes a value.

use sea_orm::{ColumnTrait, EntityTrait, IdenStatic, Iterable};

use crate::db::entities::{
    attachment, email_thread, message, message_address, message_strip, outbox, run, run_round,
    thread_summary, tool_use,
};
pub(crate) use crate::db::session::Row;
use crate::error::{Error, ErrorKind, Result};
use crate::mail::{Attachment, Direction, Email, MailMessage};
use protege_mail::ReplyHeaders;

/// A column of a table decoded here.
pub(crate) trait TableColumn: ColumnTrait + Copy {
    /// The column's place among its entity's columns (declaration order), which is its
    /// index in a select list built by [`columns`].
    fn position(self) -> usize;
}

macro_rules! table_columns {
    ($($table:ident),*) => {$(
        impl TableColumn for $table::Column {
            fn position(self) -> usize {
                // The variants are declared in the model's field order, without values.
                self as usize
            }
        }
    )*};
}

table_columns!(
    email_thread,
    message,
    attachment,
    tool_use,
    thread_summary,
    run,
    run_round,
    message_strip,
    message_address,
    outbox
);

/// Every column of `entity`'s table, qualified by the table, in declaration order: the
/// select list in which each column sits at its [`TableColumn::position`].
pub(crate) fn columns<E>(entity: E) -> impl Iterator<Item = (E, E::Column)>
where
    E: EntityTrait,
    E::Column: TableColumn,
{
    E::Column::iter().map(move |c| (entity, c))
}

/// Adds `column` of `table` (a `messages` table or alias) to `select` as the history reads
/// it: the HTML itself (up to the size of a whole mail) only for a row stored without its
/// readable text, which is what is rendered; the reply headers never (`NULL` of the
/// column's type: a history renders no header a reply needs).
pub(crate) fn history_column<T: sea_orm::sea_query::IntoIden + Copy + 'static>(
    select: &mut sea_orm::sea_query::SelectStatement,
    table: T,
    column: message::Column,
) {
    use message::Column as M;
    use sea_orm::sea_query::{Expr, ExprTrait};
    match column {
        M::HtmlBody => {
            select.expr_as(
                Expr::case(
                    Expr::col((table, M::HtmlText)).is_null(),
                    Expr::col((table, M::HtmlBody)),
                ),
                M::HtmlBody,
            );
        }
        M::ReplyHeaders => {
            select.expr_as(
                Expr::case(
                    Expr::col((table, M::Id)).is_null(),
                    Expr::col((table, M::ReplyHeaders)),
                ),
                M::ReplyHeaders,
            );
        }
        _ => {
            select.column((table, column));
        }
    }
}

/// The states of an outbox row whose reply the customer never received: a history never
/// shows it as sent (§18).
pub(crate) const UNSENT_STATES: [&str; 3] = ["waiting", "failed", "rejected"];

/// The condition that the `messages` row of `table` (a table or alias) is not a reply that
/// waits, failed or was rejected: mail without an outbox row (received, imported,
/// recorded) and replies `queued`, `sending` or `sent` are history.
pub(crate) fn not_unsent_reply<T: sea_orm::sea_query::IntoIden + 'static>(
    table: T,
) -> sea_orm::sea_query::SimpleExpr {
    use crate::db::entities::outbox;
    use sea_orm::sea_query::{Expr, ExprTrait, Query};
    let mut unsent = Query::select();
    unsent
        .expr(Expr::val(1))
        .from(outbox::Entity)
        .and_where(
            Expr::col((outbox::Entity, outbox::Column::MessageId))
                .equals((table, message::Column::Id)),
        )
        .and_where(Expr::col((outbox::Entity, outbox::Column::State)).is_in(UNSENT_STATES));
    Expr::exists(unsent).not()
}

/// A `messages` row, without its attachments.
pub(crate) fn message(row: &impl Row) -> Result<MailMessage> {
    use message::Column as M;
    let message_id: String = row.get(M::MessageId)?;
    let direction: String = row.get(M::Direction)?;
    let direction =
        Direction::parse(&direction).ok_or_else(|| bad_direction(&direction, &message_id))?;
    let to: String = row.get(M::ToAddresses)?;
    let cc: String = row.get(M::CcAddresses)?;
    Ok(MailMessage {
        id: row.get(M::Id)?,
        thread_id: row.get(M::EmailThreadId)?,
        email: Email {
            direction,
            from: row.get(M::FromAddress)?,
            to: address_list(&to, M::ToAddresses, &message_id)?,
            cc: address_list(&cc, M::CcAddresses, &message_id)?,
            subject: row.get(M::Subject)?,
            sent_at: row.get(M::SentAt)?,
            text_body: row.get(M::TextBody)?,
            html_body: row.get(M::HtmlBody)?,
            html_text: row.get(M::HtmlText)?,
            in_reply_to: row.get(M::InReplyTo)?,
            reply_headers: ReplyHeaders::from_stored(
                row.get::<Option<String>>(M::ReplyHeaders)?.as_deref(),
            ),
            message_id,
            attachments: Vec::new(),
        },
    })
}

/// Parses a stored JSON array of addresses.
fn address_list(text: &str, column: message::Column, message_id: &str) -> Result<Vec<String>> {
    serde_json::from_str(text).map_err(|_| {
        Error::new(
            ErrorKind::Database,
            format!(
                "column `{}` of message `{message_id}` is not a JSON array of strings",
                column.as_str()
            ),
        )
    })
}

fn bad_direction(direction: &str, message_id: &str) -> Error {
    Error::new(
        ErrorKind::Database,
        format!(
            "message `{message_id}` has direction `{direction}`; expected `inbound` or `outbound`"
        ),
    )
}

/// The message id and the attachment of an `attachments` row; `with_data` says whether
/// the data column was selected.
pub(crate) fn attachment(row: &impl Row, with_data: bool) -> Result<(i64, Attachment)> {
    use attachment::Column as A;
    Ok((
        row.get(A::MessageId)?,
        Attachment {
            attachment_id: row.get(A::AttachmentId)?,
            filename: row.get(A::Filename)?,
            content_type: row.get(A::ContentType)?,
            byte_size: row.get(A::ByteSize)?,
            data: if with_data { row.get(A::Data)? } else { None },
        },
    ))
}

/// A stored tool use, as replayed.
#[derive(Debug, Clone)]
pub(crate) struct StoredToolUse {
    pub(crate) id: i64,
    pub(crate) run_id: String,
    pub(crate) turn_index: i32,
    pub(crate) position: i32,
    pub(crate) tool_call_id: String,
    pub(crate) name: String,
    pub(crate) input: String,
    pub(crate) result: Option<String>,
    pub(crate) is_error: bool,
}

/// The message id and the tool use of a `tool_uses` row.
pub(crate) fn tool_use(row: &impl Row) -> Result<(i64, StoredToolUse)> {
    use tool_use::Column as U;
    Ok((
        row.get(U::MessageId)?,
        StoredToolUse {
            id: row.get(U::Id)?,
            run_id: row.get(U::RunId)?,
            turn_index: row.get(U::TurnIndex)?,
            position: row.get(U::Position)?,
            tool_call_id: row.get(U::ToolCallId)?,
            name: row.get(U::Name)?,
            input: row.get(U::Input)?,
            result: row.get(U::Result)?,
            is_error: row.get(U::IsError)?,
        },
    ))
}

/// A `runs` row.
pub(crate) fn run(row: &impl Row) -> Result<run::Model> {
    use run::Column as R;
    Ok(run::Model {
        id: row.get(R::Id)?,
        persona: row.get(R::Persona)?,
        message_id: row.get(R::MessageId)?,
        responsibility: row.get(R::Responsibility)?,
        format: row.get(R::Format)?,
        model: row.get(R::Model)?,
        status: row.get(R::Status)?,
        rounds: row.get(R::Rounds)?,
        input_tokens: row.get(R::InputTokens)?,
        output_tokens: row.get(R::OutputTokens)?,
        cache_read_tokens: row.get(R::CacheReadTokens)?,
        cache_write_tokens: row.get(R::CacheWriteTokens)?,
        request_sha256: row.get(R::RequestSha256)?,
        request: row.get(R::Request)?,
        started_at: row.get(R::StartedAt)?,
        finished_at: row.get(R::FinishedAt)?,
    })
}

/// An `outbox` row.
pub(crate) fn outbox(row: &impl Row) -> Result<outbox::Model> {
    use outbox::Column as O;
    Ok(outbox::Model {
        id: row.get(O::Id)?,
        message_id: row.get(O::MessageId)?,
        run_id: row.get(O::RunId)?,
        persona: row.get(O::Persona)?,
        state: row.get(O::State)?,
        reason: row.get(O::Reason)?,
        held_reason: row.get(O::HeldReason)?,
        envelope_from: row.get(O::EnvelopeFrom)?,
        recipients: row.get(O::Recipients)?,
        refused_recipients: row.get(O::RefusedRecipients)?,
        attempts: row.get(O::Attempts)?,
        next_attempt_at: row.get(O::NextAttemptAt)?,
        lease_owner: row.get(O::LeaseOwner)?,
        lease_until: row.get(O::LeaseUntil)?,
        smtp_reply: row.get(O::SmtpReply)?,
        approved_by: row.get(O::ApprovedBy)?,
        approved_at: row.get(O::ApprovedAt)?,
        queued_at: row.get(O::QueuedAt)?,
        sent_at: row.get(O::SentAt)?,
        raw: row.get(O::Raw)?,
        created_at: row.get(O::CreatedAt)?,
        updated_at: row.get(O::UpdatedAt)?,
    })
}

/// A `run_rounds` row.
pub(crate) fn run_round(row: &impl Row) -> Result<run_round::Model> {
    use run_round::Column as R;
    Ok(run_round::Model {
        id: row.get(R::Id)?,
        run_id: row.get(R::RunId)?,
        round: row.get(R::Round)?,
        response: row.get(R::Response)?,
        results: row.get(R::Results)?,
        stop_reason: row.get(R::StopReason)?,
        input_tokens: row.get(R::InputTokens)?,
        output_tokens: row.get(R::OutputTokens)?,
        cache_read_tokens: row.get(R::CacheReadTokens)?,
        cache_write_tokens: row.get(R::CacheWriteTokens)?,
        created_at: row.get(R::CreatedAt)?,
    })
}

/// The content of a `thread_summaries` row.
pub(crate) fn summary_content(row: &impl Row) -> Result<String> {
    row.get(thread_summary::Column::Content)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_follow_the_declaration_order() {
        fn check<C: TableColumn>() {
            for (i, c) in C::iter().enumerate() {
                assert_eq!(c.position(), i, "{}", c.as_str());
            }
        }
        check::<message::Column>();
        check::<attachment::Column>();
        check::<tool_use::Column>();
        check::<thread_summary::Column>();
        check::<run::Column>();
        check::<run_round::Column>();
        assert_eq!(message::Column::SentAt.position(), 11);
    }
}
