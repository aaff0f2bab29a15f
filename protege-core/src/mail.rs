//! Email: the one type of an email's content ([`Email`]), the stored message
//! ([`MailMessage`]) and how an email is rendered for the model.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::ops::{Deref, DerefMut};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::html_text::html_to_text;

/// Whether a message came in to the agent or was sent by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Received by the agent: replayed as a `user` turn.
    Inbound,
    /// Sent by the agent: replayed as an `assistant` turn.
    Outbound,
}

impl Direction {
    /// `inbound` or `outbound`, as stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Inbound => "inbound",
            Direction::Outbound => "outbound",
        }
    }

    /// Parses the stored form; `None` for anything else.
    pub fn parse(text: &str) -> Option<Direction> {
        match text {
            "inbound" => Some(Direction::Inbound),
            "outbound" => Some(Direction::Outbound),
            _ => None,
        }
    }
}

/// A file attached to a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// The stable id shown to the model and to tools.
    pub attachment_id: String,
    /// The file name.
    pub filename: String,
    /// The MIME type.
    pub content_type: String,
    /// The size in bytes, as stored.
    pub byte_size: i64,
    /// The bytes, when stored.
    pub data: Option<Vec<u8>>,
}

/// An email: its headers, bodies and attachments, as imported and as rendered for the
/// model. The same type is read from a fixture ([`FixtureMessage`](crate::db::FixtureMessage)),
/// parsed from RFC 5322 mail and loaded from the database ([`MailMessage`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email {
    /// The RFC 5322 Message-ID, e.g. `<m1@example.com>`.
    pub message_id: String,
    /// Inbound or outbound.
    pub direction: Direction,
    /// The From header form, e.g. `Alice <alice@example.com>`.
    pub from: String,
    /// The To addresses in header form.
    pub to: Vec<String>,
    /// The Cc addresses in header form.
    pub cc: Vec<String>,
    /// The subject.
    pub subject: String,
    /// When it was sent (UTC).
    pub sent_at: DateTime<Utc>,
    /// The plain-text body, if any.
    pub text_body: Option<String>,
    /// The HTML body, if any.
    pub html_body: Option<String>,
    /// The Message-ID this one replies to, if any.
    pub in_reply_to: Option<String>,
    /// The attachments, in order.
    pub attachments: Vec<Attachment>,
}

/// An email as stored: the trigger of a reply run and the unit of thread history. It
/// dereferences to its [`Email`], so `message.subject` and `message.to_llm_text()` read
/// the email.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailMessage {
    /// The database id (`messages.id`), the tie-breaker of ordering.
    pub id: i64,
    /// The database id of the thread.
    pub thread_id: i64,
    /// The email, its attachments in insertion order.
    pub email: Email,
}

impl Deref for MailMessage {
    type Target = Email;

    fn deref(&self) -> &Email {
        &self.email
    }
}

impl DerefMut for MailMessage {
    fn deref_mut(&mut self) -> &mut Email {
        &mut self.email
    }
}

/// The bare address of a header-form address: `Alice <alice@example.com>` gives
/// `alice@example.com`; a bare address is returned trimmed.
pub fn bare_address(header: &str) -> &str {
    let header = header.trim();
    match (header.rfind('<'), header.rfind('>')) {
        (Some(open), Some(close)) if open < close => header[open + 1..close].trim(),
        _ => header,
    }
}

impl Email {
    /// The readable body: the text body when not blank, else the HTML body as text, else
    /// empty; trimmed.
    pub fn readable_body(&self) -> String {
        if let Some(text) = self.text_body.as_deref()
            && !text.trim().is_empty()
        {
            return text.trim().to_owned();
        }
        match self.html_body.as_deref() {
            Some(html) if !html.trim().is_empty() => html_to_text(html),
            _ => String::new(),
        }
    }

    /// Whether the message has neither a readable body nor attachments (history skips it).
    pub fn is_empty(&self) -> bool {
        self.attachments.is_empty() && self.readable_body().is_empty()
    }

    /// The bare sender address.
    pub fn from_address(&self) -> &str {
        bare_address(&self.from)
    }

    /// The message rendered for the model: five header lines (`From`, `To`, `Cc`, `Date`,
    /// `Subject`), then the readable body and the attachments block, each after a blank line.
    pub fn to_llm_text(&self) -> String {
        let body = self.readable_body();
        self.render_with_body(&body)
    }

