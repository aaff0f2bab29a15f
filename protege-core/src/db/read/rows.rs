//! How the rows of the tables become the engine's values, whichever driver reads them:
//! the column lists of the reads and one decoder per table, over the [`Row`] accessors
//! that SeaORM's rows and the SQLite C library's rows both provide.

use chrono::{DateTime, FixedOffset, NaiveDateTime, Offset, TimeZone, Utc};
use rusqlite::types::ValueRef;
use sea_orm::QueryResult;

use crate::db::entities::{attachment, message};
use crate::error::{Error, ErrorKind, Result};
use crate::mail::{Attachment, Direction, Email, MailMessage};

/// One result row, whichever driver produced it: columns are read by their position in
/// the statement's column list, which the caller takes from the same list it selected.
pub(crate) trait Row {
    /// An integer column.
    fn int(&self, i: usize) -> Result<i64>;
    /// A 32-bit integer column.
    fn int32(&self, i: usize) -> Result<i32>;
    /// A text column.
    fn text(&self, i: usize) -> Result<String>;
    /// A nullable text column.
    fn opt_text(&self, i: usize) -> Result<Option<String>>;
    /// A timestamp column.
    fn time(&self, i: usize) -> Result<DateTime<Utc>>;
    /// A nullable binary column.
    fn opt_bytes(&self, i: usize) -> Result<Option<Vec<u8>>>;
}

impl Row for QueryResult {
    fn int(&self, i: usize) -> Result<i64> {
        Ok(self.try_get_by_index(i)?)
    }
    fn int32(&self, i: usize) -> Result<i32> {
        Ok(self.try_get_by_index(i)?)
    }
    fn text(&self, i: usize) -> Result<String> {
        Ok(self.try_get_by_index(i)?)
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>> {
        Ok(self.try_get_by_index(i)?)
    }
    fn time(&self, i: usize) -> Result<DateTime<Utc>> {
        Ok(self.try_get_by_index(i)?)
    }
    fn opt_bytes(&self, i: usize) -> Result<Option<Vec<u8>>> {
        Ok(self.try_get_by_index(i)?)
    }
}

impl Row for rusqlite::Row<'_> {
    fn opt_bytes(&self, i: usize) -> Result<Option<Vec<u8>>> {
        Ok(self.get(i)?)
    }
    fn int(&self, i: usize) -> Result<i64> {
        Ok(self.get(i)?)
    }
    fn int32(&self, i: usize) -> Result<i32> {
        Ok(self.get(i)?)
    }
    fn text(&self, i: usize) -> Result<String> {
        Ok(self.get(i)?)
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>> {
        Ok(self.get(i)?)
    }
    fn time(&self, i: usize) -> Result<DateTime<Utc>> {
        let value = self.get_ref(i)?;
        let parsed = match value {
            ValueRef::Text(bytes) => std::str::from_utf8(bytes).ok().and_then(time_from_text),
            ValueRef::Integer(n) => Utc.fix().timestamp_opt(n, 0).single(),
            ValueRef::Real(days) => time_from_julian_day(days),
            ValueRef::Null | ValueRef::Blob(_) => None,
        };
        parsed.map(|t| t.with_timezone(&Utc)).ok_or_else(|| {
            Error::new(
                ErrorKind::Database,
                format!(
                    "database error: column {i} holds `{}`, which is not a date and time",
                    shown(value)
                ),
            )
        })
    }
}

fn shown(value: ValueRef<'_>) -> String {
    match value {
        ValueRef::Null => "NULL".to_owned(),
        ValueRef::Integer(n) => n.to_string(),
        ValueRef::Real(x) => x.to_string(),
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
        ValueRef::Blob(b) => format!("{} bytes", b.len()),
    }
}

/// A timestamp stored as text, read as SeaORM's SQLite driver reads it: RFC 3339 (what
/// protege writes), then SQLite's own date and time formats, naive ones taken as UTC.
fn time_from_text(text: &str) -> Option<DateTime<FixedOffset>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t);
    }
    const FORMATS: [&str; 12] = [
        "%F %T%.f",
        "%F %R",
        "%F %RZ",
        "%F %R%:z",
        "%F %T%.fZ",
        "%F %T%.f%:z",
        "%FT%R",
        "%FT%RZ",
        "%FT%R%:z",
        "%FT%T%.f",
        "%FT%T%.fZ",
        "%FT%T%.f%:z",
    ];
    FORMATS.iter().find_map(|format| {
        DateTime::parse_from_str(text, format).ok().or_else(|| {
            NaiveDateTime::parse_from_str(text, format)
                .ok()
                .map(|t| Utc.fix().from_utc_datetime(&t))
        })
    })
}

