//! OpenAI Chat Completions request bodies.

use serde_json::{Map, Value, json};

use super::ModelSpec;
use crate::error::Result;
use crate::message::{Content, Message, Part, Request, Role};

/// Whether `model` is an o-series reasoning model, which takes `max_completion_tokens`.
pub(super) fn is_o_series(model: &str) -> bool {
    let mut chars = model.chars();
    chars.next() == Some('o') && chars.next().is_some_and(|c| c.is_ascii_digit())
}

/// The Chat Completions body for `request`: `model`, `messages`, `tools` when any, and
/// `max_tokens` (or `max_completion_tokens` for o-series models) when the model has a
/// budget. A tool message's `is_error` is not sent (the API has no such field). Images become `image_url` data URLs, documents `file` parts, tool calls carry
/// their `arguments` as a JSON string; a tool message's images and documents follow the
/// round's tool messages as a user message (tool messages take text only). A request without any message (a scheduled chain
/// that contributed nothing) gets one user message `(conversation start)`, as Anthropic
/// bodies do, since the API rejects an empty `messages` array. With `cache = "auto"`,
/// the request's cache key (see [`cache_key`](crate::cache_key)) is sent as
/// `prompt_cache_key`, so consecutive requests of one conversation reach the same cache.
pub fn to_openai(request: &Request, model: &ModelSpec) -> Result<Value> {
    request.validate()?;
    let mut body = Map::new();
    body.insert("model".into(), Value::from(model.name.clone()));
    let messages: Vec<Value> = if request.messages.is_empty() {
        vec![json!({ "role": "user", "content": super::CONVERSATION_START })]
    } else {
        messages(&request.messages)
    };
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.input_schema,
                    }
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(max) = model.max_tokens {
        let key = if is_o_series(&model.name) {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body.insert(key.into(), Value::from(max));
    }
    super::openai_cache_fields(request, model, &mut body);
    Ok(Value::Object(body))
}

/// The messages of the body. Tool messages take text only: the images and documents tool
/// results returned follow the round's tool messages as one user message, each after a
/// text part naming its call.
fn messages(messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len());
    let mut media: Vec<Part> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        out.push(message(m));
        if m.role != Role::Tool {
            continue;
        }
        let parts = m.content.media();
        if !parts.is_empty() {
            let id = m.tool_call_id.as_deref().unwrap_or_default();
            media.push(Part::text(format!("(returned by tool call {id})")));
            media.extend(parts.into_iter().cloned());
        }
        let round_ends = messages
            .get(i + 1)
            .is_none_or(|next| next.role != Role::Tool);
        if round_ends && !media.is_empty() {
            let parts = Content::Parts(std::mem::take(&mut media));
            out.push(json!({ "role": "user", "content": user_content(&parts) }));
        }
    }
    out
}

fn message(m: &Message) -> Value {
    let mut out = Map::new();
    out.insert("role".into(), Value::from(m.role.as_str()));
    match m.role {
        Role::User => {
            out.insert("content".into(), user_content(&m.content));
        }
        Role::Assistant if !m.tool_calls.is_empty() => {
            let text = m.content.text();
            out.insert(
                "content".into(),
                if text.is_empty() {
                    Value::Null
                } else {
                    Value::from(text)
                },
            );
            let calls = m
                .tool_calls
                .iter()
                .map(|c| {
                    json!({
                        "id": c.id,
                        "type": "function",
                        "function": { "name": c.name, "arguments": c.input.to_string() },
                    })
                })
                .collect();
            out.insert("tool_calls".into(), Value::Array(calls));
        }
        Role::Tool => {
            out.insert(
                "tool_call_id".into(),
                Value::from(m.tool_call_id.clone().unwrap_or_default()),
            );
            out.insert("content".into(), Value::from(m.content.text()));
        }
        Role::System | Role::Assistant => {
            out.insert("content".into(), Value::from(m.content.text()));
        }
    }
    Value::Object(out)
}

fn user_content(content: &Content) -> Value {
    match content {
        Content::Text(text) => Value::from(text.clone()),
        Content::Parts(parts) => Value::Array(
            parts
                .iter()
                .map(|p| match p {
                    Part::Text { text } => json!({ "type": "text", "text": text }),
                    Part::Image { media_type, data } => json!({
                        "type": "image_url",
                        "image_url": { "url": format!("data:{media_type};base64,{data}") },
                    }),
                    Part::Document {
                        filename,
                        media_type,
                        data,
                    } => json!({
                        "type": "file",
                        "file": {
                            "filename": filename,
                            "file_data": format!("data:{media_type};base64,{data}"),
                        },
                    }),
                })
                .collect(),
        ),
    }
}
