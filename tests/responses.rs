//! Runs in OpenAI's Responses format (`openai-responses`), through the engine: a persona
//! with `[model] provider = "openai"` and `api = "responses"` starts its runs in that
//! format, each round's body carries the previous rounds' output items back (their
//! encrypted reasoning included) with one `function_call_output` per result, and the next
//! mail of the thread replays the recorded rounds in each of the three formats, without
//! reasoning. Then what a Responses run refuses, each with its exact error.
//!
//! With `PROTEGE_WIRE_OUT=DIR`, every body is also written to
//! `DIR/responses-*.{openai-responses,openai,anthropic}.json` for `.ci/run`'s wirecheck pass.

use std::path::Path;

use protege::runs::{RoundInput, Step, ToolResult, Usage};
use protege::{Direction, Engine, EngineErrorKind, Format, ResolveInput};
use serde_json::{Value, json};

const PERSONA: &str = r#"addresses = ["support@acme.test"]

[model]
provider = "openai"
api = "responses"
name = "gpt-5"

[[tools]]
name = "lookup_order"
description = "Find an order"
input_schema = { type = "object", properties = { order = { type = "string" } }, required = ["order"] }

[[tools]]
name = "tracking_log"
description = "The carrier's events of an order"
input_schema = { type = "object", properties = { order = { type = "string" } }, required = ["order"] }

[[message_resolvers]]
use = "LoadText"
template = "You are Acme's support agent."

[[message_resolvers]]
use = "ThreadHistory"
"#;

const NOW: &str = "2026-03-10T10:00:00Z";
const ZOE: &str = "Zoe <zoe@example.com>";
const FIRST: &str = "<loop-1@example.com>";
const SENT: &str = "<loop-2@acme.test>";
const NEXT: &str = "<loop-3@example.com>";
const LOOKUP: &str = "call_LookupA1042";
const TRACK: &str = "call_TrackA1042";
const ORDER: &str = r#"{"order":"A-1042","status":"shipped"}"#;
const FIRST_RENDERED: &str = "From: Zoe <zoe@example.com>\nTo: support@acme.test\nCc:\nDate: Tue, 10 Mar 2026 09:00:00 +0000\nSubject: Where is my order?\n\nWhere is order A-1042?";

fn mail(id: &str, from: &str, to: &str, reply_to: Option<&str>, date: &str, body: &str) -> String {
    let reply = reply_to
        .map(|p| {
            format!("In-Reply-To: {p}\r\nReferences: {p}\r\nSubject: Re: Where is my order?\r\n")
        })
        .unwrap_or_else(|| "Subject: Where is my order?\r\n".to_owned());
    format!("Message-ID: {id}\r\nFrom: {from}\r\nTo: {to}\r\n{reply}Date: {date}\r\n\r\n{body}\r\n")
}

/// An engine over a fresh SQLite database of `root`, holding the customer's first mail.
async fn engine(root: &Path) -> Engine {
    std::fs::create_dir_all(root.join("personas")).unwrap();
    std::fs::write(root.join("personas/agent.toml"), PERSONA).unwrap();
    let url = format!("sqlite://{}?mode=rwc", root.join("runs.db").display());
    let engine = Engine::builder()
        .root(root)
        .database(url)
        .build()
        .await
        .unwrap();
    let first = mail(
        FIRST,
        ZOE,
        "support@acme.test",
        None,
        "Tue, 10 Mar 2026 09:00:00 +0000",
        "Where is order A-1042?",
    );
    engine
        .ingest_mail(first.as_bytes(), Some(Direction::Inbound))
        .await
        .unwrap();
    engine
}

/// The reply, sent, and the customer's next mail.
async fn next_mails(engine: &Engine) {
    let sent = mail(
        SENT,
        "Acme Support <support@acme.test>",
        ZOE,
        Some(FIRST),
        "Tue, 10 Mar 2026 09:05:00 +0000",
        "Your order A-1042 is in transit.",
    );
    let next = mail(
        NEXT,
        ZOE,
        "support@acme.test",
        Some(SENT),
        "Tue, 10 Mar 2026 09:30:00 +0000",
        "Thanks! Can you also refund the shipping?",
    );
    for (raw, direction) in [(sent, Direction::Outbound), (next, Direction::Inbound)] {
        engine
            .ingest_mail(raw.as_bytes(), Some(direction))
            .await
            .unwrap();
    }
}

