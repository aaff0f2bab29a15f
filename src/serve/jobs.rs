//! The routes of the agent's jobs (§17): the listing and the retry of a failed job.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::json;

use super::App;
use super::error::ApiError;
use super::extract::{Json, JsonBody};
use super::handlers::json_text;
use super::outbox::{ListQuery, to_json};
use crate::db::JobFilter;

/// The most jobs one listing answers.
const MAX_LIMIT: u64 = 500;

/// `GET /v1/agent/jobs`: the jobs, newest first.
pub(super) async fn list(
    State(app): State<App>,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let filter = JobFilter {
        state: query.state,
        persona: query.persona,
        limit: query.limit.unwrap_or(50).min(MAX_LIMIT),
    };
    let jobs = app.engine.agent_jobs(&filter).await?;
    json_text(StatusCode::OK, &json!({ "jobs": to_json(&jobs)? }))
}

/// The body of `POST /v1/agent/jobs/{id}/retry`: `{}`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RetryBody {}

impl JsonBody for RetryBody {
    const WHAT: &'static str = "job retry";
}

/// `POST /v1/agent/jobs/{id}/retry`: 200 the job, `queued`; 409 unless it was `failed`.
pub(super) async fn retry(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(_): Json<RetryBody>,
) -> Result<Response, ApiError> {
    let id: i64 = id.parse().map_err(|_| {
        ApiError::not_found(format!(
            "unknown job `{id}`: a job's id is an integer (see `GET /v1/agent/jobs`)"
        ))
    })?;
    let job = app.engine.retry_job(id).await?;
    json_text(StatusCode::OK, &to_json(&job)?)
}

/// `GET /v1/runs/{id}/waiting`: the calls a waiting run waits for; 409 unless it waits.
#[cfg(feature = "agent")]
pub(super) async fn waiting(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    json_text(StatusCode::OK, &app.engine.waiting_run(&id).await?)
}

/// The body of `POST /v1/runs/{id}/approve`: who approves, and every waiting call once.
#[cfg(feature = "agent")]
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ApproveBody {
    by: String,
    calls: Vec<crate::agent::ApprovedCall>,
}

#[cfg(feature = "agent")]
impl JsonBody for ApproveBody {
    const WHAT: &'static str = "approval";
}

/// `POST /v1/runs/{id}/approve`: 202 `{"run_id","status":"approved","job"}`; 409 unless
/// the run waits; 422 for a call listed wrongly or an input that fails the tool's schema.
#[cfg(feature = "agent")]
pub(super) async fn approve(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(body): Json<ApproveBody>,
) -> Result<Response, ApiError> {
    let answer = app.engine.approve_run(&id, &body.by, &body.calls).await?;
    json_text(StatusCode::ACCEPTED, &answer)
}

/// The body of `POST /v1/runs/{id}/reject`.
#[cfg(feature = "agent")]
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RejectBody {
    by: String,
    reason: String,
}

#[cfg(feature = "agent")]
impl JsonBody for RejectBody {
    const WHAT: &'static str = "rejection";
}

/// `POST /v1/runs/{id}/reject`: 200 `{"run_id","status":"rejected"}`; 409 unless the run
/// waits.
#[cfg(feature = "agent")]
pub(super) async fn reject(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(body): Json<RejectBody>,
) -> Result<Response, ApiError> {
    let answer = app.engine.reject_run(&id, &body.by, &body.reason).await?;
    json_text(StatusCode::OK, &answer)
}
