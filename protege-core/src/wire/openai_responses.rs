//! OpenAI Responses: request bodies (`POST /v1/responses`) and their answers.
//!
//! A run in this format keeps no state at OpenAI: every body says `store: false` and
//! carries the whole conversation, and a reasoning model is asked for its reasoning as
//! `encrypted_content`, which the next request of the run sends back as it came.

use serde_json::{Map, Value, json};

use super::response::{
    Object, SeenIds, UsageKeys, arguments_object, field, invalid, object, openai_usage, parse,
    response, shown, string, text_content,
};
use super::{CONVERSATION_START, ModelResponse, ModelSpec, Outcome, late_system};
use crate::error::Result;
use crate::message::{Content, Message, Part, Request, Role, ToolCall};

/// Whether `model` reasons, and so may be asked for `reasoning.encrypted_content`: the
/// o-series (`o1`, `o3`, `o4-mini`, ...), `gpt-5` and its successors except the
/// `gpt-5-chat` models, `codex-*` and `computer-use*`. OpenAI refuses that `include` for
/// any other model ("Encrypted content is not supported with this model").
pub fn is_reasoning_model(model: &str) -> bool {
    if model.starts_with("gpt-5-chat") {
        return false;
    }
    super::openai::is_o_series(model)
        || model.starts_with("gpt-5")
        || model.starts_with("codex-")
        || model.starts_with("computer-use")
}