/// A response fixture of `protege-core/tests/fixtures/responses/openai-responses/`.
fn response(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("protege-core/tests/fixtures/responses/openai-responses")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Writes `body` to `$PROTEGE_WIRE_OUT/<name>` when set, for the providers' schema check.
fn wire_out(name: &str, body: &Value) {
    if let Ok(dir) = std::env::var("PROTEGE_WIRE_OUT") {
        std::fs::create_dir_all(&dir).unwrap();
        let text = serde_json::to_string_pretty(body).unwrap();
        std::fs::write(Path::new(&dir).join(name), text).unwrap();
    }
}

fn start_input() -> ResolveInput {
    ResolveInput::reply("agent", FIRST)
        .format(Format::Provider)
        .now(NOW.parse().unwrap())
}

fn results() -> Vec<ToolResult> {
    vec![
        ToolResult::new(LOOKUP, ORDER),
        ToolResult::new(TRACK, "carrier timeout").error(true),
    ]
}

fn round(n: u32, file: &str, results: Vec<ToolResult>) -> RoundInput {
    RoundInput {
        round: n,
        response: response(file),
        results,
    }
}

fn tools() -> Value {
    json!([
        {"type": "function", "name": "lookup_order", "description": "Find an order", "parameters": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}, "strict": false},
        {"type": "function", "name": "tracking_log", "description": "The carrier's events of an order", "parameters": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}, "strict": false},
    ])
}

/// A Responses body of the persona: its instructions, `input`, its tools, `key`, stateless.
fn responses_body(input: Value, key: &Value) -> Value {
    json!({
        "model": "gpt-5",
        "instructions": "You are Acme's support agent.",
        "input": input,
        "tools": tools(),
        "prompt_cache_key": key,
        "store": false,
        "include": ["reasoning.encrypted_content"],
    })
}

fn fail<T: std::fmt::Debug>(r: Result<T, protege::EngineError>) -> (EngineErrorKind, String) {
    let e = r.unwrap_err();
    (e.kind(), e.to_string())
}

