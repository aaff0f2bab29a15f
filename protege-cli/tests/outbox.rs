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
use common::server::every_backend;

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
    let input = ResolveInput::reply("agent", TRIGGER)
        .format(Format::Anthropic)
        .now(NOW.parse().unwrap());
    let run = engine.start_run(&input).await.unwrap();
    engine
        .record_round(
            &run.id,
            RoundInput {
                round: 0,
                response: answer(),
                results: Vec::new(),
            },
        )
        .await
        .unwrap();
    (engine, run.id)
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
                "email_threads": 1, "outbox": 1}),
            "{url}"
        );
        let gone = engine.outbox_entry(draft.id, true).await.unwrap_err();
        assert_eq!(gone.kind(), EngineErrorKind::NotFound, "{url}");
    }
}
