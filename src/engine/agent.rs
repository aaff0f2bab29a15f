//! The agent (§17): protege runs the loop. A worker claims a job, checks the gate, starts
//! or resumes its run, asks the provider for each round, stores the response before any
//! tool runs, makes the calls, records the round, and composes the reply into the outbox.
//!
//! Every step is a row, so any process can resume any job: a round's response is stored
//! before its tools run, so a resumed job never asks the provider again for it and makes
//! only the calls of the pending round, with the same call ids.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Value, json};

use protege_agent::{
    HttpCall, ProviderCall, ProviderClient, ProviderError, ProviderFormat, ToolOutcome,
};
use protege_core::db::RunStatus;
use protege_core::db::entities::agent_job;
use protege_core::{
    AfterPerson, BuiltinTool, PersonaAgent, PersonaInfo, Provider, ReplyMode, ToolRunner,
    bare_address,
};

use super::mcp::{EnvReader, PersonaMcp};
use super::outbox::Composed;
use super::run::{PendingCall, RoundInput, Step, ToolResult};
use super::{Engine, EngineError, EngineErrorKind, Format, ResolveInput};
use crate::db::{self, JobEnd};

/// The lease of a claimed job: renewed every third of it while the job runs.
pub const JOB_LEASE: Duration = Duration::from_secs(60);

/// The first wait of a job sent back to the queue by a provider that kept failing; it
/// doubles with each claim, up to [`MAX_REQUEUE`].
const FIRST_REQUEUE: Duration = Duration::from_secs(30);

/// The longest wait of a job sent back to the queue.
const MAX_REQUEUE: Duration = Duration::from_secs(3600);

/// One round as a worker made it: what `protege agent run` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundReport {
    /// The round's number.
    pub round: u32,
    /// Whether its response was stored before (a resumed job): the provider was not asked.
    pub resumed: bool,
    /// The text of the model's answer in this round.
    pub text: String,
    /// The tool calls and their results.
    pub calls: Vec<CallReport>,
}

/// One tool call of a round.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallReport {
    /// The call's id.
    pub tool_call_id: String,
    /// The tool.
    pub name: String,
    /// Its input.
    pub input: Value,
    /// Its result, as the model reads it.
    pub content: String,
    /// Whether it failed.
    pub is_error: bool,
}

/// What a worker did with one job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobReport {
    /// The job's id.
    pub job: i64,
    /// Its persona.
    pub persona: String,
    /// Its run, once started.
    pub run_id: Option<String>,
    /// The state it was left in: `done`, `skipped`, `waiting`, `failed` or `queued`.
    pub state: String,
    /// Why, when it was not `done`.
    pub reason: Option<String>,
    /// The error that ended or sent it back, if any.
    pub error: Option<String>,
    /// The rounds this claim made.
    pub rounds: Vec<RoundReport>,
    /// The reply's outbox row, when one was stored.
    pub outbox: Option<i64>,
    /// The reply's outbox state (`queued`, `waiting`, …).
    pub outbox_state: Option<String>,
    /// Whether the lease was lost (another worker took the job over): nothing more was
    /// written.
    pub lease_lost: bool,
}

/// How `protege agent run` runs one trigger in the foreground.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Foreground {
    /// Answer each call `not called: dry run` instead of calling the tool.
    pub no_tools: bool,
    /// Queue the reply as the persona says, instead of storing it `waiting`.
    pub send: bool,
    /// Run a message whose job is `done` again.
    pub again: bool,
}

/// The agent's worker of one process: it claims jobs and runs them.
#[derive(Clone)]
pub struct Agent {
    engine: Engine,
    client: ProviderClient,
    http: reqwest::Client,
    owner: String,
    lease: Duration,
    env: EnvReader,
    /// The personas as this worker last saw them: a paused persona whose file changed
    /// resumes.
    seen: Arc<std::sync::Mutex<std::collections::HashMap<String, Arc<PersonaInfo>>>>,
    /// Set once [`Agent::run`] is told to stop: the job in flight ends after its round.
    stopping: Arc<AtomicBool>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("owner", &self.owner)
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// How the MCP servers of the personas the agent has run stand, by persona name
    /// (what `/readyz` reports).
    pub fn mcp_status(&self) -> Vec<(String, Vec<super::McpStatus>)> {
        self.inner.mcp.status()
    }

    /// What `/readyz` reports of the agent to a request carrying the token: `mcp`, each
    /// persona's MCP servers (`up`, or `down` with the reason), and `paused`, each persona
    /// whose jobs wait for a refused key or model (`until`, `reason`), and `outbox`, each
    /// sending persona's SMTP server as its last delivery found it (`up`, or `down` with the
    /// reason while a reply waits to be tried again); a key is left out when it has nothing
    /// to say.
    pub async fn agent_readiness(&self) -> Result<serde_json::Map<String, Value>, EngineError> {
        let mut out = serde_json::Map::new();
        let mcp: serde_json::Map<String, Value> = self
            .mcp_status()
            .into_iter()
            .map(|(persona, entries)| (persona, json!(entries)))
            .collect();
        if !mcp.is_empty() {
            out.insert("mcp".to_owned(), Value::Object(mcp));
        }
        let inboxes = self.inner.inboxes.report();
        if !inboxes.is_empty() {
            out.insert("inboxes".to_owned(), Value::Object(inboxes));
        }
        let conn = self.db().await?;
        let now = Utc::now();
        let mut paused = serde_json::Map::new();
        let mut outbox = serde_json::Map::new();
        for persona in self.personas() {
            let info = persona.info();
            // The SMTP server of a persona that sends, as its last delivery found it.
            if info.outbox.smtp.is_some() {
                let state = match db::last_delivery(conn, &info.name).await? {
                    Some(row) if row.state == protege_store::outbox_state::QUEUED => {
                        json!({ "state": "down", "reason": row.smtp_reply })
                    }
                    _ => json!({ "state": "up" }),
                };
                outbox.insert(info.name.clone(), state);
            }
            if info.agent.is_none() {
                continue;
            }
            if let Some(job) = db::paused_job(conn, &info.name, now).await? {
                paused.insert(
                    info.name.clone(),
                    json!({
                        "until": job.next_attempt_at,
                        "reason": job.error,
                    }),
                );
            }
        }
        if !paused.is_empty() {
            out.insert("paused".to_owned(), Value::Object(paused));
        }
        if !outbox.is_empty() {
            out.insert("outbox".to_owned(), Value::Object(outbox));
        }
        Ok(out)
    }

