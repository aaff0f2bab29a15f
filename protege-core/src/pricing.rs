//! What tokens cost: a price table per model (USD per million tokens), the prices a
//! persona's `[model] prices` sets over it, and the shortest prefix each provider caches.

use serde::{Deserialize, Serialize};

use crate::context::Provider;

/// The prices of a model in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Prices {
    /// Input tokens neither read from nor written to the prompt cache.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Input tokens read from the prompt cache.
    pub cache_read: f64,
    /// Input tokens written to the prompt cache for five minutes (OpenAI: its automatic
    /// cache, which has no write price, so the input price).
    pub cache_write_5m: f64,
    /// Input tokens written to the prompt cache for an hour.
    pub cache_write_1h: f64,
}

/// `[model] prices` as written: each key replaces the table's price for the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PriceOverrides {
    /// `input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<f64>,
    /// `output`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<f64>,
    /// `cache_read`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    /// `cache_write_5m`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_5m: Option<f64>,
    /// `cache_write_1h`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_1h: Option<f64>,
}

// Prices are finite and not negative (the persona reader refuses others), so equality is
// an equivalence.
impl Eq for PriceOverrides {}

/// The keys of `[model] prices`.
pub const PRICE_KEYS: [&str; 5] = [
    "input",
    "output",
    "cache_read",
    "cache_write_5m",
    "cache_write_1h",
];

/// Anthropic's cache prices as multiples of the input price: a write for five minutes,
/// a write for an hour, a read.
const ANTHROPIC_CACHE: (f64, f64, f64) = (1.25, 2.0, 0.1);

/// The shipped prices, USD per million tokens: (model, input, output, cached input).
///
/// Anthropic: <https://docs.anthropic.com/en/docs/about-claude/pricing>, checked
/// 2025-11-01; the cache prices follow from the input price ([`ANTHROPIC_CACHE`]).
/// OpenAI: <https://platform.openai.com/docs/pricing>, checked 2025-11-01; its cache has
/// no write price, so a write costs the input price.
const TABLE: &[(&str, Provider, f64, f64, f64)] = &[
    ("claude-opus-4-5", Provider::Anthropic, 5.0, 25.0, 0.5),
    ("claude-opus-4-1", Provider::Anthropic, 15.0, 75.0, 1.5),
    ("claude-opus-4", Provider::Anthropic, 15.0, 75.0, 1.5),
    ("claude-sonnet-4-5", Provider::Anthropic, 3.0, 15.0, 0.3),
    ("claude-sonnet-4", Provider::Anthropic, 3.0, 15.0, 0.3),
    ("claude-3-7-sonnet", Provider::Anthropic, 3.0, 15.0, 0.3),
    ("claude-haiku-4-5", Provider::Anthropic, 1.0, 5.0, 0.1),
    ("claude-3-5-haiku", Provider::Anthropic, 0.8, 4.0, 0.08),
    ("gpt-5", Provider::Openai, 1.25, 10.0, 0.125),
    ("gpt-5-mini", Provider::Openai, 0.25, 2.0, 0.025),
    ("gpt-5-nano", Provider::Openai, 0.05, 0.4, 0.005),
    ("gpt-4.1", Provider::Openai, 2.0, 8.0, 0.5),
    ("gpt-4.1-mini", Provider::Openai, 0.4, 1.6, 0.1),
    ("gpt-4.1-nano", Provider::Openai, 0.1, 0.4, 0.025),
    ("gpt-4o", Provider::Openai, 2.5, 10.0, 1.25),
    ("gpt-4o-mini", Provider::Openai, 0.15, 0.6, 0.075),
    ("o3", Provider::Openai, 2.0, 8.0, 0.5),
    ("o4-mini", Provider::Openai, 1.1, 4.4, 0.275),
];

/// The table's entry for `model`: its name, or its name followed by a date
/// (`-20250929`, `-2025-08-07`) or `-latest`.
fn entry(model: &str) -> Option<&'static (&'static str, Provider, f64, f64, f64)> {
    TABLE
        .iter()
        .filter(|e| {
            model
                .strip_prefix(e.0)
                .is_some_and(|rest| rest.is_empty() || rest == "-latest" || is_date(rest))
        })
        .max_by_key(|e| e.0.len())
}

fn is_date(rest: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match rest.strip_prefix('-') {
        Some(d) if d.len() == 8 => digits(d),
        Some(d) => {
            let parts: Vec<&str> = d.split('-').collect();
            matches!(parts.as_slice(), [y, m, day] if y.len() == 4 && m.len() == 2 && day.len() == 2
                && digits(y) && digits(m) && digits(day))
        }
        None => false,
    }
}

impl Prices {
    /// The shipped prices of `model` (`None` for a model the table does not know).
    pub fn of_model(model: &str) -> Option<Prices> {
        let &(_, provider, input, output, read) = entry(model)?;
        Some(match provider {
            Provider::Anthropic => {
                let (w5, w1, _) = ANTHROPIC_CACHE;
                Prices {
                    input,
                    output,
                    cache_read: read,
                    cache_write_5m: input * w5,
                    cache_write_1h: input * w1,
                }
            }
            Provider::Openai => Prices {
                input,
                output,
                cache_read: read,
                cache_write_5m: input,
                cache_write_1h: input,
            },
        })
    }

    /// The prices of `model` with `overrides` over the table's. A model the table does
    /// not know needs at least `input`; its other prices default to the input price
    /// (output: 0, unknown).
    pub fn resolve(model: &str, overrides: Option<&PriceOverrides>) -> Option<Prices> {
        let o = overrides.copied().unwrap_or_default();
        let base = Prices::of_model(model).or_else(|| {
            o.input.map(|input| Prices {
                input,
                output: 0.0,
                cache_read: input,
                cache_write_5m: input,
                cache_write_1h: input,
            })
        })?;
        Some(Prices {
            input: o.input.unwrap_or(base.input),
            output: o.output.unwrap_or(base.output),
            cache_read: o.cache_read.unwrap_or(base.cache_read),
            cache_write_5m: o.cache_write_5m.unwrap_or(base.cache_write_5m),
            cache_write_1h: o.cache_write_1h.unwrap_or(base.cache_write_1h),
        })
    }

    /// The cost in USD of what `usage` reports (its `cache_write_1h` at the hour's write
    /// price, the rest of `cache_write` at the five minutes').
    pub fn usage_cost(&self, usage: &crate::wire::Usage) -> f64 {
        let hour = usage.cache_write_1h.min(usage.cache_write);
        Prices::cost(usage.input, self.input)
            + Prices::cost(usage.output, self.output)
            + Prices::cost(usage.cache_read, self.cache_read)
            + Prices::cost(usage.cache_write - hour, self.cache_write_5m)
            + Prices::cost(hour, self.cache_write_1h)
    }

    /// The cost in USD of `tokens` at `per_million`.
    pub fn cost(tokens: u64, per_million: f64) -> f64 {
        tokens as f64 * per_million / 1_000_000.0
    }
}

/// The fewest tokens a prefix must have for the provider to cache it: Anthropic 2,048
/// for its Haiku models and 1,024 for the others, OpenAI 1,024.
pub fn min_cacheable_tokens(model: &str, provider: Provider) -> usize {
    match provider {
        Provider::Anthropic if model.contains("haiku") => 2048,
        _ => 1024,
    }
}
