//! The agent (§17) end to end, on every backend: mail posted → job → rounds with parallel
//! signed tool calls → the final answer → the reply in the outbox; the gate; a provider
//! that throttles or refuses; a job resumed after its worker died, with no round asked
//! twice; several workers answering each message once.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::HeaderMap;
use protege::agent::ProviderClient;
use protege::db::{self, JobFilter};
use protege::{Direction, Engine};
use protege_agent::standin::{self, Scripted, StandIn};
use serde_json::{Value, json};

mod common;
use common::server::every_backend;

const KEY: &str = "sk-test-agent-key-0123456789";
const SECRET: &str = "tool-secret-0123456789";

/// One call the tool server received: its call id, the tool, the input, and whether its
/// signature held.
type Call = (String, String, Value, bool);

/// What the tool server received.
#[derive(Debug, Clone, Default)]
struct Calls(Arc<Mutex<Vec<Call>>>);

impl Calls {
    fn all(&self) -> Vec<Call> {
        self.0.lock().unwrap().clone()
    }
}

/// A tool server: `/lookup` and `/tracking` answer JSON after checking the signature;
/// each call is recorded with whether its signature held.
async fn tool_server() -> (String, Calls) {
    tool_server_after(Duration::ZERO).await
}

/// [`tool_server`], answering each call `delay` after it came.
async fn tool_server_after(delay: Duration) -> (String, Calls) {
    let calls = Calls::default();
    let record = |tool: &'static str, calls: Calls| {
        move |headers: HeaderMap, body: Bytes| {
            let calls = calls.clone();
            async move {
                let now = chrono::Utc::now().timestamp();
                let valid = protege::agent::verify_headers(SECRET, &headers, &body, now).is_ok();
                let id = headers
                    .get("x-protege-tool-call")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                let input: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                calls
                    .0
                    .lock()
                    .unwrap()
                    .push((id, tool.to_owned(), input, valid));
                tokio::time::sleep(delay).await;
                match tool {
                    "lookup_order" => r#"{"order":"A-1042","status":"shipped"}"#,
                    _ => "9 March: left the warehouse",
                }
            }
        }
    };
    let app = axum::Router::new()
        .route(
            "/lookup",
            axum::routing::post(record("lookup_order", calls.clone())),
        )
        .route(
            "/tracking",
            axum::routing::post(record("tracking_log", calls.clone())),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, calls)
}

/// An app root whose `support` persona answers through `provider` with the tools of
/// `tools`, and `extra` appended to its `[agent]` table.
fn root_with(provider: &str, tools: &str, extra: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    let persona = format!(
        r#"addresses = ["support@acme.test"]

[model]
provider = "anthropic"
name = "claude-sonnet-4-5"
max_tokens = 1024
base_url = "{provider}"
api_key_env = "PROTEGE_TEST_AGENT_KEY"

[agent]
unauthenticated = "send"
{extra}

[[tools]]
name = "lookup_order"
description = "Find an order"
input_schema = {{ type = "object", properties = {{ order = {{ type = "string" }} }}, required = ["order"] }}
http = {{ url = "{tools}/lookup", secret_env = "PROTEGE_TEST_TOOL_SECRET" }}

[[tools]]
name = "tracking_log"
description = "The carrier's events of an order"
input_schema = {{ type = "object", properties = {{ order = {{ type = "string" }} }}, required = ["order"] }}
http = {{ url = "{tools}/tracking", secret_env = "PROTEGE_TEST_TOOL_SECRET" }}

[[message_resolvers]]
use = "LoadText"
template = "You are Acme's support agent."

[[message_resolvers]]
use = "ThreadHistory"
"#
    );
    std::fs::write(root.path().join("personas/support.toml"), persona).unwrap();
    root
}

/// Makes the support persona's `tracking_log` (at `tools`) wait for a person's approval.
fn approve_tracking(root: &Path, tools: &str) {
    let file = root.join("personas/support.toml");
    let tool = format!(
        "http = {{ url = \"{tools}/tracking\", secret_env = \"PROTEGE_TEST_TOOL_SECRET\" }}"
    );
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace(&tool, &format!("{tool}\napproval = true"));
    std::fs::write(&file, text).unwrap();
}

/// A customer's mail, dated now, from `from`, with `headers` added.
fn mail(id: &str, from: &str, headers: &str) -> String {
    let date = chrono::Utc::now().to_rfc2822();
    format!(
        "Message-ID: {id}\r\nFrom: {from}\r\nTo: Acme Support <support@acme.test>\r\n\
         Subject: Where is my order?\r\nDate: {date}\r\n{headers}\r\nWhere is order A-1042?\r\n"
    )
}

/// An Anthropic answer calling `lookup_order` and `tracking_log` with ids made of `tag`.
fn two_calls(tag: &str) -> Value {
    let mut answer = standin::anthropic_tool_use(&[
        ("lookup_order", json!({"order": "A-1042"})),
        ("tracking_log", json!({"order": "A-1042"})),
    ]);
    for (i, block) in answer["content"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        block["id"] = json!(format!("toolu_01{tag}{:020}", i + 1));
    }
    answer
}

const ANSWER: &str = "Hello,\n\nyour order A-1042 is on its way.\n\nBest,\nAcme Support";

fn env_of(name: &str) -> Option<String> {
    match name {
        "PROTEGE_TEST_AGENT_KEY" => Some(KEY.to_owned()),
        "PROTEGE_TEST_TOOL_SECRET" => Some(SECRET.to_owned()),
        _ => None,
    }
}

/// The worker `owner` of `engine`, with the test's environment and short backoffs.
fn agent(engine: &Engine, owner: &str) -> protege::agent::Agent {
    engine.agent(owner).unwrap().env(env_of).provider_client(
        ProviderClient::new()
            .unwrap()
            .backoff(Duration::from_millis(10), Duration::from_millis(50)),
    )
}

async fn engine_of(root: &Path, url: &str) -> Engine {
    Engine::builder()
        .root(root)
        .database(url)
        .build()
        .await
        .unwrap()
}

/// The job of `message`, as listed.
async fn job_of(engine: &Engine, message: &str) -> protege::JobInfo {
    let jobs = engine
        .agent_jobs(&JobFilter {
            limit: 500,
            ..JobFilter::default()
        })
        .await
        .unwrap();
    jobs.into_iter()
        .find(|j| j.message_id.as_deref() == Some(message))
        .unwrap_or_else(|| panic!("no job of {message}"))
}