/// The Responses body for `request`: the system messages before the first other message
/// joined by a blank line into `instructions`, the later ones a user message of marked
/// `input_text` parts (`[system] TEXT`) right after the next user message (at the end when
/// none follows), so text a resolver renders after `ThreadHistory` changes neither the
/// cached prefix nor what the next request finds cached; the other messages as `input`
/// items in order (user and assistant text
/// as `message` items, tool calls as `function_call` items with `arguments` as a JSON
/// string, tool results as `function_call_output` items paired by `call_id`); images as
/// `input_image` data URLs and documents as `input_file` parts; function `tools` (with
/// `strict: false`, since a persona's schemas need not follow the strict rules);
/// `max_output_tokens` when the model has a budget; `store: false`, and for a reasoning
/// model ([`is_reasoning_model`]) `include: ["reasoning.encrypted_content"]`, so a run
/// carries its reasoning between rounds without state kept at OpenAI. A tool message's
/// `is_error` is not sent (the API has no such field). A request without any message gets
/// one user message `(conversation start)`. With `cache = "auto"`, the request's cache key
/// (see [`cache_key`](crate::cache_key)) is sent as `prompt_cache_key`, as Chat Completions
/// bodies do.
///
/// A replayed call to a tool the request does not declare (a persona whose tools changed
/// since, or one without tools) goes as text, as Anthropic bodies without tools do: an
/// assistant message `[tool call NAME] INPUT` (INPUT as compact JSON) and, for its result,
/// a user message `[tool result NAME] CONTENT` (`[tool error NAME] CONTENT` for a result
/// marked `is_error`).
pub fn to_openai_responses(request: &Request, model: &ModelSpec) -> Result<Value> {
    request.validate()?;
    let mut body = Map::with_capacity(8);
    body.insert("model".into(), Value::from(model.name.clone()));
    if let Some(instructions) = instructions(request) {
        body.insert("instructions".into(), Value::from(instructions));
    }
    let mut input = input_items(request);
    if input.is_empty() {
        input.push(text_message("user", CONVERSATION_START.to_owned()));
    }
    body.insert("input".into(), Value::Array(input));
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|t| {
                json_object([
                    ("type", Value::from("function")),
                    ("name", Value::from(t.name.clone())),
                    ("description", Value::from(t.description.clone())),
                    ("parameters", t.input_schema.clone()),
                    ("strict", Value::Bool(false)),
                ])
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(max) = model.max_tokens {
        body.insert("max_output_tokens".into(), Value::from(max));
    }
    super::openai_cache_fields(request, model, &mut body);
    body.insert("store".into(), Value::Bool(false));
    if is_reasoning_model(&model.name) {
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    Ok(Value::Object(body))
}

/// The texts of the system messages before the first other message that are not blank,
/// joined by a blank line.
fn instructions(request: &Request) -> Option<String> {
    let mut joined: Option<String> = None;
    let early = request
        .messages
        .iter()
        .take_while(|m| m.role == Role::System);
    for m in early {
        let text = match &m.content {
            Content::Text(text) => std::borrow::Cow::Borrowed(text.as_str()),
            parts => std::borrow::Cow::Owned(parts.text()),
        };
        if text.trim().is_empty() {
            continue;
        }
        match &mut joined {
            Some(all) => {
                all.push_str("\n\n");
                all.push_str(&text);
            }
            None => joined = Some(text.into_owned()),
        }
    }
    joined
}

/// A JSON object of `pairs`, in order.
fn json_object<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    let mut map = Map::with_capacity(N);
    for (key, value) in pairs {
        map.insert(key.to_owned(), value);
    }
    Value::Object(map)
}

/// The `input` items of the messages that are not system messages.
fn input_items(request: &Request) -> Vec<Value> {
    // Call id → tool name, for the calls that go as text.
    let mut as_text: Vec<(&str, &str)> = Vec::new();
    let mut items = Vec::with_capacity(request.messages.len() + 2);
    // Later system text waiting for the next user message.
    let mut late: Vec<String> = Vec::new();
    let mut started = false;
    for m in &request.messages {
        if m.role != Role::System {
            started = true;
        }
        match m.role {
            Role::System => {
                let text = m.content.text();
                if started && !text.trim().is_empty() {
                    late.push(late_system(&text));
                }
            }
            Role::User => {
                items.push(user_message(&m.content));
                if !late.is_empty() {
                    items.push(late_message(std::mem::take(&mut late)));
                }
            }
            Role::Assistant => assistant_items(m, request, &mut as_text, &mut items),
            Role::Tool => {
                let id = m.tool_call_id.as_deref().unwrap_or_default();
                match as_text.iter().find(|(call, _)| *call == id) {
                    Some((_, name)) => {
                        let kind = if m.is_error { "error" } else { "result" };
                        let text = format!("[tool {kind} {name}] {}", m.content.text());
                        let media = m.content.media();
                        if media.is_empty() {
                            items.push(text_message("user", text));
                        } else {
                            let parts = std::iter::once(Part::text(text))
                                .chain(media.into_iter().cloned())
                                .collect();
                            items.push(user_message(&Content::Parts(parts)));
                        }
                    }
                    None => items.push(function_call_output(id, &m.content)),
                }
            }
        }
    }
    if !late.is_empty() {
        items.push(late_message(late));
    }
    items
}

/// The `function_call_output` item of the result `content` of call `call_id`: its text as
/// a string or, with images or documents (what `read_attachment` returns), its text then
/// each of them as `input_text`, `input_image` and `input_file` parts.
pub fn function_call_output(call_id: &str, content: &Content) -> Value {
    let media = content.media();
    let output = if media.is_empty() {
        Value::from(content.text())
    } else {
        let text = content.text();
        let parts: Vec<Value> = (!text.is_empty())
            .then(|| Part::text(text))
            .iter()
            .chain(media)
            .map(input_part)
            .collect();
        Value::Array(parts)
    };
    json_object([
        ("type", Value::from("function_call_output")),
        ("call_id", Value::from(call_id)),
        ("output", output),
    ])
}

/// The user message of late system `texts`, one `input_text` part each.
fn late_message(texts: Vec<String>) -> Value {
    let parts: Vec<Value> = texts
        .into_iter()
        .map(|text| json!({ "type": "input_text", "text": text }))
        .collect();
    json_object([
        ("type", Value::from("message")),
        ("role", Value::from("user")),
        ("content", Value::Array(parts)),
    ])
}

/// The items of an assistant message: its text (none when blank), then one
/// `function_call` per call of a tool `request` declares and one text message per other
/// call.
fn assistant_items<'a>(
    m: &'a Message,
    request: &Request,
    as_text: &mut Vec<(&'a str, &'a str)>,
    items: &mut Vec<Value>,
) {
    let text = m.content.text();
    if !text.trim().is_empty() {
        items.push(text_message("assistant", text));
    }
    for ToolCall { id, name, input } in &m.tool_calls {
        if request.tools.iter().any(|t| t.name == *name) {
            items.push(json_object([
                ("type", Value::from("function_call")),
                ("call_id", Value::from(id.clone())),
                ("name", Value::from(name.clone())),
                ("arguments", Value::from(input.to_string())),
            ]));
        } else {
            as_text.push((id, name));
            // `Value`'s `Display` is compact JSON.
            items.push(text_message(
                "assistant",
                format!("[tool call {name}] {input}"),
            ));
        }
    }
}

fn text_message(role: &str, text: String) -> Value {
    json_object([
        ("type", Value::from("message")),
        ("role", Value::from(role)),
        ("content", Value::from(text)),
    ])
}

/// A user message: plain text as a string, parts as `input_text`, `input_image` and
/// `input_file` parts.
fn user_message(content: &Content) -> Value {
    let content = match content {
        Content::Text(text) => Value::from(text.clone()),
        Content::Parts(parts) => Value::Array(parts.iter().map(input_part).collect()),
    };
    json_object([
        ("type", Value::from("message")),
        ("role", Value::from("user")),
        ("content", content),
    ])
}

