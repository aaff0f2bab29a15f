//! Property: every request that `build_request` accepts converts to OpenAI and Anthropic
//! bodies that keep the providers' pairing rules.
//!
//! Cases: `PROPTEST_CASES` (default 256). With `PROTEGE_WIRE_OUT=DIR` the first bodies are
//! also written there for the providers' schema check in `.ci/run`.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use protege_core::wire::{ModelSpec, to_anthropic, to_openai};
use protege_core::{
    Content, Message, Part, Request, Role, ToolCall, ToolDef, build_request, message,
};
use serde_json::{Value, json};

const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mOQkzsBAAFiAQUv5nCNAAAAAElFTkSuQmCC";

/// One piece of a conversation.
#[derive(Debug, Clone)]
enum Piece {
    Text(Role, String),
    Image(String),
    /// An assistant turn (with optional text) calling tools, then one result per call.
    Round(String, Vec<(String, String)>),
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("  \n".to_owned()),
        "[a-zA-Z0-9 .,!?\n]{1,40}",
        "\\PC{0,20}",
    ]
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        (
            prop_oneof![Just(Role::System), Just(Role::User), Just(Role::Assistant)],
            text()
        )
            .prop_map(|(r, t)| Piece::Text(r, t)),
        text().prop_map(Piece::Image),
        (
            text(),
            prop::collection::vec(("[a-z_]{1,12}", text()), 1..4)
        )
            .prop_map(|(t, calls)| Piece::Round(t, calls)),
    ]
}

fn request(pieces: &[Piece], with_tools: bool, final_user: Option<String>) -> Option<Request> {
    let mut messages: Vec<Message> = Vec::new();
    let mut names = HashSet::new();
    let mut next_id = 0;
    for p in pieces {
        match p {
            Piece::Text(role, t) => messages.push(message(*role, t.as_str())),
            Piece::Image(t) => messages.push(message(
                Role::User,
                Content::Parts(vec![
                    Part::text(t.as_str()),
                    Part::Image {
                        media_type: "image/png".into(),
                        data: PNG.into(),
                    },
                ]),
            )),
            Piece::Round(t, calls) => {
                let mut tool_calls = Vec::new();
                let mut results = Vec::new();
                for (name, result) in calls {
                    next_id += 1;
                    let id = format!("call_{next_id}");
                    names.insert(name.clone());
                    tool_calls.push(ToolCall::new(&id, name, json!({"n": next_id})));
                    results.push(message(Role::Tool, result.as_str()).with_tool_call_id(id));
                }
                messages.push(message(Role::Assistant, t.as_str()).with_tool_calls(tool_calls));
                messages.extend(results);
            }
        }
    }
    let tools = if with_tools {
        let mut names: Vec<String> = names.into_iter().collect();
        names.sort();
        names
            .into_iter()
            .map(|name| ToolDef {
                name,
                description: "a tool".into(),
                input_schema: json!({"type": "object"}),
            })
            .collect()
    } else {
        Vec::new()
    };
    build_request(final_user.map(Content::Text), tools, messages).ok()
}

fn blocks(content: &Value) -> Vec<Value> {
    match content {
        Value::String(s) => vec![json!({"type": "text", "text": s})],
        Value::Array(a) => a.clone(),
        _ => panic!("content is neither a string nor blocks: {content}"),
    }
}