#[tokio::test]
async fn mail_posted_is_answered_through_two_rounds_of_signed_parallel_calls_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "agent_e2e").await {
        let provider = StandIn::start([
            Scripted::Json(200, two_calls("A")),
            Scripted::Json(200, two_calls("B")),
            Scripted::Json(200, standin::anthropic_text(ANSWER)),
        ])
        .await
        .unwrap();
        let (tools, calls) = tool_server().await;
        let root = root_with(&provider.base_url(), &tools, "");
        let engine = engine_of(root.path(), &url).await;
        engine
            .ingest_mail(
                mail("<q1@example.com>", "Zoe <zoe@example.com>", "").as_bytes(),
                Some(Direction::Inbound),
            )
            .await
            .unwrap();
        assert_eq!(job_of(&engine, "<q1@example.com>").await.state, "queued");

        let reports = agent(&engine, "w1").work().await.unwrap();
        assert_eq!(reports.len(), 1, "{url}");
        let report = &reports[0];
        assert_eq!(
            (
                report.state.as_str(),
                report.rounds.len(),
                report.lease_lost
            ),
            ("done", 3, false),
            "{url}: {report:?}"
        );
        assert_eq!(report.outbox_state.as_deref(), Some("queued"), "{url}");
        // Four calls, each signed, with the model's call ids and inputs.
        let mut seen = calls.all();
        seen.sort_by(|a, b| a.0.cmp(&b.0));
        let ids: Vec<(String, String, bool)> = seen
            .iter()
            .map(|(id, tool, _, valid)| (id.clone(), tool.clone(), *valid))
            .collect();
        assert_eq!(
            ids,
            [
                (
                    "toolu_01A00000000000000000001".to_owned(),
                    "lookup_order".to_owned(),
                    true
                ),
                (
                    "toolu_01A00000000000000000002".to_owned(),
                    "tracking_log".to_owned(),
                    true
                ),
                (
                    "toolu_01B00000000000000000001".to_owned(),
                    "lookup_order".to_owned(),
                    true
                ),
                (
                    "toolu_01B00000000000000000002".to_owned(),
                    "tracking_log".to_owned(),
                    true
                ),
            ],
            "{url}"
        );
        // The provider got three requests with the key; the third holds both rounds.
        let requests = provider.requests();
        assert_eq!(requests.len(), 3, "{url}");
        assert_eq!(requests[0].header("x-api-key"), Some(KEY));
        let last = requests[2].json();
        let results: Vec<String> = last["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|b| b["type"] == "tool_result")
            .map(|b| b["tool_use_id"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(results.len(), 4, "{url}: {last}");
        assert_eq!(provider.wire_failures(), Vec::<String>::new(), "{url}");
        // The job is done, its run done, and the reply the model's text.
        let job = job_of(&engine, "<q1@example.com>").await;
        assert_eq!((job.state.as_str(), job.attempts), ("done", 1), "{url}");
        let run = engine.run(job.run_id.as_deref().unwrap()).await.unwrap();
        assert_eq!((run.run.status.as_str(), run.run.rounds), ("done", 3));
        assert_eq!(run.run.input_tokens, 300, "{url}");
        let entry = engine
            .outbox_entry(report.outbox.unwrap(), true)
            .await
            .unwrap();
        assert!(
            entry
                .raw
                .unwrap()
                .contains("your order A-1042 is on its way."),
            "{url}"
        );
        // Nothing is left to do.
        assert!(agent(&engine, "w1").work_once().await.unwrap().is_none());
    }
}

#[tokio::test]
async fn a_due_slot_is_run_and_its_answer_sent_to_the_responsibility_as_a_new_thread_on_every_backend()
 {
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "agent_slot").await {
        let provider = StandIn::start([Scripted::Json(
            200,
            standin::anthropic_text("Two threads wait: A-1042 and A-7."),
        )])
        .await
        .unwrap();
        let root = root_with(&provider.base_url(), "http://127.0.0.1:9", "");
        let file = root.path().join("personas/support.toml");
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(
            &file,
            format!(
                "{text}\n[[responsibilities]]\nname = \"daily\"\nschedule = \"0 8 * * *\"\n\
                 instructions = \"List the open threads.\"\nto = [\"team@acme.test\"]\n\
                 subject = \"Digest: {{{{ responsibility.name }}}}\"\n\n\
                 [[responsibility_resolvers]]\nuse = \"LoadText\"\n\
                 template = \"{{{{ responsibility.instructions }}}}\"\n\n\
                 [[responsibility_resolvers]]\nuse = \"OpenThreads\"\n"
            ),
        )
        .unwrap();
        let engine = engine_of(root.path(), &url).await;
        // A thread waits for an answer (imported: no job of its own).
        let eml = root.path().join("kim.eml");
        // Sent an hour before the run's clock (the agent's: the current time).
        let date = (chrono::Utc::now() - chrono::Duration::hours(1)).to_rfc2822();
        std::fs::write(
            &eml,
            format!(
                "Message-ID: <kim-1@example.com>\r\nFrom: Kim <kim@example.com>\r\n\
                 To: support@acme.test\r\nSubject: Refund\r\nDate: {date}\r\n\r\n\
                 Where is my refund?\r\n"
            ),
        )
        .unwrap();
        let imported = engine
            .import_eml(&[eml], &Default::default())
            .await
            .unwrap();
        assert_eq!(imported.summary.imported, 1, "{url}");
        // Seen at 07:59; its 08:00 slot fires once.
        let seen = "2026-03-10T07:59:00Z".parse().unwrap();
        assert!(engine.due_slots(seen).await.unwrap().is_empty(), "{url}");
        let fired = engine
            .fire_due("2026-03-10T08:00:05Z".parse().unwrap())
            .await
            .unwrap();
        assert_eq!(fired.len(), 1, "{url}");
        let report = agent(&engine, "w1").work_once().await.unwrap().unwrap();
        assert_eq!(report.state, "done", "{url}: {report:?}");
        // A scheduled run offers its responsibility's tools only: none here.
        let request = provider.requests()[0].json();
        assert!(
            request
                .get("tools")
                .is_none_or(|t| t.as_array().is_some_and(Vec::is_empty)),
            "{url}: {request}"
        );
        let entry = engine
            .outbox_entry(report.outbox.unwrap(), true)
            .await
            .unwrap();
        assert_eq!(entry.state, "queued", "{url}");
        let raw = entry.raw.unwrap();
        assert!(raw.contains("\r\nTo: team@acme.test\r\n"), "{raw}");
        assert!(raw.contains("\r\nSubject: Digest: daily\r\n"), "{raw}");
        assert!(
            raw.contains("\r\nAuto-Submitted: auto-generated\r\n"),
            "{raw}"
        );
        assert!(!raw.contains("In-Reply-To:"), "{raw}");
        assert!(raw.contains("Two threads wait: A-1042 and A-7."), "{raw}");
        // Firing again at a later tick makes nothing new.
        assert!(
            engine
                .fire_due("2026-03-10T08:00:10Z".parse().unwrap())
                .await
                .unwrap()
                .is_empty()
        );
        // The digest held Kim's mail: erasing Kim erases the digest run, its job, its slot
        // and the mail it queued; the slot is not fired again.
        assert!(
            request
                .to_string()
                .contains("- Refund (1 message, waiting since"),
            "{url}: {request}"
        );
        let removed = engine.forget("kim@example.com", false).await.unwrap();
        assert_eq!(
            (
                removed.messages,
                removed.runs,
                removed.agent_jobs,
                removed.outbox,
                removed.responsibility_slots,
                removed.erased_messages
            ),
            (2, 1, 1, 1, 1, 2),
            "{url}: {removed:?}"
        );
        assert!(
            engine
                .fire_due("2026-03-10T08:00:20Z".parse().unwrap())
                .await
                .unwrap()
                .is_empty(),
            "{url}"
        );
        assert_eq!(provider.wire_failures(), Vec::<String>::new(), "{url}");
    }
}

#[tokio::test]
async fn a_delivery_report_is_skipped_as_a_bounce_even_when_automated_mail_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let provider = StandIn::start([]).await.unwrap();
    let root = root_with(
        &provider.base_url(),
        "http://127.0.0.1:9",
        "answer_automated = true",
    );
    let engine = engine_of(root.path(), &url).await;
    let date = chrono::Utc::now().to_rfc2822();
    let report = format!(
        "From: MAILER-DAEMON@mx.example.com\r\nTo: support@acme.test\r\nSubject: Undelivered\r\n\
         Message-ID: <dsn@mx.example.com>\r\nDate: {date}\r\n\
         Content-Type: multipart/report; report-type=delivery-status; boundary=b\r\n\r\n\
         --b\r\nContent-Type: text/plain\r\n\r\nNot delivered.\r\n\
         --b\r\nContent-Type: text/rfc822-headers\r\n\r\nMessage-ID: <reply@acme.test>\r\n\
         --b--\r\n"
    );
    engine
        .ingest_mail(report.as_bytes(), Some(Direction::Inbound))
        .await
        .unwrap();
    let job = job_of(&engine, "<dsn@mx.example.com>").await;
    assert_eq!(
        (job.state.as_str(), job.reason.as_deref()),
        ("skipped", Some("bounce"))
    );
    assert!(provider.requests().is_empty());
}

