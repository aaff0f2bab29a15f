//! Provenance and erasure through the engine (§15), on a SQLite file and on the PostgreSQL /
//! MariaDB servers named by `PROTEGE_TEST_POSTGRES_URL` / `PROTEGE_TEST_MYSQL_URL`: the
//! source of every message of a request, a resolve → forget → resolve sequence, and
//! resolves running while the correspondent is erased.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use protege::db::sea_orm::ConnectionTrait as _;
use protege::{Engine, EngineErrorKind, ResolveInput};
use serde_json::{Value, json};

mod common;
use common::server::every_backend;
use common::sha256_hex;

/// The persona: one resolver of each source kind.
const PERSONA: &str = r#"addresses = ["support@acme.test"]

[[message_resolvers]]
use = "LoadText"
template = "You are Acme's support agent."

[[message_resolvers]]
use = "LoadFile"
path = "prompts/./tone.md"

[[message_resolvers]]
use = "LoadRecord"
table = "accounts"
where = { email = "{{ message.from }}" }

[[message_resolvers]]
use = "LoadRecord"
table = "notes"
where = { email = "{{ message.from }}" }

[[message_resolvers]]
use = "ThreadSummary"

[[message_resolvers]]
use = "CorrespondentHistory"

[[message_resolvers]]
use = "ThreadHistory"
"#;

/// The bytes of `prompts/tone.md`, and their SHA-256 (by `sha256sum`).
const TONE: &str = "Be brief and kind.\n";
const TONE_SHA256: &str = "567aedda23250a428d42d704e2c2f24d05d4bd5905db21982cd3c4702affacf6";

/// Kim's earlier thread (answered), Kim's current thread (a round of two tool calls on the
/// first mail, which has an attachment; a reply; the mail being answered), and Bob's thread.
fn fixture() -> Value {
    let mail =
        |id: &str, direction: &str, from: &str, to: &str, minute: u32, parent: Option<&str>| {
            let mut m = json!({
                "message_id": id,
                "direction": direction,
                "from": from,
                "to": [to],
                "subject": "Order",
                "sent_at": format!("2026-03-02T09:{minute:02}:00Z"),
                "text_body": format!("Mail {id}."),
            });
            if let Some(p) = parent {
                m["in_reply_to"] = json!(p);
            }
            m
        };
    let kim = "Kim Lee <kim@example.com>";
    let support = "Acme Support <support@acme.test>";
    let mut first = mail(
        "<k1@example.com>",
        "inbound",
        kim,
        "support@acme.test",
        10,
        None,
    );
    first["attachments"] = json!([{
        "id": "att-1", "filename": "receipt.txt", "content_type": "text/plain",
        "byte_size": 5, "data_base64": "aGVsbG8="
    }]);
    first["tool_uses"] = json!([
        {"run_id": "r1", "turn_index": 0, "position": 0, "tool_call_id": "c1",
         "name": "lookup_order", "input": {"order": "A-1"}, "result": "{\"status\":\"late\"}"},
        {"run_id": "r1", "turn_index": 0, "position": 1, "tool_call_id": "c2",
         "name": "tracking_log", "input": {"order": "A-1"}, "result": "{\"events\":[]}"}
    ]);
    json!({"threads": [
        {"subject": "Earlier", "messages": [
            mail("<old1@example.com>", "inbound", kim, "support@acme.test", 0, None),
            mail("<old2@acme.test>", "outbound", support, "kim@example.com", 1, Some("<old1@example.com>")),
        ]},
        {"subject": "Order", "messages": [
            first,
            mail("<k2@acme.test>", "outbound", support, "kim@example.com", 11, Some("<k1@example.com>")),
            mail("<k3@example.com>", "inbound", kim, "support@acme.test", 12, Some("<k2@acme.test>")),
        ]},
        {"subject": "Bob's", "messages": [
            mail("<b1@example.com>", "inbound", "bob@example.com", "support@acme.test", 20, None),
        ]},
    ]})
}

/// An app root with the persona and its prompt file.
fn root() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("personas")).unwrap();
    std::fs::create_dir_all(root.path().join("prompts")).unwrap();
    std::fs::write(root.path().join("personas/support.toml"), PERSONA).unwrap();
    std::fs::write(root.path().join("prompts/tone.md"), TONE).unwrap();
    std::fs::write(
        root.path().join("fixture.json"),
        serde_json::to_string(&fixture()).unwrap(),
    )
    .unwrap();
    root
}

