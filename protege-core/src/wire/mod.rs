//! Provider wire formats: a [`Request`] as an OpenAI Chat Completions, an
//! OpenAI Responses or an Anthropic Messages request body, ready to send as is, and the
//! provider's answer back as a [`ModelResponse`] ([`from_openai_response`],
//! [`from_openai_responses_response`], [`from_anthropic_response`]).

mod anthropic;
mod openai;
mod openai_responses;
mod prefix;
mod response;

pub use anthropic::{DEFAULT_MAX_TOKENS, to_anthropic};
pub use openai::to_openai;
pub use openai_responses::{
    from_openai_responses_response, function_call_output, is_reasoning_model, to_openai_responses,
};
pub use prefix::{
    Billed, CacheSim, OPENAI_RETENTION_MINUTES, PrefixUnit, cached_tokens, prefix_units,
};
pub use response::{ModelResponse, Outcome, Usage, from_anthropic_response, from_openai_response};

use crate::cache::{CacheMode, CacheTtl};
use crate::context::ModelConfig;
use crate::error::{Error, ErrorKind, Result};
use crate::message::Request;
use serde_json::{Map, Value};

/// The first user turn when a conversation would otherwise not start with one.
const CONVERSATION_START: &str = "(conversation start)";

/// System text a resolver emitted after the conversation's first history or user turn, as
/// the marked text block Anthropic and Responses bodies carry in the next user turn: moved
/// to the top of the request, text that changes per request would change the cached prefix.
fn late_system(text: &str) -> String {
    format!("[system] {text}")
}

/// The model a wire body is for: its name and optional output-token budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    /// The model name, e.g. `gpt-4o` or `claude-sonnet-4-5`.
    pub name: String,
    /// The output token budget (`[model] max_tokens`).
    pub max_tokens: Option<u32>,
    /// Whether the body carries cache markers (`[model] cache`, default `auto`).
    pub cache: CacheMode,
    /// How long the breakpoints last (`[model] cache_ttl`, default `5m`).
    pub cache_ttl: CacheTtl,
}

impl ModelSpec {
    /// A model with no output budget and the default cache mode (`auto`).
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            max_tokens: None,
            cache: CacheMode::Auto,
            cache_ttl: CacheTtl::FiveMinutes,
        }
    }

    /// Sets the output token budget.
    pub fn max_tokens(mut self, max: impl Into<Option<u32>>) -> Self {
        self.max_tokens = max.into();
        self
    }

    /// Sets the cache mode.
    pub fn cache(mut self, cache: CacheMode) -> Self {
        self.cache = cache;
        self
    }

    /// Sets how long the breakpoints last.
    pub fn cache_ttl(mut self, ttl: CacheTtl) -> Self {
        self.cache_ttl = ttl;
        self
    }
}

/// The cache fields of an OpenAI body (Chat Completions and Responses alike), with `cache
/// = "auto"`: the request's cache key as `prompt_cache_key`, and `prompt_cache_retention:
/// "24h"` (extended retention) when caches should outlast the in-memory ones, gone within
/// the hour: `cache_ttl = "1h"`, or `auto` when the thread's rhythm makes an hour pay
/// (`request.cache.hour`). Otherwise no retention is sent and the model's default holds
/// (in memory for the models that have both, 24 hours for those that have only it).
fn openai_cache_fields(request: &Request, model: &ModelSpec, body: &mut Map<String, Value>) {
    if model.cache != CacheMode::Auto {
        return;
    }
    if let Some(key) = &request.cache.key {
        body.insert("prompt_cache_key".into(), Value::from(key.clone()));
    }
    let hours = match model.cache_ttl {
        CacheTtl::OneHour => true,
        CacheTtl::Auto => request.cache.hour,
        CacheTtl::FiveMinutes => false,
    };
    if hours {
        body.insert("prompt_cache_retention".into(), Value::from("24h"));
    }
}

impl ModelSpec {
    /// The model of a run: `override_name` (the CLI's `--model`) wins over the persona's
    /// `[model] name`; with neither, an error saying so.
    pub fn resolve(model: Option<&ModelConfig>, override_name: Option<&str>) -> Result<ModelSpec> {
        let name = override_name
            .map(str::to_owned)
            .or_else(|| model.and_then(|m| m.name.clone()))
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Wire,
                    "no model for the wire format: set `name` in the persona's `[model]` table or pass `--model NAME`",
                )
            })?;
        Ok(ModelSpec {
            name,
            max_tokens: model.and_then(|m| m.max_tokens),
            cache: model.map(|m| m.cache).unwrap_or_default(),
            cache_ttl: model.map(|m| m.cache_ttl).unwrap_or_default(),
        })
    }
}
