//! The routes of runs (§13): `POST /v1/runs`, `POST /v1/runs/{id}/rounds`,
//! `GET /v1/runs/{id}`, and the usage metrics of the rounds they record.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::App;
use super::error::ApiError;
use super::extract::{Json, JsonBody};
use super::handlers::{json_text, off_the_workers};
use crate::ResolveInput;
use crate::engine::{Recorded, RoundInput};

impl JsonBody for RoundInput {
    const WHAT: &'static str = "round";
}

fn to_json(value: &impl serde::Serialize) -> Result<serde_json::Value, ApiError> {
    serde_json::to_value(value)
        .map_err(|e| ApiError::internal(format!("cannot serialise the answer: {e}")))
}

pub(super) async fn start(
    State(app): State<App>,
    Json(input): Json<ResolveInput>,
) -> Result<Response, ApiError> {
    let engine = app.engine.clone();
    let run = off_the_workers(&app.work_slots, async move {
        engine.start_run(&input).await.map_err(ApiError::from)
    })
    .await?;
    json_text(StatusCode::CREATED, &to_json(&run)?)
}

pub(super) async fn record(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(input): Json<RoundInput>,
) -> Result<Response, ApiError> {
    let engine = app.engine.clone();
    let (step, recorded) = off_the_workers(&app.work_slots, async move {
        engine
            .record_round_counted(&id, input)
            .await
            .map_err(ApiError::from)
    })
    .await?;
    if let Some(recorded) = recorded {
        count(&recorded);
    }
    json_text(StatusCode::OK, &to_json(&step?)?)
}

pub(super) async fn show(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let record = app.engine.run(&id).await?;
    json_text(StatusCode::OK, &to_json(&record)?)
}

/// The usage metrics of a recorded round: tokens by kind, and the run's rounds when it
/// ended.
fn count(recorded: &Recorded) {
    let persona = recorded.persona.clone();
    let u = &recorded.usage;
    for (kind, n) in [
        ("uncached", u.input),
        ("cache_read", u.cache_read),
        ("cache_write", u.cache_write),
    ] {
        metrics::counter!("protege_input_tokens_total", "persona" => persona.clone(), "kind" => kind)
            .increment(n);
    }
    metrics::counter!("protege_output_tokens_total", "persona" => persona).increment(u.output);
    if let Some(rounds) = recorded.ended {
        metrics::histogram!("protege_run_rounds").record(f64::from(rounds));
    }
}
