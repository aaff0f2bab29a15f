//! Wire formats: exact OpenAI and Anthropic bodies for every rule.
//!
//! With `PROTEGE_WIRE_OUT=DIR`, every body is also written to `DIR/<test>.<provider>.json`
//! so `.ci/run` can check them with the providers' schemas.

use protege_core::wire::{ModelSpec, to_anthropic, to_openai};
use protege_core::{
    CacheHints, CacheMode, CacheTtl, Conversation, ModelConfig, Part, Request, Role, ToolCall,
    ToolDef, cache_key, hour_pays, message,
};
use serde_json::json;

const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mOQkzsBAAFiAQUv5nCNAAAAAElFTkSuQmCC";
const PDF: &str = "JVBERi0xLjQKMSAwIG9iajw8L1R5cGUvQ2F0YWxvZy9QYWdlcyAyIDAgUj4+ZW5kb2JqCnRyYWlsZXI8PC9Sb290IDEgMCBSPj4KJSVFT0YK";

/// A model without cache markers: the tests below are about everything else.
fn model(name: &str, max: Option<u32>) -> ModelSpec {
    ModelSpec::new(name).max_tokens(max).cache(CacheMode::Off)
}

fn save(test: &str, provider: &str, body: &serde_json::Value) {
    if let Ok(dir) = std::env::var("PROTEGE_WIRE_OUT") {
        std::fs::create_dir_all(&dir).unwrap();
        let path = std::path::Path::new(&dir).join(format!("{test}.{provider}.json"));
        std::fs::write(path, serde_json::to_string_pretty(body).unwrap()).unwrap();
    }
}

fn openai(test: &str, r: &Request, m: &ModelSpec) -> String {
    let body = to_openai(r, m).unwrap();
    save(test, "openai", &body);
    serde_json::to_string(&body).unwrap()
}

fn anthropic(test: &str, r: &Request, m: &ModelSpec) -> String {
    let body = to_anthropic(r, m).unwrap();
    save(test, "anthropic", &body);
    serde_json::to_string(&body).unwrap()
}

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
            message(Role::Tool, "not found").with_tool_call_id("call_2"),
            message(Role::System, "Be brief."),
            message(Role::User, "Thanks. And A-2?"),
        ],
        tools: vec![ToolDef {
            name: "lookup_order".into(),
            description: "Find an order".into(),
            input_schema: json!({"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}),
        }],
        ..Default::default()
    }
}

#[test]
fn openai_tool_round_with_arguments_as_json_string() {
    assert_eq!(
        openai("tool_round", &tool_round(), &model("gpt-4o", Some(512))),
        concat!(
            r#"{"model":"gpt-4o","messages":[{"role":"system","content":"You are support."},"#,
            r#"{"role":"user","content":"Where is A-1?"},"#,
            r#"{"role":"assistant","content":null,"tool_calls":["#,
            r#"{"id":"call_1","type":"function","function":{"name":"lookup_order","arguments":"{\"order\":\"A-1\"}"}},"#,
            r#"{"id":"call_2","type":"function","function":{"name":"lookup_order","arguments":"{\"order\":\"A-2\"}"}}]},"#,
            r#"{"role":"tool","tool_call_id":"call_1","content":"{\"status\":\"shipped\"}"},"#,
            r#"{"role":"tool","tool_call_id":"call_2","content":"not found"},"#,
            r#"{"role":"system","content":"Be brief."},"#,
            r#"{"role":"user","content":"Thanks. And A-2?"}],"#,
            r#""tools":[{"type":"function","function":{"name":"lookup_order","description":"Find an order","parameters":{"type":"object","properties":{"order":{"type":"string"}},"required":["order"]}}}],"#,
            r#""max_tokens":512}"#
        )
    );
}

#[test]
fn openai_o_series_uses_max_completion_tokens_and_omits_empty_tools() {
    let r = Request {
        messages: vec![message(Role::User, "hi")],
        tools: vec![],
        ..Default::default()
    };
    assert_eq!(
        openai("o_series", &r, &model("o3-mini", Some(100))),
        r#"{"model":"o3-mini","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":100}"#
    );
    assert_eq!(
        openai("no_budget", &r, &model("gpt-4o", None)),
        r#"{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}"#
    );
}

fn multimodal() -> Request {
    Request {
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
        tools: vec![],
        ..Default::default()
    }
}

