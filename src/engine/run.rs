//! Runs (§13): [`Engine::start_run`], [`Engine::record_round`], [`Engine::record_response`],
//! [`Engine::abandon_run`], [`Engine::run`] and [`Engine::runs_of_message`].
//!
//! A run answers one trigger. Round 0 is the body a resolve builds; the application sends
//! it, records the provider's response and the results of the tools it asked for, and gets
//! the next body, until the model answers without tool calls. Each round is one
//! transaction; its calls and results become `tool_uses` rows of the trigger message, so
//! the next reply's `ThreadHistory` replays them like rows imported from a fixture, once
//! the run ended `done` or `stopped`. A round's response may be stored before its results
//! (a pending round), so a job resumed elsewhere never asks the provider again.

use std::collections::HashMap;

use chrono::{DateTime, SecondsFormat, Utc};
use sea_orm::DatabaseConnection;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use protege_core::db::entities::{run as run_row, run_round};
use protege_core::db::{RunFormat, RunStatus};
use protege_core::wire::{
    ModelResponse, ModelSpec, Outcome, Usage, from_anthropic_response, from_openai_response,
    from_openai_responses_response, function_call_output,
};
use protege_core::{
    CacheHints, CacheMode, CacheTtl, DEFAULT_MAX_ROUNDS, DEFAULT_TOOL_RESULT_BYTES, Message, Part,
    Prices, Request, Role, message,
};

use super::{Engine, EngineError, EngineErrorKind, Format, ResolveInput, encode, trace};
use crate::db;

/// A run that started: its id and round 0's body (exactly what a resolve of the same input
/// gives). Serialises as `{"run_id","round","body"}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Run {
    /// The run's id: `run_` and a ULID (unique, sortable by start time).
    #[serde(rename = "run_id")]
    pub id: String,
    /// The round `body` is: 0.
    pub round: u32,
    /// The request body to send to the provider.
    pub body: Value,
}

/// One tool result of a round: the call it answers, its text, and whether the tool failed.
///
/// `content` is text; any other JSON value given in its place is kept as its compact JSON
/// text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolResult {
    /// The id of the call it answers.
    pub tool_call_id: String,
    /// The result text, replayed byte for byte.
    #[serde(deserialize_with = "content_text")]
    pub content: String,
    /// Whether the tool failed (default false).
    #[serde(default)]
    pub is_error: bool,
}

fn content_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(text) => text,
        other => other.to_string(),
    })
}

impl ToolResult {
    /// The result `content` of call `tool_call_id`.
    pub fn new(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            tool_call_id: tool_call_id.into(),
            content: content.into(),
            is_error: false,
        }
    }

    /// Marks the result as a tool's error.
    #[must_use = "returns the changed result"]
    pub fn error(mut self, is_error: bool) -> Self {
        self.is_error = is_error;
        self
    }
}

/// One round to record: its number, the provider's whole response body, and one result
/// per tool call of the response (none when it calls no tool). Also the JSON body of
/// `POST /v1/runs/{id}/rounds`, where `"results": null` stores the response alone
/// ([`Engine::record_response`]).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoundInput {
    /// The round answered: 0 for the body of [`Engine::start_run`], then the `round` of
    /// each [`Step::Continue`].
    pub round: u32,
    /// The provider's response to that round's body (non-streamed, the whole 200 body).
    pub response: Value,
    /// The results of the response's tool calls.
    #[serde(default)]
    pub results: Vec<ToolResult>,
}

/// What comes after a recorded round.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// The model called tools: send `body` (round 0's request, each round's assistant turn
    /// and tool results) and record its response as round `round`.
    Continue {
        /// The next round's number.
        round: u32,
        /// Its request body.
        body: Value,
    },
    /// The model answered without tool calls: `text` is its final answer, `usage` the
    /// run's (the sum of its rounds').
    Done {
        /// The answer's text.
        text: String,
        /// The run's usage.
        usage: Usage,
    },
    /// The response ended the run early (a refusal, an output budget reached, a filter):
    /// its text so far, the run's usage, and the provider's stop reason.
    Stopped {
        /// The text of the last response.
        text: String,
        /// The run's usage.
        usage: Usage,
        /// The provider's stop reason, e.g. `max_tokens`, `length` or `refusal`.
        stop_reason: String,
    },
}

impl Serialize for Step {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Step::Continue { round, body } => {
                json!({ "status": "continue", "round": round, "body": body })
            }
            Step::Done { text, usage } => json!({ "status": "done", "text": text, "usage": usage }),
            Step::Stopped {
                text,
                usage,
                stop_reason,
            } => json!({
                "status": "stopped", "text": text, "usage": usage, "stop_reason": stop_reason,
            }),
        }
        .serialize(s)
    }
}

/// A round whose response is stored and whose results are not yet
/// ([`Engine::record_response`]): its number and the tool calls to answer. Serialises as
/// `{"status":"pending","round","calls":[{"tool_call_id","name","input"}]}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename = "pending")]
pub struct Pending {
    /// The round's number.
    pub round: u32,
    /// The response's tool calls, in order (none when the model answered without calls:
    /// record the round with no results).
    pub calls: Vec<PendingCall>,
}

/// A tool call of a pending round.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PendingCall {
    /// The call's id, which its result answers.
    pub tool_call_id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, a JSON object.
    pub input: Value,
}

/// The pending round of a run that goes on ([`Engine::pending_round`]): what a job resumed
/// elsewhere needs to make the calls that have no result yet and record the round, without
/// asking the provider again.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingRound {
    /// The round's number.
    pub round: u32,
    /// The provider's response as recorded: give it back to [`Engine::record_round`] with
    /// the results.
    pub response: Value,
    /// The response parsed in the run's format: the assistant message, usage, stop reason.
    pub parsed: ModelResponse,
    /// Its tool calls, in order.
    pub calls: Vec<PendingCall>,
}

/// A run as stored, with its rounds: the answer of `GET /v1/runs/{id}` and `protege run
/// show`, `{"run":{...},"rounds":[{"round","response","results","usage"}]}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRecord {
    /// The run's columns (its `message_id` the Message-ID answered).
    pub run: RunInfo,
    /// Its rounds, in order.
    pub rounds: Vec<RoundRecord>,
}

/// The columns of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunInfo {
    /// `run_` and a ULID.
    pub id: String,
    /// The persona.
    pub persona: String,
    /// The Message-ID of the inbound message answered; `None` for a scheduled run.
    pub message_id: Option<String>,
    /// The responsibility fired; `None` for a reply run.
    pub responsibility: Option<String>,
    /// The wire format of its bodies and responses: `openai`, `openai-responses` or
    /// `anthropic` in JSON.
    pub format: RunFormat,
    /// The model.
    pub model: String,
    /// `started`, `waiting`, `done`, `stopped` or `abandoned`.
    pub status: RunStatus,
    /// How many rounds are recorded with their results (a pending round is not counted).
    pub rounds: u32,
    /// Uncached input tokens, summed over the rounds.
    pub input_tokens: u64,
    /// Output tokens, summed over the rounds.
    pub output_tokens: u64,
    /// Input tokens read from the cache, summed over the rounds.
    pub cache_read_tokens: u64,
    /// Input tokens written to the cache, summed over the rounds.
    pub cache_write_tokens: u64,
    /// The SHA-256 of round 0's body as compact JSON (hex).
    pub request_sha256: String,
    /// When it started (RFC 3339, UTC).
    pub started_at: String,
    /// When it ended.
    pub finished_at: Option<String>,
}

/// A recorded round.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundRecord {
    /// The round's number.
    pub round: u32,
    /// The response as recorded.
    pub response: Value,
    /// The results as recorded; `None` (`null`) while the round is pending.
    pub results: Option<Vec<ToolResult>>,
    /// The usage the response reported.
    pub usage: Usage,
}

/// Round 0's request as a run keeps it (the `request` column): the canonical request, its
/// cache hints and the model, so the next bodies are built without resolving again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct StoredRequest {
    request: Request,
    history_end: Option<usize>,
    cache_key: Option<String>,
    model: String,
    max_tokens: Option<u32>,
    cache: CacheMode,
    /// `[model] cache_ttl` (absent in runs stored before it, and when `5m`).
    #[serde(default, skip_serializing_if = "CacheTtl::is_default")]
    cache_ttl: CacheTtl,
    /// Whether the prefix breakpoints last an hour (`cache_ttl = "auto"`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    hour: bool,
}

