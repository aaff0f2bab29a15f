//! OpenAI Responses, the third wire format: exact request bodies for every rule, and every
//! answer of `tests/fixtures/responses/openai-responses/` with its exact `ModelResponse` or
//! error.
//!
//! With `PROTEGE_WIRE_OUT=DIR`, every body is also written to
//! `DIR/<test>.openai-responses.json` so `.ci/run` can check them with `wirecheck
//! openai-responses`. The fixtures are checked by `wirecheck openai-responses-response` in
//! CI: `good-*` pass it, `bad-<rule>[--<note>]` break exactly that rule. A bad fixture is
//! accepted here when what it breaks does not touch the canonical payload (a usage total,
//! a field the parser does not read), and rejected otherwise.

use std::path::{Path, PathBuf};

use protege_core::wire::{
    ModelResponse, ModelSpec, from_anthropic_response, from_openai_response,
    from_openai_responses_response, is_reasoning_model, to_openai_responses,
};
use protege_core::{
    CacheHints, CacheMode, CacheTtl, ErrorKind, Part, Request, Role, ToolCall, ToolDef, message,
};
use serde_json::{Value, json};

const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mOQkzsBAAFiAQUv5nCNAAAAAElFTkSuQmCC";
const PDF: &str = "JVBERi0xLjQKMSAwIG9iajw8L1R5cGUvQ2F0YWxvZy9QYWdlcyAyIDAgUj4+ZW5kb2JqCnRyYWlsZXI8PC9Sb290IDEgMCBSPj4KJSVFT0YK";

/// A model without a cache key: the tests below are about everything else.
fn model(name: &str, max: Option<u32>) -> ModelSpec {
    ModelSpec::new(name).max_tokens(max).cache(CacheMode::Off)
}

/// The body of `r` as compact JSON, written to `PROTEGE_WIRE_OUT` when set.
fn body(test: &str, r: &Request, m: &ModelSpec) -> String {
    let body = to_openai_responses(r, m).unwrap();
    if let Ok(dir) = std::env::var("PROTEGE_WIRE_OUT") {
        std::fs::create_dir_all(&dir).unwrap();
        let path = Path::new(&dir).join(format!("{test}.openai-responses.json"));
        std::fs::write(path, serde_json::to_string_pretty(&body).unwrap()).unwrap();
    }
    serde_json::to_string(&body).unwrap()
}