#[tokio::test]
async fn a_run_carries_its_output_items_and_reasoning_between_rounds() {
    let root = tempfile::tempdir().unwrap();
    let engine = engine(root.path()).await;
    let run = engine.start_run(&start_input()).await.unwrap();
    let key = run.body["prompt_cache_key"].clone();
    assert!(key.as_str().is_some_and(|k| k.len() == 16), "{key}");
    let first = json!({"type": "message", "role": "user", "content": FIRST_RENDERED});
    assert_eq!(run.body, responses_body(json!([first.clone()]), &key));
    // The persona's format is what `--format openai-responses` gives.
    let asked = engine
        .resolve(&start_input().format(Format::OpenaiResponses))
        .await
        .unwrap();
    assert_eq!(asked.body, run.body);
    wire_out("responses-run-round-0.openai-responses.json", &run.body);

    let step = engine
        .record_round(&run.id, round(0, "good-loop-round-0.json", results()))
        .await
        .unwrap();
    // Round 0's request, the answer's items as it gave them (the encrypted reasoning
    // first), then the results, paired by `call_id`.
    let answered = response("good-loop-round-0.json")["output"].clone();
    let mut input = vec![first];
    input.extend(answered.as_array().unwrap().iter().cloned());
    input.extend([
        json!({"type": "function_call_output", "call_id": LOOKUP, "output": ORDER}),
        json!({"type": "function_call_output", "call_id": TRACK, "output": "carrier timeout"}),
    ]);
    assert_eq!(input[1]["type"], "reasoning");
    assert_eq!(
        input[1]["encrypted_content"],
        "gAAAAABpLoopRound0ReasoningCarriedBetweenRounds-encrypted-by-the-provider-0000000000000000000000000000000000000000000000000000000000000000=="
    );
    let body = responses_body(Value::from(input), &key);
    assert_eq!(
        step,
        Step::Continue {
            round: 1,
            body: body.clone()
        }
    );
    wire_out("responses-run-round-1.openai-responses.json", &body);

    let step = engine
        .record_round(&run.id, round(1, "good-loop-round-1.json", vec![]))
        .await
        .unwrap();
    // Input is the input tokens less the cached ones.
    assert_eq!(
        step,
        Step::Done {
            text: "Your order A-1042 is in transit.".to_owned(),
            usage: Usage {
                input: 312 + 234,
                output: 141 + 52,
                cache_read: 1920 + 2176,
                cache_write: 0,
                cache_write_1h: 0
            }
        }
    );
    let record = engine.run(&run.id).await.unwrap();
    assert_eq!(
        (
            record.run.format.as_str(),
            record.run.model.as_str(),
            record.run.status.as_str(),
            record.rounds.len()
        ),
        ("openai-responses", "gpt-5", "done", 2)
    );
    // The simulated cache over the run's bodies reads them as Responses bodies.
    let report = engine.cache_report_from_runs("agent", None).await.unwrap();
    let row = &report.rows[0];
    assert_eq!(
        (
            report.rows.len(),
            row.rounds,
            row.billed_tokens,
            row.cache_read_tokens
        ),
        (1, 2, 312 + 234 + 1920 + 2176, 1920 + 2176)
    );
    assert!(
        row.simulated_cached_tokens > 0 && row.simulated_cached_tokens < row.simulated_input_tokens,
        "{row:?}"
    );
}

/// The replayed round of the next mail in `format`, printed as `protege resolve` prints it.
async fn next_body(engine: &Engine, format: Format) -> Value {
    let input = ResolveInput::reply("agent", NEXT)
        .format(format)
        .now(NOW.parse().unwrap());
    engine.resolve(&input).await.unwrap().body
}

const SENT_RENDERED: &str = "From: Acme Support <support@acme.test>\nTo: Zoe <zoe@example.com>\nCc:\nDate: Tue, 10 Mar 2026 09:05:00 +0000\nSubject: Re: Where is my order?\n\nYour order A-1042 is in transit.";
const NEXT_RENDERED: &str = "From: Zoe <zoe@example.com>\nTo: support@acme.test\nCc:\nDate: Tue, 10 Mar 2026 09:30:00 +0000\nSubject: Re: Where is my order?\n\nThanks! Can you also refund the shipping?";

