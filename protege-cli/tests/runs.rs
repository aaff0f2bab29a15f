// One test follows the whole loop over HTTP, step by step, with the exact answers.
//! Runs (§13) end to end: mail in, a run with two parallel tool calls and a final answer,
//! the reply sent, the customer's next mail, and its request replaying the tool round
//! exactly as the same history imported from a fixture, on every backend; then the rules
//! of rounds (retries, conflicts, limits, concurrent writers) through the engine.

use std::path::Path;

use protege::runs::{Pending, PendingCall, RoundInput, RoundRecord, Step, ToolResult, Usage};
use protege::{Direction, Engine, EngineErrorKind, Format, ResolveInput};
use serde_json::{Value, json};

mod common;
use common::server::{Server, TOKEN, every_backend, execute};
use common::sha256_hex;
use common::{AGENT, protege_command};

const NOW: &str = "2026-03-10T10:00:00Z";

/// An app root holding the `agent` persona.
fn agent_root() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    // The shared persona, its runs bounded.
    let persona = format!("{AGENT}\n[limits]\nmax_rounds = 3\ntool_result_bytes = 4096\n");
    std::fs::write(root.path().join("personas/agent.toml"), persona).unwrap();
    root
}

/// A raw message.
fn mail(
    id: &str,
    from: &str,
    to: &str,
    reply_to: Option<&str>,
    date: &str,
    subject: &str,
    body: &str,
) -> String {
    let reply = reply_to
        .map(|p| format!("In-Reply-To: {p}\r\nReferences: {p}\r\n"))
        .unwrap_or_default();
    format!(
        "Message-ID: {id}\r\nFrom: {from}\r\nTo: {to}\r\nSubject: {subject}\r\nDate: {date}\r\n{reply}\r\n{body}\r\n"
    )
}

const ZOE: &str = "Zoe <zoe@example.com>";
const FIRST: &str = "<loop-1@example.com>";
const SENT: &str = "<loop-2@acme.test>";
const NEXT: &str = "<loop-3@example.com>";
const ANSWER: &str = "Hello Zoe,\n\nyour order A-1042 left our warehouse on 9 March; the carrier has it in transit.\n\nBest,\nAcme Support";

fn first_mail() -> String {
    mail(
        FIRST,
        ZOE,
        "support@acme.test",
        None,
        "Tue, 10 Mar 2026 09:00:00 +0000",
        "Where is my order?",
        "Where is order A-1042?",
    )
}

fn sent_mail() -> String {
    mail(
        SENT,
        "Acme Support <support@acme.test>",
        ZOE,
        Some(FIRST),
        "Tue, 10 Mar 2026 09:05:00 +0000",
        "Re: Where is my order?",
        ANSWER,
    )
}

fn next_mail() -> String {
    mail(
        NEXT,
        ZOE,
        "support@acme.test",
        Some(SENT),
        "Tue, 10 Mar 2026 09:30:00 +0000",
        "Re: Where is my order?",
        "Thanks! Can you also refund the shipping?",
    )
}

/// A response fixture of `tests/fixtures/responses/anthropic/`.
fn response(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/responses/anthropic")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

const LOOKUP: &str = "toolu_01LookupA1042";
const TRACK: &str = "toolu_01TrackA1042";
const ORDER: &str = r#"{"order":"A-1042","status":"shipped"}"#;

fn round_0_results() -> Value {
    json!([
        {"tool_call_id": LOOKUP, "content": ORDER},
        {"tool_call_id": TRACK, "content": "carrier timeout", "is_error": true},
    ])
}

fn tools() -> Value {
    json!([
        {"name": "lookup_order", "description": "Find an order", "input_schema": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}},
        {"name": "tracking_log", "description": "The carrier's events of an order", "input_schema": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}},
    ])
}

const FIRST_RENDERED: &str = "From: Zoe <zoe@example.com>\nTo: support@acme.test\nCc:\nDate: Tue, 10 Mar 2026 09:00:00 +0000\nSubject: Where is my order?\n\nWhere is order A-1042?";

/// Round 0's body: the instructions and the customer's mail.
fn round_0_body() -> Value {
    json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": [{"type": "text", "text": "You are Acme's support agent.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": FIRST_RENDERED, "cache_control": {"type": "ephemeral"}}]},
        ],
        "tools": tools(),
    })
}

/// Round 1's body: round 0's, the assistant's calls, the two results, the final breakpoint
/// moved to the newest block.
fn round_1_body() -> Value {
    json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": [{"type": "text", "text": "You are Acme's support agent.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": FIRST_RENDERED},
            {"role": "assistant", "content": [
                {"type": "text", "text": "I'll look up the order and its tracking."},
                {"type": "tool_use", "id": LOOKUP, "name": "lookup_order", "input": {"order": "A-1042"}},
                {"type": "tool_use", "id": TRACK, "name": "tracking_log", "input": {"order": "A-1042"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": LOOKUP, "content": ORDER},
                {"type": "tool_result", "tool_use_id": TRACK, "content": "carrier timeout", "is_error": true, "cache_control": {"type": "ephemeral"}},
            ]},
        ],
        "tools": tools(),
    })
}

/// The same thread as a fixture: the three messages, the first with the run's tool round.
fn fixture(run_id: &str) -> Value {
    json!({"threads": [{"subject": "Where is my order?", "messages": [
        {"message_id": FIRST, "direction": "inbound", "from": ZOE, "to": ["support@acme.test"],
         "subject": "Where is my order?", "sent_at": "2026-03-10T09:00:00Z", "text_body": "Where is order A-1042?",
         "tool_uses": [
            {"run_id": run_id, "turn_index": 0, "position": 0, "tool_call_id": LOOKUP, "name": "lookup_order", "input": {"order": "A-1042"}, "result": ORDER},
            {"run_id": run_id, "turn_index": 0, "position": 1, "tool_call_id": TRACK, "name": "tracking_log", "input": {"order": "A-1042"}, "result": "carrier timeout", "is_error": true},
         ]},
        {"message_id": SENT, "direction": "outbound", "from": "Acme Support <support@acme.test>", "to": [ZOE],
         "subject": "Re: Where is my order?", "sent_at": "2026-03-10T09:05:00Z", "text_body": ANSWER, "in_reply_to": FIRST},
        {"message_id": NEXT, "direction": "inbound", "from": ZOE, "to": ["support@acme.test"],
         "subject": "Re: Where is my order?", "sent_at": "2026-03-10T09:30:00Z",
         "text_body": "Thanks! Can you also refund the shipping?", "in_reply_to": SENT},
    ]}]})
}

async fn post(server: &Server, path: &str, body: &Value) -> (u16, String) {
    server
        .post(path, "application/json", body.to_string())
        .await
}

