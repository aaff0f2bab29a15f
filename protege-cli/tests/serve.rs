// Tests may stay long: one request to the running service after another, sharing its helpers.
//! `protege serve` end to end: the real binary on a free loopback port, spoken to over HTTP.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

mod common;
use common::project;
use common::server::{Server, TOKEN, demo_db, every_backend, execute, fresh_server_db, protege};
use common::snapshot;

const NOW: &str = "2026-03-10T08:00:00Z";

fn error(kind: &str, message: &str) -> String {
    json!({"error": {"kind": kind, "message": message}}).to_string()
}

fn expected(name: &str) -> String {
    snapshot::expected_output(&project().join("tests/expected"), name)
}

#[tokio::test]
async fn routes_statuses_and_errors() {
    let (_dir, url) = demo_db();
    let server = Server::start(&project(), &url, Some(TOKEN), &[]);

    assert_eq!(
        server.get("/healthz", None).await,
        (200, r#"{"status":"ok"}"#.into())
    );
    assert_eq!(
        server.get("/readyz", None).await,
        (200, r#"{"status":"ready"}"#.into())
    );
    let unauthorized = error(
        "unauthorized",
        "this route needs `Authorization: Bearer <token>` with the token the service was started with",
    );
    assert_eq!(
        server.get("/v1/personas", None).await,
        (401, unauthorized.clone())
    );
    assert_eq!(
        server.get("/v1/personas", Some("wrong")).await,
        (401, unauthorized.clone())
    );
    assert_eq!(server.get("/metrics", None).await, (401, unauthorized));

    let (status, text) = server.get("/v1/personas", Some(TOKEN)).await;
    assert_eq!(status, 200);
    let personas: Value = serde_json::from_str(&text).unwrap();
    let support = &personas["personas"][2];
    assert_eq!(
        (
            personas["personas"][0]["name"].clone(),
            personas["personas"][1]["name"].clone(),
            support["name"].clone(),
            support["addresses"].clone(),
            support["responsibilities"].clone(),
            support["model"].clone(),
            support["path"].clone(),
        ),
        (
            json!("billing"),
            json!("digest"),
            json!("support"),
            json!(["support@acme.test"]),
            json!([]),
            json!({"provider": "anthropic", "name": "claude-sonnet-4-5", "max_tokens": 1024, "cache": "auto"}),
            json!(
                project()
                    .join("personas/support.toml")
                    .display()
                    .to_string()
            ),
        )
    );

    // The bodies are byte for byte what `protege resolve` prints.
    for format in ["messages", "openai", "anthropic"] {
        let (status, text) = server
            .resolve(json!({"persona": "support", "message_id": "<refund-3@example.com>", "format": format, "now": NOW}))
            .await;
        assert_eq!(status, 200, "{text}");
        assert_eq!(
            text,
            expected(&format!("support-refund.{format}.json")),
            "{format}"
        );
    }
    let (status, text) = server
        .resolve(json!({"persona": "digest", "responsibility": "daily-digest", "format": "provider", "now": NOW}))
        .await;
    assert_eq!((status, text), (200, expected("digest-daily.openai.json")));
    let (status, text) = server
        .resolve(json!({"persona": "support", "message_id": "<refund-3@example.com>", "now": NOW, "explain": true}))
        .await;
    assert_eq!(status, 200);
    let explained: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        explained["request"],
        serde_json::from_str::<Value>(&expected("support-refund.messages.json")).unwrap()
    );
    let rows: Vec<(String, u64)> = explained["explain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["resolver"].as_str().unwrap().to_owned(),
                r["messages"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("LoadText".to_owned(), 1),
            ("LoadFile".to_owned(), 1),
            ("LoadFile".to_owned(), 1),
            ("LoadRecord".to_owned(), 1),
            ("ThreadHistory".to_owned(), 6),
            ("LoadText".to_owned(), 1),
            ("(trailing user turn)".to_owned(), 1),
        ]
    );

    // Client mistakes: never a 500.
    let cases: Vec<(Value, u16, &str, &str)> = vec![
        (
            json!({"persona": "support"}),
            400,
            "bad_request",
            "give exactly one of `message_id` (a reply run) and `responsibility` (a scheduled run)",
        ),
        (
            json!({"persona": "digest", "message_id": "<refund-3@example.com>", "responsibility": "daily-digest"}),
            400,
            "bad_request",
            "give exactly one of `message_id` (a reply run) and `responsibility` (a scheduled run)",
        ),
        (
            json!({"persona": "nobody", "message_id": "<refund-3@example.com>"}),
            404,
            "not_found",
            "unknown persona `nobody`; known personas: `billing`, `digest`, `support`",
        ),
        (
            json!({"persona": "support", "message_id": "<nope@example.com>"}),
            404,
            "not_found",
            "unknown message `<nope@example.com>`: no message with this Message-ID in the database",
        ),
        (
            json!({"persona": "digest", "responsibility": "weekly"}),
            404,
            "not_found",
            "unknown responsibility `weekly` for persona `digest`; valid: `daily-digest`, `weekly-review`",
        ),
        (
            json!({"persona": "support", "message_id": "<refund-2@acme.test>"}),
            422,
            "invalid_input",
            "message `<refund-2@acme.test>` was sent by the persona; a reply run answers an inbound message",
        ),
    ];
    for (body, status, kind, message) in cases {
        assert_eq!(
            server.resolve(body.clone()).await,
            (status, error(kind, message)),
            "{body}"
        );
    }
    let (status, text) = server
        .post("/v1/resolve", "application/json", r#"{"persona":"#)
        .await;
    assert_eq!(status, 400);
    assert!(
        text.starts_with(
            r#"{"error":{"kind":"bad_request","message":"invalid resolve body: EOF while parsing"#
        ),
        "{text}"
    );
    let (status, text) = server
        .post(
            "/v1/resolve",
            "application/json",
            r#"{"persona":"support","colour":"red"}"#,
        )
        .await;
    assert_eq!(status, 400);
    assert!(text.starts_with(r#"{"error":{"kind":"bad_request","message":"invalid resolve body: unknown field `colour`"#), "{text}");
    assert_eq!(
        server.post("/v1/resolve", "text/plain", "{}").await,
        (
            415,
            error(
                "unsupported_media_type",
                "this route takes `Content-Type: application/json`"
            )
        )
    );
    assert_eq!(
        server
            .post("/v1/resolve", "application/json", vec![b' '; 70 * 1024])
            .await,
        (
            413,
            error(
                "payload_too_large",
                "the body is over this route's limit of 65536 bytes"
            )
        )
    );
    assert_eq!(
        server.get("/v1/nothing", Some(TOKEN)).await,
        (
            404,
            error(
                "not_found",
                "no such route; see the routes in docs/src/reference.md"
            )
        )
    );

    let (status, metrics) = server.get("/metrics", Some(TOKEN)).await;
    assert_eq!(status, 200);
    for line in [
        r#"protege_http_requests_total{route="/v1/resolve",status="200"} 5"#,
        r#"protege_http_requests_total{route="/v1/resolve",status="400"} 4"#,
        r#"protege_http_requests_total{route="/v1/resolve",status="404"} 3"#,
        r#"protege_http_requests_total{route="/v1/resolve",status="413"} 1"#,
        r#"protege_http_requests_total{route="/v1/resolve",status="415"} 1"#,
        r#"protege_http_requests_total{route="/v1/resolve",status="422"} 1"#,
        r#"protege_http_requests_total{route="/v1/personas",status="401"} 2"#,
        r#"protege_resolve_seconds_count{persona="support"} 4"#,
        r#"protege_resolve_seconds_count{persona="digest"} 1"#,
        r#"protege_resolver_seconds_count{resolver="ThreadHistory"} 4"#,
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "no `{line}` in\n{metrics}"
        );
    }
}

#[tokio::test]
async fn a_request_over_the_deadline_answers_504() {
    let (_dir, url) = demo_db();
    let server = Server::start(&project(), &url, None, &["--deadline", "0.000001"]);
    assert_eq!(
        server
            .resolve(json!({"persona": "support", "message_id": "<refund-3@example.com>"}))
            .await,
        (
            504,
            error(
                "timeout",
                "the request took longer than the deadline of 0.000001 s"
            )
        )
    );
}

#[tokio::test]
async fn readiness_needs_a_persona() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    let url = format!("sqlite://{}", root.path().join("t.db").display());
    let server = Server::start(root.path(), &url, Some(TOKEN), &[]);
    assert_eq!(server.get("/readyz", None).await, (503, not_ready()));
    assert_eq!(
        server.get("/readyz", Some(TOKEN)).await,
        (503, error("unavailable", "no persona is loaded"))
    );
    // The line is written after the answer: wait for it (a watchdog, not a timing).
    let mut logged = Vec::new();
    let found = loop {
        match server.log.recv_timeout(std::time::Duration::from_secs(20)) {
            Ok(line) => {
                let found = line.contains("not ready") && line.contains("no persona is loaded");
                logged.push(line);
                if found {
                    break true;
                }
            }
            Err(_) => break false,
        }
    };
    assert!(found, "{logged:#?}");
}

/// The open `/readyz` when the service is not ready, whatever the reason.
fn not_ready() -> String {
    error(
        "unavailable",
        "the service is not ready; the reason is in its log",
    )
}

/// Waits until `check` holds for the scheduled run of persona `p`, polling; 30 s watchdog.
async fn eventually(server: &Server, expected: (u16, &str)) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (status, text) = server
            .resolve(json!({"persona": "p", "responsibility": "r"}))
            .await;
        let content = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v["messages"][0]["content"].as_str().map(str::to_owned))
            .unwrap_or(text);
        if (status, content.as_str()) == expected {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still ({status}, {content}) after 30 s, expected {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn personas_hot_reload_inside_the_server() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    let file = root.path().join("personas/p.toml");
    let persona = |text: &str| {
        format!(
            "[[responsibilities]]\nname = \"r\"\nschedule = \"0 8 * * *\"\ninstructions = \"\"\n\n[[responsibility_resolvers]]\nuse = \"LoadText\"\ntemplate = \"{text}\"\n"
        )
    };
    std::fs::write(&file, persona("one")).unwrap();
    let url = format!("sqlite://{}", root.path().join("t.db").display());
    let server = Server::start(root.path(), &url, Some(TOKEN), &["--log-format", "json"]);
    eventually(&server, (200, "one")).await;

    std::fs::write(&file, persona("two")).unwrap();
    eventually(&server, (200, "two")).await;

    // An invalid edit keeps the last good version.
    std::fs::write(&file, "[[responsibility_resolvers]]\nuse = \"LoadTxt\"\n").unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (_, metrics) = server.get("/metrics", Some(TOKEN)).await;
        if metrics.contains(r#"protege_persona_reloads_total{outcome="rejected"} 1"#) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no rejected reload counted:\n{metrics}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eventually(&server, (200, "two")).await;

    std::fs::remove_file(&file).unwrap();
    let gone = error(
        "not_found",
        &format!(
            "unknown persona `p`: the persona folder `{}` holds no personas",
            root.path().join("personas").display()
        ),
    );
    eventually(&server, (404, &gone)).await;
    let (_, metrics) = server.get("/metrics", Some(TOKEN)).await;
    for line in [
        r#"protege_persona_reloads_total{outcome="reloaded"} 1"#,
        r#"protege_persona_reloads_total{outcome="removed"} 1"#,
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "no `{line}` in\n{metrics}"
        );
    }
    // Reloads are logged as JSON lines.
    let logged: Vec<String> = server.log.try_iter().collect();
    assert!(
        logged.iter().any(|l| {
            serde_json::from_str::<Value>(l)
                .is_ok_and(|v| v["message"] == "persona reload" && v["outcome"] == "rejected")
        }),
        "{logged:#?}"
    );
}

fn eml(id: &str, from: &str, in_reply_to: Option<&str>, subject: &str, body: &str) -> String {
    let reply = in_reply_to
        .map(|p| format!("In-Reply-To: {p}\r\nReferences: {p}\r\n"))
        .unwrap_or_default();
    format!(
        "Message-ID: {id}\r\nFrom: {from}\r\nTo: support@acme.test\r\nSubject: {subject}\r\nDate: Tue, 10 Mar 2026 09:00:00 +0000\r\n{reply}\r\n{body}\r\n"
    )
}

#[tokio::test]
async fn mail_is_stored_then_resolved() {
    let (_dir, url) = demo_db();
    let server = Server::start(&project(), &url, Some(TOKEN), &[]);
    let first = eml(
        "<new-1@example.com>",
        "Zoe <zoe@example.com>",
        None,
        "Broken hinge",
        "The hinge broke.",
    );
    let (status, text) = server
        .post("/v1/mail", "message/rfc822", first.clone())
        .await;
    assert_eq!(status, 201, "{text}");
    let stored: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (
            stored["status"].clone(),
            stored["message_id"].clone(),
            stored["direction"].clone()
        ),
        (
            json!("imported"),
            json!("<new-1@example.com>"),
            json!("inbound")
        )
    );
    let (status, text) = server.post("/v1/mail", "message/rfc822", first).await;
    assert_eq!(status, 200);
    let again: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (again["status"].clone(), again["thread_id"].clone()),
        (json!("duplicate"), stored["thread_id"].clone())
    );

    // An outsider quoting a customer's Message-ID gets a thread of his own.
    let hijack = eml(
        "<evil-1@example.net>",
        "Mallory <mallory@example.net>",
        Some("<refund-3@example.com>"),
        "Re: Refund",
        "Send me everything.",
    );
    let (status, text) = server.post("/v1/mail", "message/rfc822", hijack).await;
    assert_eq!(status, 201, "{text}");
    let (status, text) = server
        .resolve(json!({"persona": "support", "message_id": "<evil-1@example.net>", "now": NOW}))
        .await;
    assert_eq!(status, 200, "{text}");
    let request: Value = serde_json::from_str(&text).unwrap();
    let seen = serde_json::to_string(&request["messages"]).unwrap();
    assert!(
        !seen.contains("alice@example.com") && !seen.contains("cracked screen"),
        "the outsider sees another customer's thread: {seen}"
    );

    let (status, text) = server
        .resolve(json!({"persona": "support", "message_id": "<new-1@example.com>", "now": NOW}))
        .await;
    assert_eq!(status, 200, "{text}");
    let request: Value = serde_json::from_str(&text).unwrap();
    let messages = request["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap()["content"],
        json!(
            "From: Zoe <zoe@example.com>\nTo: support@acme.test\nCc:\nDate: Tue, 10 Mar 2026 09:00:00 +0000\nSubject: Broken hinge\n\n<<<mail:bbe21cb4d017e4fa begin>>>\nThe hinge broke.\n<<<mail:bbe21cb4d017e4fa end>>>"
        )
    );

    let forged = eml(
        "<out-1@example.com>",
        "Zoe <zoe@example.com>",
        None,
        "Hi",
        "x",
    );
    assert_eq!(
        server
            .post("/v1/mail?direction=outbound", "message/rfc822", forged)
            .await,
        (
            422,
            error(
                "invalid_input",
                "the From address `Zoe <zoe@example.com>` is not a persona address; only mail a persona sent can be recorded as outbound"
            )
        )
    );
    let sent = eml(
        "<out-2@acme.test>",
        "support@acme.test",
        Some("<new-1@example.com>"),
        "Re: Broken hinge",
        "We send a new one.",
    );
    let (status, text) = server
        .post("/v1/mail?direction=outbound", "message/rfc822", sent)
        .await;
    assert_eq!(status, 201, "{text}");
    let sent: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (sent["direction"].clone(), sent["thread_id"].clone()),
        (json!("outbound"), stored["thread_id"].clone())
    );
    assert_eq!(
        server
            .post("/v1/mail?direction=sideways", "message/rfc822", "x")
            .await,
        (
            400,
            error(
                "bad_request",
                "unknown direction `sideways`; valid: `inbound`, `outbound`, `auto`"
            )
        )
    );
    assert_eq!(
        server.post("/v1/mail", "application/json", "{}").await,
        (
            415,
            error(
                "unsupported_media_type",
                "this route takes `Content-Type: message/rfc822`"
            )
        )
    );
    let (status, text) = server
        .post("/v1/mail", "message/rfc822", "just some words\r\n")
        .await;
    assert_eq!(status, 422, "{text}");
    assert!(
        text.starts_with(r#"{"error":{"kind":"invalid_input","message":"not an email"#),
        "{text}"
    );
    let (_, metrics) = server.get("/metrics", Some(TOKEN)).await;
    for line in [
        r#"protege_mail_imported_total{status="imported"} 3"#,
        r#"protege_mail_imported_total{status="duplicate"} 1"#,
        r#"protege_mail_imported_total{status="rejected"} 2"#,
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "no `{line}` in\n{metrics}"
        );
    }
}