    /// Connects the MCP servers of every loaded persona with `mcp` entries once, without
    /// keeping the connections (`protege check`): how each entry stands, by persona. `env`
    /// reads the tokens.
    pub async fn check_mcp(
        &self,
        env: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Result<Vec<(String, Vec<super::McpStatus>)>, EngineError> {
        let env: EnvReader = Arc::new(env);
        let http = protege_agent::http_client()?;
        let mut out = Vec::new();
        for persona in self.personas() {
            let info = persona.info();
            let wanted = super::mcp::wanted(info, &env);
            if wanted.is_empty() {
                continue;
            }
            let mcp = super::mcp::connect(info, wanted, None, &http).await;
            out.push((info.name.clone(), mcp.status()));
        }
        Ok(out)
    }

    /// The agent's worker named `owner` (its leases carry the name); see [`Agent`].
    pub fn agent(&self, owner: impl Into<String>) -> Result<Agent, EngineError> {
        let http = protege_agent::http_client()?;
        Ok(Agent {
            engine: self.clone(),
            client: ProviderClient::with_http(http.clone()),
            http,
            owner: owner.into(),
            lease: JOB_LEASE,
            env: Arc::new(|name| std::env::var(name).ok()),
            seen: Arc::default(),
            stopping: Arc::default(),
        })
    }
}

/// What a job answers.
enum Answers {
    /// An inbound message: a reply run.
    Message(Box<protege_core::MailMessage>),
    /// A responsibility's slot: a scheduled run.
    Slot(protege_core::Responsibility),
}

/// What the claim of a job found.
#[derive(Debug, Clone, Copy, Default)]
struct Claim {
    /// Another worker's lease had run out on it.
    resumed: bool,
    /// The daily cap its persona's replies reached, counted in the claiming transaction.
    capped: Option<&'static str>,
}

impl From<&db::ClaimedJob> for Claim {
    fn from(claimed: &db::ClaimedJob) -> Self {
        Self {
            resumed: claimed.resumed,
            capped: claimed.capped,
        }
    }
}

/// What ends a claim early.
enum Stop {
    /// The job ends so (or goes back to the queue).
    End(JobEnd),
    /// The lease was lost: write nothing more.
    Lost,
}

impl From<protege_core::Error> for Stop {
    fn from(e: protege_core::Error) -> Self {
        Stop::from(EngineError::from(e))
    }
}

impl From<EngineError> for Stop {
    fn from(e: EngineError) -> Self {
        Stop::End(JobEnd::Failed {
            reason: "error".to_owned(),
            error: e.to_string(),
        })
    }
}

impl Agent {
    /// The lease of each claimed job (default [`JOB_LEASE`]).
    #[must_use = "returns the changed worker"]
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// Reads environment variables (API keys, tool secrets) with `env`.
    #[must_use = "returns the changed worker"]
    pub fn env(mut self, env: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        self.env = Arc::new(env);
        self
    }

    /// The provider client (its backoff), e.g. shorter waits in tests.
    #[must_use = "returns the changed worker"]
    pub fn provider_client(mut self, client: ProviderClient) -> Self {
        self.client = client;
        self
    }

    /// Takes the personas as they are now: connects the MCP servers of every loaded persona
    /// with an `[agent]` table (again for those whose file changed), and ends the pause of
    /// a persona seen for the first time or whose file changed (a new key may be in place).
    /// How each MCP entry stands, by persona.
    pub async fn load_personas(&self) -> Vec<(String, Vec<super::McpStatus>)> {
        for persona in self.engine.personas() {
            let info = persona.info();
            if info.agent.is_none() {
                continue;
            }
            self.engine
                .inner
                .mcp
                .ensure(info, &self.env, &self.http)
                .await;
            let changed = match self.seen.lock() {
                Ok(mut seen) => match seen.get(&info.name) {
                    Some(before) if Arc::ptr_eq(before, info) || **before == **info => false,
                    _ => {
                        seen.insert(info.name.clone(), info.clone());
                        true
                    }
                },
                Err(_) => false,
            };
            if changed && let Ok(conn) = self.engine.db().await {
                match db::resume_paused(conn, &info.name, Utc::now()).await {
                    Ok(0) => {}
                    Ok(n) => {
                        tracing::info!(persona = %info.name, jobs = n, "paused jobs resume: the persona was loaded again")
                    }
                    Err(e) => {
                        tracing::warn!(persona = %info.name, "paused jobs could not resume: {e}")
                    }
                }
            }
        }
        self.engine.mcp_status()
    }

    /// Claims one job that may run now and runs it; `None` when there is none.
    pub async fn work_once(&self) -> Result<Option<JobReport>, EngineError> {
        let now = Utc::now();
        let conn = self.engine.db().await?;
        let caps_of = |name: &str| {
            let persona = self.engine.persona(name)?;
            persona.info().agent.as_ref().map(PersonaAgent::reply_caps)
        };
        let until = now + lease_of(self.lease);
        let Some(claimed) = db::claim_job(conn, &self.owner, until, now, None, &caps_of).await?
        else {
            return Ok(None);
        };
        if claimed.superseded > 0 {
            metrics::counter!("protege_agent_skips_total", "reason" => "superseded")
                .increment(claimed.superseded);
        }
        let claim = Claim::from(&claimed);
        Ok(Some(
            self.run_job(claimed.job, claim, None, &mut |_| {}).await?,
        ))
    }

    /// Claims and runs jobs until none may run now; the reports, in order.
    pub async fn work(&self) -> Result<Vec<JobReport>, EngineError> {
        let mut out = Vec::new();
        while let Some(report) = self.work_once().await? {
            out.push(report);
        }
        Ok(out)
    }

    /// Runs jobs until `stop` turns true, looking for new ones every `interval`; a job in
    /// flight finishes its round first.
    pub async fn run(&self, interval: Duration, mut stop: tokio::sync::watch::Receiver<bool>) {
        // The job in flight sees the stop between two rounds.
        let stopping = self.stopping.clone();
        let mut told = stop.clone();
        let _watch = AbortOnDrop(tokio::spawn(async move {
            while !*told.borrow_and_update() {
                if told.changed().await.is_err() {
                    return;
                }
            }
            stopping.store(true, Ordering::SeqCst);
        }));
        self.load_personas().await;
        loop {
            if *stop.borrow() {
                return;
            }
            match self.work_once().await {
                Ok(Some(_)) => continue,
                Ok(None) => {}
                Err(e) => tracing::warn!("the agent could not claim a job: {e}"),
            }
            // While idle: a reloaded persona's MCP servers are listed again.
            self.load_personas().await;
            tokio::select! {
                () = tokio::time::sleep(interval) => {}
                () = self.engine.inner.wake.jobs.notified() => {}
                _ = stop.changed() => {}
            }
        }
    }

