//! What to resolve: [`ResolveInput`] (also the JSON body of `POST /v1/resolve`) and the
//! output [`Format`].

use chrono::{DateTime, Datelike as _, SecondsFormat, Timelike as _, Utc};
use serde::{Deserialize, Serialize};

#[cfg(doc)]
use super::EngineErrorKind;

/// The error of a run asked for in a format that is not a provider's (`messages`).
pub(crate) const RUN_NEEDS_A_WIRE_FORMAT: &str = "a run needs a provider's wire format: ask for `openai`, `openai-responses`, `anthropic` or `provider`";

/// The output of a resolve: protege's canonical JSON or a provider's request body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// protege's canonical JSON: `{"messages":[...],"tools":[...]}`.
    #[default]
    Messages,
    /// An OpenAI Chat Completions request body.
    Openai,
    /// An OpenAI Responses request body (`openai-responses`).
    #[serde(rename = "openai-responses")]
    OpenaiResponses,
    /// An Anthropic Messages request body.
    Anthropic,
    /// The body of the persona's `[model] provider` (an error when it has none).
    Provider,
}

impl Format {
    /// The wire format of a persona's `[model]`: its `provider`, and for OpenAI its `api`;
    /// `None` without a provider.
    pub(crate) fn of_model(model: Option<&protege_core::ModelConfig>) -> Option<Format> {
        let model = model?;
        match model.provider? {
            protege_core::Provider::Openai if model.uses_responses() => {
                Some(Format::OpenaiResponses)
            }
            protege_core::Provider::Openai => Some(Format::Openai),
            protege_core::Provider::Anthropic => Some(Format::Anthropic),
        }
    }

    /// The wire format a run of this format stores; an error for `messages` and an
    /// unresolved `provider`, which a run cannot have.
    pub(crate) fn run_format(self) -> Result<protege_core::db::RunFormat, super::EngineError> {
        use protege_core::db::RunFormat;
        match self {
            Format::Openai => Ok(RunFormat::Openai),
            Format::OpenaiResponses => Ok(RunFormat::OpenaiResponses),
            Format::Anthropic => Ok(RunFormat::Anthropic),
            Format::Messages | Format::Provider => Err(super::EngineError::new(
                super::EngineErrorKind::BadRequest,
                RUN_NEEDS_A_WIRE_FORMAT,
            )),
        }
    }

    /// The format's name in JSON and on the command line: `messages`, `openai`,
    /// `openai-responses`, `anthropic` or `provider`; also a run's `format` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Messages => "messages",
            Format::Openai => "openai",
            Format::OpenaiResponses => "openai-responses",
            Format::Anthropic => "anthropic",
            Format::Provider => "provider",
        }
    }
}

/// One resolve: which persona, which trigger (a message to answer or a responsibility to
/// run), and how to shape the output.
///
/// ```
/// use protege::{Format, ResolveInput};
/// let input = ResolveInput::reply("support", "<m1@example.com>").format(Format::Anthropic);
/// assert_eq!(
///     serde_json::to_string(&input).unwrap(),
///     r#"{"persona":"support","message_id":"<m1@example.com>","format":"anthropic"}"#
/// );
/// let parsed: ResolveInput =
///     serde_json::from_str(r#"{"persona":"digest","responsibility":"daily-digest"}"#).unwrap();
/// assert_eq!(parsed, ResolveInput::scheduled("digest", "daily-digest"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[must_use = "a ResolveInput does nothing until it is passed to `Engine::resolve`"]
pub struct ResolveInput {
    /// The persona's name.
    pub persona: String,
    /// A reply run: the Message-ID of the inbound message to answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// A scheduled run: the name of the persona's responsibility.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responsibility: Option<String>,
    /// The output format (default `messages`).
    #[serde(default, skip_serializing_if = "is_default_format")]
    pub format: Format,
    /// The model of a wire format, overriding the persona's `[model] name`; it also
    /// chooses the tokenizer of the run, whatever the format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The time of the run (default: now), for reproducible output: in UTC within the
    /// years 0000 to 9999 (else [`EngineErrorKind::BadRequest`]); a leap second
    /// (`23:59:60`) is read as the second before it, `23:59:59`, its fraction kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<DateTime<Utc>>,
    /// Whether the caller wants the per-resolver rows with their token counts (the HTTP
    /// service adds them to its answer; [`Resolution::steps`](crate::Resolution::steps)
    /// always has the rows, and counts their tokens only when this is true).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explain: bool,
}

/// `now` as the time of a run: a leap second becomes the second before it (chrono keeps one
/// as a fraction of a second past 1.0), and a time outside the years 0000 to 9999 in UTC is
/// refused, as every date protege stores and prints has four digits.
/// The error is the sentence of an [`EngineErrorKind::BadRequest`].
pub(crate) fn run_time(now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let now = now
        .with_nanosecond(now.nanosecond() % 1_000_000_000)
        .unwrap_or(now);
    if (0..=9999).contains(&now.year()) {
        Ok(now)
    } else {
        Err(format!(
            "the time of the run `{}` is outside the years 0000 to 9999 (UTC)",
            now.to_rfc3339_opts(SecondsFormat::AutoSi, true)
        ))
    }
}

fn is_default_format(format: &Format) -> bool {
    *format == Format::Messages
}

impl ResolveInput {
    /// A reply run of `persona` answering the inbound message `message_id`.
    pub fn reply(persona: impl Into<String>, message_id: impl Into<String>) -> Self {
        Self {
            persona: persona.into(),
            message_id: Some(message_id.into()),
            responsibility: None,
            format: Format::Messages,
            model: None,
            now: None,
            explain: false,
        }
    }

    /// A scheduled run of `persona`'s responsibility `responsibility`.
    pub fn scheduled(persona: impl Into<String>, responsibility: impl Into<String>) -> Self {
        Self {
            message_id: None,
            responsibility: Some(responsibility.into()),
            ..Self::reply(persona, "")
        }
    }

    /// Sets the output format.
    pub fn format(mut self, format: Format) -> Self {
        self.format = format;
        self
    }

    /// Sets the model of a wire format.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Fixes the time of the run.
    pub fn now(mut self, now: DateTime<Utc>) -> Self {
        self.now = Some(now);
        self
    }

    /// Asks for the token counts of the per-resolver rows (and for the rows in the HTTP
    /// answer).
    pub fn explain(mut self, explain: bool) -> Self {
        self.explain = explain;
        self
    }
}

impl From<protege_core::db::RunFormat> for Format {
    fn from(format: protege_core::db::RunFormat) -> Self {
        use protege_core::db::RunFormat;
        match format {
            RunFormat::Openai => Format::Openai,
            RunFormat::OpenaiResponses => Format::OpenaiResponses,
            RunFormat::Anthropic => Format::Anthropic,
        }
    }
}
