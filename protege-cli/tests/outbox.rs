//! The outbox (§18) through the engine, on every backend: a run's reply composed once with
//! exact bytes, who receives it, when it waits, what the history shows, approvals that
//! race, and leases that only their holder may close.

use std::path::Path;

use protege::outbox::Composed;
use protege::runs::RoundInput;
use protege::{Direction, Engine, EngineErrorKind, Format, ResolveInput};
use serde_json::Value;

mod common;
use common::AGENT;
use common::server::{Server, TOKEN, every_backend};

const NOW: &str = "2026-03-10T10:00:00Z";
const TRIGGER: &str = "<order-1@example.com>";

/// An app root whose `agent` persona has `extra` appended (an `[agent]` table, say) and
/// trusts the authserv-id `mx.acme.test`.
fn root_with(extra: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    let persona = format!(
        "{AGENT}\n[mail]\ntrusted_authserv_ids = [\"mx.acme.test\"]\n\n[outbox]\nfrom_name = \"Acme Support\"\n{extra}"
    );
    std::fs::write(root.path().join("personas/agent.toml"), persona).unwrap();
    root
}

/// The customer's mail; `authenticated`: with a trusted `dmarc=pass` for her domain.
fn trigger(authenticated: bool) -> String {
    let auth = if authenticated {
        "Authentication-Results: mx.acme.test; dkim=pass header.d=example.com;\r\n dmarc=pass header.from=example.com\r\n"
    } else {
        // A header of an authserv-id nobody trusts, as a stranger can write one.
        "Authentication-Results: mx.evil.test; dmarc=pass header.from=example.com\r\n"
    };
    format!(
        "Received: from mail.example.com by mx.acme.test; Tue, 10 Mar 2026 09:00:01 +0000\r\n\
         {auth}\
         Message-ID: {TRIGGER}\r\n\
         From: Zoe Lee <zoe@example.com>\r\n\
         Reply-To: Zoe at work <zoe.lee@example.com>\r\n\
         To: Acme Support <support@acme.test>\r\n\
         Cc: Bob <bob@example.com>\r\n\
         Subject: AW: Where is my order?\r\n\
         Date: Tue, 10 Mar 2026 09:00:00 +0000\r\n\
         In-Reply-To: <order-0@acme.test>\r\n\
         References: <thread-start@example.com> <order-0@acme.test>\r\n\
         \r\n\
         Where is order A-1042?\r\n"
    )
}

/// The provider's final answer of the tests (a fixture that passes the schema check).
fn answer() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/responses/anthropic/good-loop-round-1.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

const ANSWER: &str = "Hello Zoe,\n\nyour order A-1042 left our warehouse on 9 March; the carrier has it in transit.\n\nBest,\nAcme Support";

/// A run of `engine` answering the trigger with `response` in one round: its id.
async fn answered(engine: &Engine, response: Value) -> String {
    let input = ResolveInput::reply("agent", TRIGGER)
        .format(Format::Anthropic)
        .now(NOW.parse().unwrap());
    let run = engine.start_run(&input).await.unwrap();
    engine
        .record_round(
            &run.id,
            RoundInput {
                round: 0,
                response,
                results: Vec::new(),
            },
        )
        .await
        .unwrap();
    run.id
}

/// An engine of `root` over `url` holding the trigger, and the id of a finished run that
/// answered it.
async fn finished_run(root: &Path, url: &str, authenticated: bool) -> (Engine, String) {
    let engine = Engine::builder()
        .root(root)
        .database(url)
        .build()
        .await
        .unwrap();
    engine
        .ingest_mail(trigger(authenticated).as_bytes(), Some(Direction::Inbound))
        .await
        .unwrap();
    let run = answered(&engine, answer()).await;
    (engine, run)
}

fn outbox_of(composed: Composed) -> protege::outbox::OutboxEntry {
    match composed {
        Composed::Reply { outbox } => *outbox,
        other => panic!("no reply: {other:?}"),
    }
}

/// The bytes of row `id`, with its random Message-ID replaced by `<ID>`.
async fn raw_of(engine: &Engine, id: i64) -> String {
    let entry = engine.outbox_entry(id, true).await.unwrap();
    entry.raw.unwrap().replace(&entry.message_id, "<ID>")
}

