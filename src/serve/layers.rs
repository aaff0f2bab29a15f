//! The layers every route runs under: one log line and the request counter, the bearer
//! token, the deadline, and the early answer to a body declared over a route's limit.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq as _;
use tracing::Instrument as _;

use super::App;
use super::error::ApiError;
use super::extract::Limit;

/// The route of a request as its pattern (`/v1/resolve`), `unmatched` when no route took it.
fn route(request: &Request) -> String {
    request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |p| p.as_str())
        .to_owned()
}

/// One log line, one count of `protege_http_requests_total` and one `http.request` span
/// (named `METHOD ROUTE`, as OpenTelemetry's HTTP conventions name a server span) per
/// request.
pub(super) async fn log(request: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = request.method().clone();
    let route = route(&request);
    let span = tracing::info_span!(
        "http.request",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        http.request.method = %method,
        http.route = %route,
        http.response.status_code = tracing::field::Empty,
    );
    let response = next.run(request).instrument(span.clone()).await;
    let status = response.status().as_u16();
    span.record("http.response.status_code", i64::from(status));
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

/// The routes open without the token, told by their end so the router keeps its
/// protection when an application nests it under a prefix: the probes, and the inspector
/// page's three files, which carry no data.
const OPEN_ROUTES: [&str; 5] = ["/healthz", "/readyz", "/ui", "/ui/app.js", "/ui/app.css"];

/// `401` for a request to `/v1/*`, `/metrics` or no route without the service's token.
pub(super) async fn auth(State(app): State<App>, request: Request, next: Next) -> Response {
    let open = request
        .extensions()
        .get::<MatchedPath>()
        .is_some_and(|p| OPEN_ROUTES.iter().any(|open| p.as_str().ends_with(open)));
    if !open && !authorized(&app, request.headers()) {
        return ApiError::unauthorized().into_response();
    }
    next.run(request).await
}

/// `504` for a request still running at the deadline.
pub(super) async fn deadline(State(app): State<App>, request: Request, next: Next) -> Response {
    match tokio::time::timeout(app.deadline, next.run(request)).await {
        Ok(response) => response,
        Err(_) => ApiError::timeout(app.deadline.as_secs_f64()).into_response(),
    }
}

/// `413` for a `Content-Length` over `limit`, before any byte of the body is read.
pub(super) async fn early_limit(limit: usize, mut request: Request, next: Next) -> Response {
    request.extensions_mut().insert(Limit(limit));
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

/// Whether the request carries the service's bearer token (always, when none is set).
pub(super) fn authorized(app: &App, headers: &HeaderMap) -> bool {
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