fn parsed(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// `value` as the service prints a successful answer: indented, with a final line break.
fn pretty(value: &Value) -> String {
    format!("{}\n", serde_json::to_string_pretty(value).unwrap())
}

fn api_error(kind: &str, message: &str) -> String {
    json!({"error": {"kind": kind, "message": message}}).to_string()
}

#[tokio::test]
async fn the_loop_closes_on_every_backend() {
    let root = agent_root();
    let name = format!("pt_runs_loop_{}", std::process::id());
    for (url, server_url) in every_backend(root.path(), &name).await {
        let server = Server::start(root.path(), &url, Some(TOKEN), &["--no-watch"]);
        let (run_id, messages, anthropic) = the_loop(&server, root.path()).await;
        // The same history imported from a fixture resolves to the same bytes.
        let from_fixture = resolved_from_fixture(root.path(), &run_id);
        assert_eq!(from_fixture, [messages, anthropic], "on {url}");
        drop(server);
        if let Some(server_url) = server_url {
            execute(&server_url, &format!("DROP DATABASE IF EXISTS {name}")).await;
        }
    }
}

/// What `protege resolve` prints for the next mail, in the canonical and the Anthropic
/// format, when the thread with run `run_id`'s tool round is imported from a fixture.
fn resolved_from_fixture(root: &Path, run_id: &str) -> [String; 2] {
    resolved_from(root, &fixture(run_id))
}

/// What `protege resolve` prints for the next mail, in the canonical and the Anthropic
/// format, when the thread is imported from a fixture without any tool round.
fn resolved_without_tools(root: &Path) -> [String; 2] {
    let mut thread = fixture("run_none");
    thread["threads"][0]["messages"][0]
        .as_object_mut()
        .unwrap()
        .remove("tool_uses");
    resolved_from(root, &thread)
}

/// What `protege resolve` prints for the next mail, in the canonical and the Anthropic
/// format, when the thread is imported from `fixture`.
fn resolved_from(root: &Path, fixture: &Value) -> [String; 2] {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("thread.json");
    std::fs::write(&file, fixture.to_string()).unwrap();
    let db = format!("sqlite://{}", dir.path().join("f.db").display());
    let cli = |args: &[&str]| {
        let (code, out, err) = cli_run(root, &db, args);
        assert_eq!(code, 0, "{err}");
        out
    };
    cli(&["db", "import", file.to_str().unwrap()]);
    ["messages", "anthropic"].map(|format| {
        cli(&[
            "resolve",
            "--persona",
            "agent",
            "--message",
            NEXT,
            "--format",
            format,
            "--now",
            NOW,
        ])
    })
}

/// The same loop through the library: the engine's answers, then the next mail's request
/// printed as `protege resolve` prints it, equal to the fixture's.
#[tokio::test]
async fn the_loop_closes_through_the_library_on_every_backend() {
    let root = agent_root();
    let name = format!("pt_runs_library_{}", std::process::id());
    for (url, server_url) in every_backend(root.path(), &name).await {
        let engine = engine_on(root.path(), &url).await;
        let run = engine.start_run(&start_input()).await.unwrap();
        assert_eq!(run.body, round_0_body());
        let step = engine
            .record_round(&run.id, round(0, "good-loop-round-0.json", both_results()))
            .await;
        assert_eq!(
            step.unwrap(),
            Step::Continue {
                round: 1,
                body: round_1_body()
            }
        );
        let step = engine
            .record_round(&run.id, round(1, "good-loop-round-1.json", vec![]))
            .await;
        let usage = Usage {
            input: 955,
            output: 153,
            cache_read: 1460,
            cache_write: 1672,
            cache_write_1h: 0,
        };
        assert_eq!(
            step.unwrap(),
            Step::Done {
                text: ANSWER.to_owned(),
                usage
            }
        );
        engine
            .ingest_mail(sent_mail().as_bytes(), Some(Direction::Outbound))
            .await
            .unwrap();
        engine
            .ingest_mail(next_mail().as_bytes(), Some(Direction::Inbound))
            .await
            .unwrap();
        let printed = [Format::Messages, Format::Anthropic].map(|format| {
            let input = ResolveInput::reply("agent", NEXT)
                .format(format)
                .now(NOW.parse().unwrap());
            let engine = engine.clone();
            async move {
                let out = engine.resolve(&input).await.unwrap();
                format!("{}\n", serde_json::to_string_pretty(&out.body).unwrap())
            }
        });
        let [messages, anthropic] = printed;
        let printed = [messages.await, anthropic.await];
        assert_eq!(
            resolved_from_fixture(root.path(), &run.id),
            printed,
            "on {url}"
        );
        close(&engine).await;
        if let Some(server_url) = server_url {
            execute(&server_url, &format!("DROP DATABASE IF EXISTS {name}")).await;
        }
    }
}

/// The loop over HTTP; returns the run's id and the next mail's request as the service
/// printed it, in the canonical and the Anthropic format.
async fn the_loop(server: &Server, _root: &Path) -> (String, String, String) {
    let (status, text) = server
        .post("/v1/mail", "message/rfc822", first_mail())
        .await;
    assert_eq!(status, 201, "{text}");

    let input = json!({"persona": "agent", "message_id": FIRST, "format": "anthropic", "now": NOW});
    // The routes of runs ask for the token like every `/v1` route.
    let anonymous = server
        .client
        .post(server.url("/v1/runs"))
        .json(&input)
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status().as_u16(), 401);
    let (status, text) = post(server, "/v1/runs", &input).await;
    assert_eq!(status, 201, "{text}");
    let started = parsed(&text);
    let run_id = started["run_id"].as_str().unwrap().to_owned();
    assert_eq!(
        started,
        json!({"run_id": run_id, "round": 0, "body": round_0_body()})
    );
    let (status, text) = server.resolve(input.clone()).await;
    assert_eq!(
        (status, parsed(&text)),
        (200, round_0_body()),
        "round 0 is what a resolve gives"
    );

    let rounds = format!("/v1/runs/{run_id}/rounds");
    let round_0 = json!({"round": 0, "response": response("good-loop-round-0.json"), "results": round_0_results()});
    let (status, text) = post(server, &rounds, &round_0).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        parsed(&text),
        json!({"status": "continue", "round": 1, "body": round_1_body()})
    );
    wire_out("runs-loop-round-0.anthropic.json", &round_0_body());
    wire_out("runs-loop-round-1.anthropic.json", &round_1_body());
    // A retry gets the same answer; another answer to a recorded round is a conflict.
    assert_eq!(post(server, &rounds, &round_0).await, (200, text.clone()));
    let mut other = round_0.clone();
    other["results"][1]["is_error"] = json!(false);
    assert_eq!(
        post(server, &rounds, &other).await,
        (
            409,
            api_error(
                "conflict",
                &format!(
                    "round 0 of run `{run_id}` is recorded with another response or other results; the round expected next is 1"
                )
            )
        )
    );
    let skipped = json!({"round": 2, "response": response("good-loop-round-1.json")});
    assert_eq!(
        post(server, &rounds, &skipped).await,
        (
            409,
            api_error(
                "conflict",
                &format!("run `{run_id}` expects round 1 next, not round 2")
            )
        )
    );

    let round_1 = json!({"round": 1, "response": response("good-loop-round-1.json")});
    let (status, text) = post(server, &rounds, &round_1).await;
    assert_eq!(status, 200, "{text}");
    let usage = json!({"input": 955, "output": 153, "cache_read": 1460, "cache_write": 1672});
    assert_eq!(
        parsed(&text),
        json!({"status": "done", "text": ANSWER, "usage": usage})
    );

    let (status, text) = server.get(&format!("/v1/runs/{run_id}"), Some(TOKEN)).await;
    assert_eq!(status, 200, "{text}");
    let mut shown = parsed(&text);
    let finished = shown["run"]["finished_at"].take();
    assert!(
        finished.as_str().is_some_and(|t| t.ends_with('Z')),
        "{finished}"
    );
    assert_eq!(
        shown["run"],
        json!({
            "id": run_id, "persona": "agent", "message_id": FIRST, "responsibility": null,
            "format": "anthropic", "model": "claude-sonnet-4-5", "status": "done", "rounds": 2,
            "input_tokens": 955, "output_tokens": 153, "cache_read_tokens": 1460, "cache_write_tokens": 1672,
            "request_sha256": sha256_hex(&serde_json::to_vec(&round_0_body()).unwrap()),
            "started_at": NOW, "finished_at": null,
        })
    );
    assert_eq!(
        shown["rounds"],
        json!([
            {"round": 0, "response": response("good-loop-round-0.json"),
             "results": [{"tool_call_id": LOOKUP, "content": ORDER, "is_error": false},
                         {"tool_call_id": TRACK, "content": "carrier timeout", "is_error": true}],
             "usage": {"input": 812, "output": 96, "cache_read": 0, "cache_write": 1460}},
            {"round": 1, "response": response("good-loop-round-1.json"), "results": [],
             "usage": {"input": 143, "output": 57, "cache_read": 1460, "cache_write": 212}},
        ])
    );
    assert_eq!(
        server.get("/v1/runs/run_nope", Some(TOKEN)).await,
        (
            404,
            api_error(
                "not_found",
                "unknown run `run_nope`: no run with this id in the database"
            )
        )
    );

    // The reply goes out and the customer answers.
    let (status, text) = server
        .post("/v1/mail?direction=outbound", "message/rfc822", sent_mail())
        .await;
    assert_eq!(status, 201, "{text}");
    let (status, text) = server.post("/v1/mail", "message/rfc822", next_mail()).await;
    assert_eq!(status, 201, "{text}");

    let mut printed = Vec::new();
    for format in ["messages", "anthropic"] {
        let (status, text) = server
            .resolve(json!({"persona": "agent", "message_id": NEXT, "format": format, "now": NOW}))
            .await;
        assert_eq!(status, 200, "{text}");
        printed.push(text);
    }
    // The tool round sits right after the message it answered (§6 rule 4).
    let messages = parsed(&printed[0])["messages"].clone();
    assert_eq!(
        messages.as_array().unwrap()[1..5].to_vec(),
        vec![
            json!({"role": "user", "content": FIRST_RENDERED}),
            json!({"role": "assistant", "content": "", "tool_calls": [
                {"id": LOOKUP, "name": "lookup_order", "input": {"order": "A-1042"}},
                {"id": TRACK, "name": "tracking_log", "input": {"order": "A-1042"}},
            ]}),
            json!({"role": "tool", "tool_call_id": LOOKUP, "content": ORDER}),
            json!({"role": "tool", "tool_call_id": TRACK, "content": "carrier timeout", "is_error": true}),
        ]
    );

    let (_, metrics) = server.get("/metrics", Some(TOKEN)).await;
    for line in [
        r#"protege_input_tokens_total{persona="agent",kind="uncached"} 955"#,
        r#"protege_input_tokens_total{persona="agent",kind="cache_read"} 1460"#,
        r#"protege_input_tokens_total{persona="agent",kind="cache_write"} 1672"#,
        r#"protege_output_tokens_total{persona="agent"} 153"#,
        "protege_run_rounds_count 1",
        "protege_run_rounds_sum 2",
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "no `{line}` in\n{metrics}"
        );
    }
    // The two rounds' cost at claude-sonnet-4-5's prices (USD per million tokens: input 3,
    // output 15, cache read 0.3, write 3.75): 955 × 3 + 153 × 15 + 1460 × 0.3 + 1672 × 3.75.
    let cost: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix(r#"protege_cost_total{persona="agent"} "#))
        .unwrap_or_else(|| panic!("no `protege_cost_total` in\n{metrics}"))
        .parse()
        .unwrap();
    assert!((cost - 11_868.0 / 1e6).abs() < 1e-12, "{cost}");
    let [messages, anthropic] = <[String; 2]>::try_from(printed).unwrap();
    (run_id, messages, anthropic)
}

