//! `serve`: the engine as an HTTP/1.1 JSON service (resolve, mail ingest, personas, health,
//! metrics), hot-reloading its persona folder.

mod conn;
mod error;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, MatchedPath, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use protege::config::Event;
use protege::db::{EmlOptions, ingest_eml};
use protege::{Direction, Engine, ResolveInput};
use serde_json::json;
use subtle::ConstantTimeEq as _;
use tokio::sync::broadcast;

use super::args::{LogFormat, ServeArgs};
use super::{CliResult, Env, Failure};
use error::ApiError;

/// The body limit of `POST /v1/resolve`.
const RESOLVE_LIMIT: usize = 64 * 1024;
/// The body limit of `POST /v1/mail`.
const MAIL_LIMIT: usize = 25 * 1024 * 1024;
/// The body limit of `POST /v1/summaries`: a summary of the most bytes in its longest valid
/// JSON encoding (every byte written as a 6-byte `\u0061` escape), and 64 KiB of framing. A
/// summary over [`protege::SUMMARY_MAX_BYTES`] inside this limit is refused after parsing,
/// with the same status.
const SUMMARY_LIMIT: usize = 6 * protege::SUMMARY_MAX_BYTES + 64 * 1024;
/// How long requests in flight may take to finish after SIGTERM/SIGINT.
const DRAIN: Duration = Duration::from_secs(30);
/// Histogram buckets in seconds, from 100 µs to 10 s.
const BUCKETS: [f64; 14] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 2.5, 10.0,
];

/// What every handler shares.
#[derive(Debug, Clone)]
struct App {
    engine: Engine,
    metrics: PrometheusHandle,
    token: Option<Arc<str>>,
    deadline: Duration,
    deadline_secs: f64,
    /// `--trusted-authserv-id`, added to the personas' `[mail] trusted_authserv_ids`.
    trusted_authserv_ids: Arc<[String]>,
    /// The slots of the blocking pool that requests' work may take at once (see
    /// [`off_the_workers`]).
    work_slots: Arc<tokio::sync::Semaphore>,
}

pub(crate) async fn run(env: &Env, args: &ServeArgs) -> CliResult {
    init_logging(args.log_format);
    let token = token(args)?;
    let metrics = PrometheusBuilder::new()
        .set_buckets(&BUCKETS)
        .and_then(PrometheusBuilder::install_recorder)
        .map_err(|e| Failure::invalid(format!("cannot set up the metrics: {e}")))?;
    let engine = Engine::builder()
        .root(&env.root)
        .personas(&env.personas)
        .database(&env.database)
        .watch(!args.no_watch)
        .build()
        .await?;
    for problem in engine.diagnostics() {
        tracing::warn!(path = %problem.path().display(), error = %problem, "persona rejected");
    }
    for persona in engine.personas() {
        tracing::info!(persona = persona.name(), path = %persona.path().display(), "persona loaded");
    }
    if let Some(events) = engine.events() {
        tokio::spawn(log_reloads(events));
    }
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|e| Failure::invalid(format!("cannot listen on `{}`: {e}", args.listen)))?;
    let address = listener
        .local_addr()
        .map_err(|e| Failure::invalid(format!("cannot read the listening address: {e}")))?;
    if token.is_none() {
        if !args.no_auth && !address.ip().is_loopback() {
            return Err(Failure::usage(format!(
                "`{}` is not a loopback address and `PROTEGE_SERVE_TOKEN` is not set: set a token, or pass `--no-auth` to serve without authentication",
                args.listen
            )));
        }
        tracing::warn!(
            "authentication is off: `/v1/*` and `/metrics` are open to anyone who reaches {address}"
        );
    }
    tracing::info!("listening on http://{address}");
    let app = App {
        engine,
        metrics,
        token,
        deadline: Duration::from_secs_f64(args.deadline),
        deadline_secs: args.deadline,
        trusted_authserv_ids: args.trusted_authserv_ids.clone().into(),
        work_slots: Arc::new(tokio::sync::Semaphore::new(work_slots())),
    };
    let limits = conn::Limits {
        header_timeout: Duration::from_secs_f64(args.header_timeout),
        idle_timeout: Duration::from_secs_f64(args.idle_timeout),
        max_connections: args.max_connections as usize,
    };
    let (stopping_tx, stopping_rx) = tokio::sync::watch::channel(false);
    let drain_limit = async move {
        shutdown_signal().await;
        tracing::info!("shutting down: finishing the requests in flight");
        let _ = stopping_tx.send(true);
        tokio::time::sleep(DRAIN).await;
    };
    tokio::select! {
        () = conn::serve(listener, router(app), limits, stopping_rx) => {}
        () = drain_limit => tracing::warn!("requests still in flight after 30 s; exiting"),
    }
    tracing::info!("stopped");
    Ok(())
}

