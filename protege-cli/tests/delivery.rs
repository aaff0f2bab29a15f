//! The outbox's delivery (§18) through a real Postfix (`PROTEGE_TEST_POSTFIX`, installed by
//! `scripts/postfix-install`): the stored bytes arrive byte for byte and once, a refused
//! recipient is dropped and recorded, a message over the server's size is failed with its
//! answer, and a server that never answers leaves the row queued for later. SQLite and,
//! when named by the environment, PostgreSQL and MariaDB.

use std::path::Path;
use std::time::Duration;

use protege::outbox::Composed;
use protege::runs::RoundInput;
use protege::{Direction, Engine, Format, ResolveInput};
use serde_json::Value;

mod common;
use common::AGENT;
use common::postfix::{Options, Postfix};
use common::server::{Server, TOKEN, every_backend};

const TRIGGER: &str = "<ship-1@example.com>";

/// An app root whose `agent` persona sends through `smtp` (plain text on loopback) and
/// trusts `mx.acme.test`; `extra` is appended.
fn root_with(smtp: &str, extra: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    let persona = format!(
        "{AGENT}\n[mail]\ntrusted_authserv_ids = [\"mx.acme.test\"]\n\n\
         [outbox]\nsmtp = \"{smtp}\"\ntls = \"none\"\nattempt_timeout = \"2s\"\n{extra}"
    );
    std::fs::write(root.path().join("personas/agent.toml"), persona).unwrap();
    root
}

/// Zoe's authenticated mail, copied to `cc`.
fn trigger(cc: &str) -> String {
    format!(
        "Received: from mail.example.com by mx.acme.test; Tue, 10 Mar 2026 09:00:01 +0000\r\n\
         Authentication-Results: mx.acme.test; dmarc=pass header.from=example.com\r\n\
         Message-ID: {TRIGGER}\r\n\
         From: Zoe Lee <zoe@example.com>\r\n\
         To: support@acme.test\r\n\
         Cc: {cc}\r\n\
         Subject: Where is my order?\r\n\
         Date: Tue, 10 Mar 2026 09:00:00 +0000\r\n\
         \r\n\
         Where is order A-1042?\r\n"
    )
}

/// The text the model answers with: `body` as an Anthropic final answer.
fn answer(body: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/responses/anthropic/good-loop-round-1.json");
    let mut response: Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    response["content"][0]["text"] = Value::String(body.to_owned());
    response
}

/// An engine of `root` over `url` with Zoe's mail answered by a finished run whose reply
/// is composed: the engine and the reply's outbox row id.
async fn composed(root: &Path, url: &str, cc: &str, body: &str) -> (Engine, i64) {
    let engine = Engine::builder()
        .root(root)
        .database(url)
        .build()
        .await
        .unwrap();
    engine
        .ingest_mail(trigger(cc).as_bytes(), Some(Direction::Inbound))
        .await
        .unwrap();
    let input = ResolveInput::reply("agent", TRIGGER)
        .format(Format::Anthropic)
        .now("2026-03-10T10:00:00Z".parse().unwrap());
    let run = engine.start_run(&input).await.unwrap();
    engine
        .record_round(
            &run.id,
            RoundInput {
                round: 0,
                response: answer(body),
                results: Vec::new(),
            },
        )
        .await
        .unwrap();
    match engine.compose_reply(&run.id).await.unwrap() {
        Composed::Reply { outbox } => (engine, outbox.id),
        other => panic!("no reply: {other:?}"),
    }
}

const WAIT: Duration = Duration::from_secs(30);

/// One delivery pass of a worker over `engine`.
async fn one_pass(engine: &Engine) -> protege::agent::Pass {
    engine
        .delivery("test-worker")
        .await
        .unwrap()
        .deliver_once(None)
        .await
        .unwrap()
}

