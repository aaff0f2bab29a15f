//! What a message's headers say about answering it (§17, the gate): whether a program sent
//! it, and which installation's agent it answers.
//!
//! Decided once, when the message is parsed; the agent's gate reads the result from the
//! job, never the headers again.

use mail_parser::{HeaderValue, Message, MessageParser, MimeHeaders, PartType};

/// The local parts of addresses that take no replies.
const NO_REPLY_LOCAL_PARTS: [&str; 4] = ["noreply", "no-reply", "donotreply", "do-not-reply"];

/// The senders that are programs whatever their headers say.
const DAEMON_LOCAL_PARTS: [&str; 2] = ["mailer-daemon", "postmaster"];

/// Why a message counts as sent by a program (RFC 3834 and the conventions of list and
/// vacation software), as the header that says so: `None` for a message a person wrote.
pub fn automated(message: &Message<'_>, from: &str) -> Option<String> {
    let local = from.split('@').next().unwrap_or_default();
    if DAEMON_LOCAL_PARTS.contains(&local) {
        return Some(format!("sender `{local}`"));
    }
    for header in message.headers() {
        let name = header.name.as_str();
        let value = text_of(&header.value);
        let lower = value.trim().to_ascii_lowercase();
        let found = match name.to_ascii_lowercase().as_str() {
            "auto-submitted" => !lower.is_empty() && first_token(&lower) != "no",
            "precedence" => matches!(first_token(&lower), "bulk" | "list" | "junk"),
            "list-id" | "list-unsubscribe" | "x-autoreply" | "x-autorespond" => true,
            "x-auto-response-suppress" => lower
                .split(',')
                .map(str::trim)
                .any(|v| matches!(v, "all" | "oof" | "autoreply")),
            "return-path" => return_path_empty(&value),
            "content-type" => lower.starts_with("multipart/report"),
            _ => false,
        };
        if found {
            let shown: String = crate::one_line(value.trim()).chars().take(80).collect();
            return Some(format!("{name}: {shown}"));
        }
    }
    None
}

/// The Message-IDs a delivery report (RFC 3464: `multipart/report;
/// report-type=delivery-status`) reports on: of the returned message (`message/rfc822`) or
/// its headers (`text/rfc822-headers`), bracketed, deduplicated. `None` for a message that
/// is no delivery report; an empty list for one that names no message.
pub fn bounce_of(message: &Message<'_>) -> Option<Vec<String>> {
    let root = message.root_part();
    let content_type = root.content_type()?;
    let report = content_type.ctype().eq_ignore_ascii_case("multipart")
        && content_type
            .subtype()
            .is_some_and(|s| s.eq_ignore_ascii_case("report"))
        && content_type
            .attribute("report-type")
            .is_some_and(|t| t.eq_ignore_ascii_case("delivery-status"));
    if !report {
        return None;
    }
    let mut ids: Vec<String> = Vec::new();
    for part in message.parts.iter().skip(1) {
        let id = match &part.body {
            PartType::Message(returned) => returned.message_id().map(str::to_owned),
            PartType::Text(text)
                if part.content_type().is_some_and(|ct| {
                    ct.ctype().eq_ignore_ascii_case("text")
                        && ct
                            .subtype()
                            .is_some_and(|s| s.eq_ignore_ascii_case("rfc822-headers"))
                }) =>
            {
                MessageParser::default()
                    .parse_headers(text.as_bytes())
                    .and_then(|headers| headers.message_id().map(str::to_owned))
            }
            _ => None,
        };
        if let Some(id) = id.map(|id| format!("<{}>", id.trim_matches(['<', '>'])))
            && !ids.contains(&id)
        {
            ids.push(id);
        }
    }
    Some(ids)
}

/// Whether `from` is an address that takes no replies (`noreply@…` and its spellings).
pub fn no_reply_address(from: &str) -> bool {
    let local = from.split('@').next().unwrap_or_default();
    NO_REPLY_LOCAL_PARTS.contains(&local)
}

/// The values of the message's `X-Protege-Loop` headers (the address of the persona whose
/// reply it is, or that it answers), trimmed and lowercased.
pub fn loop_marks(message: &Message<'_>) -> Vec<String> {
    message
        .headers()
        .iter()
        .filter(|h| h.name.as_str().eq_ignore_ascii_case("x-protege-loop"))
        .map(|h| text_of(&h.value).trim().to_ascii_lowercase())
        .filter(|v| !v.is_empty())
        .collect()
}

/// The first token of a header value, before a `;` or a space.
fn first_token(value: &str) -> &str {
    value
        .split([';', ' ', '\t'])
        .next()
        .unwrap_or_default()
        .trim()
}

/// Whether a `Return-Path` value is the null path `<>`.
fn return_path_empty(value: &str) -> bool {
    let v: String = value.chars().filter(|c| !c.is_whitespace()).collect();
    v.is_empty() || v == "<>"
}

