//! Provider responses to the canonical payload: every fixture of
//! `tests/fixtures/responses/{anthropic,openai}/` with its exact `ModelResponse` or error,
//! malformed bodies written here with their exact error, and no panic on any prefix or
//! byte change of a fixture.
//!
//! The fixtures are provider bodies checked by `wirecheck anthropic-response` /
//! `openai-response` in CI: `good-*` pass it, `bad-<rule>[--<note>]` break exactly that
//! rule. A bad fixture is accepted here when what it breaks does not touch the canonical
//! payload (a usage total, a field the parser does not read), and rejected otherwise.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use protege_core::wire::{
    ModelResponse, Outcome, Usage, from_anthropic_response, from_openai_response,
};
use protege_core::{Content, ErrorKind, Part, Role, ToolCall, message};
use serde_json::{Value, json};

type Parse = fn(&[u8]) -> protege_core::Result<ModelResponse>;

/// What a fixture gives: the response as JSON, or the error's text.
type Expected = Result<Value, String>;

fn dir(provider: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/responses")
        .join(provider)
}

/// The fixture file names of `provider`, sorted.
fn fixture_names(provider: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir(provider))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".json"))
        .collect();
    names.sort();
    names
}

fn fixture(provider: &str, name: &str) -> Vec<u8> {
    std::fs::read(dir(provider).join(name)).unwrap()
}

/// A fixture's JSON value at `pointer`, for the long texts not repeated here.
fn fixture_at(provider: &str, name: &str, pointer: &str) -> Value {
    let body: Value = serde_json::from_slice(&fixture(provider, name)).unwrap();
    body.pointer(pointer).unwrap().clone()
}

/// The JSON of a `ModelResponse`: usage is `[input, output, cache_read, cache_write]`.
fn answer(content: Value, calls: Value, usage: [u64; 4], stop: &str, outcome: &str) -> Expected {
    let mut message = json!({ "role": "assistant", "content": content });
    if calls != json!([]) {
        message["tool_calls"] = calls;
    }
    Ok(json!({
        "message": message,
        "usage": {
            "input": usage[0], "output": usage[1], "cache_read": usage[2], "cache_write": usage[3],
        },
        "stop_reason": stop,
        "outcome": outcome,
    }))
}

fn call(id: &str, name: &str, input: Value) -> Value {
    json!({ "id": id, "name": name, "input": input })
}

fn error(text: &str) -> Expected {
    Err(text.to_owned())
}

