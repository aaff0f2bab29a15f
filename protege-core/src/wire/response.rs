//! Provider responses: the body of an OpenAI Chat Completions or Anthropic Messages answer
//! as a [`ModelResponse`], the canonical assistant [`Message`] with the [`Usage`] billed and
//! why the model stopped (OpenAI Responses answers: `openai_responses.rs`, with the helpers
//! of this file).
//!
//! The body is walked as a [`serde_json::Value`], so every error names the JSON path of
//! what is wrong (`$.content[2].input`, `$.usage.input_tokens`). Fields these functions do
//! not read are ignored, whatever their value.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, ErrorKind, Result};
use crate::message::{Content, Message, Part, Role, ToolCall, message};

/// What one provider answer says: the assistant message, the usage billed, why it stopped.
///
/// ```
/// use protege::wire::{Outcome, from_openai_response};
/// let body = br#"{"object": "chat.completion", "choices": [{"index": 0,
///     "message": {"role": "assistant", "content": "Hello!", "refusal": null},
///     "finish_reason": "stop"}],
///     "usage": {"prompt_tokens": 19, "completion_tokens": 3, "total_tokens": 22}}"#;
/// let response = from_openai_response(body)?;
/// assert_eq!(response.message.content.text(), "Hello!");
/// assert_eq!((response.usage.input, response.usage.output), (19, 3));
/// assert_eq!(response.outcome, Outcome::Done);
/// # Ok::<(), protege::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelResponse {
    /// The assistant message: its text, and its tool calls (inputs are JSON objects) when
    /// the outcome is [`Outcome::ToolCalls`]; any other outcome leaves it without calls.
    pub message: Message,
    /// The tokens billed for the request and the answer.
    pub usage: Usage,
    /// The provider's own value: `end_turn`, `tool_use`, `max_tokens`, `stop_sequence`,
    /// `refusal`, ... (Anthropic `stop_reason`); `stop`, `tool_calls`, `length`,
    /// `content_filter`, ... (OpenAI `finish_reason`), or `refusal` for an OpenAI message
    /// whose `refusal` is set; `completed`, or the `incomplete_details.reason` of an
    /// incomplete answer (`max_output_tokens`, `content_filter`, ...), for OpenAI Responses.
    pub stop_reason: String,
    /// What the caller does next, whichever the provider.
    pub outcome: Outcome,
    /// The output items of an OpenAI Responses answer that the next request of its run sends
    /// back as input items, as the answer gave them and in its order: its `message` and
    /// `function_call` items and its `reasoning` items with their `encrypted_content`.
    /// Empty for the other formats, whose next request is built from `message` alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output: Vec<Value>,
}

/// What a response asks of the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The model called tools: run each, answer it with a tool message, and ask again.
    ToolCalls,
    /// The model finished its turn.
    Done,
    /// The output was cut short or withheld (an output budget reached, a content filter, a
    /// refusal, a paused turn, a stop reason this version does not know): the message keeps
    /// its text only, since a call the model did not finish is no call to run.
    Stopped,
}

/// The tokens one response (or several, [added](Usage::add) up) billed, in four counts
/// that mean the same for both providers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens neither read from nor written to the prompt cache: Anthropic
    /// `input_tokens`; OpenAI `prompt_tokens` less `prompt_tokens_details.cached_tokens`
    /// and `cache_write_tokens` (0 rather than below), so the four counts add up to what the
    /// provider billed once each.
    pub input: u64,
    /// Output tokens: Anthropic `output_tokens`, OpenAI `completion_tokens`.
    pub output: u64,
    /// Input tokens read from the prompt cache: Anthropic `cache_read_input_tokens`, OpenAI
    /// `prompt_tokens_details.cached_tokens`.
    pub cache_read: u64,
    /// Input tokens written to the prompt cache: Anthropic `cache_creation_input_tokens`,
    /// OpenAI `prompt_tokens_details.cache_write_tokens` (0 where OpenAI does not report it).
    pub cache_write: u64,
    /// Of `cache_write`, the tokens written for an hour: Anthropic
    /// `cache_creation.ephemeral_1h_input_tokens` (the rest were written for five minutes);
    /// 0 for OpenAI.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_1h: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Adds the counts of `other` to these, each stopping at `u64::MAX` instead of
    /// overflowing: the usage of a conversation of several requests.
    pub fn add(&mut self, other: &Usage) {
        self.input = self.input.saturating_add(other.input);
        self.output = self.output.saturating_add(other.output);
        self.cache_read = self.cache_read.saturating_add(other.cache_read);
        self.cache_write = self.cache_write.saturating_add(other.cache_write);
        self.cache_write_1h = self.cache_write_1h.saturating_add(other.cache_write_1h);
    }
}

