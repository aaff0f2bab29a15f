//! The `tracing` spans of the engine: a resolve with one child per resolver, a run round
//! and a mail import. Their attributes follow OpenTelemetry's GenAI semantic conventions
//! where one applies (`gen_ai.*`), else are named `protege.*`.
//!
//! Nothing here costs anything without a subscriber that records the spans: a span's
//! figures are computed only when `!span.is_disabled()`.
//!
//! A span is made in the caller's current span and lives as long as the call, but is not
//! entered while the engine works: the SQLite driver hands the current span of each query
//! to its connection's thread, which would let go of it after the call returned, and a
//! short command could exit before the span ended.

use tracing::Span;
use tracing::field::Empty;

use protege_core::db::entities::run as run_row;
use protege_core::wire::Usage;

use super::{EngineError, Resolution, ResolveInput};

/// The span of one resolve, its figures left to [`record_resolution`].
pub(super) fn resolve_span(input: &ResolveInput) -> Span {
    tracing::info_span!(
        "protege.resolve",
        protege.persona = %input.persona,
        protege.message_id = input.message_id.as_deref(),
        protege.responsibility = input.responsibility.as_deref(),
        gen_ai.request.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        protege.request_sha256 = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    )
}

/// Records the figures of `resolution` (its steps' tokens counted) on `span`, and one
/// `protege.resolver` child span per step (the rows of `--explain`, in order). The
/// children are made after the chain ran: their own duration is not the resolver's, which
/// `protege.resolver.ms` gives.
pub(super) fn record_resolution(span: &Span, resolution: &Resolution, model: Option<&str>) {
    let tokens: usize = resolution.steps.iter().filter_map(|s| s.tokens).sum();
    if let Some(model) = model {
        span.record("gen_ai.request.model", model);
    }
    span.record("gen_ai.usage.input_tokens", int(tokens));
    span.record(
        "protege.request_sha256",
        resolution.request_sha256().as_str(),
    );
    for step in &resolution.steps {
        let _child = tracing::info_span!(
            parent: span,
            "protege.resolver",
            protege.resolver.name = %step.name,
            protege.resolver.position = int(step.position),
            protege.resolver.messages = int(step.messages),
            protege.resolver.chars = int(step.chars),
            protege.resolver.tokens = int(step.tokens.unwrap_or_default()),
            protege.resolver.ms = step.elapsed.as_secs_f64() * 1000.0,
        );
    }
}

/// Marks `span` as failed with `error`'s message.
pub(super) fn record_error(span: &Span, error: &EngineError) {
    if !span.is_disabled() {
        span.record("otel.status_code", "error");
        span.record("otel.status_description", error.to_string().as_str());
    }
}

/// The span of one recorded round of run `run_id`, its usage left to [`record_usage`].
pub(super) fn round_span(run_id: &str, round: u32) -> Span {
    tracing::info_span!(
        "protege.run.round",
        protege.run_id = run_id,
        protege.run.round = i64::from(round),
        protege.persona = Empty,
        protege.run.status = Empty,
        protege.run.replayed = Empty,
        gen_ai.provider.name = Empty,
        gen_ai.request.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_creation.input_tokens = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    )
}

/// Records on `span` the run's persona, provider (`openai` for both of OpenAI's formats, as
/// the conventions name it) and model and the provider's `usage` for the round.
/// `gen_ai.usage.input_tokens` counts every input token, those read from and written to the
/// cache included, as the conventions ask.
pub(super) fn record_usage(span: &Span, run: &run_row::Model, usage: &Usage) {
    if span.is_disabled() {
        return;
    }
    let input = usage
        .input
        .saturating_add(usage.cache_read)
        .saturating_add(usage.cache_write);
    span.record("protege.persona", run.persona.as_str());
    span.record("gen_ai.provider.name", run.format.provider().as_str());
    span.record("gen_ai.request.model", run.model.as_str());
    span.record("gen_ai.usage.input_tokens", int64(input));
    span.record("gen_ai.usage.output_tokens", int64(usage.output));
    span.record(
        "gen_ai.usage.cache_read.input_tokens",
        int64(usage.cache_read),
    );
    span.record(
        "gen_ai.usage.cache_creation.input_tokens",
        int64(usage.cache_write),
    );
}

/// The span of one raw message stored ([`Engine::ingest_mail`](super::Engine::ingest_mail)).
pub(super) fn ingest_span(bytes: usize) -> Span {
    tracing::info_span!(
        "protege.mail.import",
        protege.mail.bytes = int(bytes),
        protege.message_id = Empty,
        protege.thread_id = Empty,
        protege.mail.direction = Empty,
        protege.mail.stored = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    )
}

/// The span of an import of files and folders
/// ([`Engine::import_eml`](super::Engine::import_eml)).
pub(super) fn import_span(paths: usize) -> Span {
    tracing::info_span!(
        "protege.mail.import",
        protege.mail.paths = int(paths),
        protege.mail.imported = Empty,
        protege.mail.duplicates = Empty,
        protege.mail.failed = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    )
}

/// `n` as the signed integer OpenTelemetry attributes hold (an unsigned one would be
/// exported as text).
pub(super) fn int(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// [`int`] of a `u64`.
fn int64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