/// An OpenAI Responses answer calling `lookup_order` and `tracking_log` with call ids made
/// of `tag`, its reasoning item first.
fn responses_two_calls(tag: &str) -> Value {
    let mut answer = standin::openai_responses_function_calls(&[
        ("lookup_order", json!({"order": "A-1042"})),
        ("tracking_log", json!({"order": "A-1042"})),
    ]);
    for (i, item) in answer["output"].as_array_mut().unwrap()[1..]
        .iter_mut()
        .enumerate()
    {
        item["call_id"] = json!(format!("call_{tag}{:020}", i + 1));
    }
    answer
}

/// A persona with `[model] provider = "openai"` and `api = "responses"` is answered over
/// `POST /v1/responses`: each round's request carries the previous rounds' reasoning items
/// (with their `encrypted_content`) and calls, and one `function_call_output` per result.
#[tokio::test]
async fn a_responses_persona_carries_its_reasoning_through_the_rounds() {
    let provider = StandIn::start([
        Scripted::Json(200, responses_two_calls("A")),
        Scripted::Json(200, responses_two_calls("B")),
        Scripted::Json(200, standin::openai_responses_text(ANSWER)),
    ])
    .await
    .unwrap();
    let (tools, calls) = tool_server().await;
    let root = root_with(&provider.base_url(), &tools, "");
    let file = root.path().join("personas/support.toml");
    let persona = std::fs::read_to_string(&file).unwrap().replace(
        "provider = \"anthropic\"\nname = \"claude-sonnet-4-5\"",
        "provider = \"openai\"\napi = \"responses\"\nname = \"gpt-5\"",
    );
    std::fs::write(&file, persona).unwrap();
    let url = format!(
        "sqlite://{}?mode=rwc",
        root.path().join("agent.db").display()
    );
    let engine = engine_of(root.path(), &url).await;
    engine
        .ingest_mail(
            mail("<r1@example.com>", "Zoe <zoe@example.com>", "").as_bytes(),
            Some(Direction::Inbound),
        )
        .await
        .unwrap();
    let reports = agent(&engine, "w1").work().await.unwrap();
    assert_eq!(
        reports
            .iter()
            .map(|r| (r.state.as_str(), r.rounds.len()))
            .collect::<Vec<_>>(),
        [("done", 3)],
        "{reports:?}"
    );
    assert_eq!(calls.all().len(), 4);
    let requests = provider.requests();
    assert_eq!(
        requests
            .iter()
            .map(|r| (r.path.as_str(), r.header("authorization")))
            .collect::<Vec<_>>(),
        [("/v1/responses", Some(format!("Bearer {KEY}").as_str())); 3]
    );
    // The kinds of the input items of each request, and the reasoning they carry.
    let kinds = |n: usize| -> Vec<String> {
        requests[n].json()["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| {
                let kind = item["type"].as_str().unwrap_or_default();
                match item["call_id"].as_str() {
                    Some(id) => format!("{kind} {id}"),
                    None => kind.to_owned(),
                }
            })
            .collect()
    };
    assert_eq!(kinds(0), ["message"]);
    assert_eq!(
        kinds(2),
        [
            "message",
            "reasoning",
            "function_call call_A00000000000000000001",
            "function_call call_A00000000000000000002",
            "function_call_output call_A00000000000000000001",
            "function_call_output call_A00000000000000000002",
            "reasoning",
            "function_call call_B00000000000000000001",
            "function_call call_B00000000000000000002",
            "function_call_output call_B00000000000000000001",
            "function_call_output call_B00000000000000000002",
        ]
    );
    let last = requests[2].json();
    assert_eq!(
        (
            &last["input"][1]["encrypted_content"],
            &last["store"],
            &last["include"]
        ),
        (
            &json!(standin::OPENAI_REASONING_CONTENT),
            &json!(false),
            &json!(["reasoning.encrypted_content"])
        )
    );
    assert_eq!(provider.wire_failures(), Vec::<String>::new());
    let job = job_of(&engine, "<r1@example.com>").await;
    let run = engine.run(job.run_id.as_deref().unwrap()).await.unwrap();
    assert_eq!(
        (
            run.run.format.as_str(),
            run.run.status.as_str(),
            run.run.rounds
        ),
        ("openai-responses", "done", 3)
    );
}

#[tokio::test]
async fn the_gate_skips_automated_mail_without_asking_the_provider_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "agent_gate").await {
        let provider = StandIn::start([]).await.unwrap();
        let root = root_with(&provider.base_url(), "http://127.0.0.1:9", "");
        let engine = engine_of(root.path(), &url).await;
        let cases = [
            (
                "<auto@example.com>",
                "Zoe <zoe@example.com>",
                "Auto-Submitted: auto-replied\r\n",
                "automated (Auto-Submitted: auto-replied)",
            ),
            (
                "<noreply@example.com>",
                "Shop <no-reply@shop.example>",
                "",
                "no_reply_address",
            ),
            (
                "<loop@example.com>",
                "Kim <kim@example.com>",
                "X-Protege-Loop: support@acme.test\r\n",
                "loop",
            ),
            (
                "<list@example.com>",
                "News <news@example.com>",
                "List-Id: <news.example.com>\r\n",
                "automated (List-ID: news.example.com)",
            ),
        ];
        for (id, from, headers, _) in cases {
            engine
                .ingest_mail(mail(id, from, headers).as_bytes(), Some(Direction::Inbound))
                .await
                .unwrap();
        }
        assert!(agent(&engine, "w").work().await.unwrap().is_empty());
        for (id, _, _, reason) in cases {
            let job = job_of(&engine, id).await;
            assert_eq!(
                (job.state.as_str(), job.reason.as_deref()),
                ("skipped", Some(reason)),
                "{url}: {id}"
            );
        }
        assert!(provider.requests().is_empty());
        // Mail imported, not received, has no job.
        let conn = engine.db().await.unwrap();
        let jobs = db::list_jobs(
            conn,
            &JobFilter {
                limit: 100,
                ..JobFilter::default()
            },
        )
        .await
        .unwrap();
        assert_eq!(jobs.len(), cases.len(), "{url}");
    }
}