/// The roles and texts of the thread part of the request answering `message`.
async fn history_for(engine: &Engine, message: &str) -> Vec<(String, String)> {
    let input = ResolveInput::reply("agent", message)
        .format(Format::Messages)
        .now("2026-03-11T10:00:00Z".parse().unwrap());
    let body = engine.resolve(&input).await.unwrap().body;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// The customer's next mail, answering `parent`.
fn next_mail(parent: &str) -> String {
    format!(
        "Message-ID: <order-2@example.com>\r\nFrom: Zoe Lee <zoe@example.com>\r\nTo: support@acme.test\r\n\
         Subject: Re: Where is my order?\r\nDate: Wed, 11 Mar 2026 09:00:00 +0000\r\n\
         In-Reply-To: {parent}\r\nReferences: {TRIGGER} {parent}\r\n\r\nThanks!\r\n"
    )
}

const QUEUED_REPLY: &str = "From: \"Acme Support\" <support@acme.test>\r\n\
Subject: AW: Where is my order?\r\n\
Message-ID: <ID>\r\n\
Date: Tue, 10 Mar 2026 10:00:00 +0000\r\n\
To: \"Zoe at work\" <zoe.lee@example.com>\r\n\
In-Reply-To: <order-1@example.com>\r\n\
References: <thread-start@example.com> <order-0@acme.test>\r\n <order-1@example.com>\r\n\
Auto-Submitted: auto-replied\r\n\
X-Protege-Loop: support@acme.test\r\n\
MIME-Version: 1.0\r\n\
Content-Type: text/plain; charset=utf-8\r\n\
Content-Transfer-Encoding: quoted-printable\r\n\
\r\n\
Hello Zoe,\r\n\
\r\n\
your order A-1042 left our warehouse on 9 March; the carrier has it in tran=\r\n\
sit.\r\n\
\r\n\
Best,\r\n\
Acme Support\r\n\
\r\n";

#[tokio::test]
async fn a_reply_is_composed_once_stored_before_it_leaves_and_replayed_once_queued() {
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "protege_outbox_once").await {
        let root = root_with("");
        let (engine, run) = finished_run(root.path(), &url, true).await;
        let now = NOW.parse().unwrap();
        let first = outbox_of(engine.compose_reply_at(&run, now).await.unwrap());
        assert_eq!(
            (
                first.state.as_str(),
                first.reason.as_deref(),
                first.run_id.as_deref()
            ),
            ("queued", None, Some(run.as_str())),
            "{url}"
        );
        // Authenticated: the Reply-To in her domain is honoured; no Cc without reply_all.
        assert_eq!(raw_of(&engine, first.id).await, QUEUED_REPLY, "{url}");
        // Composing again answers the same row, bytes and Message-ID unchanged.
        let again = outbox_of(
            engine
                .compose_reply_at(&run, "2026-03-10T11:00:00Z".parse().unwrap())
                .await
                .unwrap(),
        );
        assert_eq!(again, first, "{url}");
        // The reply is the thread's outbound message at once, and the history shows it.
        let next = engine
            .ingest_mail(
                next_mail(&first.message_id).as_bytes(),
                Some(Direction::Inbound),
            )
            .await
            .unwrap();
        let history = history_for(&engine, &next.message_id).await;
        assert_eq!(history.len(), 3, "{url}: {history:?}");
        assert_eq!(history[1].0, "assistant", "{url}");
        assert!(history[1].1.ends_with(ANSWER), "{url}: {history:?}");
    }
}