    /// Runs the trigger `message_id` in the foreground (`protege agent run`): a message
    /// without a job gets one; a job `running` under another worker's live lease, or `done`
    /// without `again`, is [`EngineErrorKind::Conflict`]. `on_round` sees each round as it
    /// is recorded.
    pub async fn run_message(
        &self,
        persona: &str,
        message_id: &str,
        foreground: Foreground,
        on_round: &mut (dyn FnMut(&RoundReport) + Send),
    ) -> Result<JobReport, EngineError> {
        self.engine.require_persona(persona)?;
        let conn = self.engine.db().await?;
        let row = message_row(conn, message_id).await?;
        let now = Utc::now();
        let Some(job) = db::take_job(
            conn,
            row,
            persona,
            &self.owner,
            now + lease_of(self.lease),
            now,
            foreground.again,
        )
        .await?
        else {
            let state = db::job_of_message(conn, row)
                .await?
                .map(|j| j.state)
                .unwrap_or_default();
            return Err(EngineError::new(
                EngineErrorKind::Conflict,
                format!(
                    "the job of message `{message_id}` is `{state}`: pass `--again` to answer a done job again; a running job belongs to another worker until its lease runs out"
                ),
            ));
        };
        self.run_job(job, Claim::default(), Some(foreground), on_round)
            .await
    }

    /// Runs claimed job `job` to its end (or until the lease is lost) and records the end.
    async fn run_job(
        &self,
        job: agent_job::Model,
        claim: Claim,
        foreground: Option<Foreground>,
        on_round: &mut (dyn FnMut(&RoundReport) + Send),
    ) -> Result<JobReport, EngineError> {
        let conn = self.engine.db().await?.clone();
        let lost = Arc::new(AtomicBool::new(false));
        // Stopped when the job ends, and when this future is dropped (a caller's timeout, a
        // cancelled task): a dead worker's lease must run out.
        let (renewing, id, owner) = (conn.clone(), job.id, self.owner.clone());
        let renewer = renewer(
            self.lease,
            lost.clone(),
            format!("job {id}"),
            move |until, now| {
                let (conn, owner) = (renewing.clone(), owner.clone());
                async move { db::renew_job(&conn, id, &owner, until, now).await }
            },
        );
        let mut report = JobReport {
            job: job.id,
            persona: job.persona.clone(),
            run_id: job.run_id.clone(),
            state: String::new(),
            reason: None,
            error: None,
            rounds: Vec::new(),
            outbox: None,
            outbox_state: None,
            lease_lost: false,
        };
        let end = self
            .steps(&job, claim, foreground, &lost, &mut report, on_round)
            .await;
        drop(renewer);
        let end = match end {
            Ok(end) | Err(Stop::End(end)) => end,
            Err(Stop::Lost) => {
                report.lease_lost = true;
                report.state = db::job_state::RUNNING.to_owned();
                return Ok(report);
            }
        };
        let state = end.state();
        report.state = state.to_owned();
        report.reason = end.reason().map(str::to_owned);
        report.error = end.error().map(str::to_owned);
        let ended = match (&end, &report.run_id) {
            // The run waits with its job, in one transaction.
            (JobEnd::Waiting, Some(run_id)) => {
                metrics::gauge!("protege_approvals_waiting").increment(1.0);
                db::wait_for_approval(&conn, job.id, &self.owner, run_id, Utc::now()).await?
            }
            _ => db::end_job(&conn, job.id, &self.owner, &end, Utc::now()).await?,
        };
        if !ended {
            report.lease_lost = true;
        }
        // The provider refused the persona's access: its other jobs wait as long.
        if let JobEnd::Queued { at, reason, .. } = &end
            && reason == "paused"
        {
            db::pause_persona(&conn, &job.persona, *at, reason, Utc::now()).await?;
        }
        metrics::counter!("protege_agent_jobs_total", "persona" => job.persona.clone(), "state" => state)
            .increment(1);
        if state == db::job_state::SKIPPED {
            let reason = report.reason.clone().unwrap_or_default();
            metrics::counter!("protege_agent_skips_total", "reason" => gate_label(&reason))
                .increment(1);
        }
        Ok(report)
    }

    /// The steps of a job: the gate, the run's rounds, the reply.
    async fn steps(
        &self,
        job: &agent_job::Model,
        claim: Claim,
        foreground: Option<Foreground>,
        lost: &AtomicBool,
        report: &mut JobReport,
        on_round: &mut (dyn FnMut(&RoundReport) + Send),
    ) -> Result<JobEnd, Stop> {
        let engine = &self.engine;
        let conn = engine.db().await?;
        let Some(persona) = engine.persona(&job.persona) else {
            return Ok(JobEnd::Failed {
                reason: "persona".to_owned(),
                error: format!("persona `{}` is not loaded", job.persona),
            });
        };
        let info = persona.info();
        let Some(agent) = info.agent.clone() else {
            return Ok(JobEnd::Skipped("not_an_agent".to_owned()));
        };
        if claim.resumed {
            crashed(job, &agent)?;
        }
        let answers = answers_of(conn, job, info).await?;
        if foreground.is_none() {
            self.gate(job, claim, &agent, &answers).await?;
        }
        let provider = self.provider_of(job, info, &agent)?;
        // The persona's MCP tools: connected at its first job and after its file changed.
        let mcp = engine.inner.mcp.ensure(info, &self.env, &self.http).await;
        // Tool results are fenced like the thread's mail; a scheduled run has no thread.
        let fence = match (&answers, info.mail.fence) {
            (Answers::Message(trigger), true) => Some(protege_mail::Fence::new(
                &engine.fence_key(conn).await?,
                &trigger.thread_id.to_string(),
            )),
            _ => None,
        };
        // The tools a scheduled run may call: its responsibility's `tools` only.
        let only: Option<Vec<String>> = match &answers {
            Answers::Message(_) => None,
            Answers::Slot(responsibility) => Some(responsibility.tools.clone()),
        };
        let (run_id, mut next) = self
            .run_of(job, &answers, mcp.as_deref(), only.as_deref(), lost)
            .await?;
        report.run_id = Some(run_id.clone());
        let (correspondent, authenticated, thread) = match &answers {
            Answers::Message(trigger) => (
                bare_address(&trigger.from).to_lowercase(),
                engine.sender_authenticated(&persona, trigger),
                Some(trigger.thread_id),
            ),
            Answers::Slot(_) => (String::new(), false, None),
        };
        let context = CallContext {
            run_id: &run_id,
            persona: &job.persona,
            correspondent,
            authenticated,
            thread,
            dry_run: foreground.is_some_and(|f| f.no_tools),
            info,
            agent: &agent,
            mcp: mcp.as_deref(),
            fence: fence.as_ref(),
            only: only.as_deref(),
        };

        // Where the run stands is read once; afterwards each recorded round says it.
        let mut going_on =
            next.is_some() || engine.run(&run_id).await?.run.status == RunStatus::Started;
        while going_on {
            ensure(lost)?;
            // A worker told to stop hands the job back between two rounds.
            if self.stopping.load(Ordering::SeqCst) {
                return Err(Stop::End(JobEnd::Queued {
                    at: Utc::now(),
                    reason: db::RELEASED.to_owned(),
                    error: None,
                }));
            }
            let (round_report, step) = self
                .round(&context, &provider, job, next.take(), lost)
                .await?;
            on_round(&round_report);
            report.rounds.push(round_report);
            match step {
                // The next round's body, as the step gives it: not built again.
                Ok(Step::Continue { round, body }) => next = Some((round, body)),
                Ok(Step::Done { .. } | Step::Stopped { .. }) => going_on = false,
                Err(e) => return Err(e.into()),
            }
        }
        self.reply(&run_id, foreground, lost, report).await
    }

