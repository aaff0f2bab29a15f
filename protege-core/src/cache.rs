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
