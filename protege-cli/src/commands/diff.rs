//! `diff --to DIR`: what a persona edit changes before it goes live.

use chrono::Utc;
use protege::{DiffOptions, DiffStatus, PersonaDiff};

use super::args::{DiffArgs, ListFormat};
use super::{CliResult, Env, Failure, output};

/// The most messages `--since` resolves per persona.
const SINCE_LIMIT: u64 = 1000;

pub(crate) async fn run(env: &Env, args: &DiffArgs) -> CliResult {
    if !args.to.is_dir() {
        return Err(Failure::usage(format!(
            "--to `{}` is not a persona folder (a directory of persona files)",
            args.to.display()
        )));
    }
    let live = env.engine().await?;
    // Connected first, so that both engines share the connection.
    live.db().await?;
    let candidate = live.with_personas(&args.to).await?;
    let now = args.now.unwrap_or_else(Utc::now);
    let since = match args.since {
        Some(age) => Some(
            chrono::Duration::from_std(age)
                .ok()
                .and_then(|age| now.checked_sub_signed(age))
                .ok_or_else(|| Failure::usage("--since reaches before the year 0000"))?,
        ),
        None => None,
    };
    let options = DiffOptions {
        persona: args.persona.clone(),
        messages: if since.is_some() {
            SINCE_LIMIT
        } else {
            args.messages
        },
        since,
        now: Some(now),
    };
    let diffs = live.diff(&candidate, &options).await?;
    let text = match args.format {
        ListFormat::Json => {
            // Plain data always serialises.
            let mut text = serde_json::to_string_pretty(&diffs).unwrap_or_default();
            text.push('\n');
            text
        }
        ListFormat::Table => render(&diffs),
    };
    output::out(&text)?;
    let changed: Vec<&str> = diffs
        .iter()
        .filter(|d| d.status != DiffStatus::Unchanged)
        .map(|d| d.persona.as_str())
        .collect();
    if changed.is_empty() {
        return Ok(());
    }
    // Something changes: exit 1, as `diff` does, naming what.
    Err(Failure::invalid(format!(
        "{} of {} {} change: {}",
        changed.len(),
        diffs.len(),
        if diffs.len() == 1 {
            "persona"
        } else {
            "personas"
        },
        changed.join(", ")
    )))
}

/// One line per persona, its diagnostics under it, then each persona's first changed
/// request as a unified diff.
fn render(diffs: &[PersonaDiff]) -> String {
    let mut out = String::new();
    for d in diffs {
        let status = match d.status {
            DiffStatus::Unchanged => "unchanged",
            DiffStatus::Changed => "changed",
            DiffStatus::Added => "added",
            DiffStatus::Removed => "removed",
            DiffStatus::Invalid => "invalid",
        };
        let delta = d.tokens_after as i64 - d.tokens_before as i64;
        out.push_str(&format!(
            "{}: {status}, {} of {} {} change, tokens {} -> {} ({delta:+})\n",
            d.persona,
            d.changed,
            d.requests,
            if d.requests == 1 {
                "request"
            } else {
                "requests"
            },
            d.tokens_before,
            d.tokens_after,
        ));
        for line in &d.diagnostics {
            out.push_str(&format!("  {line}\n"));
        }
    }
    for change in diffs.iter().filter_map(|d| d.first_change.as_ref()) {
        out.push('\n');
        out.push_str(&change.diff);
    }
    out
}