/// A header's value as text, whatever the parser made of it.
fn text_of(value: &HeaderValue<'_>) -> String {
    match value {
        HeaderValue::Text(t) => t.to_string(),
        HeaderValue::TextList(list) => list.join(", "),
        HeaderValue::Address(a) => a
            .iter()
            .filter_map(|addr| addr.address())
            .collect::<Vec<_>>()
            .join(", "),
        HeaderValue::ContentType(ct) => match ct.subtype() {
            Some(sub) => format!("{}/{sub}", ct.ctype()),
            None => ct.ctype().to_owned(),
        },
        HeaderValue::Empty => String::new(),
        _ => String::from("?"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(headers: &str, from: &str) -> Option<String> {
        let raw = format!("From: {from}\r\nTo: s@acme.test\r\n{headers}Subject: x\r\n\r\nbody\r\n");
        let message = MessageParser::default().parse(raw.as_bytes()).unwrap();
        automated(&message, from)
    }

    #[test]
    fn automated_mail_is_named_by_its_header() {
        let cases = [
            (
                "Auto-Submitted: auto-replied\r\n",
                Some("Auto-Submitted: auto-replied"),
            ),
            ("Auto-Submitted: no\r\n", None),
            ("Precedence: bulk\r\n", Some("Precedence: bulk")),
            ("Precedence: first-class\r\n", None),
            (
                "List-Id: <news.acme.test>\r\n",
                Some("List-ID: news.acme.test"),
            ),
            ("X-Autoreply: yes\r\n", Some("X-Autoreply: yes")),
            (
                "X-Auto-Response-Suppress: DR, OOF\r\n",
                Some("X-Auto-Response-Suppress: DR, OOF"),
            ),
            ("X-Auto-Response-Suppress: DR\r\n", None),
            ("Return-Path: <>\r\n", Some("Return-Path: ")),
            (
                "Content-Type: multipart/report; report-type=delivery-status; boundary=x\r\n",
                Some("Content-Type: multipart/report"),
            ),
            ("", None),
        ];
        for (headers, expected) in cases {
            assert_eq!(
                verdict(headers, "kim@example.com").as_deref(),
                expected,
                "{headers}"
            );
        }
        assert_eq!(
            verdict("", "mailer-daemon@mx.example.com").as_deref(),
            Some("sender `mailer-daemon`")
        );
    }

    #[test]
    fn a_delivery_report_names_the_messages_it_returns() {
        let report = |returned: &str| {
            format!(
                "From: MAILER-DAEMON@mx.example.com\r\nTo: support@acme.test\r\n\
                 Subject: Undelivered Mail Returned to Sender\r\nMessage-ID: <dsn-1@mx.example.com>\r\n\
                 Content-Type: multipart/report; report-type=delivery-status; boundary=b\r\n\r\n\
                 --b\r\nContent-Type: text/plain\r\n\r\nI could not deliver it.\r\n\
                 --b\r\nContent-Type: message/delivery-status\r\n\r\n\
                 Reporting-MTA: dns; mx.example.com\r\n\r\nFinal-Recipient: rfc822; zoe@example.com\r\nAction: failed\r\nStatus: 5.1.1\r\n\
                 --b\r\n{returned}\r\n--b--\r\n"
            )
        };
        let ids = |raw: &str| bounce_of(&MessageParser::default().parse(raw.as_bytes()).unwrap());
        let headers = "Content-Type: text/rfc822-headers\r\n\r\nFrom: support@acme.test\r\n\
                       Message-ID: <reply-1@acme.test>\r\nSubject: Re: Order\r\n";
        assert_eq!(
            ids(&report(headers)),
            Some(vec!["<reply-1@acme.test>".to_owned()])
        );
        let whole = "Content-Type: message/rfc822\r\n\r\nFrom: support@acme.test\r\n\
                     Message-ID: <reply-2@acme.test>\r\nSubject: Re: Order\r\n\r\nHello\r\n";
        assert_eq!(
            ids(&report(whole)),
            Some(vec!["<reply-2@acme.test>".to_owned()])
        );
        // A report without the returned message names none; other mail is no report.
        assert_eq!(
            ids(&report("Content-Type: text/plain\r\n\r\nnothing")),
            Some(vec![])
        );
        let plain = "From: zoe@example.com\r\nSubject: Hi\r\n\r\nHello\r\n";
        assert_eq!(ids(plain), None);
    }

    #[test]
    fn no_reply_addresses_and_loop_marks() {
        assert!(no_reply_address("no-reply@shop.example"));
        assert!(no_reply_address("donotreply@shop.example"));
        assert!(!no_reply_address("kim@example.com"));
        let raw = "From: a@b.c\r\nX-Protege-Loop: Support@Acme.test\r\n\r\nx";
        let message = MessageParser::default().parse(raw.as_bytes()).unwrap();
        assert_eq!(loop_marks(&message), ["support@acme.test"]);
    }
}