/// Every fixture of `provider` against `cases`, which must name each file once.
fn check_fixtures(provider: &str, parse: Parse, cases: Vec<(&str, Expected)>) {
    let mut listed: Vec<String> = cases.iter().map(|(name, _)| name.to_string()).collect();
    listed.sort();
    assert_eq!(listed, fixture_names(provider), "one case per fixture file");
    let mut failures = Vec::new();
    for (name, expected) in cases {
        let got = parse(&fixture(provider, name)).map(|r| serde_json::to_value(r).unwrap());
        let got = got.map_err(|e| {
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{name}");
            e.to_string()
        });
        if got != expected {
            failures.push(format!(
                "{provider}/{name}:\n  got      {got:?}\n  expected {expected:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn anthropic_fixtures() {
    let hi = "Hi! My name is Claude.";
    let essay = fixture_at("anthropic", "good-tool-use.json", "/content/0/text");
    let analysis = fixture_at("anthropic", "good-tool-use.json", "/content/1/input");
    let parallel = json!([
        call(
            "toolu_01L8GVQapA1HmggQcrwboukH",
            "test_tool",
            json!({"count": 1})
        ),
        call(
            "toolu_01J5Fvzxu7DP1Uh59c1kr5JD",
            "test_tool",
            json!({"count": 2})
        ),
    ]);
    let parallel_text =
        "I'll use the test_tool twice as requested - first with count 1, then with count 2.";
    let cases = vec![
        // Accepted: the cache breakdown is the provider's bookkeeping; the total is read.
        (
            "bad-cache-creation-sum.json",
            answer(json!("Hi."), json!([]), [10, 12, 3, 7], "end_turn", "done"),
        ),
        (
            "bad-schema--negative-usage.json",
            error("`$.usage.cache_read_input_tokens` must be a non-negative integer"),
        ),
        // Accepted: a stop reason this version does not know stops the turn.
        (
            "bad-schema--stop-reason-value.json",
            answer(json!(hi), json!([]), [2095, 503, 0, 0], "stop", "stopped"),
        ),
        // Accepted: `caller` is not read (older responses do not carry it).
        (
            "bad-schema--tool-use-without-caller.json",
            answer(
                json!(
                    "I'll use the test_tool with the value \"test\" as requested, then provide a final response."
                ),
                json!([call(
                    "toolu_011LF2VkWpAfJnTKJcmh1PNf",
                    "test_tool",
                    json!({"value": "test"})
                )]),
                [415, 76, 0, 0],
                "tool_use",
                "tool_calls",
            ),
        ),
        // Accepted: unknown fields are ignored.
        (
            "bad-schema--unknown-field.json",
            answer(json!(hi), json!([]), [2095, 503, 0, 0], "end_turn", "done"),
        ),
        // Accepted: `stop_details` is not read; `stop_reason` alone decides.
        (
            "bad-stop-details.json",
            answer(json!(""), json!([]), [20, 0, 0, 0], "end_turn", "done"),
        ),
        (
            "bad-stop-reason.json",
            error(
                "`$.stop_reason` is null: a complete response always has one (only a stream's partial message has none)",
            ),
        ),
        // Accepted: `stop_sequence` is not read.
        (
            "bad-stop-sequence--set-without-reason.json",
            answer(json!(hi), json!([]), [2095, 503, 0, 0], "end_turn", "done"),
        ),
        (
            "bad-stop-sequence.json",
            answer(
                json!(hi),
                json!([]),
                [2095, 503, 0, 0],
                "stop_sequence",
                "done",
            ),
        ),
        (
            "bad-tool-use-id-duplicate.json",
            error(
                "`$.content[2].id` repeats the tool call id `toolu_01L8GVQapA1HmggQcrwboukH` of `$.content[1].id`",
            ),
        ),
        (
            "bad-tool-use-stop--no-tool-use.json",
            error("`$.stop_reason` is `tool_use` but `$.content` has no `tool_use` block"),
        ),
        // Rejected: finished with a call nobody will answer, or a call silently dropped.
        (
            "bad-tool-use-stop.json",
            error(
                "`$.stop_reason` is `end_turn` but `$.content[1]` is a `tool_use` block, which comes only with `tool_use` or a stop that cut the output short",
            ),
        ),
        (
            "good-empty-content.json",
            answer(json!(""), json!([]), [2095, 3, 0, 0], "end_turn", "done"),
        ),
        (
            "good-max-tokens-inside-tool-use.json",
            answer(
                json!(
                    "I'll create a comprehensive tax guide for someone with multiple W2s and save it in a file called taxes.txt. Let me do that for you now."
                ),
                json!([]),
                [450, 124, 0, 0],
                "max_tokens",
                "stopped",
            ),
        ),
        (
            "good-parallel-tool-use.json",
            answer(
                json!(parallel_text),
                parallel,
                [418, 113, 0, 0],
                "tool_use",
                "tool_calls",
            ),
        ),
        (
            "good-programmatic-tool-call.json",
            answer(
                json!("I'll check the weather for all three cities in Celsius simultaneously."),
                json!([call(
                    "toolu_011MDRpaZRMRRjtFkJizD6nS",
                    "get_weather",
                    json!({"location": "San Francisco, CA", "units": "c"})
                )]),
                [3182, 237, 0, 0],
                "tool_use",
                "tool_calls",
            ),
        ),
        (
            "good-refusal.json",
            answer(json!(""), json!([]), [20, 0, 0, 0], "refusal", "stopped"),
        ),
        (
            "good-server-tool-web-search.json",
            answer(
                json!([
                    {"type": "text", "text": "Today in San Francisco, there are showers with breezy and cool conditions, with a high of 52°F."},
                    {"type": "text", "text": " "},
                    {"type": "text", "text": "Tonight will be cloudy, becoming windier and chilly, with a shower or two this evening followed by heavy rain late, and watch for flooding on streets and poor drainage areas with a low of 45°F."},
                ]),
                json!([]),
                [11306, 163, 0, 0],
                "end_turn",
                "done",
            ),
        ),
        (
            "good-stop-sequence.json",
            answer(
                json!(hi),
                json!([]),
                [2095, 503, 0, 0],
                "stop_sequence",
                "done",
            ),
        ),
        (
            "good-text-parallel-tool-use-cache.json",
            answer(
                json!("I'll look up both orders."),
                json!([
                    call(
                        "toolu_01A9c7Qm2vXbT4kPz8LrN5Ws",
                        "lookup_order",
                        json!({"order": "A-1"})
                    ),
                    call(
                        "toolu_01Bq3Rd8YhJw6Ft2Ue9Mc4Xa",
                        "lookup_order",
                        json!({"order": "A-2", "include": ["items", "tracking"]})
                    ),
                ]),
                [42, 96, 2048, 1024],
                "tool_use",
                "tool_calls",
            ),
        ),
        (
            "good-text.json",
            answer(json!(hi), json!([]), [2095, 503, 0, 0], "end_turn", "done"),
        ),
        (
            "good-thinking-text-tool-use.json",
            answer(
                json!("Let me check order A-1."),
                json!([call(
                    "toolu_01Cx5Gh7Jk9Lm2Np4Qr6St8V",
                    "lookup_order",
                    json!({"order": "A-1"})
                )]),
                [512, 148, 0, 0],
                "tool_use",
                "tool_calls",
            ),
        ),
        (
            "good-tool-use.json",
            answer(
                essay,
                json!([call(
                    "toolu_01KiHQYXfTgCmpgRfmqgvUL2",
                    "submit_analysis",
                    analysis
                )]),
                [617, 995, 0, 0],
                "tool_use",
                "tool_calls",
            ),
        ),
        (
            "good-usage-cache-read-write.json",
            answer(json!("Hi."), json!([]), [10, 12, 3, 2], "end_turn", "done"),
        ),
        (
            "good-usage-cache-write-1h.json",
            // Of the 2151 written, `cache_creation` says 2051 are for an hour.
            answer(
                json!("Hi."),
                json!([]),
                [21, 12, 0, 2151],
                "end_turn",
                "done",
            )
            .map(|mut v| {
                v["usage"]["cache_write_1h"] = json!(2051);
                v
            }),
        ),
    ];
    check_fixtures("anthropic", from_anthropic_response, cases);
}

#[test]
fn openai_fixtures() {
    let hello = "Hello! How can I assist you today?";
    let weather = || {
        json!([call(
            "call_Y6qJ7ofLgOrBnMD5WbVAeiRV",
            "GetWeatherArgs",
            json!({"city": "Edinburgh", "country": "UK", "units": "c"}),
        )])
    };
    let first_choice = "{\"city\":\"San Francisco\",\"temperature\":64,\"units\":\"f\"}";
    let args = "$.choices[0].message.tool_calls[0].function.arguments";
    let cases = vec![
        // Accepted: the choice of index 0 is there (and first); the others are not read.
        (
            "bad-choice-index.json",
            answer(
                json!(first_choice),
                json!([]),
                [79, 44, 0, 0],
                "stop",
                "done",
            ),
        ),
        (
            "bad-finish-reason.json",
            error(
                "`$.choices[0].finish_reason` is `tool_calls` but `$.choices[0].message` has no tool calls",
            ),
        ),
        // Accepted: a key written twice keeps its last value, as the SDKs' JSON parsers do.
        (
            "bad-json--duplicate-key.json",
            answer(json!(hello), json!([]), [19, 10, 0, 0], "stop", "done"),
        ),
        // Accepted: a finish reason this version does not know stops the turn.
        (
            "bad-schema--finish-reason-value.json",
            answer(
                json!(hello),
                json!([]),
                [19, 10, 0, 0],
                "end_turn",
                "stopped",
            ),
        ),
        // Accepted: an absent `refusal` is no refusal.
        (
            "bad-schema--no-refusal.json",
            answer(
                json!(""),
                json!([call(
                    "call_abc123",
                    "get_current_weather",
                    json!({"location": "Boston, MA"})
                )]),
                [82, 17, 0, 0],
                "tool_calls",
                "tool_calls",
            ),
        ),
        // Accepted: unknown fields are ignored.
        (
            "bad-schema--unknown-field.json",
            answer(json!(hello), json!([]), [19, 10, 0, 0], "stop", "done"),
        ),
        // Accepted: a call cut by the content filter is dropped unread.
        (
            "bad-tool-arguments-json--content-filter.json",
            answer(
                json!("Checking"),
                json!([]),
                [76, 9, 0, 0],
                "content_filter",
                "stopped",
            ),
        ),
        (
            "bad-tool-arguments-json--not-object.json",
            error(&format!("`{args}` must hold a JSON object, not a string")),
        ),
        (
            "bad-tool-arguments-json.json",
            error(&format!(
                "`{args}` is not JSON: EOF while parsing an object at line 1 column 46"
            )),
        ),
        (
            "bad-tool-call-id-duplicate.json",
            error(
                "`$.choices[0].message.tool_calls[1].id` repeats the tool call id `call_fdNz3vOBKYgOIpMdWotB9MjY` of `$.choices[0].message.tool_calls[0].id`",
            ),
        ),
        // Accepted: more cached than prompt tokens leaves 0 uncached, not an error.
        (
            "bad-usage-details.json",
            answer(json!(hello), json!([]), [0, 300, 2048, 86], "stop", "done"),
        ),
        (
            "bad-usage-tokens.json",
            error("`$.usage.prompt_tokens_details.cached_tokens` must be a non-negative integer"),
        ),
        // Accepted: `total_tokens` is not read.
        (
            "bad-usage-total.json",
            answer(json!(hello), json!([]), [19, 10, 0, 0], "stop", "done"),
        ),
        (
            "good-content-filter-tool-call.json",
            answer(
                json!("Checking"),
                json!([]),
                [76, 9, 0, 0],
                "content_filter",
                "stopped",
            ),
        ),
        (
            "good-max-tokens.json",
            answer(json!("{\""), json!([]), [79, 1, 0, 0], "length", "stopped"),
        ),
        (
            "good-multiple-choices.json",
            answer(
                json!(first_choice),
                json!([]),
                [79, 44, 0, 0],
                "stop",
                "done",
            ),
        ),
        (
            "good-no-usage.json",
            answer(
                json!("Your order A-1 shipped yesterday."),
                json!([]),
                [0, 0, 0, 0],
                "stop",
                "done",
            ),
        ),
        (
            "good-parallel-tool-calls.json",
            answer(
                json!(""),
                json!([
                    call(
                        "call_fdNz3vOBKYgOIpMdWotB9MjY",
                        "GetWeatherArgs",
                        json!({"city": "Edinburgh", "country": "GB", "units": "c"})
                    ),
                    call(
                        "call_h1DWI1POMJLb0KwIyQHWXD4p",
                        "get_stock_price",
                        json!({"ticker": "AAPL", "exchange": "NASDAQ"})
                    ),
                ]),
                [149, 60, 0, 0],
                "tool_calls",
                "tool_calls",
            ),
        ),
        (
            "good-refusal.json",
            answer(
                json!("I'm very sorry, but I can't assist with that."),
                json!([]),
                [79, 12, 0, 0],
                "refusal",
                "stopped",
            ),
        ),
        (
            "good-text-parallel-tool-calls-cache.json",
            answer(
                json!("I'll look up both orders."),
                json!([
                    call(
                        "call_Rk3vN8xQ2mT5bW7yZ1cF4hJ6",
                        "lookup_order",
                        json!({"order": "A-1"})
                    ),
                    call(
                        "call_Lp9sD2gH5jK8nM1qR4tV7wX0",
                        "lookup_order",
                        json!({"order": "A-2", "include": ["items", "tracking"]})
                    ),
                ]),
                [440, 64, 2048, 512],
                "tool_calls",
                "tool_calls",
            ),
        ),
        (
            "good-text.json",
            answer(json!(hello), json!([]), [19, 10, 0, 0], "stop", "done"),
        ),
        (
            "good-tool-call-cut-by-length.json",
            answer(json!(""), json!([]), [76, 11, 0, 0], "length", "stopped"),
        ),
        // A forced call (`tool_choice` required or named) finishes with `stop`.
        (
            "good-tool-call-forced-stop.json",
            answer(json!(""), weather(), [76, 24, 0, 0], "stop", "tool_calls"),
        ),
        (
            "good-tool-call.json",
            answer(
                json!(""),
                weather(),
                [76, 24, 0, 0],
                "tool_calls",
                "tool_calls",
            ),
        ),
        (
            "good-usage-cache-read-write.json",
            answer(json!(hello), json!([]), [0, 300, 1920, 86], "stop", "done"),
        ),
    ];
    check_fixtures("openai", from_openai_response, cases);
}

/// The error text of parsing `body` with `parse`, which must fail with `InvalidInput`.
fn err(parse: Parse, body: &str) -> String {
    let e = parse(body.as_bytes()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    e.to_string()
}

/// An Anthropic message with these content blocks, stop reason and usage.
fn anthropic(content: Value, stop_reason: Value, usage: Value) -> String {
    json!({
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": content, "stop_reason": stop_reason, "stop_sequence": null, "usage": usage,
    })
    .to_string()
}

/// A chat completion with this message, finish reason and usage.
fn openai(message: Value, finish_reason: Value, usage: Value) -> String {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
        "choices": [{ "index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason }],
        "usage": usage,
    })
    .to_string()
}

fn tool_use(id: &str, input: Value) -> Value {
    json!({ "type": "tool_use", "id": id, "name": "lookup_order", "input": input, "caller": { "type": "direct" } })
}

fn function(id: &str, arguments: &str) -> Value {
    json!({ "id": id, "type": "function", "function": { "name": "lookup_order", "arguments": arguments } })
}

fn usage() -> Value {
    json!({ "input_tokens": 5, "output_tokens": 7 })
}

#[test]
fn the_other_providers_body_is_named() {
    let openai_body = String::from_utf8(fixture("openai", "good-text.json")).unwrap();
    let anthropic_body = String::from_utf8(fixture("anthropic", "good-text.json")).unwrap();
    assert_eq!(
        err(from_anthropic_response, &openai_body),
        "not an Anthropic Messages response: `$.type` is missing, expected `message`; the body looks like an OpenAI Chat Completions response"
    );
    assert_eq!(
        err(from_openai_response, &anthropic_body),
        "not an OpenAI Chat Completions response: `$.object` is missing, expected `chat.completion`; the body looks like an Anthropic Messages response"
    );
    assert_eq!(
        err(
            from_anthropic_response,
            r#"{"object": "chat.completion", "type": "chat.completion"}"#
        ),
        "not an Anthropic Messages response: `$.type` is `chat.completion`, expected `message`; the body looks like an OpenAI Chat Completions response"
    );
    assert_eq!(
        err(
            from_openai_response,
            r#"{"object": "chat.completion.chunk", "choices": []}"#
        ),
        "not an OpenAI Chat Completions response: `$.object` is `chat.completion.chunk`, expected `chat.completion`"
    );
    assert_eq!(
        err(
            from_anthropic_response,
            r#"{"type": "error", "error": {"type": "overloaded_error"}}"#
        ),
        "not an Anthropic Messages response: `$.type` is `error`, expected `message`"
    );
    assert_eq!(
        err(from_anthropic_response, "[]"),
        "not an Anthropic Messages response: the body is an array, expected an object"
    );
    assert_eq!(
        err(from_openai_response, "42"),
        "not an OpenAI Chat Completions response: the body is `42`, expected an object"
    );
    let long = "x".repeat(100);
    assert_eq!(
        err(
            from_anthropic_response,
            &json!({ "type": long }).to_string()
        ),
        format!(
            "not an Anthropic Messages response: `$.type` is `{}…`, expected `message`",
            "x".repeat(60)
        )
    );
    assert_eq!(
        err(
            from_anthropic_response,
            r#"{"type": "message", "role": "user"}"#
        ),
        "not an Anthropic Messages response: `$.role` is `user`, expected `assistant`"
    );
}

#[test]
fn a_body_that_is_not_json_or_cut_short_is_an_error_with_serdes_position() {
    for parse in [from_anthropic_response as Parse, from_openai_response] {
        assert_eq!(
            err(parse, "<html>502 Bad Gateway</html>"),
            "the response is not JSON: expected value at line 1 column 1"
        );
        assert_eq!(
            err(parse, ""),
            "the response is not JSON: EOF while parsing a value at line 1 column 0"
        );
        assert_eq!(
            err(parse, "{\"type\": \"message\",\n \"role\""),
            "the response is not JSON: EOF while parsing an object at line 2 column 7"
        );
        assert_eq!(
            err(parse, "{\"a\": 1} trailing"),
            "the response is not JSON: trailing characters at line 1 column 10"
        );
    }
    let e = from_openai_response(b"\xff\xfe{}").unwrap_err();
    assert_eq!(
        e.to_string(),
        "the response is not JSON: expected value at line 1 column 1"
    );
}

#[test]
fn anthropic_tool_inputs_ids_and_stop_reasons() {
    let parse = from_anthropic_response;
    let text = json!({ "type": "text", "text": "Checking." });
    let body = anthropic(
        json!([text, tool_use("toolu_1", json!("A-1"))]),
        json!("tool_use"),
        usage(),
    );
    assert_eq!(
        err(parse, &body),
        "`$.content[1].input` must be a JSON object"
    );
    let body = anthropic(
        json!([
            tool_use("toolu_1", json!({})),
            text,
            tool_use("toolu_2", json!({})),
            tool_use("toolu_1", json!({}))
        ]),
        json!("tool_use"),
        usage(),
    );
    assert_eq!(
        err(parse, &body),
        "`$.content[3].id` repeats the tool call id `toolu_1` of `$.content[0].id`"
    );
    let mut body: Value =
        serde_json::from_str(&anthropic(json!([text]), json!("end_turn"), usage())).unwrap();
    body.as_object_mut().unwrap().remove("stop_reason");
    assert_eq!(err(parse, &body.to_string()), "`$.stop_reason` is missing");
    let body = anthropic(json!([text]), json!(3), usage());
    assert_eq!(err(parse, &body), "`$.stop_reason` must be a string");
    let body = anthropic(json!({ "type": "text" }), json!("end_turn"), usage());
    assert_eq!(err(parse, &body), "`$.content` must be an array");
    let body = anthropic(json!([text, "text"]), json!("end_turn"), usage());
    assert_eq!(err(parse, &body), "`$.content[1]` must be a JSON object");
    let body = anthropic(
        json!([{ "type": "text", "text": null }]),
        json!("end_turn"),
        usage(),
    );
    assert_eq!(err(parse, &body), "`$.content[0].text` must be a string");
    let body = anthropic(json!([{ "text": "Hi" }]), json!("end_turn"), usage());
    assert_eq!(err(parse, &body), "`$.content[0].type` is missing");
    let body = anthropic(
        json!([{ "type": "tool_use", "id": "toolu_1", "input": {} }]),
        json!("tool_use"),
        usage(),
    );
    assert_eq!(err(parse, &body), "`$.content[0].name` is missing");
}

#[test]
fn anthropic_counts() {
    let parse = from_anthropic_response;
    let text = json!([{ "type": "text", "text": "Hi." }]);
    for (count, value) in [
        ("output_tokens", json!(-1)),
        ("output_tokens", json!(1.5)),
        ("input_tokens", json!("12")),
        ("cache_creation_input_tokens", json!(1e300)),
    ] {
        let mut usage = usage();
        usage[count] = value;
        assert_eq!(
            err(parse, &anthropic(text.clone(), json!("end_turn"), usage)),
            format!("`$.usage.{count}` must be a non-negative integer")
        );
    }
    let mut body: Value =
        serde_json::from_str(&anthropic(text.clone(), json!("end_turn"), usage())).unwrap();
    body.as_object_mut().unwrap().remove("usage");
    assert_eq!(err(parse, &body.to_string()), "`$.usage` is missing");
    let body = anthropic(text.clone(), json!("end_turn"), json!(null));
    assert_eq!(err(parse, &body), "`$.usage` must be a JSON object");
    // Null or absent counts are 0; the largest count is kept whole.
    let body = anthropic(
        text,
        json!("end_turn"),
        json!({ "input_tokens": null, "output_tokens": u64::MAX, "cache_read_input_tokens": 4 }),
    );
    let usage = parse(body.as_bytes()).unwrap().usage;
    assert_eq!(
        usage,
        Usage {
            input: 0,
            output: u64::MAX,
            cache_read: 4,
            cache_write: 0,
            cache_write_1h: 0
        }
    );
}

/// `usage.cache_creation` splits the written tokens by lifetime: the hour's part is
/// `cache_write_1h` (of `cache_write`, which stays `cache_creation_input_tokens`).
#[test]
fn anthropic_cache_writes_for_an_hour() {
    let parse = from_anthropic_response;
    let text = json!([{ "type": "text", "text": "Hi." }]);
    let body = anthropic(
        text.clone(),
        json!("end_turn"),
        json!({
            "input_tokens": 12, "output_tokens": 3, "cache_read_input_tokens": 100,
            "cache_creation_input_tokens": 1500,
            "cache_creation": { "ephemeral_5m_input_tokens": 300, "ephemeral_1h_input_tokens": 1200 }
        }),
    );
    assert_eq!(
        parse(body.as_bytes()).unwrap().usage,
        Usage {
            input: 12,
            output: 3,
            cache_read: 100,
            cache_write: 1500,
            cache_write_1h: 1200
        }
    );
    let body = anthropic(
        text.clone(),
        json!("end_turn"),
        json!({ "input_tokens": 1, "output_tokens": 1, "cache_creation": null }),
    );
    assert_eq!(parse(body.as_bytes()).unwrap().usage.cache_write_1h, 0);
    let body = anthropic(
        text.clone(),
        json!("end_turn"),
        json!({ "input_tokens": 1, "output_tokens": 1, "cache_creation": { "ephemeral_1h_input_tokens": -2 } }),
    );
    assert_eq!(
        err(parse, &body),
        "`$.usage.cache_creation.ephemeral_1h_input_tokens` must be a non-negative integer"
    );
    let body = anthropic(
        text,
        json!("end_turn"),
        json!({ "input_tokens": 1, "output_tokens": 1, "cache_creation": 5 }),
    );
    assert_eq!(
        err(parse, &body),
        "`$.usage.cache_creation` must be a JSON object"
    );
}

#[test]
fn anthropic_blocks_to_text_and_calls() {
    // Interleaved text and calls, a block kind not in the canonical payload, and a stop
    // that is neither done nor tool use.
    let body = anthropic(
        json!([
            { "type": "thinking", "thinking": "Two orders.", "signature": "c2ln" },
            { "type": "text", "text": "First A-1." },
            tool_use("toolu_1", json!({ "order": "A-1" })),
            { "type": "text", "text": "Then A-2." },
            tool_use("toolu_2", json!({ "order": "A-2" })),
        ]),
        json!("tool_use"),
        usage(),
    );
    let expected = ModelResponse {
        message: message(
            Role::Assistant,
            Content::Parts(vec![Part::text("First A-1."), Part::text("Then A-2.")]),
        )
        .with_tool_calls(vec![
            ToolCall::new("toolu_1", "lookup_order", json!({ "order": "A-1" })),
            ToolCall::new("toolu_2", "lookup_order", json!({ "order": "A-2" })),
        ]),
        usage: Usage {
            input: 5,
            output: 7,
            cache_read: 0,
            cache_write: 0,
            cache_write_1h: 0,
        },
        stop_reason: "tool_use".into(),
        outcome: Outcome::ToolCalls,
        output: Vec::new(),
    };
    assert_eq!(from_anthropic_response(body.as_bytes()).unwrap(), expected);

    let body = anthropic(
        json!([
            { "type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": { "query": "weather" } },
            { "type": "text", "text": "Searching." },
        ]),
        json!("pause_turn"),
        usage(),
    );
    let response = from_anthropic_response(body.as_bytes()).unwrap();
    assert_eq!(response.message, message(Role::Assistant, "Searching."));
    assert_eq!(
        (response.stop_reason.as_str(), response.outcome),
        ("pause_turn", Outcome::Stopped)
    );

    // A stop that cut the output short keeps the text and drops the calls.
    let body = anthropic(
        json!([{ "type": "text", "text": "Let me" }, tool_use("toolu_1", json!({}))]),
        json!("model_context_window_exceeded"),
        usage(),
    );
    let response = from_anthropic_response(body.as_bytes()).unwrap();
    assert_eq!(response.message, message(Role::Assistant, "Let me"));
    assert_eq!(response.outcome, Outcome::Stopped);

    let body = anthropic(
        json!([tool_use("toolu_1", json!({}))]),
        json!("stop_sequence"),
        usage(),
    );
    assert_eq!(
        err(from_anthropic_response, &body),
        "`$.stop_reason` is `stop_sequence` but `$.content[0]` is a `tool_use` block, which comes only with `tool_use` or a stop that cut the output short"
    );
}

#[test]
fn openai_arguments_ids_and_finish_reasons() {
    let parse = from_openai_response;
    let calls = |calls: Value| json!({ "role": "assistant", "content": null, "tool_calls": calls, "refusal": null });
    let body = openai(
        calls(json!([
            function("call_1", "{}"),
            function("call_2", "{\"order\": A-2}")
        ])),
        json!("tool_calls"),
        json!(null),
    );
    assert_eq!(
        err(parse, &body),
        "`$.choices[0].message.tool_calls[1].function.arguments` is not JSON: expected value at line 1 column 11"
    );
    let body = openai(
        calls(json!([function("call_1", "[1, 2]")])),
        json!("stop"),
        json!(null),
    );
    assert_eq!(
        err(parse, &body),
        "`$.choices[0].message.tool_calls[0].function.arguments` must hold a JSON object, not an array"
    );
    let body = openai(
        calls(json!([function("call_1", "null")])),
        json!("tool_calls"),
        json!(null),
    );
    assert_eq!(
        err(parse, &body),
        "`$.choices[0].message.tool_calls[0].function.arguments` must hold a JSON object, not `null`"
    );
    let body = openai(
        calls(json!([
            function("call_1", "{}"),
            function("call_2", "{}"),
            function("call_1", "{}")
        ])),
        json!("tool_calls"),
        json!(null),
    );
    assert_eq!(
        err(parse, &body),
        "`$.choices[0].message.tool_calls[2].id` repeats the tool call id `call_1` of `$.choices[0].message.tool_calls[0].id`"
    );
    let body = openai(
        calls(
            json!([{ "id": "call_1", "type": "custom", "custom": { "name": "grep", "input": "x" } }]),
        ),
        json!("tool_calls"),
        json!(null),
    );
    assert_eq!(
        err(parse, &body),
        "`$.choices[0].message.tool_calls[0].type` is `custom`, expected `function`"
    );
    let body = openai(calls(json!({})), json!("tool_calls"), json!(null));
    assert_eq!(
        err(parse, &body),
        "`$.choices[0].message.tool_calls` must be an array or null"
    );
    let body = openai(
        calls(json!([function("call_1", "{}")])),
        json!(null),
        json!(null),
    );
    assert_eq!(
        err(parse, &body),
        "`$.choices[0].finish_reason` is null: a complete response always has one (only a stream's partial message has none)"
    );
    let mut body: Value = serde_json::from_str(&body).unwrap();
    body["choices"][0]
        .as_object_mut()
        .unwrap()
        .remove("finish_reason");
    assert_eq!(
        err(parse, &body.to_string()),
        "`$.choices[0].finish_reason` is missing"
    );
    let body = openai(
        json!({ "role": "assistant", "content": ["Hi"] }),
        json!("stop"),
        json!(null),
    );
    assert_eq!(
        err(parse, &body),
        "`$.choices[0].message.content` must be a string or null"
    );
    let body = openai(
        json!({ "role": "user", "content": "Hi" }),
        json!("stop"),
        json!(null),
    );
    assert_eq!(
        err(parse, &body),
        "`$.choices[0].message.role` is `user`, expected `assistant`"
    );
    let body = openai(json!("Hi"), json!("stop"), json!(null));
    assert_eq!(
        err(parse, &body),
        "`$.choices[0].message` must be a JSON object"
    );

    // Cut by the output budget: the calls are dropped, their arguments unread.
    let body = openai(
        calls(json!([function("call_1", "{\"ord")])),
        json!("length"),
        json!(null),
    );
    let response = parse(body.as_bytes()).unwrap();
    assert_eq!(response.message, message(Role::Assistant, ""));
    assert_eq!(response.outcome, Outcome::Stopped);
    // A deprecated `function_call` finish is no tool call of ours: stopped, calls dropped.
    let body = openai(
        calls(json!([function("call_1", "{}")])),
        json!("function_call"),
        json!(null),
    );
    let response = parse(body.as_bytes()).unwrap();
    assert_eq!(
        (response.message.tool_calls.len(), response.outcome),
        (0, Outcome::Stopped)
    );
}

#[test]
fn openai_refusal_choices_and_usage() {
    let parse = from_openai_response;
    let body = openai(
        json!({ "role": "assistant", "content": "partial", "refusal": "I can't help with that." }),
        json!("stop"),
        json!({ "prompt_tokens": 10, "completion_tokens": 5, "prompt_tokens_details": null }),
    );
    let expected = ModelResponse {
        message: message(Role::Assistant, "I can't help with that."),
        usage: Usage {
            input: 10,
            output: 5,
            cache_read: 0,
            cache_write: 0,
            cache_write_1h: 0,
        },
        stop_reason: "refusal".into(),
        outcome: Outcome::Stopped,
        output: Vec::new(),
    };
    assert_eq!(parse(body.as_bytes()).unwrap(), expected);

    let choice = |index: Value, text: &str| json!({ "index": index, "message": { "role": "assistant", "content": text }, "finish_reason": "stop" });
    let completion =
        |choices: Value| json!({ "object": "chat.completion", "choices": choices }).to_string();
    let body = completion(json!([
        choice(json!(1), "second"),
        choice(json!(0), "first")
    ]));
    assert_eq!(
        parse(body.as_bytes()).unwrap().message.content.text(),
        "first"
    );
    let body = completion(json!([choice(json!(1), "second"), { "index": 0, "message": null }]));
    assert_eq!(
        err(parse, &body),
        "`$.choices[1].message` must be a JSON object"
    );
    for choices in [
        json!([]),
        json!([choice(json!(1), "second"), choice(json!("0"), "first")]),
    ] {
        assert_eq!(
            err(parse, &completion(choices)),
            "`$.choices` has no choice with `index` 0"
        );
    }
    assert_eq!(
        err(parse, &completion(json!(null))),
        "`$.choices` must be an array"
    );

    let text = json!({ "role": "assistant", "content": "Hi" });
    let body = openai(
        text.clone(),
        json!("stop"),
        json!({ "prompt_tokens": 3, "completion_tokens": -2 }),
    );
    assert_eq!(
        err(parse, &body),
        "`$.usage.completion_tokens` must be a non-negative integer"
    );
    let body = openai(
        text.clone(),
        json!("stop"),
        json!({ "prompt_tokens": 3, "prompt_tokens_details": { "cache_write_tokens": "1" } }),
    );
    assert_eq!(
        err(parse, &body),
        "`$.usage.prompt_tokens_details.cache_write_tokens` must be a non-negative integer"
    );
    let body = openai(
        text.clone(),
        json!("stop"),
        json!({ "prompt_tokens": 3, "prompt_tokens_details": [] }),
    );
    assert_eq!(
        err(parse, &body),
        "`$.usage.prompt_tokens_details` must be a JSON object"
    );
    let body = openai(text.clone(), json!("stop"), json!(7));
    assert_eq!(err(parse, &body), "`$.usage` must be a JSON object");
    let body = openai(
        text,
        json!("stop"),
        json!({ "prompt_tokens": null, "completion_tokens": 2 }),
    );
    assert_eq!(
        parse(body.as_bytes()).unwrap().usage,
        Usage {
            input: 0,
            output: 2,
            cache_read: 0,
            cache_write: 0,
            cache_write_1h: 0
        }
    );
}

#[test]
fn usage_adds_up_and_saturates() {
    let mut total = Usage::default();
    total.add(&Usage {
        input: 1,
        output: 2,
        cache_read: 3,
        cache_write: 4,
        cache_write_1h: 0,
    });
    total.add(&Usage {
        input: 10,
        output: 20,
        cache_read: 30,
        cache_write: u64::MAX,
        cache_write_1h: 0,
    });
    assert_eq!(
        total,
        Usage {
            input: 11,
            output: 22,
            cache_read: 33,
            cache_write: u64::MAX,
            cache_write_1h: 0
        }
    );
}

#[test]
fn a_response_round_trips_through_its_json() {
    let response =
        from_openai_response(&fixture("openai", "good-parallel-tool-calls.json")).unwrap();
    let text = serde_json::to_string(&response).unwrap();
    assert_eq!(
        serde_json::from_str::<ModelResponse>(&text).unwrap(),
        response
    );
    for (outcome, name) in [
        (Outcome::ToolCalls, "tool_calls"),
        (Outcome::Done, "done"),
        (Outcome::Stopped, "stopped"),
    ] {
        assert_eq!(serde_json::to_value(outcome).unwrap(), json!(name));
    }
}

/// Both parsers on a fixture's bytes, changed: an answer or an error, never a panic.
fn parse_both(body: &[u8]) -> [bool; 2] {
    [
        from_anthropic_response(body).is_ok(),
        from_openai_response(body).is_ok(),
    ]
}

/// Every prefix of every fixture, short of its closing brace, fails as JSON cut short (with
/// the parser of its provider: both parsers read the JSON the same way).
#[test]
fn every_prefix_of_every_fixture_is_an_error() {
    for (provider, parse) in [
        ("anthropic", from_anthropic_response as Parse),
        ("openai", from_openai_response),
    ] {
        for name in fixture_names(provider) {
            let body = fixture(provider, &name);
            for cut in 0..body.trim_ascii_end().len() {
                let e = parse(&body[..cut]).unwrap_err();
                assert!(
                    e.to_string().starts_with("the response is not JSON: "),
                    "{provider}/{name} cut at {cut}: {e}"
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A fixture with one byte replaced, or a span removed, parses or fails but never panics.
    #[test]
    fn a_changed_fixture_never_panics(
        pick in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        len in 0usize..40,
        byte in any::<u8>(),
    ) {
        let names: Vec<(&str, String)> = ["anthropic", "openai"]
            .into_iter()
            .flat_map(|p| fixture_names(p).into_iter().map(move |n| (p, n)))
            .collect();
        let (provider, name) = pick.get(&names);
        let mut body = fixture(provider, name);
        let i = at.index(body.len());
        let mut replaced = body.clone();
        replaced[i] = byte;
        parse_both(&replaced);
        body.drain(i..(i + len).min(body.len()));
        parse_both(&body);
    }
}