/// The [`ModelResponse`] of an Anthropic Messages answer: the whole body of a `200` to
/// `POST /v1/messages` that was not streamed.
///
/// The body must be a `message` of role `assistant` with a non-null `stop_reason` and a
/// `usage` object (a count that is null or absent is 0). Of its `content` blocks, the
/// `text` blocks make the text (one block is a [`Content::Text`], several are
/// [`Content::Parts`] of text parts in order, none is an empty text) and the `tool_use`
/// blocks the tool calls, in order; every other kind (`thinking`, `redacted_thinking`,
/// `server_tool_use`, `web_search_tool_result`, ...) is not part of the canonical payload
/// and is skipped. `stop_reason` gives the outcome: `tool_use` is
/// [`ToolCalls`](Outcome::ToolCalls), `end_turn` and `stop_sequence` are
/// [`Done`](Outcome::Done), any other value (`max_tokens`, `refusal`, `pause_turn`,
/// `model_context_window_exceeded`, ...) is [`Stopped`](Outcome::Stopped), whose tool calls
/// are dropped.
///
/// # Errors
///
/// [`ErrorKind::InvalidInput`], one sentence naming the JSON path, when the body is not
/// JSON, is not such a message (an OpenAI body says so), has a field of the wrong type or a
/// negative count, a `tool_use` block whose `input` is not an object, two calls with one
/// id, a `tool_use` stop without a `tool_use` block, or an `end_turn` or `stop_sequence`
/// stop with one.
pub fn from_anthropic_response(body: &[u8]) -> Result<ModelResponse> {
    let root = parse(body)?;
    let root = anthropic_root(&root)?;
    let blocks = anthropic_blocks(root)?;
    let stop_reason = stop_value(root, "$", "stop_reason")?;
    let outcome = match stop_reason {
        "tool_use" if blocks.calls.is_empty() => {
            return Err(invalid(
                "`$.stop_reason` is `tool_use` but `$.content` has no `tool_use` block".into(),
            ));
        }
        "tool_use" => Outcome::ToolCalls,
        "end_turn" | "stop_sequence" => match blocks.first_call {
            Some(at) => {
                return Err(invalid(format!(
                    "`$.stop_reason` is `{stop_reason}` but `$.content[{at}]` is a `tool_use` block, which comes only with `tool_use` or a stop that cut the output short"
                )));
            }
            None => Outcome::Done,
        },
        _ => Outcome::Stopped,
    };
    let usage = object(field(root, "$", "usage")?, "$.usage")?;
    let usage = Usage {
        input: count(usage, "$.usage", "input_tokens")?,
        output: count(usage, "$.usage", "output_tokens")?,
        cache_read: count(usage, "$.usage", "cache_read_input_tokens")?,
        cache_write: count(usage, "$.usage", "cache_creation_input_tokens")?,
        cache_write_1h: match usage.get("cache_creation") {
            None | Some(Value::Null) => 0,
            Some(split) => {
                let split = object(split, "$.usage.cache_creation")?;
                count(split, "$.usage.cache_creation", "ephemeral_1h_input_tokens")?
            }
        },
    };
    Ok(response(
        text_content(blocks.texts),
        blocks.calls,
        usage,
        stop_reason,
        outcome,
    ))
}