/// A timestamp stored as a Julian day number.
fn time_from_julian_day(days: f64) -> Option<DateTime<FixedOffset>> {
    const UNIX_EPOCH_JULIAN_DAY: f64 = 2_440_587.5;
    let seconds = (days - UNIX_EPOCH_JULIAN_DAY) * 86_400.0;
    if !seconds.is_finite() || seconds.abs() > 1e15 {
        return None;
    }
    // In range by the check above; the fraction is below one second.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let (whole, nanos) = (seconds.trunc() as i64, (seconds.fract() * 1e9).abs() as u32);
    Utc.fix().timestamp_opt(whole, nanos).single()
}

/// The columns [`message_from_row`] reads, in order.
pub(crate) const MESSAGE_COLUMNS: [message::Column; 12] = {
    use message::Column as M;
    [
        M::Id,
        M::MessageId,
        M::Direction,
        M::FromAddress,
        M::ToAddresses,
        M::CcAddresses,
        M::Subject,
        M::SentAt,
        M::TextBody,
        M::HtmlBody,
        M::InReplyTo,
        M::EmailThreadId,
    ]
};

/// A row of [`MESSAGE_COLUMNS`], without its attachments.
pub(crate) fn message_from_row(row: &impl Row) -> Result<MailMessage> {
    let message_id = row.text(1)?;
    let direction = row.text(2)?;
    let direction =
        Direction::parse(&direction).ok_or_else(|| bad_direction(&direction, &message_id))?;
    let to = row.text(4)?;
    let cc = row.text(5)?;
    Ok(MailMessage {
        id: row.int(0)?,
        thread_id: row.int(11)?,
        email: Email {
            direction,
            from: row.text(3)?,
            to: address_list(&to, "to_addresses", &message_id)?,
            cc: address_list(&cc, "cc_addresses", &message_id)?,
            subject: row.text(6)?,
            sent_at: row.time(7)?,
            text_body: row.opt_text(8)?,
            html_body: row.opt_text(9)?,
            in_reply_to: row.opt_text(10)?,
            message_id,
            attachments: Vec::new(),
        },
    })
}

/// Parses a stored JSON array of addresses.
fn address_list(text: &str, column: &str, message_id: &str) -> Result<Vec<String>> {
    serde_json::from_str(text).map_err(|_| {
        Error::new(
            ErrorKind::Database,
            format!("column `{column}` of message `{message_id}` is not a JSON array of strings"),
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

/// The columns [`attachment_from_row`] reads, in order; the data last, selected only when
/// wanted.
pub(crate) const ATTACHMENT_COLUMNS: [attachment::Column; 6] = {
    use attachment::Column as A;
    [
        A::MessageId,
        A::AttachmentId,
        A::Filename,
        A::ContentType,
        A::ByteSize,
        A::Data,
    ]
};

/// The message id and the attachment of a row of [`ATTACHMENT_COLUMNS`]; `with_data` says
/// whether the data column was selected.
pub(crate) fn attachment_from_row(row: &impl Row, with_data: bool) -> Result<(i64, Attachment)> {
    Ok((
        row.int(0)?,
        Attachment {
            attachment_id: row.text(1)?,
            filename: row.text(2)?,
            content_type: row.text(3)?,
            byte_size: row.int(4)?,
            data: if with_data { row.opt_bytes(5)? } else { None },
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_like_the_sqlx_driver() {
        let t = |s: &str| time_from_text(s).map(|t| t.with_timezone(&Utc).to_rfc3339());
        assert_eq!(
            t("2026-03-02T09:14:00+00:00").as_deref(),
            Some("2026-03-02T09:14:00+00:00")
        );
        assert_eq!(
            t("2026-03-02T10:14:00+01:00").as_deref(),
            Some("2026-03-02T09:14:00+00:00")
        );
        assert_eq!(
            t("2026-03-02 09:14:00").as_deref(),
            Some("2026-03-02T09:14:00+00:00")
        );
        assert_eq!(
            t("2026-03-02 09:14").as_deref(),
            Some("2026-03-02T09:14:00+00:00")
        );
        assert_eq!(t("yesterday"), None);
        let day = time_from_julian_day(2_440_588.5).map(|t| t.to_rfc3339());
        assert_eq!(day.as_deref(), Some("1970-01-02T00:00:00+00:00"));
        assert_eq!(time_from_julian_day(f64::NAN), None);
    }
}
