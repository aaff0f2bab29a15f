//! Mail in over IMAP (§19) against a real Dovecot, on every backend: `protege inbox fetch`
//! leaves the mail already in a folder unanswered on the first sync, then stores each new
//! message once through the one write path with its job, marks it, refuses what is not mail
//! (recorded, marked, never fetched in a loop), reads a folder again after its
//! `UIDVALIDITY` changed without storing anything twice, stores older mail without jobs
//! with `since`, refuses a message over the size limit unread and one whose storing crashed
//! three times, and leaves a message the database could not take unmarked. `serve --agent`
//! reads the folder with IDLE, one process at a time, and reports a wrong password in
//! `/readyz`. A scripted server that drops the connection in the middle of a message's bytes
//! (no Dovecot needed) fails the pass with one sentence and nothing stored.
//!
//! Skipped unless `PROTEGE_TEST_DOVECOT` names the `dovecot` binary (but the scripted one):
//!
//! ```text
//! PROTEGE_TEST_DOVECOT=$(scripts/dovecot-install) cargo test -p protege-cli --test inbox
//! ```
#![cfg(unix)]

use std::path::Path;
use std::time::{Duration, Instant};

use protege::db::sea_orm::{ConnectionTrait, Database};
use serde_json::{Value, json};

mod common;
use common::dovecot::Dovecot;
use common::server::{Server, TOKEN, every_backend, protege};

const SUPPORT: &str = "support@acme.test";
const PASSWORD: &str = "imap-pass-0123";
const PASSWORD_ENV: &str = "PROTEGE_TEST_IMAP_PASSWORD";
const KEY: &str = "sk-test-inbox-key-0123456789";

/// A generous watchdog for what `serve` does in the background.
const WAIT: Duration = Duration::from_secs(30);

/// The `support` persona: an agent (whose provider is a closed port: no job runs here)
/// reading `support@acme.test`'s INBOX in plain text on the loopback port of `dovecot`.
fn root(dovecot: &Dovecot, extra: &str) -> tempfile::TempDir {
    root_on(dovecot.imap_port(), extra)
}

/// [`root`] reading the IMAP server on loopback port `port`.
fn root_on(port: u16, extra: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    std::fs::write(
        root.path().join("personas/support.toml"),
        format!(
            r#"addresses = ["{SUPPORT}"]

[model]
provider = "anthropic"
name = "claude-sonnet-4-5"
base_url = "http://127.0.0.1:9"
api_key_env = "PROTEGE_TEST_AGENT_KEY"

[agent]
provider_attempts = 1

[inbox]
imap = "imap://127.0.0.1:{port}/INBOX"
tls = "none"
user = "{SUPPORT}"
password_env = "{PASSWORD_ENV}"
{extra}
[[message_resolvers]]
use = "LoadText"
template = "Hello."
"#
        ),
    )
    .unwrap();
    root
}

fn dovecot() -> Option<Dovecot> {
    let dovecot = Dovecot::start()?;
    dovecot.add_user(SUPPORT, PASSWORD);
    Some(dovecot)
}

/// A message from `from` to `to`, its Message-ID `<ID@example.org>`.
fn mail(id: &str, from: &str, to: &str) -> Vec<u8> {
    format!(
        "From: {from}\r\nTo: {to}\r\nSubject: Order {id}\r\nDate: Tue, 10 Mar 2026 09:00:00 +0000\r\nMessage-ID: <{id}@example.org>\r\n\r\nWhere is order {id}?\r\n"
    )
    .into_bytes()
}

/// `protege inbox fetch --persona support`: (exit code, stdout, stderr).
fn fetch(root: &Path, db: &str, password: &str) -> (i32, String, String) {
    let out = protege(root, db)
        .args(["inbox", "fetch", "--persona", "support"])
        .env(PASSWORD_ENV, password)
        .env("PROTEGE_TEST_AGENT_KEY", KEY)
        .output()
        .expect("run protege");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        String::from_utf8(out.stderr).expect("UTF-8 stderr"),
    )
}