#[tokio::test]
async fn the_next_mail_replays_the_rounds_without_reasoning_in_each_format() {
    let root = tempfile::tempdir().unwrap();
    let engine = engine(root.path()).await;
    let run = engine.start_run(&start_input()).await.unwrap();
    let key = run.body["prompt_cache_key"].clone();
    engine
        .record_round(&run.id, round(0, "good-loop-round-0.json", results()))
        .await
        .unwrap();
    engine
        .record_round(&run.id, round(1, "good-loop-round-1.json", vec![]))
        .await
        .unwrap();
    next_mails(&engine).await;
    let arguments = r#"{"order":"A-1042"}"#;

    // Responses: the calls and their outputs, no reasoning item, no `encrypted_content`.
    let responses = next_body(&engine, Format::OpenaiResponses).await;
    assert_eq!(
        responses,
        responses_body(
            json!([
                {"type": "message", "role": "user", "content": FIRST_RENDERED},
                {"type": "function_call", "call_id": LOOKUP, "name": "lookup_order", "arguments": arguments},
                {"type": "function_call", "call_id": TRACK, "name": "tracking_log", "arguments": arguments},
                {"type": "function_call_output", "call_id": LOOKUP, "output": ORDER},
                {"type": "function_call_output", "call_id": TRACK, "output": "carrier timeout"},
                {"type": "message", "role": "assistant", "content": SENT_RENDERED},
                {"type": "message", "role": "user", "content": NEXT_RENDERED},
            ]),
            &key
        )
    );
    assert!(
        !responses["input"].to_string().contains("reasoning"),
        "{responses}"
    );
    assert_eq!(
        next_body(&engine, Format::Provider).await,
        responses,
        "the persona's own format"
    );
    wire_out("responses-replay.openai-responses.json", &responses);

    // Chat Completions: the same round as an assistant message with tool calls.
    let chat = next_body(&engine, Format::Openai).await;
    assert_eq!(
        chat,
        json!({
            "model": "gpt-5",
            "messages": [
                {"role": "system", "content": "You are Acme's support agent."},
                {"role": "user", "content": FIRST_RENDERED},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": LOOKUP, "type": "function", "function": {"name": "lookup_order", "arguments": arguments}},
                    {"id": TRACK, "type": "function", "function": {"name": "tracking_log", "arguments": arguments}},
                ]},
                {"role": "tool", "tool_call_id": LOOKUP, "content": ORDER},
                {"role": "tool", "tool_call_id": TRACK, "content": "carrier timeout"},
                {"role": "assistant", "content": SENT_RENDERED},
                {"role": "user", "content": NEXT_RENDERED},
            ],
            "tools": [
                {"type": "function", "function": {"name": "lookup_order", "description": "Find an order", "parameters": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}}},
                {"type": "function", "function": {"name": "tracking_log", "description": "The carrier's events of an order", "parameters": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}}},
            ],
            "prompt_cache_key": key,
        })
    );
    wire_out("responses-replay.openai.json", &chat);

    // Anthropic: `tool_use` and `tool_result` blocks, the failed result marked.
    let anthropic = next_body(&engine, Format::Anthropic).await;
    assert_eq!(
        anthropic,
        json!({
            "model": "gpt-5",
            "max_tokens": 1024,
            "system": [{"type": "text", "text": "You are Acme's support agent.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": FIRST_RENDERED},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": LOOKUP, "name": "lookup_order", "input": {"order": "A-1042"}},
                    {"type": "tool_use", "id": TRACK, "name": "tracking_log", "input": {"order": "A-1042"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": LOOKUP, "content": ORDER},
                    {"type": "tool_result", "tool_use_id": TRACK, "content": "carrier timeout", "is_error": true},
                ]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": SENT_RENDERED, "cache_control": {"type": "ephemeral"}},
                ]},
                {"role": "user", "content": [
                    {"type": "text", "text": NEXT_RENDERED, "cache_control": {"type": "ephemeral"}},
                ]},
            ],
            "tools": [
                {"name": "lookup_order", "description": "Find an order", "input_schema": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}},
                {"name": "tracking_log", "description": "The carrier's events of an order", "input_schema": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}},
            ],
        })
    );
    wire_out("responses-replay.anthropic.json", &anthropic);

    // The simulated cache reads the persona's bodies as Responses bodies: the second mail's
    // request shares its instructions and first message with the first's.
    let conn = engine.db().await.unwrap();
    let thread = protege::db::load_message(conn, NEXT)
        .await
        .unwrap()
        .unwrap()
        .thread_id;
    let report = engine
        .cache_report("agent", thread, Format::Provider)
        .await
        .unwrap();
    assert_eq!(
        report,
        engine
            .cache_report("agent", thread, Format::OpenaiResponses)
            .await
            .unwrap()
    );
    let rows: Vec<(&str, usize, usize)> = report
        .rows
        .iter()
        .map(|r| (r.message_id.as_str(), r.input_tokens, r.cached_tokens))
        .collect();
    // Tokens are characters / 4 of each unit's JSON (tools, instructions, items).
    assert_eq!(rows, [(FIRST, 158, 0), (NEXT, 378, 158)]);
}

