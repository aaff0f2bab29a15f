//! The whole loop through real mail servers (§19): a private Postfix hands mail to a private
//! Dovecot over LMTP; customers' mail is sent over SMTP with Python's `smtplib`; two
//! `protege serve --agent` processes read the support mailbox over IMAP, run each message
//! against a provider stand-in (every request and answer checked with `wirecheck` when
//! `PROTEGE_WIRECHECK` is set) and an `http` tool, and send one reply per message through
//! Postfix, which Dovecot delivers to the customer's mailbox, threaded. Meanwhile one serve
//! process is killed and started again, Dovecot is restarted, and the mailbox's
//! `UIDVALIDITY` changes; a customer answers a reply and the next request replays the first
//! run's tool round; the digest fires once per slot with both processes running. A serve
//! process is also stopped at each named point of §19 (`PROTEGE_FAULT`; the test build has
//! the `fault-injection` feature) and another finishes its work. The report counts messages, replies, identical copies
//! and lost messages (0), and the latency from SMTP submission to the reply's arrival.
//!
//! Skipped unless `PROTEGE_TEST_POSTFIX` and `PROTEGE_TEST_DOVECOT` name the binaries:
//!
//! ```text
//! PROTEGE_TEST_POSTFIX=$(scripts/postfix-install) PROTEGE_TEST_DOVECOT=$(scripts/dovecot-install) \
//!   cargo test -p protege-cli --test mail_loop -- --nocapture
//! ```
//!
//! `PROTEGE_MAIL_LOOP_MESSAGES` sets how many customers write (default 40).
#![cfg(unix)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use protege::agent::standin::{self, Scripted, StandIn};
use serde_json::{Value, json};

mod common;
use common::dovecot::Dovecot;
use common::postfix::{Options, Postfix};
use common::server::{Server, TOKEN, protege};

const SUPPORT: &str = "support@acme.test";
const TEAM: &str = "team@acme.test";
const PASSWORD: &str = "imap-pass-0123";
const KEY: &str = "sk-test-loop-key-0123456789";
const SECRET: &str = "tool-secret-0123456789abcdef";

/// A generous watchdog for replies to arrive.
const WAIT: Duration = Duration::from_secs(240);

/// The customers' addresses: `customerN@example.org`.
fn customer(n: usize) -> String {
    format!("customer{n}@example.org")
}

/// The provider: a tool call first, then a reply once the request holds the call's result;
/// a digest (a request without tools) gets its text at once.
fn respond(request: &Value) -> Scripted {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let answered = last["content"]
        .as_array()
        .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"));
    if request["tools"].as_array().is_none_or(Vec::is_empty) {
        return Scripted::Json(200, standin::anthropic_text("Two threads wait."));
    }
    if answered {
        Scripted::Json(
            200,
            standin::anthropic_text("Your order A-1042 has shipped."),
        )
    } else {
        // Each call has an id of its own, as a provider gives it.
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut answer =
            standin::anthropic_tool_use(&[("lookup_order", json!({"order": "A-1042"}))]);
        answer["content"][0]["id"] = json!(format!("toolu_01Loop{n:018}"));
        Scripted::Json(200, answer)
    }
}