/// An engine over a fresh SQLite database of `root` holding the first mail.
async fn engine_with_mail(root: &Path) -> Engine {
    let url = format!("sqlite://{}?mode=rwc", root.join("runs.db").display());
    engine_on(root, &url).await
}

/// An engine of `root` over the database `url` holding the first mail.
async fn engine_on(root: &Path, url: &str) -> Engine {
    let engine = Engine::builder()
        .root(root)
        .database(url)
        .build()
        .await
        .unwrap();
    engine
        .ingest_mail(first_mail().as_bytes(), Some(Direction::Inbound))
        .await
        .unwrap();
    engine
}

fn start_input() -> ResolveInput {
    ResolveInput::reply("agent", FIRST)
        .format(Format::Anthropic)
        .now(NOW.parse().unwrap())
}

/// Round `n` answering with the response `file` and `results`; from round 1 on, the calls'
/// ids (and the results') end in `_N`, as a run's tool call ids are unique.
fn round(n: u32, file: &str, mut results: Vec<ToolResult>) -> RoundInput {
    let mut response = response(file);
    if n > 0 {
        let renamed = |id: &str| format!("{id}_{n}");
        for block in response["content"].as_array_mut().unwrap() {
            if let Some(id) = block.get("id").and_then(Value::as_str) {
                block["id"] = json!(renamed(id));
            }
        }
        for r in &mut results {
            r.tool_call_id = renamed(&r.tool_call_id);
        }
    }
    RoundInput {
        round: n,
        response,
        results,
    }
}

fn both_results() -> Vec<ToolResult> {
    vec![
        ToolResult::new(LOOKUP, ORDER),
        ToolResult::new(TRACK, "carrier timeout").error(true),
    ]
}

#[tokio::test]
async fn a_round_answers_exactly_the_calls_within_the_limits() {
    let root = agent_root();
    let engine = engine_with_mail(root.path()).await;
    let run = engine.start_run(&start_input()).await.unwrap();
    let fail = |r: Result<Step, protege::EngineError>| {
        let e = r.unwrap_err();
        (e.kind(), e.to_string())
    };
    let id = &run.id;
    assert_eq!(
        fail(
            engine
                .record_round(
                    id,
                    round(
                        0,
                        "good-loop-round-0.json",
                        vec![ToolResult::new(LOOKUP, ORDER)]
                    )
                )
                .await
        ),
        (
            EngineErrorKind::InvalidInput,
            format!(
                "tool call `{TRACK}` (tracking_log) of round 0's response in run `{id}` has no result"
            )
        )
    );
    let mut extra = both_results();
    extra.push(ToolResult::new("toolu_other", "x"));
    assert_eq!(
        fail(
            engine
                .record_round(id, round(0, "good-loop-round-0.json", extra))
                .await
        ),
        (
            EngineErrorKind::InvalidInput,
            format!(
                "the result for `toolu_other` answers no tool call of round 0's response in run `{id}`"
            )
        )
    );
    let mut twice = both_results();
    twice.push(ToolResult::new(LOOKUP, ORDER));
    assert_eq!(
        fail(
            engine
                .record_round(id, round(0, "good-loop-round-0.json", twice))
                .await
        ),
        (
            EngineErrorKind::InvalidInput,
            format!("tool call `{LOOKUP}` has more than one result in round 0 of run `{id}`")
        )
    );
    let big = vec![
        ToolResult::new(LOOKUP, "x".repeat(4097)),
        ToolResult::new(TRACK, ""),
    ];
    assert_eq!(
        fail(
            engine
                .record_round(id, round(0, "good-loop-round-0.json", big))
                .await
        ),
        (
            EngineErrorKind::TooLarge,
            format!(
                "the result of tool call `{LOOKUP}` is 4097 bytes, over `[limits] tool_result_bytes` (4096)"
            )
        )
    );
    // The other provider's response is not one of this run's.
    let openai = RoundInput {
        round: 0,
        response: json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi", "refusal": null}, "logprobs": null, "finish_reason": "stop"}]}),
        results: vec![],
    };
    let (kind, message) = fail(engine.record_round(id, openai).await);
    assert_eq!(kind, EngineErrorKind::InvalidInput);
    assert!(
        message.contains("$.type") && message.contains("OpenAI"),
        "{message}"
    );
    // Nothing of the refused rounds was stored.
    let shown = engine.run(id).await.unwrap();
    assert_eq!(
        (
            shown.run.rounds,
            shown.rounds.len(),
            shown.run.status.as_str()
        ),
        (0, 0, "started")
    );

    // `max_rounds = 3`: rounds 0 and 1 call tools, round 2 calls them again and stops the run.
    for n in 0..2 {
        let step = engine
            .record_round(id, round(n, "good-loop-round-0.json", both_results()))
            .await;
        assert!(
            matches!(step, Ok(Step::Continue { round, .. }) if round == n + 1),
            "{step:?}"
        );
    }
    let over = format!(
        "run `{id}` reached `[limits] max_rounds` (3): round 2 asks for tools again; the round is recorded and the run is stopped"
    );
    assert_eq!(
        fail(
            engine
                .record_round(id, round(2, "good-loop-round-0.json", both_results()))
                .await
        ),
        (EngineErrorKind::InvalidInput, over.clone())
    );
    // The same round again gets the same answer; a next round is a conflict.
    assert_eq!(
        fail(
            engine
                .record_round(id, round(2, "good-loop-round-0.json", both_results()))
                .await
        ),
        (EngineErrorKind::InvalidInput, over)
    );
    assert_eq!(
        fail(
            engine
                .record_round(id, round(3, "good-loop-round-1.json", vec![]))
                .await
        ),
        (
            EngineErrorKind::Conflict,
            format!("run `{id}` has ended (stopped) after 3 rounds; no round can be recorded")
        )
    );
    let shown = engine.run(id).await.unwrap();
    assert_eq!(
        (
            shown.run.rounds,
            shown.run.status.as_str(),
            shown.run.input_tokens
        ),
        (3, "stopped", 3 * 812)
    );
}

#[tokio::test]
async fn runs_refuse_what_they_cannot_record() {
    let root = agent_root();
    let engine = engine_with_mail(root.path()).await;
    let fail = |e: protege::EngineError| (e.kind(), e.to_string());
    assert_eq!(
        fail(
            engine
                .start_run(&start_input().format(Format::Messages))
                .await
                .unwrap_err()
        ),
        (
            EngineErrorKind::BadRequest,
            "a run needs a provider's wire format: ask for `openai`, `openai-responses`, `anthropic` or `provider`"
                .to_owned()
        )
    );
    engine
        .ingest_mail(sent_mail().as_bytes(), Some(Direction::Outbound))
        .await
        .unwrap();
    assert_eq!(
        fail(
            engine
                .start_run(&ResolveInput::reply("agent", SENT).format(Format::Anthropic))
                .await
                .unwrap_err()
        ),
        (
            EngineErrorKind::InvalidInput,
            format!(
                "message `{SENT}` was sent by the persona; a reply run answers an inbound message"
            )
        )
    );
    assert_eq!(
        fail(
            engine
                .record_round("run_unknown", round(0, "good-loop-round-1.json", vec![]))
                .await
                .unwrap_err()
        ),
        (
            EngineErrorKind::NotFound,
            "unknown run `run_unknown`: no run with this id in the database".to_owned()
        )
    );
}