/// A part as an `input_text`, `input_image` or `input_file` part.
fn input_part(part: &Part) -> Value {
    match part {
        Part::Text { text } => json!({ "type": "input_text", "text": text }),
        Part::Image { media_type, data } => json!({
            "type": "input_image",
            "image_url": format!("data:{media_type};base64,{data}"),
            "detail": "auto",
        }),
        Part::Document {
            filename,
            media_type,
            data,
        } => json!({
            "type": "input_file",
            "filename": filename,
            "file_data": format!("data:{media_type};base64,{data}"),
        }),
    }
}

/// The [`ModelResponse`] of an OpenAI Responses answer: the whole body of a `200` to
/// `POST /v1/responses` that was not streamed.
///
/// The body must be a `response` whose `status` is `completed` or `incomplete`. Of its
/// `output` items, the `output_text` parts of the `message` items make the text (one part
/// is a [`Content::Text`], several are [`Content::Parts`] of text parts in order, none is
/// an empty text), and the `function_call` items the tool calls, in order, each with its
/// `call_id` as the call's id and its `arguments`, a JSON object written as a string
/// (not read when the response or the item is `incomplete`). A `refusal` part is the text
/// instead, with the stop reason `refusal` and the outcome [`Stopped`](Outcome::Stopped).
/// `status` gives the outcome: `completed` is [`ToolCalls`](Outcome::ToolCalls) when the
/// output has calls and [`Done`](Outcome::Done) when it has none; `incomplete` is
/// `Stopped`, its stop reason `incomplete_details.reason` (`max_output_tokens`,
/// `content_filter`, ...), and its calls are dropped. The stop reason of a completed
/// answer is `completed`.
///
/// [`ModelResponse::output`] keeps the items the next request of a run sends back, as the
/// answer gave them and in its order: the `message` and `function_call` items, and the
/// `reasoning` items that carry their `encrypted_content` (one without it cannot be sent
/// back with `store: false`, and is left out). Other items (hosted tools' calls, which
/// protege never offers) are skipped. Usage: `input` is `input_tokens` less
/// `input_tokens_details.cached_tokens` and `cache_write_tokens` (0 rather than below),
/// `cache_read` the cached tokens, `cache_write` the tokens written, `output` the
/// `output_tokens`; without a `usage` object every count is 0, as is a count that is null
/// or absent.
///
/// ```
/// use protege::wire::{Outcome, from_openai_responses_response};
/// let body = br#"{"object": "response", "status": "completed", "model": "gpt-5",
///     "output": [{"type": "function_call", "call_id": "call_1", "name": "lookup_order",
///                 "arguments": "{\"order\":\"A-1\"}", "status": "completed"}],
///     "usage": {"input_tokens": 40, "output_tokens": 9,
///               "input_tokens_details": {"cached_tokens": 32}}}"#;
/// let response = from_openai_responses_response(body)?;
/// assert_eq!(response.outcome, Outcome::ToolCalls);
/// assert_eq!(response.message.tool_calls[0].id, "call_1");
/// assert_eq!((response.usage.input, response.usage.cache_read), (8, 32));
/// assert_eq!(response.output.len(), 1);
/// # Ok::<(), protege::Error>(())
/// ```
///
/// # Errors
///
/// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput), one sentence naming the
/// JSON path, when the body is not JSON, is not a Responses answer (a Chat Completions or
/// an Anthropic body says so), is not finished (`queued`, `in_progress`) or `failed` or
/// `cancelled`, has a field of the wrong type or a negative count, an assistant message of
/// another role, arguments that are not a JSON object, or two calls with one `call_id`.
pub fn from_openai_responses_response(body: &[u8]) -> Result<ModelResponse> {
    let root = parse(body)?;
    let root = responses_root(&root)?;
    let status = string(root, "$", "status")?;
    let cut_short = match status {
        "completed" => false,
        "incomplete" => true,
        "queued" | "in_progress" => {
            return Err(invalid(format!(
                "`$.status` is `{status}`: the response is not finished; record it once its status is `completed` or `incomplete`"
            )));
        }
        other => {
            let why = root
                .get("error")
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
                .map(|m| format!(" ({})", super::response::quoted(m)))
                .unwrap_or_default();
            return Err(invalid(format!(
                "`$.status` is `{}`{why}: only a `completed` or `incomplete` response has an answer to record",
                super::response::quoted(other)
            )));
        }
    };
    let output = read_output(root, cut_short)?;
    let usage = openai_usage(root, &RESPONSES_USAGE)?;
    if let Some(refusal) = output.refusal {
        let text = Content::Text(refusal);
        let mut out = response(text, output.calls, usage, "refusal", Outcome::Stopped);
        out.output = output.items;
        return Ok(out);
    }
    let (stop_reason, outcome) = if cut_short {
        let reason = match root.get("incomplete_details") {
            Some(Value::Object(details)) => details
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or("incomplete"),
            _ => "incomplete",
        };
        (reason, Outcome::Stopped)
    } else if output.calls.is_empty() {
        ("completed", Outcome::Done)
    } else {
        ("completed", Outcome::ToolCalls)
    };
    let mut out = response(
        text_content(output.texts),
        output.calls,
        usage,
        stop_reason,
        outcome,
    );
    out.output = output.items;
    Ok(out)
}