#[test]
fn openai_images_as_data_urls_and_documents_as_file_parts() {
    assert_eq!(
        openai("multimodal", &multimodal(), &model("gpt-4o", None)),
        format!(
            concat!(
                r#"{{"model":"gpt-4o","messages":[{{"role":"user","content":[{{"type":"text","text":"see attached"}},"#,
                r#"{{"type":"image_url","image_url":{{"url":"data:image/png;base64,{png}"}}}},"#,
                r#"{{"type":"file","file":{{"filename":"receipt.pdf","file_data":"data:application/pdf;base64,{pdf}"}}}}]}}]}}"#
            ),
            png = PNG,
            pdf = PDF
        )
    );
}

#[test]
fn anthropic_system_first_late_system_in_the_next_user_turn_results_first() {
    assert_eq!(
        anthropic(
            "tool_round",
            &tool_round(),
            &model("claude-sonnet-4-5", None)
        ),
        concat!(
            r#"{"model":"claude-sonnet-4-5","max_tokens":1024,"system":"You are support.","#,
            r#""messages":[{"role":"user","content":"Where is A-1?"},"#,
            r#"{"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"lookup_order","input":{"order":"A-1"}},"#,
            r#"{"type":"tool_use","id":"call_2","name":"lookup_order","input":{"order":"A-2"}}]},"#,
            r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"{\"status\":\"shipped\"}"},"#,
            r#"{"type":"tool_result","tool_use_id":"call_2","content":"not found"},"#,
            r#"{"type":"text","text":"Thanks. And A-2?"},"#,
            r#"{"type":"text","text":"[system] Be brief."}]}],"#,
            r#""tools":[{"name":"lookup_order","description":"Find an order","input_schema":{"type":"object","properties":{"order":{"type":"string"}},"required":["order"]}}]}"#
        )
    );
}

#[test]
fn anthropic_merges_consecutive_same_role_turns() {
    let r = Request {
        messages: vec![
            message(Role::User, "first"),
            message(Role::User, "second"),
            message(Role::Assistant, "answer"),
            message(Role::Assistant, "more"),
            message(Role::User, "last"),
        ],
        tools: vec![],
        ..Default::default()
    };
    assert_eq!(
        anthropic("merge", &r, &model("claude-sonnet-4-5", Some(200))),
        concat!(
            r#"{"model":"claude-sonnet-4-5","max_tokens":200,"messages":["#,
            r#"{"role":"user","content":[{"type":"text","text":"first"},{"type":"text","text":"second"}]},"#,
            r#"{"role":"assistant","content":[{"type":"text","text":"answer"},{"type":"text","text":"more"}]},"#,
            r#"{"role":"user","content":"last"}]}"#
        )
    );
}

#[test]
fn anthropic_conversation_start_when_first_turn_is_not_user() {
    let outbound_first = Request {
        messages: vec![
            message(Role::System, "sys"),
            message(Role::Assistant, "We opened this thread."),
            message(Role::User, "reply"),
        ],
        tools: vec![],
        ..Default::default()
    };
    assert_eq!(
        anthropic(
            "starts_with_assistant",
            &outbound_first,
            &model("claude-sonnet-4-5", None)
        ),
        concat!(
            r#"{"model":"claude-sonnet-4-5","max_tokens":1024,"system":"sys","messages":["#,
            r#"{"role":"user","content":"(conversation start)"},"#,
            r#"{"role":"assistant","content":"We opened this thread."},"#,
            r#"{"role":"user","content":"reply"}]}"#
        )
    );
    let only_system = Request {
        messages: vec![message(Role::System, "Summarise.")],
        tools: vec![],
        ..Default::default()
    };
    assert_eq!(
        anthropic(
            "only_system",
            &only_system,
            &model("claude-sonnet-4-5", None)
        ),
        r#"{"model":"claude-sonnet-4-5","max_tokens":1024,"system":"Summarise.","messages":[{"role":"user","content":"(conversation start)"}]}"#
    );
}

