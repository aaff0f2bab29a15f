//! The handlers of the routes.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde_json::json;

use super::App;
use super::error::ApiError;
use super::extract::{Json, JsonBody, Raw, Rfc822};
use super::layers::authorized;
use crate::{Direction, EngineError, EngineErrorKind, ResolveInput};

pub(super) async fn healthz() -> Response {
    axum::Json(json!({ "status": "ok" })).into_response()
}

/// What the open `/readyz` says when the service is not ready; the reason is logged, and
/// shown to a request that carries the service's token.
const NOT_READY: &str = "the service is not ready; the reason is in its log";

pub(super) async fn readyz(
    State(app): State<App>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Some(reason) = not_ready(&app).await else {
        // The replica is reported, never required: reads fall back to the primary.
        #[cfg_attr(not(feature = "agent"), allow(unused_mut))]
        let mut body = match app.engine.ping_read_replica().await {
            None => json!({ "status": "ready" }),
            Some(Ok(())) => json!({ "status": "ready", "read_replica": "up" }),
            Some(Err(e)) => {
                tracing::warn!(error = %e, "read replica down");
                json!({ "status": "ready", "read_replica": "down" })
            }
        };
        // The agent's parts are reported to the token's holder, never required.
        #[cfg(feature = "agent")]
        if app.token.is_some()
            && authorized(&app, &headers)
            && let Some(object) = body.as_object_mut()
        {
            match app.engine.agent_readiness().await {
                Ok(report) => object.extend(report),
                Err(e) => tracing::warn!(error = %e, "the agent's report failed"),
            }
        }
        return Ok(axum::Json(body).into_response());
    };
    tracing::warn!(reason = %reason, "not ready");
    Err(ApiError::unavailable(
        if app.token.is_some() && authorized(&app, &headers) {
            reason
        } else {
            NOT_READY.to_owned()
        },
    ))
}

/// Why the service is not ready: the database is unreachable or no persona is loaded.
async fn not_ready(app: &App) -> Option<String> {
    if let Err(e) = app.engine.ping().await {
        return Some(e.to_string());
    }
    app.engine
        .personas()
        .is_empty()
        .then(|| "no persona is loaded".to_owned())
}

pub(super) async fn metrics(State(app): State<App>) -> Response {
    if app.engine.has_read_replica() {
        metrics::counter!("protege_replica_fallbacks_total")
            .absolute(app.engine.replica_fallbacks());
    }
    let text = app
        .metrics
        .as_ref()
        .map(|render| render())
        .unwrap_or_default();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

pub(super) async fn personas(State(app): State<App>) -> Response {
    let personas: Vec<serde_json::Value> = app
        .engine
        .personas()
        .iter()
        .map(|p| {
            let info = p.info();
            json!({
                "name": info.name,
                "path": p.path().display().to_string(),
                "addresses": info.addresses,
                "responsibilities": info.responsibilities.iter().map(|r| &r.name).collect::<Vec<_>>(),
                "model": info.model,
            })
        })
        .collect();
    axum::Json(json!({ "personas": personas })).into_response()
}

/// The query string of `GET /v1/threads`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ThreadsQuery {
    limit: Option<u64>,
}

/// The threads that hold messages, most recently active first, at most `?limit=` (default
/// 50): what `protege db threads --format json` prints.
pub(super) async fn threads(
    State(app): State<App>,
    query: Result<Query<ThreadsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let threads = app.engine.threads(query.limit.unwrap_or(50)).await?;
    json_items(&threads)
}

/// The messages of a thread, oldest first: what `protege db messages --thread ID --format
/// json` prints; 404 for an unknown thread (or an id that is not an integer).
pub(super) async fn thread_messages(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let Ok(id) = id.parse::<i64>() else {
        return Err(ApiError::not_found(format!(
            "unknown thread `{id}`: a thread's id is an integer (see `GET /v1/threads`)"
        )));
    };
    let messages = app.engine.thread_messages(id).await?;
    json_items(&messages)
}

/// `items` as an indented JSON array with a final newline, their fields in declaration
/// order: what the listings of `protege db ... --format json` print.
fn json_items<T: serde::Serialize>(items: &[T]) -> Result<Response, ApiError> {
    let mut text = serde_json::to_string_pretty(items)
        .map_err(|e| ApiError::internal(format!("cannot serialise the answer: {e}")))?;
    text.push('\n');
    Ok(([(header::CONTENT_TYPE, "application/json")], text).into_response())
}

