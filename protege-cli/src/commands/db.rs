//! `db migrate`, `db import`, `db import-eml`, `db summary`, `db prune` and `forget`: the engine's
//! database doors.

use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};

use protege::EmlImport;

use super::args::{DirectionArg, ImportEmlArgs};
use super::{CliResult, Env, Failure, output, personas};

pub(crate) async fn migrate(env: &Env) -> CliResult {
    env.engine().await?.migrate().await?;
    output::out("database schema is up to date\n")
}

pub(crate) async fn import(env: &Env, file: &Path) -> CliResult {
    let summary = env.engine().await?.import_fixture(file).await?;
    output::out(&format!("{summary}\n"))
}

/// `db summary`: FILE's text as the summary of a thread through a message.
pub(crate) async fn summary(env: &Env, message: &str, file: &Path) -> CliResult {
    let shown = format!("`{}`", file.display());
    let bytes = protege::read_regular_file(file, &shown, protege::SUMMARY_MAX_BYTES as u64)?
        .ok_or_else(|| Failure::invalid(format!("file not found: {shown}")))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| Failure::invalid(format!("{shown} is not UTF-8 text")))?;
    let engine = env.engine().await?;
    let stored = engine.store_summary(message, &text).await?;
    output::out(&format!(
        "stored summary {} of thread {} through {}\n",
        stored.id, stored.thread_id, stored.through_message_id
    ))
}

/// `forget`: erase a correspondent (or, with `--dry-run`, count what would go); one
/// `table: count` line per table.
pub(crate) async fn forget(env: &Env, address: &str, dry_run: bool) -> CliResult {
    let removed = env.engine().await?.forget(address, dry_run).await?;
    output::out(&format!("{removed}\n"))
}

/// `db prune`: drop the threads whose newest message is older than `older_than` before
/// `now` (default: the current time), or with `--dry-run` count what would go; one
/// `table: count` line per table, like `forget`.
pub(crate) async fn prune(
    env: &Env,
    older_than: Duration,
    now: Option<DateTime<Utc>>,
    dry_run: bool,
) -> CliResult {
    let now = now.unwrap_or_else(Utc::now);
    let removed = env.engine().await?.prune(older_than, now, dry_run).await?;
    output::out(&format!("{removed}\n"))
}

pub(crate) async fn import_eml(env: &Env, args: &ImportEmlArgs) -> CliResult {
    let engine = env
        .engine_builder()
        .trusted_authserv_ids(args.trusted_authserv_ids.iter().cloned())
        .build()
        .await?;
    if let Some(name) = &args.persona {
        personas::require(&engine, name)?;
    }
    let options = EmlImport {
        persona: args.persona.clone(),
        direction: match args.direction {
            DirectionArg::Auto => None,
            DirectionArg::Inbound => Some(protege::Direction::Inbound),
            DirectionArg::Outbound => Some(protege::Direction::Outbound),
        },
        max_attachment_bytes: args.max_attachment_bytes,
    };
    let imported = engine.import_eml(&args.paths, &options).await?;
    for warning in &imported.persona_warnings {
        output::err(&format!("warning: {warning}\n"))?;
    }
    let summary = &imported.summary;
    let notes: String = summary.notes().map(|note| note + "\n").collect();
    if !notes.is_empty() {
        output::err(&notes)?;
    }
    if !summary.failed.is_empty() {
        return Err(Failure::invalid(summary.totals().to_string()));
    }
    output::out(&format!("{}\n", summary.totals()))?;
    let invalid = &imported.invalid_persona_files;
    if invalid.is_empty() {
        return Ok(());
    }
    Err(Failure::invalid(format!(
        "the persona folder has {} invalid {} ({}): run `protege check`, fix {} and check the direction of the mail imported",
        invalid.len(),
        if invalid.len() == 1 { "file" } else { "files" },
        invalid.join(", "),
        if invalid.len() == 1 { "it" } else { "them" },
    )))
}