/// The bodies of `run` that its recorded `rounds` (in order) answered: body k is what
/// [`Engine::record_round`] gave after round k − 1 (round 0's for k = 0), built the same
/// way from the stored request.
pub(super) async fn round_bodies(
    conn: &DatabaseConnection,
    run: &run_row::Model,
    rounds: &[run_round::Model],
) -> Result<Vec<Value>, EngineError> {
    let rounds: Vec<&run_round::Model> = rounds.iter().collect();
    let parsed = parse_rounds(run, &rounds)?;
    let parts = read_parts(conn, run, &parsed).await?;
    (0..parsed.len())
        .map(|k| next_body(run, &parsed[..k], &parts))
        .collect()
}

/// The images and documents the successful calls of the built-in `read_attachment` in
/// `rounds` of `run` returned, by call id, rebuilt from the attachments' stored bytes (a
/// result stores only its text): no statement for rounds without such a call.
async fn read_parts(
    conn: &DatabaseConnection,
    run: &run_row::Model,
    rounds: &[ParsedRound],
) -> Result<HashMap<String, Part>, EngineError> {
    let Some(message) = run.message_id else {
        return Ok(HashMap::new());
    };
    let mut calls = Vec::new();
    for r in rounds {
        for c in &r.response.message.tool_calls {
            if r.results
                .iter()
                .any(|x| x.tool_call_id == c.id && !x.is_error)
            {
                calls.push((c.id.as_str(), c.name.as_str(), &c.input));
            }
        }
    }
    Ok(db::read_attachment_parts(conn, message, calls).await?)
}

/// The conversation of a run: the cache key of its stored request (`None` when it has
/// none or cannot be read).
pub(super) fn stored_cache_key(text: &str) -> Option<String> {
    serde_json::from_str::<StoredRequest>(text)
        .ok()
        .and_then(|s| s.cache_key)
}

/// The canonical round-0 request of a run's stored `request` column, with its tools.
pub(super) fn stored_request(text: &str) -> Option<Request> {
    serde_json::from_str::<StoredRequest>(text)
        .ok()
        .map(|s| s.request)
}

impl StoredRequest {
    fn spec(&self) -> ModelSpec {
        ModelSpec::new(self.model.clone())
            .max_tokens(self.max_tokens)
            .cache(self.cache)
            .cache_ttl(self.cache_ttl)
    }
}

impl Engine {
    /// What `usage` of a run of `persona` on `model` cost in USD: at the model's shipped
    /// prices under the persona's `[model] prices`; `None` when neither knows the model.
    pub(crate) fn usage_cost(&self, persona: &str, model: &str, usage: &Usage) -> Option<f64> {
        let overrides = self
            .persona(persona)
            .and_then(|p| p.info().model.as_ref().and_then(|m| m.prices));
        Prices::resolve(model, overrides.as_ref()).map(|p| p.usage_cost(usage))
    }

    /// Starts a run of `input` (a reply to an inbound message or a responsibility), in a
    /// provider's format (`openai`, `openai-responses`, `anthropic`, or `provider` for the
    /// persona's):
    /// resolves it as [`Engine::resolve`] does, stores the run, and returns its id and
    /// round 0's body. The canonical `messages` format is a
    /// [`EngineErrorKind::BadRequest`]: a run parses the provider's responses.
    pub async fn start_run(&self, input: &ResolveInput) -> Result<Run, EngineError> {
        self.start_run_offering(input, &super::Offer::default(), false)
            .await
    }

    /// [`Engine::start_run`] with what `offer` adds to the persona's tools; `for_agent`
    /// when the agent starts it, the only one that may start a run for a message that has
    /// an agent job.
    pub(crate) async fn start_run_offering(
        &self,
        input: &ResolveInput,
        offer: &super::Offer<'_>,
        for_agent: bool,
    ) -> Result<Run, EngineError> {
        if input.format == Format::Messages {
            return Err(EngineError::new(
                EngineErrorKind::BadRequest,
                super::input::RUN_NEEDS_A_WIRE_FORMAT,
            ));
        }
        let (out, parts) = self.resolve_with_parts(input, offer).await?;
        if let (Some(id), Some(row)) = (&input.message_id, parts.message_row) {
            self.check_addressed(&input.persona, id, row).await?;
            // A job the agent skipped leaves the message to the application.
            if !for_agent
                && let Some(job) = db::job_of_message(self.db().await?, row).await?
                && job.state != db::job_state::SKIPPED
            {
                return Err(EngineError::new(
                    EngineErrorKind::Conflict,
                    format!(
                        "message `{id}` is answered by the agent (job {}, `{}`): a run of its own would answer it twice; see `protege agent jobs`",
                        job.id, job.state
                    ),
                ));
            }
        }
        let spec = parts
            .model
            .ok_or_else(|| EngineError::new(EngineErrorKind::BadRequest, "a run needs a model"))?;
        let started_at = match input.now {
            Some(now) => super::input::run_time(now)
                .map_err(|m| EngineError::new(EngineErrorKind::BadRequest, m))?,
            None => Utc::now(),
        };
        // Microseconds, as every backend stores a time.
        let started_at = micros(started_at);
        // A scheduled run keeps which stored messages its request held: erasing one of
        // them erases the run (a reply run is found through its trigger).
        let sources = match parts.message_row {
            Some(_) => Vec::new(),
            None => quoted_messages(&out.request.sources),
        };
        let stored = StoredRequest {
            history_end: out.request.cache.history_end,
            cache_key: out.request.cache.key.clone(),
            model: spec.name.clone(),
            max_tokens: spec.max_tokens,
            cache: spec.cache,
            cache_ttl: spec.cache_ttl,
            hour: out.request.cache.hour,
            request: out.request,
        };
        let id = new_run_id(started_at);
        let body_bytes = serde_json::to_vec(&out.body).unwrap_or_default();
        let new = db::NewRun {
            id: id.clone(),
            persona: input.persona.clone(),
            message_id: parts.message_row,
            responsibility: input.responsibility.clone(),
            format: parts.format.run_format()?,
            model: spec.name,
            request_sha256: protege_mail::sha256_hex(&body_bytes),
            request: serde_json::to_string(&stored).unwrap_or_default(),
            started_at,
            sources,
        };
        db::insert_run(self.db().await?, &new).await?;
        Ok(Run {
            id,
            round: 0,
            body: out.body,
        })
    }

    /// Refuses a reply run of `persona` on message `id` (row `row`) that was not sent to
    /// it: one of the persona's addresses must be in the message's To or Cc, or have sent
    /// mail in its thread. Else any persona could answer any stored mail, and its tool
    /// rounds would be replayed in a thread it has no part in. A persona that declares no
    /// address has no mailbox to check, and answers what it is given.
    async fn check_addressed(&self, persona: &str, id: &str, row: i64) -> Result<(), EngineError> {
        let Some(persona) = self.persona(persona) else {
            return Ok(());
        };
        let own: Vec<String> = persona
            .info()
            .addresses
            .iter()
            .map(|a| a.trim().to_lowercase())
            .collect();
        if own.is_empty() {
            return Ok(());
        }
        let conn = self.db().await?;
        if db::persona_addressed(conn, row, &own).await? {
            return Ok(());
        }
        Err(EngineError::new(
            EngineErrorKind::InvalidInput,
            format!(
                "message `{id}` was not sent to persona `{}`: none of its addresses is in the message's To or Cc or sent mail in its thread",
                persona.name()
            ),
        ))
    }

    /// Records round `input.round` of run `run_id` and says what comes next.
    ///
    /// The response must be one of the run's format (else [`EngineErrorKind::InvalidInput`]
    /// naming the JSON path, nothing stored); the results must answer exactly its tool
    /// calls, one per call id (else `InvalidInput` naming the id). Recording a round again
    /// with the same response and results returns the same answer; a different one, a
    /// round other than the next, or any round of a run that ended is
    /// [`EngineErrorKind::Conflict`]. A result over `[limits] tool_result_bytes` is
    /// [`EngineErrorKind::TooLarge`]; a response asking for tools in the last round
    /// `[limits] max_rounds` allows is recorded, stops the run and is `InvalidInput`.
    pub async fn record_round(&self, run_id: &str, input: RoundInput) -> Result<Step, EngineError> {
        self.record_round_counted(run_id, input).await?.0
    }