/// A fetch that succeeds: its one folder's report.
fn fetched(root: &Path, db: &str) -> Value {
    let (code, out, err) = fetch(root, db, PASSWORD);
    assert_eq!((code, err.as_str()), (0, ""), "{db}: {out}");
    let report: Value = serde_json::from_str(&out).expect("JSON");
    let folders = report["folders"].as_array().expect("folders");
    assert_eq!(folders.len(), 1, "{report}");
    folders[0].clone()
}

/// A folder's report as `inbox fetch` prints it.
fn report(dovecot: &Dovecot, counts: (usize, usize), refused: Value, first: bool) -> Value {
    json!({
        "mailbox": format!("{SUPPORT}@127.0.0.1:{}/INBOX", dovecot.imap_port()),
        "first_sync": first,
        "uid_validity_changed": false,
        "stored": counts.0,
        "duplicates": counts.1,
        "erased": 0,
        "refused": refused,
    })
}

/// The flags of each message of the INBOX, by UID.
fn flags(dovecot: &Dovecot) -> Vec<(u32, Vec<String>)> {
    dovecot
        .messages(SUPPORT, "INBOX")
        .into_iter()
        .map(|(uid, flags, _)| (uid, flags))
        .collect()
}

fn seen() -> Vec<String> {
    vec!["\\Seen".to_owned()]
}

