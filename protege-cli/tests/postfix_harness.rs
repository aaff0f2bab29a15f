//! The Postfix harness of the SMTP delivery tests (`common::postfix`), proven with SMTP
//! spoken by hand over a `TcpStream`: a message reaches the recipient's Maildir once and
//! `Postfix::as_sent` gives back the bytes sent (with LF line endings, as Postfix stores
//! them), any domain is delivered, a `refused*` recipient gets 550 at `RCPT TO`, a message
//! over the size limit gets 552, and two instances run side by side.
//!
//! Skipped unless `PROTEGE_TEST_POSTFIX` names the `postfix` binary:
//!
//! ```text
//! PROTEGE_TEST_POSTFIX=$(scripts/postfix-install) cargo test -p protege-cli --test postfix_harness
//! ```
#![cfg(unix)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpStream;
use std::time::Duration;

mod common;
use common::postfix::{Options, Postfix};

const WAIT: Duration = Duration::from_secs(20);

/// A message as a client writes it: CRLF line endings, a line starting with a dot (stuffed
/// on the wire), an empty line and trailing spaces in the body.
const MESSAGE: &str = "From: Zoe <zoe@example.org>\r\n\
To: Kim <kim@example.com>\r\n\
Subject: Order 1042\r\n\
Date: Tue, 10 Mar 2026 09:00:00 +0000\r\n\
Message-ID: <harness-1@example.org>\r\n\
X-Folded: first part\r\n\
\tsecond part\r\n\
\r\n\
Hello Kim,\r\n\
.a line that starts with a dot\r\n\
..and one with two\r\n\
\r\n\
trailing spaces   \r\n\
-- \r\n\
Zoe\r\n";

/// An SMTP client session, one command at a time.
struct Smtp {
    reader: BufReader<TcpStream>,
    stream: TcpStream,
}

impl Smtp {
    /// Connects to `port` on 127.0.0.1 and reads the 220 greeting.
    fn connect(port: u16) -> Smtp {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to smtpd");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut smtp = Smtp {
            reader: BufReader::new(stream.try_clone().unwrap()),
            stream,
        };
        let (code, greeting) = smtp.reply();
        assert_eq!(code, 220, "{greeting}");
        smtp
    }

    /// Reads one reply, all of its lines: (code, text of the lines).
    fn reply(&mut self) -> (u16, String) {
        let mut text = String::new();
        loop {
            let mut line = String::new();
            let n = self.reader.read_line(&mut line).expect("read a reply");
            assert!(n > 0, "smtpd closed the connection; so far: {text}");
            text.push_str(&line);
            // "250-..." continues, "250 ..." ends the reply.
            if line.as_bytes().get(3) != Some(&b'-') {
                let code = line[..3]
                    .parse()
                    .unwrap_or_else(|_| panic!("a reply: {line}"));
                return (code, text);
            }
        }
    }

    /// Sends `command` (CRLF added) and reads the reply.
    fn command(&mut self, command: &str) -> (u16, String) {
        self.stream
            .write_all(format!("{command}\r\n").as_bytes())
            .expect("send a command");
        self.reply()
    }

    /// Sends `command` and asserts the reply's code.
    fn expect(&mut self, command: &str, code: u16) -> String {
        let (got, text) = self.command(command);
        assert_eq!(got, code, "{command}: {text}");
        text
    }

    /// After `DATA` and its 354: sends `message` dot-stuffed, then the final `.`, and reads
    /// the reply.
    fn data(&mut self, message: &str) -> (u16, String) {
        let mut wire = Vec::new();
        for line in message.split_inclusive("\r\n") {
            if line.starts_with('.') {
                wire.push(b'.');
            }
            wire.extend_from_slice(line.as_bytes());
        }
        wire.extend_from_slice(b".\r\n");
        self.stream.write_all(&wire).expect("send the message");
        self.reply()
    }

    /// A whole transaction: `EHLO`, `MAIL FROM`, each `RCPT TO` (each must be accepted),
    /// `DATA`, the message (must be accepted), `QUIT`.
    fn send(port: u16, from: &str, to: &[&str], message: &str) {
        let mut smtp = Smtp::connect(port);
        smtp.expect("EHLO client.protege.test", 250);
        smtp.expect(&format!("MAIL FROM:<{from}>"), 250);
        for rcpt in to {
            smtp.expect(&format!("RCPT TO:<{rcpt}>"), 250);
        }
        smtp.expect("DATA", 354);
        let (code, text) = smtp.data(message);
        assert_eq!(code, 250, "end of DATA: {text}");
        smtp.expect("QUIT", 221);
    }
}