#[tokio::test]
async fn a_reply_to_a_stranger_waits_is_never_shown_and_only_one_decision_wins() {
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "protege_outbox_wait").await {
        let root = root_with("");
        let (engine, run) = finished_run(root.path(), &url, false).await;
        let waiting = outbox_of(
            engine
                .compose_reply_at(&run, NOW.parse().unwrap())
                .await
                .unwrap(),
        );
        assert_eq!(
            (waiting.state.as_str(), waiting.reason.as_deref()),
            ("waiting", Some("unauthenticated")),
            "{url}"
        );
        // Not authenticated: the Reply-To a stranger can write is ignored.
        let raw = raw_of(&engine, waiting.id).await;
        assert!(
            raw.contains("\r\nTo: \"Zoe Lee\" <zoe@example.com>\r\n"),
            "{url}: {raw}"
        );
        // The customer never received it: the history does not show it.
        let next = engine
            .ingest_mail(next_mail(TRIGGER).as_bytes(), Some(Direction::Inbound))
            .await
            .unwrap();
        let roles: Vec<String> = history_for(&engine, &next.message_id)
            .await
            .into_iter()
            .map(|(role, _)| role)
            .collect();
        assert_eq!(roles, ["user", "user"], "{url}");

        // Two operators approve at once: one wins, the other is told the state.
        let (a, b) = tokio::join!(
            engine.approve_reply_at(
                waiting.id,
                "ann",
                None,
                "2026-03-10T12:00:00Z".parse().unwrap()
            ),
            engine.approve_reply_at(
                waiting.id,
                "bob",
                None,
                "2026-03-10T12:00:00Z".parse().unwrap()
            ),
        );
        let (won, lost) = match (a, b) {
            (Ok(won), Err(lost)) | (Err(lost), Ok(won)) => (won, lost),
            other => panic!("{url}: both or neither won: {other:?}"),
        };
        assert_eq!(won.state, "queued", "{url}");
        assert_eq!(lost.kind(), EngineErrorKind::Conflict, "{url}");
        assert_eq!(
            lost.to_string(),
            format!(
                "outbox row {} is `queued`: only a `waiting` row can be changed so",
                waiting.id
            ),
            "{url}"
        );
        // Approved: a person's reply, dated when it was queued.
        let raw = raw_of(&engine, waiting.id).await;
        assert!(
            raw.contains("\r\nDate: Tue, 10 Mar 2026 12:00:00 +0000\r\n"),
            "{url}"
        );
        assert!(raw.contains("\r\nAuto-Submitted: no\r\n"), "{url}");
        let roles: Vec<String> = history_for(&engine, &next.message_id)
            .await
            .into_iter()
            .map(|(role, _)| role)
            .collect();
        assert_eq!(roles, ["user", "assistant", "user"], "{url}");
        // A decision on a decided row is a conflict.
        let late = engine.reject_reply(waiting.id, "carol", "too late").await;
        assert_eq!(late.unwrap_err().kind(), EngineErrorKind::Conflict, "{url}");
    }
}

#[tokio::test]
async fn an_edited_draft_is_what_leaves_and_what_the_history_shows() {
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "protege_outbox_edit").await {
        let root = root_with("\n[agent]\nreply = \"draft\"\n");
        let (engine, run) = finished_run(root.path(), &url, true).await;
        let draft = outbox_of(
            engine
                .compose_reply_at(&run, NOW.parse().unwrap())
                .await
                .unwrap(),
        );
        assert_eq!(draft.reason.as_deref(), Some("draft"), "{url}");
        let blank = engine
            .approve_reply(draft.id, "ann", Some("  \n"))
            .await
            .unwrap_err();
        assert_eq!(
            blank.to_string(),
            "the edited text is blank: reject the reply instead",
            "{url}"
        );
        let edited = "Hello Zoe,\n\nit arrives tomorrow.\n\nAnn, Acme Support";
        let approved = engine
            .approve_reply_at(
                draft.id,
                "Ann\r\nBcc: x",
                Some(edited),
                "2026-03-10T12:00:00Z".parse().unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(approved.approved_by.as_deref(), Some("Ann Bcc: x"), "{url}");
        let raw = raw_of(&engine, draft.id).await;
        assert!(
            raw.ends_with(
                "\r\n\r\nHello Zoe,\r\n\r\nit arrives tomorrow.\r\n\r\nAnn, Acme Support\r\n\r\n"
            ),
            "{url}: {raw}"
        );
        // The run keeps the model's text.
        let record = engine.run(&run).await.unwrap();
        assert_eq!(
            record.rounds[0].response["content"][0]["text"], ANSWER,
            "{url}"
        );
        let next = engine
            .ingest_mail(
                next_mail(&draft.message_id).as_bytes(),
                Some(Direction::Inbound),
            )
            .await
            .unwrap();
        let history = history_for(&engine, &next.message_id).await;
        assert!(history[1].1.ends_with(edited), "{url}: {history:?}");
    }
}