#[test]
fn anthropic_images_and_documents_as_base64_sources() {
    assert_eq!(
        anthropic(
            "multimodal",
            &multimodal(),
            &model("claude-sonnet-4-5", None)
        ),
        format!(
            concat!(
                r#"{{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{{"role":"user","content":[{{"type":"text","text":"see attached"}},"#,
                r#"{{"type":"image","source":{{"type":"base64","media_type":"image/png","data":"{png}"}}}},"#,
                r#"{{"type":"document","source":{{"type":"base64","media_type":"application/pdf","data":"{pdf}"}},"title":"receipt.pdf"}}]}}]}}"#
            ),
            png = PNG,
            pdf = PDF
        )
    );
}

#[test]
fn an_empty_request_opens_the_conversation_for_both_providers() {
    let empty = Request {
        messages: vec![],
        tools: vec![],
        ..Default::default()
    };
    assert_eq!(
        openai("empty", &empty, &model("gpt-4o", None)),
        r#"{"model":"gpt-4o","messages":[{"role":"user","content":"(conversation start)"}]}"#
    );
    assert_eq!(
        anthropic("empty", &empty, &model("claude-sonnet-4-5", None)),
        r#"{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"(conversation start)"}]}"#
    );
}

#[test]
fn model_comes_from_override_or_persona_else_error() {
    let persona = ModelConfig {
        provider: None,
        name: Some("claude-sonnet-4-5".into()),
        max_tokens: Some(64),
        cache: CacheMode::Off,
        ..ModelConfig::default()
    };
    assert_eq!(
        ModelSpec::resolve(Some(&persona), None).unwrap(),
        model("claude-sonnet-4-5", Some(64))
    );
    assert_eq!(
        ModelSpec::resolve(Some(&persona), Some("gpt-4o")).unwrap(),
        model("gpt-4o", Some(64))
    );
    assert_eq!(
        ModelSpec::resolve(None, None).unwrap_err().to_string(),
        "no model for the wire format: set `name` in the persona's `[model]` table or pass `--model NAME`"
    );
}

#[test]
fn malformed_requests_are_not_converted() {
    let bad = Request {
        messages: vec![message(Role::Tool, "x").with_tool_call_id("c")],
        tools: vec![],
        ..Default::default()
    };
    assert_eq!(
        to_anthropic(&bad, &model("m", None))
            .unwrap_err()
            .to_string(),
        "message 0: tool message `c` does not follow an assistant message with tool calls"
    );
    assert!(to_openai(&bad, &model("m", None)).is_err());
}

#[test]
fn anthropic_without_tools_renders_tool_rounds_as_text() {
    let mut r = tool_round();
    r.tools.clear();
    assert_eq!(
        anthropic("rounds_as_text", &r, &model("claude-sonnet-4-5", None)),
        concat!(
            r#"{"model":"claude-sonnet-4-5","max_tokens":1024,"system":"You are support.","messages":["#,
            r#"{"role":"user","content":"Where is A-1?"},"#,
            r#"{"role":"assistant","content":[{"type":"text","text":"[tool call lookup_order] {\"order\":\"A-1\"}"},"#,
            r#"{"type":"text","text":"[tool call lookup_order] {\"order\":\"A-2\"}"}]},"#,
            r#"{"role":"user","content":[{"type":"text","text":"[tool result lookup_order] {\"status\":\"shipped\"}"},"#,
            r#"{"type":"text","text":"[tool result lookup_order] not found"},"#,
            r#"{"type":"text","text":"Thanks. And A-2?"},"#,
            r#"{"type":"text","text":"[system] Be brief."}]}]}"#
        )
    );
    // OpenAI keeps the structured calls: that API accepts them without tools.
    assert_eq!(
        openai("rounds_without_tools", &r, &model("gpt-4o", None)),
        concat!(
            r#"{"model":"gpt-4o","messages":[{"role":"system","content":"You are support."},"#,
            r#"{"role":"user","content":"Where is A-1?"},"#,
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"lookup_order","arguments":"{\"order\":\"A-1\"}"}},"#,
            r#"{"id":"call_2","type":"function","function":{"name":"lookup_order","arguments":"{\"order\":\"A-2\"}"}}]},"#,
            r#"{"role":"tool","tool_call_id":"call_1","content":"{\"status\":\"shipped\"}"},"#,
            r#"{"role":"tool","tool_call_id":"call_2","content":"not found"},"#,
            r#"{"role":"system","content":"Be brief."},"#,
            r#"{"role":"user","content":"Thanks. And A-2?"}]}"#
        )
    );
}