    /// The gate of a job claimed in the background (§17), before any model call: `reply =
    /// "off"`, a person who took the thread over, the daily caps the claim counted, and
    /// `tokens_per_day`. `Stop::End` when the job is not answered now.
    async fn gate(
        &self,
        job: &agent_job::Model,
        claim: Claim,
        agent: &PersonaAgent,
        answers: &Answers,
    ) -> Result<(), Stop> {
        if agent.reply == ReplyMode::Off {
            return Err(Stop::End(JobEnd::Skipped("reply_off".to_owned())));
        }
        let Answers::Message(trigger) = answers else {
            return Ok(());
        };
        if agent.after_person == AfterPerson::Skip
            && db::person_replied(self.engine.db().await?, trigger.thread_id).await?
        {
            return Err(Stop::End(JobEnd::Skipped("person_replied".to_owned())));
        }
        if let Some(cap) = claim.capped {
            return Err(Stop::End(JobEnd::Skipped(cap.to_owned())));
        }
        match self.tokens_cap(&job.persona, agent).await? {
            Some(end) => Err(Stop::End(end)),
            None => Ok(()),
        }
    }

    /// Where and how the persona's model is asked: its wire format, endpoint and key.
    /// `Stop::End` when the persona names no model or provider (failed), or its key is not
    /// in the environment (paused).
    fn provider_of(
        &self,
        job: &agent_job::Model,
        info: &PersonaInfo,
        agent: &PersonaAgent,
    ) -> Result<ProviderSetup, Stop> {
        let failed = |error: String| {
            Stop::End(JobEnd::Failed {
                reason: "persona".to_owned(),
                error,
            })
        };
        let Some(model) = info.model.clone() else {
            return Err(failed(format!(
                "persona `{}` has no `[model]`",
                job.persona
            )));
        };
        let format = match model.provider {
            Some(Provider::Anthropic) => ProviderFormat::Anthropic,
            Some(Provider::Openai) if model.uses_responses() => ProviderFormat::OpenAiResponses,
            Some(Provider::Openai) => ProviderFormat::OpenAiChat,
            None => {
                return Err(failed(format!(
                    "persona `{}` names no `[model] provider`",
                    job.persona
                )));
            }
        };
        let key_var = model.api_key_env().unwrap_or_default().to_owned();
        let Some(api_key) = (self.env)(&key_var) else {
            return Err(Stop::End(JobEnd::Queued {
                at: Utc::now() + lease_of(agent.pause),
                reason: "paused".to_owned(),
                error: Some(format!(
                    "the environment variable `{key_var}` of `[model] api_key_env` is not set"
                )),
            }));
        };
        Ok(ProviderSetup {
            format,
            base_url: model.base_url().unwrap_or_default().to_owned(),
            api_key,
            model,
        })
    }

    /// The job's run, resumed, or started now (with the body of its first round).
    async fn run_of(
        &self,
        job: &agent_job::Model,
        answers: &Answers,
        mcp: Option<&PersonaMcp>,
        only: Option<&[String]>,
        lost: &AtomicBool,
    ) -> Result<(String, Option<(u32, Value)>), Stop> {
        if let Some(id) = self.live_run(job).await? {
            return Ok((id, None));
        }
        let input = match answers {
            Answers::Message(trigger) => {
                ResolveInput::reply(job.persona.clone(), trigger.message_id.clone())
            }
            Answers::Slot(responsibility) => {
                ResolveInput::scheduled(job.persona.clone(), responsibility.name.clone())
            }
        }
        .format(Format::Provider);
        let extra: Vec<protege_core::ToolDef> = mcp
            .map(|m| m.tools().cloned().collect())
            .unwrap_or_default();
        let offer = super::Offer {
            extra: &extra,
            only,
        };
        let run = self.engine.start_run_offering(&input, &offer, true).await?;
        ensure(lost)?;
        let conn = self.engine.db().await?;
        if !db::set_job_run(conn, job.id, &self.owner, &run.id, Utc::now()).await? {
            return Err(Stop::Lost);
        }
        Ok((run.id, Some((0, run.body))))
    }

    /// One round of the run: its response (stored before, or asked of the provider with
    /// `next`, the round's body when known), recorded before its calls are made; the calls,
    /// concurrently; their results recorded. The round as reported, and the step the run
    /// takes next.
    async fn round(
        &self,
        context: &CallContext<'_>,
        provider: &ProviderSetup,
        job: &agent_job::Model,
        next: Option<(u32, Value)>,
        lost: &AtomicBool,
    ) -> Result<(RoundReport, Result<Step, EngineError>), Stop> {
        let engine = &self.engine;
        let run_id = context.run_id;
        // A round whose response is stored (a resumed job) is never asked again.
        let stored = match next {
            Some(_) => None,
            None => engine.pending_round(run_id).await?,
        };
        let (round, response, resumed) = match stored {
            Some(pending) => (pending.round, pending.response, true),
            None => {
                let (round, body) = match next {
                    Some(next) => next,
                    None => engine.next_round_body(run_id).await?,
                };
                let call = provider.call(&body, context.agent);
                let reply = match self.client.call(&call).await {
                    Ok(reply) => reply,
                    Err(e) => return Err(Stop::End(provider_end(e, job, context.agent))),
                };
                ensure(lost)?;
                (round, reply.body, false)
            }
        };
        let pending = engine
            .record_response(run_id, round, response.clone())
            .await?;
        protege_core::fault("agent.after_response");
        let text = response_text(provider.format, &response);
        // Calls that wait for a person: decided for this round, or the run waits.
        let decision = job
            .approval
            .as_deref()
            .and_then(|text| serde_json::from_str::<Decision>(text).ok())
            .filter(|d| d.round == round);
        let waits = pending
            .calls
            .iter()
            .any(|c| context.needs_approval(&c.name));
        if waits && decision.is_none() {
            return Err(Stop::End(JobEnd::Waiting));
        }
        let (calls, ran) = decided_calls(&pending.calls, decision.as_ref(), context);
        let outcomes = futures::future::join_all(calls.iter().map(|(call, decided)| async {
            match decided {
                Some(outcome) => outcome.clone(),
                None => self.call_tool(context, call).await,
            }
        }))
        .await;
        let results: Vec<ToolResult> = calls
            .iter()
            .zip(&outcomes)
            .map(|((call, _), out)| {
                ToolResult::new(call.tool_call_id.clone(), out.content.clone()).error(out.is_error)
            })
            .collect();
        ensure(lost)?;
        let input = RoundInput {
            round,
            response,
            results,
        };
        let step = engine.record_round_ran(run_id, input, &ran).await;
        protege_core::fault("agent.after_tools");
        let calls = calls
            .iter()
            .zip(outcomes)
            .map(|((call, _), out)| CallReport {
                tool_call_id: call.tool_call_id.clone(),
                name: call.name.clone(),
                input: call.input.clone(),
                content: out.content,
                is_error: out.is_error,
            })
            .collect();
        let report = RoundReport {
            round,
            resumed,
            text,
            calls,
        };
        Ok((report, step))
    }

