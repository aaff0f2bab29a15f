//! The Dovecot harness of the IMAP tests (`common::dovecot`), proven with IMAP spoken by
//! hand over a `TcpStream`: an appended message is served byte for byte under the UID and
//! UIDVALIDITY the harness reports, IDLE announces a message appended meanwhile, flags
//! stored and `UID MOVE` show in `Dovecot::messages`, a wrong password gets `NO`,
//! `Dovecot::change_uidvalidity` renumbers a folder and keeps its messages,
//! `Dovecot::restart` keeps the mail, two instances run side by side, and mail sent over
//! SMTP to a private Postfix handing it over LMTP arrives in the recipient's INBOX.
//!
//! Skipped unless `PROTEGE_TEST_DOVECOT` names the `dovecot` binary (and, for the SMTP
//! test, `PROTEGE_TEST_POSTFIX` the `postfix` binary):
//!
//! ```text
//! PROTEGE_TEST_DOVECOT=$(scripts/dovecot-install) PROTEGE_TEST_POSTFIX=$(scripts/postfix-install) \
//!   cargo test -p protege-cli --test dovecot_harness
//! ```
#![cfg(unix)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

mod common;
use common::dovecot::Dovecot;
use common::postfix::{Options, Postfix};

/// The watchdog of every wait: far above what any step takes.
const WAIT: Duration = Duration::from_secs(30);

const USER: &str = "support@acme.test";
const PASSWORD: &str = "correct horse";

/// A message as a client writes it: CRLF line endings, a line starting with a dot, an empty
/// line and trailing spaces in the body.
const MESSAGE: &str = "From: Zoe <zoe@example.org>\r\n\
To: Support <support@acme.test>\r\n\
Subject: Order 1042\r\n\
Date: Tue, 10 Mar 2026 09:00:00 +0000\r\n\
Message-ID: <dovecot-1042@example.org>\r\n\
X-Folded: first part\r\n\
\tsecond part\r\n\
\r\n\
Hello,\r\n\
.a line that starts with a dot\r\n\
\r\n\
trailing spaces   \r\n\
-- \r\n\
Zoe\r\n";

/// [`MESSAGE`] about order `n`.
fn message(n: u32) -> String {
    MESSAGE
        .replace("Order 1042", &format!("Order {n}"))
        .replace("dovecot-1042@", &format!("dovecot-{n}@"))
}

/// A Dovecot with the user [`USER`], or `None` when the test is skipped.
fn dovecot() -> Option<Dovecot> {
    Dovecot::start_with_users(&[(USER, PASSWORD)])
}

/// An IMAP client session, one command at a time.
struct Imap {
    reader: BufReader<TcpStream>,
    stream: TcpStream,
    tag: u32,
}

impl Imap {
    /// Connects to `port` on 127.0.0.1 and reads the greeting.
    fn connect(port: u16) -> Imap {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to IMAP");
        stream.set_read_timeout(Some(WAIT)).unwrap();
        let mut imap = Imap {
            reader: BufReader::new(stream.try_clone().unwrap()),
            stream,
            tag: 0,
        };
        let greeting = imap.response().expect("a greeting");
        assert!(
            greeting.starts_with("* OK [CAPABILITY IMAP4rev1 "),
            "{greeting}"
        );
        assert!(greeting.ends_with("] Dovecot ready.\r\n"), "{greeting}");
        imap
    }

    /// Connects and logs in as [`USER`].
    fn login(port: u16) -> Imap {
        let mut imap = Imap::connect(port);
        imap.ok(&format!("LOGIN {USER} \"{PASSWORD}\""));
        imap
    }

    /// Reads one response, with its literals (`{N}` at a line's end) as they came; `None`
    /// when the server closed the connection.
    fn response_bytes(&mut self) -> Option<Vec<u8>> {
        let mut response = Vec::new();
        loop {
            let start = response.len();
            let n = self
                .reader
                .read_until(b'\n', &mut response)
                .expect("read a response");
            if n == 0 {
                assert!(response.is_empty(), "cut off: {response:?}");
                return None;
            }
            let line = &response[start..];
            let size = line
                .strip_suffix(b"}\r\n")
                .and_then(|l| {
                    l.iter()
                        .rposition(|&b| b == b'{')
                        .map(|open| &l[open + 1..])
                })
                .and_then(|digits| std::str::from_utf8(digits).ok()?.parse::<usize>().ok());
            let Some(size) = size else {
                return Some(response);
            };
            let start = response.len();
            response.resize(start + size, 0);
            self.reader
                .read_exact(&mut response[start..])
                .expect("read a literal");
        }
    }