/// The bearer token of `PROTEGE_SERVE_TOKEN`: none when unset; set but empty is a usage
/// error (it would silently turn authentication off), and so is a token with `--no-auth`.
fn token(args: &ServeArgs) -> CliResult<Option<Arc<str>>> {
    let token = match std::env::var("PROTEGE_SERVE_TOKEN") {
        Ok(token) if token.is_empty() => {
            return Err(Failure::usage(
                "`PROTEGE_SERVE_TOKEN` is set but empty: set it to the token clients must send, or unset it to serve without authentication",
            ));
        }
        Ok(token) => Some(Arc::from(token)),
        Err(std::env::VarError::NotPresent) => None,
        Err(std::env::VarError::NotUnicode(_)) => {
            return Err(Failure::usage(
                "`PROTEGE_SERVE_TOKEN` is not valid UTF-8: set it to a token of printable characters",
            ));
        }
    };
    if token.is_some() && args.no_auth {
        return Err(Failure::usage(
            "`--no-auth` and `PROTEGE_SERVE_TOKEN` contradict each other: unset the token or drop `--no-auth`",
        ));
    }
    Ok(token)
}

fn router(app: App) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/v1/personas", get(personas))
        .route("/v1/resolve", limited(post(resolve), RESOLVE_LIMIT))
        .route("/v1/mail", limited(post(mail), MAIL_LIMIT))
        .route("/v1/summaries", limited(post(summaries), SUMMARY_LIMIT))
        .fallback(async || ApiError::not_found("no such route; see the routes in the README"))
        .method_not_allowed_fallback(async || ApiError::method_not_allowed())
        .layer(middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

/// A route whose body is capped at `limit` bytes: a `Content-Length` over it is answered 413
/// from the header, before any byte of the body is read.
fn limited(route: MethodRouter<App>, limit: usize) -> MethodRouter<App> {
    route
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn(move |request: Request, next: Next| {
            early_limit(limit, request, next)
        }))
}

async fn early_limit(limit: usize, request: Request, next: Next) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        // The body stays unread, so the connection cannot carry another request.
        let mut response = ApiError::payload_too_large(limit).into_response();
        response.headers_mut().insert(
            header::CONNECTION,
            header::HeaderValue::from_static("close"),
        );
        return response;
    }
    next.run(request).await
}

/// Every request: authentication, the deadline, one log line and the request counter.
async fn guard(State(app): State<App>, request: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |p| p.as_str())
        .to_owned();
    let protected = route.starts_with("/v1/") || route == "/metrics" || route == "unmatched";
    let response = if protected && !authorized(&app, request.headers()) {
        ApiError::unauthorized().into_response()
    } else {
        match tokio::time::timeout(app.deadline, next.run(request)).await {
            Ok(response) => response,
            Err(_) => ApiError::timeout(app.deadline_secs).into_response(),
        }
    };
    let status = response.status().as_u16();
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    tracing::info!(method = %method, route = %route, status, ms = format!("{ms:.2}"), "request");
    metrics::counter!(
        "protege_http_requests_total",
        "route" => route,
        "status" => status.to_string()
    )
    .increment(1);
    response
}

/// Whether the request carries the service's bearer token (always, when none is set).
fn authorized(app: &App, headers: &HeaderMap) -> bool {
    let Some(token) = &app.token else {
        return true;
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer)
        .unwrap_or_default();
    bool::from(given.as_bytes().ct_eq(token.as_bytes()))
}

/// The credentials of an `Authorization` value of the `Bearer` scheme, whose name is
/// case-insensitive (RFC 7235): `Bearer`, `bearer` and `BEARER` alike.
fn bearer(value: &str) -> Option<&str> {
    let (scheme, credentials) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credentials.trim_start_matches(' '))
}

async fn healthz() -> Response {
    axum::Json(json!({ "status": "ok" })).into_response()
}

/// What the open `/readyz` says when the service is not ready; the reason is logged, and
/// shown to a request that carries the service's token.
const NOT_READY: &str = "the service is not ready; the reason is in its log";