/// The Message-IDs of the stored messages, and of those with a job, each in id order.
async fn stored(db: &str) -> (Vec<String>, Vec<String>) {
    let conn = Database::connect(db).await.unwrap();
    let column = |rows: Vec<protege::db::sea_orm::QueryResult>| -> Vec<String> {
        rows.iter()
            .map(|r| r.try_get_by_index::<String>(0).unwrap())
            .collect()
    };
    let messages = conn
        .query_all_raw(protege::db::sea_orm::Statement::from_string(
            conn.get_database_backend(),
            "SELECT message_id FROM messages ORDER BY id",
        ))
        .await
        .unwrap();
    let jobs = conn
        .query_all_raw(protege::db::sea_orm::Statement::from_string(
            conn.get_database_backend(),
            "SELECT m.message_id FROM agent_jobs j JOIN messages m ON m.id = j.message_id ORDER BY j.id",
        ))
        .await
        .unwrap();
    conn.close().await.unwrap();
    (column(messages), column(jobs))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_mail_is_stored_once_with_its_job_and_marked_and_what_is_not_mail_is_refused_once() {
    let dir = tempfile::tempdir().unwrap();
    for (db, _) in every_backend(dir.path(), "protege_inbox_fetch").await {
        let Some(dovecot) = dovecot() else { return };
        let root = root(&dovecot, "");
        // Mail already in the folder at the first sync is not answered, nor touched.
        dovecot.append(SUPPORT, "INBOX", &mail("m1", "ann@example.org", SUPPORT));
        assert_eq!(
            fetched(root.path(), &db),
            report(&dovecot, (0, 0), json!([]), true),
            "{db}"
        );
        assert_eq!(flags(&dovecot), vec![(1, vec![])], "{db}");
        // New mail: one to the persona, bytes that are not mail, one to an alias of the
        // mailbox (answered by the persona whose inbox it came from).
        dovecot.append(SUPPORT, "INBOX", &mail("m2", "bob@example.org", SUPPORT));
        dovecot.append(SUPPORT, "INBOX", b"\x00\x01 not mail at all");
        dovecot.append(
            SUPPORT,
            "INBOX",
            &mail("m4", "cy@example.org", "help@acme.test"),
        );
        let refused = json!([{
            "uid": 3,
            "reason": "not an email: none of the headers `From`, `To`, `Subject`, `Date`, `Message-ID`",
        }]);
        assert_eq!(
            fetched(root.path(), &db),
            report(&dovecot, (2, 0), refused.clone(), false),
            "{db}"
        );
        assert_eq!(
            flags(&dovecot),
            vec![(1, vec![]), (2, seen()), (3, seen()), (4, seen())],
            "{db}"
        );
        let ids = vec!["<m2@example.org>".to_owned(), "<m4@example.org>".to_owned()];
        assert_eq!(stored(&db).await, (ids.clone(), ids.clone()), "{db}");
        // Nothing new: nothing fetched.
        assert_eq!(
            fetched(root.path(), &db),
            report(&dovecot, (0, 0), json!([]), false),
            "{db}"
        );
        // A process killed after storing and before recording the highest UID: the
        // messages are fetched again and found stored; the refused one is refused again,
        // recorded once.
        common::server::execute(&db, "UPDATE inbox_state SET highest_uid = 1").await;
        assert_eq!(
            fetched(root.path(), &db),
            report(&dovecot, (0, 2), refused, false),
            "{db}"
        );
        assert_eq!(stored(&db).await, (ids.clone(), ids), "{db}");
        let conn = Database::connect(&db).await.unwrap();
        let rejects = protege::db::inbox_rejects(
            &conn,
            &format!("{SUPPORT}@127.0.0.1:{}/INBOX", dovecot.imap_port()),
        )
        .await
        .unwrap();
        assert_eq!(
            rejects
                .iter()
                .map(|r| (r.uid, r.message_id.clone(), r.from_address.clone()))
                .collect::<Vec<_>>(),
            vec![(3, None, None)],
            "{db}"
        );
        // Bob is erased; his mail, still on the server, comes again: it is marked and
        // never stored.
        let removed = protege::db::forget(&conn, "bob@example.org", false)
            .await
            .unwrap();
        assert_eq!((removed.messages, removed.erased_messages), (1, 1), "{db}");
        conn.close().await.unwrap();
        dovecot.append(SUPPORT, "INBOX", &mail("m2", "bob@example.org", SUPPORT));
        let mut erased = report(&dovecot, (0, 0), json!([]), false);
        erased["erased"] = json!(1);
        assert_eq!(fetched(root.path(), &db), erased, "{db}");
        assert_eq!(flags(&dovecot)[4], (5, seen()), "{db}");
        let ids = vec!["<m4@example.org>".to_owned()];
        assert_eq!(stored(&db).await, (ids.clone(), ids), "{db}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_uidvalidity_reads_recent_mail_again_and_stores_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    for (db, _) in every_backend(dir.path(), "protege_inbox_validity").await {
        let Some(dovecot) = dovecot() else { return };
        let root = root(&dovecot, "");
        fetched(root.path(), &db);
        dovecot.append(SUPPORT, "INBOX", &mail("m1", "ann@example.org", SUPPORT));
        assert_eq!(
            fetched(root.path(), &db),
            report(&dovecot, (1, 0), json!([]), false)
        );
        dovecot.change_uidvalidity(SUPPORT, "INBOX");
        // Mail that arrived after the change.
        std::thread::sleep(Duration::from_millis(1100));
        dovecot.append(SUPPORT, "INBOX", &mail("m2", "bob@example.org", SUPPORT));
        let mut expected = report(&dovecot, (1, 1), json!([]), false);
        expected["uid_validity_changed"] = json!(true);
        assert_eq!(fetched(root.path(), &db), expected, "{db}");
        let ids = vec!["<m1@example.org>".to_owned(), "<m2@example.org>".to_owned()];
        assert_eq!(stored(&db).await, (ids.clone(), ids), "{db}");
        // The next pass reads only what comes after.
        assert_eq!(
            fetched(root.path(), &db),
            report(&dovecot, (0, 0), json!([]), false)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn since_stores_older_mail_without_jobs_and_leaves_it_unmarked() {
    let Some(dovecot) = dovecot() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let root = root(&dovecot, "since = \"2000-01-01\"\n");
    dovecot.append(SUPPORT, "INBOX", &mail("m1", "ann@example.org", SUPPORT));
    dovecot.append(SUPPORT, "INBOX", &mail("m2", "bob@example.org", SUPPORT));
    // Stored in one transaction, the older mail: a process killed after that
    // transaction, before the sync ended, leaves it stored and the folder unsynced.
    let out = protege(root.path(), &db)
        .args(["inbox", "fetch", "--persona", "support"])
        .env(PASSWORD_ENV, PASSWORD)
        .env("PROTEGE_TEST_AGENT_KEY", KEY)
        .env(protege::FAULT_ENV, "inbox.after_batch")
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    let ids = vec!["<m1@example.org>".to_owned(), "<m2@example.org>".to_owned()];
    assert_eq!(stored(&db).await, (ids.clone(), vec![]));
    // Once the dead process's lease has run out, the next pass takes that chunk one
    // message at a time: stored already, each.
    common::server::execute(&db, "UPDATE inbox_state SET lease_owner = NULL").await;
    assert_eq!(
        fetched(root.path(), &db),
        report(&dovecot, (0, 2), json!([]), true)
    );
    assert_eq!(flags(&dovecot), vec![(1, vec![]), (2, vec![])]);
    assert_eq!(stored(&db).await, (ids, vec![]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_sync_stores_older_mail_in_one_transaction_and_refuses_what_is_not_mail() {
    let dir = tempfile::tempdir().unwrap();
    for (db, _) in every_backend(dir.path(), "protege_inbox_batch").await {
        let Some(dovecot) = dovecot() else { return };
        let root = root(&dovecot, "since = \"2000-01-01\"\n");
        dovecot.append(SUPPORT, "INBOX", &mail("m1", "ann@example.org", SUPPORT));
        dovecot.append(SUPPORT, "INBOX", b"\x00\x01 not mail at all");
        dovecot.append(SUPPORT, "INBOX", &mail("m2", "bob@example.org", SUPPORT));
        // The same Message-ID as m1 from someone else: a conflict.
        dovecot.append(SUPPORT, "INBOX", &mail("m1", "eve@example.net", SUPPORT));
        let refused = json!([
            {"uid": 2, "reason": "not an email: none of the headers `From`, `To`, `Subject`, `Date`, `Message-ID`"},
            {"uid": 4, "reason": "Message-ID `<m1@example.org>` is already stored with another sender (`ann@example.org`): not imported, a Message-ID belongs to the message stored first"},
        ]);
        assert_eq!(
            fetched(root.path(), &db),
            report(&dovecot, (2, 0), refused, true),
            "{db}"
        );
        let ids = vec!["<m1@example.org>".to_owned(), "<m2@example.org>".to_owned()];
        assert_eq!(stored(&db).await, (ids, vec![]), "{db}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_over_the_limit_or_one_that_crashed_three_times_is_refused_and_marked() {
    let Some(dovecot) = dovecot() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let root = root(&dovecot, "");
    fetched(root.path(), &db);
    // A message whose storing began three times already (the process died each time),
    // then one over the limit.
    dovecot.append(SUPPORT, "INBOX", &mail("m1", "bob@example.org", SUPPORT));
    let mut big = mail("big", "ann@example.org", SUPPORT);
    big.extend(std::iter::repeat_n(b'x', 26 * 1024 * 1024));
    big.extend(b"\r\n");
    let size = big.len();
    dovecot.append(SUPPORT, "INBOX", &big);
    common::server::execute(
        &db,
        "UPDATE inbox_state SET pending_uid = 1, pending_attempts = 3",
    )
    .await;
    let refused = json!([
        {"uid": 1, "reason": "crashed: its storing began 3 times without an answer"},
        {"uid": 2, "reason": format!("too large: {size} bytes, over the limit of 26214400 bytes")},
    ]);
    assert_eq!(
        fetched(root.path(), &db),
        report(&dovecot, (0, 0), refused, false)
    );
    assert_eq!(flags(&dovecot), vec![(1, seen()), (2, seen())]);
    assert_eq!(stored(&db).await, (vec![], vec![]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_the_database_cannot_take_now_is_left_unmarked_and_stored_later() {
    let Some(dovecot) = dovecot() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let db = format!("sqlite://{}?mode=rwc", path.display());
    let root = root(&dovecot, "");
    fetched(root.path(), &db);
    dovecot.append(SUPPORT, "INBOX", &mail("m1", "ann@example.org", SUPPORT));
    // Another writer holds the database's write lock for longer than the engine waits.
    let lock = rusqlite::Connection::open(&path).unwrap();
    lock.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let (code, out, err) = fetch(root.path(), &db, PASSWORD);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(err.starts_with("error: "), "{err}");
    assert_eq!(flags(&dovecot), vec![(1, vec![])]);
    lock.execute_batch("ROLLBACK").unwrap();
    drop(lock);
    assert_eq!(
        fetched(root.path(), &db),
        report(&dovecot, (1, 0), json!([]), false)
    );
    assert_eq!(flags(&dovecot), vec![(1, seen())]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_a_clear_error_and_marks_the_inbox_down_in_readyz() {
    let Some(dovecot) = dovecot() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let root = root(&dovecot, "");
    let (code, out, err) = fetch(root.path(), &db, "wrong");
    let mailbox = format!("{SUPPORT}@127.0.0.1:{}/INBOX", dovecot.imap_port());
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (
            1,
            "",
            format!(
                "error: the mailbox `{mailbox}` could not be read: the server refused the login: [AUTHENTICATIONFAILED] Authentication failed.\n"
            )
            .as_str()
        )
    );
    let server = Server::start_env(
        root.path(),
        &db,
        Some(TOKEN),
        &["--agent"],
        &[(PASSWORD_ENV, "wrong"), ("PROTEGE_TEST_AGENT_KEY", KEY)],
    );
    let deadline = Instant::now() + WAIT;
    loop {
        let (status, body) = server.get("/readyz", Some(TOKEN)).await;
        assert_eq!(status, 200, "{body}");
        let body: Value = serde_json::from_str(&body).unwrap();
        if !body["inboxes"].is_null() {
            assert_eq!(
                body["inboxes"],
                json!({"support": [{
                    "state": "down",
                    "folder": "INBOX",
                    "reason": "the server refused the login: [AUTHENTICATIONFAILED] Authentication failed.",
                }]})
            );
            break;
        }
        assert!(Instant::now() < deadline, "no inbox in /readyz: {body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The jobs `serve` made, as `(message_id, persona)`.
async fn jobs(server: &Server) -> Vec<(String, String)> {
    let (status, body) = server.get("/v1/agent/jobs", Some(TOKEN)).await;
    assert_eq!(status, 200, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    let mut out: Vec<(String, String)> = body["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["message_id"].as_str().unwrap().to_owned(),
                j["persona"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_reads_new_mail_with_idle_one_process_at_a_time() {
    let Some(dovecot) = dovecot() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let root = root(&dovecot, "");
    let env = [(PASSWORD_ENV, PASSWORD), ("PROTEGE_TEST_AGENT_KEY", KEY)];
    let args = ["--agent", "--inbox-lease", "3"];
    let mut first = Server::start_env(root.path(), &db, Some(TOKEN), &args, &env);
    let second = Server::start_env(root.path(), &db, Some(TOKEN), &args, &env);
    // One process reads the folder; the other says so.
    let deadline = Instant::now() + WAIT;
    let states = loop {
        let mut states = Vec::new();
        for server in [&first, &second] {
            let (_, body) = server.get("/readyz", Some(TOKEN)).await;
            let body: Value = serde_json::from_str(&body).unwrap();
            states.push(body["inboxes"]["support"][0]["state"].clone());
        }
        if states.contains(&json!("up")) && states.contains(&json!("elsewhere")) {
            break states;
        }
        assert!(Instant::now() < deadline, "{states:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let (reader, other) = if states[0] == json!("up") {
        (&mut first, second)
    } else {
        (&mut { second }, first)
    };
    dovecot.append(SUPPORT, "INBOX", &mail("m1", "ann@example.org", SUPPORT));
    let wait_for = |n: usize, server: &Server| {
        let server_base = server.base.clone();
        async move {
            let deadline = Instant::now() + WAIT;
            loop {
                let client = common::server::http_client();
                let body: Value = client
                    .get(format!("{server_base}/v1/agent/jobs"))
                    .bearer_auth(TOKEN)
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                if body["jobs"].as_array().unwrap().len() >= n {
                    return;
                }
                assert!(Instant::now() < deadline, "{n} jobs expected: {body}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    wait_for(1, reader).await;
    // The reader dies; the other process takes the folder once the lease runs out.
    reader.child.kill().unwrap();
    reader.child.wait().unwrap();
    dovecot.append(SUPPORT, "INBOX", &mail("m2", "bob@example.org", SUPPORT));
    wait_for(2, &other).await;
    assert_eq!(
        jobs(&other).await,
        vec![
            ("<m1@example.org>".to_owned(), "support".to_owned()),
            ("<m2@example.org>".to_owned(), "support".to_owned()),
        ]
    );
    assert_eq!(flags(&dovecot), vec![(1, seen()), (2, seen())]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sent_folder_stores_a_person_s_replies_outbound_without_jobs() {
    let Some(dovecot) = dovecot() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let root = root(&dovecot, "sent = \"Sent\"\n");
    let (code, out, err) = fetch(root.path(), &db, PASSWORD);
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
    dovecot.append(SUPPORT, "INBOX", &mail("m1", "ann@example.org", SUPPORT));
    // A person answers from a mail client: the copy lands in the sent folder.
    let mut reply = mail("r1", SUPPORT, "ann@example.org");
    reply.splice(0..0, b"In-Reply-To: <m1@example.org>\r\n".iter().copied());
    dovecot.append(SUPPORT, "Sent", &reply);
    let (code, out, err) = fetch(root.path(), &db, PASSWORD);
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
    let report: Value = serde_json::from_str(&out).unwrap();
    let port = dovecot.imap_port();
    assert_eq!(
        report,
        json!({"folders": [
            {"mailbox": format!("{SUPPORT}@127.0.0.1:{port}/INBOX"), "first_sync": false,
             "uid_validity_changed": false, "stored": 1, "duplicates": 0, "erased": 0, "refused": []},
            {"mailbox": format!("{SUPPORT}@127.0.0.1:{port}/Sent"), "first_sync": false,
             "uid_validity_changed": false, "stored": 1, "duplicates": 0, "erased": 0, "refused": []},
        ]})
    );
    let conn = Database::connect(&db).await.unwrap();
    let rows = conn
        .query_all_raw(protege::db::sea_orm::Statement::from_string(
            conn.get_database_backend(),
            "SELECT m.message_id, m.direction, m.email_thread_id, j.id FROM messages m \
             LEFT JOIN agent_jobs j ON j.message_id = m.id ORDER BY m.id",
        ))
        .await
        .unwrap();
    let got: Vec<(String, String, i64, Option<i64>)> = rows
        .iter()
        .map(|r| {
            (
                r.try_get_by_index(0).unwrap(),
                r.try_get_by_index(1).unwrap(),
                r.try_get_by_index(2).unwrap(),
                r.try_get_by_index(3).unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("<m1@example.org>".into(), "inbound".into(), 1, Some(1)),
            ("<r1@example.org>".into(), "outbound".into(), 1, None),
        ]
    );
}

/// An IMAP server on loopback that holds two messages received on 10 March 2026 and speaks
/// just what a first sync with `since` sends. Its first session drops the connection in the
/// middle of the first message's bytes; the later ones answer in full.
fn dropping_server() -> u16 {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for (session, stream) in listener.incoming().enumerate() {
            let Ok(stream) = stream else { return };
            let mut out = stream.try_clone().unwrap();
            let mut lines = BufReader::new(stream);
            let _ = out.write_all(b"* OK [CAPABILITY IMAP4rev1 UIDPLUS] ready\r\n");
            let mut line = String::new();
            while lines.read_line(&mut line).is_ok_and(|n| n > 0) {
                let (tag, command) = line.trim_end().split_once(' ').unwrap_or(("*", ""));
                let command = command.to_ascii_uppercase();
                let reply = if command.starts_with("CAPABILITY") {
                    format!("* CAPABILITY IMAP4rev1 UIDPLUS\r\n{tag} OK done\r\n")
                } else if command.starts_with("SELECT") {
                    format!(
                        "* 2 EXISTS\r\n* OK [UIDVALIDITY 7] ok\r\n* OK [UIDNEXT 3] ok\r\n{tag} OK [READ-WRITE] selected\r\n"
                    )
                } else if command.starts_with("UID SEARCH") {
                    format!("* SEARCH 1 2\r\n{tag} OK done\r\n")
                } else if command.starts_with("UID FETCH") && command.contains("BODY.PEEK") {
                    let mut reply = String::new();
                    for uid in [1u32, 2] {
                        if !command.contains(&uid.to_string()) {
                            continue;
                        }
                        let body =
                            String::from_utf8(mail(&format!("d{uid}"), "ann@example.org", SUPPORT))
                                .unwrap();
                        if session == 0 {
                            let half = format!(
                                "* {uid} FETCH (UID {uid} BODY[] {{{}}}\r\n{}",
                                body.len(),
                                &body[..body.len() / 2]
                            );
                            let _ = out.write_all(half.as_bytes());
                            let _ = out.shutdown(std::net::Shutdown::Both);
                            break;
                        }
                        reply.push_str(&format!(
                            "* {uid} FETCH (UID {uid} BODY[] {{{}}}\r\n{body})\r\n",
                            body.len()
                        ));
                    }
                    if session == 0 {
                        break;
                    }
                    format!("{reply}{tag} OK done\r\n")
                } else if command.starts_with("UID FETCH") {
                    let mut reply = String::new();
                    for uid in [1u32, 2] {
                        let size = mail(&format!("d{uid}"), "ann@example.org", SUPPORT).len();
                        reply.push_str(&format!(
                            "* {uid} FETCH (UID {uid} RFC822.SIZE {size} INTERNALDATE \"10-Mar-2026 09:00:00 +0000\")\r\n"
                        ));
                    }
                    format!("{reply}{tag} OK done\r\n")
                } else if command.starts_with("LOGOUT") {
                    let _ = out.write_all(format!("* BYE bye\r\n{tag} OK done\r\n").as_bytes());
                    break;
                } else {
                    format!("{tag} OK done\r\n")
                };
                if out.write_all(reply.as_bytes()).is_err() {
                    break;
                }
                line.clear();
            }
        }
    });
    port
}

/// A server that drops the connection in the middle of a message's bytes: the pass fails
/// with one sentence, stores and marks nothing, and the next pass stores each message once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_dropped_mid_fetch_stores_nothing_and_the_next_pass_stores_each_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let port = dropping_server();
    let root = root_on(port, "since = \"2000-01-01\"\n");
    let (code, out, err) = fetch(root.path(), &db, PASSWORD);
    let said = format!(
        "error: the mailbox `{SUPPORT}@127.0.0.1:{port}/INBOX` could not be read: UID FETCH: io: bytes remaining in stream\n"
    );
    assert_eq!((code, out.as_str(), err), (1, "", said));
    assert_eq!(stored(&db).await, (vec![], vec![]));
    let (code, out, err) = fetch(root.path(), &db, PASSWORD);
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
    let ids = vec!["<d1@example.org>".to_owned(), "<d2@example.org>".to_owned()];
    assert_eq!(stored(&db).await, (ids, vec![]));
}
