//! Stored email messages and how they are rendered for the model (§6).

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

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

/// An email message as stored: the trigger of a reply run and the unit of thread history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailMessage {
    /// The database id (`messages.id`), the tie-breaker of ordering.
    pub id: i64,
    /// The database id of the thread.
    pub thread_id: i64,
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
    /// The attachments in insertion order.
    pub attachments: Vec<Attachment>,
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

/// Converts an HTML body to plain text: tags removed, entities decoded, blocks separated
/// by a blank line, `<br>` a line break, list items on their own lines, scripts and styles
/// dropped, no decoration and no hard wrapping. Leading and trailing whitespace is removed.
pub fn html_to_text(html: &str) -> String {
    let text = html2text::config::plain_no_decorate()
        .allow_width_overflow()
        .no_link_wrapping()
        .raw_mode(true)
        .string_from_read(html.as_bytes(), 1 << 20)
        .unwrap_or_default();
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.trim().to_owned()
}

impl MailMessage {
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

    /// The message rendered for the model, exactly as §6 of the contract writes it.
    pub fn to_llm_text(&self) -> String {
        let body = self.readable_body();
        self.render_with_body(&body)
    }

    /// [`to_llm_text`](Self::to_llm_text) with an already computed readable body.
    pub fn render_with_body(&self, body: &str) -> String {
        let mut out = String::with_capacity(256 + body.len());
        out.push_str("From: ");
        out.push_str(&self.from);
        push_list(&mut out, "\nTo:", &self.to);
        push_list(&mut out, "\nCc:", &self.cc);
        // RFC 2822 in UTC, day not zero-padded.
        let _ = write!(
            out,
            "\nDate: {}\nSubject: {}",
            self.sent_at.format("%a, %-d %b %Y %H:%M:%S +0000"),
            self.subject
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
                    a.filename, a.content_type, a.byte_size, a.attachment_id
                );
            }
        }
        out
    }
}

fn push_list(out: &mut String, label: &str, items: &[String]) {
    out.push_str(label);
    for (i, item) in items.iter().enumerate() {
        out.push_str(if i == 0 { " " } else { ", " });
        out.push_str(item);
    }
}

/// RFC 3339 in UTC with a `Z`, seconds precision: `2026-01-05T10:00:00Z`.
pub fn rfc3339_z(at: &DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}