#[tokio::test]
async fn a_throttling_provider_is_waited_for_and_a_refusal_fails_the_job_with_its_body() {
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "agent_faults").await {
        let refusal = r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too large"}}"#;
        let provider = StandIn::start([
            Scripted::status(
                429,
                &[("retry-after", "1")],
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
            ),
            Scripted::status(
                529,
                &[],
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            ),
            Scripted::Reset,
            Scripted::Json(200, standin::anthropic_text(ANSWER)),
            Scripted::status(400, &[], refusal),
        ])
        .await
        .unwrap();
        let root = root_with(&provider.base_url(), "http://127.0.0.1:9", "");
        let engine = engine_of(root.path(), &url).await;
        for id in ["<t1@example.com>", "<t2@example.com>"] {
            let from = if id == "<t1@example.com>" {
                "Zoe <zoe@example.com>"
            } else {
                "Kim <kim@example.com>"
            };
            engine
                .ingest_mail(mail(id, from, "").as_bytes(), Some(Direction::Inbound))
                .await
                .unwrap();
        }
        let worker = agent(&engine, "w");
        let started = std::time::Instant::now();
        let first = worker.work_once().await.unwrap().unwrap();
        assert!(
            started.elapsed() >= Duration::from_secs(1),
            "retry-after honoured"
        );
        assert_eq!(first.state, "done", "{url}: {first:?}");
        let second = worker.work_once().await.unwrap().unwrap();
        assert_eq!(second.state, "failed", "{url}");
        assert_eq!(second.reason.as_deref(), Some("provider"));
        assert_eq!(
            second.error.as_deref(),
            Some(format!("the provider refused the request with HTTP 400: {refusal}").as_str())
        );
        // A poison job is never retried by itself; `retry` queues it again.
        assert!(worker.work_once().await.unwrap().is_none());
        let job = engine.retry_job(second.job).await.unwrap();
        assert_eq!((job.state.as_str(), job.attempts), ("queued", 0));
        let again = engine.retry_job(second.job).await.unwrap_err();
        assert_eq!(
            again.to_string(),
            format!(
                "job {} is `queued`: only a `failed` job can be retried",
                second.job
            )
        );
        assert_eq!(provider.requests().len(), 5, "{url}");
        assert_eq!(provider.wire_failures(), Vec::<String>::new(), "{url}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_whose_worker_died_is_resumed_without_asking_the_provider_again() {
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "agent_resume").await {
        let provider = StandIn::start([
            Scripted::Json(200, two_calls("R")),
            Scripted::Json(200, standin::anthropic_text(ANSWER)),
        ])
        .await
        .unwrap();
        let (tools, calls) = tool_server_after(Duration::from_millis(1500)).await;
        let root = root_with(&provider.base_url(), &tools, "");
        let engine = engine_of(root.path(), &url).await;
        engine
            .ingest_mail(
                mail("<r1@example.com>", "Zoe <zoe@example.com>", "").as_bytes(),
                Some(Direction::Inbound),
            )
            .await
            .unwrap();
        // A worker claims the job, starts its run and stores round 0's response, then dies
        // while its tools are still working; its lease runs out.
        let dead = agent(&engine, "dead").lease(Duration::from_secs(3));
        let dying = tokio::spawn(async move { dead.work_once().await });
        let run_id = loop {
            let job = job_of(&engine, "<r1@example.com>").await;
            if let Some(run) = job.run_id
                && engine.pending_round(&run).await.unwrap().is_some()
            {
                break run;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        dying.abort();
        let _ = dying.await;
        // Another worker cannot take it while the lease lives.
        assert!(
            agent(&engine, "w2").work_once().await.unwrap().is_none(),
            "{url}"
        );
        tokio::time::sleep(Duration::from_millis(3200)).await;
        let report = agent(&engine, "w2").work_once().await.unwrap().unwrap();
        assert_eq!(report.state, "done", "{url}: {report:?}");
        assert_eq!(report.run_id.as_deref(), Some(run_id.as_str()));
        assert!(report.rounds[0].resumed, "round 0 came from the database");
        // Round 0 was asked once, by the worker that died; the calls kept their ids.
        assert_eq!(provider.requests().len(), 2, "{url}");
        let mut ids: Vec<String> = calls.all().into_iter().map(|c| c.0).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(
            ids,
            [
                "toolu_01R00000000000000000001",
                "toolu_01R00000000000000000002"
            ],
            "{url}"
        );
        let job = job_of(&engine, "<r1@example.com>").await;
        assert_eq!((job.state.as_str(), job.attempts), ("done", 2), "{url}");
        // An application cannot start a run of its own for the agent's message.
        let own = engine
            .start_run(
                &protege::ResolveInput::reply("support", "<r1@example.com>")
                    .format(protege::Format::Anthropic),
            )
            .await
            .unwrap_err();
        assert_eq!(own.kind(), protege::EngineErrorKind::Conflict, "{url}");
        assert_eq!(
            own.to_string(),
            format!(
                "message `<r1@example.com>` is answered by the agent (job {}, `done`): a run of its own would answer it twice; see `protege agent jobs`",
                job.id
            )
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_told_to_stop_finishes_its_round_and_hands_the_job_back() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let provider = StandIn::start([
        Scripted::Json(200, two_calls("S")).after(Duration::from_millis(800)),
        Scripted::Json(200, standin::anthropic_text(ANSWER)),
    ])
    .await
    .unwrap();
    let (tools, calls) = tool_server().await;
    let root = root_with(&provider.base_url(), &tools, "");
    let engine = engine_of(root.path(), &url).await;
    engine
        .ingest_mail(
            mail("<s1@example.com>", "Zoe <zoe@example.com>", "").as_bytes(),
            Some(Direction::Inbound),
        )
        .await
        .unwrap();
    let (stop, told) = tokio::sync::watch::channel(false);
    let worker = agent(&engine, "w1");
    let running = tokio::spawn(async move { worker.run(Duration::from_millis(20), told).await });
    // Round 0 is in flight at the provider when the stop comes.
    while provider.requests().is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stop.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(30), running)
        .await
        .unwrap()
        .unwrap();
    // The round finished (its calls made and recorded), and the job is back in the queue
    // without counting as a failed claim.
    assert_eq!(calls.all().len(), 2);
    let job = job_of(&engine, "<s1@example.com>").await;
    assert_eq!(
        (job.state.as_str(), job.reason.as_deref(), job.attempts),
        ("queued", Some("released"), 0)
    );
    let run = engine.run(job.run_id.as_deref().unwrap()).await.unwrap();
    assert_eq!((run.run.status.as_str(), run.run.rounds), ("started", 1));
    // Another worker finishes it with one more request.
    let report = agent(&engine, "w2").work_once().await.unwrap().unwrap();
    assert_eq!(report.state, "done", "{report:?}");
    assert_eq!(provider.requests().len(), 2);
    assert_eq!(calls.all().len(), 2);
}

#[tokio::test]
async fn a_thread_a_person_answered_is_left_to_the_person_unless_after_person_answers() {
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "agent_person").await {
        let provider = StandIn::start([Scripted::Json(200, standin::anthropic_text(ANSWER))])
            .await
            .unwrap();
        for (after, state) in [("", "skipped"), ("after_person = \"answer\"", "done")] {
            let root = root_with(&provider.base_url(), "http://127.0.0.1:9", after);
            let engine = engine_of(root.path(), &url).await;
            let id = format!("<p-{state}@example.com>");
            engine
                .ingest_mail(
                    mail(&id, "Zoe <zoe@example.com>", "").as_bytes(),
                    Some(Direction::Inbound),
                )
                .await
                .unwrap();
            // A person answers from the shared mailbox before the agent does.
            let date = chrono::Utc::now().to_rfc2822();
            let person = format!(
                "Message-ID: <person-{state}@acme.test>\r\nFrom: Kim <support@acme.test>\r\n\
                 To: zoe@example.com\r\nSubject: Re: Where is my order?\r\nDate: {date}\r\n\
                 In-Reply-To: {id}\r\nReferences: {id}\r\n\r\nI'm on it.\r\n"
            );
            engine
                .ingest_mail(person.as_bytes(), Some(Direction::Outbound))
                .await
                .unwrap();
            let report = agent(&engine, "w1").work_once().await.unwrap().unwrap();
            assert_eq!(report.state, state, "{url}: {report:?}");
            if state == "skipped" {
                assert_eq!(report.reason.as_deref(), Some("person_replied"));
            }
        }
        assert_eq!(provider.requests().len(), 1, "{url}");
    }
}

// Several threads, as `serve` runs: a worker's write through the SQLite C library blocks
// its thread while another worker's transaction finishes on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_workers_answer_each_message_exactly_once_on_every_backend() {
    const MESSAGES: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "agent_many").await {
        let provider = StandIn::start(
            (0..MESSAGES).map(|_| Scripted::Json(200, standin::anthropic_text(ANSWER))),
        )
        .await
        .unwrap();
        let root = root_with(
            &provider.base_url(),
            "http://127.0.0.1:9",
            "max_replies_per_day = 10000",
        );
        let engine = engine_of(root.path(), &url).await;
        for i in 0..MESSAGES {
            engine
                .ingest_mail(
                    mail(
                        &format!("<m{i}@example.com>"),
                        &format!("c{i} <c{i}@example.com>"),
                        "",
                    )
                    .as_bytes(),
                    Some(Direction::Inbound),
                )
                .await
                .unwrap();
        }
        let workers: Vec<_> = (0..3)
            .map(|w| {
                let worker = agent(&engine, &format!("w{w}"));
                tokio::spawn(async move { worker.work().await.unwrap() })
            })
            .collect();
        let mut done = 0;
        for w in workers {
            done += w.await.unwrap().len();
        }
        assert_eq!(done, MESSAGES, "{url}");
        let mut runs_per_message: HashMap<String, usize> = HashMap::new();
        for i in 0..MESSAGES {
            let id = format!("<m{i}@example.com>");
            let runs = engine.runs_of_message(&id).await.unwrap();
            runs_per_message.insert(id.clone(), runs.len());
            let job = job_of(&engine, &id).await;
            assert_eq!(job.state, "done", "{url}: {id}: {job:?}");
        }
        assert!(
            runs_per_message.values().all(|&n| n == 1),
            "{url}: {runs_per_message:?}"
        );
        assert_eq!(provider.requests().len(), MESSAGES, "{url}");
    }
}