/// The [`ModelResponse`] of an OpenAI Chat Completions answer: the whole body of a `200` to
/// `POST /v1/chat/completions` that was not streamed.
///
/// The body must be a `chat.completion`; the choice read is the first whose `index` is 0.
/// Its message's `content` (a string, or null for none) is the text; a non-null `refusal`
/// is the text instead, with the stop reason `refusal` and the outcome
/// [`Stopped`](Outcome::Stopped). Each of `tool_calls` is a call whose `function.arguments`
/// must be a JSON object written as a string, except when `finish_reason` is `length` or
/// `content_filter`: the arguments of a call cut short are not read. `finish_reason` gives
/// the outcome: `tool_calls` is [`ToolCalls`](Outcome::ToolCalls); `stop` is `ToolCalls`
/// when the message has calls (the answer to a forced `tool_choice`) and
/// [`Done`](Outcome::Done) when it has none; any other value (`length`, `content_filter`,
/// ...) is `Stopped`, whose tool calls are dropped. Without a `usage` object every count is
/// 0, as is a count that is null or absent. A key written twice in one object keeps its
/// last value, as the providers' SDKs read it.
///
/// # Errors
///
/// [`ErrorKind::InvalidInput`], one sentence naming the JSON path, when the body is not
/// JSON, is not a chat completion (an Anthropic body says so), has no choice of index 0, a
/// field of the wrong type or a negative count, arguments that are not a JSON object, two
/// calls with one id, or a `tool_calls` finish without a call.
pub fn from_openai_response(body: &[u8]) -> Result<ModelResponse> {
    let root = parse(body)?;
    let root = openai_root(&root)?;
    let (at, choice) = first_choice(root)?;
    let path = format!("{at}.message");
    let msg = object(field(choice, &at, "message")?, &path)?;
    if msg.get("role").and_then(Value::as_str) != Some("assistant") {
        return Err(invalid(format!(
            "`{path}.role` is {}, expected `assistant`",
            shown(msg.get("role"))
        )));
    }
    let finish = stop_value(choice, &at, "finish_reason")?;
    let calls = openai_calls(msg, &path, !matches!(finish, "length" | "content_filter"))?;
    let content = optional_string(msg, &path, "content")?;
    let refusal = optional_string(msg, &path, "refusal")?;
    let usage = openai_usage(root, &CHAT_USAGE)?;
    if let Some(refusal) = refusal {
        let text = Content::Text(refusal.to_owned());
        return Ok(response(text, calls, usage, "refusal", Outcome::Stopped));
    }
    let outcome = match finish {
        "tool_calls" if calls.is_empty() => {
            return Err(invalid(format!(
                "`{at}.finish_reason` is `tool_calls` but `{path}` has no tool calls"
            )));
        }
        "tool_calls" => Outcome::ToolCalls,
        "stop" if !calls.is_empty() => Outcome::ToolCalls,
        "stop" => Outcome::Done,
        _ => Outcome::Stopped,
    };
    let text = Content::Text(content.unwrap_or_default().to_owned());
    Ok(response(text, calls, usage, finish, outcome))
}

pub(super) type Object = Map<String, Value>;

/// The longest value an error quotes, in characters.
const QUOTED_CHARS: usize = 60;

pub(super) fn invalid(detail: String) -> Error {
    Error::new(ErrorKind::InvalidInput, detail)
}

/// What kind of provider answer `obj` looks like, unless it is `not`: for the hint of an
/// error about a body of the wrong format.
pub(super) fn looks_like(obj: &Object, not: &str) -> Option<&'static str> {
    let object = obj.get("object").and_then(Value::as_str);
    let kind = if object.is_some_and(|o| o.starts_with("chat.completion"))
        || obj.contains_key("choices")
    {
        CHAT_COMPLETIONS
    } else if object == Some("response") {
        RESPONSES
    } else if obj.get("type").and_then(Value::as_str) == Some("message") {
        ANTHROPIC
    } else {
        return None;
    };
    (kind != not).then_some(kind)
}

