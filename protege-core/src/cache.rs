//! Prompt caching: the `[model] cache` setting and what a request carries so the wire
//! formats can place Anthropic `cache_control` breakpoints and an OpenAI
//! `prompt_cache_key`.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Whether wire bodies ask the provider to cache their prefix (`[model] cache`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheMode {
    /// Anthropic bodies carry `cache_control` breakpoints (end of `system`, end of the
    /// thread history, end of the final message); OpenAI bodies a `prompt_cache_key`.
    #[default]
    Auto,
    /// Neither.
    Off,
}

impl CacheMode {
    /// The lowercase name used in TOML and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheMode::Auto => "auto",
            CacheMode::Off => "off",
        }
    }

    /// Parses the lowercase name; `None` for anything else.
    pub fn parse(name: &str) -> Option<CacheMode> {
        match name {
            "auto" => Some(CacheMode::Auto),
            "off" => Some(CacheMode::Off),
            _ => None,
        }
    }
}

/// How long Anthropic keeps the prefix a breakpoint marks (`[model] cache_ttl`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CacheTtl {
    /// Five minutes, refreshed by every hit: `{"type":"ephemeral"}` (the default).
    #[default]
    #[serde(rename = "5m")]
    FiveMinutes,
    /// An hour: `{"type":"ephemeral","ttl":"1h"}` on every breakpoint.
    #[serde(rename = "1h")]
    OneHour,
    /// The breakpoints of the system prompt and the history last an hour when the
    /// thread's recent gaps make a hit within the hour worth the dearer write (see
    /// [`hour_pays`]), else five minutes; the final message's breakpoint five minutes.
    #[serde(rename = "auto")]
    Auto,
}

impl CacheTtl {
    /// Every value, as written: `auto`, `5m`, `1h`.
    pub const ALL: [CacheTtl; 3] = [CacheTtl::Auto, CacheTtl::FiveMinutes, CacheTtl::OneHour];

    /// The name used in TOML and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheTtl::Auto => "auto",
            CacheTtl::FiveMinutes => "5m",
            CacheTtl::OneHour => "1h",
        }
    }

    /// Parses the name; `None` for anything else.
    pub fn parse(name: &str) -> Option<CacheTtl> {
        CacheTtl::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// Whether it is the default (`5m`), which persona JSON leaves out.
    pub fn is_default(&self) -> bool {
        *self == CacheTtl::default()
    }
}

/// How many of a thread's latest gaps [`hour_pays`] weighs.
pub const TTL_GAPS: usize = 8;

/// Whether an hour-long breakpoint is worth its price for the next request of a thread
/// whose latest gaps between requests (oldest first, at most [`TTL_GAPS`] of them are
/// weighed) are `gaps`, at Anthropic's prices in units of the input price: a write for
/// five minutes 1.25, for an hour 2, a read 0.1.
///
/// Over the recent gaps, `m` are between five minutes and an hour, `n` over an hour, of
/// `k`. A prefix written for an hour costs 0.75 more than for five minutes, and saves 1.15
/// (a read instead of a new write) when the next request comes after a middle gap.
///
/// - When the request reads the prefix the previous one left (the last gap is within
///   that request's lifetime, five minutes or an hour as this rule chose for it), it
///   writes only what is new, and the prefix stays as long as it keeps being read: over
///   such a stretch five-minute breakpoints write the prefix after each middle and long
///   gap (`1.25 (1 + m + n)` with the write that started it), hour-long ones after each
///   long gap and read it after each middle one (`2 (1 + n) + 0.1 m`), so the hour pays
///   when `1.15 m > 0.75 (1 + n)`.
/// - When it writes the whole prefix again (the first request, or after the prefix
///   expired), the 0.75 is paid on all of it now and repaid only when the next gap is a
///   middle one: the hour pays when the share of middle gaps, the next one counted as
///   not middle, is over 0.75 / 1.15, `1.15 m > 0.75 (k + 1)`.
pub fn hour_pays(gaps: &[chrono::Duration]) -> bool {
    let recent = &gaps[gaps.len().saturating_sub(TTL_GAPS)..];
    let five = chrono::Duration::minutes(5);
    let hour = chrono::Duration::hours(1);
    let middle = recent.iter().filter(|g| **g > five && **g <= hour).count();
    let long = recent.iter().filter(|g| **g > hour).count();
    let reads = match recent.split_last() {
        None => false,
        Some((last, before)) => *last <= five || (*last <= hour && hour_pays(before)),
    };
    // In whole numbers: 23 m > 15 (1 + n), or 23 m > 15 (k + 1).
    if reads {
        23 * middle > 15 * (1 + long)
    } else {
        23 * middle > 15 * (recent.len() + 1)
    }
}

/// What a finished request knows about its own prefix, for the wire formats' cache
/// markers. Not part of the canonical JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheHints {
    /// The index in [`Request::messages`](crate::Request::messages) of the last message
    /// produced by `ThreadHistory`, when it produced any.
    pub history_end: Option<usize>,
    /// A stable key of the conversation (see [`cache_key`]), sent as OpenAI's
    /// `prompt_cache_key`.
    pub key: Option<String>,
    /// With `cache_ttl = "auto"`: whether the breakpoints of the system prompt and the
    /// history last an hour (see [`hour_pays`]), set by the engine from the thread's gaps.
    pub hour: bool,
}

/// The cache key of a persona's conversation: the first 16 hex digits of a SHA-256 over
/// the persona name and the thread id (reply runs) or the responsibility name (scheduled
/// runs). Stable across runs, and it reveals no address or subject.
pub fn cache_key(persona: &str, conversation: Conversation<'_>) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"protege\0");
    hasher.update(persona.as_bytes());
    match conversation {
        Conversation::Thread(id) => {
            hasher.update(b"\0thread\0");
            hasher.update(id.to_string().as_bytes());
        }
        Conversation::Responsibility(name) => {
            hasher.update(b"\0responsibility\0");
            hasher.update(name.as_bytes());
        }
    }
    protege_mail::hex(&hasher.finalize()[..8])
}

/// What a run belongs to, for [`cache_key`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conversation<'a> {
    /// A reply run: the id of the inbound message's thread.
    Thread(i64),
    /// A scheduled run: the responsibility's name.
    Responsibility(&'a str),
}