/// An engine on `url` with the fixture, a summary of Kim's current thread and the two
/// application tables `LoadRecord` reads (one with a primary key, one without).
async fn engine_on(root: &Path, url: &str) -> Engine {
    let engine = Engine::builder()
        .root(root)
        .database(url)
        .build()
        .await
        .unwrap();
    let conn = engine.db().await.unwrap();
    for sql in [
        "CREATE TABLE accounts (id INTEGER PRIMARY KEY, email VARCHAR(100), plan VARCHAR(20))",
        "CREATE TABLE notes (email VARCHAR(100), body VARCHAR(200))",
        "INSERT INTO accounts (id, email, plan) VALUES (7, 'kim@example.com', 'pro')",
        "INSERT INTO notes (email, body) VALUES ('kim@example.com', 'prefers email')",
    ] {
        conn.execute_unprepared(sql).await.unwrap();
    }
    engine
        .import_fixture(&root.join("fixture.json"))
        .await
        .unwrap();
    engine
        .store_summary("<k1@example.com>", "Kim's order A-1 is late.")
        .await
        .unwrap();
    engine
}

/// The time of every resolve.
fn now() -> chrono::DateTime<chrono::Utc> {
    "2026-03-03T00:00:00Z".parse().unwrap()
}

fn input() -> ResolveInput {
    ResolveInput::reply("support", "<k3@example.com>").now(now())
}

/// The sources the persona's request has for Kim's mail.
fn kim_sources() -> Value {
    json!([
        {"kind": "text", "resolver": "LoadText"},
        {"kind": "file", "path": "prompts/tone.md", "sha256": TONE_SHA256},
        {"kind": "record", "table": "accounts", "key": 7},
        {"kind": "record", "table": "notes", "key": {"email": "kim@example.com"}},
        {"kind": "summary", "id": 1},
        {"kind": "messages", "message_ids": ["<old1@example.com>", "<old2@acme.test>"], "summary_ids": []},
        {"kind": "message", "message_id": "<k1@example.com>"},
        {"kind": "tool_use", "run_id": "r1", "tool_call_id": "c1"},
        {"kind": "tool_use", "run_id": "r1", "tool_call_id": "c1"},
        {"kind": "tool_use", "run_id": "r1", "tool_call_id": "c2"},
        {"kind": "message", "message_id": "<k2@acme.test>"},
        {"kind": "message", "message_id": "<k3@example.com>"},
    ])
}

/// Drops the test databases made on the servers.
async fn drop_server_dbs(urls: &[(String, Option<String>)], name: &str) {
    for (_, server) in urls {
        if let Some(server) = server {
            common::server::execute(server, &format!("DROP DATABASE IF EXISTS {name}")).await;
        }
    }
}

#[tokio::test]
async fn every_message_of_the_request_names_its_source() {
    let dir = tempfile::tempdir().unwrap();
    let root = root();
    let urls = every_backend(dir.path(), "provenance_sources").await;
    for (url, _) in &urls {
        let engine = engine_on(root.path(), url).await;
        let out = engine.resolve(&input().explain(true)).await.unwrap();
        assert_eq!(json!(out.sources()), kim_sources(), "{url}");
        assert_eq!(
            out.sources().len(),
            out.body["messages"].as_array().unwrap().len(),
            "{url}"
        );
        // Per resolver, in the steps, in the same order.
        let per_step: Vec<Value> = out
            .steps
            .iter()
            .flat_map(|s| s.sources.clone())
            .map(|s| json!(s))
            .collect();
        assert_eq!(Value::Array(per_step), kim_sources(), "{url}");
        // The JSON form of `--explain`.
        let explain = out.explain_json();
        assert_eq!(explain["sources"], kim_sources(), "{url}");
        let compact = serde_json::to_vec(&out.body).unwrap();
        assert_eq!(
            explain["request_sha256"],
            json!(sha256_hex(&compact)),
            "{url}"
        );
        // A second resolve of the same stored state hashes the same.
        let again = engine.resolve(&input()).await.unwrap();
        assert_eq!(again.request_sha256(), out.request_sha256(), "{url}");
        engine.db().await.unwrap().clone().close().await.unwrap();
    }
    drop_server_dbs(&urls, "provenance_sources").await;
}

/// Rows of protege's tables, by table.
async fn table_counts(engine: &Engine) -> Value {
    let conn = engine.db().await.unwrap();
    let mut out = serde_json::Map::new();
    for table in [
        "messages",
        "attachments",
        "tool_uses",
        "thread_summaries",
        "message_addresses",
        "email_threads",
        "outbox",
    ] {
        let row = conn
            .query_one_raw(protege::db::sea_orm::Statement::from_string(
                conn.get_database_backend(),
                format!("SELECT COUNT(*) FROM {table}"),
            ))
            .await
            .unwrap()
            .unwrap();
        out.insert(table.into(), json!(row.try_get_by_index::<i64>(0).unwrap()));
    }
    Value::Object(out)
}