#[tokio::test]
async fn a_lease_is_closed_only_by_its_holder() {
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "protege_outbox_lease").await {
        let root = root_with("");
        let (engine, run) = finished_run(root.path(), &url, true).await;
        let row = outbox_of(engine.compose_reply(&run).await.unwrap());
        let lease = std::time::Duration::from_secs(60);
        let claimed = engine.claim_outbox("app-a", 10, lease, None).await.unwrap();
        assert_eq!(claimed.len(), 1, "{url}");
        assert_eq!(claimed[0].entry.state, "sending", "{url}");
        assert_eq!(claimed[0].recipients, ["zoe.lee@example.com"], "{url}");
        assert_eq!(claimed[0].envelope_from, "support@acme.test", "{url}");
        assert!(
            engine
                .claim_outbox("app-b", 10, lease, None)
                .await
                .unwrap()
                .is_empty(),
            "{url}"
        );
        let stolen = engine
            .mark_sent(row.id, "app-b", "250 ok")
            .await
            .unwrap_err();
        assert_eq!(stolen.kind(), EngineErrorKind::Conflict, "{url}");
        assert_eq!(
            stolen.to_string(),
            format!(
                "outbox row {} is `sending` under the lease of `app-a`: only the holder of a live lease (`app-b`) can record its delivery",
                row.id
            ),
            "{url}"
        );
        let sent = engine
            .mark_sent(row.id, "app-a", "250 2.0.0 Ok: queued as 4F1")
            .await
            .unwrap();
        assert_eq!(
            (
                sent.state.as_str(),
                sent.smtp_reply.as_deref(),
                sent.attempts
            ),
            ("sent", Some("250 2.0.0 Ok: queued as 4F1"), 1),
            "{url}"
        );
        // A sent row is not claimed again, and cannot be retried.
        assert!(
            engine
                .claim_outbox("app-a", 10, lease, None)
                .await
                .unwrap()
                .is_empty(),
            "{url}"
        );
        let retry = engine.retry_reply(row.id, "ann").await.unwrap_err();
        assert_eq!(retry.kind(), EngineErrorKind::Conflict, "{url}");
    }
}

#[tokio::test]
async fn only_a_finished_reply_run_composes() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let root = root_with("");
    let engine = Engine::builder()
        .root(root.path())
        .database(&url)
        .build()
        .await
        .unwrap();
    engine
        .ingest_mail(trigger(true).as_bytes(), Some(Direction::Inbound))
        .await
        .unwrap();
    let input = ResolveInput::reply("agent", TRIGGER)
        .format(Format::Anthropic)
        .now(NOW.parse().unwrap());
    let run = engine.start_run(&input).await.unwrap();
    let started = engine.compose_reply(&run.id).await.unwrap_err();
    assert_eq!(started.kind(), EngineErrorKind::InvalidInput);
    assert_eq!(
        started.to_string(),
        format!(
            "run `{}` is `started`: only a finished run has a reply",
            run.id
        )
    );
    let unknown = engine.compose_reply("run_nope").await.unwrap_err();
    assert_eq!(unknown.kind(), EngineErrorKind::NotFound);
    let unknown_row = engine.approve_reply(999, "ann", None).await.unwrap_err();
    assert_eq!(
        unknown_row.to_string(),
        "unknown outbox row 999: no row with this id in the database"
    );
}

#[tokio::test]
async fn forgetting_the_customer_removes_her_replies_and_their_bytes() {
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "protege_outbox_forget").await {
        // Not authenticated: the reply waits, addressed to her From.
        let root = root_with("");
        let (engine, run) = finished_run(root.path(), &url, false).await;
        let draft = outbox_of(engine.compose_reply(&run).await.unwrap());
        let removed = engine.forget("zoe@example.com", false).await.unwrap();
        assert_eq!(
            serde_json::to_value(removed).unwrap(),
            serde_json::json!({"messages": 2, "attachments": 0, "tool_uses": 0, "runs": 1,
                "run_rounds": 1, "thread_summaries": 0, "message_addresses": 5,
                "email_threads": 1, "agent_jobs": 0, "outbox": 1, "tool_approvals": 0,
                "inbox_rejects": 0, "responsibility_slots": 0, "erased_messages": 2}),
            "{url}"
        );
        let gone = engine.outbox_entry(draft.id, true).await.unwrap_err();
        assert_eq!(gone.kind(), EngineErrorKind::NotFound, "{url}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forgetting_waits_for_a_reply_being_sent_and_removes_it_once_sent() {
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "protege_outbox_forget_sending").await {
        // Authenticated: the reply is queued, and a worker claims it.
        let root = root_with("");
        let (engine, run) = finished_run(root.path(), &url, true).await;
        let reply = outbox_of(engine.compose_reply(&run).await.unwrap());
        let claimed = engine
            .claim_outbox("smtp-worker", 1, std::time::Duration::from_secs(60), None)
            .await
            .unwrap();
        assert_eq!(claimed.len(), 1, "{url}");
        let forgetting = {
            let engine = engine.clone();
            // The reply goes to her Reply-To.
            tokio::spawn(async move { engine.forget("zoe.lee@example.com", false).await })
        };
        // The SMTP exchange is under way: nothing is removed meanwhile.
        tokio::time::sleep(std::time::Duration::from_millis(600)).await;
        assert!(!forgetting.is_finished(), "{url}");
        assert_eq!(
            engine.outbox_entry(reply.id, false).await.unwrap().state,
            "sending",
            "{url}"
        );
        // The server said 250: the worker records it, and only then the erasure runs.
        engine
            .mark_sent(reply.id, "smtp-worker", "250 2.0.0 Ok: queued as 1")
            .await
            .unwrap();
        let removed = tokio::time::timeout(std::time::Duration::from_secs(30), forgetting)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(removed.outbox, 1, "{url}");
        let gone = engine.outbox_entry(reply.id, true).await.unwrap_err();
        assert_eq!(gone.kind(), EngineErrorKind::NotFound, "{url}");
    }
}