/// Polls `GET /v1/agent/jobs` of `server` until the job of `message` is in `state` (a
/// watchdog of 60 s against a hang): the job's JSON.
async fn wait_for_job(server: &common::server::Server, message: &str, state: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (status, body) = server
            .get("/v1/agent/jobs", Some(common::server::TOKEN))
            .await;
        assert_eq!(status, 200, "{body}");
        let jobs: Value = serde_json::from_str(&body).unwrap();
        if let Some(job) = jobs["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["message_id"] == message && j["state"] == state)
        {
            return job.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the job of {message} never became {state}: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

const TEST_ENV: [(&str, &str); 2] = [
    ("PROTEGE_TEST_AGENT_KEY", KEY),
    ("PROTEGE_TEST_TOOL_SECRET", SECRET),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_with_the_agent_answers_posted_mail_and_a_killed_replica_is_finished_by_another() {
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "agent_serve").await {
        // Round 0 calls both tools; round 1's answer comes only after the first replica
        // is killed, so the second replica resumes the job after round 0.
        let provider = StandIn::start([
            Scripted::Json(200, two_calls("K")),
            Scripted::Silent,
            Scripted::Json(200, standin::anthropic_text(ANSWER)),
        ])
        .await
        .unwrap();
        let (tools, calls) = tool_server().await;
        let root = root_with(&provider.base_url(), &tools, "");
        let args = ["--agent", "--job-lease", "2"];
        let first = common::server::Server::start_env(
            root.path(),
            &url,
            Some(common::server::TOKEN),
            &args,
            &TEST_ENV,
        );
        let mail = mail("<k1@example.com>", "Zoe <zoe@example.com>", "");
        let (status, body) = first
            .post("/v1/mail?direction=inbound", "message/rfc822", mail)
            .await;
        assert_eq!(status, 201, "{body}");
        // Round 0 is recorded (both calls made) and round 1's request is in flight.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while provider.requests().len() < 2 {
            assert!(std::time::Instant::now() < deadline, "round 1 never asked");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(calls.all().len(), 2);
        // SIGKILL: nothing of the process runs any more.
        drop(first);
        let second = common::server::Server::start_env(
            root.path(),
            &url,
            Some(common::server::TOKEN),
            &args,
            &TEST_ENV,
        );
        let job = wait_for_job(&second, "<k1@example.com>", "done").await;
        assert_eq!(job["attempts"], 2, "{url}: {job}");
        // Round 0 was not asked again and its calls not made again; round 1 was asked twice
        // (the call in flight was lost with the process).
        assert_eq!(provider.requests().len(), 3, "{url}");
        assert_eq!(calls.all().len(), 2, "{url}");
        let run_id = job["run_id"].as_str().unwrap();
        let (status, body) = second
            .get(&format!("/v1/runs/{run_id}"), Some(common::server::TOKEN))
            .await;
        assert_eq!(status, 200);
        let run: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(run["run"]["status"], "done", "{url}");
        assert_eq!(run["rounds"].as_array().unwrap().len(), 2, "{url}: {body}");
        let (status, body) = second.get("/v1/outbox", Some(common::server::TOKEN)).await;
        assert_eq!(status, 200);
        let outbox: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            outbox["outbox"].as_array().unwrap().len(),
            1,
            "{url}: {body}"
        );
        // Only a failed job can be retried.
        let (status, body) = second
            .post(
                &format!("/v1/agent/jobs/{}/retry", job["id"]),
                "application/json",
                "{}",
            )
            .await;
        assert_eq!(status, 409, "{body}");
        assert!(
            body.contains("only a `failed` job can be retried"),
            "{body}"
        );
        assert_eq!(provider.wire_failures(), Vec::<String>::new(), "{url}");
    }
}

// The stand-in answers on the runtime's other thread while this one waits for the command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_run_prints_each_round_and_stores_the_reply_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let provider = StandIn::start([
        Scripted::Json(200, two_calls("D")),
        Scripted::Json(200, standin::anthropic_text(ANSWER)),
    ])
    .await
    .unwrap();
    let root = root_with(&provider.base_url(), "http://127.0.0.1:9", "");
    let engine = engine_of(root.path(), &url).await;
    engine
        .ingest_mail(
            mail("<d1@example.com>", "Zoe <zoe@example.com>", "").as_bytes(),
            Some(Direction::Inbound),
        )
        .await
        .unwrap();
    drop(engine);
    let out = common::server::protege(root.path(), &url)
        .args([
            "agent",
            "run",
            "--persona",
            "support",
            "--message",
            "<d1@example.com>",
            "--no-tools",
        ])
        .envs(TEST_ENV)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = stdout
        .lines()
        .take(2)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines[0],
        json!({"round": 0, "resumed": false, "text": "", "calls": [
            {"tool_call_id": "toolu_01D00000000000000000001", "name": "lookup_order",
             "input": {"order": "A-1042"}, "content": "not called: dry run", "is_error": false},
            {"tool_call_id": "toolu_01D00000000000000000002", "name": "tracking_log",
             "input": {"order": "A-1042"}, "content": "not called: dry run", "is_error": false}
        ]})
    );
    assert_eq!(
        lines[1],
        json!({"round": 1, "resumed": false, "text": ANSWER, "calls": []})
    );
    let end: Value = serde_json::from_str(&stdout.lines().skip(2).collect::<String>()).unwrap();
    assert_eq!(
        (&end["state"], &end["outbox_state"]),
        (&json!("done"), &json!("waiting"))
    );
    // The job is done: a second run needs `--again`.
    let out = common::server::protege(root.path(), &url)
        .args([
            "agent",
            "run",
            "--persona",
            "support",
            "--message",
            "<d1@example.com>",
        ])
        .envs(TEST_ENV)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: the job of message `<d1@example.com>` is `done`: pass `--again` to answer a done job again; a running job belongs to another worker until its lease runs out\n"
    );
}