/// The names [`looks_like`] gives.
pub(super) const CHAT_COMPLETIONS: &str = "an OpenAI Chat Completions response";
pub(super) const RESPONSES: &str = "an OpenAI Responses response";
pub(super) const ANTHROPIC: &str = "an Anthropic Messages response";

pub(super) fn parse(body: &[u8]) -> Result<Value> {
    serde_json::from_slice(body).map_err(|e| invalid(format!("the response is not JSON: {e}")))
}

pub(super) fn response(
    content: Content,
    calls: Vec<ToolCall>,
    usage: Usage,
    stop_reason: &str,
    outcome: Outcome,
) -> ModelResponse {
    let calls = if outcome == Outcome::ToolCalls {
        calls
    } else {
        Vec::new()
    };
    ModelResponse {
        message: message(Role::Assistant, content).with_tool_calls(calls),
        usage,
        stop_reason: stop_reason.to_owned(),
        outcome,
        output: Vec::new(),
    }
}

/// One text is a plain text, several are text parts, none is an empty text.
pub(super) fn text_content(mut texts: Vec<String>) -> Content {
    match texts.len() {
        0 => Content::Text(String::new()),
        1 => Content::Text(texts.pop().unwrap_or_default()),
        _ => Content::Parts(texts.into_iter().map(Part::text).collect()),
    }
}

/// `text` cut to [`QUOTED_CHARS`] characters for an error message.
pub(super) fn quoted(text: &str) -> String {
    match text.char_indices().nth(QUOTED_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// A value as an error shows it: `missing`, `null`, a quoted string or number, or its kind.
pub(super) fn shown(value: Option<&Value>) -> String {
    match value {
        None => "missing".into(),
        Some(Value::Null) => "null".into(),
        Some(Value::String(s)) => format!("`{}`", quoted(s)),
        Some(Value::Array(_)) => "an array".into(),
        Some(Value::Object(_)) => "an object".into(),
        Some(other) => format!("`{other}`"),
    }
}

pub(super) fn field<'a>(obj: &'a Object, path: &str, key: &str) -> Result<&'a Value> {
    obj.get(key)
        .ok_or_else(|| invalid(format!("`{path}.{key}` is missing")))
}

pub(super) fn object<'a>(value: &'a Value, path: &str) -> Result<&'a Object> {
    value
        .as_object()
        .ok_or_else(|| invalid(format!("`{path}` must be a JSON object")))
}

pub(super) fn string<'a>(obj: &'a Object, path: &str, key: &str) -> Result<&'a str> {
    field(obj, path, key)?
        .as_str()
        .ok_or_else(|| invalid(format!("`{path}.{key}` must be a string")))
}

/// A string that may be null or absent.
fn optional_string<'a>(obj: &'a Object, path: &str, key: &str) -> Result<Option<&'a str>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(invalid(format!("`{path}.{key}` must be a string or null"))),
    }
}

/// A token count: null or absent is 0.
pub(super) fn count(obj: &Object, path: &str, key: &str) -> Result<u64> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(0),
        Some(value) => value
            .as_u64()
            .ok_or_else(|| invalid(format!("`{path}.{key}` must be a non-negative integer"))),
    }
}

/// `stop_reason` or `finish_reason`, which a complete response always has.
fn stop_value<'a>(obj: &'a Object, path: &str, key: &str) -> Result<&'a str> {
    match field(obj, path, key)? {
        Value::String(s) => Ok(s),
        Value::Null => Err(invalid(format!(
            "`{path}.{key}` is null: a complete response always has one (only a stream's partial message has none)"
        ))),
        _ => Err(invalid(format!("`{path}.{key}` must be a string"))),
    }
}