    /// [`Engine::record_round`] for calls that ran with other inputs than the model's (an
    /// operator edited them when approving): `inputs` pairs a call id with the input that
    /// ran, which its `tool_uses` row keeps.
    #[cfg(feature = "agent")]
    pub(crate) async fn record_round_ran(
        &self,
        run_id: &str,
        input: RoundInput,
        inputs: &[(String, Value)],
    ) -> Result<Step, EngineError> {
        let span = trace::round_span(run_id, input.round);
        let out = self.record_round_traced(run_id, input, &span, inputs).await;
        match &out {
            Ok((Err(e), _)) | Err(e) => trace::record_error(&span, e),
            Ok((Ok(_), _)) => {}
        }
        out?.0
    }

    /// [`Engine::record_round`], with what this call recorded for the metrics (`None` when
    /// it recorded nothing new: a retry). The outer error means nothing was recorded; the
    /// inner one is the answer to a round that was (a run stopped by `max_rounds`).
    pub(crate) async fn record_round_counted(
        &self,
        run_id: &str,
        input: RoundInput,
    ) -> Result<(Result<Step, EngineError>, Option<Recorded>), EngineError> {
        let span = trace::round_span(run_id, input.round);
        let out = self.record_round_traced(run_id, input, &span, &[]).await;
        match &out {
            Ok((Err(e), _)) | Err(e) => trace::record_error(&span, e),
            Ok((Ok(_), _)) => {}
        }
        out
    }

    /// [`Engine::record_round_counted`] for `span`, which gets the round's usage.
    async fn record_round_traced(
        &self,
        run_id: &str,
        input: RoundInput,
        span: &tracing::Span,
        inputs: &[(String, Value)],
    ) -> Result<(Result<Step, EngineError>, Option<Recorded>), EngineError> {
        let conn = self.db().await?;
        let round = i32::try_from(input.round).unwrap_or(i32::MAX);
        // The round this process just stored pending, completed with the response stored:
        // the row as that write left it and the earlier rounds parsed, nothing read back.
        let mut known = self
            .inner
            .rounds
            .take_pending(run_id, round, &input.response);
        let mut run = match &known {
            Some((run, _)) => run.clone(),
            None => self.load_run_row(run_id).await?,
        };
        let response = parse_response(&run, &input.response)?;
        trace::record_usage(span, &run, &response.usage);
        let results = &input.results;
        // A writer that loses the race for the round reads what the winner wrote and
        // answers from it: a retry, a run that ended, or the round now pending.
        for _ in 0..WRITE_ATTEMPTS {
            if round < run.rounds {
                span.record("protege.run.replayed", true);
                let step = self.replayed(&run, input.round, &input.response, results);
                return Ok((step.await, None));
            }
            check_next(&run, input.round)?;
            let (max_rounds, max_bytes) = self.run_limits(&run.persona);
            check_results(&run, input.round, &response, results, max_bytes)?;
            check_response(&run, input.round, &response)?;
            check_reasoning_model(&run, input.round, &input.response, &response)?;
            let (pending, rounds) = match known.take() {
                // Its call ids were checked against the thread's and the earlier rounds'
                // when the response was stored.
                Some((_, earlier)) => (true, earlier),
                None => match self.stored_rounds(conn, &run, &input, &response).await? {
                    Some(stored) => stored,
                    None => {
                        // Another writer recorded the round since the run was read.
                        run = self.load_run_row(run_id).await?;
                        continue;
                    }
                },
            };
            let status = status_after(&response, input.round, max_rounds);
            span.record("protege.run.status", status.as_str());
            let mut new = new_round(round, pending, &input.response, results, &response, status);
            with_inputs_ran(&mut new, inputs);
            match db::record_round(conn, &run, &new).await? {
                db::RoundWrite::Recorded => {}
                db::RoundWrite::Raced => {
                    run = self.load_run_row(run_id).await?;
                    continue;
                }
            }
            // A pending round's usage was counted when its response was stored.
            let usage = if new.pending {
                Usage::default()
            } else {
                response.usage
            };
            let ended = (status != RunStatus::Started).then_some(input.round + 1);
            let recorded = self.recorded(&run, usage, ended);
            let parsed = ParsedRound {
                response,
                results: input.results,
            };
            let step = self
                .step_recorded(conn, run, &new, parsed, rounds, input.round)
                .await?;
            return Ok((step, Some(recorded)));
        }
        Err(busy(&run, input.round))
    }

    /// The rounds of `run` stored before round `input.round` (whose response is
    /// `response`), parsed, with its call ids checked against theirs and the thread's (or
    /// the stored response checked to be the same), and whether that round is stored
    /// pending; `None` when another writer recorded the round since `run` was read.
    async fn stored_rounds(
        &self,
        conn: &DatabaseConnection,
        run: &run_row::Model,
        input: &RoundInput,
        response: &ModelResponse,
    ) -> Result<Option<(bool, Vec<ParsedRound>)>, EngineError> {
        // The rounds stored: the pending one, if any, and those before it, whose call ids
        // are checked against this round's and which make the next body.
        let stored = db::load_rounds(conn, &run.id).await?;
        let round = i32::try_from(input.round).unwrap_or(i32::MAX);
        let pending = stored.iter().find(|r| r.round == round);
        if pending.is_some_and(|r| !r.is_pending()) {
            return Ok(None);
        }
        match pending {
            // The very response stored: its call ids were checked against the thread's
            // when it was.
            Some(pending) => check_pending_response(run, pending, &input.response)?,
            None => {
                self.check_thread_call_ids(run, input.round, response)
                    .await?
            }
        }
        let earlier = earlier_rounds(&self.inner.rounds, run, input.round, response, &stored)?;
        Ok(Some((pending.is_some(), earlier)))
    }

    /// What recording `usage` in a round of `run` comes to, for the metrics: its cost at
    /// the run model's prices, and the run's rounds when the round `ended` it.
    fn recorded(&self, run: &run_row::Model, usage: Usage, ended: Option<u32>) -> Recorded {
        Recorded {
            persona: run.persona.clone(),
            usage,
            cost: self.usage_cost(&run.persona, &run.model, &usage),
            ended,
        }
    }

    /// What comes after round `round` of `run` (as read before the round was written),
    /// now recorded as `new`: the round, `parsed`, is kept among the parsed rounds while
    /// the run goes on, and follows the `earlier` ones into the next body.
    async fn step_recorded(
        &self,
        conn: &DatabaseConnection,
        run: run_row::Model,
        new: &db::NewRound,
        parsed: ParsedRound,
        mut earlier: Vec<ParsedRound>,
        round: u32,
    ) -> Result<Result<Step, EngineError>, EngineError> {
        if new.status == RunStatus::Started {
            self.inner.rounds.remember(&run.id, new, &parsed);
        } else {
            self.inner.rounds.forget(&run.id);
        }
        // The run as this transaction left it: it changed the row only if nobody else had.
        let run = run_after(run, new);
        earlier.push(parsed);
        let parts = read_parts(conn, &run, &earlier).await?;
        Ok(self.step(&run, round, &earlier, &parts))
    }

    /// Stores the provider's `response` to round `round` of run `run_id` before the results
    /// of its tool calls: the round is then pending, and the answer names the calls to make.
    /// [`Engine::record_round`] with the same response and the results completes it (the
    /// round's `tool_uses` rows are written then); [`Engine::pending_round`] reads it back,
    /// so a job resumed elsewhere never asks the provider again.
    ///
    /// The response is checked as [`Engine::record_round`] checks it (the run's format, the
    /// ids and names of its calls, its usage), and its usage is added to the run's at once.
    /// Storing the same response again returns the same answer; another response for the
    /// pending round, a round already recorded with its results, a round other than the
    /// next, or any round of a run that ended is [`EngineErrorKind::Conflict`]. A response
    /// without tool calls is pending too, with no calls: record it with no results.
    pub async fn record_response(
        &self,
        run_id: &str,
        round: u32,
        response: Value,
    ) -> Result<Pending, EngineError> {
        Ok(self
            .record_response_counted(run_id, round, response)
            .await?
            .0)
    }

    /// [`Engine::record_response`], with what this call stored for the metrics (`None` when
    /// it stored nothing new).
    pub(crate) async fn record_response_counted(
        &self,
        run_id: &str,
        round: u32,
        response: Value,
    ) -> Result<(Pending, Option<Recorded>), EngineError> {
        let span = trace::round_span(run_id, round);
        let out = self
            .record_response_traced(run_id, round, &response, &span)
            .await;
        if let Err(e) = &out {
            trace::record_error(&span, e);
        }
        out
    }