#[test]
fn anthropic_text_rounds_keep_assistant_text_before_the_calls() {
    let r = Request {
        messages: vec![
            message(Role::User, "Refund A-1?"),
            message(Role::Assistant, "Checking.").with_tool_calls(vec![ToolCall::new(
                "c1",
                "issue_refund",
                json!({"order": "A-1", "amount": 5}),
            )]),
            message(Role::Tool, "").with_tool_call_id("c1"),
        ],
        tools: vec![],
        ..Default::default()
    };
    assert_eq!(
        anthropic(
            "text_round_with_text",
            &r,
            &model("claude-sonnet-4-5", None)
        ),
        concat!(
            r#"{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":["#,
            r#"{"role":"user","content":"Refund A-1?"},"#,
            r#"{"role":"assistant","content":[{"type":"text","text":"Checking."},"#,
            r#"{"type":"text","text":"[tool call issue_refund] {\"order\":\"A-1\",\"amount\":5}"}]},"#,
            r#"{"role":"user","content":"[tool result issue_refund] "}]}"#
        )
    );
}

/// `tool_round()` as a chain would finish it with a history that ends on the last tool
/// result (index 4) and a conversation key.
fn tool_round_with_history() -> Request {
    let mut r = tool_round();
    r.cache = CacheHints {
        history_end: Some(4),
        key: Some("0123456789abcdef".into()),
        hour: false,
    };
    r
}

#[test]
fn anthropic_auto_cache_marks_system_history_end_and_final_block() {
    let cached = ModelSpec::new("claude-sonnet-4-5");
    assert_eq!(cached.cache, CacheMode::Auto);
    assert_eq!(
        anthropic("cache_auto", &tool_round_with_history(), &cached),
        concat!(
            r#"{"model":"claude-sonnet-4-5","max_tokens":1024,"#,
            r#""system":[{"type":"text","text":"You are support.","cache_control":{"type":"ephemeral"}}],"#,
            r#""messages":[{"role":"user","content":"Where is A-1?"},"#,
            r#"{"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"lookup_order","input":{"order":"A-1"}},"#,
            r#"{"type":"tool_use","id":"call_2","name":"lookup_order","input":{"order":"A-2"}}]},"#,
            r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"{\"status\":\"shipped\"}"},"#,
            r#"{"type":"tool_result","tool_use_id":"call_2","content":"not found","cache_control":{"type":"ephemeral"}},"#,
            r#"{"type":"text","text":"Thanks. And A-2?","cache_control":{"type":"ephemeral"}},"#,
            r#"{"type":"text","text":"[system] Be brief."}]}],"#,
            r#""tools":[{"name":"lookup_order","description":"Find an order","input_schema":{"type":"object","properties":{"order":{"type":"string"}},"required":["order"]}}]}"#
        )
    );
    // `off`: the body of a request without hints, byte for byte.
    let off = ModelSpec::new("claude-sonnet-4-5").cache(CacheMode::Off);
    assert_eq!(
        to_anthropic(&tool_round_with_history(), &off).unwrap(),
        to_anthropic(&tool_round(), &model("claude-sonnet-4-5", None)).unwrap()
    );
}