/// The `lookup_order` tool: answers every call.
async fn tool_server() -> String {
    let app = axum::Router::new().route(
        "/lookup",
        axum::routing::post(|| async { r#"{"order":"A-1042","status":"shipped"}"# }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// The app root: `support` reads its mailbox on `dovecot`, sends through `postfix`, and
/// runs a digest every minute for the team.
fn root(dovecot: &Dovecot, postfix: &Postfix, provider: &str, tools: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    let persona = format!(
        r#"addresses = ["{SUPPORT}"]

[model]
provider = "anthropic"
name = "claude-sonnet-4-5"
max_tokens = 1024
base_url = "{provider}"
api_key_env = "PROTEGE_TEST_AGENT_KEY"

[agent]
unauthenticated = "send"
max_replies_per_thread_per_day = 100
max_replies_per_correspondent_per_day = 100
max_replies_per_day = 100000

[inbox]
imap = "imap://127.0.0.1:{imap}/INBOX"
tls = "none"
user = "{SUPPORT}"
password_env = "PROTEGE_TEST_IMAP_PASSWORD"

[outbox]
smtp = "smtp://127.0.0.1:{smtp}"
tls = "none"

[[tools]]
name = "lookup_order"
description = "Find an order"
input_schema = {{ type = "object", properties = {{ order = {{ type = "string" }} }}, required = ["order"] }}
http = {{ url = "{tools}/lookup", secret_env = "PROTEGE_TEST_TOOL_SECRET" }}

[[message_resolvers]]
use = "LoadText"
template = "You are Acme's support agent."

[[message_resolvers]]
use = "ThreadHistory"

[[responsibilities]]
name = "digest"
schedule = "* * * * *"
to = ["{TEAM}"]
subject = "Open threads"

[[responsibility_resolvers]]
use = "OpenThreads"
"#,
        imap = dovecot.imap_port(),
        smtp = postfix.port(),
    );
    std::fs::write(root.path().join("personas/support.toml"), persona).unwrap();
    root
}

/// `protege serve --agent` on `db`, with short leases so a dead process's work moves on
/// within seconds; `fault` names a `PROTEGE_FAULT` point.
fn serve(root: &Path, db: &str, fault: Option<&str>) -> Server {
    let mut cmd = protege(root, db);
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--agent"])
        .args([
            "--job-lease",
            "3",
            "--inbox-lease",
            "3",
            "--delivery-lease",
            "3",
        ])
        .env("PROTEGE_SERVE_TOKEN", TOKEN)
        .env("PROTEGE_TEST_AGENT_KEY", KEY)
        .env("PROTEGE_TEST_TOOL_SECRET", SECRET)
        .env("PROTEGE_TEST_IMAP_PASSWORD", PASSWORD);
    if let Some(point) = fault {
        cmd.env(protege::FAULT_ENV, point);
    }
    Server::spawn(cmd)
}

/// A customer's mail, its Message-ID `<loop-ID@example.org>`.
fn mail(n: usize, id: &str, headers: &str) -> String {
    let date = chrono::Utc::now().to_rfc2822();
    format!(
        "From: Customer {n} <{from}>\r\nTo: Acme Support <{SUPPORT}>\r\nSubject: Where is my order?\r\nDate: {date}\r\nMessage-ID: <{id}@example.org>\r\n{headers}\r\nWhere is order A-1042?\r\n",
        from = customer(n)
    )
}

/// Sends `mails` (`(from, raw)`) over SMTP with Python's `smtplib`, one every `gap`; the
/// submission time of each (Unix seconds, as Python read its clock after the server's 250).
fn submit(port: u16, mails: &[(String, String)], gap: Duration) -> Vec<f64> {
    const SCRIPT: &str = r#"
import json, smtplib, sys, time
port, gap = int(sys.argv[1]), float(sys.argv[2])
out = []
for sender, raw in json.load(sys.stdin):
    with smtplib.SMTP("127.0.0.1", port, timeout=30) as smtp:
        smtp.sendmail(sender, ["support@acme.test"], raw.encode())
    out.append(time.time())
    time.sleep(gap)
print(json.dumps(out))
"#;
    let mut child = Command::new("python3")
        .args([
            "-c",
            SCRIPT,
            &port.to_string(),
            &gap.as_secs_f64().to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(mails).unwrap().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "smtplib failed");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A header's value in a raw message (unfolded, first occurrence), if any.
fn header(raw: &[u8], name: &str) -> Option<String> {
    let text = String::from_utf8_lossy(raw);
    let head = text.split("\r\n\r\n").next().unwrap_or_default();
    let head = head.split("\n\n").next().unwrap_or_default();
    let mut value: Option<String> = None;
    for line in head.lines() {
        if let Some(v) = value.as_mut() {
            if line.starts_with([' ', '\t']) {
                v.push(' ');
                v.push_str(line.trim());
                continue;
            }
            break;
        }
        if let Some((n, v)) = line.split_once(':')
            && n.eq_ignore_ascii_case(name)
        {
            value = Some(v.trim().to_owned());
        }
    }
    value
}

/// What arrived in the customers' mailboxes: each reply by its Message-ID, with the
/// trigger it answers (In-Reply-To), how many copies, and when the first was delivered.
#[derive(Debug, Default)]
struct Arrivals {
    /// Message-ID → (In-Reply-To, copies, delivered at, Unix seconds).
    replies: BTreeMap<String, (String, usize, f64)>,
}

impl Arrivals {
    /// Reads every customer's INBOX once, from its Maildir: Dovecot names each file by the
    /// time it was delivered (`SECONDS.MMICROSECONDSP…`), read without a login.
    fn poll(&mut self, dovecot: &Dovecot, customers: usize) {
        let mut copies: BTreeMap<String, (String, usize, f64)> = BTreeMap::new();
        for n in 0..customers {
            let maildir = dovecot.maildir(&customer(n), "INBOX");
            for sub in ["new", "cur"] {
                let Ok(entries) = std::fs::read_dir(maildir.join(sub)) else {
                    continue;
                };
                for entry in entries.flatten() {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    let Ok(raw) = std::fs::read(entry.path()) else {
                        continue;
                    };
                    let id = header(&raw, "Message-ID").unwrap_or_default();
                    let parent = header(&raw, "In-Reply-To").unwrap_or_default();
                    let at = delivered_at(&name);
                    let entry = copies.entry(id).or_insert((parent, 0, at));
                    entry.1 += 1;
                    entry.2 = entry.2.min(at);
                }
            }
        }
        self.replies = copies;
    }

    /// The triggers answered, each with how many distinct replies.
    fn answered(&self) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        for (parent, _, _) in self.replies.values() {
            *out.entry(parent.clone()).or_insert(0) += 1;
        }
        out
    }
}

/// The delivery time in a Maildir file name of Dovecot's, `1765020000.M123456P789.host…`.
fn delivered_at(name: &str) -> f64 {
    let (secs, rest) = name.split_once(".M").unwrap_or((name, ""));
    let micros: String = rest.chars().take_while(char::is_ascii_digit).collect();
    secs.parse::<f64>().unwrap_or(f64::MAX) + micros.parse::<f64>().unwrap_or(0.0) / 1e6
}

/// Waits until every trigger of `ids` has a reply.
fn wait_for_replies(
    dovecot: &Dovecot,
    db: &str,
    customers: usize,
    arrivals: &mut Arrivals,
    ids: &[String],
) {
    let deadline = Instant::now() + WAIT;
    loop {
        arrivals.poll(dovecot, customers);
        let answered = arrivals.answered();
        let missing: Vec<&String> = ids
            .iter()
            .filter(|id| !answered.contains_key(*id))
            .collect();
        if missing.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {} messages unanswered after {WAIT:?}: {missing:?}; what the database holds of them:\n{}\nDovecot's log:\n{}",
            missing.len(),
            ids.len(),
            explain(db, &missing),
            dovecot.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What the SQLite database `db` holds of the messages `ids`: each one's row, its jobs
/// and the outbox rows of its replies, one line each.
fn explain(db: &str, ids: &[&String]) -> String {
    let path = db
        .trim_start_matches("sqlite://")
        .split('?')
        .next()
        .unwrap_or_default();
    let conn = match rusqlite::Connection::open(path) {
        Ok(conn) => conn,
        Err(e) => return format!("the database does not open: {e}"),
    };
    let rows = |sql: &str, id: &str| -> String {
        let mut statement = match conn.prepare(sql) {
            Ok(statement) => statement,
            Err(e) => return format!("  {sql}: {e}"),
        };
        let width = statement.column_count();
        let lines = statement.query_map([id], |row| {
            let cells: Vec<String> = (0..width)
                .map(|i| match row.get_ref(i) {
                    Ok(rusqlite::types::ValueRef::Null) => "NULL".to_owned(),
                    Ok(rusqlite::types::ValueRef::Integer(n)) => n.to_string(),
                    Ok(rusqlite::types::ValueRef::Text(t)) => {
                        String::from_utf8_lossy(t).into_owned()
                    }
                    Ok(other) => format!("{other:?}"),
                    Err(e) => e.to_string(),
                })
                .collect();
            Ok(format!("  {}", cells.join(" | ")))
        });
        match lines {
            Ok(lines) => lines
                .map(|l| l.unwrap_or_else(|e| e.to_string()))
                .collect::<Vec<_>>()
                .join("\n"),
            Err(e) => format!("  {sql}: {e}"),
        }
    };
    let mut out = String::new();
    for id in ids {
        out.push_str(&format!("{id}:\n"));
        out.push_str(&rows(
            "SELECT id, email_thread_id, from_address, created_at FROM messages WHERE message_id = ?1",
            id,
        ));
        out.push_str("\n jobs:\n");
        out.push_str(&rows(
            "SELECT j.id, j.state, j.reason, j.gate_reason, j.run_id, j.attempts, j.error FROM agent_jobs j \
             JOIN messages m ON m.id = j.message_id WHERE m.message_id = ?1",
            id,
        ));
        out.push_str("\n outbox:\n");
        out.push_str(&rows(
            "SELECT o.id, o.state, o.reason, o.recipients, o.attempts, o.smtp_reply, o.sent_at FROM outbox o \
             JOIN messages m ON m.id = o.message_id WHERE m.message_id = ?1",
            id,
        ));
        out.push('\n');
    }
    out
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn customers_mail_is_answered_once_each_through_postfix_and_dovecot() {
    let Some(dovecot) = Dovecot::start() else {
        return;
    };
    let mut dovecot = dovecot;
    let Some(postfix) = Postfix::start_with_lmtp(Options::default(), dovecot.lmtp_port()) else {
        return;
    };
    let messages: usize = std::env::var("PROTEGE_MAIL_LOOP_MESSAGES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(40);
    for user in [SUPPORT, TEAM] {
        dovecot.add_user(user, PASSWORD);
    }
    for n in 0..messages {
        dovecot.add_user(&customer(n), PASSWORD);
    }
    let provider = StandIn::start([]).await.unwrap().respond_with(respond);
    let tools = tool_server().await;
    let root = root(&dovecot, &postfix, &provider.base_url(), &tools);
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let migrate = protege(root.path(), &db)
        .args(["db", "migrate"])
        .output()
        .unwrap();
    assert!(migrate.status.success());
    let mut a = serve(root.path(), &db, None);
    let b = serve(root.path(), &db, None);
    // The mailbox's first sync, by whichever process reads it, before any mail is sent.
    wait_until_read(&[&a, &b]).await;

    let ids: Vec<String> = (0..messages)
        .map(|n| format!("<loop-{n}@example.org>"))
        .collect();
    let mails: Vec<(String, String)> = (0..messages)
        .map(|n| (customer(n), mail(n, &format!("loop-{n}"), "")))
        .collect();
    let gap = Duration::from_millis(200);
    let half = messages / 2;
    let mut arrivals = Arrivals::default();
    let start = Instant::now();
    let mut submitted = submit(postfix.port(), &mails[..half], gap);
    // The first half is fetched before the faults. The harness changes UIDVALIDITY by
    // parking the folder's messages elsewhere and moving them back, so a sync can complete
    // on the emptied folder; a message not stored by then would, by §19's rule, be re-read
    // without a job (its INTERNALDATE is before that sync). Killing a process while it
    // stores is the fault test's `inbox.after_store`.
    let stored =
        "SELECT COUNT(*) FROM messages WHERE message_id LIKE '<loop-%' AND direction = 'inbound'";
    let deadline = Instant::now() + Duration::from_secs(60);
    while count(&db, stored).await < half as i64 {
        assert!(
            Instant::now() < deadline,
            "the first {half} messages were not fetched in 60 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The faults: a serve process dies and comes back, Dovecot restarts, and the support
    // folder's UIDVALIDITY changes, all while replies are under way.
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    dovecot.restart();
    dovecot.change_uidvalidity(SUPPORT, "INBOX");
    a = serve(root.path(), &db, None);
    submitted.extend(submit(postfix.port(), &mails[half..], gap));
    wait_for_replies(&dovecot, &db, messages, &mut arrivals, &ids);
    let elapsed = start.elapsed();

    // One distinct reply per message, none lost; an identical copy is counted apart.
    let answered = arrivals.answered();
    let lost = ids.iter().filter(|id| !answered.contains_key(*id)).count();
    let twice: Vec<(&String, &usize)> = answered.iter().filter(|(_, n)| **n != 1).collect();
    assert_eq!((lost, twice), (0, vec![]));
    let copies: usize = arrivals.replies.values().map(|(_, n, _)| n - 1).sum();
    // Latency: from Python's clock after the 250 to Dovecot's delivery time of the reply.
    let mut latencies: Vec<f64> = Vec::new();
    for (n, id) in ids.iter().enumerate() {
        let (_, _, delivered) = arrivals
            .replies
            .values()
            .find(|(parent, _, _)| parent == id)
            .unwrap();
        latencies.push(delivered - submitted[n]);
    }
    latencies.sort_by(f64::total_cmp);
    let stages = stages(&db, &ids, &submitted).await;
    println!(
        "mail loop: {messages} messages at {:.1}/s, {} replies, {copies} identical copies, {lost} lost; \
         submission to the reply's arrival p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms; all answered in {:.1} s \
         (one serve killed and restarted, Dovecot restarted, UIDVALIDITY changed)",
        1.0 / gap.as_secs_f64(),
        arrivals.replies.len(),
        percentile(&latencies, 0.5) * 1000.0,
        percentile(&latencies, 0.99) * 1000.0,
        latencies.last().unwrap() * 1000.0,
        elapsed.as_secs_f64(),
    );
    println!("mail loop stages (median): {stages}");

    // Every reply is threaded under its trigger, from the support address.
    for n in [0, messages - 1] {
        let inbox = dovecot.messages(&customer(n), "INBOX");
        let (_, _, raw) = &inbox[0];
        let id = format!("<loop-{n}@example.org>");
        assert_eq!(header(raw, "In-Reply-To"), Some(id.clone()));
        assert_eq!(header(raw, "References"), Some(id));
        assert_eq!(header(raw, "From").as_deref(), Some(SUPPORT));
        assert_eq!(
            header(raw, "Subject").as_deref(),
            Some("Re: Where is my order?")
        );
    }

    // The customer answers the reply: the next request replays the first run's tool round.
    let first_reply = arrivals
        .replies
        .iter()
        .find(|(_, (parent, _, _))| parent == "<loop-0@example.org>")
        .map(|(id, _)| id.clone())
        .unwrap();
    let before = provider.requests().len();
    let answer = mail(
        0,
        "loop-0-again",
        &format!(
            "In-Reply-To: {first_reply}\r\nReferences: <loop-0@example.org> {first_reply}\r\n"
        ),
    )
    .replace(
        "Subject: Where is my order?",
        "Subject: Re: Where is my order?",
    );
    submit(postfix.port(), &[(customer(0), answer)], Duration::ZERO);
    let (_, jobs_before) = b.get("/v1/agent/jobs?limit=3", Some(TOKEN)).await;
    let again = ["<loop-0-again@example.org>".to_owned()];
    let answered = std::panic::AssertUnwindSafe(|| {
        wait_for_replies(&dovecot, &db, messages, &mut arrivals, &again);
    });
    if std::panic::catch_unwind(answered).is_err() {
        let (_, jobs) = b.get("/v1/agent/jobs?limit=20", Some(TOKEN)).await;
        let (_, outbox) = b.get("/v1/outbox?limit=3", Some(TOKEN)).await;
        panic!("the answer was not answered: jobs {jobs}\nbefore {jobs_before}\noutbox {outbox}");
    }
    // The first request of the answer's run (a digest's request has no tools).
    let replayed = provider.requests()[before..]
        .iter()
        .map(standin::Recorded::json)
        .find(|body| body["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .expect("a request for the customer's answer");
    let history = replayed["messages"].as_array().unwrap();
    let kinds: Vec<String> = history
        .iter()
        .map(|m| {
            let blocks = m["content"].as_array().cloned().unwrap_or_default();
            let types: BTreeSet<String> = blocks
                .iter()
                .map(|b| b["type"].as_str().unwrap_or_default().to_owned())
                .collect();
            format!(
                "{}:{}",
                m["role"].as_str().unwrap(),
                types.into_iter().collect::<Vec<_>>().join("+")
            )
        })
        .collect();
    assert!(
        kinds
            .iter()
            .any(|k| k.starts_with("assistant:") && k.contains("tool_use"))
            && kinds
                .iter()
                .any(|k| k.starts_with("user:") && k.contains("tool_result")),
        "the first run's tool round is replayed: {kinds:?}"
    );

    // The digest: each slot fired once, with both processes running.
    wait_for_digests(&dovecot).await;
    // A slot a minute: one fired just now may still be on its way, so wait until every
    // slot's digest has arrived (and none twice).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let slots = count(&db, "SELECT COUNT(*) FROM responsibility_slots").await;
        let digests = dovecot.messages(TEAM, "INBOX");
        let ids: BTreeSet<String> = digests
            .iter()
            .map(|(_, _, raw)| header(raw, "Message-ID").unwrap())
            .collect();
        assert_eq!(ids.len(), digests.len(), "a digest arrived twice");
        assert!(digests.len() as i64 <= slots, "a digest without its slot");
        if digests.len() as i64 == slots {
            break;
        }
        if Instant::now() >= deadline {
            let (_, jobs) = b.get("/v1/agent/jobs?limit=10", Some(TOKEN)).await;
            let (_, outbox) = b.get("/v1/outbox?limit=5", Some(TOKEN)).await;
            let log = postfix.log();
            let tail: Vec<&str> = log.lines().rev().take(30).collect();
            panic!(
                "{slots} slots fired, {} digests arrived: jobs {jobs}\noutbox {outbox}\nPostfix's log, newest first:\n{}",
                digests.len(),
                tail.join("\n")
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(provider.wire_failures(), Vec::<String>::new());
    drop(a);
    drop(b);
}

/// Waits until one of `servers` reports the support mailbox `up` (its first sync done).
async fn wait_until_read(servers: &[&Server]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        for server in servers {
            let (_, body) = server.get("/readyz", Some(TOKEN)).await;
            let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            if body["inboxes"]["support"][0]["state"] == "up" {
                return;
            }
        }
        assert!(Instant::now() < deadline, "the mailbox was never read");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Returns once the first digest has reached the team (a slot a minute).
async fn wait_for_digests(dovecot: &Dovecot) {
    let deadline = Instant::now() + Duration::from_secs(150);
    loop {
        if !dovecot.messages(TEAM, "INBOX").is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "no digest arrived");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn count(db: &str, sql: &str) -> i64 {
    use protege::db::sea_orm::{ConnectionTrait, Database, Statement};
    let conn = Database::connect(db).await.unwrap();
    let row = conn
        .query_one_raw(Statement::from_string(conn.get_database_backend(), sql))
        .await
        .unwrap()
        .unwrap();
    let n = row.try_get_by_index::<i64>(0).unwrap();
    conn.close().await.unwrap();
    n
}

/// The named points of §19, each stopping the only serve process there; another process
/// then finishes the message: one distinct reply each, none lost, and an identical second
/// copy only when the stop fell between the server's 250 and the `sent` record.
#[cfg(debug_assertions)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_stopped_at_each_named_point_loses_nothing() {
    let Some(dovecot) = Dovecot::start() else {
        return;
    };
    let Some(postfix) = Postfix::start_with_lmtp(Options::default(), dovecot.lmtp_port()) else {
        return;
    };
    let points = [
        "inbox.after_store",
        "agent.after_response",
        "agent.after_tools",
        "outbox.after_claim",
        "outbox.after_250",
    ];
    for user in [SUPPORT, TEAM] {
        dovecot.add_user(user, PASSWORD);
    }
    for n in 0..points.len() {
        dovecot.add_user(&customer(n), PASSWORD);
    }
    let provider = StandIn::start([]).await.unwrap().respond_with(respond);
    let tools = tool_server().await;
    let root = root(&dovecot, &postfix, &provider.base_url(), &tools);
    // No digest in this test: the faults are the only thing happening.
    let persona = root.path().join("personas/support.toml");
    let text = std::fs::read_to_string(&persona).unwrap();
    let text = text
        .split("[[responsibilities]]")
        .next()
        .unwrap()
        .to_owned();
    std::fs::write(&persona, text).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let mut arrivals = Arrivals::default();
    let mut ids = Vec::new();
    for (n, point) in points.iter().enumerate() {
        let mut faulty = serve(root.path(), &db, Some(point));
        wait_until_read(&[&faulty]).await;
        let id = format!("fault-{n}");
        submit(
            postfix.port(),
            &[(customer(n), mail(n, &id, ""))],
            Duration::ZERO,
        );
        // The process stops itself at the point, as a kill would.
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = faulty.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "{point}: the process never reached the point"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        use std::os::unix::process::ExitStatusExt as _;
        assert_eq!(status.signal(), Some(6), "{point}: aborted ({status:?})");
        let healthy = serve(root.path(), &db, None);
        ids.push(format!("<{id}@example.org>"));
        wait_for_replies(&dovecot, &db, points.len(), &mut arrivals, &ids[n..]);
        // Every reply so far recorded `sent` (a stop after the 250 makes the healthy
        // process send the same bytes again once the claim's lease runs out).
        let deadline = Instant::now() + WAIT;
        loop {
            let (_, body) = healthy.get("/v1/outbox?state=sent", Some(TOKEN)).await;
            let body: Value = serde_json::from_str(&body).unwrap();
            if body["outbox"].as_array().is_some_and(|rows| rows.len() > n) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{point}: replies not sent: {body}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // The copy, if any, lands before the next point.
        tokio::time::sleep(Duration::from_millis(500)).await;
        drop(healthy);
    }
    arrivals.poll(&dovecot, points.len());
    let answered = arrivals.answered();
    assert_eq!(
        ids.iter()
            .map(|id| answered.get(id).copied())
            .collect::<Vec<_>>(),
        vec![Some(1); points.len()],
        "one distinct reply per message"
    );
    let copies: Vec<(String, usize)> = arrivals
        .replies
        .values()
        .filter(|(_, n, _)| *n > 1)
        .map(|(parent, n, _)| (parent.clone(), *n))
        .collect();
    // Only the stop after the server's 250 delivers the same bytes twice.
    assert_eq!(copies, vec![("<fault-4@example.org>".to_owned(), 2)]);
    println!(
        "faults: {} points, {} messages, {} replies, {} identical copies ({}), 0 lost",
        points.len(),
        ids.len(),
        arrivals.replies.len(),
        copies.len(),
        points[4]
    );
    assert_eq!(provider.wire_failures(), Vec::<String>::new());
}

/// The median time of each stage of the messages `ids` (submitted at `submitted`, Unix
/// seconds), from the database's own times: to the message stored with its job, to its
/// reply composed, to the SMTP server's 250.
async fn stages(db: &str, ids: &[String], submitted: &[f64]) -> String {
    use protege::db::sea_orm::{ConnectionTrait, Database, Statement};
    let conn = Database::connect(db).await.unwrap();
    let mut parts: [Vec<f64>; 3] = Default::default();
    for (id, at) in ids.iter().zip(submitted) {
        let sql = format!(
            "SELECT j.created_at, o.created_at, o.sent_at FROM agent_jobs j \
             JOIN messages m ON m.id = j.message_id JOIN outbox o ON o.run_id = j.run_id \
             WHERE m.message_id = '{id}'"
        );
        let row = conn
            .query_one_raw(Statement::from_string(conn.get_database_backend(), sql))
            .await
            .unwrap()
            .expect("the message's job and reply");
        let time = |i: usize| -> f64 {
            let text: String = row.try_get_by_index(i).unwrap();
            chrono::DateTime::parse_from_rfc3339(&text)
                .unwrap()
                .timestamp_micros() as f64
                / 1e6
        };
        let (stored, composed, sent) = (time(0), time(1), time(2));
        parts[0].push(stored - at);
        parts[1].push(composed - stored);
        parts[2].push(sent - composed);
    }
    conn.close().await.unwrap();
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        percentile(v, 0.5) * 1000.0
    };
    format!(
        "submitted to stored {:.0} ms, stored to reply composed {:.0} ms, composed to 250 {:.0} ms",
        median(&mut parts[0]),
        median(&mut parts[1]),
        median(&mut parts[2])
    )
}