/// Waits until Postfix's log shows `n` deliveries to `address` (`status=sent`), then
/// asserts there are exactly `n`.
fn assert_sent_times(postfix: &Postfix, address: &str, n: usize) {
    let needle = format!("to=<{address}>");
    let count = || {
        postfix
            .log()
            .lines()
            .filter(|line| line.contains(&needle) && line.contains("status=sent"))
            .count()
    };
    let deadline = std::time::Instant::now() + WAIT;
    while count() < n && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(count(), n, "deliveries to {address}:\n{}", postfix.log());
}

#[test]
fn a_message_arrives_once_as_sent() {
    let Some(postfix) = Postfix::start() else {
        return;
    };
    Smtp::send(
        postfix.port(),
        "zoe@example.org",
        &["kim@example.com"],
        MESSAGE,
    );
    let delivered = postfix.wait_for("kim@example.com", 1, WAIT);
    // Exactly once: the log has one delivery, the queue ran, and no second file came.
    assert_sent_times(&postfix, "kim@example.com", 1);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(postfix.delivered("kim@example.com"), delivered);
    assert_eq!(delivered.len(), 1, "{}", postfix.log());

    let raw = String::from_utf8(delivered[0].clone()).expect("UTF-8");
    // Postfix's own headers on top, then the message with LF line endings.
    assert!(
        raw.starts_with("Return-Path: <zoe@example.org>\nX-Original-To: kim@example.com\nDelivered-To: kim@example.com\nReceived: from "),
        "{raw}"
    );
    assert!(
        !raw.contains('\r'),
        "Postfix stores LF line endings: {raw:?}"
    );
    assert_eq!(
        String::from_utf8(Postfix::as_sent(&delivered[0])).unwrap(),
        MESSAGE.replace("\r\n", "\n"),
        "{raw}"
    );
    // Nothing for anyone else.
    assert!(postfix.delivered("zoe@example.org").is_empty());
}

#[test]
fn any_domain_is_delivered_to_its_own_maildir() {
    let Some(postfix) = Postfix::start() else {
        return;
    };
    let to = [
        "kim@example.org",
        "support@acme.test",
        "Mia.Rossi@Another.Example",
    ];
    let message = MESSAGE.replace("Order 1042", "Order 7");
    Smtp::send(postfix.port(), "zoe@example.org", &to, &message);
    for address in to {
        let delivered = postfix.wait_for(address, 1, WAIT);
        assert_eq!(delivered.len(), 1, "{address}");
        assert_eq!(
            Postfix::as_sent(&delivered[0]),
            message.replace("\r\n", "\n").into_bytes(),
            "{address}"
        );
    }
    // The address's case does not matter to Postfix, nor to `delivered`.
    assert_eq!(postfix.delivered("mia.rossi@another.example").len(), 1);
    assert!(postfix.delivered("kim@example.com").is_empty());

    // A second message comes after the first.
    let second = MESSAGE.replace("Order 1042", "Order 8");
    Smtp::send(
        postfix.port(),
        "zoe@example.org",
        &["kim@example.org"],
        &second,
    );
    let delivered = postfix.wait_for("kim@example.org", 2, WAIT);
    assert_eq!(
        delivered
            .iter()
            .map(|raw| Postfix::as_sent(raw))
            .collect::<Vec<_>>(),
        [message, second].map(|m| m.replace("\r\n", "\n").into_bytes())
    );
}

#[test]
fn a_refused_recipient_gets_550_at_rcpt_to() {
    let Some(postfix) = Postfix::start() else {
        return;
    };
    let mut smtp = Smtp::connect(postfix.port());
    smtp.expect("EHLO client.protege.test", 250);
    smtp.expect("MAIL FROM:<zoe@example.org>", 250);
    let text = smtp.expect("RCPT TO:<refused@example.com>", 550);
    assert!(
        text.starts_with("550 5.1.1 <refused@example.com>:") && text.contains("User unknown"),
        "{text}"
    );
    let text = smtp.expect("RCPT TO:<Refused-Kim@acme.test>", 550);
    assert!(text.contains("5.1.1"), "{text}");
    // The other recipients of the transaction are accepted and get the message.
    smtp.expect("RCPT TO:<kim@example.com>", 250);
    smtp.expect("DATA", 354);
    let (code, text) = smtp.data(MESSAGE);
    assert_eq!(code, 250, "{text}");
    smtp.expect("QUIT", 221);
    assert_eq!(postfix.wait_for("kim@example.com", 1, WAIT).len(), 1);
    assert!(postfix.delivered("refused@example.com").is_empty());
    assert!(postfix.delivered("refused-kim@acme.test").is_empty());
}