    fn response(&mut self) -> Option<String> {
        self.response_bytes()
            .map(|bytes| String::from_utf8(bytes).expect("a UTF-8 response"))
    }

    /// Sends `TAG command` and returns the tag.
    fn send(&mut self, command: &str) -> String {
        self.tag += 1;
        let tag = format!("a{}", self.tag);
        self.stream
            .write_all(format!("{tag} {command}\r\n").as_bytes())
            .expect("send a command");
        tag
    }

    /// Sends `command` and reads up to its tagged answer: (untagged responses, tagged line).
    fn command(&mut self, command: &str) -> (Vec<Vec<u8>>, String) {
        let tag = self.send(command);
        let mut untagged = Vec::new();
        loop {
            let response = self
                .response_bytes()
                .unwrap_or_else(|| panic!("{command}: connection closed"));
            if response.starts_with(format!("{tag} ").as_bytes()) {
                return (untagged, String::from_utf8(response).unwrap());
            }
            untagged.push(response);
        }
    }

    /// [`Imap::command`], whose answer must be `OK`: the untagged responses as text.
    fn ok(&mut self, command: &str) -> Vec<String> {
        let (untagged, done) = self.command(command);
        assert!(
            done.starts_with(&format!("a{} OK ", self.tag)),
            "{command}: {done}"
        );
        untagged
            .into_iter()
            .map(|r| String::from_utf8(r).expect("UTF-8"))
            .collect()
    }

    /// The words of the `CAPABILITY` response.
    fn capabilities(&mut self) -> Vec<String> {
        let untagged = self.ok("CAPABILITY");
        assert_eq!(untagged.len(), 1, "{untagged:?}");
        untagged[0]
            .strip_prefix("* CAPABILITY ")
            .expect("a CAPABILITY response")
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    }

    /// `UID FETCH uid BODY.PEEK[]`: the message's bytes, checking the whole response.
    fn body(&mut self, seq: u32, uid: u32) -> Vec<u8> {
        let (untagged, done) = self.command(&format!("UID FETCH {uid} BODY.PEEK[]"));
        assert!(done.starts_with(&format!("a{} OK ", self.tag)), "{done}");
        assert_eq!(untagged.len(), 1, "{untagged:?}");
        let response = &untagged[0];
        let head = format!("* {seq} FETCH (UID {uid} BODY[] {{");
        assert!(
            response.starts_with(head.as_bytes()) && response.ends_with(b")\r\n"),
            "{}",
            String::from_utf8_lossy(response)
        );
        let rest = &response[head.len()..response.len() - 3];
        let close = rest.iter().position(|&b| b == b'}').unwrap();
        let size: usize = std::str::from_utf8(&rest[..close])
            .unwrap()
            .parse()
            .unwrap();
        let body = rest[close..].strip_prefix(b"}\r\n").unwrap();
        assert_eq!(body.len(), size);
        body.to_vec()
    }

    /// Reads responses until the server closes the connection: all of them.
    fn rest(&mut self) -> Vec<String> {
        let mut rest = Vec::new();
        while let Some(response) = self.response() {
            rest.push(response);
        }
        rest
    }
}

/// The SELECT responses that carry the mailbox's state, as text.
fn selected(untagged: &[String], exists: u32, uidvalidity: u32, uidnext: u32) {
    for expected in [
        format!("* {exists} EXISTS\r\n"),
        format!("* OK [UIDVALIDITY {uidvalidity}] UIDs valid\r\n"),
        format!("* OK [UIDNEXT {uidnext}] Predicted next UID\r\n"),
    ] {
        assert!(untagged.contains(&expected), "{expected:?} in {untagged:?}");
    }
}

