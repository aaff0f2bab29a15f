//! One RFC 5322 message, parsed with `mail-parser` into the values a `messages` row and
//! its `attachments` rows hold.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use mail_parser::{
    Addr, Address, Encoding, HeaderName, HeaderValue, MessageParser, MimeHeaders, PartType,
};
use sha2::{Digest, Sha256};

use crate::mail::{Attachment, Direction, Email, one_line, without_nul};
use crate::{MAX_KEPT_AUTH_RESULTS, MAX_KEPT_REFERENCES, ReplyHeaders, hex, sha256_hex};

/// The longest Message-ID stored, in characters: the width of the indexed column.
const MAX_ID_CHARS: usize = 512;

/// Where the `sent_at` of a message came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateSource {
    /// The `Date` header.
    Date,
    /// The first `Received` header with a valid date.
    Received,
    /// Neither: the import time.
    ImportTime,
}

/// A parsed message, owning everything it needs once the raw bytes are gone: the email
/// and what only RFC 5322 mail has (how its id and date were found, the ids it refers to,
/// the attachments over the size cap).
#[derive(Debug)]
pub struct ParsedEml {
    /// The email: its Message-ID in angle brackets (synthetic when the header is missing),
    /// the decoded subject (empty when missing), the `text/plain` and `text/html` body
    /// parts joined, the first In-Reply-To id, the attachments (inline images included)
    /// with their bytes, `data` `None` for one over the size cap.
    pub email: Email,
    /// Whether the Message-ID was made from the hash of the raw message.
    pub synthetic_id: bool,
    /// Where `sent_at` came from.
    pub date_source: DateSource,
    /// The ids this message refers to, most relevant first: References newest first,
    /// then In-Reply-To; deduplicated, without the message's own id.
    pub parents: Vec<String>,
    /// The file names of the attachments whose data was over the size cap, with their
    /// sizes.
    pub oversized: Vec<(String, usize)>,
    /// Who claims to have sent it: the bare From addresses, lowercased (one, or several
    /// with a `Sender` header), and what shows where it came from.
    pub origin: Origin,
    /// The content type of a multipart body whose parts could not be found (a wrong or
    /// missing boundary): its raw text is the text body.
    pub unsplit: Option<String>,
    /// Why it counts as sent by a program (the header that says so), for the agent's gate;
    /// `None` for a message a person wrote (see [`gate::automated`](super::gate::automated)).
    pub automated: Option<String>,
    /// The values of its `X-Protege-Loop` headers, lowercased.
    pub loop_marks: Vec<String>,
    /// For a delivery report (a bounce), the Message-IDs of the messages it returns; `None`
    /// for other mail (see [`gate::bounce_of`](super::gate::bounce_of)).
    pub bounce_of: Option<Vec<String>>,
}

/// Who a message claims to be from, and the headers that show whether it arrived from
/// outside (see `direction.rs`).
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// The bare From addresses, lowercased, in header order (at least one).
    pub from: Vec<String>,
    /// Whether it has a `Received` header (a relay handed it over).
    pub received: bool,
    /// The values of its `Authentication-Results` headers, top first, unfolded.
    pub auth_results: Vec<String>,
}

/// When a message was sent: its `Date`, else the first dated `Received`, else `now`. A
/// date whose written year the parser read otherwise (`0000` read as 2000) is impossible
/// and skipped.
fn sent_at(message: &mail_parser::Message<'_>, now: DateTime<Utc>) -> (DateTime<Utc>, DateSource) {
    // The last `Date` header, the one `Message::date` reads.
    let last_date = message
        .headers()
        .iter()
        .rev()
        .find(|h| h.name == HeaderName::Date);
    let date = last_date.and_then(|header| {
        let date = header.value.as_datetime()?;
        let raw = message
            .raw_message
            .get(header.offset_start as usize..header.offset_end as usize)?;
        year_as_written(raw, date).then(|| utc(date)).flatten()
    });
    if let Some(at) = date {
        return (at, DateSource::Date);
    }
    let received = message
        .headers()
        .iter()
        .filter(|h| h.name == HeaderName::Received)
        .find_map(|header| {
            let date = header.value.as_received()?.date.as_ref()?;
            let raw = message
                .raw_message
                .get(header.offset_start as usize..header.offset_end as usize)?;
            // The date of a `Received` header follows its last `;`.
            let at = raw.iter().rposition(|&b| b == b';').map_or(0, |i| i + 1);
            year_as_written(&raw[at..], date)
                .then(|| utc(date))
                .flatten()
        });
    match received {
        Some(at) => (at, DateSource::Received),
        None => (now, DateSource::ImportTime),
    }
}

