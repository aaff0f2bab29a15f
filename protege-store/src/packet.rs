//! The largest statement a server takes: MySQL/MariaDB's `max_allowed_packet` (16 MiB by
//! default on MariaDB, 64 MiB on MySQL 8), under the 25 MiB attachment cap.
//!
//! A statement over it is refused and the server closes the connection, which would fail
//! every message of the transaction. So the limit is read from the server once per
//! database a process connects to ([`max_row_bytes`]) and an import keeps each row under
//! it: an attachment over it keeps its metadata only (`data` NULL, with a warning), and a
//! message whose own text is over it cannot be stored (an error of the input, never a
//! database error). PostgreSQL and SQLite take rows far larger than the import's caps.

use sea_orm::DatabaseConnection;

use protege_core::Result;
use protege_mail::Email;

/// Room left in a statement for its SQL text and the encoding of its parameters.
const OVERHEAD: u64 = 64 << 10;

/// The server's `max_allowed_packet`, in bytes, on MySQL/MariaDB; `None` on PostgreSQL and
/// SQLite (see [`protege_core::db::session::max_allowed_packet`]).
pub(crate) async fn max_row_bytes(db: &DatabaseConnection) -> Result<Option<u64>> {
    protege_core::db::session::max_allowed_packet(db).await
}

/// The most bytes of data an attachment row may carry under the server limit `packet`.
pub(crate) fn attachment_bytes(packet: u64) -> u64 {
    packet.saturating_sub(OVERHEAD)
}

/// The bytes of text a message row of `email` carries (its attachments apart).
pub(crate) fn message_bytes(email: &Email) -> u64 {
    let text = |t: &Option<String>| t.as_ref().map_or(0, String::len);
    let bytes = email.message_id.len()
        + email.from.len()
        + email
            .to
            .iter()
            .chain(&email.cc)
            .map(|a| a.len() + 3)
            .sum::<usize>()
        + email.subject.len()
        + text(&email.text_body)
        + text(&email.html_body)
        + text(&email.in_reply_to);
    bytes as u64
}

/// Whether a message row of `email` fits under the server limit `packet`.
pub(crate) fn message_fits(email: &Email, packet: u64) -> bool {
    message_bytes(email) <= attachment_bytes(packet)
}