    /// [`Engine::record_response_counted`] for `span`, which gets the round's usage.
    async fn record_response_traced(
        &self,
        run_id: &str,
        number: u32,
        raw: &Value,
        span: &tracing::Span,
    ) -> Result<(Pending, Option<Recorded>), EngineError> {
        let conn = self.db().await?;
        let mut run = self.load_run_row(run_id).await?;
        let response = parse_response(&run, raw)?;
        trace::record_usage(span, &run, &response.usage);
        let round = i32::try_from(number).unwrap_or(i32::MAX);
        let pending = Pending {
            round: number,
            calls: pending_calls(&response),
        };
        for _ in 0..WRITE_ATTEMPTS {
            if round < run.rounds {
                return Err(EngineError::new(
                    EngineErrorKind::Conflict,
                    format!(
                        "round {number} of run `{}` is recorded with its results; {}",
                        run.id,
                        expected_next(&run)
                    ),
                ));
            }
            check_next(&run, number)?;
            check_response(&run, number, &response)?;
            check_reasoning_model(&run, number, raw, &response)?;
            self.check_thread_call_ids(&run, number, &response).await?;
            let stored = db::load_rounds(conn, &run.id).await?;
            if let Some(stored) = stored.iter().find(|r| r.round == round) {
                if !stored.is_pending() {
                    // Another writer recorded the round since the run was read.
                    run = self.load_run_row(run_id).await?;
                    continue;
                }
                check_pending_response(&run, stored, raw)?;
                span.record("protege.run.replayed", true);
                return Ok((pending, None));
            }
            earlier_rounds(&self.inner.rounds, &run, number, &response, &stored)?;
            span.record("protege.run.status", "pending");
            let new = new_round(round, false, raw, &[], &response, RunStatus::Started);
            match db::record_pending(conn, &run, &new).await? {
                db::RoundWrite::Recorded => {
                    self.inner
                        .rounds
                        .mark_pending(&with_usage(run.clone(), new.usage), round, raw);
                    let recorded = self.recorded(&run, response.usage, None);
                    return Ok((pending, Some(recorded)));
                }
                db::RoundWrite::Raced => run = self.load_run_row(run_id).await?,
            }
        }
        Err(busy(&run, number))
    }

    /// The pending round of run `run_id`, when it goes on (`started` or `waiting`) and the
    /// response of its next round is stored without results; `None` otherwise.
    /// [`EngineErrorKind::NotFound`] for an unknown run.
    pub async fn pending_round(&self, run_id: &str) -> Result<Option<PendingRound>, EngineError> {
        let run = self.load_run_row(run_id).await?;
        if !run.status.is_going_on() {
            return Ok(None);
        }
        let stored = db::load_rounds(self.db().await?, &run.id).await?;
        let Some(pending) = stored
            .into_iter()
            .find(|r| r.round == run.rounds && r.is_pending())
        else {
            return Ok(None);
        };
        let parsed = parse_response_text(&run, &pending.response)
            .map_err(|_| broken(&run, "holds an unreadable pending response"))?;
        Ok(Some(PendingRound {
            round: u32::try_from(pending.round).unwrap_or_default(),
            response: serde_json::from_str(&pending.response)
                .map_err(|_| broken(&run, "holds an unreadable pending response"))?,
            calls: pending_calls(&parsed),
            parsed,
        }))
    }

    /// Gives up run `run_id`: a run that goes on (`started`, or `waiting` for an operator)
    /// becomes `abandoned`, its end time set, and its columns are returned (as
    /// [`Engine::run`] gives them). Its tool rounds are never replayed into its thread, no
    /// round can be recorded any more, and a pending round stays as stored.
    /// [`EngineErrorKind::Conflict`] naming the status for a run that ended;
    /// [`EngineErrorKind::NotFound`] for an unknown run.
    pub async fn abandon_run(&self, run_id: &str) -> Result<RunInfo, EngineError> {
        let conn = self.db().await?;
        let run = self.load_run_row(run_id).await?;
        if db::abandon_run(conn, &run.id, micros(Utc::now())).await? {
            self.inner.rounds.forget(&run.id);
            let run = self.load_run_row(run_id).await?;
            return self.run_columns(&run).await;
        }
        let run = self.load_run_row(run_id).await?;
        Err(EngineError::new(
            EngineErrorKind::Conflict,
            format!(
                "run `{}` has ended ({}); only a run that goes on (started or waiting) can be abandoned",
                run.id, run.status
            ),
        ))
    }

    /// The runs answering the message whose Message-ID is `message_id`, oldest first, with
    /// their columns as [`Engine::run`] gives them. [`EngineErrorKind::NotFound`] when no
    /// message has this Message-ID; an empty list for a stored message without runs.
    pub async fn runs_of_message(&self, message_id: &str) -> Result<Vec<RunInfo>, EngineError> {
        let conn = self.db().await?;
        let Some(runs) = db::runs_of_message(conn, message_id).await? else {
            return Err(super::unknown_message(conn, message_id).await);
        };
        Ok(runs
            .iter()
            .map(|r| RunInfo {
                message_id: Some(message_id.to_owned()),
                ..run_info(r)
            })
            .collect())
    }

    /// Refuses tool call ids of round `round`'s `response` that another run recorded in the
    /// thread of `run`'s trigger: one replay of a thread holds each id once.
    async fn check_thread_call_ids(
        &self,
        run: &run_row::Model,
        round: u32,
        response: &ModelResponse,
    ) -> Result<(), EngineError> {
        let Some(message) = run.message_id else {
            return Ok(());
        };
        let ids: Vec<&str> = response
            .message
            .tool_calls
            .iter()
            .map(|c| c.id.as_str())
            .collect();
        if let Some((id, other)) =
            db::call_id_taken_in_thread(self.db().await?, message, &run.id, &ids).await?
        {
            return Err(EngineError::new(
                EngineErrorKind::InvalidInput,
                format!(
                    "tool call id `{id}` of round {round}'s response in run `{}` was recorded by run `{other}` of the same thread; the tool call ids a thread replays are unique",
                    run.id
                ),
            ));
        }
        Ok(())
    }

    /// The run `run_id` as stored, with its rounds; [`EngineErrorKind::NotFound`] for an
    /// unknown run.
    pub async fn run(&self, run_id: &str) -> Result<RunRecord, EngineError> {
        let conn = self.db().await?;
        let run = self.load_run_row(run_id).await?;
        let info = self.run_columns(&run).await?;
        let rounds = db::load_rounds(conn, &run.id)
            .await?
            .into_iter()
            .map(|r| {
                let response: Value = serde_json::from_str(&r.response).unwrap_or(Value::Null);
                let usage = Usage {
                    cache_write_1h: written_for_an_hour(&response),
                    ..round_usage(&r)
                };
                RoundRecord {
                    round: u32::try_from(r.round).unwrap_or_default(),
                    response,
                    results: (!r.is_pending())
                        .then(|| serde_json::from_str(&r.results).unwrap_or_default()),
                    usage,
                }
            })
            .collect();
        Ok(RunRecord { run: info, rounds })
    }

    /// The columns of `run`, its `message_id` the Message-ID it answers.
    async fn run_columns(&self, run: &run_row::Model) -> Result<RunInfo, EngineError> {
        let message_id = match run.message_id {
            Some(row) => db::message_id_of(self.db().await?, row).await?,
            None => None,
        };
        Ok(RunInfo {
            message_id,
            ..run_info(run)
        })
    }

    /// The row of run `run_id`, or [`EngineErrorKind::NotFound`].
    pub(super) async fn load_run_row(&self, run_id: &str) -> Result<run_row::Model, EngineError> {
        db::load_run(self.db().await?, run_id)
            .await?
            .ok_or_else(|| {
                EngineError::new(
                    EngineErrorKind::NotFound,
                    format!("unknown run `{run_id}`: no run with this id in the database"),
                )
            })
    }

    /// `[limits] max_rounds` and `tool_result_bytes` of `persona` (the defaults when the
    /// persona is gone).
    fn run_limits(&self, persona: &str) -> (u32, usize) {
        let limits = self.persona(persona).map(|p| p.info().limits);
        (
            limits
                .and_then(|l| l.max_rounds)
                .unwrap_or(DEFAULT_MAX_ROUNDS),
            limits
                .and_then(|l| l.tool_result_bytes)
                .unwrap_or(DEFAULT_TOOL_RESULT_BYTES),
        )
    }