    /// The reply of the finished run `run_id`, composed and stored (held for a person in a
    /// foreground run that does not send).
    async fn reply(
        &self,
        run_id: &str,
        foreground: Option<Foreground>,
        lost: &AtomicBool,
        report: &mut JobReport,
    ) -> Result<JobEnd, Stop> {
        let record = self.engine.run(run_id).await?;
        if record.run.status == RunStatus::Stopped {
            return Ok(JobEnd::Skipped("run_stopped".to_owned()));
        }
        if record.run.status != RunStatus::Done {
            return Ok(JobEnd::Failed {
                reason: "error".to_owned(),
                error: format!("run `{run_id}` ended `{}`", record.run.status),
            });
        }
        ensure(lost)?;
        let held = foreground.filter(|f| !f.send).map(|_| "trial run");
        match self
            .engine
            .compose_reply_held(run_id, Utc::now(), held)
            .await?
        {
            Composed::Reply { outbox } => {
                report.outbox = Some(outbox.id);
                report.outbox_state = Some(outbox.state.clone());
                Ok(JobEnd::Done)
            }
            Composed::Skipped { reason } => Ok(JobEnd::Skipped(reason)),
        }
    }

    /// The run of `job` that goes on, when it has one.
    async fn live_run(&self, job: &agent_job::Model) -> Result<Option<String>, EngineError> {
        let Some(id) = &job.run_id else {
            return Ok(None);
        };
        match self.engine.run(id).await {
            Ok(record) if record.run.status == RunStatus::Abandoned => Ok(None),
            Ok(_) => Ok(Some(id.clone())),
            Err(e) if e.kind() == EngineErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `[agent] tokens_per_day` (§17), checked before any model call: over it, the job
    /// waits for the next midnight (UTC). The reply caps are counted by the claim.
    async fn tokens_cap(
        &self,
        persona: &str,
        agent: &PersonaAgent,
    ) -> Result<Option<JobEnd>, EngineError> {
        let Some(limit) = agent.tokens_per_day else {
            return Ok(None);
        };
        let conn = self.engine.db().await?;
        let now = Utc::now();
        let midnight = now
            .date_naive()
            .and_hms_opt(0, 0, 0)
            .map_or(now, |t| t.and_utc());
        if db::tokens_since(conn, persona, midnight).await? < limit {
            return Ok(None);
        }
        Ok(Some(JobEnd::Queued {
            at: midnight + chrono::Duration::days(1),
            reason: "deferred".to_owned(),
            error: None,
        }))
    }

    /// Makes one call of a round; every failure is an error result for the model.
    async fn call_tool(&self, context: &CallContext<'_>, call: &PendingCall) -> ToolOutcome {
        let name = call.name.as_str();
        if !context.offered(name) {
            metrics::counter!("protege_tool_calls_total", "tool" => "unknown", "outcome" => "refused")
                .increment(1);
            return ToolOutcome::error(format!(
                "`{name}` is not a tool of this run: call one of the tools you were given"
            ));
        }
        if let Some(def) = context.definition(name)
            && let Err(why) = protege_agent::check_input(&def.input_schema, &call.input)
        {
            metrics::counter!("protege_tool_calls_total", "tool" => name.to_owned(), "outcome" => "invalid_input")
                .increment(1);
            return ToolOutcome::error(format!("the input of `{name}` {why}"));
        }
        if context.dry_run {
            return ToolOutcome {
                content: "not called: dry run".to_owned(),
                is_error: false,
            };
        }
        let out = match context.info.tool_runner(name).map(|t| &t.runner) {
            Some(ToolRunner::Http(http)) => {
                let secret = http.secret_env.as_deref().and_then(|v| (self.env)(v));
                protege_agent::call_http(
                    &self.http,
                    &HttpCall {
                        name,
                        url: &http.url,
                        secret: secret.as_deref(),
                        timeout: http.timeout,
                        run_id: context.run_id,
                        call_id: &call.tool_call_id,
                        persona: context.persona,
                        correspondent: &context.correspondent,
                        authenticated: context.authenticated,
                        input: &call.input,
                        now: Utc::now().timestamp(),
                        limit: context.result_limit(),
                    },
                )
                .await
            }
            Some(ToolRunner::Builtin(BuiltinTool::ReadAttachment)) => {
                self.read_attachment(context, &call.input).await
            }
            Some(ToolRunner::Mcp(_)) => {
                // The MCP client counts its calls itself.
                let out = match context.mcp.and_then(|m| m.offering(name)) {
                    Some((tools, _, entry)) => {
                        tools
                            .call(name, &call.input, entry.timeout, context.result_limit())
                            .await
                    }
                    None => ToolOutcome::error(format!(
                        "`{name}` is not offered now: its MCP server is down"
                    )),
                };
                return context.fenced(out);
            }
            None => ToolOutcome::error(format!(
                "`{name}` is run by the application, not by the agent: it cannot be called here"
            )),
        };
        let outcome = if out.is_error { "error" } else { "ok" };
        metrics::counter!("protege_tool_calls_total", "tool" => name.to_owned(), "outcome" => outcome)
            .increment(1);
        context.fenced(out)
    }

    /// The built-in `read_attachment`: an attachment of the trigger's thread by id.
    async fn read_attachment(&self, context: &CallContext<'_>, input: &Value) -> ToolOutcome {
        let Some(id) = protege_core::read_attachment_id(input) else {
            return ToolOutcome::error("`attachment_id` is missing");
        };
        let conn = match self.engine.db().await {
            Ok(conn) => conn,
            Err(e) => return ToolOutcome::error(format!("the attachment cannot be read: {e}")),
        };
        let Some(thread) = context.thread else {
            return ToolOutcome::error("a scheduled run has no thread: it has no attachments");
        };
        let found = match db::attachment_in_thread(conn, thread, &id).await {
            Ok(found) => found,
            Err(e) => return ToolOutcome::error(format!("the attachment cannot be read: {e}")),
        };
        let Some(attachment) = found else {
            return ToolOutcome::error(format!("no attachment `{id}` in this thread"));
        };
        let Some(data) = attachment.data else {
            return ToolOutcome::error(format!(
                "attachment `{id}` was stored without its data (over the size cap)"
            ));
        };
        let limit = context.result_limit();
        if data.len() > limit {
            return ToolOutcome::error(format!(
                "attachment `{id}` has {} bytes, over the {limit} a result may hold",
                data.len()
            ));
        }
        let head = json!({ "attachment_id": id }).to_string();
        // An image or a PDF is stored as its head alone: the part is rebuilt from the
        // attachment each time a body is built.
        if protege_core::is_attachment_part(&attachment.content_type, &data) {
            return ToolOutcome {
                content: head,
                is_error: false,
            };
        }
        let text_like = attachment.content_type.starts_with("text/")
            || attachment.content_type.contains("json")
            || attachment.content_type.contains("xml");
        match String::from_utf8(data) {
            Ok(text) if text_like => ToolOutcome {
                content: format!("{head}\n{}", protege_mail::drop_invisible(&text).0),
                is_error: false,
            },
            _ => ToolOutcome::error(format!(
                "attachment `{id}` ({}) is neither text, an image nor a PDF: it cannot be read",
                attachment.content_type
            )),
        }
    }
}

/// A person's decision on the calls a run waited for (`agent_jobs.approval`).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
struct Decision {
    /// The round whose calls it decides.
    round: u32,
    /// `approved` or `rejected`.
    decision: String,
    /// Who decided, as given.
    by: String,
    /// When.
    at: DateTime<Utc>,
    /// Why, for a rejection.
    #[serde(default)]
    reason: Option<String>,
    /// The calls decided, with the input that runs and the model's.
    calls: Vec<DecidedCall>,
}

/// A call of a [`Decision`].
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
struct DecidedCall {
    tool_call_id: String,
    input: Value,
    original: Value,
}

/// A call an operator approves: its id and, to change what runs, another input. Also the
/// JSON of each entry of `POST /v1/runs/{id}/approve`'s `calls`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovedCall {
    /// The call's id.
    pub tool_call_id: String,
    /// The input that runs instead of the model's (checked against the tool's schema).
    #[serde(default)]
    pub input: Option<Value>,
}

impl Engine {
    /// Approves the calls run `run_id` waits for (`waiting`: calls of tools with `approval =
    /// true`): each listed once, with an optional edited input checked against the tool's
    /// schema ([`EngineErrorKind::InvalidInput`] otherwise); the run goes on, its job
    /// queued and due now, and the calls are made with the inputs approved (which their
    /// `tool_uses` rows keep; the model's are kept with the approval). The first decision
    /// wins: a run that is not waiting is [`EngineErrorKind::Conflict`] naming its status.
    /// Answers `{"run_id","status":"approved","job"}`.
    pub async fn approve_run(
        &self,
        run_id: &str,
        by: &str,
        calls: &[ApprovedCall],
    ) -> Result<Value, EngineError> {
        let (round, waiting, info) = self.waiting_calls(run_id, "approved").await?;
        let mcp = self.inner.mcp.get(&info.name);
        let mut decided: Vec<DecidedCall> = Vec::new();
        for approved in calls {
            if decided
                .iter()
                .any(|d| d.tool_call_id == approved.tool_call_id)
            {
                return Err(invalid(format!(
                    "call `{}` is listed twice: approve each waiting call once",
                    approved.tool_call_id
                )));
            }
            let Some(call) = waiting
                .iter()
                .find(|c| c.tool_call_id == approved.tool_call_id)
            else {
                return Err(invalid(format!(
                    "call `{}` is not a call run `{run_id}` waits for",
                    approved.tool_call_id
                )));
            };
            let input = approved.input.clone().unwrap_or_else(|| call.input.clone());
            let mcp_def = || {
                mcp.as_deref()
                    .and_then(|m| m.tools().find(|t| t.name == call.name).cloned())
            };
            let def = info
                .tools
                .iter()
                .find(|t| t.name == call.name)
                .cloned()
                .or_else(mcp_def);
            if let Some(def) = def
                && let Err(why) = protege_agent::check_input(&def.input_schema, &input)
            {
                return Err(invalid(format!(
                    "the input of call `{}` ({}) does not match the tool's schema: {why}",
                    call.tool_call_id, call.name
                )));
            }
            decided.push(DecidedCall {
                tool_call_id: call.tool_call_id.clone(),
                input,
                original: call.input.clone(),
            });
        }
        if let Some(missing) = waiting
            .iter()
            .find(|c| !decided.iter().any(|d| d.tool_call_id == c.tool_call_id))
        {
            return Err(invalid(format!(
                "call `{}` of run `{run_id}` waits for approval and is not listed: approve every waiting call",
                missing.tool_call_id
            )));
        }
        let decision = Decision {
            round,
            decision: "approved".to_owned(),
            by: by.to_owned(),
            at: Utc::now(),
            reason: None,
            calls: decided,
        };
        let job = self.decide_waiting(run_id, &decision, "approved").await?;
        Ok(json!({ "run_id": run_id, "status": "approved", "job": job }))
    }