#[tokio::test]
async fn a_call_that_needs_approval_waits_and_runs_with_the_input_a_person_approved() {
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "agent_approval").await {
        let provider = StandIn::start([
            Scripted::Json(200, two_calls("P")),
            Scripted::Json(200, two_calls("Q")),
            Scripted::Json(200, standin::anthropic_text(ANSWER)),
            Scripted::Json(200, standin::anthropic_text(ANSWER)),
        ])
        .await
        .unwrap();
        let (tools, calls) = tool_server().await;
        let root = root_with(&provider.base_url(), &tools, "");
        approve_tracking(root.path(), &tools);
        let engine = engine_of(root.path(), &url).await;
        let support = engine.persona("support").unwrap();
        assert!(
            support.info().tool_runner("tracking_log").unwrap().approval,
            "{:?}",
            support.info().tool_runners
        );
        for (id, from) in [
            ("<p1@example.com>", "Zoe <zoe@example.com>"),
            ("<p2@example.com>", "Kim <kim@example.com>"),
        ] {
            engine
                .ingest_mail(mail(id, from, "").as_bytes(), Some(Direction::Inbound))
                .await
                .unwrap();
        }
        let worker = agent(&engine, "w");
        let first = worker.work_once().await.unwrap().unwrap();
        assert_eq!(first.state, "waiting", "{url}: {first:?}");
        let run_p = first.run_id.clone().unwrap();
        assert_eq!(
            engine.run(&run_p).await.unwrap().run.status.as_str(),
            "waiting"
        );
        // No call of the round is made before the decision.
        assert!(calls.all().is_empty(), "{url}");
        // The calls it waits for: `tracking_log` only.
        assert_eq!(
            engine.waiting_run(&run_p).await.unwrap(),
            json!({
                "run_id": run_p,
                "round": 0,
                "calls": [{
                    "tool_call_id": "toolu_01P00000000000000000002",
                    "name": "tracking_log",
                    "input": {"order": "A-1042"},
                }],
            }),
            "{url}"
        );
        let second = worker.work_once().await.unwrap().unwrap();
        assert_eq!(second.state, "waiting", "{url}");
        let run_q = second.run_id.clone().unwrap();
        assert!(worker.work_once().await.unwrap().is_none());

        // Approving needs every waiting call, once, with an input the schema accepts.
        let call = |id: &str, input: Option<Value>| protege::agent::ApprovedCall {
            tool_call_id: id.to_owned(),
            input,
        };
        let err = engine
            .approve_run(
                &run_p,
                "ann",
                &[call("toolu_01P00000000000000000001", None)],
            )
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("call `toolu_01P00000000000000000001` is not a call run `{run_p}` waits for")
        );
        let err = engine
            .approve_run(
                &run_p,
                "ann",
                &[call(
                    "toolu_01P00000000000000000002",
                    Some(json!({"order": 7})),
                )],
            )
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the input of call `toolu_01P00000000000000000002` (tracking_log) does not match the tool's schema: $.order: 7 is not of type \"string\""
        );
        let approved = engine
            .approve_run(
                &run_p,
                "ann",
                &[call(
                    "toolu_01P00000000000000000002",
                    Some(json!({"order": "A-1043"})),
                )],
            )
            .await
            .unwrap();
        assert_eq!(approved["status"], "approved");
        let again = engine
            .approve_run(
                &run_p,
                "bob",
                &[call("toolu_01P00000000000000000002", None)],
            )
            .await
            .unwrap_err();
        assert_eq!(
            again.to_string(),
            format!("run `{run_p}` is `started`: only a `waiting` run can be approved")
        );
        let rejected = engine
            .reject_run(&run_q, "ann", "no refunds on Sundays")
            .await
            .unwrap();
        assert_eq!(rejected["status"], "rejected");

        let reports = worker.work().await.unwrap();
        assert_eq!(reports.len(), 2, "{url}");
        assert!(
            reports.iter().all(|r| r.state == "done"),
            "{url}: {reports:?}"
        );
        // The approved call ran with the edited input; the rejected one never ran.
        let mut seen: Vec<(String, Value)> = calls
            .all()
            .into_iter()
            .map(|(id, _, input, _)| (id, input))
            .collect();
        seen.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            seen,
            [
                (
                    "toolu_01P00000000000000000001".to_owned(),
                    json!({"order": "A-1042"})
                ),
                (
                    "toolu_01P00000000000000000002".to_owned(),
                    json!({"order": "A-1043"})
                ),
                (
                    "toolu_01Q00000000000000000001".to_owned(),
                    json!({"order": "A-1042"})
                ),
            ],
            "{url}"
        );
        let q = engine.run(&run_q).await.unwrap();
        let results = q.rounds[0].results.clone().unwrap();
        assert_eq!(
            (results[1].content.as_str(), results[1].is_error),
            ("rejected by an operator: no refunds on Sundays", true),
            "{url}"
        );
        assert_eq!(provider.wire_failures(), Vec::<String>::new(), "{url}");
    }
}

#[tokio::test]
async fn a_reply_is_offered_the_reply_tools_only() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let root = root_with(
        "http://127.0.0.1:9",
        "http://127.0.0.1:9",
        "reply_tools = [\"lookup_order\"]",
    );
    let engine = engine_of(root.path(), &url).await;
    engine
        .ingest_mail(
            mail("<o1@example.com>", "Zoe <zoe@example.com>", "").as_bytes(),
            Some(Direction::Inbound),
        )
        .await
        .unwrap();
    let input = protege::ResolveInput::reply("support", "<o1@example.com>")
        .format(protege::Format::Anthropic);
    let body = engine.resolve(&input).await.unwrap().body;
    let names: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["lookup_order"]);
}

