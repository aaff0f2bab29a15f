//! The cache report: every reply run of a thread, and what a provider's prompt cache
//! would serve of each request after the one before it.

use protege_core::Provider;
use protege_core::wire::{cached_tokens, prefix_units};

use super::{Engine, EngineError, EngineErrorKind, Format, ResolveInput};

/// One reply run of a [`CacheReport`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheReportRow {
    /// The inbound message answered.
    pub message_id: String,
    /// The request's input tokens.
    pub input_tokens: usize,
    /// The tokens of the prefix it shares with the previous request, up to where the
    /// provider caches (what a prompt cache would serve).
    pub cached_tokens: usize,
}

/// What a prompt cache would serve over a thread: one row per inbound message, oldest
/// first. Made by [`Engine::cache_report`]; `Display` prints the table of
/// `protege cache-report`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheReport {
    /// The persona.
    pub persona: String,
    /// The thread's id.
    pub thread_id: i64,
    /// The wire format the requests were encoded in.
    pub provider: Provider,
    /// One row per reply run, oldest first.
    pub rows: Vec<CacheReportRow>,
}

impl CacheReport {
    /// The input tokens of every request.
    pub fn input_tokens(&self) -> usize {
        self.rows.iter().map(|r| r.input_tokens).sum()
    }

    /// The tokens a prompt cache would serve, over every request.
    pub fn cached_tokens(&self) -> usize {
        self.rows.iter().map(|r| r.cached_tokens).sum()
    }

    /// The share of input tokens served from cache (0 when there is no input).
    pub fn cached_fraction(&self) -> f64 {
        match self.input_tokens() {
            0 => 0.0,
            input => self.cached_tokens() as f64 / input as f64,
        }
    }
}

pub(super) fn percent(part: usize, whole: usize) -> String {
    if whole == 0 {
        "-".to_owned()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

impl std::fmt::Display for CacheReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let provider = match self.provider {
            Provider::Anthropic => "anthropic",
            Provider::Openai => "openai",
        };
        writeln!(
            f,
            "cache report: persona `{}`, thread {}, {provider} bodies, {} reply {}",
            self.persona,
            self.thread_id,
            self.rows.len(),
            if self.rows.len() == 1 { "run" } else { "runs" }
        )?;
        let width = self
            .rows
            .iter()
            .map(|r| r.message_id.chars().count())
            .max()
            .unwrap_or(0)
            .max("message".len());
        writeln!(
            f,
            "  {:>3}  {:<width$}  {:>8}  {:>8}  {:>7}",
            "#", "message", "input", "cached", "cached%"
        )?;
        for (i, r) in self.rows.iter().enumerate() {
            writeln!(
                f,
                "  {:>3}  {:<width$}  {:>8}  {:>8}  {:>7}",
                i + 1,
                r.message_id,
                r.input_tokens,
                r.cached_tokens,
                percent(r.cached_tokens, r.input_tokens)
            )?;
        }
        writeln!(
            f,
            "  {:>3}  {:<width$}  {:>8}  {:>8}  {:>7}",
            "",
            "total",
            self.input_tokens(),
            self.cached_tokens(),
            percent(self.cached_tokens(), self.input_tokens())
        )?;
        write!(
            f,
            "tokens are estimated as characters / 4 of each block's JSON, rounded up; \
             a request is served from cache up to the longest prefix it shares with the previous one"
        )?;
        match self.provider {
            Provider::Anthropic => write!(f, " that ends at one of its breakpoints"),
            Provider::Openai => Ok(()),
        }
    }
}

impl Engine {
    /// Resolves the reply run of `persona` for every inbound message of thread
    /// `thread_id`, oldest first, each at the time the message was sent, encodes each
    /// request in `format` (`openai`, `openai-responses`, `anthropic`, or `provider` for the
    /// persona's own),
    /// and reports for each its input tokens and the tokens of the prefix it shares with
    /// the previous request up to where the provider caches.
    pub async fn cache_report(
        &self,
        persona: &str,
        thread_id: i64,
        format: Format,
    ) -> Result<CacheReport, EngineError> {
        self.cache_report_with_model(persona, thread_id, format, None)
            .await
    }

    /// [`cache_report`](Self::cache_report) with the model of every request: `model`
    /// overrides the persona's `[model] name` (the command line's `--model`), as
    /// [`ResolveInput::model`] does.
    pub async fn cache_report_with_model(
        &self,
        persona: &str,
        thread_id: i64,
        format: Format,
        model: Option<&str>,
    ) -> Result<CacheReport, EngineError> {
        let info = self.require_persona(persona)?.info().clone();
        let wire = match format {
            Format::Provider => match Format::of_model(info.model.as_ref()) {
                Some(wire) => wire,
                None => {
                    return Err(EngineError::new(
                        EngineErrorKind::InvalidInput,
                        format!(
                            "persona `{persona}` names no provider: set `provider` in its `[model]` table or ask for `openai`, `openai-responses` or `anthropic`"
                        ),
                    ));
                }
            },
            Format::Messages => {
                return Err(EngineError::new(
                    EngineErrorKind::BadRequest,
                    "a cache report needs a provider's wire format: `openai`, `openai-responses`, `anthropic` or `provider`",
                ));
            }
            wire => wire,
        };
        let provider = match wire {
            Format::Anthropic => Provider::Anthropic,
            _ => Provider::Openai,
        };
        let conn = self.db().await?;
        let messages = protege_core::db::thread_inbound_messages(conn, thread_id)
            .await?
            .ok_or_else(|| {
                EngineError::new(
                    EngineErrorKind::NotFound,
                    format!("unknown thread `{thread_id}`: no thread with this id in the database"),
                )
            })?;
        let mut rows = Vec::with_capacity(messages.len());
        let mut previous = Vec::new();
        for (message_id, sent_at) in messages {
            let mut input = ResolveInput::reply(persona, message_id.as_str())
                .format(wire)
                .now(sent_at);
            input.model = model.map(str::to_owned);
            let out = self.resolve(&input).await?;
            let units = prefix_units(&out.body, provider);
            rows.push(CacheReportRow {
                message_id,
                input_tokens: units.iter().map(|u| u.tokens).sum(),
                cached_tokens: cached_tokens(&previous, &units, provider),
            });
            previous = units;
        }
        Ok(CacheReport {
            persona: info.name.clone(),
            thread_id,
            provider,
            rows,
        })
    }
}