impl JsonBody for ResolveInput {
    const WHAT: &'static str = "resolve";
}

pub(super) async fn resolve(
    State(app): State<App>,
    Json(input): Json<ResolveInput>,
) -> Result<Response, ApiError> {
    let slots = app.work_slots.clone();
    off_the_workers(&slots, async move { resolved(&app, &input).await }).await
}

/// The answer of `POST /v1/resolve` to `input`.
async fn resolved(app: &App, input: &ResolveInput) -> Result<Response, ApiError> {
    let start = Instant::now();
    let out = app.engine.resolve(input).await?;
    metrics::histogram!("protege_resolve_seconds", "persona" => input.persona.clone())
        .record(start.elapsed().as_secs_f64());
    for step in out.steps.iter().filter(|s| s.position != 0) {
        metrics::histogram!("protege_resolver_seconds", "resolver" => step.name.clone())
            .record(step.elapsed.as_secs_f64());
    }
    let sha256 = out.request_sha256();
    let body = if input.explain {
        let mut answer = serde_json::Map::new();
        answer.insert("request".into(), out.body.clone());
        answer.extend(out.explain_json());
        answer.insert(
            "cache_breakpoints".into(),
            json!(cache_breakpoints(app, &input.persona, &out.request)),
        );
        serde_json::Value::Object(answer)
    } else {
        out.body
    };
    let mut response = json_text(StatusCode::OK, &body)?;
    if let Ok(value) = header::HeaderValue::from_str(&sha256) {
        response.headers_mut().insert(REQUEST_SHA256, value);
    }
    Ok(response)
}

/// Where an Anthropic body of `request` places its `cache_control` breakpoints, as
/// indexes of the request's messages: `{"index", "at"}`, `at` being `system` (the end of the
/// system prompt, whose messages are merged), `history` (the last message of
/// `ThreadHistory`) or `end` (the final message); none when the persona's `[model] cache`
/// is `off`.
fn cache_breakpoints(app: &App, persona: &str, request: &crate::Request) -> Vec<serde_json::Value> {
    let cache = app
        .engine
        .persona(persona)
        .and_then(|p| p.info().model.as_ref().map(|m| m.cache))
        .unwrap_or_default();
    if cache != crate::CacheMode::Auto {
        return Vec::new();
    }
    let messages = &request.messages;
    let system = messages
        .iter()
        .rposition(|m| m.role == crate::Role::System && !m.content.text().trim().is_empty());
    let end = messages.iter().rposition(|m| m.role != crate::Role::System);
    let mut marks: Vec<serde_json::Value> = Vec::new();
    for (index, at) in [
        (system, "system"),
        (request.cache.history_end, "history"),
        (end, "end"),
    ] {
        if let Some(index) = index
            && !marks.iter().any(|m| m["index"] == index)
        {
            marks.push(json!({ "index": index, "at": at }));
        }
    }
    marks.sort_by_key(|m| m["index"].as_u64());
    marks
}

/// The header of `POST /v1/resolve` that carries [`Resolution::request_sha256`](crate::Resolution::request_sha256).
const REQUEST_SHA256: header::HeaderName =
    header::HeaderName::from_static("x-protege-request-sha256");

/// `?direction=` of `POST /v1/mail`: `inbound` (the default), `outbound` or `auto` (`None`).
pub(super) struct MailDirection(Option<Direction>);

/// The query string of `POST /v1/mail`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct MailQuery {
    direction: Option<String>,
}

impl<S: Send + Sync> FromRequestParts<S> for MailDirection {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Query(query) = Query::<MailQuery>::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::bad_request(e.body_text()))?;
        match query.direction.as_deref() {
            None | Some("inbound") => Ok(Self(Some(Direction::Inbound))),
            Some("outbound") => Ok(Self(Some(Direction::Outbound))),
            Some("auto") => Ok(Self(None)),
            Some(other) => Err(ApiError::bad_request(format!(
                "unknown direction `{other}`; valid: `inbound`, `outbound`, `auto`"
            ))),
        }
    }
}