#[tokio::test]
async fn a_refused_key_pauses_every_job_of_the_persona_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "agent_pause").await {
        let refused = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
        let provider = StandIn::start([Scripted::status(401, &[], refused)])
            .await
            .unwrap();
        let root = root_with(&provider.base_url(), "http://127.0.0.1:9", "");
        let engine = engine_of(root.path(), &url).await;
        for (id, from) in [
            ("<a1@example.com>", "Zoe <zoe@example.com>"),
            ("<a2@example.com>", "Kim <kim@example.com>"),
        ] {
            engine
                .ingest_mail(mail(id, from, "").as_bytes(), Some(Direction::Inbound))
                .await
                .unwrap();
        }
        let worker = agent(&engine, "w");
        let first = worker.work_once().await.unwrap().unwrap();
        assert_eq!(
            (first.state.as_str(), first.reason.as_deref()),
            ("queued", Some("paused")),
            "{url}"
        );
        assert_eq!(
            first.error.as_deref(),
            Some(
                format!("the provider refused the persona's access with HTTP 401: {refused}")
                    .as_str()
            )
        );
        // The persona's other job waits as long: nothing may run now.
        assert!(worker.work_once().await.unwrap().is_none(), "{url}");
        for id in ["<a1@example.com>", "<a2@example.com>"] {
            let job = job_of(&engine, id).await;
            assert_eq!(
                (job.state.as_str(), job.reason.as_deref()),
                ("queued", Some("paused")),
                "{url}: {id}"
            );
            assert!(job.next_attempt_at.is_some(), "{url}: {id}");
        }
        assert_eq!(provider.requests().len(), 1, "{url}");
        // `/readyz` names the pause and its reason.
        let readiness = engine.agent_readiness().await.unwrap();
        assert_eq!(
            readiness["paused"]["support"]["reason"],
            format!("the provider refused the persona's access with HTTP 401: {refused}"),
            "{url}"
        );
        // A worker that loads the persona (it starts, or the file changed) ends the pause.
        let fresh = agent(&engine, "w2");
        fresh.load_personas().await;
        assert!(
            engine
                .agent_readiness()
                .await
                .unwrap()
                .get("paused")
                .is_none(),
            "{url}"
        );
        provider.push([Scripted::Json(200, standin::anthropic_text(ANSWER))]);
        let report = fresh.work_once().await.unwrap().unwrap();
        assert_eq!(report.state, "done", "{url}: {report:?}");
        // Loaded again unchanged, it ends nothing.
        provider.push([Scripted::status(401, &[], refused)]);
        let paused = fresh.work_once().await.unwrap().unwrap();
        assert_eq!(paused.reason.as_deref(), Some("paused"), "{url}");
        fresh.load_personas().await;
        assert!(fresh.work_once().await.unwrap().is_none(), "{url}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_retry_queues_every_failed_job_of_a_persona() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let refusal = r#"{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}"#;
    let provider = StandIn::start([
        Scripted::status(400, &[], refusal),
        Scripted::status(400, &[], refusal),
    ])
    .await
    .unwrap();
    let root = root_with(&provider.base_url(), "http://127.0.0.1:9", "");
    let engine = engine_of(root.path(), &url).await;
    for (id, from) in [
        ("<f1@example.com>", "Zoe <zoe@example.com>"),
        ("<f2@example.com>", "Kim <kim@example.com>"),
    ] {
        engine
            .ingest_mail(mail(id, from, "").as_bytes(), Some(Direction::Inbound))
            .await
            .unwrap();
    }
    let reports = agent(&engine, "w").work().await.unwrap();
    assert!(reports.iter().all(|r| r.state == "failed"), "{reports:?}");
    let out = common::server::protege(root.path(), &url)
        .args([
            "agent",
            "retry",
            "--state",
            "failed",
            "--persona",
            "support",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed, json!({"retried": 2}));
    for id in ["<f1@example.com>", "<f2@example.com>"] {
        let job = job_of(&engine, id).await;
        assert_eq!((job.state.as_str(), job.attempts), ("queued", 0), "{id}");
    }
    // A job id and `--state` exclude each other.
    let out = common::server::protege(root.path(), &url)
        .args(["agent", "retry", "3", "--state", "failed"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// The daily caps of §17, counted by the database: a thread's, a correspondent's (whatever
/// the case of the address) and the persona's, each skipping the job with its reason and
/// without asking the provider. Another persona's reply, in the same thread and to the same
/// correspondent, counts against none of them.
#[tokio::test]
async fn the_daily_caps_skip_a_thread_a_correspondent_and_the_persona_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "agent_caps").await {
        let answers = (0..5).map(|_| Scripted::Json(200, standin::anthropic_text(ANSWER)));
        let provider = StandIn::start(answers).await.unwrap();
        let root = root_with(
            &provider.base_url(),
            "http://127.0.0.1:9",
            "max_replies_per_day = 4\nmax_replies_per_thread_per_day = 1\n\
             max_replies_per_correspondent_per_day = 2",
        );
        // Billing, a second persona with the same caps, answers Zoe first.
        let support = std::fs::read_to_string(root.path().join("personas/support.toml")).unwrap();
        std::fs::write(
            root.path().join("personas/billing.toml"),
            support.replace("support@acme.test", "billing@acme.test"),
        )
        .unwrap();
        let engine = engine_of(root.path(), &url).await;
        let worker = agent(&engine, "w");
        let to_billing = mail("<bill-1@example.com>", "Zoe <zoe@example.com>", "")
            .replace(
                "To: Acme Support <support@acme.test>",
                "To: <billing@acme.test>",
            )
            .replace(
                "Subject: Where is my order?",
                "Subject: Order <cap-1@example.com>",
            );
        engine
            .ingest_mail(to_billing.as_bytes(), Some(Direction::Inbound))
            .await
            .unwrap();
        let billed = worker.work_once().await.unwrap().unwrap();
        assert_eq!(
            (billed.persona.as_str(), billed.state.as_str()),
            ("billing", "done"),
            "{url}: {billed:?}"
        );
        let answer_of = |parent: &str| format!("In-Reply-To: {parent}\r\nReferences: {parent}\r\n");
        let cases = [
            // In billing's thread, to support.
            (
                "<cap-1@example.com>",
                "Zoe <zoe@example.com>",
                answer_of("<bill-1@example.com>"),
                "done",
                None,
            ),
            (
                "<cap-2@example.com>",
                "Zoe <zoe@example.com>",
                answer_of("<cap-1@example.com>"),
                "skipped",
                Some("thread_cap"),
            ),
            (
                "<cap-3@example.com>",
                "Zoe <ZOE@Example.COM>",
                String::new(),
                "done",
                None,
            ),
            (
                "<cap-4@example.com>",
                "Zoe <zoe@example.com>",
                String::new(),
                "skipped",
                Some("correspondent_cap"),
            ),
            (
                "<cap-5@example.com>",
                "Kim <kim@example.com>",
                String::new(),
                "done",
                None,
            ),
            (
                "<cap-6@example.com>",
                "Bob <bob@example.com>",
                String::new(),
                "done",
                None,
            ),
            (
                "<cap-7@example.com>",
                "Ann <ann@example.com>",
                String::new(),
                "skipped",
                Some("persona_cap"),
            ),
        ];
        for (id, from, headers, state, reason) in &cases {
            // Distinct subjects: each new mail starts its own thread.
            let raw = mail(id, from, headers).replace(
                "Subject: Where is my order?",
                &format!("Subject: Order {id}"),
            );
            let raw = if headers.is_empty() {
                raw
            } else {
                raw.replace(
                    &format!("Subject: Order {id}"),
                    "Subject: Re: Order <cap-1@example.com>",
                )
            };
            engine
                .ingest_mail(raw.as_bytes(), Some(Direction::Inbound))
                .await
                .unwrap();
            let report = worker.work_once().await.unwrap().unwrap();
            assert_eq!(
                (report.state.as_str(), report.reason.as_deref()),
                (*state, *reason),
                "{url}: {id}: {report:?}"
            );
        }
        assert_eq!(provider.requests().len(), 5, "{url}");
    }
}

/// A reply still under way (its job waits for approval) counts against the caps from the
/// claim of the next job on: Zoe's second thread is over her cap of one, and Bob's mail
/// over the persona's cap of two once Kim has her reply.
#[tokio::test]
async fn a_reply_under_way_counts_against_the_caps_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "agent_caps_under_way").await {
        let provider = StandIn::start([
            Scripted::Json(200, two_calls("W")),
            Scripted::Json(200, standin::anthropic_text(ANSWER)),
        ])
        .await
        .unwrap();
        let (tools, calls) = tool_server().await;
        let root = root_with(
            &provider.base_url(),
            &tools,
            "max_replies_per_day = 2\nmax_replies_per_correspondent_per_day = 1",
        );
        approve_tracking(root.path(), &tools);
        let engine = engine_of(root.path(), &url).await;
        let worker = agent(&engine, "w");
        let cases = [
            (
                "<w-1@example.com>",
                "Zoe <zoe@example.com>",
                "waiting",
                Some("approval"),
            ),
            (
                "<w-2@example.com>",
                "Zoe <zoe@example.com>",
                "skipped",
                Some("correspondent_cap"),
            ),
            ("<w-3@example.com>", "Kim <kim@example.com>", "done", None),
            (
                "<w-4@example.com>",
                "Bob <bob@example.com>",
                "skipped",
                Some("persona_cap"),
            ),
        ];
        for (id, from, state, reason) in cases {
            let raw = mail(id, from, "").replace(
                "Subject: Where is my order?",
                &format!("Subject: Order {id}"),
            );
            engine
                .ingest_mail(raw.as_bytes(), Some(Direction::Inbound))
                .await
                .unwrap();
            let report = worker.work_once().await.unwrap().unwrap();
            assert_eq!(
                (report.state.as_str(), report.reason.as_deref()),
                (state, reason),
                "{url}: {id}: {report:?}"
            );
        }
        assert_eq!(provider.requests().len(), 2, "{url}");
        assert!(calls.all().is_empty(), "{url}");
    }
}

/// A 1×1 PNG and a one-object PDF, Base64-encoded.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const PDF: &str = "JVBERi0xLjQKMSAwIG9iajw8Pj5lbmRvYmoKdHJhaWxlcjw8Pj4KJSVFT0YK";

/// Zoe's mail `id` with a label (PNG), a receipt (PDF) and a note (text), after `headers`.
fn mail_with_attachments(id: &str, headers: &str) -> String {
    let date = chrono::Utc::now().to_rfc2822();
    format!(
        "Message-ID: {id}\r\nFrom: Zoe <zoe@example.com>\r\nTo: Acme Support <support@acme.test>\r\n\
         Subject: My receipt\r\nDate: {date}\r\n{headers}MIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n\
         --b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHere are my label and receipt.\r\n\
         --b1\r\nContent-Type: image/png; name=\"label.png\"\r\n\
         Content-Disposition: attachment; filename=\"label.png\"\r\n\
         Content-Transfer-Encoding: base64\r\n\r\n{PNG}\r\n\
         --b1\r\nContent-Type: application/pdf; name=\"receipt.pdf\"\r\n\
         Content-Disposition: attachment; filename=\"receipt.pdf\"\r\n\
         Content-Transfer-Encoding: base64\r\n\r\n{PDF}\r\n\
         --b1\r\nContent-Type: text/plain; name=\"note.txt\"\r\n\
         Content-Disposition: attachment; filename=\"note.txt\"\r\n\r\norder A-1042\r\n\
         --b1--\r\n"
    )
}

/// The id the attachments list of `body` shows for `filename` (`- NAME (TYPE, N bytes, id:
/// ID)`).
fn attachment_id_in(body: &str, filename: &str) -> String {
    let line = body
        .split("\\n")
        .chain(body.split('\n'))
        .find(|l| l.starts_with(&format!("- {filename} (")))
        .unwrap_or_else(|| panic!("no attachment {filename} in {body}"));
    let start = line.find("id: ").unwrap() + 4;
    line[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect()
}

/// `message` without its cache breakpoints.
fn unmarked(message: &Value) -> Value {
    let mut message = message.clone();
    for block in message["content"].as_array_mut().into_iter().flatten() {
        block.as_object_mut().unwrap().remove("cache_control");
    }
    message
}

/// The persona of [`root_with`] with the built-in `read_attachment` too.
const READ_ATTACHMENT: &str = "\n[[tools]]\nbuiltin = \"read_attachment\"\n";

#[tokio::test]
async fn read_attachment_shows_the_image_and_the_pdf_in_the_rounds_and_in_later_replays_on_every_backend()
 {
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "agent_attachments").await {
        let provider = StandIn::start([]).await.unwrap();
        let root = root_with(&provider.base_url(), "http://127.0.0.1:9", READ_ATTACHMENT);
        let engine = engine_of(root.path(), &url).await;
        engine
            .ingest_mail(
                mail_with_attachments("<r1@example.com>", "").as_bytes(),
                Some(Direction::Inbound),
            )
            .await
            .unwrap();
        // The ids are hashes of the Message-ID: read them from the rendering the model sees.
        let first = engine
            .resolve(&protege::ResolveInput::reply("support", "<r1@example.com>"))
            .await
            .unwrap()
            .body
            .to_string();
        let [label, receipt, note] =
            ["label.png", "receipt.pdf", "note.txt"].map(|f| attachment_id_in(&first, f));
        let mut reads = standin::anthropic_tool_use(&[
            ("read_attachment", json!({"attachment_id": label})),
            ("read_attachment", json!({"attachment_id": receipt})),
            ("read_attachment", json!({"attachment_id": note})),
            (
                "read_attachment",
                json!({"attachment_id": "att-000000000000000000000000"}),
            ),
        ]);
        for (i, block) in reads["content"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .enumerate()
        {
            block["id"] = json!(format!("toolu_01R{:021}", i + 1));
        }
        provider.push([
            Scripted::Json(200, reads),
            Scripted::Json(200, standin::anthropic_text(ANSWER)),
            Scripted::Json(200, standin::anthropic_text(ANSWER)),
        ]);
        let report = agent(&engine, "w1").work_once().await.unwrap().unwrap();
        assert_eq!(report.state, "done", "{url}: {report:?}");

        // Round 1's request: the image and the PDF inside their results, after the text;
        // the note as text; the unknown id as an error.
        let expected = json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01R000000000000000000001", "content": [
                {"type": "text", "text": format!("{{\"attachment_id\":\"{label}\"}}")},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
            ]},
            {"type": "tool_result", "tool_use_id": "toolu_01R000000000000000000002", "content": [
                {"type": "text", "text": format!("{{\"attachment_id\":\"{receipt}\"}}")},
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF}, "title": "receipt.pdf"},
            ]},
            {"type": "tool_result", "tool_use_id": "toolu_01R000000000000000000003",
             "content": format!("{{\"attachment_id\":\"{note}\"}}\norder A-1042")},
            {"type": "tool_result", "tool_use_id": "toolu_01R000000000000000000004",
             "content": "no attachment `att-000000000000000000000000` in this thread", "is_error": true},
        ]});
        let requests = provider.requests();
        assert_eq!(requests.len(), 2, "{url}");
        let round1 = requests[1].json();
        let messages = round1["messages"].as_array().unwrap();
        assert_eq!(unmarked(messages.last().unwrap()), expected, "{url}");
        // The run stores the text only.
        let job = job_of(&engine, "<r1@example.com>").await;
        let run = engine.run(job.run_id.as_deref().unwrap()).await.unwrap();
        let stored = serde_json::to_string(&run).unwrap();
        assert!(
            !stored.contains(PNG) && !stored.contains(PDF),
            "{url}: {stored}"
        );

        // Zoe writes again in the thread: the history replays the round with the image and
        // the PDF rebuilt from the stored attachments.
        engine
            .ingest_mail(
                mail(
                    "<r2@example.com>",
                    "Zoe <zoe@example.com>",
                    "In-Reply-To: <r1@example.com>\r\nReferences: <r1@example.com>\r\n",
                )
                .as_bytes(),
                Some(Direction::Inbound),
            )
            .await
            .unwrap();
        let report = agent(&engine, "w1").work_once().await.unwrap().unwrap();
        assert_eq!(report.state, "done", "{url}: {report:?}");
        let replay = provider.requests()[2].json();
        // The results open the user turn that ends with Zoe's new mail.
        let replayed: Vec<Value> = replay["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(unmarked)
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|block| block["type"] == "tool_result")
            .collect();
        assert_eq!(
            Value::from(replayed),
            expected["content"],
            "{url}: {replay}"
        );
        assert_eq!(provider.wire_failures(), Vec::<String>::new(), "{url}");
    }
}