/// Whether the year written in the raw date text `raw` is the year the parser read: a
/// four-digit year (`0000`, `0049`) must be read as written, never as a two-digit year
/// of the 2000s. Two- and three-digit years are the obsolete forms RFC 5322 maps
/// (`49` is 2049, `126` is 2026).
fn year_as_written(raw: &[u8], date: &mail_parser::DateTime) -> bool {
    let text = String::from_utf8_lossy(raw);
    let mut tokens = text
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| !t.is_empty());
    // The year follows the month name.
    let months = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let Some(_) = tokens.by_ref().find(|t| {
        t.get(..3)
            .is_some_and(|m| months.iter().any(|n| m.eq_ignore_ascii_case(n)))
    }) else {
        return true;
    };
    match tokens.next() {
        Some(year) if year.len() >= 4 && year.bytes().all(|b| b.is_ascii_digit()) => {
            year.parse::<u32>().ok() == Some(u32::from(date.year))
        }
        _ => true,
    }
}

/// The parser of an import's first pass: it reads only the headers that date a message
/// (`Date`, `Received`) and skips the others.
pub fn date_parser() -> MessageParser {
    MessageParser::new()
        .header_date(HeaderName::Date)
        .header_received(HeaderName::Received)
        .default_header_ignore()
}

/// The `sent_at` of a message from its header lines alone (the sort key of an import),
/// read with a [`date_parser`].
pub fn header_date(parser: &MessageParser, header: &[u8], now: DateTime<Utc>) -> DateTime<Utc> {
    parser
        .parse_headers(header)
        .map_or(now, |m| sent_at(&m, now).0)
}

/// Parses `raw`; the error is the reason the message cannot be imported. The email is
/// inbound: its direction is decided from its [`Origin`] (see `direction.rs`).
pub fn parse_eml(
    raw: &[u8],
    now: DateTime<Utc>,
    max_attachment_bytes: u64,
) -> Result<ParsedEml, String> {
    let message = MessageParser::default()
        .parse(raw)
        .ok_or_else(|| "not an email: no header found".to_owned())?;
    let has_any = message.from().is_some()
        || message.to().is_some()
        || message.subject().is_some()
        || message.date().is_some()
        || message.message_id().is_some();
    if !has_any {
        return Err(
            "not an email: none of the headers `From`, `To`, `Subject`, `Date`, `Message-ID`"
                .to_owned(),
        );
    }
    let origin = origin(&message)?;
    let from = message
        .from()
        .and_then(|a| addresses(a).into_iter().next())
        .ok_or_else(|| "no `From` address".to_owned())?;

    let (message_id, synthetic_id) = match message.message_id().and_then(angle_id) {
        Some(id) => (id, false),
        None => (format!("<{}@protege.invalid>", sha256_hex(raw)), true),
    };
    if message_id.chars().count() > MAX_ID_CHARS {
        return Err(format!(
            "`Message-ID` longer than {MAX_ID_CHARS} characters"
        ));
    }

    let (sent_at, date_source) = sent_at(&message, now);

    let in_reply_to = ids(message.in_reply_to()).into_iter().next();
    let mut parents: Vec<String> = Vec::new();
    let references = ids(message.references());
    let reply_headers = reply_headers(&message, &references, &origin);
    for id in references.into_iter().rev().chain(in_reply_to.clone()) {
        if id != message_id && !parents.contains(&id) {
            parents.push(id);
        }
    }

    let (text_body, html_body, unsplit) = bodies(raw, &message);
    let automated = super::gate::automated(&message, &from);
    let loop_marks = super::gate::loop_marks(&message);
    let bounce_of = super::gate::bounce_of(&message);

    let (attachments, oversized) = attachments(
        raw,
        &message,
        &message_id,
        unsplit.is_some(),
        max_attachment_bytes,
    );

    Ok(ParsedEml {
        email: Email {
            message_id,
            direction: Direction::Inbound,
            from,
            to: message.all_to().flat_map(addresses).collect(),
            cc: message.all_cc().flat_map(addresses).collect(),
            subject: message
                .subject()
                .map(one_line)
                .unwrap_or_default()
                .into_owned(),
            sent_at,
            text_body,
            html_body,
            html_text: None,
            in_reply_to,
            attachments,
            reply_headers,
        },
        synthetic_id,
        date_source,
        parents,
        oversized,
        origin,
        unsplit,
        automated,
        loop_marks,
        bounce_of,
    })
}