fn lookup_order() -> ToolDef {
    ToolDef {
        name: "lookup_order".into(),
        description: "Find an order".into(),
        input_schema: json!({"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}),
    }
}

const LOOKUP_TOOL: &str = r#"{"type":"function","name":"lookup_order","description":"Find an order","parameters":{"type":"object","properties":{"order":{"type":"string"}},"required":["order"]},"strict":false}"#;

fn tool_round() -> Request {
    Request {
        messages: vec![
            message(Role::System, "You are support."),
            message(Role::User, "Where is A-1?"),
            message(Role::Assistant, "").with_tool_calls(vec![
                ToolCall::new("call_1", "lookup_order", json!({"order": "A-1"})),
                ToolCall::new("call_2", "lookup_order", json!({"order": "A-2"})),
            ]),
            message(Role::Tool, r#"{"status":"shipped"}"#).with_tool_call_id("call_1"),
            message(Role::Tool, "not found")
                .with_tool_call_id("call_2")
                .with_is_error(true),
            message(Role::System, "Be brief."),
            message(Role::Assistant, "Checking the other order."),
            message(Role::User, "Thanks. And A-2?"),
        ],
        tools: vec![lookup_order()],
        ..Default::default()
    }
}

#[test]
fn a_tool_round_as_instructions_and_input_items_paired_by_call_id() {
    assert_eq!(
        body("tool_round", &tool_round(), &model("gpt-4o", Some(512))),
        [
            r#"{"model":"gpt-4o","instructions":"You are support.","input":["#,
            r#"{"type":"message","role":"user","content":"Where is A-1?"},"#,
            r#"{"type":"function_call","call_id":"call_1","name":"lookup_order","arguments":"{\"order\":\"A-1\"}"},"#,
            r#"{"type":"function_call","call_id":"call_2","name":"lookup_order","arguments":"{\"order\":\"A-2\"}"},"#,
            r#"{"type":"function_call_output","call_id":"call_1","output":"{\"status\":\"shipped\"}"},"#,
            // No `is_error` in this API: the failed result goes as its text.
            r#"{"type":"function_call_output","call_id":"call_2","output":"not found"},"#,
            r#"{"type":"message","role":"assistant","content":"Checking the other order."},"#,
            r#"{"type":"message","role":"user","content":"Thanks. And A-2?"},{"type":"message","role":"user","content":[{"type":"input_text","text":"[system] Be brief."}]}],"#,
            r#""tools":["#,
            LOOKUP_TOOL,
            r#"],"max_output_tokens":512,"store":false}"#,
        ]
        .concat()
    );
}

#[test]
fn reasoning_models_ask_for_their_encrypted_reasoning() {
    let r = Request {
        messages: vec![message(Role::User, "hi")],
        ..Default::default()
    };
    assert_eq!(
        body("reasoning_model", &r, &model("gpt-5", None)),
        r#"{"model":"gpt-5","input":[{"type":"message","role":"user","content":"hi"}],"store":false,"include":["reasoning.encrypted_content"]}"#
    );
    assert_eq!(
        body("plain_model", &r, &model("gpt-4.1", Some(100))),
        r#"{"model":"gpt-4.1","input":[{"type":"message","role":"user","content":"hi"}],"max_output_tokens":100,"store":false}"#
    );
    let reasoning: Vec<(&str, bool)> = [
        "o1",
        "o3-mini",
        "o4-mini-2025-04-16",
        "gpt-5",
        "gpt-5-mini-2025-08-07",
        "gpt-5.1",
        "gpt-5-chat-latest",
        "codex-mini-latest",
        "computer-use-preview",
        "gpt-4o",
        "gpt-4.1-mini",
        "omni-moderation-latest",
    ]
    .into_iter()
    .map(|name| (name, is_reasoning_model(name)))
    .collect();
    assert_eq!(
        reasoning,
        [
            ("o1", true),
            ("o3-mini", true),
            ("o4-mini-2025-04-16", true),
            ("gpt-5", true),
            ("gpt-5-mini-2025-08-07", true),
            ("gpt-5.1", true),
            ("gpt-5-chat-latest", false),
            ("codex-mini-latest", true),
            ("computer-use-preview", true),
            ("gpt-4o", false),
            ("gpt-4.1-mini", false),
            ("omni-moderation-latest", false),
        ]
    );
}

#[test]
fn images_as_data_urls_and_documents_as_input_files() {
    let r = Request {
        messages: vec![message(
            Role::User,
            vec![
                Part::text("see attached"),
                Part::Image {
                    media_type: "image/png".into(),
                    data: PNG.into(),
                },
                Part::Document {
                    filename: "receipt.pdf".into(),
                    media_type: "application/pdf".into(),
                    data: PDF.into(),
                },
            ],
        )],
        ..Default::default()
    };
    assert_eq!(
        body("multimodal", &r, &model("gpt-4o", None)),
        format!(
            concat!(
                r#"{{"model":"gpt-4o","input":[{{"type":"message","role":"user","content":["#,
                r#"{{"type":"input_text","text":"see attached"}},"#,
                r#"{{"type":"input_image","image_url":"data:image/png;base64,{png}","detail":"auto"}},"#,
                r#"{{"type":"input_file","filename":"receipt.pdf","file_data":"data:application/pdf;base64,{pdf}"}}]}}],"store":false}}"#
            ),
            png = PNG,
            pdf = PDF
        )
    );
}

#[test]
fn an_empty_request_opens_the_conversation() {
    let empty = Request::default();
    assert_eq!(
        body("empty", &empty, &model("gpt-4o", None)),
        r#"{"model":"gpt-4o","input":[{"type":"message","role":"user","content":"(conversation start)"}],"store":false}"#
    );
    // Instructions alone still give the model a turn to answer.
    let system_only = Request {
        messages: vec![
            message(Role::System, "Write the digest."),
            message(Role::System, " "),
        ],
        ..Default::default()
    };
    assert_eq!(
        body("system_only", &system_only, &model("gpt-4o", None)),
        r#"{"model":"gpt-4o","instructions":"Write the digest.","input":[{"type":"message","role":"user","content":"(conversation start)"}],"store":false}"#
    );
}

#[test]
fn auto_cache_sends_the_conversation_key_as_chat_completions_does() {
    let r = Request {
        messages: vec![message(Role::User, "hi")],
        cache: CacheHints {
            history_end: Some(0),
            key: Some("0123456789abcdef".into()),
            hour: false,
        },
        ..Default::default()
    };
    assert_eq!(
        body("cache_key", &r, &ModelSpec::new("gpt-4o").max_tokens(100)),
        r#"{"model":"gpt-4o","input":[{"type":"message","role":"user","content":"hi"}],"max_output_tokens":100,"prompt_cache_key":"0123456789abcdef","store":false}"#
    );
    assert_eq!(
        body("cache_key_off", &r, &model("gpt-4o", Some(100))),
        r#"{"model":"gpt-4o","input":[{"type":"message","role":"user","content":"hi"}],"max_output_tokens":100,"store":false}"#
    );
}

/// `cache_ttl = "1h"`, or `auto` when the thread's rhythm makes an hour pay, asks for
/// extended retention, as Chat Completions bodies do.
#[test]
fn an_hour_long_cache_asks_for_extended_retention() {
    let mut r = Request {
        messages: vec![message(Role::User, "hi")],
        cache: CacheHints {
            history_end: Some(0),
            key: Some("0123456789abcdef".into()),
            hour: false,
        },
        ..Default::default()
    };
    let hour = ModelSpec::new("gpt-5.1").cache_ttl(CacheTtl::OneHour);
    let expected = r#"{"model":"gpt-5.1","input":[{"type":"message","role":"user","content":"hi"}],"prompt_cache_key":"0123456789abcdef","prompt_cache_retention":"24h","store":false,"include":["reasoning.encrypted_content"]}"#;
    assert_eq!(body("cache_ttl_1h", &r, &hour), expected);
    let auto = ModelSpec::new("gpt-5.1").cache_ttl(CacheTtl::Auto);
    assert!(!body("cache_ttl_auto_unhinted", &r, &auto).contains("prompt_cache_retention"));
    r.cache.hour = true;
    assert_eq!(body("cache_ttl_auto", &r, &auto), expected);
}

#[test]
fn calls_of_tools_the_request_does_not_declare_go_as_text() {
    // A replayed round of a tool the persona no longer offers, beside one it does.
    let mut r = tool_round();
    r.messages[2].tool_calls[1].name = "old_tool".into();
    assert_eq!(
        body("undeclared_tool", &r, &model("gpt-4o", None)),
        [
            r#"{"model":"gpt-4o","instructions":"You are support.","input":["#,
            r#"{"type":"message","role":"user","content":"Where is A-1?"},"#,
            r#"{"type":"function_call","call_id":"call_1","name":"lookup_order","arguments":"{\"order\":\"A-1\"}"},"#,
            r#"{"type":"message","role":"assistant","content":"[tool call old_tool] {\"order\":\"A-2\"}"},"#,
            r#"{"type":"function_call_output","call_id":"call_1","output":"{\"status\":\"shipped\"}"},"#,
            r#"{"type":"message","role":"user","content":"[tool error old_tool] not found"},"#,
            r#"{"type":"message","role":"assistant","content":"Checking the other order."},"#,
            r#"{"type":"message","role":"user","content":"Thanks. And A-2?"},{"type":"message","role":"user","content":[{"type":"input_text","text":"[system] Be brief."}]}],"#,
            r#""tools":["#,
            LOOKUP_TOOL,
            r#"],"store":false}"#,
        ]
        .concat()
    );
    // Without tools, every call goes as text.
    r.tools.clear();
    let text = body("no_tools", &r, &model("gpt-4o", None));
    assert_eq!(
        text,
        [
            r#"{"model":"gpt-4o","instructions":"You are support.","input":["#,
            r#"{"type":"message","role":"user","content":"Where is A-1?"},"#,
            r#"{"type":"message","role":"assistant","content":"[tool call lookup_order] {\"order\":\"A-1\"}"},"#,
            r#"{"type":"message","role":"assistant","content":"[tool call old_tool] {\"order\":\"A-2\"}"},"#,
            r#"{"type":"message","role":"user","content":"[tool result lookup_order] {\"status\":\"shipped\"}"},"#,
            r#"{"type":"message","role":"user","content":"[tool error old_tool] not found"},"#,
            r#"{"type":"message","role":"assistant","content":"Checking the other order."},"#,
            r#"{"type":"message","role":"user","content":"Thanks. And A-2?"},{"type":"message","role":"user","content":[{"type":"input_text","text":"[system] Be brief."}]}],"store":false}"#,
        ]
        .concat()
    );
}

#[test]
fn an_output_for_an_unknown_call_id_is_not_converted() {
    let orphan = Request {
        messages: vec![message(Role::Tool, "x").with_tool_call_id("call_9")],
        ..Default::default()
    };
    let unknown = Request {
        messages: vec![
            message(Role::User, "Where is A-1?"),
            message(Role::Assistant, "").with_tool_call(ToolCall::new(
                "call_1",
                "lookup_order",
                json!({}),
            )),
            message(Role::Tool, "x").with_tool_call_id("call_9"),
        ],
        tools: vec![lookup_order()],
        ..Default::default()
    };
    let errors: Vec<(ErrorKind, String)> = [orphan, unknown]
        .iter()
        .map(|r| {
            let e = to_openai_responses(r, &model("gpt-4o", None)).unwrap_err();
            (e.kind(), e.to_string())
        })
        .collect();
    assert_eq!(
        errors,
        [
            (
                ErrorKind::InvalidRequest,
                "message 0: tool message `call_9` does not follow an assistant message with tool calls".to_owned()
            ),
            (
                ErrorKind::InvalidRequest,
                "message 2: tool message answers unknown call `call_9` (not among the calls of message 1)".to_owned()
            ),
        ]
    );
}

// ---------------------------------------------------------------------------------------
// Answers

/// What a fixture gives: the response as JSON, or the error's text.
type Expected = Result<Value, String>;

fn dir(provider: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/responses")
        .join(provider)
}

fn fixture(provider: &str, name: &str) -> Vec<u8> {
    std::fs::read(dir(provider).join(name)).unwrap()
}

/// A fixture's JSON value at `pointer`, for the long values not repeated here.
fn at(name: &str, pointer: &str) -> Value {
    let body: Value = serde_json::from_slice(&fixture("openai-responses", name)).unwrap();
    body.pointer(pointer).unwrap().clone()
}

/// The JSON of a `ModelResponse`: usage is `[input, output, cache_read, cache_write]`,
/// `output` the items kept for the next round.
fn answer(
    content: Value,
    calls: Value,
    usage: [u64; 4],
    stop: &str,
    outcome: &str,
    output: Value,
) -> Expected {
    let mut message = json!({ "role": "assistant", "content": content });
    if calls != json!([]) {
        message["tool_calls"] = calls;
    }
    let mut out = json!({
        "message": message,
        "usage": {
            "input": usage[0], "output": usage[1], "cache_read": usage[2], "cache_write": usage[3],
        },
        "stop_reason": stop,
        "outcome": outcome,
    });
    if output != json!([]) {
        out["output"] = output;
    }
    Ok(out)
}

fn call(id: &str, name: &str, input: Value) -> Value {
    json!({ "id": id, "name": name, "input": input })
}

fn error(text: &str) -> Expected {
    Err(text.to_owned())
}

#[test]
fn every_fixture_gives_its_exact_response_or_error() {
    let text = at("good-text.json", "/output/0/content/0/text");
    let haiku = at(
        "good-incomplete-max-output-tokens.json",
        "/output/0/content/0/text",
    );
    let paris = call(
        "call_12345xyz",
        "get_weather",
        json!({"location": "Paris, France"}),
    );
    let bogota = call(
        "call_67890abc",
        "get_weather",
        json!({"location": "Bogotá, Colombia"}),
    );
    let lookup = json!({"order": "A-1042"});
    let cases: Vec<(&str, Expected)> = vec![
        (
            "bad-call-id-duplicate.json",
            error(
                "`$.output[1].call_id` repeats the tool call id `call_12345xyz` of `$.output[0].call_id`",
            ),
        ),
        // Accepted: `status` alone decides; an incomplete answer says why when it can.
        (
            "bad-incomplete-details--without-details.json",
            answer(
                json!(haiku),
                json!([]),
                [14, 20, 0, 0],
                "incomplete",
                "stopped",
                json!([at(
                    "bad-incomplete-details--without-details.json",
                    "/output/0"
                )]),
            ),
        ),
        (
            "bad-incomplete-details.json",
            answer(
                json!(haiku),
                json!([]),
                [14, 20, 0, 0],
                "completed",
                "done",
                json!([at("bad-incomplete-details.json", "/output/0")]),
            ),
        ),
        // Accepted: a key written twice keeps its last value, as the SDKs read it.
        (
            "bad-json--duplicate-key.json",
            answer(
                json!(text),
                json!([]),
                [14, 50, 0, 0],
                "completed",
                "done",
                json!([at("bad-json--duplicate-key.json", "/output/0")]),
            ),
        ),
        // Accepted: an item kind the parser does not know is skipped, as hosted tools' are.
        (
            "bad-output-item-type+schema--tool-call.json",
            answer(
                json!(""),
                json!([paris]),
                [291, 23, 0, 0],
                "completed",
                "tool_calls",
                json!([at(
                    "bad-output-item-type+schema--tool-call.json",
                    "/output/0"
                )]),
            ),
        ),
        (
            "bad-schema--no-cache-write-tokens.json",
            answer(
                json!(""),
                json!([call(
                    "call_S2X9KuEJpYvFcF4hgv1XwM0j",
                    "get_weather_at_location",
                    json!({"location": "San Francisco, CA"})
                )]),
                [74, 20, 0, 0],
                "completed",
                "tool_calls",
                json!([at("bad-schema--no-cache-write-tokens.json", "/output/0")]),
            ),
        ),
        (
            "bad-schema--no-logprobs.json",
            answer(
                at("bad-schema--no-logprobs.json", "/output/0/content/0/text"),
                json!([]),
                [36, 87, 0, 0],
                "completed",
                "done",
                json!([at("bad-schema--no-logprobs.json", "/output/0")]),
            ),
        ),
        (
            "bad-schema--unknown-field.json",
            answer(
                json!(text),
                json!([]),
                [14, 50, 0, 0],
                "completed",
                "done",
                json!([at("bad-schema--unknown-field.json", "/output/0")]),
            ),
        ),
        (
            "bad-status-error.json",
            error(
                "`$.status` is `failed`: only a `completed` or `incomplete` response has an answer to record",
            ),
        ),
        (
            "bad-tool-arguments-json.json",
            // serde_json counts columns in bytes: `á` is two.
            error(
                "`$.output[1].arguments` is not JSON: EOF while parsing a string at line 1 column 25",
            ),
        ),
        // Accepted: more cached tokens than input tokens leave no uncached input.
        (
            "bad-usage-details.json",
            answer(
                at("bad-usage-details.json", "/output/5/content/0/text"),
                json!([]),
                [0, 698, 13422, 0],
                "completed",
                "done",
                json!([at("bad-usage-details.json", "/output/5")]),
            ),
        ),
        (
            "bad-usage-tokens.json",
            error("`$.usage.input_tokens_details.cached_tokens` must be a non-negative integer"),
        ),
        // Accepted: the total is the provider's bookkeeping; the parts are read.
        (
            "bad-usage-total.json",
            answer(
                json!(text),
                json!([]),
                [14, 50, 0, 0],
                "completed",
                "done",
                json!([at("bad-usage-total.json", "/output/0")]),
            ),
        ),
        (
            "good-background-queued.json",
            error(
                "`$.status` is `queued`: the response is not finished; record it once its status is `completed` or `incomplete`",
            ),
        ),
        (
            "good-file-input.json",
            answer(
                at("good-file-input.json", "/output/0/content/0/text"),
                json!([]),
                [8438, 398, 0, 0],
                "completed",
                "done",
                json!([at("good-file-input.json", "/output/0")]),
            ),
        ),
        (
            "good-incomplete-max-output-tokens.json",
            answer(
                json!(haiku),
                json!([]),
                [14, 20, 0, 0],
                "max_output_tokens",
                "stopped",
                json!([at("good-incomplete-max-output-tokens.json", "/output/0")]),
            ),
        ),
        // The reasoning item goes to the next round with the calls, in the answer's order.
        (
            "good-loop-round-0.json",
            answer(
                json!(""),
                json!([
                    call("call_LookupA1042", "lookup_order", lookup.clone()),
                    call("call_TrackA1042", "tracking_log", lookup),
                ]),
                [312, 141, 1920, 0],
                "completed",
                "tool_calls",
                at("good-loop-round-0.json", "/output"),
            ),
        ),
        (
            "good-loop-round-1.json",
            answer(
                json!("Your order A-1042 is in transit."),
                json!([]),
                [234, 52, 2176, 0],
                "completed",
                "done",
                at("good-loop-round-1.json", "/output"),
            ),
        ),
        (
            "good-parallel-function-calls.json",
            answer(
                json!(""),
                json!([paris, bogota]),
                [291, 23, 0, 0],
                "completed",
                "tool_calls",
                at("good-parallel-function-calls.json", "/output"),
            ),
        ),
        // Reasoning items without `encrypted_content` cannot go back with `store: false`:
        // only the message is kept; the web searches are hosted tools' items.
        (
            "good-reasoning-cached-tokens.json",
            answer(
                at(
                    "good-reasoning-cached-tokens.json",
                    "/output/5/content/0/text",
                ),
                json!([]),
                [8372, 698, 4352, 0],
                "completed",
                "done",
                json!([at("good-reasoning-cached-tokens.json", "/output/5")]),
            ),
        ),
        (
            "good-reasoning-summary.json",
            answer(
                at("good-reasoning-summary.json", "/output/1/content/0/text"),
                json!([]),
                [30, 221, 0, 0],
                "completed",
                "done",
                at("good-reasoning-summary.json", "/output"),
            ),
        ),
        (
            "good-refusal.json",
            answer(
                json!("I can't help with that request."),
                json!([]),
                [31, 9, 0, 0],
                "refusal",
                "stopped",
                at("good-refusal.json", "/output"),
            ),
        ),
        (
            "good-text.json",
            answer(
                json!(text),
                json!([]),
                [14, 50, 0, 0],
                "completed",
                "done",
                at("good-text.json", "/output"),
            ),
        ),
    ];
    let mut listed: Vec<String> = cases.iter().map(|(name, _)| name.to_string()).collect();
    listed.sort();
    assert_eq!(listed, fixture_names(), "one case per fixture file");
    let mut failures = Vec::new();
    for (name, expected) in cases {
        let got = from_openai_responses_response(&fixture("openai-responses", name))
            .map(|r| serde_json::to_value(r).unwrap())
            .map_err(|e| {
                assert_eq!(e.kind(), ErrorKind::InvalidInput, "{name}");
                e.to_string()
            });
        if got != expected {
            failures.push(format!(
                "{name}:\n  got      {got:?}\n  expected {expected:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

type Parse = fn(&[u8]) -> protege_core::Result<ModelResponse>;

fn err(parse: Parse, body: &[u8]) -> String {
    let e = parse(body).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    e.to_string()
}

#[test]
fn a_chat_completions_answer_given_as_responses_and_the_reverse_are_named() {
    let chat = fixture("openai", "good-text.json");
    let responses = fixture("openai-responses", "good-text.json");
    let anthropic = fixture("anthropic", "good-text.json");
    assert_eq!(
        [
            err(from_openai_responses_response, &chat),
            err(from_openai_responses_response, &anthropic),
            err(from_openai_response, &responses),
            err(from_anthropic_response, &responses),
            err(from_openai_responses_response, b"[]"),
            err(from_openai_responses_response, br#"{"object":"list"}"#),
        ],
        [
            "not an OpenAI Responses response: `$.object` is `chat.completion`, expected `response`; the body looks like an OpenAI Chat Completions response",
            "not an OpenAI Responses response: `$.object` is missing, expected `response`; the body looks like an Anthropic Messages response",
            "not an OpenAI Chat Completions response: `$.object` is `response`, expected `chat.completion`; the body looks like an OpenAI Responses response",
            "not an Anthropic Messages response: `$.type` is missing, expected `message`; the body looks like an OpenAI Responses response",
            "not an OpenAI Responses response: the body is an array, expected an object",
            "not an OpenAI Responses response: `$.object` is `list`, expected `response`",
        ]
    );
}

/// A completed answer with `output`.
fn completed(output: Value) -> Vec<u8> {
    json!({"object": "response", "status": "completed", "model": "gpt-5", "output": output})
        .to_string()
        .into_bytes()
}

#[test]
fn malformed_answers_name_their_json_path() {
    let cases = [
        (completed(json!({})), "`$.output` must be an array"),
        (
            json!({"object": "response", "output": []}).to_string().into_bytes(),
            "`$.status` is missing",
        ),
        (
            completed(json!([{"type": "message", "role": "user", "content": []}])),
            "`$.output[0].role` is `user`, expected `assistant`",
        ),
        (
            completed(json!([{"type": "message", "role": "assistant", "content": [{"type": "output_text"}]}])),
            "`$.output[0].content[0].text` is missing",
        ),
        (
            completed(json!([{"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "[1]"}])),
            "`$.output[0].arguments` must hold a JSON object, not an array",
        ),
        (
            completed(json!([{"type": "function_call", "id": "fc_1", "name": "f", "arguments": "{}"}])),
            "`$.output[0].call_id` is missing",
        ),
        (
            completed(json!([{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": 7}])),
            "`$.output[0].encrypted_content` must be a string or null",
        ),
        (
            json!({"object": "response", "status": "cancelled", "output": [], "error": {"message": "stopped by the user"}})
                .to_string()
                .into_bytes(),
            "`$.status` is `cancelled` (stopped by the user): only a `completed` or `incomplete` response has an answer to record",
        ),
        (
            json!({"object": "response", "status": "completed", "output": [], "usage": {"input_tokens": -3}})
                .to_string()
                .into_bytes(),
            "`$.usage.input_tokens` must be a non-negative integer",
        ),
    ];
    for (body, expected) in cases {
        assert_eq!(
            err(from_openai_responses_response, &body),
            expected,
            "{}",
            String::from_utf8_lossy(&body)
        );
    }
}

#[test]
fn an_incomplete_answer_drops_its_calls_and_an_incomplete_call_is_not_read() {
    let body = json!({
        "object": "response",
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "model": "gpt-5",
        "output": [
            {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "Let me look.", "annotations": []},
                {"type": "output_text", "text": "One moment.", "annotations": []}
            ]},
            {"type": "function_call", "call_id": "call_1", "name": "lookup_order", "arguments": "{\"ord", "status": "incomplete"}
        ],
        "usage": {"input_tokens": 10, "output_tokens": 5, "input_tokens_details": {"cached_tokens": 4, "cache_write_tokens": 2}}
    });
    let parsed = from_openai_responses_response(body.to_string().as_bytes()).unwrap();
    assert_eq!(
        serde_json::to_value(&parsed).unwrap(),
        answer(
            json!([{"type": "text", "text": "Let me look."}, {"type": "text", "text": "One moment."}]),
            json!([]),
            [4, 5, 4, 2],
            "max_output_tokens",
            "stopped",
            body["output"].clone(),
        )
        .unwrap()
    );
}

/// The fixture file names, sorted.
fn fixture_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir("openai-responses"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".json"))
        .collect();
    names.sort();
    names
}

/// Every prefix of every fixture, short of its closing brace, fails as JSON cut short.
#[test]
fn every_prefix_of_every_fixture_is_an_error() {
    for name in fixture_names() {
        let body = fixture("openai-responses", &name);
        for cut in 0..body.trim_ascii_end().len() {
            let e = from_openai_responses_response(&body[..cut]).unwrap_err();
            assert!(
                e.to_string().starts_with("the response is not JSON: "),
                "{name} cut at {cut}: {e}"
            );
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

    /// A fixture with one byte replaced, or a span removed, parses or fails but never panics.
    #[test]
    fn a_changed_fixture_never_panics(
        pick in proptest::prelude::any::<proptest::sample::Index>(),
        at in proptest::prelude::any::<proptest::sample::Index>(),
        len in 0usize..40,
        byte in proptest::prelude::any::<u8>(),
    ) {
        let names = fixture_names();
        let name = pick.get(&names);
        let mut body = fixture("openai-responses", name);
        let i = at.index(body.len());
        let mut replaced = body.clone();
        replaced[i] = byte;
        let _ = from_openai_responses_response(&replaced);
        body.drain(i..(i + len).min(body.len()));
        let _ = from_openai_responses_response(&body);
    }
}

/// System text after the conversation started goes to the next user message; with none
/// after it, a user message of its own at the end.
#[test]
fn late_system_text_with_no_user_message_after_it_ends_the_input() {
    let r = Request {
        messages: vec![
            message(Role::System, "You are support."),
            message(Role::User, "Where is A-1?"),
            message(Role::System, "Today is Monday."),
            message(Role::Assistant, "Shipped."),
        ],
        ..Default::default()
    };
    assert_eq!(
        body("late_system_last", &r, &model("gpt-4o", None)),
        concat!(
            r#"{"model":"gpt-4o","instructions":"You are support.","input":["#,
            r#"{"type":"message","role":"user","content":"Where is A-1?"},"#,
            r#"{"type":"message","role":"assistant","content":"Shipped."},"#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"[system] Today is Monday."}]}],"store":false}"#
        )
    );
}

#[test]
fn an_image_a_tool_returned_goes_in_its_function_call_output() {
    let r = Request {
        messages: vec![
            message(Role::User, "See my label."),
            message(Role::Assistant, "").with_tool_calls(vec![ToolCall::new(
                "call_1",
                "lookup_order",
                json!({"order": "A-1"}),
            )]),
            message(
                Role::Tool,
                vec![
                    Part::text(r#"{"attachment_id":"att-1"}"#),
                    Part::Image {
                        media_type: "image/png".into(),
                        data: PNG.into(),
                    },
                ],
            )
            .with_tool_call_id("call_1"),
        ],
        tools: vec![lookup_order()],
        ..Default::default()
    };
    let out: Value =
        serde_json::from_str(&body("attachment_round", &r, &model("gpt-4o", None))).unwrap();
    assert_eq!(
        out["input"][2],
        json!({"type": "function_call_output", "call_id": "call_1", "output": [
            {"type": "input_text", "text": r#"{"attachment_id":"att-1"}"#},
            {"type": "input_image", "image_url": format!("data:image/png;base64,{PNG}"), "detail": "auto"},
        ]})
    );
}