#[tokio::test]
async fn the_stored_bytes_arrive_once_and_a_refused_recipient_is_dropped() {
    let Some(postfix) = Postfix::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let smtp = format!("smtp://127.0.0.1:{}", postfix.port());
    for (n, (url, _)) in every_backend(dir.path(), "protege_delivery_once")
        .await
        .into_iter()
        .enumerate()
    {
        let root = root_with(&smtp, "\n[agent]\nreply_all = true\n");
        // A different Cc per backend, so each backend's copies are counted apart.
        let bob = format!("bob{n}@example.org");
        let cc = format!("Bob <{bob}>, refused-kim{n}@example.com");
        let (engine, id) = composed(root.path(), &url, &cc, "It ships today.").await;
        let worker = engine.delivery("test-worker").await.unwrap();
        let pass = worker.deliver_once(None).await.unwrap();
        assert_eq!(
            pass.to_string(),
            "sent 1, retried 0, failed 0, held 0",
            "{url}"
        );
        let row = engine.outbox_entry(id, true).await.unwrap();
        assert_eq!(row.state, "sent", "{url}");
        assert_eq!(
            engine.agent_readiness().await.unwrap()["outbox"],
            serde_json::json!({"agent": {"state": "up"}}),
            "{url}"
        );
        assert!(
            row.smtp_reply
                .as_deref()
                .unwrap_or_default()
                .starts_with("250 2.0.0 Ok: queued as "),
            "{url}: {:?}",
            row.smtp_reply
        );
        assert_eq!(
            row.refused_recipients,
            serde_json::json!([{
                "address": format!("refused-kim{n}@example.com"),
                "reply": format!("permanent error (550): 5.1.1 <refused-kim{n}@example.com>: Recipient address rejected: User unknown"),
            }]),
            "{url}"
        );
        // Byte for byte what was stored (Postfix keeps LF line ends), once per recipient.
        let stored = row.raw.unwrap().replace("\r\n", "\n");
        // (Zoe receives one reply per backend: the earlier ones are the earlier backends'.)
        for (address, copies) in [("zoe@example.com", n + 1), (bob.as_str(), 1)] {
            let arrived = postfix.wait_for(address, copies, WAIT);
            assert_eq!(arrived.len(), copies, "{url}: {address}");
            assert_eq!(
                String::from_utf8(Postfix::as_sent(&arrived[copies - 1])).unwrap(),
                stored,
                "{url}: {address}"
            );
        }
        assert!(
            postfix
                .delivered(&format!("refused-kim{n}@example.com"))
                .is_empty()
        );
        // Nothing is sent twice.
        let again = worker.deliver_once(None).await.unwrap();
        assert_eq!(
            again.to_string(),
            "sent 0, retried 0, failed 0, held 0",
            "{url}"
        );
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(postfix.delivered("zoe@example.com").len(), n + 1, "{url}");
    }
}

#[tokio::test]
async fn a_message_over_the_servers_size_fails_with_its_answer() {
    let Some(postfix) = Postfix::start_with(Options {
        message_size_limit: Some(2048),
    }) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let root = root_with(&format!("smtp://127.0.0.1:{}", postfix.port()), "");
    let (engine, id) = composed(
        root.path(),
        &url,
        "bob@example.org",
        &"A long answer. ".repeat(400),
    )
    .await;
    let pass = one_pass(&engine).await;
    assert_eq!(pass.to_string(), "sent 0, retried 0, failed 1, held 0");
    let row = engine.outbox_entry(id, false).await.unwrap();
    assert_eq!(
        (row.state.as_str(), row.smtp_reply.as_deref()),
        (
            "failed",
            Some("permanent error (552): 5.3.4 Error: message file too big")
        )
    );
    assert!(postfix.delivered("zoe@example.com").is_empty());
    // A person queues it again: same bytes, and it fails the same way.
    engine.retry_reply(id, "ann").await.unwrap();
    assert_eq!(
        engine.outbox_entry(id, false).await.unwrap().state,
        "queued"
    );
}

#[tokio::test]
async fn a_server_that_never_answers_leaves_the_reply_queued() {
    // A server that accepts the connection and says nothing.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let _held = std::thread::spawn(move || {
        let mut open = Vec::new();
        for stream in listener.incoming().flatten() {
            open.push(stream);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let root = root_with(&format!("smtp://127.0.0.1:{port}"), "");
    let (engine, id) = composed(root.path(), &url, "bob@example.org", "Hello").await;
    let pass = one_pass(&engine).await;
    assert_eq!(
        pass.to_string(),
        format!(
            "sent 0, retried 1, failed 0, held 0\noutbox of `agent` is down: no answer from 127.0.0.1:{port} within 2 s"
        )
    );
    let row = engine.outbox_entry(id, false).await.unwrap();
    assert_eq!(row.state, "queued");
    assert_eq!(
        row.attempts, 0,
        "a failure that is not about the message is not an attempt"
    );
    assert!(row.next_attempt_at.is_some());
    // `/readyz` tells the token's holder why.
    assert_eq!(
        engine.agent_readiness().await.unwrap()["outbox"],
        serde_json::json!({"agent": {
            "state": "down",
            "reason": format!("no answer from 127.0.0.1:{port} within 2 s"),
        }})
    );
}

#[tokio::test]
async fn a_draft_persona_holds_what_no_person_approved() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    // Queued while the persona sent; then the operator switches it to drafts.
    let root = root_with("smtp://127.0.0.1:9", "");
    let (_, id) = composed(root.path(), &url, "bob@example.org", "Hello").await;
    let persona = root.path().join("personas/agent.toml");
    let text = std::fs::read_to_string(&persona).unwrap();
    std::fs::write(&persona, format!("{text}\n[agent]\nreply = \"draft\"\n")).unwrap();
    let engine = Engine::builder()
        .root(root.path())
        .database(&url)
        .build()
        .await
        .unwrap();
    let pass = one_pass(&engine).await;
    assert_eq!(pass.to_string(), "sent 0, retried 0, failed 0, held 1");
    let row = engine.outbox_entry(id, false).await.unwrap();
    assert_eq!(
        (row.state.as_str(), row.held_reason.as_deref()),
        ("queued", Some("reply = \"draft\""))
    );
    // The setting undone, the setting's hold goes.
    std::fs::write(&persona, &text).unwrap();
    let engine = Engine::builder()
        .root(root.path())
        .database(&url)
        .build()
        .await
        .unwrap();
    let pass = one_pass(&engine).await;
    // Sent on its way again: nothing listens on port 9, so the server is down.
    assert!(
        pass.to_string()
            .starts_with("sent 0, retried 1, failed 0, held 0\noutbox of `agent` is down: "),
        "{pass}"
    );
    let row = engine.outbox_entry(id, false).await.unwrap();
    assert_eq!(
        (row.state.as_str(), row.held_reason.as_deref()),
        ("queued", None)
    );
    // An operator's hold stays until released.
    assert_eq!(engine.hold_outbox(Some("agent")).await.unwrap(), 1);
    let pass = one_pass(&engine).await;
    assert_eq!(pass.to_string(), "sent 0, retried 0, failed 0, held 0");
    let row = engine.outbox_entry(id, false).await.unwrap();
    assert_eq!(row.held_reason.as_deref(), Some("held by an operator"));
    assert_eq!(engine.release_outbox(None).await.unwrap(), 1);
}