/// What a reply to `message` needs of its headers: its `References` ids (`references`, in
/// header order, capped), its `Reply-To` and the `Authentication-Results` of `origin`.
fn reply_headers(
    message: &mail_parser::Message<'_>,
    references: &[String],
    origin: &Origin,
) -> ReplyHeaders {
    let references = references
        .iter()
        .filter(|id| id.chars().count() <= MAX_ID_CHARS)
        .cloned()
        .collect();
    let reply_to = message.reply_to();
    ReplyHeaders {
        references: ReplyHeaders::capped(references, MAX_KEPT_REFERENCES),
        reply_to: reply_to.map(addresses).unwrap_or_default(),
        reply_to_group: matches!(reply_to, Some(Address::Group(_))),
        authentication_results: origin
            .auth_results
            .iter()
            .take(MAX_KEPT_AUTH_RESULTS)
            .cloned()
            .collect(),
    }
}

/// The attachments of `message` (without the unsplit multipart body that became the text
/// body), and the name and size of each whose data is over `max_attachment_bytes` and so
/// left out.
fn attachments(
    raw: &[u8],
    message: &mail_parser::Message<'_>,
    message_id: &str,
    unsplit: bool,
    max_attachment_bytes: u64,
) -> (Vec<Attachment>, Vec<(String, usize)>) {
    let mut attachments = Vec::new();
    let mut oversized = Vec::new();
    for &part_id in &message.attachments {
        // The raw text of an unsplit multipart body is the text body, not an attachment.
        if unsplit && part_id == 0 {
            continue;
        }
        let Some(part) = message.parts.get(part_id as usize) else {
            continue;
        };
        let Some((data, default_type)) = part_data(raw, part) else {
            continue;
        };
        let content_type = part
            .content_type()
            .map(|ct| match ct.subtype() {
                Some(sub) => format!("{}/{}", ct.ctype(), sub),
                None => ct.ctype().to_owned(),
            })
            .unwrap_or_else(|| default_type.to_owned())
            .to_ascii_lowercase();
        let content_type = one_line(&content_type).into_owned();
        let filename = match part.attachment_name().map(one_line) {
            Some(name) if !name.is_empty() => name.into_owned(),
            _ => format!("part-{part_id}.{}", extension(&content_type)),
        };
        let byte_size = data.len();
        let data = if byte_size as u64 > max_attachment_bytes {
            oversized.push((filename.clone(), byte_size));
            None
        } else {
            Some(data.into_owned())
        };
        attachments.push(Attachment {
            attachment_id: attachment_id(message_id, part_id),
            filename,
            content_type,
            byte_size: byte_size as i64,
            data,
        });
    }
    (attachments, oversized)
}

/// The bytes of an attachment part and the content type it has when it declares none;
/// `None` for a multipart container.
fn part_data<'a>(
    raw: &'a [u8],
    part: &'a mail_parser::MessagePart<'a>,
) -> Option<(Cow<'a, [u8]>, &'static str)> {
    Some(match &part.body {
        PartType::Text(t) => (Cow::Borrowed(t.as_bytes()), "text/plain"),
        PartType::Html(t) => (Cow::Borrowed(t.as_bytes()), "text/html"),
        PartType::Binary(b) | PartType::InlineBinary(b) => {
            (Cow::Borrowed(b.as_ref()), "application/octet-stream")
        }
        // A message/rfc822 part parsed in place shares the outer raw bytes: its own
        // bytes are the part's body range. A transfer-encoded one owns its decoded bytes.
        PartType::Message(m) => match part.encoding {
            Encoding::None => (
                Cow::Borrowed(
                    raw.get(part.offset_body as usize..part.offset_end as usize)
                        .unwrap_or_default(),
                ),
                "message/rfc822",
            ),
            _ => (Cow::Borrowed(m.raw_message.as_ref()), "message/rfc822"),
        },
        PartType::Multipart(_) => return None,
    })
}

/// Who the message claims to be from, refusing what names no single author: several
/// `From` headers, or a `From` list without a `Sender` header (RFC 5322 §3.6.2).
fn origin(message: &mail_parser::Message<'_>) -> Result<Origin, String> {
    let from_headers = message.header_values(HeaderName::From).count();
    if from_headers > 1 {
        return Err(format!(
            "{from_headers} `From` headers: a message has exactly one, so it is not imported"
        ));
    }
    let from: Vec<String> = message
        .from()
        .map(|a| match a {
            Address::List(list) => list.iter().collect::<Vec<_>>(),
            Address::Group(groups) => groups.iter().flat_map(|g| g.addresses.iter()).collect(),
        })
        .unwrap_or_default()
        .into_iter()
        .filter_map(|a| a.address.as_deref().map(one_line))
        .filter(|a| !a.is_empty())
        .map(|a| a.to_lowercase())
        .collect();
    if from.len() > 1 && message.sender().is_none() {
        return Err(format!(
            "the `From` header lists {} addresses and there is no `Sender` header naming who sent it",
            from.len()
        ));
    }
    let auth_results = message
        .headers()
        .iter()
        .filter(|h| h.name == HeaderName::AuthenticationResults)
        .filter_map(|h| {
            message
                .raw_message
                .get(h.offset_start as usize..h.offset_end as usize)
        })
        .map(|raw| String::from_utf8_lossy(raw).replace(['\r', '\n'], " "))
        .collect();
    Ok(Origin {
        from,
        received: message.header_values(HeaderName::Received).next().is_some(),
        auth_results,
    })
}