/// The Anthropic pairing and shape rules.
fn check_anthropic(body: &Value, with_tools: bool) -> Result<(), String> {
    let messages = body["messages"].as_array().ok_or("no messages")?;
    if messages.first().map(|m| &m["role"]) != Some(&json!("user")) {
        return Err("the first message is not a user turn".into());
    }
    let mut open: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().ok_or("no role")?;
        if i > 0 && messages[i - 1]["role"] == m["role"] {
            return Err(format!("messages {} and {i} have the same role", i - 1));
        }
        let blocks = blocks(&m["content"]);
        if blocks.is_empty() {
            return Err(format!("message {i} is empty"));
        }
        let mut answered = Vec::new();
        let mut seen_other = false;
        for b in &blocks {
            match b["type"].as_str() {
                Some("text") => {
                    if b["text"].as_str().is_none_or(|t| t.trim().is_empty()) {
                        return Err(format!("message {i} has a blank text block"));
                    }
                    seen_other = true;
                }
                Some("tool_use") => {
                    if !with_tools {
                        return Err(format!("message {i} has tool_use without tools"));
                    }
                    if role != "assistant" {
                        return Err(format!("tool_use in a {role} message {i}"));
                    }
                }
                Some("tool_result") => {
                    if !with_tools {
                        return Err(format!("message {i} has tool_result without tools"));
                    }
                    if seen_other {
                        return Err(format!("message {i}: a tool_result after other blocks"));
                    }
                    answered.push(b["tool_use_id"].as_str().unwrap_or_default().to_owned());
                }
                _ => seen_other = true,
            }
        }
        if role == "user" {
            let mut expected = std::mem::take(&mut open);
            expected.sort();
            answered.sort();
            if expected != answered {
                return Err(format!(
                    "message {i} answers {answered:?}, expected {expected:?}"
                ));
            }
        } else {
            open = blocks
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| b["id"].as_str().unwrap_or_default().to_owned())
                .collect();
        }
    }
    if !open.is_empty() {
        return Err(format!("calls {open:?} are never answered"));
    }
    Ok(())
}

/// The OpenAI pairing rule: the tool messages right after an assistant message answer
/// exactly its calls.
fn check_openai(body: &Value) -> Result<(), String> {
    let messages = body["messages"].as_array().ok_or("no messages")?;
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        if m["role"] == "tool" {
            return Err(format!("tool message {i} answers nothing"));
        }
        i += 1;
        if let Some(calls) = m["tool_calls"].as_array() {
            let mut expected: Vec<&str> = calls.iter().filter_map(|c| c["id"].as_str()).collect();
            let mut answered = Vec::new();
            while i < messages.len() && messages[i]["role"] == "tool" {
                answered.push(messages[i]["tool_call_id"].as_str().unwrap_or_default());
                i += 1;
            }
            expected.sort_unstable();
            answered.sort_unstable();
            if expected != answered {
                return Err(format!("calls {expected:?} answered by {answered:?}"));
            }
            for c in calls {
                let args = c["function"]["arguments"].as_str().ok_or("no arguments")?;
                serde_json::from_str::<Value>(args).map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(())
}

static SAVED: AtomicUsize = AtomicUsize::new(0);

fn save(provider: &str, body: &Value) {
    if let Ok(dir) = std::env::var("PROTEGE_WIRE_OUT") {
        let n = SAVED.fetch_add(1, Ordering::Relaxed);
        if n < 200 {
            std::fs::create_dir_all(&dir).unwrap();
            let path = std::path::Path::new(&dir).join(format!("prop-{n}.{provider}.json"));
            std::fs::write(path, serde_json::to_string_pretty(body).unwrap()).unwrap();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(256),
        ..ProptestConfig::default()
    })]

    #[test]
    fn accepted_requests_convert_to_well_paired_bodies(
        pieces in prop::collection::vec(piece(), 0..10),
        with_tools in any::<bool>(),
        final_user in prop::option::of("[a-zA-Z ?]{1,20}"),
    ) {
        let Some(request) = request(&pieces, with_tools, final_user) else {
            return Ok(());
        };
        let model = ModelSpec::new("claude-sonnet-4-5");
        let anthropic = to_anthropic(&request, &model).unwrap();
        prop_assert_eq!(check_anthropic(&anthropic, with_tools), Ok(()), "{}", anthropic);
        let model = ModelSpec::new("gpt-4o");
        let openai = to_openai(&request, &model).unwrap();
        prop_assert_eq!(check_openai(&openai), Ok(()), "{}", openai);
        save("anthropic", &anthropic);
        save("openai", &openai);
    }
}