    /// The answer to round `round` recorded again: the same answer when the response and
    /// results are the ones recorded, else a conflict.
    async fn replayed(
        &self,
        run: &run_row::Model,
        round: u32,
        response: &Value,
        results: &[ToolResult],
    ) -> Result<Step, EngineError> {
        let rounds = db::load_rounds(self.db().await?, &run.id).await?;
        let stored = rounds.iter().find(|r| r.round == round as i32);
        let same = stored.is_some_and(|r| {
            serde_json::from_str::<Value>(&r.response).ok().as_ref() == Some(response)
                && serde_json::from_str::<Vec<ToolResult>>(&r.results)
                    .ok()
                    .as_deref()
                    == Some(results)
        });
        if !same {
            return Err(EngineError::new(
                EngineErrorKind::Conflict,
                format!(
                    "round {round} of run `{}` is recorded with another response or other results; {}",
                    run.id,
                    expected_next(run)
                ),
            ));
        }
        self.step_after(run, round).await
    }

    /// What comes after round `round` of `run`, from what is stored.
    pub(super) async fn step_after(
        &self,
        run: &run_row::Model,
        round: u32,
    ) -> Result<Step, EngineError> {
        let stored = db::load_rounds(self.db().await?, &run.id).await?;
        let upto: Vec<&run_round::Model> =
            stored.iter().filter(|r| r.round <= round as i32).collect();
        let rounds = parse_rounds(run, &upto)?;
        let parts = read_parts(self.db().await?, run, &rounds).await?;
        self.step(run, round, &rounds, &parts)
    }

    /// What comes after round `round` of `run`, given its rounds up to that one parsed and
    /// the parts their calls of `read_attachment` returned.
    fn step(
        &self,
        run: &run_row::Model,
        round: u32,
        rounds: &[ParsedRound],
        parts: &HashMap<String, Part>,
    ) -> Result<Step, EngineError> {
        let is_last = round as i32 + 1 == run.rounds;
        if !is_last || run.status == RunStatus::Started {
            let body = next_body(run, rounds, parts)?;
            return Ok(Step::Continue {
                round: round + 1,
                body,
            });
        }
        let last = rounds
            .last()
            .ok_or_else(|| broken(run, "has no recorded round"))?;
        let usage = run_usage(run);
        let text = last.response.message.content.text();
        match (run.status, last.response.outcome) {
            (RunStatus::Done, _) => Ok(Step::Done { text, usage }),
            (_, Outcome::ToolCalls) => {
                let (max_rounds, _) = self.run_limits(&run.persona);
                Err(EngineError::new(
                    EngineErrorKind::InvalidInput,
                    format!(
                        "run `{}` reached `[limits] max_rounds` ({max_rounds}): round {round} asks for tools again; the round is recorded and the run is stopped",
                        run.id
                    ),
                ))
            }
            _ => Ok(Step::Stopped {
                text,
                usage,
                stop_reason: last.response.stop_reason.clone(),
            }),
        }
    }

    /// The number and body of the next round of run `run_id`, built from its stored
    /// request and rounds (a job resumed elsewhere asks the provider with it): round 0's
    /// body for a run without rounds. A run whose next round is pending, or that ended, is
    /// [`EngineErrorKind::Conflict`].
    #[cfg(feature = "agent")]
    pub(crate) async fn next_round_body(&self, run_id: &str) -> Result<(u32, Value), EngineError> {
        let run = self.load_run_row(run_id).await?;
        if run.status != RunStatus::Started {
            return Err(ended(&run));
        }
        let stored = db::load_rounds(self.db().await?, &run.id).await?;
        let done: Vec<&run_round::Model> = stored
            .iter()
            .filter(|r| r.round < run.rounds && !r.is_pending())
            .collect();
        if stored.iter().any(|r| r.round == run.rounds) {
            return Err(EngineError::new(
                EngineErrorKind::Conflict,
                format!(
                    "round {} of run `{}` is pending: make its calls, not a new request",
                    run.rounds, run.id
                ),
            ));
        }
        let parsed = parse_rounds(&run, &done)?;
        let parts = read_parts(self.db().await?, &run, &parsed).await?;
        let round = u32::try_from(run.rounds).unwrap_or_default();
        Ok((round, next_body(&run, &parsed, &parts)?))
    }
}

/// How many times a round's write is tried when another writer changed the run or stored
/// the round first: each loss is read back and answered from what the winner wrote, so a
/// second try only follows a pending round stored meanwhile.
const WRITE_ATTEMPTS: usize = 3;

/// Refuses round `round` of `run` unless it is the next one of a run that goes on (a
/// round of a run that ended, or another round, is a conflict).
fn check_next(run: &run_row::Model, round: u32) -> Result<(), EngineError> {
    if run.status != RunStatus::Started {
        return Err(ended(run));
    }
    if i64::from(round) != i64::from(run.rounds) {
        return Err(EngineError::new(
            EngineErrorKind::Conflict,
            format!(
                "run `{}` expects round {} next, not round {round}",
                run.id, run.rounds
            ),
        ));
    }
    Ok(())
}

/// "the round expected next is K" (or none, for a run that ended).
fn expected_next(run: &run_row::Model) -> String {
    if run.status == RunStatus::Started {
        format!("the round expected next is {}", run.rounds)
    } else {
        format!(
            "the round expected next is none (the run is {})",
            run.status
        )
    }
}

/// Refuses `response` for the stored round `stored` of `run` unless the round is pending
/// with this very response.
fn check_pending_response(
    run: &run_row::Model,
    stored: &run_round::Model,
    response: &Value,
) -> Result<(), EngineError> {
    let same = stored.is_pending()
        && serde_json::from_str::<Value>(&stored.response)
            .ok()
            .as_ref()
            == Some(response);
    if same {
        return Ok(());
    }
    Err(EngineError::new(
        EngineErrorKind::Conflict,
        format!(
            "round {} of run `{}` is pending with another response; record it with the response stored (`GET /v1/runs/{}`)",
            stored.round, run.id, run.id
        ),
    ))
}

/// The error of a round whose write lost to other writers every time it was tried.
fn busy(run: &run_row::Model, round: u32) -> EngineError {
    EngineError::new(
        EngineErrorKind::Conflict,
        format!(
            "round {round} of run `{}` was written by other writers meanwhile; try again",
            run.id
        ),
    )
}

/// The tool calls of `response`, as a pending round names them.
fn pending_calls(response: &ModelResponse) -> Vec<PendingCall> {
    response
        .message
        .tool_calls
        .iter()
        .map(|c| PendingCall {
            tool_call_id: c.id.clone(),
            name: c.name.clone(),
            input: c.input.clone(),
        })
        .collect()
}

/// The rounds of `stored` before round `round`, parsed (through `cache`), once the call
/// ids of `response` are checked against theirs.
fn earlier_rounds(
    cache: &ParsedRounds,
    run: &run_row::Model,
    round: u32,
    response: &ModelResponse,
    stored: &[run_round::Model],
) -> Result<Vec<ParsedRound>, EngineError> {
    // Only the rounds before this one: another writer may have recorded this very round.
    let earlier: Vec<&run_round::Model> = stored
        .iter()
        .filter(|r| r.round < i32::try_from(round).unwrap_or(i32::MAX))
        .collect();
    let parsed = cache.parse(run, &earlier)?;
    check_new_call_ids(run, round, response, &earlier, &parsed)?;
    Ok(parsed)
}

/// A recorded round, parsed: the response in the run's format and the results.
#[derive(Debug, Clone)]
struct ParsedRound {
    response: ModelResponse,
    results: Vec<ToolResult>,
}

/// The recorded rounds of the runs going on in this process, parsed: a run's rounds are
/// read back at each of its later rounds (twice per round when the response is stored
/// before the calls), and each is parsed once instead of at every read. An entry is used
/// only for the very texts it was parsed from, so a round stored again or changed since is
/// parsed anew; a run's entry goes when it ends here, and the least recently used go
/// beyond [`ParsedRounds::RUNS`] runs.
#[derive(Debug)]
pub(crate) struct ParsedRounds(std::sync::Mutex<hashlink::LruCache<String, RunEntry>>);

/// What this process knows of a run going on: its rounds parsed and, right after it stored
/// a round's response, that pending round.
#[derive(Debug, Default)]
struct RunEntry {
    rounds: Vec<CachedRound>,
    pending: Option<PendingMark>,
}

/// A round this process stored pending: the run's row as that write left it and the
/// response stored. Completing the round with that very response needs neither the row nor
/// the rounds read back: every write of a round is conditional on the run's count and
/// status, so a row changed since by another writer makes the write a race, answered by
/// reading everything back.
#[derive(Debug, Clone)]
struct PendingMark {
    run: run_row::Model,
    round: i32,
    response: Value,
}

