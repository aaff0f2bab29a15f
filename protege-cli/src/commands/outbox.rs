//! `outbox list|show|approve|reject|retry|hold|release|deliver` (§18), printing the JSON the
//! HTTP routes answer.

use protege::outbox::OutboxFilter;
use serde_json::json;

use super::args::OutboxCommand;
use super::run::print;
use super::{CliResult, Env, Failure, output};

/// The largest edited text read.
const TEXT_MAX_BYTES: u64 = 1024 * 1024;

pub(crate) async fn run(env: &Env, command: &OutboxCommand) -> CliResult {
    let engine = env.engine().await?;
    match command {
        OutboxCommand::List {
            state,
            persona,
            limit,
        } => {
            let filter = OutboxFilter {
                state: state.clone(),
                persona: persona.clone(),
                limit: *limit,
            };
            print(&json!({ "outbox": engine.outbox(&filter).await? }))
        }
        OutboxCommand::Show { id } => print(&engine.outbox_entry(*id, true).await?),
        OutboxCommand::Approve { id, by, text_file } => {
            let text = match text_file {
                Some(file) => {
                    let shown = format!("`{}`", file.display());
                    let bytes = protege::read_regular_file(file, &shown, TEXT_MAX_BYTES)?
                        .ok_or_else(|| Failure::invalid(format!("file not found: {shown}")))?;
                    Some(
                        String::from_utf8(bytes)
                            .map_err(|_| Failure::invalid(format!("{shown} is not UTF-8 text")))?,
                    )
                }
                None => None,
            };
            print(&engine.approve_reply(*id, by, text.as_deref()).await?)
        }
        OutboxCommand::Reject { id, by, reason } => {
            print(&engine.reject_reply(*id, by, reason).await?)
        }
        OutboxCommand::Retry { id, by } => print(&engine.retry_reply(*id, by).await?),
        OutboxCommand::Hold { persona } => {
            print(&json!({ "held": engine.hold_outbox(persona.as_deref()).await? }))
        }
        OutboxCommand::Release { persona } => {
            print(&json!({ "released": engine.release_outbox(persona.as_deref()).await? }))
        }
        OutboxCommand::Deliver { persona } => {
            let owner = format!("deliver-{}", std::process::id());
            let pass = engine
                .delivery(owner)
                .await?
                .deliver_once(persona.as_deref())
                .await?;
            output::out(&format!("{pass}\n"))
        }
    }
}