pub(super) async fn mail(
    State(app): State<App>,
    MailDirection(direction): MailDirection,
    Raw(raw, ..): Raw<Rfc822>,
) -> Result<Response, ApiError> {
    let engine = app.engine.clone();
    let ingested = off_the_workers(&app.work_slots, async move {
        Ok(engine.ingest_mail(&raw, direction).await)
    })
    .await?;
    let outcome = match ingested {
        Ok(outcome) => outcome,
        Err(e) => {
            let status = match e.kind() {
                EngineErrorKind::InvalidInput => "rejected",
                EngineErrorKind::Conflict => "conflict",
                _ => "failed",
            };
            metrics::counter!("protege_mail_imported_total", "status" => status).increment(1);
            return Err(e.into());
        }
    };
    for warning in &outcome.warnings {
        tracing::warn!(message_id = %outcome.message_id, warning = %warning, "mail stored with a fallback");
    }
    let (status, code) = if outcome.imported {
        ("imported", StatusCode::CREATED)
    } else if outcome.erased {
        ("erased", StatusCode::OK)
    } else {
        ("duplicate", StatusCode::OK)
    };
    metrics::counter!("protege_mail_imported_total", "status" => status).increment(1);
    // Erased mail is in no thread: nothing of it was stored.
    let thread_id = (!outcome.erased).then_some(outcome.thread_id);
    json_text(
        code,
        &json!({
            "status": status,
            "message_id": outcome.message_id,
            "thread_id": thread_id,
            "direction": outcome.direction.as_str(),
        }),
    )
}

/// The body of `POST /v1/summaries`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SummaryBody {
    message_id: String,
    content: String,
}

impl JsonBody for SummaryBody {
    const WHAT: &'static str = "summary";
}

pub(super) async fn summaries(
    State(app): State<App>,
    Json(input): Json<SummaryBody>,
) -> Result<Response, ApiError> {
    if input.content.len() > crate::SUMMARY_MAX_BYTES {
        return Err(ApiError::too_large(format!(
            "the summary through `{}` is {} bytes, over the limit of {}",
            input.message_id,
            input.content.len(),
            crate::SUMMARY_MAX_BYTES
        )));
    }
    let stored = app
        .engine
        .store_summary(&input.message_id, &input.content)
        .await?;
    json_text(
        StatusCode::CREATED,
        &json!({
            "status": "stored",
            "id": stored.id,
            "thread_id": stored.thread_id,
            "through_message_id": stored.through_message_id,
        }),
    )
}

/// The body of `POST /v1/forget`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ForgetBody {
    address: String,
    #[serde(default)]
    dry_run: bool,
    /// Also a persona's own address (every thread of that persona).
    #[serde(default)]
    force: bool,
}

impl JsonBody for ForgetBody {
    const WHAT: &'static str = "forget";
}

/// Erases a correspondent: 200 `{"removed":{table: count, ...}}`, or
/// `{"would_remove":{...}}` for a dry run, the tables in a fixed order.
pub(super) async fn forget(
    State(app): State<App>,
    Json(input): Json<ForgetBody>,
) -> Result<Response, ApiError> {
    let counts = if input.force {
        app.engine.forget_any(&input.address, input.dry_run).await?
    } else {
        app.engine.forget(&input.address, input.dry_run).await?
    };
    erasure_answer(&counts, input.dry_run)
}

/// The body of `POST /v1/prune`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PruneBody {
    older_than: String,
    #[serde(default)]
    dry_run: bool,
    #[serde(default)]
    now: Option<DateTime<Utc>>,
}

impl JsonBody for PruneBody {
    const WHAT: &'static str = "prune";
}

/// Drops the threads whose newest message is older than `older_than` (e.g. `365d`) before
/// `now` (default: the current time): the answer of [`forget`]; 422 for a duration that
/// is none.
pub(super) async fn prune(
    State(app): State<App>,
    Json(input): Json<PruneBody>,
) -> Result<Response, ApiError> {
    let older_than = crate::db::parse_duration(&input.older_than).map_err(EngineError::from)?;
    let now = input.now.unwrap_or_else(Utc::now);
    let counts = app.engine.prune(older_than, now, input.dry_run).await?;
    erasure_answer(&counts, input.dry_run)
}