fn responses_root(root: &Value) -> Result<&Object> {
    const NOT: &str = "not an OpenAI Responses response";
    let Value::Object(obj) = root else {
        return Err(invalid(format!(
            "{NOT}: the body is {}, expected an object",
            shown(Some(root))
        )));
    };
    if obj.get("object").and_then(Value::as_str) != Some("response") {
        let hint = match super::response::looks_like(obj, super::response::RESPONSES) {
            Some(other) => format!("; the body looks like {other}"),
            None => String::new(),
        };
        return Err(invalid(format!(
            "{NOT}: `$.object` is {}, expected `response`{hint}",
            shown(obj.get("object"))
        )));
    }
    Ok(obj)
}

/// What the output items of a Responses answer hold.
struct Output {
    texts: Vec<String>,
    refusal: Option<String>,
    calls: Vec<ToolCall>,
    /// The items a run sends back.
    items: Vec<Value>,
}

/// The output items; arguments are not read when `cut_short`.
fn read_output(root: &Object, cut_short: bool) -> Result<Output> {
    let Value::Array(items) = field(root, "$", "output")? else {
        return Err(invalid("`$.output` must be an array".into()));
    };
    let mut out = Output {
        texts: Vec::new(),
        refusal: None,
        calls: Vec::new(),
        items: Vec::new(),
    };
    let mut ids = SeenIds::default();
    for (i, item) in items.iter().enumerate() {
        let path = format!("$.output[{i}]");
        let obj = object(item, &path)?;
        match string(obj, &path, "type")? {
            "message" => {
                message_parts(obj, &path, &mut out)?;
                out.items.push(item.clone());
            }
            "function_call" => {
                let id = string(obj, &path, "call_id")?;
                ids.check(id, format!("{path}.call_id"))?;
                let name = string(obj, &path, "name")?;
                let arguments = string(obj, &path, "arguments")?;
                let incomplete = obj.get("status").and_then(Value::as_str) == Some("incomplete");
                let input = if cut_short || incomplete {
                    Value::Null
                } else {
                    arguments_object(arguments, &format!("{path}.arguments"))?
                };
                out.calls.push(ToolCall::new(id, name, input));
                out.items.push(item.clone());
            }
            "reasoning" => match obj.get("encrypted_content") {
                Some(Value::String(encrypted)) if !encrypted.is_empty() => {
                    out.items.push(item.clone());
                }
                None | Some(Value::Null | Value::String(_)) => {}
                Some(_) => {
                    return Err(invalid(format!(
                        "`{path}.encrypted_content` must be a string or null"
                    )));
                }
            },
            _ => {}
        }
    }
    Ok(out)
}

/// The text and refusal parts of the `message` item `obj` at `path`.
fn message_parts(obj: &Object, path: &str, out: &mut Output) -> Result<()> {
    if obj.get("role").and_then(Value::as_str) != Some("assistant") {
        return Err(invalid(format!(
            "`{path}.role` is {}, expected `assistant`",
            shown(obj.get("role"))
        )));
    }
    let Value::Array(parts) = field(obj, path, "content")? else {
        return Err(invalid(format!("`{path}.content` must be an array")));
    };
    for (k, part) in parts.iter().enumerate() {
        let at = format!("{path}.content[{k}]");
        let part = object(part, &at)?;
        match string(part, &at, "type")? {
            "output_text" => out.texts.push(string(part, &at, "text")?.to_owned()),
            "refusal" => {
                let refusal = string(part, &at, "refusal")?;
                match &mut out.refusal {
                    Some(text) => {
                        text.push_str("\n\n");
                        text.push_str(refusal);
                    }
                    None => out.refusal = Some(refusal.to_owned()),
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Responses' usage.
const RESPONSES_USAGE: UsageKeys = UsageKeys {
    input: "input_tokens",
    details: "input_tokens_details",
    output: "output_tokens",
};