/// The text and HTML bodies, joined; for a multipart message whose parts were not found,
/// the raw text of its body as the text body, with the multipart content type.
fn bodies(
    raw: &[u8],
    message: &mail_parser::Message<'_>,
) -> (Option<String>, Option<String>, Option<String>) {
    if let Some(content_type) = unsplit_multipart(message) {
        let body = message
            .parts
            .first()
            .and_then(|root| raw.get(root.offset_body as usize..root.offset_end as usize))
            .unwrap_or_default();
        let text = join_bodies(std::iter::once(String::from_utf8_lossy(body).as_ref()));
        return (text, None, Some(content_type));
    }
    let text = join_bodies(message.text_bodies().filter_map(|p| match &p.body {
        PartType::Text(t) => Some(t.as_ref()),
        _ => None,
    }));
    let html = join_bodies(message.html_bodies().filter_map(|p| match &p.body {
        PartType::Html(t) => Some(t.as_ref()),
        _ => None,
    }));
    (text, html, None)
}

/// The content type of a `multipart/*` message whose parts were not found (a wrong or
/// missing boundary): the parser then keeps the whole body as one part.
fn unsplit_multipart(message: &mail_parser::Message<'_>) -> Option<String> {
    let root = message.parts.first()?;
    let ct = root.content_type()?;
    if !ct.ctype().eq_ignore_ascii_case("multipart") || matches!(root.body, PartType::Multipart(_))
    {
        return None;
    }
    Some(
        one_line(
            &format!("{}/{}", ct.ctype(), ct.subtype().unwrap_or_default()).to_ascii_lowercase(),
        )
        .into_owned(),
    )
}

/// The header form of each address of a list or of the groups: `Name <addr>` or `addr`.
fn addresses(address: &Address<'_>) -> Vec<String> {
    match address {
        Address::List(list) => list.iter().filter_map(header_form).collect(),
        Address::Group(groups) => groups
            .iter()
            .flat_map(|g| g.addresses.iter().filter_map(header_form))
            .collect(),
    }
}

fn header_form(addr: &Addr<'_>) -> Option<String> {
    let address = addr
        .address
        .as_deref()
        .map(one_line)
        .filter(|a| !a.is_empty())?;
    match addr.name.as_deref().map(one_line) {
        Some(name) if !name.is_empty() && name != address => Some(format!("{name} <{address}>")),
        _ => Some(address.into_owned()),
    }
}

/// An id as stored: trimmed, in angle brackets; `None` when empty or not one token.
fn angle_id(id: &str) -> Option<String> {
    let id = one_line(id);
    let id = id
        .trim()
        .trim_start_matches('<')
        .trim_end_matches('>')
        .trim();
    if id.is_empty() || id.chars().any(char::is_whitespace) {
        None
    } else {
        Some(format!("<{id}>"))
    }
}

/// The ids of a message-id list header (In-Reply-To, References), in header order.
fn ids(value: &HeaderValue<'_>) -> Vec<String> {
    match value {
        HeaderValue::Text(t) => angle_id(t).into_iter().collect(),
        HeaderValue::TextList(list) => list.iter().filter_map(|t| angle_id(t)).collect(),
        _ => Vec::new(),
    }
}

fn utc(date: &mail_parser::DateTime) -> Option<DateTime<Utc>> {
    if !date.is_valid() {
        return None;
    }
    // A date the database cannot store (before 1970, after 9999) is no usable date.
    DateTime::from_timestamp(date.to_timestamp(), 0).filter(crate::dates::in_range)
}

/// The body parts joined by a line break, with CRLF line ends made LF; `None` when
/// there is no text at all.
fn join_bodies<'a>(parts: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut out = String::new();
    for (i, part) in parts.enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(part);
    }
    if out.is_empty() {
        None
    } else {
        Some(without_nul(&out.replace("\r\n", "\n")).into_owned())
    }
}

