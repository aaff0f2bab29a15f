//! What a provider's prompt cache would serve of a request body: the body cut into the
//! units a cache matches (tools, `system` blocks, message blocks), and the tokens of the
//! prefix two consecutive bodies share.

use serde_json::{Map, Value};

use crate::context::Provider;
use crate::tokens::estimate_tokens;

/// How many blocks before a breakpoint Anthropic looks for an earlier cache entry.
const LOOKBACK_BLOCKS: usize = 20;

/// One unit of a body's cacheable prefix, in the order the provider reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixUnit {
    /// What must be identical for two bodies to share this unit: the role, whether it
    /// opens a message, and the unit's JSON without its `cache_control`.
    pub key: String,
    /// The unit's tokens: characters / 4 of its compact JSON (without `cache_control`),
    /// rounded up.
    pub tokens: usize,
    /// Whether the unit carries a `cache_control` breakpoint (Anthropic).
    pub breakpoint: bool,
}

/// The tokens of one unit: the project's token estimate over its compact JSON (without
/// `cache_control`). The one place the report counts tokens, so a real tokenizer can
/// replace the estimate here.
pub(crate) fn unit_tokens(json: &str) -> usize {
    estimate_tokens(json)
}

/// The units of a body in the provider's cache order. Anthropic: each tool, each `system`
/// block, then each block of each message; OpenAI: each tool, then each message whole (a
/// Responses body: its `instructions`, then each `input` item whole).
pub fn prefix_units(body: &Value, provider: Provider) -> Vec<PrefixUnit> {
    let mut units = Vec::new();
    let tools = body.get("tools").and_then(Value::as_array);
    for tool in tools.into_iter().flatten() {
        units.push(unit("tool", true, tool));
    }
    let messages = body.get("messages").and_then(Value::as_array);
    match provider {
        Provider::Anthropic => {
            match body.get("system") {
                Some(Value::String(text)) => units.push(unit("system", true, &text_block(text))),
                Some(Value::Array(blocks)) => {
                    for (i, block) in blocks.iter().enumerate() {
                        units.push(unit("system", i == 0, block));
                    }
                }
                _ => {}
            }
            for m in messages.into_iter().flatten() {
                let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
                match m.get("content") {
                    Some(Value::String(text)) => units.push(unit(role, true, &text_block(text))),
                    Some(Value::Array(blocks)) => {
                        for (i, block) in blocks.iter().enumerate() {
                            units.push(unit(role, i == 0, block));
                        }
                    }
                    _ => {}
                }
            }
        }
        Provider::Openai => {
            // A Responses body: its `instructions`, then each `input` item whole.
            if let Some(Value::String(text)) = body.get("instructions") {
                units.push(unit("system", true, &text_block(text)));
            }
            let items = body.get("input").and_then(Value::as_array);
            for m in messages
                .into_iter()
                .flatten()
                .chain(items.into_iter().flatten())
            {
                let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
                units.push(unit(role, true, m));
            }
        }
    }
    units
}

/// The tokens of `current` a prompt cache would serve after `previous` was sent: the
/// longest prefix the two share, cut back to what the provider caches. Anthropic caches
/// a prefix only up to a breakpoint of `previous`, and finds it only from a breakpoint of
/// `current` at most 20 blocks later; OpenAI caches any shared prefix (of whole messages).
pub fn cached_tokens(previous: &[PrefixUnit], current: &[PrefixUnit], provider: Provider) -> usize {
    let shared = previous
        .iter()
        .zip(current)
        .take_while(|(a, b)| a.key == b.key)
        .count();
    let end = match provider {
        Provider::Openai => shared,
        Provider::Anthropic => {
            let found_from = |p: usize| {
                current
                    .iter()
                    .enumerate()
                    .skip(p)
                    .take(LOOKBACK_BLOCKS + 1)
                    .any(|(_, u)| u.breakpoint)
            };
            (0..shared)
                .rev()
                .find(|&p| previous[p].breakpoint && found_from(p))
                .map_or(0, |p| p + 1)
        }
    };
    current[..end].iter().map(|u| u.tokens).sum()
}

fn text_block(text: &str) -> Value {
    let mut block = Map::new();
    block.insert("type".into(), Value::from("text"));
    block.insert("text".into(), Value::from(text));
    Value::Object(block)
}

fn unit(role: &str, opens: bool, value: &Value) -> PrefixUnit {
    let (breakpoint, json) = match value {
        Value::Object(map) if map.contains_key("cache_control") => {
            let mut map = map.clone();
            map.remove("cache_control");
            (true, Value::Object(map).to_string())
        }
        other => (false, other.to_string()),
    };
    PrefixUnit {
        tokens: unit_tokens(&json),
        key: format!("{role}\u{0}{opens}\u{0}{json}"),
        breakpoint,
    }
}