/// `cache_ttl`: `5m` keeps the default bytes, `1h` marks every breakpoint for an hour,
/// `auto` the system and history breakpoints for an hour when the hints say an hour pays,
/// the final one for five minutes, so the hour-long ones come first.
#[test]
fn anthropic_cache_ttl_marks_breakpoints_for_five_minutes_or_an_hour() {
    let spec = |ttl| ModelSpec::new("claude-sonnet-4-5").cache_ttl(ttl);
    let five = ModelSpec::new("claude-sonnet-4-5");
    assert_eq!(five.cache_ttl, CacheTtl::FiveMinutes);
    assert_eq!(
        to_anthropic(&tool_round_with_history(), &spec(CacheTtl::FiveMinutes)).unwrap(),
        to_anthropic(&tool_round_with_history(), &five).unwrap()
    );
    let controls = |body: &str| -> Vec<String> {
        body.match_indices("\"cache_control\":{")
            .map(|(i, _)| {
                let rest = &body[i + 16..];
                rest[..rest.find('}').unwrap() + 1].to_owned()
            })
            .collect()
    };
    let hour = anthropic(
        "cache_ttl_1h",
        &tool_round_with_history(),
        &spec(CacheTtl::OneHour),
    );
    assert_eq!(controls(&hour), [r#"{"type":"ephemeral","ttl":"1h"}"#; 3]);
    let mut hinted = tool_round_with_history();
    hinted.cache.hour = true;
    let auto = anthropic("cache_ttl_auto", &hinted, &spec(CacheTtl::Auto));
    assert_eq!(
        controls(&auto),
        [
            r#"{"type":"ephemeral","ttl":"1h"}"#,
            r#"{"type":"ephemeral","ttl":"1h"}"#,
            r#"{"type":"ephemeral","ttl":"5m"}"#
        ]
    );
    // Without the hint `auto` is `5m`, byte for byte.
    assert_eq!(
        to_anthropic(&tool_round_with_history(), &spec(CacheTtl::Auto)).unwrap(),
        to_anthropic(&tool_round_with_history(), &five).unwrap()
    );
    // `cache = "off"` marks nothing whatever the lifetime.
    let off = spec(CacheTtl::OneHour).cache(CacheMode::Off);
    assert!(!anthropic("cache_ttl_off", &hinted, &off).contains("cache_control"));
}

/// `cache_ttl` on Chat Completions: `1h`, and `auto` when the hints say an hour pays, ask
/// for extended retention (`prompt_cache_retention: "24h"`) beside the cache key; `5m`,
/// `auto` without the hint and `cache = "off"` send no retention (the model's default).
#[test]
fn openai_cache_ttl_asks_for_extended_retention_when_an_hour_pays() {
    let spec = |ttl| ModelSpec::new("gpt-4.1").cache_ttl(ttl);
    let fields = |body: &str| {
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        (
            body["prompt_cache_key"].clone(),
            body["prompt_cache_retention"].clone(),
        )
    };
    let mut hinted = tool_round_with_history();
    hinted.cache.hour = true;
    let hour = openai(
        "openai_cache_ttl_1h",
        &tool_round_with_history(),
        &spec(CacheTtl::OneHour),
    );
    assert_eq!(fields(&hour), (json!("0123456789abcdef"), json!("24h")));
    let auto = openai("openai_cache_ttl_auto", &hinted, &spec(CacheTtl::Auto));
    assert_eq!(fields(&auto), (json!("0123456789abcdef"), json!("24h")));
    let five = openai("openai_cache_ttl_5m", &hinted, &spec(CacheTtl::FiveMinutes));
    assert_eq!(fields(&five), (json!("0123456789abcdef"), json!(null)));
    let unhinted = openai(
        "openai_cache_ttl_auto_unhinted",
        &tool_round_with_history(),
        &spec(CacheTtl::Auto),
    );
    assert_eq!(unhinted, five);
    let off = spec(CacheTtl::OneHour).cache(CacheMode::Off);
    assert_eq!(
        fields(&openai("openai_cache_ttl_off", &hinted, &off)),
        (json!(null), json!(null))
    );
}

/// The rule of `cache_ttl = "auto"` over the latest eight gaps: when the request reads
/// the prefix the previous one left, an hour pays when 1.15 × the middle gaps (five
/// minutes to an hour) exceed 0.75 × (1 + the gaps over an hour); when it writes the
/// prefix again, when 1.15 × the middle gaps exceed 0.75 × (the gaps + 1).
#[test]
fn an_hour_pays_when_the_thread_answers_within_the_hour() {
    let minutes = |ms: &[i64]| -> Vec<chrono::Duration> {
        ms.iter().map(|m| chrono::Duration::minutes(*m)).collect()
    };
    let pays = |ms: &[i64]| hour_pays(&minutes(ms));
    assert!(!pays(&[]));
    assert!(!pays(&[2, 3, 4]));
    // One middle gap is not enough to write the prefix for an hour (1.15 < 1.5); two are
    // (2.3 > 2.25).
    assert!(!pays(&[30]));
    assert!(pays(&[30, 30]));
    assert!(!pays(&[61, 61]));
    // Read within the hour after an hour-long write: the hour stays.
    assert!(pays(&[30, 30, 30]));
    assert!(pays(&[30, 30, 2]));
    // Written again after a long gap: 3.45 < 3.75.
    assert!(!pays(&[30, 30, 300, 30]));
    assert!(!pays(&[2, 30]));
    // Only the latest eight count.
    assert!(pays(&[600, 600, 600, 600, 30, 30, 30, 30, 30, 30, 30, 30]));
}

#[test]
fn anthropic_auto_cache_without_history_or_system_marks_only_the_final_block() {
    let r = Request {
        messages: vec![
            message(Role::User, "first"),
            message(Role::Assistant, "answer"),
            message(Role::User, "last"),
        ],
        ..Default::default()
    };
    assert_eq!(
        anthropic("cache_final_only", &r, &ModelSpec::new("claude-sonnet-4-5")),
        concat!(
            r#"{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":["#,
            r#"{"role":"user","content":"first"},{"role":"assistant","content":"answer"},"#,
            r#"{"role":"user","content":[{"type":"text","text":"last","cache_control":{"type":"ephemeral"}}]}]}"#
        )
    );
    // A history that ends on the final message gets one breakpoint there, not two.
    let mut r = r;
    r.cache.history_end = Some(2);
    assert_eq!(
        anthropic(
            "cache_history_is_final",
            &r,
            &ModelSpec::new("claude-sonnet-4-5")
        ),
        concat!(
            r#"{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":["#,
            r#"{"role":"user","content":"first"},{"role":"assistant","content":"answer"},"#,
            r#"{"role":"user","content":[{"type":"text","text":"last","cache_control":{"type":"ephemeral"}}]}]}"#
        )
    );
}

#[test]
fn anthropic_auto_cache_marks_a_history_end_merged_into_the_final_turn() {
    // The history ends on an unanswered inbound message; the trailing user turn is merged
    // into the same Anthropic message, so the two breakpoints are two blocks of it.
    let r = Request {
        messages: vec![
            message(Role::System, "Be brief."),
            message(Role::User, "older question"),
            message(Role::User, "the new mail"),
        ],
        cache: CacheHints {
            history_end: Some(1),
            key: None,
            hour: false,
        },
        ..Default::default()
    };
    assert_eq!(
        anthropic("cache_merged", &r, &ModelSpec::new("claude-sonnet-4-5")),
        concat!(
            r#"{"model":"claude-sonnet-4-5","max_tokens":1024,"#,
            r#""system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],"#,
            r#""messages":[{"role":"user","content":["#,
            r#"{"type":"text","text":"older question","cache_control":{"type":"ephemeral"}},"#,
            r#"{"type":"text","text":"the new mail","cache_control":{"type":"ephemeral"}}]}]}"#
        )
    );
}

#[test]
fn openai_auto_cache_sends_the_conversation_key() {
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
        openai("cache_key", &r, &ModelSpec::new("gpt-4o").max_tokens(100)),
        r#"{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"max_tokens":100,"prompt_cache_key":"0123456789abcdef"}"#
    );
    assert_eq!(
        openai("cache_key_off", &r, &model("gpt-4o", Some(100))),
        r#"{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"max_tokens":100}"#
    );
}

#[test]
fn cache_keys_are_short_stable_digests_of_persona_and_conversation() {
    assert_eq!(
        cache_key("support", Conversation::Thread(7)),
        "6e9df058ffda7b90"
    );
    assert_eq!(
        cache_key("support", Conversation::Thread(8)),
        "f983aff18d717f70"
    );
    assert_eq!(
        cache_key("plain", Conversation::Responsibility("r")),
        "9d5e48c21ed4754b"
    );
    assert_eq!(cache_key("support", Conversation::Thread(7)).len(), 16);
}

/// System text after the conversation started waits for the next user turn; with none after
/// it, it is a user turn of its own at the end, and the top-level `system` keeps only the
/// text before the first turn (so a per-request line never changes the cached prefix).
#[test]
fn late_system_text_with_no_user_turn_after_it_ends_the_conversation() {
    let r = Request {
        messages: vec![
            message(Role::System, "You are support."),
            message(Role::User, "Where is A-1?"),
            message(Role::System, "Today is Monday."),
            message(Role::Assistant, "Shipped."),
        ],
        tools: vec![],
        ..Default::default()
    };
    assert_eq!(
        anthropic("late_system_last", &r, &model("claude-sonnet-4-5", None)),
        concat!(
            r#"{"model":"claude-sonnet-4-5","max_tokens":1024,"system":"You are support.","messages":["#,
            r#"{"role":"user","content":"Where is A-1?"},"#,
            r#"{"role":"assistant","content":"Shipped."},"#,
            r#"{"role":"user","content":"[system] Today is Monday."}]}"#
        )
    );
    assert_eq!(
        openai("late_system_last", &r, &model("gpt-4o", None)),
        concat!(
            r#"{"model":"gpt-4o","messages":[{"role":"system","content":"You are support."},"#,
            r#"{"role":"user","content":"Where is A-1?"},"#,
            r#"{"role":"system","content":"Today is Monday."},"#,
            r#"{"role":"assistant","content":"Shipped."}]}"#
        )
    );
}

/// A round in which `read_attachment` returned an image and a PDF, and a lookup text.
fn attachment_round() -> Request {
    let image = Part::Image {
        media_type: "image/png".into(),
        data: PNG.into(),
    };
    let pdf = Part::Document {
        filename: "receipt.pdf".into(),
        media_type: "application/pdf".into(),
        data: PDF.into(),
    };
    Request {
        messages: vec![
            message(Role::User, "See my label and receipt."),
            message(Role::Assistant, "").with_tool_calls(vec![
                ToolCall::new(
                    "call_1",
                    "read_attachment",
                    json!({"attachment_id": "att-1"}),
                ),
                ToolCall::new("call_2", "lookup_order", json!({"order": "A-1"})),
                ToolCall::new(
                    "call_3",
                    "read_attachment",
                    json!({"attachment_id": "att-2"}),
                ),
            ]),
            message(
                Role::Tool,
                vec![Part::text(r#"{"attachment_id":"att-1"}"#), image],
            )
            .with_tool_call_id("call_1"),
            message(Role::Tool, "shipped").with_tool_call_id("call_2"),
            message(
                Role::Tool,
                vec![Part::text(r#"{"attachment_id":"att-2"}"#), pdf],
            )
            .with_tool_call_id("call_3"),
        ],
        tools: vec![
            ToolDef {
                name: "read_attachment".into(),
                description: "Read an attachment".into(),
                input_schema: json!({"type": "object", "properties": {"attachment_id": {"type": "string"}}, "required": ["attachment_id"]}),
            },
            ToolDef {
                name: "lookup_order".into(),
                description: "Find an order".into(),
                input_schema: json!({"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}),
            },
        ],
        ..Default::default()
    }
}

#[test]
fn openai_puts_the_images_tools_returned_in_a_user_message_after_the_round() {
    let body = openai(
        "attachment_round",
        &attachment_round(),
        &model("gpt-4o", None),
    );
    let messages: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        messages["messages"].as_array().unwrap()[2..],
        [
            json!({"role": "tool", "tool_call_id": "call_1", "content": r#"{"attachment_id":"att-1"}"#}),
            json!({"role": "tool", "tool_call_id": "call_2", "content": "shipped"}),
            json!({"role": "tool", "tool_call_id": "call_3", "content": r#"{"attachment_id":"att-2"}"#}),
            json!({"role": "user", "content": [
                {"type": "text", "text": "(returned by tool call call_1)"},
                {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}},
                {"type": "text", "text": "(returned by tool call call_3)"},
                {"type": "file", "file": {"filename": "receipt.pdf", "file_data": format!("data:application/pdf;base64,{PDF}")}},
            ]}),
        ]
    );
}

#[test]
fn anthropic_puts_the_images_tools_returned_inside_their_results() {
    let body = anthropic(
        "attachment_round",
        &attachment_round(),
        &model("claude-sonnet-4-5", Some(100)),
    );
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        body["messages"][2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": [
                {"type": "text", "text": r#"{"attachment_id":"att-1"}"#},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
            ]},
            {"type": "tool_result", "tool_use_id": "call_2", "content": "shipped"},
            {"type": "tool_result", "tool_use_id": "call_3", "content": [
                {"type": "text", "text": r#"{"attachment_id":"att-2"}"#},
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF}, "title": "receipt.pdf"},
            ]},
        ]})
    );
    // Without tools the rounds go as text, the image after its result's line.
    let mut no_tools = attachment_round();
    no_tools.tools.clear();
    let body = anthropic(
        "attachment_round_as_text",
        &no_tools,
        &model("claude-sonnet-4-5", Some(100)),
    );
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        body["messages"][2]["content"].as_array().unwrap()[0..2],
        [
            json!({"type": "text", "text": r#"[tool result read_attachment] {"attachment_id":"att-1"}"#}),
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}),
        ]
    );
}