#[tokio::test]
async fn a_responses_run_refuses_what_it_cannot_send_back() {
    let root = tempfile::tempdir().unwrap();
    let engine = engine(root.path()).await;
    let run = engine.start_run(&start_input()).await.unwrap();
    let id = run.id.as_str();

    // Reasoning items written by another model than the run's (`gpt-5-mini-…` is another
    // model, not a snapshot of `gpt-5`), recorded with or without the results.
    let refused = |model: &str| {
        (
            EngineErrorKind::InvalidInput,
            format!(
                "round 0's response in run `{id}` carries reasoning items of model `{model}`, but the run is for model `gpt-5`: encrypted reasoning goes back only to the model that wrote it (the run's model or a dated snapshot of it, such as `gpt-5-2025-08-07`)"
            ),
        )
    };
    for model in ["o3-2025-04-16", "gpt-5-mini-2025-08-07", "gpt-5-2025-08"] {
        let mut other = round(0, "good-loop-round-0.json", results());
        other.response["model"] = json!(model);
        assert_eq!(
            fail(engine.record_response(id, 0, other.response.clone()).await),
            refused(model)
        );
        assert_eq!(fail(engine.record_round(id, other).await), refused(model));
    }

    // A result naming the `function_call` item's `id` rather than its `call_id`, and a
    // result for no call at all.
    let mut by_item_id = results();
    by_item_id[0].tool_call_id = "fc_0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071b".into();
    let mut unknown = results();
    unknown[1].tool_call_id = "call_nope".into();
    assert_eq!(
        [
            fail(
                engine
                    .record_round(id, round(0, "good-loop-round-0.json", by_item_id))
                    .await
            ),
            fail(
                engine
                    .record_round(id, round(0, "good-loop-round-0.json", unknown))
                    .await
            ),
        ],
        [
            (
                EngineErrorKind::InvalidInput,
                format!(
                    "the result for `fc_0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071b` answers no tool call of round 0's response in run `{id}` (its `function_call_output` would name an unknown `call_id`): `fc_0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071b` is the `id` of the `function_call` item whose `call_id` is `call_LookupA1042`, which a result names"
                )
            ),
            (
                EngineErrorKind::InvalidInput,
                format!(
                    "the result for `call_nope` answers no tool call of round 0's response in run `{id}` (its `function_call_output` would name an unknown `call_id`); the calls are `call_LookupA1042`, `call_TrackA1042`"
                )
            ),
        ]
    );

    // A Chat Completions answer in a Responses run.
    let chat_path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("protege-core/tests/fixtures/responses/openai/good-text.json");
    let chat: Value = serde_json::from_str(&std::fs::read_to_string(chat_path).unwrap()).unwrap();
    assert_eq!(
        fail(
            engine
                .record_round(
                    id,
                    RoundInput {
                        round: 0,
                        response: chat,
                        results: vec![]
                    }
                )
                .await
        ),
        (
            EngineErrorKind::InvalidInput,
            "not an OpenAI Responses response: `$.object` is `chat.completion`, expected `response`; the body looks like an OpenAI Chat Completions response".to_owned()
        )
    );
    // Nothing was stored.
    assert_eq!(engine.run(id).await.unwrap().rounds, vec![]);

    // A dated snapshot of the run's model is the run's model; an answer cut short stops
    // the run.
    let mut cut = response("good-incomplete-max-output-tokens.json");
    cut["model"] = json!("gpt-5-2025-08-07");
    let step = engine
        .record_round(
            id,
            RoundInput {
                round: 0,
                response: cut,
                results: vec![],
            },
        )
        .await
        .unwrap();
    assert_eq!(
        step,
        Step::Stopped {
            text: "Mango sun-kissed sweet,  \nGolden nectar drips like rain,  \nSummer's bliss revealed".to_owned(),
            usage: Usage {
                input: 14,
                output: 20,
                cache_read: 0,
                cache_write: 0, cache_write_1h: 0 },
            stop_reason: "max_output_tokens".to_owned(),
        }
    );
    assert_eq!(
        fail(engine.start_run(&start_input().format(Format::Messages)).await),
        (
            EngineErrorKind::BadRequest,
            "a run needs a provider's wire format: ask for `openai`, `openai-responses`, `anthropic` or `provider`".to_owned()
        )
    );
}