#[tokio::test]
async fn a_scheduled_run_keeps_its_rounds_to_itself() {
    let root = agent_root();
    let engine = engine_with_mail(root.path()).await;
    let run = engine
        .start_run(
            &ResolveInput::scheduled("agent", "digest")
                .format(Format::Provider)
                .now(NOW.parse().unwrap()),
        )
        .await
        .unwrap();
    let step = engine
        .record_round(&run.id, round(0, "good-loop-round-0.json", both_results()))
        .await
        .unwrap();
    assert!(matches!(step, Step::Continue { round: 1, .. }), "{step:?}");
    // A call id of round 0 again in round 1 is refused, and nothing is stored.
    let again = RoundInput {
        round: 1,
        response: response("good-loop-round-0.json"),
        results: both_results(),
    };
    let e = engine.record_round(&run.id, again).await.unwrap_err();
    assert_eq!(
        (e.kind(), e.to_string()),
        (
            EngineErrorKind::InvalidInput,
            format!(
                "tool call id `{LOOKUP}` of round 1's response was used in round 0 of run `{}`; a run's tool call ids are unique",
                run.id
            )
        )
    );
    let step = engine
        .record_round(&run.id, round(1, "good-loop-round-1.json", vec![]))
        .await
        .unwrap();
    assert_eq!(
        step,
        Step::Done {
            text: ANSWER.to_owned(),
            usage: Usage {
                input: 955,
                output: 153,
                cache_read: 1460,
                cache_write: 1672,
                cache_write_1h: 0
            }
        }
    );
    let shown = engine.run(&run.id).await.unwrap();
    assert_eq!(
        (shown.run.message_id, shown.run.responsibility.as_deref()),
        (None, Some("digest"))
    );
    // Nothing of it is replayed into the customer's thread.
    engine
        .ingest_mail(sent_mail().as_bytes(), Some(Direction::Outbound))
        .await
        .unwrap();
    engine
        .ingest_mail(next_mail().as_bytes(), Some(Direction::Inbound))
        .await
        .unwrap();
    let out = engine
        .resolve(&ResolveInput::reply("agent", NEXT))
        .await
        .unwrap();
    assert!(
        out.request.messages.iter().all(|m| m.tool_calls.is_empty()),
        "{:?}",
        out.request.messages
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_writers_of_one_round_record_it_once() {
    let root = agent_root();
    let name = format!("pt_runs_writers_{}", std::process::id());
    for (url, server_url) in every_backend(root.path(), &name).await {
        two_writers(root.path(), &url).await;
        if let Some(server_url) = server_url {
            execute(&server_url, &format!("DROP DATABASE IF EXISTS {name}")).await;
        }
    }
}

/// Closes the engine's connections, so its database can be dropped.
async fn close(engine: &Engine) {
    engine.db().await.unwrap().clone().close().await.unwrap();
}

/// `input` with its call ids (and its results') ending in `suffix`: the runs of one thread
/// make calls of their own.
fn suffixed(mut input: RoundInput, suffix: &str) -> RoundInput {
    for block in input.response["content"].as_array_mut().unwrap() {
        if let Some(id) = block.get("id").and_then(Value::as_str) {
            block["id"] = json!(format!("{id}{suffix}"));
        }
    }
    for r in &mut input.results {
        r.tool_call_id = format!("{}{suffix}", r.tool_call_id);
    }
    input
}

async fn two_writers(root: &Path, url: &str) {
    let engine = engine_on(root, url).await;
    for i in 0..5 {
        let run = engine.start_run(&start_input()).await.unwrap();
        let suffix = format!("_run{i}");
        let round = |n, file, results| suffixed(round(n, file, results), &suffix);
        let (a, b) = tokio::join!(
            engine.record_round(&run.id, round(0, "good-loop-round-0.json", both_results())),
            engine.record_round(&run.id, round(0, "good-loop-round-0.json", both_results())),
        );
        assert_eq!(a.unwrap(), b.unwrap());
        let shown = engine.run(&run.id).await.unwrap();
        assert_eq!((shown.run.rounds, shown.run.input_tokens), (1, 812));
        // One writer wins with another answer: the other is told of the conflict.
        let other = vec![
            ToolResult::new(LOOKUP, "other"),
            ToolResult::new(TRACK, "other"),
        ];
        let (a, b) = tokio::join!(
            engine.record_round(&run.id, round(1, "good-loop-round-0.json", both_results())),
            engine.record_round(&run.id, round(1, "good-loop-round-0.json", other)),
        );
        let kinds = [&a, &b].map(|r| r.as_ref().err().map(|e| e.kind()));
        assert!(
            kinds.contains(&None) && kinds.contains(&Some(EngineErrorKind::Conflict)),
            "{a:?} {b:?}"
        );
    }
    // Each run's two rounds left two tool uses each in the thread, no more.
    let conn = protege::db::open(url).await.unwrap();
    use protege::db::sea_orm::{EntityTrait as _, PaginatorTrait as _};
    assert_eq!(
        protege::db::entities::tool_use::Entity::find()
            .count(&conn)
            .await
            .unwrap(),
        5 * 2 * 2
    );
    conn.close().await.unwrap();
    close(&engine).await;
}

/// `protege ARGS` on the `agent` root and the database `db`: exit code, stdout, stderr.
fn cli_run(root: &Path, db: &str, args: &[&str]) -> (i32, String, String) {
    let out = protege_command()
        .arg("--root")
        .arg(root)
        .arg("--database")
        .arg(db)
        .args(args)
        .env_remove("PROTEGE_DATABASE_URL")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[tokio::test]
async fn the_command_line_records_a_run() {
    let root = agent_root();
    let engine = engine_with_mail(root.path()).await;
    drop(engine);
    let db = format!("sqlite://{}", root.path().join("runs.db").display());
    let files = root.path();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/responses/anthropic");
    std::fs::write(files.join("results.json"), round_0_results().to_string()).unwrap();
    std::fs::write(files.join("garbage.json"), "{\"id\": ").unwrap();

    let start = [
        "run",
        "start",
        "--persona",
        "agent",
        "--message",
        FIRST,
        "--now",
        NOW,
    ];
    let (code, out, err) = cli_run(root.path(), &db, &start);
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (
            2,
            "",
            "error: a run needs a provider's wire format: ask for `openai`, `openai-responses`, `anthropic` or `provider`\n"
        )
    );
    let (code, out, err) = cli_run(
        root.path(),
        &db,
        &[&start[..], &["--format", "provider"]].concat(),
    );
    assert_eq!(code, 0, "{err}");
    let started = parsed(&out);
    let id = started["run_id"].as_str().unwrap().to_owned();
    assert_eq!(
        out,
        format!(
            "{}\n",
            serde_json::to_string_pretty(
                &json!({"run_id": id, "round": 0, "body": round_0_body()})
            )
            .unwrap()
        )
    );

    let round_0 = fixtures.join("good-loop-round-0.json");
    let round_1 = fixtures.join("good-loop-round-1.json");
    let results = files.join("results.json");
    let record = |round: &str, response: &Path, results: Option<&Path>| {
        let mut args = vec![
            "run",
            "record",
            &id,
            "--round",
            round,
            "--response",
            response.to_str().unwrap(),
        ];
        if let Some(results) = results {
            args.extend(["--results", results.to_str().unwrap()]);
        }
        cli_run(root.path(), &db, &args)
    };
    let (code, out, err) = record("0", &round_0, Some(&results));
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        parsed(&out),
        json!({"status": "continue", "round": 1, "body": round_1_body()})
    );
    let garbage = files.join("garbage.json");
    let (code, _, err) = record("1", &garbage, None);
    assert_eq!(
        (code, err),
        (
            1,
            format!(
                "error: `{}` is not a valid response file: EOF while parsing a value at line 1 column 7\n",
                garbage.display()
            )
        )
    );
    let (code, out, err) = record("1", &round_1, None);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        format!("{}\n", serde_json::to_string_pretty(&json!({"status": "done", "text": ANSWER, "usage": {"input": 955, "output": 153, "cache_read": 1460, "cache_write": 1672}})).unwrap())
    );
    let (code, out, err) = cli_run(root.path(), &db, &["run", "show", &id]);
    assert_eq!(code, 0, "{err}");
    let shown = parsed(&out);
    assert_eq!(
        (
            shown["run"]["status"].clone(),
            shown["run"]["rounds"].clone()
        ),
        (json!("done"), json!(2))
    );
    assert_eq!(
        shown["rounds"][1]["response"],
        response("good-loop-round-1.json")
    );

    for args in [
        &["run", "show", "run_nope"][..],
        &[
            "run",
            "record",
            "run_nope",
            "--round",
            "0",
            "--response",
            round_1.to_str().unwrap(),
        ],
    ] {
        let (code, out, err) = cli_run(root.path(), &db, args);
        assert_eq!(
            (code, out.as_str(), err.as_str()),
            (
                1,
                "",
                "error: unknown run `run_nope`: no run with this id in the database\n"
            ),
            "{args:?}"
        );
    }
}

/// Writes `body` to `$PROTEGE_WIRE_OUT/<name>` when set, for the providers' schema check.
fn wire_out(name: &str, body: &Value) {
    if let Ok(dir) = std::env::var("PROTEGE_WIRE_OUT") {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            Path::new(&dir).join(name),
            serde_json::to_string_pretty(body).unwrap(),
        )
        .unwrap();
    }
}