async fn readyz(State(app): State<App>, headers: HeaderMap) -> Result<Response, ApiError> {
    let Some(reason) = not_ready(&app).await else {
        return Ok(axum::Json(json!({ "status": "ready" })).into_response());
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
    let db = match app.engine.db().await {
        Ok(db) => db,
        Err(e) => return Some(e.to_string()),
    };
    if let Err(e) = db.ping().await {
        return Some(protege::Error::from(e).to_string());
    }
    app.engine
        .personas()
        .is_empty()
        .then(|| "no persona is loaded".to_owned())
}

async fn metrics(State(app): State<App>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        app.metrics.render(),
    )
        .into_response()
}

async fn personas(State(app): State<App>) -> Response {
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

/// The body of a route that takes `expected` content, or the error to answer.
fn body(
    headers: &HeaderMap,
    expected: &str,
    limit: usize,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Bytes, ApiError> {
    if let Some(given) = headers.get(header::CONTENT_TYPE) {
        let essence = given
            .to_str()
            .unwrap_or_default()
            .split(';')
            .next()
            .unwrap_or_default()
            .trim();
        if !essence.eq_ignore_ascii_case(expected) {
            return Err(ApiError::unsupported_media_type(expected));
        }
    }
    bytes.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::payload_too_large(limit)
        } else {
            ApiError::bad_request(rejection.body_text())
        }
    })
}

async fn resolve(
    State(app): State<App>,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let bytes = body(&headers, "application/json", RESOLVE_LIMIT, bytes)?;
    let slots = app.work_slots.clone();
    off_the_workers(&slots, async move { resolved(&app, &bytes).await }).await
}

/// The answer of `POST /v1/resolve` to the body `bytes`.
async fn resolved(app: &App, bytes: &[u8]) -> Result<Response, ApiError> {
    let input: ResolveInput = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(format!("invalid resolve body: {e}")))?;
    let start = Instant::now();
    let out = app.engine.resolve(&input).await?;
    metrics::histogram!("protege_resolve_seconds", "persona" => input.persona.clone())
        .record(start.elapsed().as_secs_f64());
    for step in out.steps.iter().filter(|s| s.position != 0) {
        metrics::histogram!("protege_resolver_seconds", "resolver" => step.name.clone())
            .record(step.elapsed.as_secs_f64());
    }
    let body = if input.explain {
        let rows: Vec<serde_json::Value> = out
            .steps
            .iter()
            .map(|s| {
                json!({
                    "resolver": s.name,
                    "messages": s.messages,
                    "chars": s.chars,
                    "tokens": s.tokens.unwrap_or_default(),
                    "ms": s.elapsed.as_secs_f64() * 1000.0,
                })
            })
            .collect();
        json!({ "request": out.body, "explain": rows })
    } else {
        out.body
    };
    json_text(StatusCode::OK, &body)
}

/// `?direction=` of `POST /v1/mail`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct MailQuery {
    direction: Option<String>,
}

async fn mail(
    State(app): State<App>,
    headers: HeaderMap,
    query: Result<Query<MailQuery>, QueryRejection>,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let query = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let direction = match query.direction.as_deref() {
        None | Some("inbound") => Some(Direction::Inbound),
        Some("outbound") => Some(Direction::Outbound),
        Some("auto") => None,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "unknown direction `{other}`; valid: `inbound`, `outbound`, `auto`"
            )));
        }
    };
    if headers.get(header::CONTENT_TYPE).is_none() {
        return Err(ApiError::unsupported_media_type("message/rfc822"));
    }
    let raw = body(&headers, "message/rfc822", MAIL_LIMIT, bytes)?;
    let personas = app.engine.personas();
    let own: Vec<String> = personas
        .iter()
        .flat_map(|p| p.info().addresses.clone())
        .collect();
    let mut options = EmlOptions::new(own, chrono::Utc::now());
    options.direction = direction;
    options.trusted_authserv_ids = personas
        .iter()
        .flat_map(|p| p.info().mail.trusted_authserv_ids.clone())
        .chain(app.trusted_authserv_ids.iter().cloned())
        .collect();
    let engine = app.engine.clone();
    let ingested = off_the_workers(&app.work_slots, async move {
        let db = engine.db().await?;
        Ok(ingest_eml(db, &raw, &options).await)
    })
    .await?;
    let outcome = match ingested {
        Ok(outcome) => outcome,
        Err(e) => {
            let (status, error) = match e.kind() {
                protege::ErrorKind::InvalidInput => {
                    ("rejected", ApiError::invalid_input(e.to_string()))
                }
                protege::ErrorKind::Conflict => ("conflict", ApiError::conflict(e.to_string())),
                _ => ("failed", ApiError::unavailable(e.to_string())),
            };
            metrics::counter!("protege_mail_imported_total", "status" => status).increment(1);
            return Err(error);
        }
    };
    for warning in &outcome.warnings {
        tracing::warn!(message_id = %outcome.message_id, warning = %warning, "mail stored with a fallback");
    }
    let (status, code) = if outcome.imported {
        ("imported", StatusCode::CREATED)
    } else {
        ("duplicate", StatusCode::OK)
    };
    metrics::counter!("protege_mail_imported_total", "status" => status).increment(1);
    json_text(
        code,
        &json!({
            "status": status,
            "message_id": outcome.message_id,
            "thread_id": outcome.thread_id,
            "direction": outcome.direction.as_str(),
        }),
    )
}

