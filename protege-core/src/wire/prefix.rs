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
    /// Whether that breakpoint lasts an hour (`"ttl": "1h"`) rather than five minutes.
    pub hour: bool,
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
    let (breakpoint, hour, json) = match value {
        Value::Object(map) if map.contains_key("cache_control") => {
            let mut map = map.clone();
            let hour = map
                .remove("cache_control")
                .is_some_and(|c| c.get("ttl").and_then(Value::as_str) == Some("1h"));
            (true, hour, Value::Object(map).to_string())
        }
        other => (false, false, other.to_string()),
    };
    PrefixUnit {
        tokens: unit_tokens(&json),
        key: format!("{role}\u{0}{opens}\u{0}{json}"),
        breakpoint,
        hour,
    }
}

/// How long OpenAI keeps a prefix after its last use, in the simulation: its in-memory
/// retention is five to ten minutes of inactivity, so five.
pub const OPENAI_RETENTION_MINUTES: i64 = 5;

/// How a [`CacheSim`] bills one request's input tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Billed {
    /// Tokens neither read from nor written to the cache.
    pub input: usize,
    /// Tokens read from the cache.
    pub cache_read: usize,
    /// Tokens written to the cache for five minutes.
    pub cache_write_5m: usize,
    /// Tokens written to the cache for an hour.
    pub cache_write_1h: usize,
    /// Breakpoints not cached: their prefix is shorter than the provider caches.
    pub short_breakpoints: usize,
}

impl Billed {
    /// Every input token of the request.
    pub fn tokens(&self) -> usize {
        self.input + self.cache_read + self.cache_write_5m + self.cache_write_1h
    }

    /// The cost of these tokens in USD at `prices`.
    pub fn cost(&self, prices: &crate::Prices) -> f64 {
        let at = |tokens: usize, price: f64| crate::Prices::cost(tokens as u64, price);
        at(self.input, prices.input)
            + at(self.cache_read, prices.cache_read)
            + at(self.cache_write_5m, prices.cache_write_5m)
            + at(self.cache_write_1h, prices.cache_write_1h)
    }

    /// Adds `other` to these counts.
    pub fn add(&mut self, other: &Billed) {
        self.input += other.input;
        self.cache_read += other.cache_read;
        self.cache_write_5m += other.cache_write_5m;
        self.cache_write_1h += other.cache_write_1h;
        self.short_breakpoints += other.short_breakpoints;
    }
}

/// A provider's prompt cache over the consecutive requests of one conversation, each
/// sent at a given time: what it reads, writes and leaves uncached of each.
///
/// A request reads the longest prefix it shares with the previous request that the
/// provider still holds. Anthropic: up to a breakpoint of the previous request whose
/// lifetime (five minutes, or an hour with `"ttl": "1h"`) the gap since that request does
/// not exceed, found from a breakpoint of the new one at most 20 blocks later; it writes
/// the tokens from there to its last breakpoint, each stretch for the lifetime of the
/// breakpoint that ends it. OpenAI: the whole shared prefix, when the gap is at most
/// [`OPENAI_RETENTION_MINUTES`]; it has no writes. A breakpoint (OpenAI: a shared prefix)
/// of fewer tokens than `min_tokens` is not cached.
#[derive(Debug, Clone)]
pub struct CacheSim {
    provider: Provider,
    min_tokens: usize,
    previous: Vec<PrefixUnit>,
    previous_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl CacheSim {
    /// A cache holding nothing yet.
    pub fn new(provider: Provider, min_tokens: usize) -> Self {
        Self {
            provider,
            min_tokens,
            previous: Vec::new(),
            previous_at: None,
        }
    }

    /// Sends the request of `units` at `at`: what it reads, writes and leaves uncached.
    pub fn request(
        &mut self,
        mut units: Vec<PrefixUnit>,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Billed {
        let gap = self.previous_at.map(|p| at - p);
        let mut billed = Billed::default();
        // Breakpoints whose prefix is too short are none.
        let mut through = 0;
        for u in &mut units {
            through += u.tokens;
            if u.breakpoint && through < self.min_tokens {
                u.breakpoint = false;
                billed.short_breakpoints += 1;
            }
        }
        let shared = self
            .previous
            .iter()
            .zip(&units)
            .take_while(|(a, b)| a.key == b.key)
            .count();
        let alive = |minutes: i64| gap.is_some_and(|g| g <= chrono::Duration::minutes(minutes));
        let total: usize = units.iter().map(|u| u.tokens).sum();
        match self.provider {
            Provider::Openai => {
                let read: usize = units[..shared].iter().map(|u| u.tokens).sum();
                if alive(OPENAI_RETENTION_MINUTES) && read >= self.min_tokens {
                    billed.cache_read = read;
                }
                if total < self.min_tokens {
                    billed.short_breakpoints = 1;
                }
                billed.input = total - billed.cache_read;
            }
            Provider::Anthropic => {
                let previous = &self.previous;
                let found_from = |p: usize| {
                    units
                        .iter()
                        .skip(p)
                        .take(LOOKBACK_BLOCKS + 1)
                        .any(|u| u.breakpoint)
                };
                let read_end = (0..shared)
                    .rev()
                    .find(|&p| {
                        let b = &previous[p];
                        b.breakpoint && alive(if b.hour { 60 } else { 5 }) && found_from(p)
                    })
                    .map_or(0, |p| p + 1);
                billed.cache_read = units[..read_end].iter().map(|u| u.tokens).sum();
                let mut stretch = 0;
                for u in &units[read_end..] {
                    stretch += u.tokens;
                    if u.breakpoint {
                        match u.hour {
                            true => billed.cache_write_1h += stretch,
                            false => billed.cache_write_5m += stretch,
                        }
                        stretch = 0;
                    }
                }
                billed.input = stretch;
            }
        }
        self.previous = units;
        self.previous_at = Some(at);
        billed
    }
}