fn flags(flags: &[&str]) -> Vec<String> {
    flags.iter().map(|f| f.to_string()).collect()
}

#[test]
fn an_appended_message_is_served_byte_for_byte() {
    let Some(dovecot) = dovecot() else {
        return;
    };
    let raw = message(1);
    assert_eq!(dovecot.append(USER, "INBOX", raw.as_bytes()), 1);
    let uidvalidity = dovecot.uidvalidity(USER, "INBOX");
    assert_eq!(dovecot.uidnext(USER, "INBOX"), 2);

    // The user name is compared in lower case.
    let mut imap = Imap::connect(dovecot.imap_port());
    imap.ok(&format!("LOGIN Support@Acme.TEST \"{PASSWORD}\""));
    let capabilities = imap.capabilities();
    for capability in ["IMAP4rev1", "IDLE", "MOVE", "UIDPLUS", "LITERAL+"] {
        assert!(
            capabilities.iter().any(|c| c == capability),
            "{capability} in {capabilities:?}"
        );
    }
    let mut folders = imap.ok("LIST \"\" \"*\"");
    folders.sort();
    assert_eq!(
        folders,
        [
            "* LIST (\\HasNoChildren \\Sent) \"/\" Sent\r\n",
            "* LIST (\\HasNoChildren) \"/\" INBOX\r\n",
            "* LIST (\\HasNoChildren) \"/\" Processed\r\n",
        ]
    );
    let untagged = imap.ok("SELECT INBOX");
    selected(&untagged, 1, uidvalidity, 2);
    assert_eq!(imap.body(1, 1), raw.as_bytes());
    let untagged = imap.ok("UID FETCH 1 (FLAGS)");
    assert_eq!(untagged, ["* 1 FETCH (UID 1 FLAGS (\\Recent))\r\n"]);
    let untagged = imap.ok("LOGOUT");
    assert_eq!(untagged, ["* BYE Logging out\r\n"]);

    // The harness's view: no flag (\Recent is left out), the same bytes.
    assert_eq!(
        dovecot.messages(USER, "INBOX"),
        [(1, flags(&[]), raw.clone().into_bytes())]
    );
    assert_eq!(dovecot.messages(USER, "Sent"), []);
    // Stored with LF line endings, one file in the Maildir.
    let maildir = dovecot.maildir(USER, "INBOX");
    let files: Vec<_> = ["new", "cur"]
        .iter()
        .flat_map(|sub| std::fs::read_dir(maildir.join(sub)).unwrap().flatten())
        .map(|entry| entry.path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(
        std::fs::read(&files[0]).unwrap(),
        raw.replace("\r\n", "\n").into_bytes()
    );
}

#[test]
fn a_wrong_password_gets_no() {
    let Some(dovecot) = dovecot() else {
        return;
    };
    let mut imap = Imap::connect(dovecot.imap_port());
    let (untagged, done) = imap.command(&format!("LOGIN {USER} \"wrong\""));
    assert!(untagged.is_empty());
    assert_eq!(
        done,
        "a1 NO [AUTHENTICATIONFAILED] Authentication failed.\r\n"
    );
    // An unknown user gets the same answer.
    let (_, done) = imap.command(&format!("LOGIN kim@acme.test \"{PASSWORD}\""));
    assert_eq!(
        done,
        "a2 NO [AUTHENTICATIONFAILED] Authentication failed.\r\n"
    );
    // The session goes on: the right password is accepted.
    imap.ok(&format!("LOGIN {USER} \"{PASSWORD}\""));
    // A user added meanwhile logs in at once.
    dovecot.add_user("kim@acme.test", "kim's password");
    let mut kim = Imap::connect(dovecot.imap_port());
    kim.ok("LOGIN kim@acme.test \"kim's password\"");
}

#[test]
fn idle_announces_a_message_appended_meanwhile() {
    let Some(dovecot) = dovecot() else {
        return;
    };
    assert_eq!(dovecot.append(USER, "INBOX", message(1).as_bytes()), 1);
    let mut imap = Imap::login(dovecot.imap_port());
    let untagged = imap.ok("SELECT INBOX");
    selected(&untagged, 1, dovecot.uidvalidity(USER, "INBOX"), 2);
    let tag = imap.send("IDLE");
    assert_eq!(imap.response().unwrap(), "+ idling\r\n");

    let second = message(2);
    assert_eq!(dovecot.append(USER, "INBOX", second.as_bytes()), 2);
    let started = Instant::now();
    loop {
        let response = imap.response().expect("an IDLE update");
        if response == "* 2 EXISTS\r\n" {
            break;
        }
        assert!(started.elapsed() < WAIT, "no EXISTS; last: {response}");
    }
    imap.stream.write_all(b"DONE\r\n").unwrap();
    loop {
        let response = imap.response().expect("the end of IDLE");
        if response.starts_with(&format!("{tag} ")) {
            assert!(
                response.starts_with(&format!("{tag} OK Idle completed")),
                "{response}"
            );
            break;
        }
        // Both messages are recent to the first session that selected INBOX.
        assert_eq!(response, "* 2 RECENT\r\n");
    }
    assert_eq!(imap.body(2, 2), second.as_bytes());
}

#[test]
fn stored_flags_and_moves_show_in_messages() {
    let Some(dovecot) = dovecot() else {
        return;
    };
    let (first, second) = (message(1), message(2));
    assert_eq!(dovecot.append(USER, "INBOX", first.as_bytes()), 1);
    assert_eq!(dovecot.append(USER, "INBOX", second.as_bytes()), 2);

    let mut imap = Imap::login(dovecot.imap_port());
    assert!(imap.capabilities().iter().any(|c| c == "MOVE"));
    imap.ok("SELECT INBOX");
    let untagged = imap.ok("UID STORE 1 +FLAGS (\\Seen)");
    assert_eq!(untagged, ["* 1 FETCH (UID 1 FLAGS (\\Seen \\Recent))\r\n"]);
    assert_eq!(
        dovecot.messages(USER, "INBOX"),
        [
            (1, flags(&["\\Seen"]), first.clone().into_bytes()),
            (2, flags(&[]), second.clone().into_bytes()),
        ]
    );

    let processed = dovecot.uidvalidity(USER, "Processed");
    let untagged = imap.ok("UID MOVE 2 Processed");
    assert_eq!(
        untagged[..2],
        [
            format!("* OK [COPYUID {processed} 2 1] Moved UIDs.\r\n"),
            "* 2 EXPUNGE\r\n".to_owned()
        ]
    );
    assert_eq!(
        dovecot.messages(USER, "INBOX"),
        [(1, flags(&["\\Seen"]), first.into_bytes())]
    );
    assert_eq!(
        dovecot.messages(USER, "Processed"),
        [(1, flags(&[]), second.into_bytes())]
    );
    assert_eq!(dovecot.uidnext(USER, "Processed"), 2);
}

#[test]
fn change_uidvalidity_renumbers_and_keeps_the_messages() {
    let Some(dovecot) = dovecot() else {
        return;
    };
    let (first, second) = (message(1), message(2));
    assert_eq!(dovecot.append(USER, "INBOX", first.as_bytes()), 1);
    assert_eq!(dovecot.append(USER, "INBOX", second.as_bytes()), 2);
    let old = dovecot.uidvalidity(USER, "INBOX");
    // A session with INBOX selected during the change.
    let mut before = Imap::login(dovecot.imap_port());
    before.ok("SELECT INBOX");
    before.ok("UID STORE 1 +FLAGS (\\Seen)");

    let new = dovecot.change_uidvalidity(USER, "INBOX");
    assert_eq!(new, old + 1);
    assert_eq!(dovecot.uidvalidity(USER, "INBOX"), new);
    assert_eq!(dovecot.uidnext(USER, "INBOX"), 5);
    assert_eq!(
        dovecot.messages(USER, "INBOX"),
        [
            (3, flags(&["\\Seen"]), first.clone().into_bytes()),
            (4, flags(&[]), second.into_bytes()),
        ]
    );

    // The selected session is told, and closed.
    before.send("NOOP");
    let rest = before.rest();
    assert!(
        rest.iter()
            .any(|r| r == "* BYE IMAP session state is inconsistent, please relogin.\r\n"),
        "{rest:?}"
    );

    let mut imap = Imap::login(dovecot.imap_port());
    let untagged = imap.ok("SELECT INBOX");
    selected(&untagged, 2, new, 5);
    assert_eq!(imap.body(1, 3), first.as_bytes());

    // An empty folder too; the parking folder is gone.
    let processed = dovecot.uidvalidity(USER, "Processed");
    assert_eq!(dovecot.change_uidvalidity(USER, "Processed"), processed + 1);
    assert_eq!(dovecot.uidnext(USER, "Processed"), 1);
    let mut folders = imap.ok("LIST \"\" \"*\"");
    folders.sort();
    assert_eq!(
        folders,
        [
            "* LIST (\\HasNoChildren \\Sent) \"/\" Sent\r\n",
            "* LIST (\\HasNoChildren) \"/\" INBOX\r\n",
            "* LIST (\\HasNoChildren) \"/\" Processed\r\n",
        ]
    );
}

#[test]
fn restart_keeps_the_mail_and_the_ports() {
    let Some(mut dovecot) = dovecot() else {
        return;
    };
    let first = message(1);
    assert_eq!(dovecot.append(USER, "INBOX", first.as_bytes()), 1);
    let uidvalidity = dovecot.uidvalidity(USER, "INBOX");
    let ports = (dovecot.imap_port(), dovecot.lmtp_port());
    let mut before = Imap::login(dovecot.imap_port());
    before.ok("SELECT INBOX");

    dovecot.restart();
    assert_eq!((dovecot.imap_port(), dovecot.lmtp_port()), ports);
    // The session of before the restart was told, and closed.
    assert_eq!(before.rest(), ["* BYE Server shutting down.\r\n"]);

    assert_eq!(
        dovecot.messages(USER, "INBOX"),
        [(1, flags(&[]), first.clone().into_bytes())]
    );
    assert_eq!(dovecot.uidvalidity(USER, "INBOX"), uidvalidity);
    let second = message(2);
    assert_eq!(dovecot.append(USER, "INBOX", second.as_bytes()), 2);
    let mut imap = Imap::login(dovecot.imap_port());
    let untagged = imap.ok("SELECT INBOX");
    selected(&untagged, 2, uidvalidity, 3);
    assert_eq!(imap.body(1, 1), first.as_bytes());
    assert_eq!(imap.body(2, 2), second.as_bytes());
    assert!(dovecot.log().contains("starting up for imap, lmtp"));
}

#[test]
fn two_instances_run_at_once() {
    let (Some(one), Some(two)) = (dovecot(), dovecot()) else {
        return;
    };
    let mut ports = vec![
        one.imap_port(),
        one.lmtp_port(),
        two.imap_port(),
        two.lmtp_port(),
    ];
    ports.sort();
    ports.dedup();
    assert_eq!(ports.len(), 4);
    let (first, second) = (message(1), message(2));
    assert_eq!(one.append(USER, "INBOX", first.as_bytes()), 1);
    assert_eq!(two.append(USER, "INBOX", second.as_bytes()), 1);
    assert_eq!(
        one.messages(USER, "INBOX"),
        [(1, flags(&[]), first.into_bytes())]
    );
    assert_eq!(
        two.messages(USER, "INBOX"),
        [(1, flags(&[]), second.into_bytes())]
    );
}

/// An SMTP transaction spoken by hand: each reply must have the code given.
fn smtp_send(port: u16, from: &str, to: &[&str], message: &str) {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to smtpd");
    stream.set_read_timeout(Some(WAIT)).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut stream = stream;
    let mut reply = |expected: u16| {
        let mut text = String::new();
        loop {
            let mut line = String::new();
            assert!(
                reader.read_line(&mut line).expect("read a reply") > 0,
                "{text}"
            );
            text.push_str(&line);
            if line.as_bytes().get(3) != Some(&b'-') {
                assert!(line.starts_with(&expected.to_string()), "{text}");
                return;
            }
        }
    };
    reply(220);
    let mut command = |line: &str, expected: u16| {
        stream.write_all(format!("{line}\r\n").as_bytes()).unwrap();
        reply(expected);
    };
    command("EHLO client.protege.test", 250);
    command(&format!("MAIL FROM:<{from}>"), 250);
    for rcpt in to {
        command(&format!("RCPT TO:<{rcpt}>"), 250);
    }
    command("DATA", 354);
    let mut data = String::new();
    for line in message.split_inclusive("\r\n") {
        if line.starts_with('.') {
            data.push('.');
        }
        data.push_str(line);
    }
    data.push('.');
    command(&data, 250);
    command("QUIT", 221);
}

/// Polls `messages` of `user`'s INBOX until it has `n` messages.
fn wait_for_inbox(dovecot: &Dovecot, postfix: &Postfix, user: &str, n: usize) -> Vec<Vec<u8>> {
    let deadline = Instant::now() + WAIT;
    loop {
        let messages = dovecot.messages(user, "INBOX");
        if messages.len() >= n {
            return messages.into_iter().map(|(_, _, raw)| raw).collect();
        }
        assert!(
            Instant::now() < deadline,
            "{} message(s) in {user}'s INBOX, {n} expected; Postfix's log:\n{}\nDovecot's log:\n{}",
            messages.len(),
            postfix.log(),
            dovecot.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn mail_sent_over_smtp_arrives_over_imap() {
    let Some(dovecot) =
        Dovecot::start_with_users(&[(USER, PASSWORD), ("zoe@example.org", "zoe's password")])
    else {
        return;
    };
    let Some(postfix) = Postfix::start_with_lmtp(Options::default(), dovecot.lmtp_port()) else {
        return;
    };
    // kim@acme.test is no user of Dovecot: accepted by Postfix, refused over LMTP, bounced.
    smtp_send(
        postfix.port(),
        "zoe@example.org",
        &[USER, "kim@acme.test"],
        MESSAGE,
    );
    let delivered = wait_for_inbox(&dovecot, &postfix, USER, 1);
    assert_eq!(delivered.len(), 1);
    let raw = String::from_utf8(delivered[0].clone()).unwrap();
    // The message as sent (dot-stuffing undone, CRLF as IMAP serves it) under the headers of
    // Dovecot's LMTP and Postfix's smtpd.
    let added = raw.strip_suffix(MESSAGE).unwrap_or_else(|| panic!("{raw}"));
    assert!(
        added.starts_with(
            "Return-Path: <zoe@example.org>\r\nDelivered-To: support@acme.test\r\nReceived: from mx.protege.test"
        ),
        "{raw}"
    );
    assert!(
        added.contains("\tby imap.protege.test with LMTP\r\n"),
        "{raw}"
    );
    assert!(
        added.contains("\tby mx.protege.test (Postfix) with ESMTP id "),
        "{raw}"
    );
    // Nothing went to virtual(8)'s Maildirs.
    assert!(postfix.delivered(USER).is_empty());

    // Over IMAP by hand.
    let mut imap = Imap::login(dovecot.imap_port());
    let untagged = imap.ok("SELECT INBOX");
    selected(&untagged, 1, dovecot.uidvalidity(USER, "INBOX"), 2);
    assert_eq!(imap.body(1, 1), raw.as_bytes());

    // The bounce for kim@acme.test reaches the sender, a user of Dovecot too.
    let bounces = wait_for_inbox(&dovecot, &postfix, "zoe@example.org", 1);
    assert_eq!(bounces.len(), 1);
    let bounce = String::from_utf8(bounces[0].clone()).unwrap();
    assert!(
        bounce.starts_with("Return-Path: <>\r\nDelivered-To: zoe@example.org\r\n"),
        "{bounce}"
    );
    for line in [
        "From: Mail Delivery System <MAILER-DAEMON@mx.protege.test>\r\n",
        "Subject: Undelivered Mail Returned to Sender\r\n",
        "Final-Recipient: rfc822; kim@acme.test\r\n",
        "Status: 5.1.1\r\n",
        "Diagnostic-Code: smtp; 550 5.1.1 <kim@acme.test> User doesn't exist:",
        "Message-ID: <dovecot-1042@example.org>\r\n",
    ] {
        assert!(bounce.contains(line), "{line:?} in {bounce}");
    }
}