/// A round as stored and as parsed.
#[derive(Debug)]
struct CachedRound {
    round: i32,
    response: String,
    results: String,
    parsed: ParsedRound,
}

impl Default for ParsedRounds {
    fn default() -> Self {
        Self(std::sync::Mutex::new(hashlink::LruCache::new(Self::RUNS)))
    }
}

impl ParsedRounds {
    /// How many runs keep their parsed rounds.
    const RUNS: usize = 256;

    /// `rounds` of `run` (in order) parsed, those parsed before taken from here.
    fn parse(
        &self,
        run: &run_row::Model,
        rounds: &[&run_round::Model],
    ) -> Result<Vec<ParsedRound>, EngineError> {
        let lock = || {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        let mut out: Vec<Option<ParsedRound>> = {
            let mut cache = lock();
            let known = cache.get(&run.id).map(|e| &e.rounds);
            rounds
                .iter()
                .map(|r| {
                    known?
                        .iter()
                        .find(|c| {
                            c.round == r.round && c.response == r.response && c.results == r.results
                        })
                        .map(|c| c.parsed.clone())
                })
                .collect()
        };
        let mut new = Vec::new();
        for (slot, r) in out.iter_mut().zip(rounds) {
            if slot.is_none() {
                let parsed = parse_round(run, r)?;
                new.push(CachedRound {
                    round: r.round,
                    response: r.response.clone(),
                    results: r.results.clone(),
                    parsed: parsed.clone(),
                });
                *slot = Some(parsed);
            }
        }
        if !new.is_empty() {
            let mut cache = lock();
            let entry = &mut cache
                .entry(run.id.clone())
                .or_insert_with(RunEntry::default)
                .rounds;
            for c in new {
                entry.retain(|e| e.round != c.round);
                entry.push(c);
            }
        }
        Ok(out.into_iter().flatten().collect())
    }

    /// Keeps round `new` of run `run_id`, recorded as `parsed`.
    fn remember(&self, run_id: &str, new: &db::NewRound, parsed: &ParsedRound) {
        let mut cache = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = cache
            .entry(run_id.to_owned())
            .or_insert_with(RunEntry::default);
        entry.pending = None;
        entry.rounds.retain(|e| e.round != new.round);
        entry.rounds.push(CachedRound {
            round: new.round,
            response: new.response.clone(),
            results: new.results.clone(),
            parsed: parsed.clone(),
        });
    }

    /// Keeps that this process stored round `round` of `run` (the row as that write left
    /// it) pending with `response`.
    fn mark_pending(&self, run: &run_row::Model, round: i32, response: &Value) {
        let mut cache = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        cache
            .entry(run.id.clone())
            .or_insert_with(RunEntry::default)
            .pending = Some(PendingMark {
            run: run.clone(),
            round,
            response: response.clone(),
        });
    }

    /// The run's row as this process left it when it stored round `round` pending with this
    /// very `response`, and the rounds before it parsed, when all of them are here; the mark
    /// is taken either way.
    fn take_pending(
        &self,
        run_id: &str,
        round: i32,
        response: &Value,
    ) -> Option<(run_row::Model, Vec<ParsedRound>)> {
        let mut cache = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = cache.get_mut(run_id)?;
        let mark = entry.pending.take()?;
        if mark.round != round || mark.run.rounds != round || &mark.response != response {
            return None;
        }
        let earlier: Option<Vec<ParsedRound>> = (0..round)
            .map(|k| {
                entry
                    .rounds
                    .iter()
                    .find(|c| c.round == k)
                    .map(|c| c.parsed.clone())
            })
            .collect();
        Some((mark.run, earlier?))
    }

    /// Forgets the rounds of run `run_id` (it ended).
    fn forget(&self, run_id: &str) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(run_id);
    }
}

/// Round `r` of `run` parsed.
fn parse_round(run: &run_row::Model, r: &run_round::Model) -> Result<ParsedRound, EngineError> {
    Ok(ParsedRound {
        response: parse_response_text(run, &r.response)?,
        // A pending round has no results yet (its stored `null`).
        results: serde_json::from_str(&r.results).unwrap_or_default(),
    })
}

/// `rounds` of `run` (in order) parsed.
fn parse_rounds(
    run: &run_row::Model,
    rounds: &[&run_round::Model],
) -> Result<Vec<ParsedRound>, EngineError> {
    rounds.iter().map(|r| parse_round(run, r)).collect()
}

/// Checks that no tool call of `response` (round `round` of `run`) reuses the id of a
/// call of an `earlier` round (parsed as `parsed`): the next body would hold two calls of
/// one id, which the providers refuse.
fn check_new_call_ids(
    run: &run_row::Model,
    round: u32,
    response: &ModelResponse,
    earlier: &[&run_round::Model],
    parsed: &[ParsedRound],
) -> Result<(), EngineError> {
    for (stored, earlier) in earlier.iter().zip(parsed) {
        let earlier_calls = &earlier.response.message.tool_calls;
        if let Some(call) = response
            .message
            .tool_calls
            .iter()
            .find(|c| earlier_calls.iter().any(|e| e.id == c.id))
        {
            return Err(EngineError::new(
                EngineErrorKind::InvalidInput,
                format!(
                    "tool call id `{}` of round {round}'s response was used in round {} of run `{}`; a run's tool call ids are unique",
                    call.id, stored.round, run.id
                ),
            ));
        }
    }
    Ok(())
}

/// `run` once round `new` is recorded, as [`db::record_round`] changed its row.
/// `run` with `usage` (input, output, cache read and cache write tokens) added to its own,
/// as storing a pending round leaves it.
fn with_usage(mut run: run_row::Model, usage: [i64; 4]) -> run_row::Model {
    let [input, output, cache_read, cache_write] = usage;
    run.input_tokens += input;
    run.output_tokens += output;
    run.cache_read_tokens += cache_read;
    run.cache_write_tokens += cache_write;
    run
}

fn run_after(run: run_row::Model, new: &db::NewRound) -> run_row::Model {
    // A pending round's usage is in the row already.
    let mut run = with_usage(run, if new.pending { [0; 4] } else { new.usage });
    run.rounds = new.round + 1;
    run.status = new.status;
    if new.status != RunStatus::Started {
        run.finished_at = Some(new.at);
    }
    run
}

/// What one call of [`Engine::record_round`] recorded, for the service's metrics.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Recorded {
    /// The run's persona.
    pub(crate) persona: String,
    /// The usage of the round.
    pub(crate) usage: Usage,
    /// What that usage cost in USD at the model's prices (`None` without a price).
    pub(crate) cost: Option<f64>,
    /// The run's number of rounds when this round ended it.
    pub(crate) ended: Option<u32>,
}

/// The error of a round recorded after its run ended.
fn ended(run: &run_row::Model) -> EngineError {
    EngineError::new(
        EngineErrorKind::Conflict,
        format!(
            "run `{}` has ended ({}) after {} rounds; no round can be recorded",
            run.id, run.status, run.rounds
        ),
    )
}

fn broken(run: &run_row::Model, what: &str) -> EngineError {
    EngineError::new(
        EngineErrorKind::Unavailable,
        format!("database error: run `{}` {what}", run.id),
    )
}

/// A stored response (JSON text) parsed in the run's format.
fn parse_response_text(run: &run_row::Model, text: &str) -> Result<ModelResponse, EngineError> {
    parse_in(run, text.as_bytes())
}

/// `response` parsed in the run's format.
fn parse_response(run: &run_row::Model, response: &Value) -> Result<ModelResponse, EngineError> {
    parse_in(run, &serde_json::to_vec(response).unwrap_or_default())
}

/// The response `bytes` parsed in the run's format.
fn parse_in(run: &run_row::Model, bytes: &[u8]) -> Result<ModelResponse, EngineError> {
    let parsed = match run_format(run) {
        Format::Openai => from_openai_response(bytes),
        Format::OpenaiResponses => from_openai_responses_response(bytes),
        _ => from_anthropic_response(bytes),
    };
    parsed.map_err(|e| EngineError::from(e).with_kind(EngineErrorKind::InvalidInput))
}

/// The wire format of `run` (its `format` column).
fn run_format(run: &run_row::Model) -> Format {
    Format::from(run.format)
}