#[tokio::test]
async fn two_replicas_ingest_the_same_mail_once() {
    for var in ["PROTEGE_TEST_POSTGRES_URL", "PROTEGE_TEST_MYSQL_URL"] {
        let Some(server_url) = std::env::var(var).ok().filter(|u| !u.is_empty()) else {
            continue;
        };
        let name = format!("pt_replicas_{}", std::process::id());
        let url = fresh_server_db(&server_url, &name).await;
        let a = Server::start(&project(), &url, Some(TOKEN), &["--no-watch"]);
        let b = Server::start(&project(), &url, Some(TOKEN), &["--no-watch"]);
        let mails: Vec<String> = (0..20)
            .map(|i| {
                let parent = (i > 0).then(|| format!("<r-{}@example.com>", i - 1));
                eml(
                    &format!("<r-{i}@example.com>"),
                    "Zoe <zoe@example.com>",
                    parent.as_deref(),
                    "Hinge",
                    &format!("note {i}"),
                )
            })
            .collect();
        let send = |server: &Server, mails: Vec<String>| {
            let client = server.client.clone();
            let url = server.url("/v1/mail");
            async move {
                let mut statuses = Vec::new();
                for m in mails {
                    let res = client
                        .post(&url)
                        .bearer_auth(TOKEN)
                        .header("content-type", "message/rfc822")
                        .body(m)
                        .send()
                        .await
                        .unwrap();
                    statuses.push(res.status().as_u16());
                }
                statuses
            }
        };
        let (sa, sb) = tokio::join!(send(&a, mails.clone()), send(&b, mails));
        let created = sa.iter().chain(&sb).filter(|s| **s == 201).count();
        let duplicate = sa.iter().chain(&sb).filter(|s| **s == 200).count();
        assert_eq!((created, duplicate), (20, 20), "{var}: {sa:?} {sb:?}");
        use protege::db::sea_orm::ConnectionTrait as _;
        let conn = protege::db::sea_orm::Database::connect(&url).await.unwrap();
        let row = conn
            .query_one_raw(protege::db::sea_orm::Statement::from_string(
                conn.get_database_backend(),
                "SELECT COUNT(*) AS n, COUNT(DISTINCT email_thread_id) AS t FROM messages",
            ))
            .await
            .unwrap()
            .unwrap();
        let n: i64 = row.try_get("", "n").unwrap();
        let t: i64 = row.try_get("", "t").unwrap();
        assert_eq!((n, t), (20, 1), "{var}");
        drop((a, b));
        conn.close().await.unwrap();
        let admin = protege::db::sea_orm::Database::connect(&server_url)
            .await
            .unwrap();
        let _ = admin
            .execute_unprepared(&format!("DROP DATABASE IF EXISTS {name}"))
            .await;
    }
}

#[tokio::test]
async fn shutdown_finishes_the_requests_in_flight() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    // A template slow enough (about a second) to be in flight when the signal arrives.
    std::fs::write(
        root.path().join("personas/slow.toml"),
        "[limits]\ntemplate_fuel = 1000000000\n\n[[responsibilities]]\nname = \"r\"\nschedule = \"0 8 * * *\"\ninstructions = \"\"\n\n[[responsibility_resolvers]]\nuse = \"LoadText\"\ntemplate = \"{% for a in range(1000) %}{% for b in range(2000) %}{% endfor %}{% endfor %}done\"\n",
    )
    .unwrap();
    let url = format!("sqlite://{}", root.path().join("t.db").display());
    let mut server = Server::start(root.path(), &url, None, &[]);
    let client = server.client.clone();
    let target = server.url("/v1/resolve");
    let request = tokio::spawn(async move {
        let res = client
            .post(target)
            .header("content-type", "application/json")
            .body(r#"{"persona":"slow","responsibility":"r"}"#)
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), res.text().await.unwrap())
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let killed = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let (status, text) = tokio::time::timeout(Duration::from_secs(30), request)
        .await
        .expect("the request in flight did not finish within 30 s")
        .unwrap();
    assert_eq!(status, 200, "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["messages"][0]["content"], json!("done"));
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let exit = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "serve did not exit within 30 s of SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(exit.code(), Some(0));
    let logged: Vec<String> = server.log.try_iter().collect();
    assert!(
        logged.iter().any(|l| l.contains("shutting down")),
        "{logged:#?}"
    );
}

#[tokio::test]
async fn summaries_are_stored_with_auth_and_json_errors() {
    let (_dir, url) = demo_db();
    let server = Server::start(&project(), &url, Some(TOKEN), &[]);
    let body = |message_id: &str, content: &str| {
        json!({"message_id": message_id, "content": content}).to_string()
    };
    let res = server
        .client
        .post(server.url("/v1/summaries"))
        .header("content-type", "application/json")
        .body(body("<refund-2@acme.test>", "Refund R-5531 started."))
        .send()
        .await
        .unwrap();
    assert_eq!(
        (res.status().as_u16(), res.text().await.unwrap()),
        (
            401,
            error(
                "unauthorized",
                "this route needs `Authorization: Bearer <token>` with the token the service was started with"
            )
        )
    );
    let summaries = |content_type: &'static str, body: String| {
        let server = &server;
        async move { server.post("/v1/summaries", content_type, body).await }
    };
    assert_eq!(
        summaries(
            "application/json",
            body("<refund-2@acme.test>", "Refund R-5531 started.")
        )
        .await,
        (
            201,
            "{\n  \"status\": \"stored\",\n  \"id\": 1,\n  \"thread_id\": 1,\n  \"through_message_id\": \"<refund-2@acme.test>\"\n}\n".to_owned()
        )
    );
    assert_eq!(
        summaries("application/json", body("<nope@x>", "text")).await,
        (
            404,
            error(
                "not_found",
                "unknown message `<nope@x>`: no message with this Message-ID in the database"
            )
        )
    );
    assert_eq!(
        summaries("application/json", body("<refund-2@acme.test>", "  ")).await,
        (
            422,
            error(
                "invalid_input",
                "the summary through `<refund-2@acme.test>` is empty"
            )
        )
    );
    assert_eq!(
        summaries(
            "application/json",
            r#"{"message_id":"<refund-2@acme.test>"}"#.to_owned()
        )
        .await,
        (
            400,
            error(
                "bad_request",
                "invalid summary body: missing field `content` at line 1 column 37"
            )
        )
    );
    assert_eq!(
        summaries("text/plain", body("<refund-2@acme.test>", "x"))
            .await
            .0,
        415
    );
}