#[tokio::test]
async fn a_forgotten_correspondent_leaves_the_request_and_every_table() {
    let dir = tempfile::tempdir().unwrap();
    let root = root();
    let urls = every_backend(dir.path(), "provenance_forget").await;
    for (url, _) in &urls {
        let engine = engine_on(root.path(), url).await;
        // Bob writes again in Kim's current thread: the thread stays, without Kim's mail.
        let before = engine.resolve(&input()).await.unwrap();
        assert_eq!(json!(before.sources()), kim_sources(), "{url}");
        assert_eq!(
            table_counts(&engine).await,
            json!({"messages": 6, "attachments": 1, "tool_uses": 2, "thread_summaries": 1,
                   "message_addresses": 12, "email_threads": 3, "outbox": 0}),
            "{url}"
        );
        let removed = engine
            .forget("KIM LEE <Kim@Example.com>", false)
            .await
            .unwrap();
        assert_eq!(
            serde_json::to_value(removed).unwrap(),
            json!({"messages": 5, "attachments": 1, "tool_uses": 2, "runs": 0, "run_rounds": 0,
                   "thread_summaries": 1, "message_addresses": 10, "email_threads": 2,
                   "agent_jobs": 0, "outbox": 0, "tool_approvals": 0, "inbox_rejects": 0,
                   "responsibility_slots": 0, "erased_messages": 5}),
            "{url}"
        );
        assert_eq!(
            table_counts(&engine).await,
            json!({"messages": 1, "attachments": 0, "tool_uses": 0, "thread_summaries": 0,
                   "message_addresses": 2, "email_threads": 1, "outbox": 0}),
            "{url}"
        );
        let err = engine.resolve(&input()).await.unwrap_err();
        assert_eq!(err.kind(), EngineErrorKind::NotFound, "{url}");
        assert_eq!(
            err.to_string(),
            "unknown message `<k3@example.com>`: no message with this Message-ID in the database",
            "{url}"
        );
        // Bob's request has none of Kim's mail.
        let bob = engine
            .resolve(&ResolveInput::reply("support", "<b1@example.com>").now(now()))
            .await
            .unwrap();
        let text = bob.body.to_string();
        assert!(!text.to_lowercase().contains("kim"), "{url}: {text}");
        assert_eq!(
            json!(bob.sources()),
            json!([
                {"kind": "text", "resolver": "LoadText"},
                {"kind": "file", "path": "prompts/tone.md", "sha256": TONE_SHA256},
                {"kind": "message", "message_id": "<b1@example.com>"},
            ]),
            "{url}"
        );
        engine.db().await.unwrap().clone().close().await.unwrap();
    }
    drop_server_dbs(&urls, "provenance_forget").await;
}

/// Resolves of Kim's mail run without pause while Kim is erased, 10 times over: every
/// resolve that succeeds has the whole thread (the first mail with its attachment and its
/// round of two calls) or none of it, never a part. An erased Message-ID is never stored
/// again, so each time over imports Kim's thread under new Message-IDs and run id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_erasure_during_resolves_never_gives_half_a_thread() {
    let dir = tempfile::tempdir().unwrap();
    let root = root();
    let urls = every_backend(dir.path(), "provenance_race").await;
    let fixture = serde_json::to_string(&fixture()).unwrap();
    for (url, _) in &urls {
        let engine = Arc::new(engine_on(root.path(), url).await);
        let mut whole = 0;
        for round in 0..10 {
            let id = |name: &str| format!("<{name}.{round}@");
            let run = format!("r1.{round}");
            if round > 0 {
                let renamed = ["k1", "k2", "k3"]
                    .iter()
                    .fold(fixture.clone(), |f, k| f.replace(&format!("<{k}@"), &id(k)))
                    .replace("\"r1\"", &format!("\"{run}\""));
                let path = root.path().join(format!("fixture-{round}.json"));
                std::fs::write(&path, renamed).unwrap();
                engine.import_fixture(&path).await.unwrap();
            }
            let (k1, k3) = if round == 0 {
                ("<k1@example.com>".to_owned(), "<k3@example.com>".to_owned())
            } else {
                (
                    format!("{}example.com>", id("k1")),
                    format!("{}example.com>", id("k3")),
                )
            };
            let run = if round == 0 { "r1".to_owned() } else { run };
            let done = Arc::new(AtomicBool::new(false));
            let (first_seen, mut seen_once) = tokio::sync::watch::channel(false);
            let resolver = {
                let (engine, done) = (engine.clone(), done.clone());
                let input = ResolveInput::reply("support", &k3).now(now());
                tokio::spawn(async move {
                    let mut seen = Vec::new();
                    while !done.load(Ordering::SeqCst) {
                        match engine.resolve(&input).await {
                            Ok(out) => {
                                seen.push(out);
                                first_seen.send_replace(true);
                            }
                            Err(e) => {
                                assert_eq!(e.kind(), EngineErrorKind::NotFound, "{e}");
                                break;
                            }
                        }
                    }
                    seen
                })
            };
            // The erasure starts once a resolve has seen the thread, however slow the
            // machine, and runs while the next ones are under way.
            tokio::time::timeout(
                std::time::Duration::from_secs(30),
                seen_once.wait_for(|seen| *seen),
            )
            .await
            .unwrap_or_else(|_| panic!("{url}: round {round}: no resolve within 30 s"))
            .unwrap_or_else(|_| panic!("{url}: round {round}: the resolver stopped first"));
            engine.forget("kim@example.com", false).await.unwrap();
            done.store(true, Ordering::SeqCst);
            for out in resolver.await.unwrap() {
                let sources: Vec<Value> = out.sources().iter().map(|s| json!(s)).collect();
                let has = |v: Value| sources.contains(&v);
                let first = has(json!({"kind": "message", "message_id": k1}));
                let calls = has(json!({"kind": "tool_use", "run_id": run, "tool_call_id": "c2"}));
                let text = out.body.to_string();
                let attachment = text.contains("receipt.txt");
                assert_eq!(
                    (first, calls, attachment),
                    (first, first, first),
                    "{url}: round {round}: {text}"
                );
                whole += usize::from(first);
            }
        }
        assert!(
            whole >= 10,
            "{url}: {whole} resolves saw the thread before the erasure"
        );
        engine.db().await.unwrap().clone().close().await.unwrap();
    }
    drop_server_dbs(&urls, "provenance_race").await;
}