fn openai_response(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/responses/openai")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test]
async fn an_openai_run_sends_the_round_back_in_its_own_format() {
    let root = agent_root();
    let engine = engine_with_mail(root.path()).await;
    let run = engine
        .start_run(&start_input().format(Format::Openai).model("gpt-4o"))
        .await
        .unwrap();
    let key = run.body["prompt_cache_key"].clone();
    assert!(key.as_str().is_some_and(|k| k.len() == 16), "{key}");
    let openai_tools: Vec<Value> = tools()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| json!({"type": "function", "function": {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]}}))
        .collect();
    let mut messages = vec![
        json!({"role": "system", "content": "You are Acme's support agent."}),
        json!({"role": "user", "content": FIRST_RENDERED}),
    ];
    assert_eq!(
        run.body,
        json!({"model": "gpt-4o", "messages": messages, "tools": openai_tools, "prompt_cache_key": key})
    );
    wire_out("runs-openai-round-0.openai.json", &run.body);

    let results = vec![
        ToolResult::new("call_LookupA1042", ORDER),
        ToolResult::new("call_TrackA1042", "carrier timeout").error(true),
    ];
    let step = engine
        .record_round(
            &run.id,
            RoundInput {
                round: 0,
                response: openai_response("good-loop-round-0.json"),
                results,
            },
        )
        .await
        .unwrap();
    messages.extend([
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_LookupA1042", "type": "function", "function": {"name": "lookup_order", "arguments": "{\"order\":\"A-1042\"}"}},
            {"id": "call_TrackA1042", "type": "function", "function": {"name": "tracking_log", "arguments": "{\"order\":\"A-1042\"}"}},
        ]}),
        // OpenAI has no `is_error`: the failed result goes as its text.
        json!({"role": "tool", "tool_call_id": "call_LookupA1042", "content": ORDER}),
        json!({"role": "tool", "tool_call_id": "call_TrackA1042", "content": "carrier timeout"}),
    ]);
    let body = json!({"model": "gpt-4o", "messages": messages, "tools": openai_tools, "prompt_cache_key": key});
    assert_eq!(
        step,
        Step::Continue {
            round: 1,
            body: body.clone()
        }
    );
    wire_out("runs-openai-round-1.openai.json", &body);
    let step = engine
        .record_round(
            &run.id,
            RoundInput {
                round: 1,
                response: openai_response("good-loop-round-1.json"),
                results: vec![],
            },
        )
        .await
        .unwrap();
    // Input is the prompt less the cached tokens.
    assert_eq!(
        step,
        Step::Done {
            text: "Your order A-1042 is in transit.".to_owned(),
            usage: Usage {
                input: 312 + 134,
                output: 53,
                cache_read: 1920 + 2176,
                cache_write: 0,
                cache_write_1h: 0
            }
        }
    );
}

/// A service killed between two rounds leaves the recorded rounds whole: another process
/// reads the run as it was and records the next round.
#[tokio::test]
async fn a_run_survives_its_service_killed_between_rounds() {
    let root = agent_root();
    let name = format!("pt_runs_killed_{}", std::process::id());
    for (url, server_url) in every_backend(root.path(), &name).await {
        let server = Server::start(root.path(), &url, Some(TOKEN), &["--no-watch"]);
        let (status, text) = server
            .post("/v1/mail", "message/rfc822", first_mail())
            .await;
        assert_eq!(status, 201, "{text}");
        let input =
            json!({"persona": "agent", "message_id": FIRST, "format": "anthropic", "now": NOW});
        let (status, text) = post(&server, "/v1/runs", &input).await;
        assert_eq!(status, 201, "{text}");
        let run_id = parsed(&text)["run_id"].as_str().unwrap().to_owned();
        let rounds = format!("/v1/runs/{run_id}/rounds");
        let round_0 = json!({"round": 0, "response": response("good-loop-round-0.json"), "results": round_0_results()});
        let (status, continued) = post(&server, &rounds, &round_0).await;
        assert_eq!(status, 200, "{continued}");
        let (_, before) = server.get(&format!("/v1/runs/{run_id}"), Some(TOKEN)).await;
        // SIGKILL: no shutdown of any kind.
        drop(server);

        let server = Server::start(root.path(), &url, Some(TOKEN), &["--no-watch"]);
        assert_eq!(
            server.get(&format!("/v1/runs/{run_id}"), Some(TOKEN)).await,
            (200, before)
        );
        assert_eq!(post(&server, &rounds, &round_0).await, (200, continued));
        let round_1 = json!({"round": 1, "response": response("good-loop-round-1.json")});
        let (status, text) = post(&server, &rounds, &round_1).await;
        assert_eq!(
            (status, parsed(&text)["status"].clone()),
            (200, json!("done")),
            "{text}"
        );
        drop(server);
        if let Some(server_url) = server_url {
            execute(&server_url, &format!("DROP DATABASE IF EXISTS {name}")).await;
        }
    }
}

/// Round 0 whose first call has the id `id` and the name `name`, answered.
fn round_with_call(id: &str, name: &str) -> RoundInput {
    let mut input = round(0, "good-loop-round-0.json", both_results());
    input.response["content"][1]["id"] = json!(id);
    input.response["content"][1]["name"] = json!(name);
    input.results[0].tool_call_id = id.to_owned();
    input
}

/// What a provider's foreign ids, a model's odd names and absurd usage would make of every
/// later request of the thread: refused when recorded, with nothing stored, on every
/// backend.
#[tokio::test]
async fn rounds_refuse_ids_names_and_usage_no_provider_takes_back() {
    let root = agent_root();
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "runs_foreign_ids").await {
        let engine = engine_on(root.path(), &url).await;
        let run = engine.start_run(&start_input()).await.unwrap();
        let id = &run.id;
        let refused = |input: RoundInput| {
            let engine = &engine;
            async move {
                let e = engine.record_round(id, input).await.unwrap_err();
                (e.kind(), e.to_string())
            }
        };
        let rule = "is not 1 to 64 characters from `a-z`, `A-Z`, `0-9`, `_` and `-`, which the providers require when it is replayed";
        for bad in ["functions.lookup_order:0", "call 1:x", &"x".repeat(65)] {
            assert_eq!(
                refused(round_with_call(bad, "lookup_order")).await,
                (
                    EngineErrorKind::InvalidInput,
                    format!("tool call id `{bad}` of round 0's response in run `{id}` {rule}")
                ),
                "{url}"
            );
        }
        assert_eq!(
            refused(round_with_call(LOOKUP, "functions.lookup_order")).await,
            (
                EngineErrorKind::InvalidInput,
                format!(
                    "tool call name `functions.lookup_order` of round 0's response in run `{id}` {rule}"
                )
            ),
            "{url}"
        );
        let mut huge = round(0, "good-loop-round-0.json", both_results());
        huge.response["usage"]["input_tokens"] = json!(i64::MAX);
        assert_eq!(
            refused(huge).await,
            (
                EngineErrorKind::InvalidInput,
                format!(
                    "round 0's response in run `{id}` reports 9223372036854775807 input tokens, over the 1000000000 a round may record"
                )
            ),
            "{url}"
        );
        let shown = engine.run(id).await.unwrap();
        assert_eq!((shown.run.rounds, shown.rounds.len()), (0, 0), "{url}");
        // The run records its round; a second run of the thread (an application's retry)
        // may not replay the same call ids next to it.
        engine
            .record_round(id, round(0, "good-loop-round-0.json", both_results()))
            .await
            .unwrap();
        let retry = engine.start_run(&start_input()).await.unwrap();
        let e = engine
            .record_round(
                &retry.id,
                round(0, "good-loop-round-0.json", both_results()),
            )
            .await
            .unwrap_err();
        assert_eq!(
            (e.kind(), e.to_string()),
            (
                EngineErrorKind::InvalidInput,
                format!(
                    "tool call id `{LOOKUP}` of round 0's response in run `{}` was recorded by run `{id}` of the same thread; the tool call ids a thread replays are unique",
                    retry.id
                )
            ),
            "{url}"
        );
        close(&engine).await;
    }
}

/// A run answers mail sent to its persona: a message addressed elsewhere is refused (its
/// tool rounds would be replayed in a thread the persona has no part in), while a preview
/// of it stays possible; a message of a thread the persona wrote in is its to answer even
/// when the customer dropped its address. On every backend.
#[tokio::test]
async fn a_run_answers_only_mail_sent_to_its_persona() {
    let root = agent_root();
    let dir = tempfile::tempdir().unwrap();
    for (url, _) in every_backend(dir.path(), "runs_addressed").await {
        let engine = engine_on(root.path(), &url).await;
        let elsewhere = mail(
            "<hr-1@example.com>",
            ZOE,
            "hr@acme.test",
            None,
            "Tue, 10 Mar 2026 09:10:00 +0000",
            "My contract",
            "Please send me my contract.",
        );
        engine
            .ingest_mail(elsewhere.as_bytes(), Some(Direction::Inbound))
            .await
            .unwrap();
        let input = ResolveInput::reply("agent", "<hr-1@example.com>").format(Format::Anthropic);
        let e = engine.start_run(&input).await.unwrap_err();
        assert_eq!(
            (e.kind(), e.to_string()),
            (
                EngineErrorKind::InvalidInput,
                "message `<hr-1@example.com>` was not sent to persona `agent`: none of its addresses is in the message's To or Cc or sent mail in its thread".to_owned()
            ),
            "{url}"
        );
        assert!(engine.resolve(&input).await.is_ok(), "{url}");
        // The persona answered the first mail; Zoe's next one goes to a colleague alone.
        engine
            .ingest_mail(sent_mail().as_bytes(), Some(Direction::Outbound))
            .await
            .unwrap();
        let next = mail(
            NEXT,
            ZOE,
            "colleague@example.com",
            Some(SENT),
            "Tue, 10 Mar 2026 09:30:00 +0000",
            "Re: Where is my order?",
            "Forwarding you the answer.",
        );
        engine
            .ingest_mail(next.as_bytes(), Some(Direction::Inbound))
            .await
            .unwrap();
        let run = engine
            .start_run(&ResolveInput::reply("agent", NEXT).format(Format::Anthropic))
            .await;
        assert!(run.is_ok(), "{url}: {run:?}");
        close(&engine).await;
    }
}