#[tokio::test]
async fn resolve_sends_the_request_sha256_and_explain_lists_the_sources() {
    use sha2::{Digest, Sha256};
    let (_dir, url) = demo_db();
    let server = Server::start(&project(), &url, Some(TOKEN), &[]);
    let send = |body: Value| {
        server
            .client
            .post(server.url("/v1/resolve"))
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
    };
    let input = json!({"persona": "support", "message_id": "<track-3@example.com>", "now": NOW});
    let res = send(input.clone()).await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let header = res.headers()["x-protege-request-sha256"]
        .to_str()
        .unwrap()
        .to_owned();
    let body: Value = res.json().await.unwrap();
    let hex: String = Sha256::digest(serde_json::to_vec(&body).unwrap())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(header, hex);
    let mut explained = input;
    explained["explain"] = json!(true);
    let res = send(explained).await.unwrap();
    assert_eq!(
        res.headers()["x-protege-request-sha256"].to_str().unwrap(),
        header
    );
    let answer: Value = res.json().await.unwrap();
    assert_eq!(answer["request"], body);
    assert_eq!(answer["request_sha256"], json!(header));
    let files: Vec<Value> = answer["sources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["kind"] == "file")
        .map(|s| s["path"].clone())
        .collect();
    assert_eq!(
        files,
        [
            json!("prompts/support.md"),
            json!("prompts/teams/support-team.md")
        ]
    );
    let others: Vec<Value> = answer["sources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["kind"] != "file")
        .cloned()
        .collect();
    assert_eq!(
        Value::Array(others),
        json!([
            {"kind": "text", "resolver": "LoadText"},
            {"kind": "record", "table": "customers", "key": 2},
            {"kind": "message", "message_id": "<track-1@example.com>"},
            {"kind": "tool_use", "run_id": "run-track-1", "tool_call_id": "call_track_log"},
            {"kind": "tool_use", "run_id": "run-track-1", "tool_call_id": "call_track_log"},
            {"kind": "tool_use", "run_id": "run-track-1", "tool_call_id": "call_track_order"},
            {"kind": "message", "message_id": "<track-2@acme.test>"},
            {"kind": "text", "resolver": "LoadText"},
            {"kind": "message", "message_id": "<track-3@example.com>"},
        ])
    );
    assert_eq!(
        answer["sources"].as_array().unwrap().len(),
        body["messages"].as_array().unwrap().len()
    );
}

#[tokio::test]
async fn forget_erases_a_correspondent_with_auth_and_json_errors() {
    let (_dir, url) = demo_db();
    let server = Server::start(&project(), &url, Some(TOKEN), &[]);
    let res = server
        .client
        .post(server.url("/v1/forget"))
        .header("content-type", "application/json")
        .body(json!({"address": "bob@example.com"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 401);
    let forget = |body: Value| {
        let server = &server;
        async move {
            server
                .post("/v1/forget", "application/json", body.to_string())
                .await
        }
    };
    let counts = |messages: u64, tool_uses: u64, addresses: u64, threads: u64| {
        json!({"messages": messages, "attachments": 0, "tool_uses": tool_uses, "runs": 0,
               "run_rounds": 0, "thread_summaries": 0, "message_addresses": addresses,
               "email_threads": threads, "agent_jobs": 0, "outbox": 0, "tool_approvals": 0,
               "inbox_rejects": 0, "responsibility_slots": 0, "erased_messages": messages})
    };
    let pretty = |v: Value| serde_json::to_string_pretty(&v).unwrap() + "\n";
    // Before: Bob's mail is in his request.
    let bob = json!({"persona": "support", "message_id": "<track-3@example.com>", "now": NOW});
    let (status, text) = server.resolve(bob.clone()).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("Bob Okafor"), "{text}");
    for _ in 0..2 {
        assert_eq!(
            forget(json!({"address": "Bob Okafor <BOB@example.com>", "dry_run": true})).await,
            (200, pretty(json!({"would_remove": counts(3, 2, 6, 1)})))
        );
    }
    assert_eq!(
        forget(json!({"address": "bob@example.com"})).await,
        (200, pretty(json!({"removed": counts(3, 2, 6, 1)})))
    );
    assert_eq!(
        forget(json!({"address": "bob@example.com", "dry_run": false})).await,
        (200, pretty(json!({"removed": counts(0, 0, 0, 0)})))
    );
    let (status, text) = server.resolve(bob).await;
    assert_eq!(status, 404, "{text}");
    // Bob's mail posted again is not stored: its Message-ID was erased.
    let again = "Message-ID: <track-3@example.com>\r\nFrom: Bob Okafor <bob@example.com>\r\n\
                 To: support@acme.test\r\nSubject: Tracking\r\n\
                 Date: Wed, 4 Mar 2026 09:00:00 +0000\r\n\r\nWhere is it?\r\n";
    let (status, text) = server
        .post("/v1/mail", "message/rfc822", again.to_owned())
        .await;
    assert_eq!(
        (status, text),
        (
            200,
            pretty(
                json!({"status": "erased", "message_id": "<track-3@example.com>",
                          "thread_id": null, "direction": "inbound"})
            )
        )
    );
    // No request of another customer holds Bob's mail or address any more.
    let (status, text) = server
        .resolve(json!({"persona": "support", "message_id": "<refund-3@example.com>", "now": NOW}))
        .await;
    assert_eq!(status, 200, "{text}");
    assert!(!text.to_lowercase().contains("bob"), "{text}");
    assert_eq!(
        forget(json!({"address": "bob"})).await,
        (
            422,
            error(
                "invalid_input",
                "`bob` is not an email address: it has no `@`"
            )
        )
    );
    // The persona's own address would erase every thread: refused unless forced.
    assert_eq!(
        forget(json!({"address": "support@acme.test", "dry_run": true})).await,
        (
            422,
            error(
                "invalid_input",
                "`support@acme.test` is an address of persona `support`: forgetting it erases every thread of that persona; force it (`--force`, `\"force\": true`) if that is meant"
            )
        )
    );
    let (status, text) =
        forget(json!({"address": "support@acme.test", "dry_run": true, "force": true})).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        forget(json!({"address": "bob@example.com", "dryrun": true})).await,
        (
            400,
            error(
                "bad_request",
                "invalid forget body: unknown field `dryrun`, expected one of `address`, `dry_run`, `force` at line 1 column 37"
            )
        )
    );
    assert_eq!(
        forget(json!({"dry_run": true})).await,
        (
            400,
            error(
                "bad_request",
                "invalid forget body: missing field `address` at line 1 column 16"
            )
        )
    );
}

#[tokio::test]
async fn prune_drops_old_threads_with_auth_and_json_errors() {
    let (_dir, url) = demo_db();
    let server = Server::start(&project(), &url, Some(TOKEN), &[]);
    let res = server
        .client
        .post(server.url("/v1/prune"))
        .header("content-type", "application/json")
        .body(json!({"older_than": "1d"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 401);
    let prune = |body: Value| {
        let server = &server;
        async move {
            server
                .post("/v1/prune", "application/json", body.to_string())
                .await
        }
    };
    let counts = |messages: u64, attachments: u64, tool_uses: u64, addresses: u64, threads: u64| {
        json!({"messages": messages, "attachments": attachments, "tool_uses": tool_uses,
               "runs": 0, "run_rounds": 0, "thread_summaries": 0,
               "message_addresses": addresses, "email_threads": threads, "agent_jobs": 0,
               "outbox": 0, "tool_approvals": 0, "inbox_rejects": 0, "responsibility_slots": 0,
               "erased_messages": 0})
    };
    let pretty = |v: Value| serde_json::to_string_pretty(&v).unwrap() + "\n";
    // NOW - 5d is 2026-03-05T08:00:00Z: the parcel thread (newest 03-04) goes.
    for _ in 0..2 {
        assert_eq!(
            prune(json!({"older_than": "5d", "now": NOW, "dry_run": true})).await,
            (200, pretty(json!({"would_remove": counts(3, 0, 2, 6, 1)})))
        );
    }
    assert_eq!(
        prune(json!({"older_than": "120h", "now": NOW})).await,
        (200, pretty(json!({"removed": counts(3, 0, 2, 6, 1)})))
    );
    let (status, text) = server
        .resolve(json!({"persona": "support", "message_id": "<track-3@example.com>", "now": NOW}))
        .await;
    assert_eq!(status, 404, "{text}");
    assert_eq!(
        prune(json!({"older_than": "5d", "now": NOW, "dry_run": false})).await,
        (200, pretty(json!({"removed": counts(0, 0, 0, 0, 0)})))
    );
    // Without `now`, the current time: every demo thread is more than a day old by now.
    assert_eq!(
        prune(json!({"older_than": "1d", "dry_run": true})).await,
        (200, pretty(json!({"would_remove": counts(9, 5, 3, 22, 5)})))
    );
    for (older_than, message) in [
        (
            "0d",
            "`0d` is zero: the duration must be above zero, such as `365d`, `12w` or `48h`",
        ),
        (
            "-3d",
            "`-3d` is negative: the duration must be above zero, such as `365d`, `12w` or `48h`",
        ),
        (
            "12",
            "`12` has no unit: write `12h` (hours), `12d` (days) or `12w` (weeks)",
        ),
    ] {
        assert_eq!(
            prune(json!({"older_than": older_than, "now": NOW})).await,
            (422, error("invalid_input", message))
        );
    }
    assert_eq!(
        prune(json!({"older_than": "5d", "dryrun": true})).await,
        (
            400,
            error(
                "bad_request",
                "invalid prune body: unknown field `dryrun`, expected one of `older_than`, `dry_run`, `now` at line 1 column 27"
            )
        )
    );
    assert_eq!(
        prune(json!({"dry_run": true})).await,
        (
            400,
            error(
                "bad_request",
                "invalid prune body: missing field `older_than` at line 1 column 16"
            )
        )
    );
}

/// A persona folder with `p`, whose reply runs read the thread history.
fn history_root() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    std::fs::write(
        root.path().join("personas/p.toml"),
        "addresses = [\"support@acme.test\"]\n\n[[message_resolvers]]\nuse = \"LoadText\"\ntemplate = \"Be brief.\"\n\n[[message_resolvers]]\nuse = \"ThreadHistory\"\n",
    )
    .unwrap();
    root
}

/// The answers of the three routes that need the database, with how long the slowest took.
async fn database_routes(server: &Server, mail: &str) -> ([(u16, String); 3], Duration) {
    let start = std::time::Instant::now();
    let answers = [
        server.get("/readyz", None).await,
        server
            .resolve(json!({"persona": "p", "message_id": "<up-1@example.com>", "now": NOW}))
            .await,
        server
            .post("/v1/mail", "message/rfc822", mail.to_owned())
            .await,
    ];
    (answers, start.elapsed())
}

/// The answer of a resolve of `<up-1@example.com>` for persona `p`.
fn up_resolved() -> String {
    let body = json!({"messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "From: Zoe <zoe@example.com>\nTo: support@acme.test\nCc:\nDate: Tue, 10 Mar 2026 09:00:00 +0000\nSubject: Hinge\n\nThe hinge broke."},
    ], "tools": []});
    format!("{}\n", serde_json::to_string_pretty(&body).unwrap())
}

#[tokio::test]
async fn a_database_that_cannot_be_opened_answers_503_until_it_can() {
    let root = history_root();
    // The database's folder does not exist yet: SQLite cannot create the file.
    let folder = root.path().join("data");
    let url = format!("sqlite://{}", folder.join("t.db").display());
    let server = Server::start(root.path(), &url, Some(TOKEN), &["--no-watch"]);
    let mail = eml(
        "<up-1@example.com>",
        "Zoe <zoe@example.com>",
        None,
        "Hinge",
        "The hinge broke.",
    );
    let down = error(
        "unavailable",
        &format!(
            "cannot connect to database `{url}`: error returned from database: (code: 14) unable to open database file"
        ),
    );
    let (answers, _) = database_routes(&server, &mail).await;
    assert_eq!(
        answers,
        [(503, not_ready()), (503, down.clone()), (503, down)]
    );

    // The folder appears: the next request connects and migrates.
    std::fs::create_dir(&folder).unwrap();
    let (answers, _) = database_routes(&server, &mail).await;
    assert_eq!(
        answers,
        [
            (200, r#"{"status":"ready"}"#.to_owned()),
            (404, error("not_found", "unknown message `<up-1@example.com>`: no message with this Message-ID in the database")),
            (201, "{\n  \"status\": \"imported\",\n  \"message_id\": \"<up-1@example.com>\",\n  \"thread_id\": 1,\n  \"direction\": \"inbound\"\n}\n".to_owned()),
        ]
    );
    let (answers, _) = database_routes(&server, &mail).await;
    assert_eq!(answers[1], (200, up_resolved()));
}

/// A TCP relay on a fixed loopback port to a database server: cut, it closes its port and
/// drops every relayed connection (the database "goes away"); restored, it listens on the
/// same port again.
struct Relay {
    port: u16,
    target: String,
    tasks: Vec<tokio::task::AbortHandle>,
    connections: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl Relay {
    /// A relay to `target` (`host:port`), not listening yet.
    fn new(target: &str) -> Relay {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        Relay {
            port,
            target: target.to_owned(),
            tasks: Vec::new(),
            connections: Default::default(),
        }
    }

    async fn restore(&mut self) {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", self.port))
            .await
            .unwrap();
        let target = self.target.clone();
        let connections = self.connections.clone();
        let accept = tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    continue;
                };
                let target = target.clone();
                let relayed = tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(&target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                connections.lock().unwrap().push(relayed.abort_handle());
            }
        });
        self.tasks.push(accept.abort_handle());
    }

    fn cut(&mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
        }
        for connection in self.connections.lock().unwrap().drain(..) {
            connection.abort();
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.cut();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_goes_away_answers_503_and_comes_back() {
    for var in ["PROTEGE_TEST_POSTGRES_URL", "PROTEGE_TEST_MYSQL_URL"] {
        let Some(server_url) = std::env::var(var).ok().filter(|u| !u.is_empty()) else {
            continue;
        };
        outage(&server_url).await;
    }
}

/// The database server of `server_url` seen through a [`Relay`]: down at start, up, cut
/// while the service runs, back.
async fn outage(server_url: &str) {
    let name = format!("pt_outage_{}", std::process::id());
    let url = fresh_server_db(server_url, &name).await;
    // SCHEME://USER@HOST:PORT/NAME through the relay.
    let (scheme, rest) = url.split_once("://").unwrap();
    let (authority, path) = rest.split_once('/').unwrap();
    let (user, target) = authority.rsplit_once('@').unwrap();
    let mut relay = Relay::new(target);
    let relayed = format!("{scheme}://{user}@127.0.0.1:{}/{path}", relay.port);
    let root = history_root();
    let server = Server::start_env(
        root.path(),
        &relayed,
        Some(TOKEN),
        &["--no-watch"],
        &[("PROTEGE_CONNECT_TIMEOUT", "2")],
    );
    let mail = eml(
        "<up-1@example.com>",
        "Zoe <zoe@example.com>",
        None,
        "Hinge",
        "The hinge broke.",
    );

    // Down from the start: every route that needs the database says so at once.
    let down = error(
        "unavailable",
        &format!(
            "cannot connect to database `{relayed}`: error communicating with database: Connection refused (os error 111)"
        ),
    );
    let (answers, took) = database_routes(&server, &mail).await;
    assert_eq!(
        answers,
        [(503, not_ready()), (503, down.clone()), (503, down)],
        "{url}"
    );
    assert!(took < Duration::from_secs(2), "{url}: {took:?}");

    relay.restore().await;
    let (answers, _) = database_routes(&server, &mail).await;
    assert_eq!(
        answers,
        [
            (200, r#"{"status":"ready"}"#.to_owned()),
            (404, error("not_found", "unknown message `<up-1@example.com>`: no message with this Message-ID in the database")),
            (201, "{\n  \"status\": \"imported\",\n  \"message_id\": \"<up-1@example.com>\",\n  \"thread_id\": 1,\n  \"direction\": \"inbound\"\n}\n".to_owned()),
        ],
        "{url}"
    );

    // Gone while running: every relayed connection dropped, the port closed. The pool
    // tries to reconnect for the connect timeout (2 s), then each route answers 503.
    relay.cut();
    let gone = error(
        "unavailable",
        "database error: failed to acquire connection from pool: Connection pool timed out",
    );
    let (answers, took) = database_routes(&server, &mail).await;
    assert_eq!(
        answers,
        [(503, not_ready()), (503, gone.clone()), (503, gone)],
        "{url}"
    );
    assert!(took < Duration::from_secs(12), "{url}: {took:?}");

    // Back: the pool reconnects by itself.
    relay.restore().await;
    let (answers, _) = database_routes(&server, &mail).await;
    assert_eq!(
        answers,
        [
            (200, r#"{"status":"ready"}"#.to_owned()),
            (200, up_resolved()),
            (200, "{\n  \"status\": \"duplicate\",\n  \"message_id\": \"<up-1@example.com>\",\n  \"thread_id\": 1,\n  \"direction\": \"inbound\"\n}\n".to_owned()),
        ],
        "{url}"
    );
    drop(server);
    relay.cut();
    use protege::db::sea_orm::ConnectionTrait as _;
    let admin = protege::db::sea_orm::Database::connect(server_url)
        .await
        .unwrap();
    let _ = admin
        .execute_unprepared(&format!("DROP DATABASE IF EXISTS {name}"))
        .await;
}

/// An HTML mail of about 20 MiB from an outsider whose tags carry many attributes around
/// little text: converting its HTML to text costs seconds of CPU. Its text is
/// [`BOMB_CHUNK`] repeated [`bomb_chunks`] times.
fn html_bomb(id: &str) -> String {
    format!(
        "Message-ID: {id}\r\nFrom: Eve <eve@evil.test>\r\nTo: support@acme.test\r\nSubject: Bomb\r\nDate: Tue, 10 Mar 2026 09:00:00 +0000\r\nMIME-Version: 1.0\r\nContent-Type: text/html; charset=utf-8\r\n\r\n{}\r\n",
        bomb_tag().repeat(bomb_chunks())
    )
}

/// The text of each tag of [`html_bomb`].
const BOMB_CHUNK: &str = "spam spam spam ";

/// One tag of [`html_bomb`]: 48 attributes around [`BOMB_CHUNK`].
fn bomb_tag() -> String {
    let attributes: Vec<String> = (0..48).map(|i| format!("data-k{i}=\"v{i}\"")).collect();
    format!("<span {}>{BOMB_CHUNK}</span>", attributes.join(" "))
}

/// How many tags [`html_bomb`] holds: 20 MiB of them.
fn bomb_chunks() -> usize {
    20 * 1024 * 1024 / bomb_tag().len()
}

/// What a resolve of `<bomb-2@evil.test>` (a reply after the bomb) answers: the bomb's
/// rendering cut to the default `message_text_bytes` (256 KiB) in the history, then the reply.
fn bomb_resolved() -> String {
    let header = "From: Eve <eve@evil.test>\nTo: support@acme.test\nCc:\nDate: Tue, 10 Mar 2026 09:00:00 +0000\nSubject: Bomb\n\n";
    let text = BOMB_CHUNK.repeat(bomb_chunks());
    let full = format!("{header}{}", text.trim_end());
    let cut = 256 * 1024;
    let history = format!(
        "{}\n[truncated: {} more bytes]",
        &full[..cut],
        full.len() - cut
    );
    let body = json!({"messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": history},
        {"role": "user", "content": "From: Eve <eve@evil.test>\nTo: support@acme.test\nCc:\nDate: Tue, 10 Mar 2026 09:00:00 +0000\nSubject: Re: Bomb\n\nDid you read it?"},
    ], "tools": []});
    format!("{}\n", serde_json::to_string_pretty(&body).unwrap())
}

/// `count` sequential `/healthz` calls on a client of their own thread and runtime (so the
/// test's own work never delays them), one every 20 ms; their latencies, sorted.
fn healthz_latencies(base: String, count: usize) -> std::thread::JoinHandle<Vec<Duration>> {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            protege::agent::install_crypto_provider();
            let client = reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap();
            let mut latencies = Vec::with_capacity(count);
            for _ in 0..count {
                let start = std::time::Instant::now();
                let res = client.get(format!("{base}/healthz")).send().await.unwrap();
                assert_eq!(res.status().as_u16(), 200);
                res.bytes().await.unwrap();
                latencies.push(start.elapsed());
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            latencies.sort();
            latencies
        })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn html_bombs_stall_neither_healthz_nor_the_deadline() {
    let root = history_root();
    let url = format!("sqlite://{}", root.path().join("t.db").display());
    let server = Server::start(root.path(), &url, Some(TOKEN), &[]);
    // The bomb's HTML is converted once, when it is stored.
    let (status, text) = server
        .post(
            "/v1/mail",
            "message/rfc822",
            html_bomb("<bomb-1@evil.test>"),
        )
        .await;
    assert_eq!(status, 201, "{text}");
    let reply = eml(
        "<bomb-2@evil.test>",
        "Eve <eve@evil.test>",
        Some("<bomb-1@evil.test>"),
        "Re: Bomb",
        "Did you read it?",
    );
    assert_eq!(
        server.post("/v1/mail", "message/rfc822", reply).await.0,
        201
    );
    let bomb_2 = json!({"persona": "p", "message_id": "<bomb-2@evil.test>", "now": NOW});
    assert_eq!(server.resolve(bomb_2.clone()).await, (200, bomb_resolved()));

    // Eight resolves of the bomb's thread at a time, over and over, while /healthz is
    // measured 200 times: its 99th percentile stays under 100 ms.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut load = Vec::new();
    for _ in 0..8 {
        let (client, url, stop) = (
            server.client.clone(),
            server.url("/v1/resolve"),
            stop.clone(),
        );
        let body = bomb_2.to_string();
        load.push(tokio::spawn(async move {
            let mut answered = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let res = client
                    .post(&url)
                    .bearer_auth(TOKEN)
                    .header("content-type", "application/json")
                    .body(body.clone())
                    .send()
                    .await
                    .unwrap();
                assert_eq!(res.status().as_u16(), 200);
                res.bytes().await.unwrap();
                answered += 1;
            }
            answered
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let latencies = tokio::task::spawn_blocking({
        let sampler = healthz_latencies(server.base.clone(), 200);
        move || sampler.join().unwrap()
    })
    .await
    .unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut answered = 0;
    for task in load {
        answered += tokio::time::timeout(Duration::from_secs(60), task)
            .await
            .expect("the resolves finish within 60 s")
            .unwrap();
    }
    let p99 = latencies[latencies.len() * 99 / 100 - 1];
    assert!(
        p99 < Duration::from_millis(100),
        "/healthz p99 {p99:?} during {answered} resolves of the bomb's thread: {latencies:?}"
    );
    drop(server);

    // A bomb stored before its HTML was converted at import (as by an older version):
    // converting it at every read costs seconds, off the runtime's workers, so the
    // deadline answers 504 on time and /healthz answers meanwhile.
    let db = rusqlite::Connection::open(root.path().join("t.db")).unwrap();
    db.execute("UPDATE messages SET html_text = NULL", [])
        .unwrap();
    drop(db);
    let server = Server::start(root.path(), &url, Some(TOKEN), &["--deadline", "0.2"]);
    let sampler = healthz_latencies(server.base.clone(), 10);
    assert_eq!(
        server.resolve(bomb_2).await,
        (
            504,
            error(
                "timeout",
                "the request took longer than the deadline of 0.2 s"
            )
        )
    );
    let latencies = tokio::task::spawn_blocking(move || sampler.join().unwrap())
        .await
        .unwrap();
    assert!(
        latencies[latencies.len() - 1] < Duration::from_secs(1),
        "{latencies:?}"
    );
}

/// A message From `from` relayed by `mx.acme.test` with `auth` (extra header lines).
fn relayed(id: &str, from: &str, auth: &str, in_reply_to: &str) -> String {
    format!(
        "Received: from mx.example.net by mx.acme.test; Tue, 10 Mar 2026 09:00:00 +0000\r\n{auth}{from}Message-ID: {id}\r\nTo: zoe@example.com\r\nSubject: Re: Hinge\r\nDate: Tue, 10 Mar 2026 10:00:00 +0000\r\nIn-Reply-To: {in_reply_to}\r\n\r\nDone.\r\n"
    )
}

#[tokio::test]
async fn forged_directions_over_http() {
    let (_dir, url) = demo_db();
    let server = Server::start(
        &project(),
        &url,
        Some(TOKEN),
        &["--trusted-authserv-id", "mx.acme.test"],
    );
    let first = eml(
        "<hinge-1@example.com>",
        "zoe@example.com",
        None,
        "Hinge",
        "Broken.",
    );
    let (status, text) = server.post("/v1/mail", "message/rfc822", first).await;
    assert_eq!(status, 201, "{text}");
    let zoe: Value = serde_json::from_str(&text).unwrap();

    let two_from = relayed(
        "<x1@evil.test>",
        "From: eve@evil.test\r\nFrom: support@acme.test\r\n",
        "",
        "<hinge-1@example.com>",
    );
    for path in [
        "/v1/mail",
        "/v1/mail?direction=outbound",
        "/v1/mail?direction=auto",
    ] {
        assert_eq!(
            server.post(path, "message/rfc822", two_from.clone()).await,
            (
                422,
                error(
                    "invalid_input",
                    "2 `From` headers: a message has exactly one, so it is not imported"
                )
            ),
            "{path}"
        );
    }
    let list = relayed(
        "<x2@evil.test>",
        "From: eve@evil.test, support@acme.test\r\n",
        "",
        "<hinge-1@example.com>",
    );
    assert_eq!(
        server
            .post("/v1/mail?direction=auto", "message/rfc822", list)
            .await,
        (
            422,
            error(
                "invalid_input",
                "the `From` header lists 2 addresses and there is no `Sender` header naming who sent it"
            )
        )
    );

    // `?direction=auto`: only a passing DMARC result of the trusted server makes it the
    // persona's own reply, in Zoe's thread.
    let zoe_thread = zoe["thread_id"].clone();
    let post = |id: &'static str, auth: &'static str| {
        let mail = relayed(
            id,
            "From: SUPPORT@acme.test\r\n",
            auth,
            "<hinge-1@example.com>",
        );
        let server = &server;
        let zoe_thread = zoe_thread.clone();
        async move {
            let (status, text) = server
                .post("/v1/mail?direction=auto", "message/rfc822", mail)
                .await;
            assert_eq!(status, 201, "{text}");
            let stored: Value = serde_json::from_str(&text).unwrap();
            (
                stored["direction"].clone(),
                stored["thread_id"] == zoe_thread,
            )
        }
    };
    assert_eq!(post("<x3@evil.test>", "").await, (json!("inbound"), false));
    assert_eq!(
        post(
            "<x4@evil.test>",
            "Authentication-Results: mx.evil.test; dmarc=pass header.from=acme.test\r\n"
        )
        .await,
        (json!("inbound"), false)
    );
    assert_eq!(
        post(
            "<x5@evil.test>",
            "Authentication-Results: mx.acme.test; dmarc=fail header.from=acme.test\r\n"
        )
        .await,
        (json!("inbound"), false)
    );
    assert_eq!(
        post(
            "<x6@acme.test>",
            "Authentication-Results: mx.acme.test; dmarc=pass header.from=acme.test\r\n"
        )
        .await,
        (json!("outbound"), true)
    );
    // By default, mail received over HTTP is inbound whatever it claims.
    let (status, text) = server
        .post(
            "/v1/mail",
            "message/rfc822",
            relayed(
                "<x7@acme.test>",
                "From: support@acme.test\r\n",
                "Authentication-Results: mx.acme.test; dmarc=pass header.from=acme.test\r\n",
                "<hinge-1@example.com>",
            ),
        )
        .await;
    assert_eq!(status, 201, "{text}");
    let stored: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (
            stored["direction"].clone(),
            stored["thread_id"] == zoe["thread_id"]
        ),
        (json!("inbound"), false)
    );
}

#[tokio::test]
async fn a_squatted_message_id_answers_409() {
    let (_dir, url) = demo_db();
    let server = Server::start(&project(), &url, Some(TOKEN), &[]);
    let squat = eml(
        "<reply-7@acme.test>",
        "Eve <eve@evil.test>",
        None,
        "Re: Broken hinge",
        "Reply to me.",
    );
    let (status, text) = server
        .post("/v1/mail", "message/rfc822", squat.clone())
        .await;
    assert_eq!(status, 201, "{text}");
    // The application records the reply it sent under the id Eve predicted.
    let sent = eml(
        "<reply-7@acme.test>",
        "support@acme.test",
        Some("<refund-3@example.com>"),
        "Re: Broken hinge",
        "A new hinge is on its way.",
    );
    assert_eq!(
        server
            .post("/v1/mail?direction=outbound", "message/rfc822", sent)
            .await,
        (
            409,
            error(
                "conflict",
                "Message-ID `<reply-7@acme.test>` is already stored with another direction (`inbound`), sender (`eve@evil.test`) and content: not imported, a Message-ID belongs to the message stored first"
            )
        )
    );
    let (status, text) = server.post("/v1/mail", "message/rfc822", squat).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains(r#""status": "duplicate""#), "{text}");
    let (_, metrics) = server.get("/metrics", Some(TOKEN)).await;
    let line = r#"protege_mail_imported_total{status="conflict"} 1"#;
    assert!(
        metrics.lines().any(|l| l == line),
        "no `{line}` in\n{metrics}"
    );
}

/// `protege serve` that must refuse to start: its exit code and stderr.
fn refused(env: &[(&str, &str)], extra: &[&str]) -> (Option<i32>, String) {
    let (_dir, url) = demo_db();
    let out = protege(&project(), &url)
        .arg("serve")
        .args(extra)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| l.starts_with("error: "))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

#[tokio::test]
async fn authentication_is_off_only_when_asked() {
    assert_eq!(
        refused(&[("PROTEGE_SERVE_TOKEN", "")], &["--listen", "127.0.0.1:0"]),
        (
            Some(2),
            "error: `PROTEGE_SERVE_TOKEN` is set but empty: set it to the token clients must send, or unset it to serve without authentication".to_owned()
        )
    );
    assert_eq!(
        refused(&[], &["--listen", "0.0.0.0:0"]),
        (
            Some(2),
            "error: `0.0.0.0:0` is not a loopback address and `PROTEGE_SERVE_TOKEN` is not set: set a token, or pass `--no-auth` to serve without authentication".to_owned()
        )
    );
    assert_eq!(
        refused(
            &[("PROTEGE_SERVE_TOKEN", TOKEN)],
            &["--listen", "0.0.0.0:0", "--no-auth"]
        ),
        (
            Some(2),
            "error: `--no-auth` and `PROTEGE_SERVE_TOKEN` contradict each other: unset the token or drop `--no-auth`".to_owned()
        )
    );

    // Asked for: served, and the log says so before the address.
    let (_dir, url) = demo_db();
    let mut cmd = protege(&project(), &url);
    let mut child = cmd
        .args(["serve", "--listen", "0.0.0.0:0", "--no-auth"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    let port = loop {
        let line = lines.next().expect("serve ended before listening").unwrap();
        if let Some(at) = line.find("listening on http://0.0.0.0:") {
            break line[at + "listening on http://0.0.0.0:".len()..].to_owned();
        }
        seen.push(line);
    };
    assert!(
        seen.iter().any(|l| l.ends_with(&format!(
            "authentication is off: `/v1/*` and `/metrics` are open to anyone who reaches 0.0.0.0:{port}"
        ))),
        "{seen:#?}"
    );
    protege::agent::install_crypto_provider();
    let res = reqwest::get(format!("http://127.0.0.1:{port}/v1/personas"))
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test]
async fn the_bearer_scheme_is_case_insensitive() {
    let (_dir, url) = demo_db();
    let server = Server::start(&project(), &url, Some(TOKEN), &[]);
    let send = |authorization: String| {
        let req = server
            .client
            .get(server.url("/v1/personas"))
            .header("authorization", authorization);
        async move { req.send().await.unwrap().status().as_u16() }
    };
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        assert_eq!(send(format!("{scheme} {TOKEN}")).await, 200, "{scheme}");
        assert_eq!(
            send(format!("{scheme}  {TOKEN}")).await,
            200,
            "{scheme}, two spaces"
        );
        assert_eq!(send(format!("{scheme} wrong")).await, 401, "{scheme}");
    }
    for wrong in [
        format!("Basic {TOKEN}"),
        format!("Bearer{TOKEN}"),
        format!("Bearerx {TOKEN}"),
        TOKEN.to_owned(),
    ] {
        assert_eq!(send(wrong.clone()).await, 401, "{wrong}");
    }
}

/// Personas whose resolvers read the database: `history` (a reply run's ThreadHistory) and
/// `records` (a scheduled run's LoadRecord of table `orders`).
fn reading_root() -> tempfile::TempDir {
    let root = history_root();
    std::fs::rename(
        root.path().join("personas/p.toml"),
        root.path().join("personas/history.toml"),
    )
    .unwrap();
    std::fs::write(
        root.path().join("personas/records.toml"),
        "[[responsibilities]]\nname = \"r\"\nschedule = \"0 8 * * *\"\ninstructions = \"\"\n\n[[responsibility_resolvers]]\nuse = \"LoadRecord\"\ntable = \"orders\"\ntemplate = \"Order {{ record.id }}\"\n",
    )
    .unwrap();
    root
}

#[tokio::test]
async fn a_database_failure_inside_a_resolver_answers_503() {
    let root = reading_root();
    let name = format!("pt_resolver_db_{}", std::process::id());
    for (url, server_url) in every_backend(root.path(), &name).await {
        execute(&url, "CREATE TABLE orders (id INTEGER)").await;
        execute(&url, "INSERT INTO orders (id) VALUES (7)").await;
        let server = Server::start(root.path(), &url, Some(TOKEN), &["--no-watch"]);
        let mail = eml(
            "<up-1@example.com>",
            "Zoe <zoe@example.com>",
            None,
            "Hinge",
            "The hinge broke.",
        );
        let reply = eml(
            "<up-2@example.com>",
            "Zoe <zoe@example.com>",
            Some("<up-1@example.com>"),
            "Re: Hinge",
            "Any news?",
        );
        for mail in [mail, reply] {
            let (status, text) = server.post("/v1/mail", "message/rfc822", mail).await;
            assert_eq!(status, 201, "{url}: {text}");
        }
        let history = json!({"persona": "history", "message_id": "<up-2@example.com>", "now": NOW});
        let records = json!({"persona": "records", "responsibility": "r", "now": NOW});
        assert_eq!(server.resolve(history.clone()).await.0, 200, "{url}");
        let (status, text) = server.resolve(records.clone()).await;
        assert_eq!(status, 200, "{url}: {text}");

        // The tables the resolvers read go away under the running service.
        execute(&url, "DROP TABLE tool_uses").await;
        execute(&url, "DROP TABLE orders").await;
        let (missing_tool_uses, missing_orders) = if url.starts_with("sqlite") {
            (
                "(code: 1) no such table: tool_uses".to_owned(),
                "(code: 1) no such table: orders".to_owned(),
            )
        } else if url.starts_with("postgres") {
            (
                r#"relation "tool_uses" does not exist"#.to_owned(),
                r#"relation "orders" does not exist"#.to_owned(),
            )
        } else {
            (
                format!("1146 (42S02): Table '{name}.tool_uses' doesn't exist"),
                format!("1146 (42S02): Table '{name}.orders' doesn't exist"),
            )
        };
        let history_down = format!(
            "persona `history` (`personas/history.toml`): resolver 2 `ThreadHistory` failed: database error: error returned from database: {missing_tool_uses}"
        );
        let records_down = format!(
            "persona `records` (`personas/records.toml`): resolver 1 `LoadRecord` failed: cannot read table `orders`: error returned from database: {missing_orders}"
        );
        assert_eq!(
            server.resolve(history).await,
            (503, error("unavailable", &history_down)),
            "{url}"
        );
        assert_eq!(
            server.resolve(records).await,
            (503, error("unavailable", &records_down)),
            "{url}"
        );
        drop(server);

        // The command line keeps its exit code 1 for the same failure.
        let out = protege(root.path(), &url)
            .args(["resolve", "--persona", "records", "--responsibility", "r"])
            .output()
            .unwrap();
        assert_eq!(
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).into_owned()
            ),
            (Some(1), format!("error: {records_down}\n")),
            "{url}"
        );
        if let Some(server_url) = server_url {
            execute(&server_url, &format!("DROP DATABASE IF EXISTS {name}")).await;
        }
    }
}

#[test]
fn a_deadline_out_of_range_is_a_usage_error() {
    for given in ["1e20", "NaN", "inf", "-1", "0", "86400.5", "soon"] {
        let out = protege(&project(), "sqlite::memory:")
            .args(["serve", "--listen", "127.0.0.1:0"])
            .arg(format!("--deadline={given}"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            (out.status.code(), stderr.lines().next().unwrap_or_default()),
            (
                Some(2),
                format!(
                    "error: invalid value '{given}' for '--deadline <SECONDS>': `{given}` is not a number of seconds above 0 and at most 86400 (one day)"
                )
                .as_str()
            ),
            "{stderr}"
        );
    }
}

#[tokio::test]
async fn a_summary_is_capped_at_one_mib_in_any_json_encoding() {
    let (_dir, url) = demo_db();
    let server = Server::start(&project(), &url, Some(TOKEN), &[]);
    // Every byte of the summary written as a `\u0061` escape: six bytes of JSON per byte.
    let escaped = |bytes: usize| {
        format!(
            r#"{{"message_id":"<refund-2@acme.test>","content":"{}"}}"#,
            "\\u0061".repeat(bytes)
        )
    };
    let max = protege::SUMMARY_MAX_BYTES;
    assert_eq!(
        server
            .post("/v1/summaries", "application/json", escaped(max))
            .await,
        (
            201,
            "{\n  \"status\": \"stored\",\n  \"id\": 1,\n  \"thread_id\": 1,\n  \"through_message_id\": \"<refund-2@acme.test>\"\n}\n".to_owned()
        )
    );

    let over = error(
        "payload_too_large",
        &format!(
            "the summary through `<refund-2@acme.test>` is {} bytes, over the limit of {max}",
            max + 1
        ),
    );
    assert_eq!(
        server
            .post("/v1/summaries", "application/json", escaped(max + 1))
            .await,
        (413, over.clone())
    );
    let plain = json!({"message_id": "<refund-2@acme.test>", "content": "a".repeat(max + 1)});
    assert_eq!(
        server
            .post("/v1/summaries", "application/json", plain.to_string())
            .await,
        (413, over)
    );
    // A body over the cap of the longest encoding is refused from its length.
    let limit = 6 * max + 64 * 1024;
    let request = format!(
        "POST /v1/summaries HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        limit + 1
    );
    assert_eq!(
        status_and_body(&raw(&server, request.as_bytes()).await),
        (
            "HTTP/1.1 413 Payload Too Large",
            error(
                "payload_too_large",
                &format!("the body is over this route's limit of {limit} bytes")
            )
            .as_str()
        )
    );
}

/// The `host:port` a server listens on.
fn address(server: &Server) -> String {
    server.base.trim_start_matches("http://").to_owned()
}

/// Everything the server answers to `request` sent on a fresh connection, until it closes
/// the connection; 30 s watchdog.
async fn raw(server: &Server, request: &[u8]) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(address(server))
        .await
        .unwrap();
    let _ = stream.write_all(request).await;
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut answer))
        .await
        .expect("the connection stayed open for 30 s")
        .unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

/// The status line and the body of a raw answer.
fn status_and_body(answer: &str) -> (&str, &str) {
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((answer, ""));
    (head.lines().next().unwrap_or_default(), body)
}

#[tokio::test]
async fn protocol_errors_answer_in_json_and_are_counted() {
    let (_dir, url) = demo_db();
    let server = Server::start(&project(), &url, None, &[]);
    let malformed = error(
        "bad_request",
        "the request line or a header field is malformed (RFC 9112)",
    );
    for request in [
        "GET /healthz HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n".to_owned(),
        "HELLO\r\n\r\n".to_owned(),
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX: a\u{1}b\r\n\r\n".to_owned(),
    ] {
        assert_eq!(
            status_and_body(&raw(&server, request.as_bytes()).await),
            ("HTTP/1.1 400 Bad Request", malformed.as_str()),
            "{request:?}"
        );
    }
    let long_uri = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(70_000));
    assert_eq!(
        status_and_body(&raw(&server, long_uri.as_bytes()).await),
        (
            "HTTP/1.1 414 URI Too Long",
            error("uri_too_long", "the request target is over 65534 bytes").as_str()
        )
    );
    let many_headers = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\n{}\r\n",
        (0..101)
            .map(|i| format!("X-{i}: y\r\n"))
            .collect::<String>()
    );
    assert_eq!(
        status_and_body(&raw(&server, many_headers.as_bytes()).await),
        (
            "HTTP/1.1 431 Request Header Fields Too Large",
            error(
                "header_fields_too_large",
                "the request head is over 131072 bytes or 100 header fields"
            )
            .as_str()
        )
    );
    // The connection still serves well-formed requests, and the refusals were counted.
    let (_, metrics) = server.get("/metrics", None).await;
    for line in [
        r#"protege_http_requests_total{route="unmatched",status="400"} 3"#,
        r#"protege_http_requests_total{route="unmatched",status="414"} 1"#,
        r#"protege_http_requests_total{route="unmatched",status="431"} 1"#,
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "no `{line}` in\n{metrics}"
        );
    }
    let logged: Vec<String> = server.log.try_iter().collect();
    for status in [400, 414, 431] {
        assert!(
            logged.iter().any(|l| l.contains("request")
                && l.contains("route=\"unmatched\"")
                && l.contains(&format!("status={status}"))),
            "{status}: {logged:#?}"
        );
    }
}

/// Waits for the server to close `stream` (a read of 0 bytes), discarding what it sends;
/// 30 s watchdog.
async fn closed_by_server(stream: &mut tokio::net::TcpStream, what: &str) -> String {
    use tokio::io::AsyncReadExt as _;
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut got))
        .await
        .unwrap_or_else(|_| panic!("{what}: still open after 30 s"))
        .unwrap();
    String::from_utf8_lossy(&got).into_owned()
}