/// Refuses a Responses answer of `run` (round `round`, `raw` as given) whose reasoning
/// items another model wrote: its `model` is neither the run's model nor a dated snapshot
/// of it (`gpt-5` and `gpt-5-2025-08-07`). Encrypted reasoning is sent back to the model
/// of the run in the next round, and only the model that wrote it can read it.
fn check_reasoning_model(
    run: &run_row::Model,
    round: u32,
    raw: &Value,
    response: &ModelResponse,
) -> Result<(), EngineError> {
    let reasoning = response
        .output
        .iter()
        .any(|item| item.get("type").and_then(Value::as_str) == Some("reasoning"));
    let Some(model) = raw.get("model").and_then(Value::as_str) else {
        return Ok(());
    };
    if !reasoning || same_model(&run.model, model) {
        return Ok(());
    }
    Err(EngineError::new(
        EngineErrorKind::InvalidInput,
        format!(
            "round {round}'s response in run `{}` carries reasoning items of model `{}`, but the run is for model `{}`: encrypted reasoning goes back only to the model that wrote it (the run's model or a dated snapshot of it, such as `{}-2025-08-07`)",
            run.id,
            model.escape_debug(),
            run.model,
            run.model
        ),
    ))
}

/// Whether `answered` (a response's `model`) is the model `asked` for: the same name, or
/// `asked` followed by a snapshot date, `-YYYY-MM-DD`.
fn same_model(asked: &str, answered: &str) -> bool {
    if asked == answered {
        return true;
    }
    let Some(date) = answered
        .strip_prefix(asked)
        .and_then(|rest| rest.strip_prefix('-'))
    else {
        return false;
    };
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    let parts: Vec<&str> = date.split('-').collect();
    matches!(parts.as_slice(), [y, m, d] if digits(y, 4) && digits(m, 2) && digits(d, 2))
}

/// Checks that `results` answer exactly the tool calls of `response` (round `round` of
/// `run`), each within `max_bytes`.
fn check_results(
    run: &run_row::Model,
    round: u32,
    response: &ModelResponse,
    results: &[ToolResult],
    max_bytes: usize,
) -> Result<(), EngineError> {
    let invalid = |message: String| EngineError::new(EngineErrorKind::InvalidInput, message);
    let calls = &response.message.tool_calls;
    let mut answered = std::collections::HashSet::new();
    for r in results {
        if !calls.iter().any(|c| c.id == r.tool_call_id) {
            return Err(invalid(format!(
                "the result for `{}` answers no tool call of round {round}'s response in run `{}`{}",
                r.tool_call_id,
                run.id,
                responses_pairing(run, response, &r.tool_call_id)
            )));
        }
        if !answered.insert(r.tool_call_id.as_str()) {
            return Err(invalid(format!(
                "tool call `{}` has more than one result in round {round} of run `{}`",
                r.tool_call_id, run.id
            )));
        }
        if r.content.len() > max_bytes {
            return Err(EngineError::new(
                EngineErrorKind::TooLarge,
                format!(
                    "the result of tool call `{}` is {} bytes, over `[limits] tool_result_bytes` ({max_bytes})",
                    r.tool_call_id,
                    r.content.len()
                ),
            ));
        }
    }
    if let Some(missing) = calls.iter().find(|c| !answered.contains(c.id.as_str())) {
        return Err(invalid(format!(
            "tool call `{}` ({}) of round {round}'s response in run `{}` has no result",
            missing.id, missing.name, run.id
        )));
    }
    Ok(())
}

/// What an OpenAI Responses run adds to the error of a result for an unknown call: results
/// go back as `function_call_output` items paired by `call_id`, and a result naming the
/// `id` of a `function_call` item (`fc_...`) is named with its call's `call_id`.
fn responses_pairing(run: &run_row::Model, response: &ModelResponse, id: &str) -> String {
    if run_format(run) != Format::OpenaiResponses {
        return String::new();
    }
    let item_of = response.output.iter().find(|item| {
        item.get("type").and_then(Value::as_str) == Some("function_call")
            && item.get("id").and_then(Value::as_str) == Some(id)
    });
    match item_of
        .and_then(|item| item.get("call_id"))
        .and_then(Value::as_str)
    {
        Some(call_id) => format!(
            " (its `function_call_output` would name an unknown `call_id`): `{id}` is the `id` of the `function_call` item whose `call_id` is `{call_id}`, which a result names"
        ),
        None => format!(
            " (its `function_call_output` would name an unknown `call_id`); the calls are {}",
            calls_list(&response.message.tool_calls)
        ),
    }
}