/// A delivery report of the mail server `mx.example.com` returning the headers of the
/// message `returned`.
fn delivery_report(id: &str, returned: &str) -> String {
    format!(
        "From: MAILER-DAEMON@mx.example.com\r\nTo: support@acme.test\r\n\
         Subject: Undelivered Mail Returned to Sender\r\nMessage-ID: {id}\r\n\
         Date: Wed, 11 Mar 2026 10:00:00 +0000\r\n\
         Content-Type: multipart/report; report-type=delivery-status; boundary=b\r\n\r\n\
         --b\r\nContent-Type: text/plain\r\n\r\nThe mail could not be delivered.\r\n\
         --b\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.example.com\r\n\r\n\
         Final-Recipient: rfc822; zoe.lee@example.com\r\nAction: failed\r\nStatus: 5.1.1\r\n\
         --b\r\nContent-Type: text/rfc822-headers\r\n\r\nFrom: support@acme.test\r\n\
         Message-ID: {returned}\r\nSubject: Re: Where is my order?\r\n\
         --b--\r\n"
    )
}

#[tokio::test]
async fn a_delivery_report_marks_the_sent_reply_it_returns_bounced_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "protege_outbox_bounce").await {
        let root = root_with("");
        let (engine, run) = finished_run(root.path(), &url, true).await;
        let reply = outbox_of(engine.compose_reply(&run).await.unwrap());
        // A report before the reply was sent marks nothing.
        let early = delivery_report("<dsn-0@mx.example.com>", &reply.message_id);
        engine
            .ingest_mail(early.as_bytes(), Some(Direction::Inbound))
            .await
            .unwrap();
        assert_eq!(
            engine.outbox_entry(reply.id, false).await.unwrap().state,
            "queued",
            "{url}"
        );
        engine
            .claim_outbox("smtp-worker", 1, std::time::Duration::from_secs(60), None)
            .await
            .unwrap();
        engine
            .mark_sent(reply.id, "smtp-worker", "250 2.0.0 Ok")
            .await
            .unwrap();
        let report = delivery_report("<dsn-1@mx.example.com>", &reply.message_id);
        engine
            .ingest_mail(report.as_bytes(), Some(Direction::Inbound))
            .await
            .unwrap();
        let row = engine.outbox_entry(reply.id, false).await.unwrap();
        assert_eq!(
            (row.state.as_str(), row.reason.as_deref()),
            ("bounced", Some("delivery report <dsn-1@mx.example.com>")),
            "{url}"
        );
    }
}

#[tokio::test]
async fn a_subject_too_long_for_one_header_line_composes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let root = root_with("");
    let engine = Engine::builder()
        .root(root.path())
        .database(&url)
        .build()
        .await
        .unwrap();
    let long = "x".repeat(10_000);
    let mail = trigger(true).replace(
        "Subject: AW: Where is my order?",
        &format!("Subject: {long}"),
    );
    engine
        .ingest_mail(mail.as_bytes(), Some(Direction::Inbound))
        .await
        .unwrap();
    let run = answered(&engine, answer()).await;
    let err = engine.compose_reply(&run).await.unwrap_err();
    assert_eq!(err.kind(), EngineErrorKind::InvalidInput);
    assert_eq!(
        err.to_string(),
        format!(
            "the subject of run `{run}`'s trigger makes a reply subject of 10004 characters, over the 998 of one mail header line: no reply is composed"
        )
    );
    assert!(
        engine
            .outbox(&protege::outbox::OutboxFilter {
                limit: 10,
                ..Default::default()
            })
            .await
            .unwrap()
            .is_empty()
    );
}