/// The next mail's request through the engine, in the canonical and the Anthropic format,
/// printed as `protege resolve` prints it.
async fn printed_next(engine: &Engine) -> [String; 2] {
    let mut printed = Vec::new();
    for format in [Format::Messages, Format::Anthropic] {
        let input = ResolveInput::reply("agent", NEXT)
            .format(format)
            .now(NOW.parse().unwrap());
        let out = engine.resolve(&input).await.unwrap();
        printed.push(format!(
            "{}\n",
            serde_json::to_string_pretty(&out.body).unwrap()
        ));
    }
    <[String; 2]>::try_from(printed).unwrap()
}

fn fail<T: std::fmt::Debug>(r: Result<T, protege::EngineError>) -> (EngineErrorKind, String) {
    let e = r.unwrap_err();
    (e.kind(), e.to_string())
}

/// `ThreadHistory` replays the tool rounds of `done` and `stopped` runs only: a run that
/// goes on is not replayed into the next mail's request, the same run is once it is done,
/// and an abandoned run never is. On every backend, the request equals that of the same
/// thread imported from a fixture (with the done run's round, or without any); the runs of
/// the message are listed oldest first, and an export holds only the replayed rounds.
#[tokio::test]
async fn only_finished_runs_are_replayed_on_every_backend() {
    let root = agent_root();
    let name = format!("pt_runs_replayed_{}", std::process::id());
    let without = resolved_without_tools(root.path());
    for (url, server_url) in every_backend(root.path(), &name).await {
        let engine = engine_on(root.path(), &url).await;
        let run = engine.start_run(&start_input()).await.unwrap();
        engine
            .record_round(&run.id, round(0, "good-loop-round-0.json", both_results()))
            .await
            .unwrap();
        for raw in [sent_mail(), next_mail()] {
            engine.ingest_mail(raw.as_bytes(), None).await.unwrap();
        }
        assert_eq!(
            printed_next(&engine).await,
            without,
            "a run that goes on, {url}"
        );

        // A second run of the thread, given up after its first round.
        let later = start_input().now("2026-03-10T10:05:00Z".parse().unwrap());
        let other = engine.start_run(&later).await.unwrap();
        let other_round = |n, file, results| suffixed(round(n, file, results), "_b");
        engine
            .record_round(
                &other.id,
                other_round(0, "good-loop-round-0.json", both_results()),
            )
            .await
            .unwrap();
        let abandoned = engine.abandon_run(&other.id).await.unwrap();
        assert_eq!(
            (abandoned.status.as_str(), abandoned.rounds),
            ("abandoned", 1),
            "{url}"
        );
        assert!(
            abandoned
                .finished_at
                .as_deref()
                .is_some_and(|t| t.ends_with('Z')),
            "{abandoned:?}"
        );
        assert_eq!(
            printed_next(&engine).await,
            without,
            "an abandoned run, {url}"
        );
        assert_eq!(
            fail(
                engine
                    .record_round(&other.id, other_round(1, "good-loop-round-1.json", vec![]))
                    .await
            ),
            (
                EngineErrorKind::Conflict,
                format!(
                    "run `{}` has ended (abandoned) after 1 rounds; no round can be recorded",
                    other.id
                )
            ),
            "{url}"
        );
        assert_eq!(
            fail(engine.abandon_run(&other.id).await),
            (
                EngineErrorKind::Conflict,
                format!(
                    "run `{}` has ended (abandoned); only a run that goes on (started or waiting) can be abandoned",
                    other.id
                )
            ),
            "{url}"
        );

        // The first run ends: its round is replayed, the abandoned run's still is not.
        engine
            .record_round(&run.id, round(1, "good-loop-round-1.json", vec![]))
            .await
            .unwrap();
        assert_eq!(
            printed_next(&engine).await,
            resolved_from_fixture(root.path(), &run.id),
            "a run that is done, {url}"
        );
        assert_eq!(
            fail(engine.abandon_run(&run.id).await),
            (
                EngineErrorKind::Conflict,
                format!(
                    "run `{}` has ended (done); only a run that goes on (started or waiting) can be abandoned",
                    run.id
                )
            ),
            "{url}"
        );
        assert_eq!(
            fail(engine.abandon_run("run_nope").await),
            (
                EngineErrorKind::NotFound,
                "unknown run `run_nope`: no run with this id in the database".to_owned()
            ),
            "{url}"
        );

        let listed = engine.runs_of_message(FIRST).await.unwrap();
        assert_eq!(
            listed
                .iter()
                .map(|r| (r.id.as_str(), r.status.as_str()))
                .collect::<Vec<_>>(),
            [(run.id.as_str(), "done"), (other.id.as_str(), "abandoned")],
            "{url}"
        );
        assert_eq!(listed[0], engine.run(&run.id).await.unwrap().run, "{url}");
        assert_eq!(listed[1], abandoned, "{url}");
        assert_eq!(engine.runs_of_message(NEXT).await.unwrap(), vec![], "{url}");
        assert_eq!(
            fail(engine.runs_of_message("<nope@example.com>").await),
            (
                EngineErrorKind::NotFound,
                "unknown message `<nope@example.com>`: no message with this Message-ID in the database".to_owned()
            ),
            "{url}"
        );

        // An export holds the rounds a history replays, and resolves the same once imported.
        let conn = engine.db().await.unwrap().clone();
        let (_, summary) = protege::db::export_fixture(&conn).await.unwrap();
        assert_eq!(summary.tool_uses, 2, "{url}");
        close(&engine).await;
        if let Some(server_url) = server_url {
            execute(&server_url, &format!("DROP DATABASE IF EXISTS {name}")).await;
        }
    }
}

fn pending_calls(suffix: &str) -> Vec<PendingCall> {
    [(LOOKUP, "lookup_order"), (TRACK, "tracking_log")]
        .map(|(id, name)| PendingCall {
            tool_call_id: format!("{id}{suffix}"),
            name: name.to_owned(),
            input: json!({"order": "A-1042"}),
        })
        .to_vec()
}