    /// Rejects the calls run `run_id` waits for: each is answered with the error result
    /// "rejected by an operator: REASON" and the run goes on. Answers
    /// `{"run_id","status":"rejected"}`; [`EngineErrorKind::Conflict`] unless it waits.
    pub async fn reject_run(
        &self,
        run_id: &str,
        by: &str,
        reason: &str,
    ) -> Result<Value, EngineError> {
        let (round, waiting, _) = self.waiting_calls(run_id, "rejected").await?;
        let decision = Decision {
            round,
            decision: "rejected".to_owned(),
            by: by.to_owned(),
            at: Utc::now(),
            reason: Some(reason.to_owned()),
            calls: waiting
                .iter()
                .map(|c| DecidedCall {
                    tool_call_id: c.tool_call_id.clone(),
                    input: c.input.clone(),
                    original: c.input.clone(),
                })
                .collect(),
        };
        self.decide_waiting(run_id, &decision, "rejected").await?;
        Ok(json!({ "run_id": run_id, "status": "rejected" }))
    }

    /// The pending round of waiting run `run_id`, its calls that wait for a person, and
    /// its persona; the errors of a run that does not wait.
    /// The calls run `run_id` waits for (`GET /v1/runs/{id}/waiting`, the inspector):
    /// `{"run_id", "round", "calls": [{"tool_call_id", "name", "input"}]}`, each call as the
    /// model asked for it; [`EngineErrorKind::Conflict`] unless the run is `waiting`.
    pub async fn waiting_run(&self, run_id: &str) -> Result<Value, EngineError> {
        let (round, calls, _) = self.waiting_calls(run_id, "decided").await?;
        let calls: Vec<Value> = calls
            .iter()
            .map(|c| json!({ "tool_call_id": c.tool_call_id, "name": c.name, "input": c.input }))
            .collect();
        Ok(json!({ "run_id": run_id, "round": round, "calls": calls }))
    }