/// The body of `POST /v1/diff`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DiffBody {
    personas: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    persona: Option<String>,
    #[serde(default)]
    messages: Option<u64>,
    #[serde(default)]
    since: Option<String>,
    #[serde(default)]
    now: Option<DateTime<Utc>>,
}

impl JsonBody for DiffBody {
    const WHAT: &'static str = "diff";
}

/// The most messages a persona's diff resolves, as `protege diff --since` does.
const DIFF_MESSAGES: u64 = 1000;

/// What the persona files `personas` (file name → TOML text, the whole candidate folder)
/// would change: 200 `{"changed": bool, "personas": [...]}`, each entry as `protege diff
/// --format json` prints it; 422 for a bad file name, a bad duration or both `messages`
/// and `since`.
pub(super) async fn diff(
    State(app): State<App>,
    Json(input): Json<DiffBody>,
) -> Result<Response, ApiError> {
    let invalid = |message: &str| EngineError::new(EngineErrorKind::InvalidInput, message);
    if input.messages.is_some() && input.since.is_some() {
        return Err(invalid("give `messages` or `since`, not both").into());
    }
    let now = input.now.unwrap_or_else(Utc::now);
    let since = match &input.since {
        Some(text) => {
            let age = crate::db::parse_duration(text).map_err(EngineError::from)?;
            let since = chrono::Duration::from_std(age)
                .ok()
                .and_then(|age| now.checked_sub_signed(age))
                .ok_or_else(|| invalid("`since` reaches before the year 0000"))?;
            Some(since)
        }
        None => None,
    };
    let options = crate::DiffOptions {
        persona: input.persona,
        messages: match since {
            Some(_) => DIFF_MESSAGES,
            None => input.messages.unwrap_or(20).min(DIFF_MESSAGES),
        },
        since,
        now: Some(now),
    };
    let diffs = app.engine.diff_files(&input.personas, &options).await?;
    let changed = diffs
        .iter()
        .any(|d| d.status != crate::DiffStatus::Unchanged);
    Ok(axum::Json(json!({ "changed": changed, "personas": diffs })).into_response())
}

/// 200 `{"removed":{table: count, ...}}`, or `{"would_remove":{...}}` for a dry run, the
/// tables in a fixed order.
fn erasure_answer(counts: &crate::db::Removed, dry_run: bool) -> Result<Response, ApiError> {
    let key = if dry_run { "would_remove" } else { "removed" };
    let mut body = serde_json::Map::new();
    body.insert(key.to_owned(), json!(counts));
    json_text(StatusCode::OK, &serde_json::Value::Object(body))
}

/// Runs `work` to its end on a thread of the blocking pool, once one of `slots` is free:
/// its I/O driven by the runtime, but its PostgreSQL reads by that thread itself
/// ([`crate::db::session::drive_reads_here`]: no thread hand-off per statement). The CPU it spends (parsing and converting a huge
/// mail, rendering a thread, counting tokens, encoding the answer) never holds a worker of
/// the runtime, so `/healthz` answers meanwhile and the deadline answers 504 on time; when
/// the deadline answers first, the work goes on to its end (keeping its slot) and its
/// answer is dropped.
pub(super) async fn off_the_workers<T: Send + 'static>(
    slots: &Arc<tokio::sync::Semaphore>,
    work: impl Future<Output = Result<T, ApiError>> + Send + 'static,
) -> Result<T, ApiError> {
    let slot = slots
        .clone()
        .acquire_owned()
        .await
        .map_err(|e| ApiError::internal(format!("the request's work cannot start: {e}")))?;
    let runtime = tokio::runtime::Handle::current();
    // The work stays in the request's span.
    let work = tracing::Instrument::in_current_span(work);
    tokio::task::spawn_blocking(move || {
        let answer = crate::db::session::drive_reads_here(&runtime, work);
        drop(slot);
        answer
    })
    .await
    .map_err(|e| ApiError::internal(format!("the request's work stopped: {e}")))?
}

/// `value` as pretty JSON with a final newline: what `protege resolve` prints.
pub(super) fn json_text(
    status: StatusCode,
    value: &serde_json::Value,
) -> Result<Response, ApiError> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| ApiError::internal(format!("cannot serialise the answer: {e}")))?;
    text.push('\n');
    Ok((status, [(header::CONTENT_TYPE, "application/json")], text).into_response())
}