fn extension(content_type: &str) -> &str {
    match content_type.split_once('/').map_or("", |(_, sub)| sub) {
        "plain" => "txt",
        "jpeg" => "jpg",
        "rfc822" => "eml",
        sub if !sub.is_empty()
            && sub.len() <= 5
            && sub.bytes().all(|b| b.is_ascii_alphanumeric()) =>
        {
            sub
        }
        _ => "bin",
    }
}

/// `att-` and 24 hex digits of the hash of the Message-ID and the MIME part index: the
/// same file of the same message keeps its id across re-imports.
fn attachment_id(message_id: &str, part_id: u32) -> String {
    let mut hasher = Sha256::new();
    hasher.update(message_id.as_bytes());
    hasher.update(b"#");
    hasher.update(part_id.to_string().as_bytes());
    format!("att-{}", &hex(&hasher.finalize())[..24])
}

/// The subject of a thread started by a message: its subject without any leading
/// `Re:`, `Fwd:` or `Fw:` (repeated, any case, `Re[2]:` too).
pub fn thread_subject(subject: &str) -> String {
    let mut s = subject.trim();
    loop {
        let rest = ["fwd", "fw", "re"].iter().find_map(|prefix| {
            s.get(..prefix.len())
                .filter(|head| head.eq_ignore_ascii_case(prefix))
                .map(|_| &s[prefix.len()..])
        });
        let Some(mut rest) = rest else { break };
        if let Some(inner) = rest.strip_prefix('[') {
            match inner.find(']') {
                Some(end) if end > 0 && inner[..end].bytes().all(|b| b.is_ascii_digit()) => {
                    rest = &inner[end + 1..];
                }
                _ => break,
            }
        }
        let Some(rest) = rest.trim_start().strip_prefix(':') else {
            break;
        };
        s = rest.trim_start();
    }
    s.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_subject_strips_reply_and_forward_prefixes() {
        assert_eq!(thread_subject("Re: Fwd: RE: fw: Order A-1"), "Order A-1");
        assert_eq!(thread_subject("Re[2]: Order"), "Order");
        assert_eq!(thread_subject("Re : Order"), "Order");
        assert_eq!(thread_subject("Report: Q3"), "Report: Q3");
        assert_eq!(thread_subject("Fwd:"), "");
        assert_eq!(thread_subject("Refund"), "Refund");
        assert_eq!(thread_subject("Re[x]: Order"), "Re[x]: Order");
    }

    #[test]
    fn ids_are_stored_in_angle_brackets() {
        assert_eq!(angle_id(" a@b "), Some("<a@b>".to_owned()));
        assert_eq!(angle_id("<a@b>"), Some("<a@b>".to_owned()));
        assert_eq!(angle_id("a b"), None);
        assert_eq!(angle_id(""), None);
    }

    #[test]
    fn the_first_pass_dates_messages_as_the_full_parse_does() {
        let now: DateTime<Utc> = "2026-07-01T12:00:00Z".parse().unwrap();
        let parser = date_parser();
        for header in [
            "From: a@b\nDate: Mon, 5 Jan 2026 10:00:00 +0100\nSubject: x\n",
            "Subject: =?utf-8?q?caf=C3=A9?=\nReceived: from a by b; Tue, 6 Jan 2026 08:00:00 -0500\nDate: nonsense\n",
            "To: a@b\n",
            "Date: Mon, 5 Jan 2026 10:00:00 +0000\nDate: Tue, 6 Jan 2026 10:00:00 +0000\n",
            "Date: Mon, 5 Jan 0000 10:00:00 +0000\nReceived: from a by b; Tue, 6 Jan 2026 08:00:00 -0500\n",
            "Received: from a by b; Tue, 6 Jan 0000 08:00:00 -0500\nDate: 5 Jan 0049 10:00 +0000\n",
        ] {
            let full = MessageParser::default()
                .parse_headers(header.as_bytes())
                .map_or(now, |m| sent_at(&m, now).0);
            assert_eq!(
                header_date(&parser, header.as_bytes(), now),
                full,
                "{header}"
            );
        }
        assert_eq!(
            header_date(&parser, b"Date: Mon, 5 Jan 2026 10:00:00 +0100\n", now),
            "2026-01-05T09:00:00Z".parse::<DateTime<Utc>>().unwrap()
        );
    }

    #[test]
    fn extensions_of_unnamed_parts() {
        assert_eq!(extension("image/png"), "png");
        assert_eq!(extension("image/jpeg"), "jpg");
        assert_eq!(extension("text/plain"), "txt");
        assert_eq!(extension("application/vnd.ms-excel"), "bin");
    }
}