#[tokio::test]
async fn serve_delivers_what_is_queued_and_counts_it() {
    let Some(postfix) = Postfix::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let root = root_with(&format!("smtp://127.0.0.1:{}", postfix.port()), "");
    let (_, id) = composed(root.path(), &url, "bob@example.org", "On its way.").await;
    let server = Server::start(root.path(), &url, Some(TOKEN), &["--no-watch"]);
    let arrived = postfix.wait_for("zoe@example.com", 1, WAIT);
    assert_eq!(arrived.len(), 1);
    // `sent` is written right after the server's answer.
    let deadline = std::time::Instant::now() + WAIT;
    let row = loop {
        let (status, text) = server.get(&format!("/v1/outbox/{id}"), Some(TOKEN)).await;
        assert_eq!(status, 200);
        let row: Value = serde_json::from_str(&text).unwrap();
        if row["state"] == "sent" || std::time::Instant::now() > deadline {
            break row;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(row["state"], "sent");
    let (_, metrics) = server.get("/metrics", Some(TOKEN)).await;
    let line = r#"protege_outbox_deliveries_total{persona="agent",outcome="sent"} 1"#;
    assert!(
        metrics.lines().any(|l| l == line),
        "no `{line}` in\n{metrics}"
    );
}

#[tokio::test]
async fn two_serve_processes_deliver_each_reply_once() {
    let Some(postfix) = Postfix::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let root = root_with(&format!("smtp://127.0.0.1:{}", postfix.port()), "");
    let engine = Engine::builder()
        .root(root.path())
        .database(&url)
        .build()
        .await
        .unwrap();
    // Twenty customers, each with a queued reply.
    const N: usize = 20;
    for n in 0..N {
        let id = format!("<many-{n}@example.com>");
        let mail = trigger("x@example.org")
            .replace(TRIGGER, &id)
            .replace("zoe@example.com", &format!("c{n}@example.com"));
        engine
            .ingest_mail(mail.as_bytes(), Some(Direction::Inbound))
            .await
            .unwrap();
        let input = ResolveInput::reply("agent", id.as_str())
            .format(Format::Anthropic)
            .now("2026-03-10T10:00:00Z".parse().unwrap());
        let run = engine.start_run(&input).await.unwrap();
        engine
            .record_round(
                &run.id,
                RoundInput {
                    round: 0,
                    response: answer("Hello"),
                    results: Vec::new(),
                },
            )
            .await
            .unwrap();
        assert!(matches!(
            engine.compose_reply(&run.id).await.unwrap(),
            Composed::Reply { .. }
        ));
    }
    let a = Server::start(root.path(), &url, Some(TOKEN), &["--no-watch"]);
    let b = Server::start(root.path(), &url, Some(TOKEN), &["--no-watch"]);
    for n in 0..N {
        postfix.wait_for(&format!("c{n}@example.com"), 1, WAIT);
    }
    // Both had every chance to send a second copy.
    std::thread::sleep(Duration::from_secs(3));
    for n in 0..N {
        assert_eq!(
            postfix.delivered(&format!("c{n}@example.com")).len(),
            1,
            "customer {n}"
        );
    }
    let sent = engine
        .outbox(&protege::outbox::OutboxFilter {
            state: Some("sent".into()),
            limit: 100,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(sent.len(), N);
    drop((a, b));
}
