//! `cache-report`: what a provider's prompt cache would serve over a thread's reply runs,
//! or (`--from-runs`) what it did serve over the recorded runs, next to the simulation.

use super::args::{CacheReportArgs, WireFormat};
use super::{CliResult, Env, Failure, output};

pub(crate) async fn run(env: &Env, args: &CacheReportArgs) -> CliResult {
    let engine = env.engine().await?;
    let Some(thread) = args.thread.filter(|_| !args.from_runs) else {
        let report = engine
            .cache_report_from_runs(&args.persona, args.since)
            .await
            .map_err(Failure::from)?;
        return output::out(&format!("{report}\n"));
    };
    let format = match args.format {
        Some(WireFormat::Openai) => protege::Format::Openai,
        Some(WireFormat::OpenaiResponses) => protege::Format::OpenaiResponses,
        Some(WireFormat::Anthropic) => protege::Format::Anthropic,
        None => protege::Format::Provider,
    };
    let report = engine
        .cache_report_with_model(&args.persona, thread, format, args.model.as_deref())
        .await
        .map_err(Failure::from)?;
    output::out(&format!("{report}\n"))
}