#[test]
fn a_message_over_the_size_limit_gets_552() {
    let Some(postfix) = Postfix::start_with(Options {
        message_size_limit: Some(4096),
    }) else {
        return;
    };
    let big = format!("{MESSAGE}{}", "0123456789 abcdefghij\r\n".repeat(400));
    assert!(big.len() > 4096);

    let mut smtp = Smtp::connect(postfix.port());
    let ehlo = smtp.expect("EHLO client.protege.test", 250);
    assert!(ehlo.contains("250-SIZE 4096\r\n"), "{ehlo}");
    // Declared with SIZE=: refused at MAIL FROM.
    let text = smtp.expect(
        &format!("MAIL FROM:<zoe@example.org> SIZE={}", big.len()),
        552,
    );
    assert!(
        text.starts_with("552 5.3.4 Message size exceeds fixed limit"),
        "{text}"
    );
    // Not declared: refused after the final dot. (smtpd keeps the declared size until
    // RSET: a MAIL FROM without SIZE= right after would get 552 too.)
    smtp.expect("RSET", 250);
    smtp.expect("MAIL FROM:<zoe@example.org>", 250);
    smtp.expect("RCPT TO:<kim@example.com>", 250);
    smtp.expect("DATA", 354);
    let (code, text) = smtp.data(&big);
    assert_eq!(code, 552, "{text}");
    assert!(
        text.starts_with("552 5.3.4 Error: message file too big"),
        "{text}"
    );
    // A message under the limit still goes through.
    smtp.expect("MAIL FROM:<zoe@example.org>", 250);
    smtp.expect("RCPT TO:<kim@example.com>", 250);
    smtp.expect("DATA", 354);
    let (code, text) = smtp.data(MESSAGE);
    assert_eq!(code, 250, "{text}");
    smtp.expect("QUIT", 221);
    let delivered = postfix.wait_for("kim@example.com", 1, WAIT);
    assert_sent_times(&postfix, "kim@example.com", 1);
    assert_eq!(
        Postfix::as_sent(&delivered[0]),
        MESSAGE.replace("\r\n", "\n").into_bytes()
    );
}

#[test]
fn two_instances_run_at_once() {
    let (Some(first), Some(second)) = (Postfix::start(), Postfix::start()) else {
        return;
    };
    assert_ne!(first.port(), second.port());
    let one = MESSAGE.replace("Order 1042", "For the first");
    let two = MESSAGE.replace("Order 1042", "For the second");
    Smtp::send(first.port(), "zoe@example.org", &["kim@example.com"], &one);
    Smtp::send(second.port(), "zoe@example.org", &["kim@example.com"], &two);
    let got_one = first.wait_for("kim@example.com", 1, WAIT);
    let got_two = second.wait_for("kim@example.com", 1, WAIT);
    assert_eq!(
        Postfix::as_sent(&got_one[0]),
        one.replace("\r\n", "\n").into_bytes()
    );
    assert_eq!(
        Postfix::as_sent(&got_two[0]),
        two.replace("\r\n", "\n").into_bytes()
    );
    assert_sent_times(&first, "kim@example.com", 1);
    assert_sent_times(&second, "kim@example.com", 1);
}

/// `as_sent` without a server: the delivery agent's headers and smtpd's one `Received:` go,
/// a `Received:` header of the sender's own stays.
#[test]
fn as_sent_removes_only_the_headers_postfix_added() {
    let raw = b"Return-Path: <zoe@example.org>\n\
X-Original-To: kim@example.com\n\
Delivered-To: kim@example.com\n\
Received: from client.protege.test (unknown [127.0.0.1])\n\
\tby mx.protege.test (Postfix) with ESMTP id 96AB7991095\n\
\tfor <kim@example.com>; Sun,  6 Dec 2026 02:39:09 +0000 (UTC)\n\
Received: from the sender's own relay\n\
From: Zoe <zoe@example.org>\n\
\n\
Hi\n";
    assert_eq!(
        Postfix::as_sent(raw),
        b"Received: from the sender's own relay\nFrom: Zoe <zoe@example.org>\n\nHi\n"
    );
    // A message without Postfix's headers is left as it is.
    assert_eq!(
        Postfix::as_sent(b"From: a@b\n\nbody\n"),
        b"From: a@b\n\nbody\n"
    );
}
