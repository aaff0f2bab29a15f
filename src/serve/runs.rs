//! The routes of runs (§13): `POST /v1/runs`, `POST /v1/runs/{id}/rounds`,
//! `GET /v1/runs/{id}`, `POST /v1/runs/{id}/abandon`, `GET /v1/runs?message_id=`, and the
//! usage metrics of the rounds they record.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use super::App;
use super::error::ApiError;
use super::extract::{Json, JsonBody};
use super::handlers::{json_text, off_the_workers};
use crate::ResolveInput;
use crate::engine::{Recorded, RoundInput, ToolResult};

/// The body of `POST /v1/runs/{id}/rounds`: a [`RoundInput`] whose `results` may be `null`
/// (the response alone, the round pending); absent, it is `[]`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RoundBody {
    round: u32,
    response: Value,
    #[serde(default = "no_results", deserialize_with = "nullable")]
    results: Option<Vec<ToolResult>>,
}

fn no_results() -> Option<Vec<ToolResult>> {
    Some(Vec::new())
}

fn nullable<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<ToolResult>>, D::Error> {
    serde::Deserialize::deserialize(d)
}

impl JsonBody for RoundBody {
    const WHAT: &'static str = "round";
}

/// The body of `POST /v1/runs/{id}/abandon`: `{}`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AbandonBody {}

impl JsonBody for AbandonBody {
    const WHAT: &'static str = "abandon";
}

/// The query string of `GET /v1/runs`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    message_id: String,
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

/// `POST /v1/runs/{id}/rounds`: the round recorded, or with `"results": null` its response
/// stored alone (the round pending).
pub(super) async fn record(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(body): Json<RoundBody>,
) -> Result<Response, ApiError> {
    let engine = app.engine.clone();
    let (answer, recorded): (Result<Value, ApiError>, Option<Recorded>) =
        off_the_workers(&app.work_slots, async move {
            let out = match body.results {
                Some(results) => {
                    let input = RoundInput {
                        round: body.round,
                        response: body.response,
                        results,
                    };
                    engine
                        .record_round_counted(&id, input)
                        .await
                        .map(|(step, recorded)| {
                            let answer = step.map_err(ApiError::from).and_then(|s| to_json(&s));
                            (answer, recorded)
                        })
                }
                None => engine
                    .record_response_counted(&id, body.round, body.response)
                    .await
                    .map(|(pending, recorded)| (to_json(&pending), recorded)),
            };
            out.map_err(ApiError::from)
        })
        .await?;
    if let Some(recorded) = recorded {
        count(&recorded);
    }
    json_text(StatusCode::OK, &answer?)
}

pub(super) async fn show(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let record = app.engine.run(&id).await?;
    json_text(StatusCode::OK, &to_json(&record)?)
}

/// `POST /v1/runs/{id}/abandon`: the run's columns once it is `abandoned`.
pub(super) async fn abandon(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(AbandonBody {}): Json<AbandonBody>,
) -> Result<Response, ApiError> {
    let run = app.engine.abandon_run(&id).await?;
    json_text(StatusCode::OK, &to_json(&run)?)
}

/// `GET /v1/runs?message_id=`: the runs of a message, oldest first.
pub(super) async fn list(
    State(app): State<App>,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let runs = app.engine.runs_of_message(&query.message_id).await?;
    json_text(StatusCode::OK, &json!({ "runs": to_json(&runs)? }))
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
    metrics::counter!("protege_output_tokens_total", "persona" => persona.clone())
        .increment(u.output);
    // USD, a fraction: the facade's counters count whole numbers, so the total grows as a
    // gauge that is only ever increased.
    if let Some(cost) = recorded.cost.filter(|c| *c > 0.0) {
        metrics::gauge!("protege_cost_total", "persona" => persona).increment(cost);
    }
    if let Some(rounds) = recorded.ended {
        metrics::histogram!("protege_run_rounds").record(f64::from(rounds));
    }
}