/// The tool call ids met so far, with the path of each.
#[derive(Default)]
pub(super) struct SeenIds(HashMap<String, String>);

impl SeenIds {
    pub(super) fn check(&mut self, id: &str, path: String) -> Result<()> {
        if let Some(first) = self.0.get(id) {
            return Err(invalid(format!(
                "`{path}` repeats the tool call id `{}` of `{first}`",
                quoted(id)
            )));
        }
        self.0.insert(id.to_owned(), path);
        Ok(())
    }
}

fn anthropic_root(root: &Value) -> Result<&Object> {
    const NOT: &str = "not an Anthropic Messages response";
    let Value::Object(obj) = root else {
        return Err(invalid(format!(
            "{NOT}: the body is {}, expected an object",
            shown(Some(root))
        )));
    };
    if obj.get("type").and_then(Value::as_str) != Some("message") {
        let hint = match looks_like(obj, ANTHROPIC) {
            Some(other) => format!("; the body looks like {other}"),
            None => String::new(),
        };
        return Err(invalid(format!(
            "{NOT}: `$.type` is {}, expected `message`{hint}",
            shown(obj.get("type"))
        )));
    }
    if obj.get("role").and_then(Value::as_str) != Some("assistant") {
        return Err(invalid(format!(
            "{NOT}: `$.role` is {}, expected `assistant`",
            shown(obj.get("role"))
        )));
    }
    Ok(obj)
}

/// What the content blocks of an Anthropic message hold for the canonical payload.
struct Blocks {
    texts: Vec<String>,
    calls: Vec<ToolCall>,
    /// The index of the first `tool_use` block.
    first_call: Option<usize>,
}

fn anthropic_blocks(root: &Object) -> Result<Blocks> {
    let Value::Array(content) = field(root, "$", "content")? else {
        return Err(invalid("`$.content` must be an array".into()));
    };
    let mut blocks = Blocks {
        texts: Vec::new(),
        calls: Vec::new(),
        first_call: None,
    };
    let mut ids = SeenIds::default();
    for (i, block) in content.iter().enumerate() {
        let path = format!("$.content[{i}]");
        let block = object(block, &path)?;
        match string(block, &path, "type")? {
            "text" => blocks.texts.push(string(block, &path, "text")?.to_owned()),
            "tool_use" => {
                let id = string(block, &path, "id")?;
                ids.check(id, format!("{path}.id"))?;
                let name = string(block, &path, "name")?;
                let input = field(block, &path, "input")?;
                object(input, &format!("{path}.input"))?;
                blocks.calls.push(ToolCall::new(id, name, input.clone()));
                blocks.first_call.get_or_insert(i);
            }
            _ => {}
        }
    }
    Ok(blocks)
}

fn openai_root(root: &Value) -> Result<&Object> {
    const NOT: &str = "not an OpenAI Chat Completions response";
    let Value::Object(obj) = root else {
        return Err(invalid(format!(
            "{NOT}: the body is {}, expected an object",
            shown(Some(root))
        )));
    };
    if obj.get("object").and_then(Value::as_str) != Some("chat.completion") {
        let hint = match looks_like(obj, CHAT_COMPLETIONS) {
            Some(other) => format!("; the body looks like {other}"),
            None => String::new(),
        };
        return Err(invalid(format!(
            "{NOT}: `$.object` is {}, expected `chat.completion`{hint}",
            shown(obj.get("object"))
        )));
    }
    Ok(obj)
}

/// The first choice whose `index` is 0, with its path.
fn first_choice(root: &Object) -> Result<(String, &Object)> {
    let Value::Array(choices) = field(root, "$", "choices")? else {
        return Err(invalid("`$.choices` must be an array".into()));
    };
    for (k, choice) in choices.iter().enumerate() {
        if choice.get("index").and_then(Value::as_u64) == Some(0) {
            let path = format!("$.choices[{k}]");
            let choice = object(choice, &path)?;
            return Ok((path, choice));
        }
    }
    Err(invalid("`$.choices` has no choice with `index` 0".into()))
}