#[tokio::test]
async fn slow_and_idle_connections_are_closed() {
    use tokio::io::AsyncWriteExt as _;
    let (_dir, url) = demo_db();
    let server = Server::start(
        &project(),
        &url,
        None,
        &["--header-timeout", "1", "--idle-timeout", "2"],
    );
    let connect = || tokio::net::TcpStream::connect(address(&server));
    // A head trickled one byte a second never completes: closed after the header timeout
    // although bytes keep arriving.
    let mut slow = connect().await.unwrap();
    let trickle = async {
        for byte in b"GET /healthz HTTP/1.1\r\nHost: x\r\n" {
            if slow.write_all(&[*byte]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), trickle)
        .await
        .unwrap();
    assert_eq!(closed_by_server(&mut slow, "a trickled head").await, "");
    // A connection that sends nothing, and one kept alive after its request, are closed
    // after the idle timeout.
    let mut silent = connect().await.unwrap();
    assert_eq!(
        closed_by_server(&mut silent, "a silent connection").await,
        ""
    );
    let mut kept = connect().await.unwrap();
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let answer = closed_by_server(&mut kept, "a kept-alive connection").await;
    assert_eq!(
        status_and_body(&answer),
        ("HTTP/1.1 200 OK", r#"{"status":"ok"}"#)
    );
}

/// One client's idle connections lock no one else out: over its own cap it is answered 503,
/// while a client from another address is served.
#[tokio::test]
async fn one_clients_connections_are_capped_on_their_own() {
    use tokio::io::AsyncWriteExt as _;
    let (_dir, url) = demo_db();
    let server = Server::start(
        &project(),
        &url,
        None,
        &[
            "--max-connections",
            "8",
            "--max-connections-per-client",
            "2",
        ],
    );
    let from = |ip: &str| {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{ip}:0").parse().unwrap()).unwrap();
        socket.connect(address(&server).parse().unwrap())
    };
    let _idle = [
        from("127.0.0.1").await.unwrap(),
        from("127.0.0.1").await.unwrap(),
    ];
    let mut third = from("127.0.0.1").await.unwrap();
    let answer = closed_by_server(&mut third, "a third connection of one client").await;
    assert_eq!(
        status_and_body(&answer),
        (
            "HTTP/1.1 503 Service Unavailable",
            error(
                "unavailable",
                "this client has 2 connections open, its limit; close one or retry later"
            )
            .as_str()
        )
    );
    let mut other = from("127.0.0.2").await.unwrap();
    other
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let answer = closed_by_server(&mut other, "another client").await;
    assert_eq!(
        status_and_body(&answer),
        ("HTTP/1.1 200 OK", r#"{"status":"ok"}"#)
    );
}

#[tokio::test]
async fn connections_over_the_cap_are_answered_503() {
    use tokio::io::AsyncWriteExt as _;
    let (_dir, url) = demo_db();
    let server = Server::start(
        &project(),
        &url,
        None,
        &[
            "--max-connections",
            "2",
            "--max-connections-per-client",
            "3",
        ],
    );
    let connect = || tokio::net::TcpStream::connect(address(&server));
    let first = connect().await.unwrap();
    let second = connect().await.unwrap();
    let mut third = connect().await.unwrap();
    let answer = closed_by_server(&mut third, "a connection over the cap").await;
    assert_eq!(
        status_and_body(&answer),
        (
            "HTTP/1.1 503 Service Unavailable",
            error(
                "unavailable",
                "the service has 2 connections open, its limit; retry later"
            )
            .as_str()
        )
    );
    // A slot that frees up is taken by the next connection.
    drop(first);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let mut next = connect().await.unwrap();
        let _ = next
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await;
        let answer = closed_by_server(&mut next, "a connection under the cap").await;
        if status_and_body(&answer) == ("HTTP/1.1 200 OK", r#"{"status":"ok"}"#) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{answer}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Slots free up as the server closes its side: ask until one is free.
    drop(second);
    let metrics = loop {
        let (status, metrics) = server.get("/metrics", None).await;
        if status == 200 {
            break metrics;
        }
        assert!(std::time::Instant::now() < deadline, "{metrics}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let line = r#"protege_http_requests_total{route="unmatched",status="503"}"#;
    assert!(
        metrics.lines().any(|l| l.starts_with(line)),
        "no `{line}` in\n{metrics}"
    );
}

#[tokio::test]
async fn an_absurd_content_length_is_answered_from_the_header() {
    let (_dir, url) = demo_db();
    let server = Server::start(&project(), &url, Some(TOKEN), &[]);
    for (route, content_type, limit) in [
        ("/v1/mail", "message/rfc822", 25 * 1024 * 1024),
        ("/v1/resolve", "application/json", 64 * 1024),
    ] {
        // The body never comes: the answer cannot wait for it.
        let request = format!(
            "POST {route} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: {content_type}\r\nContent-Length: 999999999999999\r\n\r\n"
        );
        assert_eq!(
            status_and_body(&raw(&server, request.as_bytes()).await),
            (
                "HTTP/1.1 413 Payload Too Large",
                error(
                    "payload_too_large",
                    &format!("the body is over this route's limit of {limit} bytes")
                )
                .as_str()
            ),
            "{route}"
        );
    }
}

#[tokio::test]
async fn shutdown_does_not_wait_for_connections_without_a_request() {
    use tokio::io::AsyncWriteExt as _;
    let (_dir, url) = demo_db();
    let mut server = Server::start(&project(), &url, None, &["--header-timeout", "300"]);
    let _silent = tokio::net::TcpStream::connect(address(&server))
        .await
        .unwrap();
    let mut partial = tokio::net::TcpStream::connect(address(&server))
        .await
        .unwrap();
    partial
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    // Both connections are accepted before the signal.
    assert_eq!(server.get("/healthz", None).await.0, 200);
    let start = std::time::Instant::now();
    let killed = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let exit = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "serve still waits for connections without a request after 20 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(exit.code(), Some(0));
}

/// `protege serve` on `url` with `extra` flags, in a process limited to 64 file
/// descriptors.
fn serve_with_64_descriptors(url: &str, extra: &[&str]) -> Server {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("ulimit -n 64 && exec \"$@\"")
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_protege"))
        .arg("--root")
        .arg(project())
        .arg("--database")
        .arg(url)
        .args(["serve", "--listen", "127.0.0.1:0", "--no-watch"])
        .args(extra)
        .env_remove("PROTEGE_DATABASE_URL")
        .env_remove("PROTEGE_SERVE_TOKEN");
    Server::spawn(cmd)
}

#[tokio::test]
async fn a_failed_accept_is_logged_and_the_service_goes_on() {
    let (_dir, url) = demo_db();
    // Few file descriptors and caps set above them (the default cap would stay below the
    // limit): connections beyond them cannot be accepted.
    let server = serve_with_64_descriptors(
        &url,
        &[
            "--max-connections",
            "1000",
            "--max-connections-per-client",
            "1000",
        ],
    );
    let mut held = Vec::new();
    for _ in 0..100 {
        if let Ok(stream) = tokio::net::TcpStream::connect(address(&server)).await {
            held.push(stream);
        }
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut logged = Vec::new();
    while !logged.iter().any(|l: &String| {
        l.contains("cannot accept a connection") && l.contains("Too many open files (os error 24)")
    }) {
        assert!(
            std::time::Instant::now() < deadline,
            "no failed accept logged: {logged:#?}"
        );
        if let Ok(line) = server.log.recv_timeout(Duration::from_millis(100)) {
            logged.push(line);
        }
    }
    drop(held);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let client = common::server::http_client();
        if let Ok(res) = client.get(server.url("/healthz")).send().await {
            assert_eq!(res.status().as_u16(), 200);
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the service did not recover"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn readiness_details_need_the_token_and_quote_no_server_source() {
    for var in ["PROTEGE_TEST_POSTGRES_URL", "PROTEGE_TEST_MYSQL_URL"] {
        let Some(server_url) = std::env::var(var).ok().filter(|u| !u.is_empty()) else {
            continue;
        };
        // A database that does not exist on a server that answers.
        let name = format!("pt_missing_{}", std::process::id());
        let url = format!("{}/{name}", server_url.rsplit_once('/').unwrap().0);
        let root = history_root();
        let server = Server::start(root.path(), &url, Some(TOKEN), &["--no-watch"]);
        assert_eq!(
            server.get("/readyz", None).await,
            (503, not_ready()),
            "{var}"
        );
        let reason = if url.starts_with("postgres") {
            format!(r#"database "{name}" does not exist"#)
        } else {
            format!("1049 (42000): Unknown database '{name}'")
        };
        let detail =
            format!("cannot connect to database `{url}`: error returned from database: {reason}");
        assert_eq!(
            server.get("/readyz", Some(TOKEN)).await,
            (503, error("unavailable", &detail)),
            "{var}"
        );
        let logged: Vec<String> = server.log.try_iter().collect();
        assert!(
            logged
                .iter()
                .any(|l| l.contains("not ready") && l.contains(&reason)),
            "{logged:#?}"
        );
    }
}

#[tokio::test]
async fn the_time_of_a_run_stays_within_four_digit_years() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    std::fs::write(
        root.path().join("personas/clock.toml"),
        "[[responsibilities]]\nname = \"r\"\nschedule = \"0 8 * * *\"\ninstructions = \"\"\n\n[[responsibility_resolvers]]\nuse = \"LoadText\"\ntemplate = \"run at {{ now }}\"\n",
    )
    .unwrap();
    let url = format!("sqlite://{}", root.path().join("t.db").display());
    let server = Server::start(root.path(), &url, Some(TOKEN), &["--no-watch"]);
    let run =
        |now: &str| server.resolve(json!({"persona": "clock", "responsibility": "r", "now": now}));
    for (now, shown) in [
        ("9999-12-31T23:00:00-02:00", "+10000-01-01T01:00:00Z"),
        ("0000-01-01T00:00:00+01:00", "-0001-12-31T23:00:00Z"),
    ] {
        assert_eq!(
            run(now).await,
            (
                400,
                error(
                    "bad_request",
                    &format!(
                        "the time of the run `{shown}` is outside the years 0000 to 9999 (UTC)"
                    )
                )
            ),
            "{now}"
        );
    }
    // A leap second is the second before it.
    for now in ["2026-06-30T23:59:60Z", "2026-06-30T23:59:60.999Z"] {
        let (status, text) = run(now).await;
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            (status, &body["messages"][0]["content"]),
            (200, &json!("run at 2026-06-30T23:59:59Z")),
            "{now}"
        );
    }
    // The command line says the same, as a usage error.
    let out = protege(root.path(), &url)
        .args(["resolve", "--persona", "clock", "--responsibility", "r"])
        .arg("--now=9999-12-31T23:00:00-02:00")
        .output()
        .unwrap();
    assert_eq!(
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned()),
        (
            Some(2),
            "error: the time of the run `+10000-01-01T01:00:00Z` is outside the years 0000 to 9999 (UTC)\n".to_owned()
        )
    );
    let out = protege(root.path(), &url)
        .args(["resolve", "--persona", "clock", "--responsibility", "r"])
        .arg("--now=2026-06-30T23:59:60Z")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("\"run at 2026-06-30T23:59:59Z\""),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// `POST /v1/mail` on a server database with mail MariaDB's `max_allowed_packet` (16 MiB by
/// default) cannot take whole: a 17 MiB attachment is stored as metadata with a logged
/// warning (201), a 17 MiB text is 422, never a 503 or a broken connection, and the next
/// mail is stored; a date past MySQL's 2038 `TIMESTAMP` limit is stored as sent.
#[tokio::test]
async fn mail_too_large_for_the_database_is_422_and_breaks_nothing() {
    use base64::Engine as _;
    for var in ["PROTEGE_TEST_POSTGRES_URL", "PROTEGE_TEST_MYSQL_URL"] {
        let Some(server_url) = std::env::var(var).ok().filter(|u| !u.is_empty()) else {
            continue;
        };
        let mysql = var.contains("MYSQL");
        let name = format!("pt_packet_{}", std::process::id());
        let url = fresh_server_db(&server_url, &name).await;
        let server = Server::start(&project(), &url, Some(TOKEN), &["--no-watch"]);
        let size = 17 << 20;
        let data = base64::engine::general_purpose::STANDARD.encode(vec![b'x'; size]);
        let wrapped: Vec<&str> = data
            .as_bytes()
            .chunks(76)
            .map(|l| std::str::from_utf8(l).unwrap())
            .collect();
        let scan = format!(
            "From: Zoe <zoe@example.com>\r\nTo: support@acme.test\r\nSubject: Scan\r\n\
             Message-ID: <scan@example.com>\r\nDate: Tue, 19 Jan 2038 03:14:08 +0000\r\n\
             MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"b\"\r\n\r\n\
             --b\r\nContent-Type: text/plain\r\n\r\nThe scan.\r\n--b\r\n\
             Content-Type: application/pdf\r\n\
             Content-Disposition: attachment; filename=\"scan.pdf\"\r\n\
             Content-Transfer-Encoding: base64\r\n\r\n{}\r\n--b--\r\n",
            wrapped.join("\r\n")
        );
        let (status, body) = server.post("/v1/mail", "message/rfc822", scan).await;
        assert_eq!(status, 201, "{var}: {body}");
        if mysql {
            let log = eventually_logged(&server, "scan.pdf");
            assert!(
                log.contains("attachment `scan.pdf` (17825792 bytes) is too large for the database's `max_allowed_packet` of 16777216 bytes: its data is not stored"),
                "{log}"
            );
        }
        let text = format!(
            "From: Zoe <zoe@example.com>\r\nTo: support@acme.test\r\nSubject: Log\r\n\
             Message-ID: <log@example.com>\r\nDate: Mon, 5 Jan 2026 10:00:00 +0000\r\n\r\n{}",
            format!("{}\r\n", "y".repeat(98)).repeat(size / 100 + 1)
        );
        let (status, body) = server.post("/v1/mail", "message/rfc822", text).await;
        if mysql {
            assert_eq!(status, 422, "{var}: {body}");
            assert_eq!(
                body,
                error(
                    "invalid_input",
                    "the message's text (17647603 bytes) is too large for the database's `max_allowed_packet` of 16777216 bytes: it cannot be stored"
                )
            );
        } else {
            assert_eq!(status, 201, "{var}: {body}");
        }
        let next = eml(
            "<next@example.com>",
            "Zoe <zoe@example.com>",
            None,
            "Next",
            "Hi.",
        );
        let (status, body) = server.post("/v1/mail", "message/rfc822", next).await;
        assert_eq!(status, 201, "{var}: {body}");

        use protege::db::sea_orm::ConnectionTrait as _;
        let conn = protege::db::sea_orm::Database::connect(&url).await.unwrap();
        let row = conn
            .query_one_raw(protege::db::sea_orm::Statement::from_string(
                conn.get_database_backend(),
                "SELECT a.byte_size AS size, a.data IS NULL AS no_data FROM attachments a",
            ))
            .await
            .unwrap()
            .unwrap();
        let stored: i64 = row.try_get("", "size").unwrap();
        let no_data: bool = row
            .try_get::<bool>("", "no_data")
            .or_else(|_| row.try_get::<i32>("", "no_data").map(|n| n != 0))
            .or_else(|_| row.try_get::<i64>("", "no_data").map(|n| n != 0))
            .unwrap();
        assert_eq!((stored, no_data), (size as i64, mysql), "{var}");
        let m = protege::db::load_message(&conn, "<scan@example.com>")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(protege::rfc3339_z(&m.sent_at), "2038-01-19T03:14:08Z");
        drop(server);
        conn.close().await.unwrap();
        let admin = protege::db::sea_orm::Database::connect(&server_url)
            .await
            .unwrap();
        let _ = admin
            .execute_unprepared(&format!("DROP DATABASE IF EXISTS {name}"))
            .await;
    }
}

/// The first log line of `server` that contains `needle` (waits up to 30 s).
fn eventually_logged(server: &Server, needle: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        match server.log.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return line,
            Ok(_) => {}
            Err(_) => break,
        }
    }
    panic!("no log line with `{needle}` within 30 s");
}

#[tokio::test]
async fn diff_compares_candidate_persona_files_with_auth_and_json_errors() {
    let (_dir, url) = demo_db();
    let server = Server::start(&project(), &url, Some(TOKEN), &[]);
    let res = server
        .client
        .post(server.url("/v1/diff"))
        .header("content-type", "application/json")
        .body(json!({"personas": {}}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 401);
    let diff = |body: Value| {
        let server = &server;
        async move {
            let (status, text) = server
                .post("/v1/diff", "application/json", body.to_string())
                .await;
            (status, serde_json::from_str::<Value>(&text).unwrap())
        }
    };
    let mut files = serde_json::Map::new();
    for name in ["billing.toml", "digest.toml", "support.toml"] {
        let text = std::fs::read_to_string(project().join("personas").join(name)).unwrap();
        files.insert(name.into(), text.into());
    }
    let summary = |answer: &Value| -> Vec<(String, String, u64, u64)> {
        answer["personas"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                (
                    d["persona"].as_str().unwrap().to_owned(),
                    d["status"].as_str().unwrap().to_owned(),
                    d["requests"].as_u64().unwrap(),
                    d["changed"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    // The live files: nothing changes.
    let (status, answer) = diff(json!({"personas": files, "now": NOW, "messages": 2})).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["changed"], json!(false));
    assert_eq!(
        summary(&answer),
        [
            ("billing".into(), "unchanged".into(), 0, 0),
            ("digest".into(), "unchanged".into(), 0, 0),
            ("support".into(), "unchanged".into(), 2, 0)
        ]
    );
    // An edit of one persona, a broken one, and only that persona asked for.
    let support = files["support.toml"]
        .as_str()
        .unwrap()
        .replace("briefly and politely.", "briefly and kindly.");
    files.insert("support.toml".into(), support.into());
    files.insert(
        "digest.toml".into(),
        "name = \"digest\"\nbroken = \n".into(),
    );
    let (status, answer) = diff(json!({"personas": files, "now": NOW, "messages": 2})).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["changed"], json!(true));
    assert_eq!(
        summary(&answer),
        [
            ("billing".into(), "unchanged".into(), 0, 0),
            ("digest".into(), "invalid".into(), 0, 0),
            ("support".into(), "changed".into(), 2, 2)
        ]
    );
    // The diagnostics name the file, not the folder it was written to on the server.
    assert_eq!(
        answer["personas"][1]["diagnostics"],
        json!([
            "digest.toml:2:10: error: invalid TOML: string values must be quoted, expected literal string"
        ])
    );
    let first = answer["personas"][2]["first_change"]["diff"]
        .as_str()
        .unwrap();
    assert!(
        first.starts_with("--- live/support <refund-3@example.com>\n+++ candidate/support <refund-3@example.com>\n@@ message 1 (system) @@\n"),
        "{first}"
    );
    let (status, answer) =
        diff(json!({"personas": files, "persona": "support", "since": "3650d", "now": NOW})).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        summary(&answer),
        [("support".into(), "changed".into(), 8, 8)]
    );
    // Mistakes.
    let kind = |answer: &Value| answer["error"]["kind"].as_str().unwrap().to_owned();
    let (status, answer) = diff(json!({"personas": {"../x.toml": ""}})).await;
    assert_eq!((status, kind(&answer)), (422, "invalid_input".into()));
    assert_eq!(
        answer["error"]["message"],
        json!(
            "persona file name `../x.toml` is not NAME.toml, NAME of 1 to 64 ASCII letters, digits, `-` and `_`"
        )
    );
    let (status, answer) = diff(json!({"personas": {}, "messages": 2, "since": "1d"})).await;
    assert_eq!(
        (status, answer["error"]["message"].clone()),
        (422, json!("give `messages` or `since`, not both"))
    );
    let (status, answer) = diff(json!({"personas": {}, "since": "0d"})).await;
    assert_eq!((status, kind(&answer)), (422, "invalid_input".into()));
    let (status, answer) = diff(json!({"persona": "support"})).await;
    assert_eq!((status, kind(&answer)), (400, "bad_request".into()));
}

/// The listing `protege db ARGS --format json` prints for `url`.
fn cli_listing(url: &str, args: &[&str]) -> String {
    let out = protege(&project(), url)
        .arg("db")
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn threads_and_messages_answer_what_the_cli_lists() {
    let (_dir, url) = demo_db();
    let server = Server::start(&project(), &url, Some(TOKEN), &[]);
    let unauthorized = error(
        "unauthorized",
        "this route needs `Authorization: Bearer <token>` with the token the service was started with",
    );
    assert_eq!(
        server.get("/v1/threads", None).await,
        (401, unauthorized.clone())
    );
    assert_eq!(
        server.get("/v1/threads/1/messages", None).await,
        (401, unauthorized.clone())
    );
    assert_eq!(
        server.get("/v1/threads/999/messages", Some("wrong")).await,
        (401, unauthorized)
    );

    let listed = cli_listing(&url, &["threads"]);
    assert_eq!(
        server.get("/v1/threads", Some(TOKEN)).await,
        (200, listed.clone())
    );
    assert_eq!(
        server.get("/v1/threads?limit=2", Some(TOKEN)).await,
        (200, cli_listing(&url, &["threads", "--limit", "2"]))
    );
    let threads: Vec<Value> = serde_json::from_str(&listed).unwrap();
    assert_eq!(threads.len(), 6);
    for thread in &threads {
        let id = thread["thread"].as_i64().unwrap().to_string();
        assert_eq!(
            server
                .get(&format!("/v1/threads/{id}/messages"), Some(TOKEN))
                .await,
            (200, cli_listing(&url, &["messages", "--thread", &id])),
            "thread {id}"
        );
    }

    assert_eq!(
        server.get("/v1/threads/999/messages", Some(TOKEN)).await,
        (
            404,
            error(
                "not_found",
                "unknown thread `999`: no thread with this id in the database"
            )
        )
    );
    assert_eq!(
        server.get("/v1/threads/x/messages", Some(TOKEN)).await,
        (
            404,
            error(
                "not_found",
                "unknown thread `x`: a thread's id is an integer (see `GET /v1/threads`)"
            )
        )
    );
    let (status, text) = server.get("/v1/threads?limit=-1", Some(TOKEN)).await;
    assert_eq!(status, 400, "{text}");
    let (status, text) = server.get("/v1/threads?order=asc", Some(TOKEN)).await;
    assert_eq!(status, 400, "{text}");
}

#[tokio::test]
async fn the_inspector_page_is_open_and_carries_no_data() {
    let (_dir, url) = demo_db();
    let server = Server::start(&project(), &url, Some(TOKEN), &[]);
    let policy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; \
                  object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
    for (path, content_type, shipped) in [
        (
            "/ui",
            "text/html; charset=utf-8",
            include_str!("../../src/serve/ui/index.html"),
        ),
        (
            "/ui/app.js",
            "text/javascript; charset=utf-8",
            include_str!("../../src/serve/ui/app.js"),
        ),
        (
            "/ui/app.css",
            "text/css; charset=utf-8",
            include_str!("../../src/serve/ui/app.css"),
        ),
    ] {
        let res = server.client.get(server.url(path)).send().await.unwrap();
        assert_eq!(res.status().as_u16(), 200, "{path}");
        let headers = res.headers().clone();
        let header = |name: &str| headers[name].to_str().unwrap().to_owned();
        assert_eq!(header("content-type"), content_type, "{path}");
        assert_eq!(header("content-security-policy"), policy, "{path}");
        assert_eq!(header("x-content-type-options"), "nosniff", "{path}");
        assert_eq!(header("cache-control"), "no-store", "{path}");
        assert_eq!(header("referrer-policy"), "no-referrer", "{path}");
        assert_eq!(header("x-frame-options"), "DENY", "{path}");
        assert_eq!(res.text().await.unwrap(), shipped, "{path}");
    }
    // Static files only: no inline script or style, data inserted as text.
    let page = include_str!("../../src/serve/ui/index.html");
    assert!(!page.contains("<script>") && !page.contains("style="));
    let script = include_str!("../../src/serve/ui/app.js");
    for markup in [
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
    ] {
        assert!(!script.contains(markup), "{markup}");
    }
    // The other routes under /ui are not open.
    assert_eq!(server.get("/ui/other.js", None).await.0, 401);
    assert_eq!(server.get("/ui/app.js", Some("wrong")).await.0, 200);
}

#[tokio::test]
async fn explain_counts_the_tokens_of_each_message_and_marks_the_cache_breakpoints() {
    let (_dir, url) = demo_db();
    let server = Server::start(&project(), &url, Some(TOKEN), &[]);
    let (status, text) = server
        .resolve(json!({"persona": "support", "message_id": "<refund-3@example.com>", "now": NOW, "explain": true}))
        .await;
    assert_eq!(status, 200, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    let tokens: Vec<u64> = answer["message_tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_u64().unwrap())
        .collect();
    assert_eq!(tokens, [112, 97, 32, 37, 106, 12, 26, 17, 14, 99, 29, 74]);
    // Each row's tokens are the sum of its messages'.
    let mut start = 0;
    for row in answer["explain"].as_array().unwrap() {
        let n = row["messages"].as_u64().unwrap() as usize;
        assert_eq!(
            tokens[start..start + n].iter().sum::<u64>(),
            row["tokens"].as_u64().unwrap(),
            "{row}"
        );
        start += n;
    }
    assert_eq!(start, tokens.len());
    assert_eq!(
        answer["cache_breakpoints"],
        json!([
            {"index": 9, "at": "history"},
            {"index": 10, "at": "system"},
            {"index": 11, "at": "end"},
        ])
    );
}

/// A candidate persona is a request's text: every file it reads, a literal path too, stays
/// inside the app root, so a token holder cannot read the process's environment (the
/// token, the database password, the fence key) or the system's files through a diff.
#[tokio::test]
async fn diff_candidates_read_no_file_outside_the_app_root() {
    let (_dir, url) = demo_db();
    let server = Server::start(&project(), &url, Some(TOKEN), &[]);
    let live = std::fs::read_to_string(project().join("personas/support.toml")).unwrap();
    for path in ["/proc/self/environ", "../../../../../../etc/passwd"] {
        let candidate = live.replace("prompts/support.md", path);
        let body = json!({"personas": {"support.toml": candidate}, "persona": "support", "now": NOW, "messages": 1});
        let (status, text) = server
            .post("/v1/diff", "application/json", body.to_string())
            .await;
        assert_eq!(status, 200, "{text}");
        let answer: Value = serde_json::from_str(&text).unwrap();
        let diff = answer["personas"][0]["first_change"]["diff"]
            .as_str()
            .unwrap();
        assert_eq!(
            diff.lines().filter(|l| l.starts_with('+')).nth(1),
            Some(
                format!(
                    "+error: persona `support` (`support.toml`): resolver 2 `LoadFile` failed: path outside root: `{path}` leaves the app root `{}`",
                    project().display()
                )
                .as_str()
            ),
            "{diff}"
        );
        assert!(
            !text.contains("PROTEGE_") && !text.contains("root:x:0"),
            "{text}"
        );
    }
}

/// A chunked body that declares a chunk larger than any route takes is answered 413 at
/// once, not held until the request's deadline (60 s here, past the 30 s watchdog of the
/// read), though the client sends nothing after the chunk-size line.
#[tokio::test]
async fn a_declared_chunk_over_every_limit_is_answered_413_at_once() {
    use tokio::io::AsyncWriteExt as _;
    let (_dir, url) = demo_db();
    let server = Server::start(&project(), &url, Some(TOKEN), &["--deadline", "60"]);
    let mut stream = tokio::net::TcpStream::connect(address(&server))
        .await
        .unwrap();
    stream
        .write_all(
            format!(
                "POST /v1/mail HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\
                 Content-Type: message/rfc822\r\nTransfer-Encoding: chunked\r\n\r\n\
                 ffffffffffffffff\r\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let answer = closed_by_server(&mut stream, "a chunk of 2^64-1 bytes").await;
    assert_eq!(
        status_and_body(&answer),
        (
            "HTTP/1.1 413 Payload Too Large",
            error(
                "payload_too_large",
                "the request declares a chunk of 18446744073709551615 bytes, over the 67108864 bytes a body may have"
            )
            .as_str()
        )
    );
    // A chunked body within the limits is served as before.
    let mut stream = tokio::net::TcpStream::connect(address(&server))
        .await
        .unwrap();
    let mail = "From: kim@example.com\r\nTo: support@acme.test\r\nSubject: Hi\r\nMessage-ID: <chunked@example.com>\r\nDate: Tue, 10 Mar 2026 09:00:00 +0000\r\n\r\nHello\r\n";
    stream
        .write_all(
            format!(
                "POST /v1/mail HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\
                 Content-Type: message/rfc822\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n\
                 {:x}\r\n{mail}\r\n0\r\n\r\n",
                mail.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let answer = closed_by_server(&mut stream, "a chunked mail").await;
    assert!(answer.starts_with("HTTP/1.1 201 Created"), "{answer}");
}

/// Under a low file-descriptor limit the default caps follow it: 64 descriptors leave a cap
/// of 16 connections, 4 per client, and the fifth of one client is answered 503 instead of
/// running the process out of descriptors.
#[tokio::test]
async fn the_default_caps_follow_the_file_descriptor_limit() {
    let (_dir, url) = demo_db();
    let server = serve_with_64_descriptors(&url, &[]);
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(
            tokio::net::TcpStream::connect(address(&server))
                .await
                .unwrap(),
        );
    }
    let mut fifth = tokio::net::TcpStream::connect(address(&server))
        .await
        .unwrap();
    let answer = closed_by_server(&mut fifth, "a fifth connection").await;
    assert_eq!(
        status_and_body(&answer),
        (
            "HTTP/1.1 503 Service Unavailable",
            error(
                "unavailable",
                "this client has 4 connections open, its limit; close one or retry later"
            )
            .as_str()
        )
    );
}
