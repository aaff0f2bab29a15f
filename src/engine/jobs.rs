//! The agent's jobs (§17) as the engine shows and changes them: which inbound mail gets a
//! job ([`Engine::job_rule`]), the listing of `GET /v1/agent/jobs` and `protege agent
//! jobs`, and the retry of a failed job.

use chrono::{DateTime, Utc};
use serde::Serialize;

use protege_core::db::entities::agent_job;

use super::{Engine, EngineError, EngineErrorKind};
use crate::db;

/// A job as the routes and the command line show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobInfo {
    /// The job's id.
    pub id: i64,
    /// The Message-ID of the inbound message answered; `None` for a scheduled job.
    pub message_id: Option<String>,
    /// The responsibility slot fired; `None` for a reply job.
    pub slot_id: Option<i64>,
    /// The persona.
    pub persona: String,
    /// `queued`, `running`, `waiting`, `done`, `skipped` or `failed`.
    pub state: String,
    /// Why it was skipped, deferred, paused or failed.
    pub reason: Option<String>,
    /// The run answering it.
    pub run_id: Option<String>,
    /// How many times it was claimed.
    pub attempts: i32,
    /// When it may run again.
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// The last error.
    pub error: Option<String>,
    /// When it was made.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

impl Engine {
    /// Which inbound messages get a job: those addressed to a persona with an `[agent]`
    /// table (§17), the gate's header rules with each persona's settings.
    pub fn job_rule(&self) -> db::JobRule {
        let bare = |a: &String| protege_core::bare_address(a).trim().to_lowercase();
        let personas = self.personas();
        let mut rule = db::JobRule::default();
        for p in &personas {
            let info = p.info();
            rule.installation.extend(info.addresses.iter().map(bare));
            let Some(agent) = &info.agent else { continue };
            rule.personas.push(db::AgentPersona {
                name: p.name().to_owned(),
                addresses: info.addresses.iter().map(bare).collect(),
                answer_cc: agent.answer_cc,
                answer_automated: agent.answer_automated,
                max_age: agent.max_age,
            });
        }
        rule
    }

    /// The job `row` as shown, its message's Message-ID read.
    pub(crate) async fn job_info(&self, row: agent_job::Model) -> Result<JobInfo, EngineError> {
        let message_id = match row.message_id {
            Some(m) => db::message_id_of(self.db().await?, m).await?,
            None => None,
        };
        Ok(JobInfo {
            id: row.id,
            message_id,
            slot_id: row.slot_id,
            persona: row.persona,
            state: row.state,
            reason: row.reason,
            run_id: row.run_id,
            attempts: row.attempts,
            next_attempt_at: row.next_attempt_at,
            error: row.error,
            created_at: row.created_at,
            updated_at: row.updated_at,
        })
    }

    /// The jobs `filter` names, newest first. An unknown state is
    /// [`EngineErrorKind::InvalidInput`].
    pub async fn agent_jobs(&self, filter: &db::JobFilter) -> Result<Vec<JobInfo>, EngineError> {
        if let Some(state) = &filter.state
            && !db::job_state::ALL.contains(&state.as_str())
        {
            return Err(EngineError::new(
                EngineErrorKind::InvalidInput,
                format!(
                    "unknown job state `{state}`: expected one of {}",
                    db::job_state::ALL.join(", ")
                ),
            ));
        }
        let rows = db::list_jobs(self.db().await?, filter).await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            out.push(self.job_info(row).await?);
        }
        Ok(out)
    }

    /// Job `id`, or [`EngineErrorKind::NotFound`].
    pub async fn agent_job(&self, id: i64) -> Result<JobInfo, EngineError> {
        let row = db::load_job(self.db().await?, id).await?.ok_or_else(|| {
            EngineError::new(
                EngineErrorKind::NotFound,
                format!("unknown job {id}: no job with this id in the database"),
            )
        })?;
        self.job_info(row).await
    }

    /// Queues failed job `id` again, due now; [`EngineErrorKind::Conflict`] naming its
    /// state unless it is `failed`.
    pub async fn retry_job(&self, id: i64) -> Result<JobInfo, EngineError> {
        let before = self.agent_job(id).await?;
        if !db::retry_job(self.db().await?, id, Utc::now()).await? {
            let now = self.agent_job(id).await.unwrap_or(before);
            return Err(EngineError::new(
                EngineErrorKind::Conflict,
                format!(
                    "job {id} is `{}`: only a `failed` job can be retried",
                    now.state
                ),
            ));
        }
        self.agent_job(id).await
    }

    /// Queues every failed job again (of `persona`, updated at or after `since`, when
    /// named), due now; how many.
    pub async fn retry_failed_jobs(
        &self,
        persona: Option<&str>,
        since: Option<DateTime<Utc>>,
    ) -> Result<u64, EngineError> {
        Ok(db::retry_failed_jobs(self.db().await?, persona, since, Utc::now()).await?)
    }
}
