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

/// The default of [`MailLimits::message_text_bytes`]: 256 KiB.
pub const DEFAULT_MESSAGE_TEXT_BYTES: usize = 256 * 1024;

/// The default of [`MailLimits::attachment_parts`].
pub const DEFAULT_ATTACHMENT_PARTS: usize = 20;

/// How much of one email reaches the model: the caps a run applies when it renders mail
/// (`[limits]` of a persona over the application's `AppConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MailLimits {
    /// The most bytes of one rendered message (`message_text_bytes`, default 256 KiB):
    /// a longer one is cut, followed by `[truncated: N more bytes]`.
    pub message_text_bytes: usize,
    /// The most attachments of one request sent as image or document parts
    /// (`attachment_parts`, default 20); the others stay lines of the attachments block.
    pub attachment_parts: usize,
}

impl Default for MailLimits {
    fn default() -> Self {
        Self {
            message_text_bytes: DEFAULT_MESSAGE_TEXT_BYTES,
            attachment_parts: DEFAULT_ATTACHMENT_PARTS,
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
/// model. The same type is read from a fixture (a `FixtureMessage` of `protege-store`),
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
    /// The HTML body as readable text ([`html_to_text`](crate::html_to_text)), converted
    /// once when the message is stored; `None` when there is no HTML body or it was not
    /// converted yet (the readable body then converts the HTML itself).
    pub html_text: Option<String>,
    /// The Message-ID this one replies to, if any.
    pub in_reply_to: Option<String>,
    /// The attachments, in order.
    pub attachments: Vec<Attachment>,
    /// What a reply to it needs of its headers besides its addresses (empty when it had
    /// none of them, or was not read from RFC 5322).
    pub reply_headers: crate::ReplyHeaders,
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

/// The key of a header-form address by which threads and correspondents are matched: its
/// bare address on one line, lowercased (`Alice <Alice@Example.com>` gives
/// `alice@example.com`).
pub fn address_key(header: &str) -> String {
    bare_address(&one_line(header)).to_lowercase()
}

/// The readable body of a message stored with `text_body`, `html_text` (its HTML body's
/// stored text) and `html_body` (see [`Email::readable_body`]).
#[doc(hidden)]
pub fn readable_of<'a>(
    text_body: Option<&'a str>,
    html_text: Option<&'a str>,
    html_body: Option<&'a str>,
) -> Cow<'a, str> {
    if let Some(text) = text_body {
        match crate::invisible::drop_invisible(text.trim()) {
            (Cow::Borrowed(text), _) if !text.is_empty() => return Cow::Borrowed(text),
            (Cow::Owned(text), _) if !text.trim().is_empty() => {
                return Cow::Owned(text.trim().to_owned());
            }
            _ => {}
        }
    }
    match (html_text, html_body) {
        (Some(text), _) => Cow::Borrowed(text.trim()),
        (None, Some(html)) if !html.trim().is_empty() => Cow::Owned(html_to_text(html)),
        _ => Cow::Borrowed(""),
    }
}

impl Email {
    /// The readable body: the text body without the characters a reader never sees (the
    /// Unicode tag characters, zero-width and invisible format characters) when that is
    /// not blank, else the HTML body as text (the stored [`html_text`](Self::html_text)
    /// when there is one), else empty; trimmed.
    pub fn readable_body(&self) -> String {
        self.readable().into_owned()
    }

    /// [`readable_body`](Self::readable_body), borrowed when it is stored as such.
    #[doc(hidden)]
    pub fn readable(&self) -> Cow<'_, str> {
        readable_of(
            self.text_body.as_deref(),
            self.html_text.as_deref(),
            self.html_body.as_deref(),
        )
    }

    /// The readable body as it reaches the model: cut to at most `limit` bytes followed by
    /// `\n[truncated: N more bytes]` when it is longer (see [`cap_text`]).
    pub fn readable_body_within(&self, limit: usize) -> String {
        let body = self.readable();
        match cap_text(&body, limit) {
            Cow::Borrowed(_) => body.into_owned(),
            Cow::Owned(cut) => cut,
        }
    }