/// The body of `POST /v1/summaries`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SummaryBody {
    message_id: String,
    content: String,
}

async fn summaries(
    State(app): State<App>,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let bytes = body(&headers, "application/json", SUMMARY_LIMIT, bytes)?;
    let input: SummaryBody = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::bad_request(format!("invalid summary body: {e}")))?;
    if input.content.len() > protege::SUMMARY_MAX_BYTES {
        return Err(ApiError::too_large(format!(
            "the summary through `{}` is {} bytes, over the limit of {}",
            input.message_id,
            input.content.len(),
            protege::SUMMARY_MAX_BYTES
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

/// How many requests' work may run at once on the blocking pool: four per core. Beyond
/// it a request waits for a slot (its deadline still runs), so a burst of connections
/// does not turn into as many threads sharing the cores, each answer slower than the last.
fn work_slots() -> usize {
    std::thread::available_parallelism().map_or(4, |n| n.get() * 4)
}

/// Runs `work` to its end on a thread of the blocking pool, its I/O still driven by the
/// runtime, once one of `slots` is free. The CPU it spends (parsing and converting a huge
/// mail, rendering a thread, counting tokens, encoding the answer) never holds a worker of
/// the runtime, so `/healthz` answers meanwhile and the deadline answers 504 on time; when
/// the deadline answers first, the work goes on to its end (keeping its slot) and its
/// answer is dropped.
async fn off_the_workers<T: Send + 'static>(
    slots: &Arc<tokio::sync::Semaphore>,
    work: impl Future<Output = Result<T, ApiError>> + Send + 'static,
) -> Result<T, ApiError> {
    let slot = slots
        .clone()
        .acquire_owned()
        .await
        .map_err(|e| ApiError::internal(format!("the request's work cannot start: {e}")))?;
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let answer = runtime.block_on(work);
        drop(slot);
        answer
    })
    .await
    .map_err(|e| ApiError::internal(format!("the request's work stopped: {e}")))?
}

/// `value` as pretty JSON with a final newline: what `protege resolve` prints.
fn json_text(status: StatusCode, value: &serde_json::Value) -> Result<Response, ApiError> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| ApiError::internal(format!("cannot serialise the answer: {e}")))?;
    text.push('\n');
    Ok((status, [(header::CONTENT_TYPE, "application/json")], text).into_response())
}

async fn log_reloads(mut events: broadcast::Receiver<Event>) {
    loop {
        let event = match events.recv().await {
            Ok(event) => event,
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!(missed = n, "persona reload events were missed");
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let outcome = match &event {
            Event::Loaded { .. } => continue,
            Event::Reloaded { .. } => "reloaded",
            Event::Added { .. } => "added",
            Event::Removed { .. } => "removed",
            Event::Rejected { .. } => "rejected",
            _ => "other",
        };
        metrics::counter!("protege_persona_reloads_total", "outcome" => outcome).increment(1);
        match event.error_text() {
            Some(error) => tracing::warn!(
                outcome,
                path = %event.path().display(),
                error,
                "persona reload"
            ),
            None => tracing::info!(
                outcome,
                persona = event.persona().unwrap_or_default(),
                path = %event.path().display(),
                "persona reload"
            ),
        }
    }
}

/// Resolves on SIGTERM or SIGINT.
async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}

fn init_logging(format: LogFormat) {
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(false);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}
