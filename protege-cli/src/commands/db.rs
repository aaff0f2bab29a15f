//! `db migrate`, `db import`, `db import-eml`, `db summary`, `db prune`, `db export`,
//! `db threads`, `db messages` and `forget`: the engine's database doors.

use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};

use protege::EmlImport;

use super::args::{DirectionArg, ImportEmlArgs, ListFormat, ThreadByArg};
use super::{CliResult, Env, Failure, output, personas};

pub(crate) async fn migrate(env: &Env) -> CliResult {
    let applied = env.engine().await?.migrate().await?;
    if applied.is_empty() {
        return output::out("database schema is up to date\n");
    }
    let mut text = format!(
        "applied {} migration{}:\n",
        applied.len(),
        if applied.len() == 1 { "" } else { "s" }
    );
    for name in &applied {
        text.push_str(&format!("  {name}\n"));
    }
    text.push_str("database schema is up to date\n");
    output::out(&text)
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
pub(crate) async fn forget(env: &Env, address: &str, dry_run: bool, force: bool) -> CliResult {
    let engine = env.engine().await?;
    let removed = if force {
        engine.forget_any(address, dry_run).await?
    } else {
        engine.forget(address, dry_run).await?
    };
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
        threading: match args.thread_by {
            ThreadByArg::Participants => protege::db::Threading::Participants,
            ThreadByArg::References => protege::db::Threading::References,
        },
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
    if args.list && !summary.stored.is_empty() {
        let rows: Vec<[String; 4]> = summary
            .stored
            .iter()
            .map(|m| {
                [
                    m.thread_id.to_string(),
                    m.direction.as_str().to_owned(),
                    protege::one_line(&m.message_id).into_owned(),
                    protege::one_line(&m.source).into_owned(),
                ]
            })
            .collect();
        output::out(&table(
            ["thread", "direction", "message id", "file"],
            &[true, false, false, false],
            &rows,
        ))?;
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

/// `db threads`: the threads that hold messages, most recently active first.
pub(crate) async fn threads(env: &Env, limit: u64, format: ListFormat) -> CliResult {
    let threads = env.engine().await?.threads(limit).await?;
    if format == ListFormat::Json {
        return output::out(&json_lines(&threads));
    }
    let rows: Vec<[String; 4]> = threads
        .iter()
        .map(|t| {
            [
                t.thread.to_string(),
                t.messages.to_string(),
                protege::rfc3339_z(&t.last_sent_at),
                protege::one_line(&t.subject).into_owned(),
            ]
        })
        .collect();
    output::out(&table(
        ["thread", "messages", "last message (UTC)", "subject"],
        &[true, true, false, false],
        &rows,
    ))
}

/// `db messages --thread ID`: the messages of a thread, oldest first.
pub(crate) async fn messages(env: &Env, thread: i64, format: ListFormat) -> CliResult {
    let messages = env.engine().await?.thread_messages(thread).await?;
    if format == ListFormat::Json {
        return output::out(&json_lines(&messages));
    }
    let rows: Vec<[String; 7]> = messages
        .iter()
        .map(|m| {
            [
                m.id.to_string(),
                protege::rfc3339_z(&m.sent_at),
                m.direction.as_str().to_owned(),
                m.attachments.len().to_string(),
                m.tool_uses.to_string(),
                protege::one_line(&m.from).into_owned(),
                protege::one_line(&m.message_id).into_owned(),
            ]
        })
        .collect();
    output::out(&table(
        [
            "id",
            "sent at (UTC)",
            "direction",
            "attachments",
            "tool uses",
            "from",
            "message id",
        ],
        &[true, false, false, true, true, false, false],
        &rows,
    ))
}

/// `items` as a JSON array, indented, with a final newline.
fn json_lines<T: serde::Serialize>(items: &[T]) -> String {
    // Plain data structures always serialise.
    let mut text = serde_json::to_string_pretty(items).unwrap_or_default();
    text.push('\n');
    text
}

/// Aligned columns under `heads` (numbers, `right`, aligned right), two spaces apart, no
/// trailing space.
fn table<const N: usize>(heads: [&str; N], right: &[bool; N], rows: &[[String; N]]) -> String {
    let mut widths = heads.map(|h| h.chars().count());
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let heads = heads.map(str::to_owned);
    for row in std::iter::once(&heads).chain(rows) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let pad = " ".repeat(widths[i] - cell.chars().count());
            if right[i] {
                line.push_str(&pad);
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&pad);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// `db export FILE|-`: every stored thread as a fixture. A file is written next to itself
/// under a temporary name and renamed over FILE once complete, so an interrupted export
/// leaves FILE as it was.
pub(crate) async fn export(env: &Env, file: &Path) -> CliResult {
    let (fixture, summary) = env.engine().await?.export_fixture().await?;
    // A `Value` always serialises.
    let mut text = serde_json::to_string_pretty(&fixture).unwrap_or_default();
    text.push('\n');
    if file == Path::new("-") {
        output::out(&text)?;
    } else {
        write_whole(file, text.as_bytes())
            .map_err(|e| Failure::invalid(format!("cannot write `{}`: {e}", file.display())))?;
    }
    output::err(&format!(
        "{summary}; running summaries, runs and settings are not part of a fixture\n"
    ))
}

/// Writes `bytes` to a new file beside `path` (`.NAME.PID.tmp`), syncs it and renames it
/// over `path`; on failure the new file is removed and `path` is left as it was. A link is
/// followed (the file it names is replaced, not the link), and a device or a pipe
/// (`/dev/stdout`, a FIFO) is written in place: there is no file to rename over.
fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let path = match std::fs::canonicalize(path) {
        Ok(target) => {
            if std::fs::metadata(&target).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
                let mut stream = std::fs::OpenOptions::new().write(true).open(&target)?;
                stream.write_all(bytes)?;
                return stream.flush();
            }
            target
        }
        // Not there yet, or a link to a file not there yet: created by the rename.
        Err(_) => match std::fs::read_link(path) {
            Ok(target) => path.parent().unwrap_or(Path::new(".")).join(target),
            Err(_) => path.to_owned(),
        },
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, &path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}
