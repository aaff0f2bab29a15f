//! `agent jobs|retry|run|work|due|tick` (§17, §19), printing the JSON the HTTP routes
//! answer; `run` prints each round as it is recorded, `due` one line per slot.

use chrono::Utc;
use protege::agent::{DueSlot, Foreground, JobReport, RoundReport};
use protege::db::JobFilter;
use protege::{LOCAL_TIME_FORMAT, one_line, rfc3339_z};
use serde_json::json;

use super::args::{AgentCommand, InboxCommand};
use super::run::print;
use super::{CliResult, Env, output};

pub(crate) async fn run(env: &Env, command: &AgentCommand) -> CliResult {
    let engine = env.engine().await?;
    match command {
        AgentCommand::Jobs {
            state,
            persona,
            limit,
        } => {
            let filter = JobFilter {
                state: state.clone(),
                persona: persona.clone(),
                limit: *limit,
            };
            print(&json!({ "jobs": engine.agent_jobs(&filter).await? }))
        }
        AgentCommand::Retry {
            job,
            persona,
            since,
            ..
        } => match job {
            Some(job) => print(&engine.retry_job(*job).await?),
            None => {
                let retried = engine.retry_failed_jobs(persona.as_deref(), *since).await?;
                print(&json!({ "retried": retried }))
            }
        },
        AgentCommand::Run {
            persona,
            message,
            no_tools,
            send,
            again,
        } => {
            let agent = engine.agent(format!("run-{}", std::process::id()))?;
            let foreground = Foreground {
                no_tools: *no_tools,
                send: *send,
                again: *again,
            };
            let mut shown = |round: &RoundReport| {
                let line = serde_json::to_string(round).unwrap_or_default();
                let _ = output::out(&format!("{line}\n"));
            };
            let report = agent
                .run_message(persona, message, foreground, &mut shown)
                .await?;
            let mut end = serde_json::to_value(&report).unwrap_or_default();
            if let Some(map) = end.as_object_mut() {
                map.remove("rounds");
            }
            print(&end)
        }
        AgentCommand::Work { once } => {
            let agent = engine.agent(format!("work-{}", std::process::id()))?;
            let reports = if *once {
                agent.work_once().await?.into_iter().collect()
            } else {
                agent.work().await?
            };
            print(&json!({ "jobs": summary(&reports) }))
        }
        AgentCommand::Due { now } => {
            let mut lines = String::new();
            for slot in engine.due_slots(now.unwrap_or_else(Utc::now)).await? {
                lines.push_str(&due_line(&slot));
            }
            output::out(&lines)
        }
        AgentCommand::Tick { now } => {
            let fired = engine.fire_due(now.unwrap_or_else(Utc::now)).await?;
            let agent = engine.agent(format!("tick-{}", std::process::id()))?;
            let reports = agent.work().await?;
            print(&json!({ "fired": fired, "jobs": summary(&reports) }))
        }
    }
}

/// `inbox fetch`: one pass over a persona's folders, printed as
/// `{"folders":[{"mailbox", "first_sync", "uid_validity_changed", "stored", "duplicates", "erased",
/// "refused":[{"uid","reason"}]}]}`.
pub(crate) async fn inbox(env: &Env, command: &InboxCommand) -> CliResult {
    let engine = env.engine().await?;
    match command {
        InboxCommand::Fetch { persona } => {
            let owner = format!("fetch-{}", std::process::id());
            let passes = engine
                .fetch_inbox(persona, &owner, |name| std::env::var(name).ok())
                .await?;
            print(&json!({ "folders": passes }))
        }
    }
}

/// The jobs a worker ran, as `agent work` and `agent tick` print them.
fn summary(reports: &[JobReport]) -> Vec<serde_json::Value> {
    reports
        .iter()
        .map(|r| {
            json!({
                "job": r.job, "persona": r.persona, "run_id": r.run_id,
                "state": r.state, "reason": r.reason, "rounds": r.rounds.len(),
                "outbox": r.outbox,
            })
        })
        .collect()
}

/// One line of `agent due`: the persona, the responsibility, the wall-clock time and its
/// zone, the instant in UTC, separated by tabs.
fn due_line(slot: &DueSlot) -> String {
    format!(
        "{}\t{}\t{} {}\t{}\n",
        one_line(&slot.persona),
        one_line(&slot.responsibility),
        slot.local.format(LOCAL_TIME_FORMAT),
        slot.timezone,
        rfc3339_z(&slot.at)
    )
}
