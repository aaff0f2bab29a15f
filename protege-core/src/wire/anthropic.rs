//! Anthropic Messages request bodies.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::{CONVERSATION_START, ModelSpec, late_system};
use crate::cache::{CacheMode, CacheTtl};
use crate::error::Result;
use crate::message::{Content, Message, Part, Request, Role};

/// The `max_tokens` of an Anthropic body when the persona's `[model]` sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 1024;

/// Image types the Messages API accepts as base64 image blocks.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The Messages body for `request`: the system messages before the first other message
/// joined by a blank line into the top-level `system`, each later one a marked text block
/// (`[system] TEXT`) after the blocks of the next user message (a user turn of its own at
/// the end), never under a cache breakpoint, so text a resolver renders after
/// `ThreadHistory` changes neither the cached prefix nor what the next request finds
/// cached; consecutive same-role turns merged into one message of several
/// blocks; tool calls as `tool_use` blocks; tool results as `tool_result` blocks at the
/// start of the following user message; images and documents as base64 `source` blocks;
/// `max_tokens` from the model (default 1024). When the first turn is not a user turn,
/// a user turn `(conversation start)` opens the conversation.
///
/// The Messages API rejects `tool_use`/`tool_result` blocks in a request that declares no
/// tools, so a request without tools (a persona without tools replaying a thread whose
/// earlier runs used some) gets its tool rounds as text: one `[tool call NAME] INPUT`
/// block per call (INPUT as compact JSON) in the assistant turn and one
/// `[tool result NAME] CONTENT` block per result in the following user turn
/// (`[tool error NAME] CONTENT` for a result marked `is_error`). A tool message's `is_error`
/// is the `tool_result`'s `is_error`.
///
/// With `cache = "auto"` (the default), `cache_control: {"type":"ephemeral"}` marks at most
/// three breakpoints: the end of `system` (then a list of one text block), the last block
/// of the last message `ThreadHistory` produced (see [`CacheHints`](crate::CacheHints)), and
/// the last block of the final message before its late system blocks. A marked block is
/// never shortened to a string.
///
/// `cache_ttl = "1h"` marks every breakpoint `{"type":"ephemeral","ttl":"1h"}`; `"auto"`
/// marks the end of `system` and of the history so when the request's
/// [`CacheHints::hour`](crate::CacheHints::hour) says an hour pays, and the final message
/// (whose prefix the next round of a run reads seconds later) for five minutes, so the
/// hour-long breakpoints come before the five-minute one, as the API requires.
pub fn to_anthropic(request: &Request, model: &ModelSpec) -> Result<Value> {
    request.validate()?;
    let marks = match model.cache {
        CacheMode::Off => None,
        CacheMode::Auto => Some(match model.cache_ttl {
            CacheTtl::FiveMinutes => (Ttl::Default, Ttl::Default),
            CacheTtl::OneHour => (Ttl::Hour, Ttl::Hour),
            CacheTtl::Auto if request.cache.hour => (Ttl::Hour, Ttl::FiveMinutes),
            CacheTtl::Auto => (Ttl::Default, Ttl::Default),
        }),
    };
    let cache = marks.is_some();
    let prefix_ttl = marks.map_or(Ttl::Default, |m| m.0);
    let (system, mut turns, late_tail) = merged_turns(request, marks.map(|m| m.0));
    open_and_close(&mut turns, marks.map(|m| m.1), late_tail);
    let mut body = Map::new();
    body.insert("model".into(), Value::from(model.name.clone()));
    body.insert(
        "max_tokens".into(),
        Value::from(model.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    if !system.is_empty() {
        let text = system.join("\n\n");
        let system = if cache {
            let mut block = vec![text_block(&text)];
            mark(&mut block, prefix_ttl);
            Value::Array(block)
        } else {
            Value::from(text)
        };
        body.insert("system".into(), system);
    }
    let messages = turns.into_iter().map(turn_message).collect();
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.input_schema,
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    Ok(Value::Object(body))
}

/// A turn of the body: its role, its blocks, and how many of them (at the start) are tool
/// results.
type Turn = (&'static str, Vec<Value>, usize);

/// The texts of the system messages before the first other message, the other messages
/// as turns, consecutive turns of one role merged (a turn's tool results before its other
/// blocks), later system messages as marked blocks after the next user message, the
/// `ThreadHistory` breakpoint marked; and how many of the last turn's blocks are such
/// late system blocks.
fn merged_turns(request: &Request, cache: Option<Ttl>) -> (Vec<String>, Vec<Turn>, usize) {
    let rounds_as_text = request.tools.is_empty();
    // Tool call id → tool name, for results rendered as text.
    let mut call_names: HashMap<&str, &str> = HashMap::new();
    let mut system = Vec::new();
    let mut turns: Vec<Turn> = Vec::new();
    // Later system text waiting for the next user turn.
    let mut late: Vec<Value> = Vec::new();
    let mut late_tail = 0;
    let mut started = false;
    for (index, m) in request.messages.iter().enumerate() {
        if m.role == Role::System {
            let text = m.content.text();
            if !text.trim().is_empty() {
                match started {
                    true => late.push(text_block(&late_system(&text))),
                    false => system.push(text),
                }
            }
            continue;
        }
        started = true;
        let (role, mut blocks, results) = turn_of(m, rounds_as_text, &mut call_names);
        if blocks.is_empty() {
            continue;
        }
        if let Some(ttl) = cache
            && request.cache.history_end == Some(index)
        {
            mark(&mut blocks, ttl);
        }
        merge(&mut turns, (role, blocks, results));
        late_tail = 0;
        if role == "user" && !late.is_empty() {
            late_tail = late.len();
            merge(&mut turns, ("user", std::mem::take(&mut late), 0));
        }
    }
    if !late.is_empty() {
        let ends_in_user = turns.last().is_some_and(|(role, _, _)| *role == "user");
        late_tail = if ends_in_user { late_tail } else { 0 } + late.len();
        merge(&mut turns, ("user", late, 0));
    }
    (system, turns, late_tail)
}

/// Adds `turn` to `turns`, merged into the last turn when it has the same role (tool
/// results before the turn's other blocks).
fn merge(turns: &mut Vec<Turn>, (role, blocks, results): Turn) {
    match turns.last_mut() {
        Some((last_role, last_blocks, last_results)) if *last_role == role => {
            if results > 0 {
                let at = *last_results;
                last_blocks.splice(at..at, blocks);
                *last_results += results;
            } else {
                last_blocks.extend(blocks);
            }
        }
        _ => turns.push((role, blocks, results)),
    }
}

/// The turn of one message that is not a system message: tool calls as `tool_use` blocks
/// and results as `tool_result` blocks, or both as text when the request declares no tools.
fn turn_of<'a>(
    m: &'a Message,
    rounds_as_text: bool,
    call_names: &mut HashMap<&'a str, &'a str>,
) -> Turn {
    match m.role {
        // System messages go to the top-level `system`: no blocks of a turn.
        Role::System => ("user", Vec::new(), 0),
        Role::User => ("user", content_blocks(&m.content), 0),
        Role::Assistant => {
            let mut blocks = text_blocks(m);
            for c in &m.tool_calls {
                if rounds_as_text {
                    call_names.insert(&c.id, &c.name);
                    // `Value`'s `Display` is compact JSON.
                    let text = format!("[tool call {}] {}", c.name, c.input);
                    blocks.push(text_block(&text));
                } else {
                    blocks.push(json!({
                        "type": "tool_use", "id": c.id, "name": c.name, "input": c.input,
                    }));
                }
            }
            ("assistant", blocks, 0)
        }
        Role::Tool if rounds_as_text => {
            let id = m.tool_call_id.as_deref().unwrap_or_default();
            let name = call_names.get(id).copied().unwrap_or_default();
            let kind = if m.is_error { "error" } else { "result" };
            let text = format!("[tool {kind} {name}] {}", m.content.text());
            let mut blocks = vec![text_block(&text)];
            blocks.extend(media_blocks(&m.content));
            // The result's image stays with its line, before the turn's other blocks.
            let results = blocks.len();
            ("user", blocks, results)
        }
        Role::Tool => {
            // An image or document a tool returned goes inside its result, after the text.
            let media = media_blocks(&m.content);
            let content = if media.is_empty() {
                Value::from(m.content.text())
            } else {
                let mut blocks = text_blocks(m);
                blocks.extend(media);
                Value::Array(blocks)
            };
            let mut block = json!({
                "type": "tool_result",
                "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
                "content": content,
            });
            if m.is_error {
                block["is_error"] = Value::Bool(true);
            }
            ("user", vec![block], 1)
        }
    }
}

/// Opens the conversation with a user turn when it does not start with one, trims a final
/// assistant turn (a prefill must not end in whitespace), and marks the last breakpoint:
/// the last block before the `late_tail` late system blocks that end the last turn (the
/// last block when there is none before them).
fn open_and_close(turns: &mut Vec<Turn>, cache: Option<Ttl>, late_tail: usize) {
    if turns.first().is_none_or(|(role, _, _)| *role != "user") {
        turns.insert(0, ("user", vec![text_block(CONVERSATION_START)], 0));
    }
    if let Some((role, blocks, _)) = turns.last_mut()
        && *role == "assistant"
        && let Some(Value::Object(last)) = blocks.last_mut()
        && let Some(Value::String(text)) = last.get_mut("text")
    {
        let trimmed = text.trim_end().to_owned();
        *text = trimmed;
    }
    if let Some(ttl) = cache
        && let Some((_, blocks, _)) = turns.last_mut()
    {
        let end = blocks.len().saturating_sub(late_tail).max(1);
        let end = end.min(blocks.len());
        mark(&mut blocks[..end], ttl);
    }
}

/// A turn as a message of the body: a lone unmarked text block as a plain string.
fn turn_message((role, blocks, _): Turn) -> Value {
    let content = match blocks.as_slice() {
        [Value::Object(only)]
            if only.get("type") == Some(&Value::from("text"))
                && !only.contains_key("cache_control") =>
        {
            only["text"].clone()
        }
        _ => Value::Array(blocks),
    };
    json!({ "role": role, "content": content })
}

/// How long a breakpoint lasts, as its `cache_control` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ttl {
    /// `{"type":"ephemeral"}`: five minutes, the bytes of `cache_ttl = "5m"` (the default).
    Default,
    /// `{"type":"ephemeral","ttl":"5m"}`, next to hour-long breakpoints (`auto`).
    FiveMinutes,
    /// `{"type":"ephemeral","ttl":"1h"}`.
    Hour,
}

/// Puts a cache breakpoint lasting `ttl` on the last of `blocks`.
fn mark(blocks: &mut [Value], ttl: Ttl) {
    if let Some(Value::Object(last)) = blocks.last_mut() {
        let control = match ttl {
            Ttl::Default => json!({ "type": "ephemeral" }),
            Ttl::FiveMinutes => json!({ "type": "ephemeral", "ttl": "5m" }),
            Ttl::Hour => json!({ "type": "ephemeral", "ttl": "1h" }),
        };
        last.insert("cache_control".into(), control);
    }
}

fn text_block(text: &str) -> Value {
    json!({ "type": "text", "text": text })
}

/// The text of an assistant message as blocks (none when blank: empty text blocks are
/// not allowed).
fn text_blocks(m: &Message) -> Vec<Value> {
    let text = m.content.text();
    if text.trim().is_empty() {
        Vec::new()
    } else {
        vec![text_block(&text)]
    }
}

fn content_blocks(content: &Content) -> Vec<Value> {
    content.parts().iter().filter_map(part_block).collect()
}

/// The blocks of the images and documents of `content`.
fn media_blocks(content: &Content) -> Vec<Value> {
    content.media().into_iter().filter_map(part_block).collect()
}

/// The block of one part (none for blank text: empty text blocks are not allowed).
fn part_block(part: &Part) -> Option<Value> {
    Some(match part {
        Part::Text { text } if text.trim().is_empty() => return None,
        Part::Text { text } => text_block(text),
        Part::Image { media_type, data } if IMAGE_TYPES.contains(&media_type.as_str()) => json!({
            "type": "image",
            "source": { "type": "base64", "media_type": media_type, "data": data },
        }),
        Part::Image { media_type, .. } => text_block(&format!(
            "(an image of type {media_type} is attached; this provider does not accept it)"
        )),
        Part::Document {
            filename,
            media_type,
            data,
        } => json!({
            "type": "document",
            "source": { "type": "base64", "media_type": media_type, "data": data },
            "title": filename,
        }),
    })
}