    async fn waiting_calls(
        &self,
        run_id: &str,
        what: &str,
    ) -> Result<(u32, Vec<PendingCall>, Arc<PersonaInfo>), EngineError> {
        let record = self.run(run_id).await?;
        if record.run.status != RunStatus::Waiting {
            return Err(not_waiting(run_id, record.run.status, what));
        }
        let Some(pending) = self.pending_round(run_id).await? else {
            return Err(not_waiting(run_id, record.run.status, what));
        };
        let persona = self.require_persona(&record.run.persona)?;
        let info = persona.info().clone();
        let mcp = self.inner.mcp.get(&info.name);
        let waiting: Vec<PendingCall> = pending
            .calls
            .into_iter()
            .filter(|c| approval_of(&info, mcp.as_deref(), &c.name))
            .collect();
        Ok((pending.round, waiting, info))
    }

    /// Stores `decision` on run `run_id`'s job; the job's id.
    async fn decide_waiting(
        &self,
        run_id: &str,
        decision: &Decision,
        what: &str,
    ) -> Result<i64, EngineError> {
        let text = serde_json::to_string(decision).unwrap_or_default();
        match db::decide_calls(self.db().await?, run_id, &text, Utc::now()).await? {
            Some(job) => {
                metrics::gauge!("protege_approvals_waiting").decrement(1.0);
                Ok(job)
            }
            None => {
                let status = self.run(run_id).await?.run.status;
                Err(not_waiting(run_id, status, what))
            }
        }
    }
}

/// The error of a decision on a run that does not wait for one.
fn not_waiting(run_id: &str, status: RunStatus, what: &str) -> EngineError {
    EngineError::new(
        EngineErrorKind::Conflict,
        format!("run `{run_id}` is `{status}`: only a `waiting` run can be {what}"),
    )
}

/// An [`EngineErrorKind::InvalidInput`] error.
fn invalid(message: String) -> EngineError {
    EngineError::new(EngineErrorKind::InvalidInput, message)
}

/// What the calls of a run need to know.
struct CallContext<'a> {
    run_id: &'a str,
    persona: &'a str,
    correspondent: String,
    authenticated: bool,
    /// The trigger's thread; `None` in a scheduled run.
    thread: Option<i64>,
    dry_run: bool,
    info: &'a PersonaInfo,
    agent: &'a PersonaAgent,
    /// The persona's MCP servers, when it has `mcp` entries.
    mcp: Option<&'a PersonaMcp>,
    /// The fence of the trigger's thread, with `[mail] fence`: tool results are fenced like
    /// mail bodies.
    fence: Option<&'a protege_mail::Fence>,
    /// The tools a scheduled run may call (`[[responsibilities]] tools`); `None` for a
    /// reply run, limited by `[agent] reply_tools`.
    only: Option<&'a [String]>,
}

impl CallContext<'_> {
    /// The definition of the tool `name`: the persona's own, or its MCP server's.
    fn definition(&self, name: &str) -> Option<&protege_core::ToolDef> {
        self.info
            .tools
            .iter()
            .find(|t| t.name == name)
            .or_else(|| self.mcp?.tools().find(|t| t.name == name))
    }

    /// Whether the tool `name` is offered to the run.
    fn offered(&self, name: &str) -> bool {
        let allowed = match self.only {
            Some(only) => only.iter().any(|t| t == name),
            None => self.agent.offers_reply_tool(name),
        };
        self.definition(name).is_some() && allowed
    }

    /// Whether a call of `name` waits for a person.
    fn needs_approval(&self, name: &str) -> bool {
        if self.dry_run || !self.offered(name) {
            return false;
        }
        approval_of(self.info, self.mcp, name)
    }

    /// `out` as the model reads it: with `[mail] fence`, between the thread's fence lines,
    /// as text from outside.
    fn fenced(&self, out: ToolOutcome) -> ToolOutcome {
        match self.fence {
            Some(fence) => ToolOutcome {
                content: fence.wrap(&out.content).0,
                is_error: out.is_error,
            },
            None => out,
        }
    }

    /// The most bytes a result may hold (`[limits] tool_result_bytes`).
    fn result_limit(&self) -> usize {
        self.info
            .limits
            .tool_result_bytes
            .unwrap_or(protege_core::DEFAULT_TOOL_RESULT_BYTES)
    }
}

/// Whether a call of `name` waits for a person: the `approval` of its `[[tools]]` entry,
/// or for an MCP tool that of the entry whose server offers it (two entries' `allow` may
/// both match a name; the server that lists it decides). The agent's run and the listing of
/// the calls it waits for ask this one question.
fn approval_of(info: &PersonaInfo, mcp: Option<&PersonaMcp>, name: &str) -> bool {
    if !info.tools.iter().any(|t| t.name == name)
        && let Some((_, approval, _)) = mcp.and_then(|m| m.offering(name))
    {
        return approval;
    }
    info.tool_runner(name).is_some_and(|t| t.approval)
}

/// The text the model wrote in `response`, for the report.
fn response_text(format: ProviderFormat, response: &Value) -> String {
    let bytes = response.to_string();
    let parsed = match format {
        ProviderFormat::Anthropic => protege_core::wire::from_anthropic_response(bytes.as_bytes()),
        ProviderFormat::OpenAiChat => protege_core::wire::from_openai_response(bytes.as_bytes()),
        ProviderFormat::OpenAiResponses => {
            protege_core::wire::from_openai_responses_response(bytes.as_bytes())
        }
    };
    parsed.map(|r| r.message.content.text()).unwrap_or_default()
}