/// `{"error":{"kind","message"}}`.
fn api_error(kind: &str, message: &str) -> Value {
    serde_json::json!({"error": {"kind": kind, "message": message}})
}

#[tokio::test]
async fn the_outbox_over_http() {
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "protege_outbox_http").await {
        let root = root_with("");
        let server = Server::start(root.path(), &url, Some(TOKEN), &["--no-watch"]);
        let post = |path: String, body: Value| {
            let server = &server;
            async move {
                let (status, text) = server
                    .post(&path, "application/json", body.to_string())
                    .await;
                (
                    status,
                    serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text)),
                )
            }
        };
        let get = |path: String| {
            let server = &server;
            async move {
                let (status, text) = server.get(&path, Some(TOKEN)).await;
                (
                    status,
                    serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text)),
                )
            }
        };
        let (status, _) = server
            .post("/v1/mail", "message/rfc822", trigger(false))
            .await;
        assert_eq!(status, 201, "{url}");
        let start = serde_json::json!({"persona": "agent", "message_id": TRIGGER, "format": "anthropic", "now": NOW});
        let (status, run) = post("/v1/runs".into(), start).await;
        assert_eq!(status, 201, "{url}: {run}");
        let run_id = run["run_id"].as_str().unwrap().to_owned();
        let round = serde_json::json!({"round": 0, "response": answer(), "results": []});
        let (status, _) = post(format!("/v1/runs/{run_id}/rounds"), round).await;
        assert_eq!(status, 200, "{url}");

        // Composed once: the same row on every call.
        let (status, first) = post(format!("/v1/runs/{run_id}/reply"), Value::Null).await;
        assert_eq!(status, 201, "{url}: {first}");
        assert_eq!(first["status"], "reply", "{url}");
        let row = &first["outbox"];
        assert_eq!(
            (
                &row["state"],
                &row["reason"],
                &row["run_id"],
                &row["persona"]
            ),
            (
                &Value::from("waiting"),
                &Value::from("unauthenticated"),
                &Value::from(run_id.as_str()),
                &Value::from("agent")
            ),
            "{url}"
        );
        let id = row["id"].as_i64().unwrap();
        let (_, again) = post(format!("/v1/runs/{run_id}/reply"), Value::Null).await;
        assert_eq!(again, first, "{url}");
        let (status, unknown) = post("/v1/runs/run_nope/reply".into(), Value::Null).await;
        assert_eq!(status, 404, "{url}: {unknown}");

        // Listed by state, shown with its bytes.
        let (status, listed) = get("/v1/outbox?state=waiting".into()).await;
        assert_eq!(status, 200, "{url}");
        assert_eq!(listed["outbox"], serde_json::json!([row]), "{url}");
        let (_, none) = get("/v1/outbox?state=sent".into()).await;
        assert_eq!(none, serde_json::json!({"outbox": []}), "{url}");
        let (status, shown) = get(format!("/v1/outbox/{id}")).await;
        assert_eq!(status, 200, "{url}");
        assert!(
            shown["raw"]
                .as_str()
                .unwrap()
                .contains("\r\nIn-Reply-To: <order-1@example.com>\r\n"),
            "{url}"
        );
        let (status, bad) = get("/v1/outbox/abc".into()).await;
        assert_eq!(
            (status, bad),
            (
                404,
                api_error(
                    "not_found",
                    "unknown outbox row `abc`: a row's id is an integer (see `GET /v1/outbox`)"
                )
            ),
            "{url}"
        );

        // Claimed only once approved; the first decision wins.
        let claim = serde_json::json!({"owner": "app-a", "limit": 5, "lease": 30});
        let (_, nothing) = post("/v1/outbox/claim".into(), claim.clone()).await;
        assert_eq!(nothing, serde_json::json!({"outbox": []}), "{url}");
        let (status, blank) = post(
            format!("/v1/outbox/{id}/approve"),
            serde_json::json!({"by": " "}),
        )
        .await;
        assert_eq!(
            (status, blank),
            (
                422,
                api_error(
                    "invalid_input",
                    "`by` must name who decides: 1 to 200 characters on one line"
                )
            ),
            "{url}"
        );
        let (status, approved) = post(
            format!("/v1/outbox/{id}/approve"),
            serde_json::json!({"by": "ann"}),
        )
        .await;
        assert_eq!(
            (status, &approved["state"], &approved["approved_by"]),
            (200, &Value::from("queued"), &Value::from("ann")),
            "{url}"
        );
        let (status, late) = post(
            format!("/v1/outbox/{id}/reject"),
            serde_json::json!({"by": "bob", "reason": "no"}),
        )
        .await;
        assert_eq!(
            (status, late),
            (
                409,
                api_error(
                    "conflict",
                    &format!("outbox row {id} is `queued`: only a `waiting` row can be changed so")
                )
            ),
            "{url}"
        );
        let (status, claimed) = post("/v1/outbox/claim".into(), claim).await;
        assert_eq!(status, 200, "{url}");
        assert_eq!(claimed["outbox"][0]["id"], id, "{url}");
        assert_eq!(
            claimed["outbox"][0]["recipients"],
            serde_json::json!(["zoe@example.com"]),
            "{url}"
        );
        assert_eq!(
            claimed["outbox"][0]["envelope_from"], "support@acme.test",
            "{url}"
        );
        assert!(
            claimed["outbox"][0]["raw"]
                .as_str()
                .unwrap()
                .contains("\r\nAuto-Submitted: no\r\n"),
            "{url}"
        );
        let (status, stolen) = post(
            format!("/v1/outbox/{id}/sent"),
            serde_json::json!({"owner": "app-b", "smtp_reply": "250 ok"}),
        )
        .await;
        assert_eq!(status, 409, "{url}: {stolen}");
        let (status, sent) = post(
            format!("/v1/outbox/{id}/sent"),
            serde_json::json!({"owner": "app-a", "smtp_reply": "250 2.0.0 queued"}),
        )
        .await;
        assert_eq!(
            (status, &sent["state"], &sent["smtp_reply"]),
            (200, &Value::from("sent"), &Value::from("250 2.0.0 queued")),
            "{url}"
        );
        let (status, held) = post(
            "/v1/outbox/hold".into(),
            serde_json::json!({"persona": "agent"}),
        )
        .await;
        assert_eq!(
            (status, held),
            (200, serde_json::json!({"held": 0})),
            "{url}"
        );
        drop(server);
    }
}

