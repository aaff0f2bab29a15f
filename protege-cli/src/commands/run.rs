//! `run start|record|show|list|abandon|reply`: a run's rounds from the command line (§13),
//! printing the JSON the HTTP routes answer.

use std::path::Path;

use protege::runs::{RoundInput, ToolResult};

use super::args::{ResolveArgs, RunCommand};
use super::{CliResult, Env, Failure, output, resolve};

/// The largest response or results file read, as the HTTP route's body limit.
const FILE_MAX_BYTES: u64 = 64 * 1024 * 1024;

pub(crate) async fn run(env: &Env, command: &RunCommand) -> CliResult {
    match command {
        RunCommand::Start(args) => start(env, args).await,
        RunCommand::Record {
            run_id,
            round,
            response,
            results,
            pending,
        } => {
            let results = if *pending {
                Results::Pending
            } else {
                Results::File(results.as_deref())
            };
            record(env, run_id, *round, response, results).await
        }
        RunCommand::Show { run_id } => show(env, run_id).await,
        RunCommand::List { message } => {
            let engine = env.engine().await?;
            let runs = engine.runs_of_message(message).await?;
            print(&serde_json::json!({ "runs": runs }))
        }
        RunCommand::Abandon { run_id } => {
            let engine = env.engine().await?;
            print(&engine.abandon_run(run_id).await?)
        }
        RunCommand::Reply { run_id } => {
            let engine = env.engine().await?;
            print(&engine.compose_reply(run_id).await?)
        }
    }
}

async fn start(env: &Env, args: &ResolveArgs) -> CliResult {
    let engine = env.engine().await?;
    let run = engine.start_run(&resolve::input(args)).await?;
    print(&run)
}

/// The results of `run record`: a file (none without one), or pending.
enum Results<'a> {
    File(Option<&'a Path>),
    Pending,
}

async fn record(
    env: &Env,
    run_id: &str,
    round: u32,
    response: &Path,
    results: Results<'_>,
) -> CliResult {
    let response: serde_json::Value = read_json(response, "response")?;
    let results: Vec<ToolResult> = match results {
        Results::File(Some(file)) => read_json(file, "results")?,
        Results::File(None) => Vec::new(),
        Results::Pending => {
            let engine = env.engine().await?;
            return print(&engine.record_response(run_id, round, response).await?);
        }
    };
    let engine = env.engine().await?;
    let step = engine
        .record_round(
            run_id,
            RoundInput {
                round,
                response,
                results,
            },
        )
        .await?;
    print(&step)
}

async fn show(env: &Env, run_id: &str) -> CliResult {
    let engine = env.engine().await?;
    print(&engine.run(run_id).await?)
}

/// The JSON of `file` as `T`; `what` names it in errors.
pub(crate) fn read_json<T: serde::de::DeserializeOwned>(file: &Path, what: &str) -> CliResult<T> {
    let shown = format!("`{}`", file.display());
    let bytes = protege::read_regular_file(file, &shown, FILE_MAX_BYTES)?
        .ok_or_else(|| Failure::invalid(format!("file not found: {shown}")))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| Failure::invalid(format!("{shown} is not a valid {what} file: {e}")))
}

pub(crate) fn print(value: &impl serde::Serialize) -> CliResult {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| Failure::invalid(format!("cannot serialise the answer: {e}")))?;
    output::out(&format!("{text}\n"))
}