    /// Whether the message has neither a readable body nor attachments (history skips it).
    pub fn is_empty(&self) -> bool {
        self.attachments.is_empty() && self.readable().is_empty()
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

    /// [`to_llm_text`](Self::to_llm_text) as it reaches the model: the whole rendering cut
    /// to at most `limit` bytes followed by `\n[truncated: N more bytes]` when it is longer
    /// (`[limits] message_text_bytes`), so neither a huge body nor a huge header or
    /// attachment list reaches the model whole. Unchanged when it fits.
    pub fn to_llm_text_within(&self, limit: usize) -> String {
        self.render_within(&self.readable(), limit)
    }

    /// [`to_llm_text_within`](Self::to_llm_text_within) with an already computed readable
    /// body.
    #[doc(hidden)]
    pub fn render_within(&self, body: &str, limit: usize) -> String {
        // Only the first `limit` bytes of the body can be kept: render those, and count
        // the rest of the body in the marker.
        let kept = &body[..floor_char_boundary(body, limit)];
        let rendering = self.render_with_body(kept);
        let dropped = body.len() - kept.len();
        if rendering.len() + dropped <= limit {
            return rendering;
        }
        truncated(&rendering, limit, rendering.len() + dropped)
    }

    /// [`render_within`](Self::render_within) with the body between the lines of `fence`
    /// (and the number of lines [`Fence::neutralise`](crate::Fence::neutralise) changed):
    /// the header block stays outside the fence, as do the attachments block and the
    /// truncation marker, and lines of those that look like a fence line are neutralised
    /// too. The body is cut exactly where [`render_within`](Self::render_within) cuts it;
    /// the fence lines do not count against `limit`. An empty body gets no fence.
    ///
    /// The parts are laid out here, never found again in the rendering: the header
    /// block's length is that of the header lines alone, whatever follows them.
    #[doc(hidden)]
    pub fn render_fenced_within(
        &self,
        body: &str,
        limit: usize,
        fence: &crate::Fence,
    ) -> (String, usize) {
        let kept_full = &body[..floor_char_boundary(body, limit)];
        let mut head = String::with_capacity(256);
        self.push_head(&mut head);
        // The plain rendering, as `render_with_body` makes it, from the head made once.
        let mut plain = String::with_capacity(head.len() + kept_full.len() + 128);
        plain.push_str(&head);
        if !kept_full.is_empty() {
            plain.push_str("\n\n");
            plain.push_str(kept_full);
        }
        self.push_attachments(&mut plain);
        let total = plain.len() + (body.len() - kept_full.len());
        // Where the plain rendering is cut: nowhere when it fits.
        let cut = if total <= limit {
            plain.len()
        } else {
            floor_char_boundary(&plain, limit)
        };
        let marker = |out: &mut String| {
            if total > limit {
                let _ = write!(out, "\n[truncated: {} more bytes]", total - cut);
            }
        };
        // The body starts after the header block and a blank line; the part of it the cut
        // leaves (a character boundary of the body, since the body starts at one).
        let start = head.len() + 2;
        let kept = if kept_full.is_empty() || cut <= start {
            0
        } else {
            (cut - start).min(kept_full.len())
        };
        if kept == 0 {
            let (all, neutralised) = crate::Fence::neutralise(&plain[..cut]);
            let mut out = all.into_owned();
            marker(&mut out);
            return (out, neutralised);
        }
        let (head_part, neutralised_head) = crate::Fence::neutralise(&head);
        let (wrapped, neutralised_body) = fence.wrap(&kept_full[..kept]);
        let (rest, neutralised_rest) = crate::Fence::neutralise(&plain[start + kept..cut]);
        let mut out = String::with_capacity(plain.len() + 2 * fence.open_line().len() + 48);
        out.push_str(&head_part);
        out.push_str("\n\n");
        out.push_str(&wrapped);
        out.push_str(&rest);
        marker(&mut out);
        (out, neutralised_head + neutralised_body + neutralised_rest)
    }

    /// [`to_llm_text`](Self::to_llm_text) with an already computed readable body.
    pub fn render_with_body(&self, body: &str) -> String {
        let mut out = String::with_capacity(256 + body.len());
        self.push_head(&mut out);
        if !body.is_empty() {
            out.push_str("\n\n");
            out.push_str(body);
        }
        self.push_attachments(&mut out);
        out
    }

    /// The five header lines, each value on one line.
    fn push_head(&self, out: &mut String) {
        out.push_str("From: ");
        out.push_str(&one_line(&self.from));
        push_list(out, "\nTo:", &self.to);
        push_list(out, "\nCc:", &self.cc);
        let _ = write!(
            out,
            "\nDate: {}\nSubject: {}",
            header_date(&self.sent_at),
            one_line(&self.subject)
        );
    }

    /// The attachments block after a blank line, when there are attachments.
    fn push_attachments(&self, out: &mut String) {
        if self.attachments.is_empty() {
            return;
        }
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
}

/// `at` as the `Date:` line of a rendered message shows it: RFC 2822 in UTC, the day not
/// zero-padded (`Mon, 5 Jan 2026 10:00:00 +0000`).
pub fn header_date(at: &DateTime<Utc>) -> impl std::fmt::Display + '_ {
    at.format_with_items(rfc2822_utc().iter())
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
#[doc(hidden)]
pub fn one_line(value: &str) -> Cow<'_, str> {
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

/// `text` cut to its first `limit` bytes (at a character boundary) followed by
/// `\n[truncated: N more bytes]`, N the bytes cut off; borrowed unchanged when it is not
/// longer than `limit`. The marker has the form of a tool result's
/// (`[truncated: N more characters]`), counted in bytes as the limit is.
///
/// ```
/// // `é` takes two bytes: a cut inside it keeps only `h`.
/// assert_eq!(protege::cap_text("héllo", 2), "h\n[truncated: 5 more bytes]");
/// assert_eq!(protege::cap_text("héllo", 6), "héllo");
/// ```
pub fn cap_text(text: &str, limit: usize) -> Cow<'_, str> {
    if text.len() <= limit {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(truncated(text, limit, text.len()))
    }
}

/// The first `limit` bytes of `text` (at a character boundary) and the marker counting
/// the bytes of the `full` length that are left out.
fn truncated(text: &str, limit: usize, full: usize) -> String {
    let cut = floor_char_boundary(text, limit);
    let rest = full - cut;
    let mut out = String::with_capacity(cut + 40);
    out.push_str(&text[..cut]);
    let _ = write!(out, "\n[truncated: {rest} more bytes]");
    out
}

/// The largest character boundary of `text` at or below `index`.
fn floor_char_boundary(text: &str, index: usize) -> usize {
    if index >= text.len() {
        return text.len();
    }
    let mut cut = index;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    cut
}

/// `value` without NUL characters (PostgreSQL rejects them in text); bodies keep their
/// line breaks.
#[doc(hidden)]
pub fn without_nul(value: &str) -> Cow<'_, str> {
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