    /// [`to_llm_text`](Self::to_llm_text) with an already computed readable body.
    pub fn render_with_body(&self, body: &str) -> String {
        let mut out = String::with_capacity(256 + body.len());
        out.push_str("From: ");
        out.push_str(&one_line(&self.from));
        push_list(&mut out, "\nTo:", &self.to);
        push_list(&mut out, "\nCc:", &self.cc);
        // RFC 2822 in UTC, day not zero-padded.
        let _ = write!(
            out,
            "\nDate: {}\nSubject: {}",
            self.sent_at.format_with_items(rfc2822_utc().iter()),
            one_line(&self.subject)
        );
        if !body.is_empty() {
            out.push_str("\n\n");
            out.push_str(body);
        }
        if !self.attachments.is_empty() {
            out.push_str("\n\nAttachments:");
            for a in &self.attachments {
                let _ = write!(
                    out,
                    "\n- {} ({}, {} bytes, id: {})",
                    one_line(&a.filename),
                    one_line(&a.content_type),
                    a.byte_size,
                    one_line(&a.attachment_id)
                );
            }
        }
        out
    }
}

impl MailMessage {
    /// The `message` template variable, every header value on one line.
    pub(crate) fn template_value(&self) -> minijinja::Value {
        let bare = |header: &str| one_line(bare_address(&one_line(header))).into_owned();
        let to: Vec<String> = self.to.iter().map(|a| bare(a)).collect();
        let cc: Vec<String> = self.cc.iter().map(|a| bare(a)).collect();
        minijinja::context! {
            message_id => one_line(&self.message_id).into_owned(),
            from => bare(&self.from),
            from_display => one_line(&self.from).into_owned(),
            to => to,
            cc => cc,
            subject => one_line(&self.subject).into_owned(),
            sent_at => rfc3339_z(&self.sent_at),
            body => self.readable_body(),
            thread_id => self.thread_id,
        }
    }
}

/// The `Date:` header format, RFC 2822 in UTC with the day not zero-padded, parsed once.
fn rfc2822_utc() -> &'static [chrono::format::Item<'static>] {
    static ITEMS: std::sync::LazyLock<Vec<chrono::format::Item<'static>>> =
        std::sync::LazyLock::new(|| {
            chrono::format::StrftimeItems::new("%a, %-d %b %Y %H:%M:%S +0000")
                .parse_to_owned()
                .unwrap_or_default()
        });
    &ITEMS
}

fn push_list(out: &mut String, label: &str, items: &[String]) {
    out.push_str(label);
    for (i, item) in items.iter().enumerate() {
        out.push_str(if i == 0 { " " } else { ", " });
        out.push_str(&one_line(item));
    }
}

/// A header value as one line: NUL removed; CR, LF, every other control character
/// except TAB, and the Unicode line and paragraph separators become a space; a run of
/// spaces containing such a character becomes one space; the ends are trimmed. Borrowed
/// unchanged when there is nothing to change.
///
/// Applied to addresses, display names, subjects, attachment file names and content types
/// when mail is imported, and again when a message is rendered or fills template
/// variables, so rows stored before the rule are safe too.
pub(crate) fn one_line(value: &str) -> Cow<'_, str> {
    let breaks = |c: char| c != '\t' && (c.is_control() || c == '\u{2028}' || c == '\u{2029}');
    if !value.contains(breaks) && value.trim().len() == value.len() {
        return Cow::Borrowed(value);
    }
    let mut out = String::with_capacity(value.len());
    // A run of spaces, written once the run ends: `(spaces seen, run holds a break)`.
    let mut run = (0usize, false);
    for c in value.chars() {
        match c {
            '\0' => {}
            ' ' => run.0 += 1,
            c if breaks(c) => run.1 = true,
            c => {
                if run.1 {
                    out.push(' ');
                } else {
                    out.extend(std::iter::repeat_n(' ', run.0));
                }
                run = (0, false);
                out.push(c);
            }
        }
    }
    Cow::Owned(out.trim().to_owned())
}

/// `value` without NUL characters (PostgreSQL rejects them in text); bodies keep their
/// line breaks.
pub(crate) fn without_nul(value: &str) -> Cow<'_, str> {
    if value.contains('\0') {
        Cow::Owned(value.replace('\0', ""))
    } else {
        Cow::Borrowed(value)
    }
}

/// RFC 3339 in UTC with a `Z`, seconds precision: `2026-01-05T10:00:00Z`.
pub fn rfc3339_z(at: &DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn one_line_joins_and_trims_a_header_value() {
        assert_eq!(one_line("Eve \r\nBcc: x\u{0}y\t "), "Eve Bcc: xy");
    }
}