/// The job's end after the provider's error `e`.
fn provider_end(e: ProviderError, job: &agent_job::Model, agent: &PersonaAgent) -> JobEnd {
    let now = Utc::now();
    match e {
        ProviderError::Poison { .. } => JobEnd::Failed {
            reason: "provider".to_owned(),
            error: e.to_string(),
        },
        ProviderError::Pause { .. } => JobEnd::Queued {
            at: now + lease_of(agent.pause),
            reason: "paused".to_owned(),
            error: Some(e.to_string()),
        },
        ProviderError::Retry { after, .. } => {
            if now - job.created_at > lease_of(agent.give_up_after) {
                return JobEnd::Failed {
                    reason: "gave_up".to_owned(),
                    error: e.to_string(),
                };
            }
            let doublings = u32::try_from(job.attempts.max(1) - 1).unwrap_or(0).min(16);
            let wait = FIRST_REQUEUE
                .saturating_mul(1 << doublings)
                .min(MAX_REQUEUE)
                .max(after.unwrap_or_default());
            JobEnd::Queued {
                at: now + lease_of(wait),
                reason: "retry".to_owned(),
                error: Some(e.to_string()),
            }
        }
    }
}

/// The label of a skip reason in metrics: its first word (`automated (…)` → `automated`).
fn gate_label(reason: &str) -> String {
    reason.split(' ').next().unwrap_or_default().to_owned()
}

/// A duration as chrono's.
pub(crate) fn lease_of(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

/// `Stop::End` (failed, `crashed`) when resumed job `job` was claimed more than `[agent]
/// max_attempts` times without finishing.
fn crashed(job: &agent_job::Model, agent: &PersonaAgent) -> Result<(), Stop> {
    if u32::try_from(job.attempts).unwrap_or(u32::MAX) <= agent.max_attempts {
        return Ok(());
    }
    Err(Stop::End(JobEnd::Failed {
        reason: "crashed".to_owned(),
        error: format!(
            "claimed {} times without finishing (`[agent] max_attempts` is {})",
            job.attempts - 1,
            agent.max_attempts
        ),
    }))
}

/// What job `job` answers: its message, or its responsibility's slot. `Stop::End` when
/// the message or the responsibility is gone (skipped), or the job names neither (failed).
async fn answers_of(
    conn: &sea_orm::DatabaseConnection,
    job: &agent_job::Model,
    info: &PersonaInfo,
) -> Result<Answers, Stop> {
    let skipped = |reason: &str| Stop::End(JobEnd::Skipped(reason.to_owned()));
    match (job.message_id, job.slot_id) {
        (Some(row), _) => match db::load_message_by_row(conn, row).await? {
            Some(trigger) => Ok(Answers::Message(Box::new(trigger))),
            None => Err(skipped("trigger_gone")),
        },
        (None, Some(slot)) => {
            use sea_orm::EntityTrait;
            let row = protege_core::db::entities::responsibility_slot::Entity::find_by_id(slot)
                .one(conn)
                .await
                .map_err(protege_core::Error::from)?;
            let found = row.and_then(|row| {
                info.responsibilities
                    .iter()
                    .find(|r| r.name == row.responsibility)
                    .cloned()
            });
            found
                .map(Answers::Slot)
                .ok_or_else(|| skipped("responsibility_gone"))
        }
        (None, None) => Err(Stop::End(JobEnd::Failed {
            reason: "error".to_owned(),
            error: "the job answers neither a message nor a slot".to_owned(),
        })),
    }
}

/// A call of a round, with its outcome when a person rejected it (never made).
type RoundCall = (PendingCall, Option<ToolOutcome>);

/// The calls of a round as a person decided them: each with its outcome when rejected
/// (an error result, never made), with its input as approved otherwise; and the calls
/// whose input the person changed, with that input (recorded with the round).
fn decided_calls(
    pending: &[PendingCall],
    decision: Option<&Decision>,
    context: &CallContext<'_>,
) -> (Vec<RoundCall>, Vec<(String, Value)>) {
    let mut ran: Vec<(String, Value)> = Vec::new();
    let mut calls: Vec<RoundCall> = Vec::new();
    for call in pending {
        let decided = decision.filter(|_| context.needs_approval(&call.name));
        match decided {
            None => calls.push((call.clone(), None)),
            Some(d) if d.decision == "rejected" => {
                let why = d.reason.clone().unwrap_or_default();
                let outcome = ToolOutcome::error(format!("rejected by an operator: {why}"));
                calls.push((call.clone(), Some(outcome)));
            }
            Some(d) => {
                let input = d
                    .calls
                    .iter()
                    .find(|c| c.tool_call_id == call.tool_call_id)
                    .map_or_else(|| call.input.clone(), |c| c.input.clone());
                if input != call.input {
                    ran.push((call.tool_call_id.clone(), input.clone()));
                }
                let call = PendingCall {
                    input,
                    ..call.clone()
                };
                calls.push((call, None));
            }
        }
    }
    (calls, ran)
}

/// The persona's model as the agent calls it.
struct ProviderSetup {
    format: ProviderFormat,
    base_url: String,
    api_key: String,
    model: protege_core::ModelConfig,
}

impl ProviderSetup {
    /// The call of one round with `body`.
    fn call<'a>(&'a self, body: &'a Value, agent: &PersonaAgent) -> ProviderCall<'a> {
        ProviderCall {
            format: self.format,
            base_url: &self.base_url,
            api_key: &self.api_key,
            body,
            timeout: self.model.timeout(),
            attempts: agent.provider_attempts,
        }
    }
}

/// `Err(Stop::Lost)` once the lease is lost.
fn ensure(lost: &AtomicBool) -> Result<(), Stop> {
    if lost.load(Ordering::SeqCst) {
        Err(Stop::Lost)
    } else {
        Ok(())
    }
}

/// A task aborted when dropped.
pub(crate) struct AbortOnDrop(pub(crate) tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Renews a lease (of `what`, as logged) every third of `lease` until dropped:
/// `renew(until, now)` answers whether the holder still has it; `lost` is set when it does
/// not. A renewal that fails is logged and tried again at the next third.
pub(crate) fn renewer<F, Fut>(
    lease: Duration,
    lost: Arc<AtomicBool>,
    what: String,
    renew: F,
) -> AbortOnDrop
where
    F: Fn(DateTime<Utc>, DateTime<Utc>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = protege_core::Result<bool>> + Send,
{
    AbortOnDrop(tokio::spawn(async move {
        loop {
            tokio::time::sleep(lease / 3).await;
            let now = Utc::now();
            match renew(now + lease_of(lease), now).await {
                Ok(true) => {}
                Ok(false) => {
                    lost.store(true, Ordering::SeqCst);
                    return;
                }
                Err(e) => tracing::warn!("renewing the lease of {what} failed: {e}"),
            }
        }
    }))
}

/// The row id of the message `message_id`, or the error naming an unknown one.
async fn message_row(
    conn: &sea_orm::DatabaseConnection,
    message_id: &str,
) -> Result<i64, EngineError> {
    match db::message_row_of(conn, message_id).await? {
        Some(row) => Ok(row),
        None => Err(super::unknown_message(conn, message_id).await),
    }
}
