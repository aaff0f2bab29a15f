//! The routes of the outbox (§18): composing a run's reply, listing and showing rows,
//! approving, rejecting and retrying them, holding and releasing a persona's, and the
//! claim, `sent` and `failed` of an application that delivers the bytes itself.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::Utc;
use serde_json::json;

use super::App;
use super::error::ApiError;
use super::extract::{Json, JsonBody};
use super::handlers::json_text;
use crate::engine::retry_after;
use crate::outbox::{Composed, OutboxFilter};

/// The most rows one listing or claim answers.
const MAX_LIMIT: u64 = 500;

/// `value` as JSON, or a 500 naming what failed.
pub(super) fn to_json(value: &impl serde::Serialize) -> Result<serde_json::Value, ApiError> {
    serde_json::to_value(value)
        .map_err(|e| ApiError::internal(format!("cannot serialise the answer: {e}")))
}

/// The id of a row from the path; 404 for one that is not an integer.
fn row_id(id: &str) -> Result<i64, ApiError> {
    id.parse().map_err(|_| {
        ApiError::not_found(format!(
            "unknown outbox row `{id}`: a row's id is an integer (see `GET /v1/outbox`)"
        ))
    })
}

/// `POST /v1/runs/{id}/reply`: 201 with the row when it was stored now or before (the same
/// row every time), 200 `{"status":"skipped","reason"}` when there is no reply.
pub(super) async fn compose(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let composed = app.engine.compose_reply(&id).await?;
    let status = match composed {
        Composed::Reply { .. } => StatusCode::CREATED,
        Composed::Skipped { .. } => StatusCode::OK,
    };
    json_text(status, &to_json(&composed)?)
}

/// The query string of `GET /v1/outbox` and `GET /v1/agent/jobs`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    pub(super) state: Option<String>,
    pub(super) persona: Option<String>,
    pub(super) limit: Option<u64>,
}

/// `GET /v1/outbox`: the rows, newest first.
pub(super) async fn list(
    State(app): State<App>,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let filter = OutboxFilter {
        state: query.state,
        persona: query.persona,
        limit: query.limit.unwrap_or(50).min(MAX_LIMIT),
    };
    let rows = app.engine.outbox(&filter).await?;
    json_text(StatusCode::OK, &json!({ "outbox": to_json(&rows)? }))
}

/// `GET /v1/outbox/{id}`: the row with its bytes.
pub(super) async fn show(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let row = app.engine.outbox_entry(row_id(&id)?, true).await?;
    json_text(StatusCode::OK, &to_json(&row)?)
}

/// The body of `POST /v1/outbox/{id}/approve`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ApproveBody {
    by: String,
    text: Option<String>,
}

impl JsonBody for ApproveBody {
    const WHAT: &'static str = "approve";
}

pub(super) async fn approve(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(body): Json<ApproveBody>,
) -> Result<Response, ApiError> {
    let row = app
        .engine
        .approve_reply(row_id(&id)?, &body.by, body.text.as_deref())
        .await?;
    json_text(StatusCode::OK, &to_json(&row)?)
}

/// The body of `POST /v1/outbox/{id}/reject`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RejectBody {
    by: String,
    #[serde(default)]
    reason: String,
}

impl JsonBody for RejectBody {
    const WHAT: &'static str = "reject";
}

pub(super) async fn reject(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(body): Json<RejectBody>,
) -> Result<Response, ApiError> {
    let row = app
        .engine
        .reject_reply(row_id(&id)?, &body.by, &body.reason)
        .await?;
    json_text(StatusCode::OK, &to_json(&row)?)
}

/// The body of `POST /v1/outbox/{id}/retry`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RetryBody {
    by: String,
}

impl JsonBody for RetryBody {
    const WHAT: &'static str = "retry";
}

pub(super) async fn retry(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(body): Json<RetryBody>,
) -> Result<Response, ApiError> {
    let row = app.engine.retry_reply(row_id(&id)?, &body.by).await?;
    json_text(StatusCode::OK, &to_json(&row)?)
}

/// The body of `POST /v1/outbox/hold` and `/release`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HoldBody {
    persona: Option<String>,
}

impl JsonBody for HoldBody {
    const WHAT: &'static str = "hold";
}

pub(super) async fn hold(
    State(app): State<App>,
    Json(body): Json<HoldBody>,
) -> Result<Response, ApiError> {
    let n = app.engine.hold_outbox(body.persona.as_deref()).await?;
    json_text(StatusCode::OK, &json!({ "held": n }))
}

pub(super) async fn release(
    State(app): State<App>,
    Json(body): Json<HoldBody>,
) -> Result<Response, ApiError> {
    let n = app.engine.release_outbox(body.persona.as_deref()).await?;
    json_text(StatusCode::OK, &json!({ "released": n }))
}

/// The body of `POST /v1/outbox/claim`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ClaimBody {
    owner: String,
    #[serde(default = "one")]
    limit: u64,
    /// Seconds (default 60).
    lease: Option<u64>,
    persona: Option<String>,
}

fn one() -> u64 {
    1
}

impl JsonBody for ClaimBody {
    const WHAT: &'static str = "claim";
}

/// `POST /v1/outbox/claim`: up to `limit` queued rows moved to `sending` under the caller's
/// lease, with their bytes.
pub(super) async fn claim(
    State(app): State<App>,
    Json(body): Json<ClaimBody>,
) -> Result<Response, ApiError> {
    let lease = match body.lease {
        Some(0) => {
            return Err(ApiError::invalid_input(
                "`lease` must be a positive number of seconds",
            ));
        }
        Some(s) => std::time::Duration::from_secs(s.min(24 * 3600)),
        None => crate::outbox::DEFAULT_LEASE,
    };
    let rows = app
        .engine
        .claim_outbox(
            &body.owner,
            body.limit.clamp(1, MAX_LIMIT),
            lease,
            body.persona.as_deref(),
        )
        .await?;
    json_text(StatusCode::OK, &json!({ "outbox": to_json(&rows)? }))
}

/// The body of `POST /v1/outbox/{id}/sent`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SentBody {
    owner: String,
    #[serde(default)]
    smtp_reply: String,
}

impl JsonBody for SentBody {
    const WHAT: &'static str = "sent";
}

pub(super) async fn sent(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(body): Json<SentBody>,
) -> Result<Response, ApiError> {
    let row = app
        .engine
        .mark_sent(row_id(&id)?, &body.owner, &body.smtp_reply)
        .await?;
    json_text(StatusCode::OK, &to_json(&row)?)
}

/// The body of `POST /v1/outbox/{id}/failed`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FailedBody {
    owner: String,
    #[serde(default)]
    smtp_reply: String,
    #[serde(default)]
    retry: bool,
}

impl JsonBody for FailedBody {
    const WHAT: &'static str = "failed";
}

pub(super) async fn failed(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(body): Json<FailedBody>,
) -> Result<Response, ApiError> {
    let id = row_id(&id)?;
    let retry_at = if body.retry {
        let row = app.engine.outbox_entry(id, false).await?;
        Some(Utc::now() + retry_after(row.attempts))
    } else {
        None
    };
    let row = app
        .engine
        .mark_failed(id, &body.owner, &body.smtp_reply, retry_at)
        .await?;
    json_text(StatusCode::OK, &to_json(&row)?)
}