#[tokio::test]
async fn the_reply_a_customer_answers_is_in_her_history_whatever_her_clock_says() {
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "protege_outbox_parent").await {
        let root = root_with("");
        let (engine, run) = finished_run(root.path(), &url, true).await;
        let reply = outbox_of(
            engine
                .compose_reply_at(&run, NOW.parse().unwrap())
                .await
                .unwrap(),
        );
        // Her answer to the reply, dated (by a slow clock) before the reply was sent.
        let answer = next_mail(&reply.message_id).replace(
            "Date: Wed, 11 Mar 2026 09:00:00 +0000",
            "Date: Tue, 10 Mar 2026 09:30:00 +0000",
        );
        let next = engine
            .ingest_mail(answer.as_bytes(), Some(Direction::Inbound))
            .await
            .unwrap();
        let roles: Vec<String> = history_for(&engine, &next.message_id)
            .await
            .into_iter()
            .map(|(role, _)| role)
            .collect();
        assert_eq!(roles, ["user", "assistant", "user"], "{url}");
    }
}

#[tokio::test]
async fn a_reply_holding_a_secret_waits_without_showing_it() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let root = root_with("");
    const KEY: &str = "fence-key-0f3a9c2e71";
    let engine = Engine::builder()
        .root(root.path())
        .database(&url)
        .fence_key(KEY)
        .build()
        .await
        .unwrap();
    engine
        .ingest_mail(trigger(true).as_bytes(), Some(Direction::Inbound))
        .await
        .unwrap();
    let mut leak = answer();
    leak["content"][0]["text"] = Value::String(format!("Sure, the key is {KEY}."));
    let run = answered(&engine, leak).await;
    let row = outbox_of(engine.compose_reply(&run).await.unwrap());
    assert_eq!(
        (row.state.as_str(), row.reason.as_deref()),
        ("waiting", Some("contains a secret"))
    );
    assert!(!serde_json::to_string(&row).unwrap().contains(KEY));
}