/// What a forget left behind or did too much, as the third red team found it: the thread
/// kept the erased person's subject, a quoted local part escaped, a persona's own address
/// erased every thread, and a malformed address was taken. On every backend.
#[tokio::test]
async fn forget_takes_the_subject_the_quoted_address_and_refuses_a_personas_own() {
    let dir = tempfile::tempdir().unwrap();
    let root = root();
    let fixture = json!({"threads": [
        {"subject": "Kim's divorce papers", "messages": [
            {"message_id": "<p1@example.com>", "direction": "inbound",
             "from": "Kim Lee <\"kim\"@example.com>", "to": ["support@acme.test"],
             "subject": "Kim's divorce papers", "sent_at": "2026-03-02T09:00:00Z",
             "text_body": "Private."},
            {"message_id": "<p2@example.com>", "direction": "inbound",
             "from": "bob@example.com", "to": ["support@acme.test"],
             "subject": "Re: Invoice question", "sent_at": "2026-03-02T10:00:00Z",
             "text_body": "Where is my invoice?"}
        ]}
    ]});
    std::fs::write(root.path().join("private.json"), fixture.to_string()).unwrap();
    let urls = every_backend(dir.path(), "provenance_forget_rules").await;
    for (url, _) in &urls {
        let engine = Engine::builder()
            .root(root.path())
            .database(url)
            .build()
            .await
            .unwrap();
        engine
            .import_fixture(&root.path().join("private.json"))
            .await
            .unwrap();
        let refused = |e: protege::EngineError| (e.kind(), e.to_string());
        assert_eq!(
            refused(engine.forget("Support <SUPPORT@acme.test>", true).await.unwrap_err()),
            (
                EngineErrorKind::InvalidInput,
                "`support@acme.test` is an address of persona `support`: forgetting it erases every thread of that persona; force it (`--force`, `\"force\": true`) if that is meant".to_owned()
            ),
            "{url}"
        );
        assert_eq!(
            refused(engine.forget("alice@", false).await.unwrap_err()),
            (
                EngineErrorKind::InvalidInput,
                "`alice@` is not an email address: it has nothing after its `@`".to_owned()
            ),
            "{url}"
        );
        // Forced, a dry run counts the persona's every message.
        let all = engine.forget_any("support@acme.test", true).await.unwrap();
        assert_eq!(all.messages, 2, "{url}");
        let removed = engine.forget("kim@example.com", false).await.unwrap();
        assert_eq!(removed.messages, 1, "{url}");
        let threads = engine.threads(10).await.unwrap();
        let subjects: Vec<&str> = threads.iter().map(|t| t.subject.as_str()).collect();
        assert_eq!(subjects, ["Invoice question"], "{url}");
        engine.db().await.unwrap().clone().close().await.unwrap();
    }
    drop_server_dbs(&urls, "provenance_forget_rules").await;
}