/// The ids of `calls` for an error: `` `a`, `b` `` or `none`.
fn calls_list(calls: &[protege_core::ToolCall]) -> String {
    if calls.is_empty() {
        return "none".to_owned();
    }
    calls
        .iter()
        .map(|c| format!("`{}`", c.id))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `text` is 1 to 64 characters from `a-zA-Z0-9_-`: what both providers accept as
/// a tool name and as a tool call id in the requests that replay it.
fn provider_id(text: &str) -> bool {
    (1..=64).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The most tokens one usage count of a recorded round may hold: far above what any model
/// reports for one call, and far enough below `i64::MAX` that the sums the database makes
/// over every run of a model cannot overflow.
pub(super) const MAX_ROUND_TOKENS: u64 = 1_000_000_000;

/// Refuses a response whose usage no model reports (a count over [`MAX_ROUND_TOKENS`]),
/// or whose tool call ids or names no provider would take back: every later request of the
/// thread replays them, and an export of it could not be imported.
fn check_response(
    run: &run_row::Model,
    round: u32,
    response: &ModelResponse,
) -> Result<(), EngineError> {
    let u = &response.usage;
    for (name, count) in [
        ("input", u.input),
        ("output", u.output),
        ("cache read", u.cache_read),
        ("cache write", u.cache_write),
    ] {
        if count > MAX_ROUND_TOKENS {
            return Err(EngineError::new(
                EngineErrorKind::InvalidInput,
                format!(
                    "round {round}'s response in run `{}` reports {count} {name} tokens, over the {MAX_ROUND_TOKENS} a round may record",
                    run.id
                ),
            ));
        }
    }
    for call in &response.message.tool_calls {
        let (what, value) = if !provider_id(&call.id) {
            ("id", &call.id)
        } else if !provider_id(&call.name) {
            ("name", &call.name)
        } else {
            continue;
        };
        return Err(EngineError::new(
            EngineErrorKind::InvalidInput,
            format!(
                "tool call {what} `{}` of round {round}'s response in run `{}` is not 1 to 64 characters from `a-z`, `A-Z`, `0-9`, `_` and `-`, which the providers require when it is replayed",
                value.escape_debug(),
                run.id
            ),
        ));
    }
    Ok(())
}

/// The row of a round to record (`pending`: stored pending already).
fn new_round(
    round: i32,
    pending: bool,
    raw: &Value,
    results: &[ToolResult],
    response: &ModelResponse,
    status: RunStatus,
) -> db::NewRound {
    let u = &response.usage;
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let tool_uses = response
        .message
        .tool_calls
        .iter()
        .filter_map(|call| {
            let result = results.iter().find(|r| r.tool_call_id == call.id)?;
            Some(db::RoundToolUse {
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                input: call.input.to_string(),
                result: result.content.clone(),
                is_error: result.is_error,
            })
        })
        .collect();
    db::NewRound {
        round,
        pending,
        response: raw.to_string(),
        results: serde_json::to_string(results).unwrap_or_default(),
        stop_reason: response.stop_reason.clone(),
        usage: [
            count(u.input),
            count(u.output),
            count(u.cache_read),
            count(u.cache_write),
        ],
        status,
        tool_uses,
        at: micros(Utc::now()),
    }
}

/// The status of a run once its round `round`, answered by `response`, is recorded: it
/// goes on while the model asks for tools within `max_rounds`, is `done` when it answered,
/// and `stopped` otherwise.
fn status_after(response: &ModelResponse, round: u32, max_rounds: u32) -> RunStatus {
    let over = response.outcome == Outcome::ToolCalls && round + 1 >= max_rounds;
    match response.outcome {
        Outcome::ToolCalls if !over => RunStatus::Started,
        Outcome::Done => RunStatus::Done,
        _ => RunStatus::Stopped,
    }
}

/// Gives the `tool_uses` rows of `new` the inputs that ran (call id, input) where they are
/// not the model's (an operator edited them when approving).
fn with_inputs_ran(new: &mut db::NewRound, inputs: &[(String, Value)]) {
    for (call, ran) in inputs {
        if let Some(tool_use) = new.tool_uses.iter_mut().find(|t| &t.tool_call_id == call) {
            tool_use.input = ran.to_string();
        }
    }
}

/// The body after `rounds`: round 0's request, then per round the assistant message and
/// one tool message per result in the order of the calls, encoded in the run's format.
fn next_body(
    run: &run_row::Model,
    rounds: &[ParsedRound],
    parts: &HashMap<String, Part>,
) -> Result<Value, EngineError> {
    let stored: StoredRequest = serde_json::from_str(&run.request)
        .map_err(|_| broken(run, "holds an unreadable request"))?;
    let spec = stored.spec();
    let mut request = stored.request;
    request.cache = CacheHints {
        history_end: stored.history_end,
        key: stored.cache_key,
        hour: stored.hour,
    };
    let format = run_format(run);
    if format == Format::OpenaiResponses {
        // Round 0's request, then each round's output items as the answer gave them (its
        // reasoning included) and one `function_call_output` per result.
        let mut body = encode(&request, format, Some(spec))?;
        if let Some(Value::Array(input)) = body.get_mut("input") {
            for r in rounds {
                input.extend(r.response.output.iter().cloned());
                input.extend(
                    round_messages(r.response.message.clone(), &r.results, parts)
                        .iter()
                        .skip(1)
                        .map(|m| {
                            function_call_output(
                                m.tool_call_id.as_deref().unwrap_or_default(),
                                &m.content,
                            )
                        }),
                );
            }
        }
        return Ok(body);
    }
    for r in rounds {
        request.messages.extend(round_messages(
            r.response.message.clone(),
            &r.results,
            parts,
        ));
    }
    encode(&request, format, Some(spec))
}

/// The messages of one round: the assistant message, then one tool message per call (with
/// the image or document of `parts` its call returned, if any).
fn round_messages(
    assistant: Message,
    results: &[ToolResult],
    parts: &HashMap<String, Part>,
) -> Vec<Message> {
    let tools: Vec<Message> = assistant
        .tool_calls
        .iter()
        .filter_map(|call| {
            let r = results.iter().find(|r| r.tool_call_id == call.id)?;
            let content = protege_core::Content::from(r.content.clone())
                .and_parts(parts.get(&call.id).cloned().into_iter().collect());
            Some(
                message(Role::Tool, content)
                    .with_tool_call_id(&call.id)
                    .with_is_error(r.is_error),
            )
        })
        .collect();
    std::iter::once(assistant).chain(tools).collect()
}

/// The usage of four stored counts (input, output, cache read, cache write).
fn usage_of(counts: [i64; 4]) -> Usage {
    let [input, output, cache_read, cache_write] =
        counts.map(|v| u64::try_from(v).unwrap_or_default());
    Usage {
        input,
        output,
        cache_read,
        cache_write,
        cache_write_1h: 0,
    }
}

/// The tokens a stored Anthropic response says were written to the cache for an hour
/// (`usage.cache_creation.ephemeral_1h_input_tokens`; 0 for any other response): the
/// usage columns hold all written tokens, the response the split.
pub(super) fn written_for_an_hour(response: &Value) -> u64 {
    response
        .pointer("/usage/cache_creation/ephemeral_1h_input_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

fn round_usage(r: &run_round::Model) -> Usage {
    usage_of([
        r.input_tokens,
        r.output_tokens,
        r.cache_read_tokens,
        r.cache_write_tokens,
    ])
}

fn run_usage(r: &run_row::Model) -> Usage {
    usage_of([
        r.input_tokens,
        r.output_tokens,
        r.cache_read_tokens,
        r.cache_write_tokens,
    ])
}

fn run_info(r: &run_row::Model) -> RunInfo {
    let time = |t: &DateTime<Utc>| t.to_rfc3339_opts(SecondsFormat::AutoSi, true);
    let usage = run_usage(r);
    RunInfo {
        id: r.id.clone(),
        persona: r.persona.clone(),
        message_id: None,
        responsibility: r.responsibility.clone(),
        format: r.format,
        model: r.model.clone(),
        status: r.status,
        rounds: u32::try_from(r.rounds).unwrap_or_default(),
        input_tokens: usage.input,
        output_tokens: usage.output,
        cache_read_tokens: usage.cache_read,
        cache_write_tokens: usage.cache_write,
        request_sha256: r.request_sha256.clone(),
        started_at: time(&r.started_at),
        finished_at: r.finished_at.as_ref().map(time),
    }
}

/// `at` cut to whole microseconds, as PostgreSQL and MySQL/MariaDB store it.
fn micros(at: DateTime<Utc>) -> DateTime<Utc> {
    use chrono::Timelike as _;
    at.with_nanosecond(at.nanosecond() / 1000 * 1000)
        .unwrap_or(at)
}

/// Crockford's Base32 alphabet, the digits of a ULID.
const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// `run_` and a ULID: 48 bits of milliseconds since 1970 at `at`, then 80 random bits, as
/// 26 Base32 digits, so ids sort by start time.
fn new_run_id(at: DateTime<Utc>) -> String {
    let millis = u128::try_from(at.timestamp_millis()).unwrap_or_default() & ((1 << 48) - 1);
    let random = super::message_id::random_128() & ((1 << 80) - 1);
    let value = (millis << 80) | random;
    let mut digits = [0u8; 26];
    for (i, d) in digits.iter_mut().enumerate() {
        let shift = 5 * (25 - i);
        *d = CROCKFORD[((value >> shift) & 31) as usize];
    }
    format!("run_{}", String::from_utf8_lossy(&digits))
}

/// The SHA-256 of the Message-ID of each stored message among `sources` (as
/// `run_sources` keeps them).
fn quoted_messages(sources: &[protege_core::Source]) -> Vec<String> {
    use protege_core::Source;
    sources
        .iter()
        .flat_map(|source| match source {
            Source::Message { message_id } => std::slice::from_ref(message_id),
            Source::Messages { message_ids, .. } => message_ids.as_slice(),
            _ => &[],
        })
        .map(|id| db::message_sha256(id))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_sort_by_start_and_are_ulids() {
        let a = new_run_id("2026-01-05T10:00:00Z".parse().unwrap());
        let b = new_run_id("2026-01-05T10:00:00.001Z".parse().unwrap());
        assert_eq!(a.len(), 30);
        assert!(
            a.starts_with("run_01KE") && a[4..].chars().all(|c| CROCKFORD.contains(&(c as u8))),
            "{a}"
        );
        assert!(a < b, "{a} {b}");
        assert_ne!(new_run_id(Utc::now()), new_run_id(Utc::now()));
    }

    /// A round's response in Anthropic's format, answering with `text`.
    fn answer(text: &str) -> String {
        json!({
            "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 2}
        })
        .to_string()
    }

    /// The parsed rounds are reused only for the very texts they came from: a round stored
    /// again with another text is parsed anew, and an ended run's are forgotten.
    #[test]
    fn parsed_rounds_follow_the_stored_text() {
        let at = "2026-01-05T10:00:00Z".parse().unwrap();
        let run = run_row::Model {
            id: "run_1".to_owned(),
            persona: "support".to_owned(),
            message_id: None,
            responsibility: None,
            format: RunFormat::Anthropic,
            model: "claude-sonnet-4-5".to_owned(),
            status: RunStatus::Started,
            rounds: 1,
            input_tokens: 0,
            output_tokens: 0,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            request_sha256: String::new(),
            request: String::new(),
            started_at: at,
            finished_at: None,
        };
        let round = |text: &str| run_round::Model {
            id: 1,
            run_id: "run_1".to_owned(),
            round: 0,
            response: answer(text),
            results: "[]".to_owned(),
            stop_reason: "end_turn".to_owned(),
            input_tokens: 10,
            output_tokens: 2,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            created_at: at,
        };
        let cache = ParsedRounds::default();
        let text = |rounds: Vec<ParsedRound>| rounds[0].response.message.content.text();
        let first = round("It shipped.");
        assert_eq!(text(cache.parse(&run, &[&first]).unwrap()), "It shipped.");
        assert_eq!(text(cache.parse(&run, &[&first]).unwrap()), "It shipped.");
        let changed = round("It is on its way.");
        assert_eq!(
            text(cache.parse(&run, &[&changed]).unwrap()),
            "It is on its way."
        );
        assert_eq!(
            cache.0.lock().unwrap().get("run_1").map(|e| e.rounds.len()),
            Some(1)
        );
        cache.forget("run_1");
        assert!(cache.0.lock().unwrap().get("run_1").is_none());
        // Not readable in the run's format: the error, not an entry.
        let broken = run_round::Model {
            response: "{}".to_owned(),
            ..round("")
        };
        assert!(cache.parse(&run, &[&broken]).is_err());
        assert!(cache.0.lock().unwrap().get("run_1").is_none());
    }
}