/// A round stored in two steps (§13 "Pending rounds"): the response alone, then with its
/// results; its usage counted once, its tool uses written when it completes, the rules of
/// conflicts kept; and two writers storing and completing one round at once leave it whole.
/// On every backend.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_round_is_stored_once_and_completed_on_every_backend() {
    let root = agent_root();
    let name = format!("pt_runs_pending_{}", std::process::id());
    for (url, server_url) in every_backend(root.path(), &name).await {
        let engine = engine_on(root.path(), &url).await;
        let run = engine.start_run(&start_input()).await.unwrap();
        let id = &run.id;
        let response_0 = response("good-loop-round-0.json");
        let pending = Pending {
            round: 0,
            calls: pending_calls(""),
        };
        for _ in 0..2 {
            assert_eq!(
                engine
                    .record_response(id, 0, response_0.clone())
                    .await
                    .unwrap(),
                pending,
                "{url}"
            );
        }
        let other = format!(
            "round 0 of run `{id}` is pending with another response; record it with the response stored (`GET /v1/runs/{id}`)"
        );
        assert_eq!(
            fail(
                engine
                    .record_response(id, 0, response("good-loop-round-1.json"))
                    .await
            ),
            (EngineErrorKind::Conflict, other.clone()),
            "{url}"
        );
        assert_eq!(
            fail(
                engine
                    .record_round(id, round(0, "good-loop-round-1.json", vec![]))
                    .await
            ),
            (EngineErrorKind::Conflict, other),
            "{url}"
        );
        assert_eq!(
            fail(
                engine
                    .record_response(id, 1, response("good-loop-round-1.json"))
                    .await
            ),
            (
                EngineErrorKind::Conflict,
                format!("run `{id}` expects round 0 next, not round 1")
            ),
            "{url}"
        );
        assert_eq!(
            fail(
                engine
                    .record_round(
                        id,
                        round(
                            0,
                            "good-loop-round-0.json",
                            vec![ToolResult::new(LOOKUP, ORDER)]
                        )
                    )
                    .await
            ),
            (
                EngineErrorKind::InvalidInput,
                format!(
                    "tool call `{TRACK}` (tracking_log) of round 0's response in run `{id}` has no result"
                )
            ),
            "{url}"
        );
        // Pending: the run goes on with no round recorded, the response's usage counted.
        let usage_0 = Usage {
            input: 812,
            output: 96,
            cache_read: 0,
            cache_write: 1460,
            cache_write_1h: 0,
        };
        let shown = engine.run(id).await.unwrap();
        assert_eq!(
            (
                shown.run.status.as_str(),
                shown.run.rounds,
                shown.run.input_tokens
            ),
            ("started", 0, 812),
            "{url}"
        );
        assert_eq!(
            shown.rounds,
            vec![RoundRecord {
                round: 0,
                response: response_0.clone(),
                results: None,
                usage: usage_0,
            }],
            "{url}"
        );
        let resumed = engine.pending_round(id).await.unwrap().unwrap();
        assert_eq!(
            (
                resumed.round,
                &resumed.response,
                &resumed.calls,
                resumed.parsed.usage
            ),
            (0, &response_0, &pending.calls, usage_0),
            "{url}"
        );
        // Completed with its results: the round's answer as always, a retry the same.
        let step = engine
            .record_round(id, round(0, "good-loop-round-0.json", both_results()))
            .await
            .unwrap();
        assert_eq!(
            step,
            Step::Continue {
                round: 1,
                body: round_1_body()
            },
            "{url}"
        );
        assert_eq!(
            engine
                .record_round(id, round(0, "good-loop-round-0.json", both_results()))
                .await
                .unwrap(),
            step,
            "{url}"
        );
        assert_eq!(
            fail(engine.record_response(id, 0, response_0.clone()).await),
            (
                EngineErrorKind::Conflict,
                format!(
                    "round 0 of run `{id}` is recorded with its results; the round expected next is 1"
                )
            ),
            "{url}"
        );
        assert!(engine.pending_round(id).await.unwrap().is_none(), "{url}");
        let shown = engine.run(id).await.unwrap();
        assert_eq!(
            (shown.run.rounds, shown.run.input_tokens),
            (1, 812),
            "{url}"
        );
        assert_eq!(shown.rounds[0].results, Some(both_results()), "{url}");
        // The last round, pending without calls, then recorded without results: the run's
        // usage is each round's once.
        assert_eq!(
            engine
                .record_response(id, 1, response("good-loop-round-1.json"))
                .await
                .unwrap(),
            Pending {
                round: 1,
                calls: vec![]
            },
            "{url}"
        );
        assert_eq!(
            engine
                .record_round(id, round(1, "good-loop-round-1.json", vec![]))
                .await
                .unwrap(),
            Step::Done {
                text: ANSWER.to_owned(),
                usage: Usage {
                    input: 955,
                    output: 153,
                    cache_read: 1460,
                    cache_write: 1672,
                    cache_write_1h: 0
                }
            },
            "{url}"
        );
        assert!(engine.pending_round(id).await.unwrap().is_none(), "{url}");

        // Writers racing: the response stored twice at once, then stored and completed at
        // once; each run ends with its round recorded once, its usage counted once.
        for i in 0..4 {
            let run = engine.start_run(&start_input()).await.unwrap();
            let suffix = format!("_race{i}");
            let input = suffixed(round(0, "good-loop-round-0.json", both_results()), &suffix);
            let pending = Pending {
                round: 0,
                calls: pending_calls(&suffix),
            };
            if i % 2 == 0 {
                let (a, b) = tokio::join!(
                    engine.record_response(&run.id, 0, input.response.clone()),
                    engine.record_response(&run.id, 0, input.response.clone()),
                );
                assert_eq!((a.unwrap(), b.unwrap()), (pending.clone(), pending.clone()));
            }
            let (stored, step) = tokio::join!(
                engine.record_response(&run.id, 0, input.response.clone()),
                engine.record_round(&run.id, input.clone()),
            );
            match stored {
                Ok(stored) => assert_eq!(stored, pending, "{url}"),
                Err(e) => assert_eq!(
                    (e.kind(), e.to_string()),
                    (
                        EngineErrorKind::Conflict,
                        format!(
                            "round 0 of run `{}` is recorded with its results; the round expected next is 1",
                            run.id
                        )
                    ),
                    "{url}"
                ),
            }
            assert!(
                matches!(step, Ok(Step::Continue { round: 1, .. })),
                "{url}: {step:?}"
            );
            let shown = engine.run(&run.id).await.unwrap();
            assert_eq!(
                (
                    shown.run.rounds,
                    shown.run.input_tokens,
                    shown.rounds.len(),
                    shown.rounds[0].results.as_ref().map(Vec::len)
                ),
                (1, 812, 1, Some(2)),
                "{url}"
            );
        }
        // Every completed round left its two tool uses, no more.
        let conn = protege::db::open(&url).await.unwrap();
        use protege::db::sea_orm::{EntityTrait as _, PaginatorTrait as _};
        assert_eq!(
            protege::db::entities::tool_use::Entity::find()
                .count(&conn)
                .await
                .unwrap(),
            2 + 4 * 2,
            "{url}"
        );
        conn.close().await.unwrap();
        close(&engine).await;
        if let Some(server_url) = server_url {
            execute(&server_url, &format!("DROP DATABASE IF EXISTS {name}")).await;
        }
    }
}

/// A round this engine stored pending and another engine (a replica, a job taken over)
/// completed meanwhile: completing it here writes nothing, answers from what the other
/// wrote, and refuses other results; the run's usage is counted once. On every backend.
#[tokio::test]
async fn a_pending_round_another_engine_completed_is_answered_from_its_write_on_every_backend() {
    let root = agent_root();
    let name = format!("pt_runs_pending_race_{}", std::process::id());
    for (url, _) in every_backend(root.path(), &name).await {
        let here = engine_on(root.path(), &url).await;
        let there = Engine::builder()
            .root(root.path())
            .database(&url)
            .build()
            .await
            .unwrap();
        let id = here.start_run(&start_input()).await.unwrap().id;
        here.record_response(&id, 0, response("good-loop-round-0.json"))
            .await
            .unwrap();
        let step = there
            .record_round(&id, round(0, "good-loop-round-0.json", both_results()))
            .await
            .unwrap();
        assert_eq!(
            step,
            Step::Continue {
                round: 1,
                body: round_1_body()
            },
            "{url}"
        );
        let other = vec![
            ToolResult::new(LOOKUP, ORDER),
            ToolResult::new(TRACK, "in transit"),
        ];
        assert_eq!(
            fail(
                here.record_round(&id, round(0, "good-loop-round-0.json", other))
                    .await
            ),
            (
                EngineErrorKind::Conflict,
                format!(
                    "round 0 of run `{id}` is recorded with another response or other results; the round expected next is 1"
                )
            ),
            "{url}"
        );
        // The same results again, the mark of the pending round taken or not.
        here.record_response(&id, 0, response("good-loop-round-0.json"))
            .await
            .unwrap_err();
        assert_eq!(
            here.record_round(&id, round(0, "good-loop-round-0.json", both_results()))
                .await
                .unwrap(),
            step,
            "{url}"
        );
        let shown = here.run(&id).await.unwrap();
        assert_eq!(
            (shown.run.rounds, shown.run.input_tokens),
            (1, 812),
            "{url}"
        );
    }
}