/// The tool calls of the message at `path`; their arguments are read when `read_arguments`
/// (they are `null` otherwise, for calls that are dropped).
fn openai_calls(msg: &Object, path: &str, read_arguments: bool) -> Result<Vec<ToolCall>> {
    let calls = match msg.get("tool_calls") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(calls)) => calls,
        Some(_) => {
            return Err(invalid(format!(
                "`{path}.tool_calls` must be an array or null"
            )));
        }
    };
    let mut ids = SeenIds::default();
    let mut out = Vec::with_capacity(calls.len());
    for (i, call) in calls.iter().enumerate() {
        let at = format!("{path}.tool_calls[{i}]");
        let call = object(call, &at)?;
        let id = string(call, &at, "id")?;
        ids.check(id, format!("{at}.id"))?;
        if let Some(kind) = call.get("type")
            && kind.as_str() != Some("function")
        {
            return Err(invalid(format!(
                "`{at}.type` is {}, expected `function`",
                shown(Some(kind))
            )));
        }
        let function_path = format!("{at}.function");
        let function = object(field(call, &at, "function")?, &function_path)?;
        let name = string(function, &function_path, "name")?;
        let arguments = string(function, &function_path, "arguments")?;
        let input = if read_arguments {
            arguments_object(arguments, &format!("{function_path}.arguments"))?
        } else {
            Value::Null
        };
        out.push(ToolCall::new(id, name, input));
    }
    Ok(out)
}

/// The JSON object a call's `arguments` string holds.
pub(super) fn arguments_object(arguments: &str, path: &str) -> Result<Value> {
    match serde_json::from_str::<Value>(arguments) {
        Ok(input @ Value::Object(_)) => Ok(input),
        Ok(other) => Err(invalid(format!(
            "`{path}` must hold a JSON object, not {}",
            match other {
                Value::Array(_) => "an array".to_owned(),
                Value::String(_) => "a string".to_owned(),
                other => format!("`{other}`"),
            }
        ))),
        Err(e) => Err(invalid(format!("`{path}` is not JSON: {e}"))),
    }
}

/// The names an OpenAI usage object gives its counts: Chat Completions' or Responses'.
pub(super) struct UsageKeys {
    /// The input tokens, cached ones included.
    pub(super) input: &'static str,
    /// The object holding `cached_tokens` and `cache_write_tokens`.
    pub(super) details: &'static str,
    /// The output tokens.
    pub(super) output: &'static str,
}

/// Chat Completions' usage.
const CHAT_USAGE: UsageKeys = UsageKeys {
    input: "prompt_tokens",
    details: "prompt_tokens_details",
    output: "completion_tokens",
};

/// The usage of an OpenAI answer, its names `keys`.
pub(super) fn openai_usage(root: &Object, keys: &UsageKeys) -> Result<Usage> {
    let usage = match root.get("usage") {
        None | Some(Value::Null) => return Ok(Usage::default()),
        Some(usage) => object(usage, "$.usage")?,
    };
    let details_path = format!("$.usage.{}", keys.details);
    let (cached, written) = match usage.get(keys.details) {
        None | Some(Value::Null) => (0, 0),
        Some(details) => {
            let details = object(details, &details_path)?;
            (
                count(details, &details_path, "cached_tokens")?,
                count(details, &details_path, "cache_write_tokens")?,
            )
        }
    };
    Ok(Usage {
        // The input tokens less those read from and written to the cache, as Anthropic's
        // `input_tokens` counts: the four counts add up to the input.
        input: count(usage, "$.usage", keys.input)?
            .saturating_sub(cached)
            .saturating_sub(written),
        output: count(usage, "$.usage", keys.output)?,
        cache_read: cached,
        cache_write: written,
        cache_write_1h: 0,
    })
}