/// Pending rounds, abandoning a run and the runs of a message over HTTP, with the exact
/// answers, on every backend.
#[tokio::test]
async fn pending_rounds_abandon_and_list_over_http_on_every_backend() {
    let root = agent_root();
    let name = format!("pt_runs_http_{}", std::process::id());
    for (url, server_url) in every_backend(root.path(), &name).await {
        let server = Server::start(root.path(), &url, Some(TOKEN), &["--no-watch"]);
        let (status, text) = server
            .post("/v1/mail", "message/rfc822", first_mail())
            .await;
        assert_eq!(status, 201, "{text}");
        let input =
            json!({"persona": "agent", "message_id": FIRST, "format": "anthropic", "now": NOW});
        let (status, text) = post(&server, "/v1/runs", &input).await;
        assert_eq!(status, 201, "{text}");
        let run_id = parsed(&text)["run_id"].as_str().unwrap().to_owned();
        let rounds = format!("/v1/runs/{run_id}/rounds");
        let show = format!("/v1/runs/{run_id}");

        let pending_0 =
            json!({"round": 0, "response": response("good-loop-round-0.json"), "results": null});
        let answer = json!({"status": "pending", "round": 0, "calls": [
            {"tool_call_id": LOOKUP, "name": "lookup_order", "input": {"order": "A-1042"}},
            {"tool_call_id": TRACK, "name": "tracking_log", "input": {"order": "A-1042"}},
        ]});
        let answer = pretty(&answer);
        assert_eq!(
            post(&server, &rounds, &pending_0).await,
            (200, answer.clone()),
            "{url}"
        );
        assert_eq!(
            post(&server, &rounds, &pending_0).await,
            (200, answer),
            "{url}"
        );
        let mut columns = json!({
            "id": run_id, "persona": "agent", "message_id": FIRST, "responsibility": null,
            "format": "anthropic", "model": "claude-sonnet-4-5", "status": "started", "rounds": 0,
            "input_tokens": 812, "output_tokens": 96, "cache_read_tokens": 0, "cache_write_tokens": 1460,
            "request_sha256": sha256_hex(&serde_json::to_vec(&round_0_body()).unwrap()),
            "started_at": NOW, "finished_at": null,
        });
        let usage_0 = json!({"input": 812, "output": 96, "cache_read": 0, "cache_write": 1460});
        let (status, text) = server.get(&show, Some(TOKEN)).await;
        assert_eq!(
            (status, parsed(&text)),
            (
                200,
                json!({"run": columns, "rounds": [
                    {"round": 0, "response": response("good-loop-round-0.json"), "results": null, "usage": usage_0},
                ]})
            ),
            "{url}"
        );
        let other =
            json!({"round": 0, "response": response("good-loop-round-1.json"), "results": null});
        assert_eq!(
            post(&server, &rounds, &other).await,
            (
                409,
                api_error(
                    "conflict",
                    &format!(
                        "round 0 of run `{run_id}` is pending with another response; record it with the response stored (`GET /v1/runs/{run_id}`)"
                    )
                )
            ),
            "{url}"
        );

        let round_0 = json!({"round": 0, "response": response("good-loop-round-0.json"), "results": round_0_results()});
        assert_eq!(
            post(&server, &rounds, &round_0).await,
            (
                200,
                pretty(&json!({"status": "continue", "round": 1, "body": round_1_body()}))
            ),
            "{url}"
        );
        columns["rounds"] = json!(1);
        let (status, text) = server
            .get(
                "/v1/runs?message_id=%3Cloop-1%40example.com%3E",
                Some(TOKEN),
            )
            .await;
        assert_eq!(
            (status, parsed(&text)),
            (200, json!({"runs": [columns]})),
            "{url}"
        );

        // Abandoned: the run's columns, then no round and no second abandon.
        let abandon = format!("/v1/runs/{run_id}/abandon");
        let (status, text) = post(&server, &abandon, &json!({})).await;
        assert_eq!(status, 200, "{url}: {text}");
        let mut abandoned = parsed(&text);
        let finished = abandoned["finished_at"].take();
        assert!(
            finished.as_str().is_some_and(|t| t.ends_with('Z')),
            "{finished}"
        );
        columns["status"] = json!("abandoned");
        assert_eq!(abandoned, columns, "{url}");
        columns["finished_at"] = finished;
        let (status, text) = server.get(&show, Some(TOKEN)).await;
        assert_eq!(
            (status, parsed(&text)["run"].clone()),
            (200, columns.clone())
        );
        let (status, text) = server
            .get(
                "/v1/runs?message_id=%3Cloop-1%40example.com%3E",
                Some(TOKEN),
            )
            .await;
        assert_eq!(
            (status, parsed(&text)),
            (200, json!({"runs": [columns]})),
            "{url}"
        );
        assert_eq!(
            post(&server, &abandon, &json!({})).await,
            (
                409,
                api_error(
                    "conflict",
                    &format!(
                        "run `{run_id}` has ended (abandoned); only a run that goes on (started or waiting) can be abandoned"
                    )
                )
            ),
            "{url}"
        );
        let ended = api_error(
            "conflict",
            &format!(
                "run `{run_id}` has ended (abandoned) after 1 rounds; no round can be recorded"
            ),
        );
        let round_1 = json!({"round": 1, "response": response("good-loop-round-1.json")});
        assert_eq!(post(&server, &rounds, &round_1).await, (409, ended.clone()));
        let mut pending_1 = round_1.clone();
        pending_1["results"] = Value::Null;
        assert_eq!(post(&server, &rounds, &pending_1).await, (409, ended));

        // Unknown runs and messages, and a listing without its message.
        assert_eq!(
            post(&server, "/v1/runs/run_nope/abandon", &json!({})).await,
            (
                404,
                api_error(
                    "not_found",
                    "unknown run `run_nope`: no run with this id in the database"
                )
            )
        );
        assert_eq!(
            post(&server, &abandon, &json!({"by": "me"})).await.0,
            400,
            "{url}"
        );
        assert_eq!(
            server
                .get("/v1/runs?message_id=%3Cnope%40example.com%3E", Some(TOKEN))
                .await,
            (
                404,
                api_error(
                    "not_found",
                    "unknown message `<nope@example.com>`: no message with this Message-ID in the database"
                )
            )
        );
        assert_eq!(
            server.get("/v1/runs", Some(TOKEN)).await,
            (
                400,
                api_error(
                    "bad_request",
                    "Failed to deserialize query string: missing field `message_id`"
                )
            )
        );
        drop(server);
        if let Some(server_url) = server_url {
            execute(&server_url, &format!("DROP DATABASE IF EXISTS {name}")).await;
        }
    }
}

/// `protege run record --pending`, `run list` and `run abandon` print what the routes answer.
#[tokio::test]
async fn the_command_line_lists_abandons_and_records_pending_rounds() {
    let root = agent_root();
    let engine = engine_with_mail(root.path()).await;
    let run = engine.start_run(&start_input()).await.unwrap();
    drop(engine);
    let db = format!("sqlite://{}", root.path().join("runs.db").display());
    let cli = |args: &[&str]| cli_run(root.path(), &db, args);
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/responses/anthropic");
    let round_0 = fixtures.join("good-loop-round-0.json");
    let results = root.path().join("results.json");
    std::fs::write(&results, round_0_results().to_string()).unwrap();
    let record = [
        "run",
        "record",
        &run.id,
        "--round",
        "0",
        "--response",
        round_0.to_str().unwrap(),
    ];

    let (code, out, err) = cli(&[&record[..], &["--pending"]].concat());
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(
        out,
        pretty(&json!({"status": "pending", "round": 0, "calls": [
            {"tool_call_id": LOOKUP, "name": "lookup_order", "input": {"order": "A-1042"}},
            {"tool_call_id": TRACK, "name": "tracking_log", "input": {"order": "A-1042"}},
        ]}))
    );
    let (code, out, err) = cli(&["run", "show", &run.id]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(parsed(&out)["rounds"][0]["results"], Value::Null);
    let (code, _, err) = cli(&[
        &record[..],
        &["--pending", "--results", results.to_str().unwrap()],
    ]
    .concat());
    assert_eq!(code, 2, "{err}");
    let (code, out, err) = cli(&[&record[..], &["--results", results.to_str().unwrap()]].concat());
    assert_eq!(code, 0, "{err}");
    assert_eq!(parsed(&out)["status"], json!("continue"));

    let (code, listed, err) = cli(&["run", "list", "--message", FIRST]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = cli(&["run", "show", &run.id]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(listed, pretty(&json!({"runs": [parsed(&out)["run"]]})));
    let (code, abandoned, err) = cli(&["run", "abandon", &run.id]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = cli(&["run", "show", &run.id]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(abandoned, pretty(&parsed(&out)["run"]));
    assert_eq!(parsed(&abandoned)["status"], json!("abandoned"));

    for (args, message) in [
        (
            &["run", "abandon", &run.id][..],
            format!(
                "run `{}` has ended (abandoned); only a run that goes on (started or waiting) can be abandoned",
                run.id
            ),
        ),
        (
            &["run", "abandon", "run_nope"][..],
            "unknown run `run_nope`: no run with this id in the database".to_owned(),
        ),
        (
            &["run", "list", "--message", "<nope@example.com>"][..],
            "unknown message `<nope@example.com>`: no message with this Message-ID in the database"
                .to_owned(),
        ),
    ] {
        let (code, out, err) = cli(args);
        assert_eq!(
            (code, out.as_str(), err),
            (1, "", format!("error: {message}\n")),
            "{args:?}"
        );
    }
}

/// What a round after the first costs on a SQLite file, as the agent records it (its
/// response stored pending, then its results): the statements of each step, counted by
/// SeaORM's metric callback (the driver's own thread) and by the embedded reader.
/// Completing the round just stored pending reads nothing back, and nothing goes through
/// the driver's thread.
#[tokio::test]
async fn a_round_after_the_first_reads_nothing_back_and_never_hops_to_the_drivers_thread() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let root = agent_root();
    let url = format!(
        "sqlite://{}?mode=rwc",
        root.path().join("count.db").display()
    );
    let mut conn = protege::db::open(&url).await.unwrap();
    protege::db::migrate(&conn).await.unwrap();
    let driver = Arc::new(AtomicUsize::new(0));
    let seen = driver.clone();
    conn.set_metric_callback(move |_| {
        seen.fetch_add(1, Ordering::Relaxed);
    });
    let engine = Engine::builder()
        .root(root.path())
        .connection(conn.clone())
        .build()
        .await
        .unwrap();
    engine
        .ingest_mail(first_mail().as_bytes(), Some(Direction::Inbound))
        .await
        .unwrap();
    let id = engine.start_run(&start_input()).await.unwrap().id;
    let count = || {
        (
            driver.load(Ordering::Relaxed),
            protege::db::embedded_statements(&conn).unwrap() as usize,
        )
    };
    let mut steps = Vec::new();
    for n in 0..2 {
        let input = round(n, "good-loop-round-0.json", both_results());
        let before = count();
        engine
            .record_response(&id, n, input.response.clone())
            .await
            .unwrap();
        let stored = count();
        let step = engine.record_round(&id, input).await.unwrap();
        assert!(matches!(step, Step::Continue { .. }), "{step:?}");
        let after = count();
        steps.push((
            (stored.0 - before.0, stored.1 - before.1),
            (after.0 - stored.0, after.1 - stored.1),
        ));
    }
    // Round 1: its response stored after three reads (the run, its rounds, the thread's
    // call ids), its results written with nothing read; no statement through the driver's
    // thread (the writes go through the embedded writer, which these counters leave out).
    assert_eq!(steps[1], ((0, 3), (0, 0)));
}
