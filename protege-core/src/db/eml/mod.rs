//! Importing real email (`protege db import-eml`): RFC 5322 files and mbox files, threaded
//! by References and In-Reply-To.
//!
//! Each message is parsed with `mail-parser` (every transfer encoding and charset it
//! knows), stored in its own transaction, and skipped when its Message-ID is already
//! stored, so importing the same files twice changes nothing. Mbox files are streamed one
//! message at a time.

mod parse;
mod store;

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use mail_parser::mailbox::mbox::MessageIterator;
use sea_orm::{DatabaseConnection, DatabaseTransaction, TransactionTrait};

use crate::error::Result;
use crate::mail::rfc3339_z;
use parse::{DateSource, parse_eml};
use store::{Stored, Threader};

/// How to import: which addresses are the persona's own, and the time used when a
/// message carries no usable date.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmlOptions {
    /// The persona addresses (bare or header form): mail From one of them is outbound,
    /// any other mail inbound. Compared case-insensitively.
    pub own_addresses: Vec<String>,
    /// The `sent_at` of a message with neither a valid `Date` nor a dated `Received`
    /// header (usually the import time).
    pub now: DateTime<Utc>,
}

/// What an import did: counts, the sources that failed with their reason, and warnings.
///
/// Its `Display` is what the command line prints: one `warning:` line per warning, one
/// `failed:` line per failure, then `imported 3 messages, skipped 1 duplicate, 1 failed`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EmlSummary {
    /// Messages inserted.
    pub imported: usize,
    /// Messages skipped because their Message-ID was already stored.
    pub duplicates: usize,
    /// Sources that could not be imported: the file (or `file#N`, the N-th message of an
    /// mbox, from 1) and the reason.
    pub failed: Vec<(String, String)>,
    /// Messages imported with a fallback (no Message-ID, no usable Date), one sentence
    /// each, naming the source.
    pub warnings: Vec<String>,
}

impl fmt::Display for EmlSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for warning in &self.warnings {
            writeln!(f, "warning: {warning}")?;
        }
        for (source, reason) in &self.failed {
            writeln!(f, "failed: {source}: {reason}")?;
        }
        let plural =
            |n: usize, one: &'static str, many: &'static str| if n == 1 { one } else { many };
        write!(
            f,
            "imported {} {}, skipped {} {}, {} failed",
            self.imported,
            plural(self.imported, "message", "messages"),
            self.duplicates,
            plural(self.duplicates, "duplicate", "duplicates"),
            self.failed.len()
        )
    }
}

/// Imports the RFC 5322 messages of `paths` into `db`: each path is an `.eml` file, an
/// mbox file (recognised by a leading `From ` line, whatever its name), or a directory
/// searched recursively (in name order) for `*.eml`, `*.mbox` and mbox files.
///
/// A message joins the thread of the first message it references (References newest
/// first, then In-Reply-To) that is stored or met earlier in the import; otherwise it
/// starts a thread named by its subject without `Re:`/`Fwd:`/`Fw:` prefixes. A message
/// that links threads (a parent arriving after its replies, or a reply naming two
/// threads) merges them, so the import order does not matter. An unreadable file or a
/// message that is not an email is recorded in [`EmlSummary::failed`] and the import goes
/// on; a database error stops it (the messages already committed stay, and importing
/// again skips them).
pub async fn import_eml_paths(
    db: &DatabaseConnection,
    paths: &[PathBuf],
    options: &EmlOptions,
) -> Result<EmlSummary> {
    let mut summary = EmlSummary::default();
    let mut threader = Threader::new(db, &options.own_addresses).await?;
    let mut batch = Batch::default();
    for path in paths {
        let mut files = Vec::new();
        if let Err(reason) = collect(path, true, &mut files) {
            summary.failed.push((path.display().to_string(), reason));
            continue;
        }
        for file in files {
            import_file(db, &file, options, &mut threader, &mut batch, &mut summary).await?;
        }
    }
    batch.finish().await?;
    threader.link_earlier_replies(db).await?;
    Ok(summary)
}

/// Messages committed together: each message is its own savepoint inside the batch (so
/// a failing message leaves nothing behind), and the batch is committed every
/// [`BATCH`] messages, which spares a disk sync per message.
#[derive(Debug, Default)]
struct Batch {
    txn: Option<DatabaseTransaction>,
    messages: usize,
}

/// The messages per committed batch.
const BATCH: usize = 256;

impl Batch {
    /// The open batch transaction, begun when needed.
    async fn txn(&mut self, db: &DatabaseConnection) -> Result<&DatabaseTransaction> {
        let txn = match self.txn.take() {
            Some(txn) => txn,
            None => db.begin().await?,
        };
        Ok(self.txn.insert(txn))
    }

    /// Counts a stored message; commits the batch when it is full (before a new one
    /// begins, so one connection is enough).
    async fn count(&mut self) -> Result<()> {
        self.messages += 1;
        if self.messages >= BATCH {
            self.finish().await?;
        }
        Ok(())
    }

    /// Commits what the batch holds.
    async fn finish(&mut self) -> Result<()> {
        self.messages = 0;
        if let Some(txn) = self.txn.take() {
            txn.commit().await?;
        }
        Ok(())
    }
}

/// Adds `path` (a file, or the importable files under a directory) to `out`.
fn collect(path: &Path, named: bool, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read: {}", io_reason(&e)))?;
    if !meta.is_dir() {
        if named || is_importable(path) {
            out.push(path.to_owned());
        }
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| format!("cannot read the directory: {}", io_reason(&e)))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            !p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with('.'))
        })
        .collect();
    entries.sort();
    for entry in entries {
        // Symbolic links to directories are not followed (no cycles).
        let is_link_dir = std::fs::symlink_metadata(&entry)
            .map(|m| m.file_type().is_symlink())
            .unwrap_or(false)
            && entry.is_dir();
        if !is_link_dir {
            collect(&entry, false, out)?;
        }
    }
    Ok(())
}

/// A file found in a directory is imported when named `*.eml` / `*.mbox` or when it
/// starts like an mbox.
fn is_importable(path: &Path) -> bool {
    let by_name = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("eml") || e.eq_ignore_ascii_case("mbox"));
    by_name || starts_like_mbox(path)
}

fn starts_like_mbox(path: &Path) -> bool {
    let mut head = [0u8; 5];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && &head == b"From "
}

fn io_reason(err: &std::io::Error) -> String {
    let text = err.to_string();
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => text,
    }
}

async fn import_file(
    db: &DatabaseConnection,
    path: &Path,
    options: &EmlOptions,
    threader: &mut Threader,
    batch: &mut Batch,
    summary: &mut EmlSummary,
) -> Result<()> {
    let shown = path.display().to_string();
    let mut reader = match File::open(path) {
        Ok(file) => BufReader::with_capacity(64 * 1024, file),
        Err(e) => {
            summary
                .failed
                .push((shown, format!("cannot read: {}", io_reason(&e))));
            return Ok(());
        }
    };
    let is_mbox = match reader.fill_buf() {
        Ok(head) => head.starts_with(b"From "),
        Err(e) => {
            summary
                .failed
                .push((shown, format!("cannot read: {}", io_reason(&e))));
            return Ok(());
        }
    };
    if !is_mbox {
        let mut raw = Vec::new();
        if let Err(e) = reader.read_to_end(&mut raw) {
            summary
                .failed
                .push((shown, format!("cannot read: {}", io_reason(&e))));
            return Ok(());
        }
        return import_one(db, &raw, shown, options, threader, batch, summary).await;
    }
    for (n, item) in MessageIterator::new(reader).enumerate() {
        let source = format!("{shown}#{}", n + 1);
        match item {
            Ok(message) => {
                let mut raw = message.unwrap_contents();
                // The blank line that separates a message from the next `From ` line.
                if raw.ends_with(b"\n\n") {
                    raw.pop();
                } else if raw.ends_with(b"\r\n\r\n") {
                    raw.truncate(raw.len() - 2);
                }
                import_one(db, &raw, source, options, threader, batch, summary).await?;
            }
            Err(e) => {
                summary
                    .failed
                    .push((source, format!("cannot read: {}", io_reason(&e))));
                break;
            }
        }
    }
    Ok(())
}

async fn import_one(
    db: &DatabaseConnection,
    raw: &[u8],
    source: String,
    options: &EmlOptions,
    threader: &mut Threader,
    batch: &mut Batch,
    summary: &mut EmlSummary,
) -> Result<()> {
    let eml = match parse_eml(raw, options.now) {
        Ok(eml) => eml,
        Err(reason) => {
            summary.failed.push((source, reason));
            return Ok(());
        }
    };
    let mut warnings = Vec::new();
    if eml.synthetic_id {
        warnings.push(format!(
            "{source}: no `Message-ID` header, using `{}`",
            eml.message_id
        ));
    }
    match eml.date_source {
        DateSource::Date => {}
        DateSource::Received => warnings.push(format!(
            "{source}: missing or invalid `Date` header, using the first `Received` date {}",
            rfc3339_z(&eml.sent_at)
        )),
        DateSource::ImportTime => warnings.push(format!(
            "{source}: missing or invalid `Date` header and no dated `Received` header, using the import time {}",
            rfc3339_z(&eml.sent_at)
        )),
    }
    let stored = threader
        .store(batch.txn(db).await?, eml)
        .await
        .map_err(|e| {
            crate::error::Error::new(e.kind(), format!("{source}: {}", e.detail())).with_source(e)
        })?;
    match stored {
        Stored::Imported => {
            summary.imported += 1;
            summary.warnings.extend(warnings);
            batch.count().await?;
        }
        Stored::Duplicate => summary.duplicates += 1,
    }
    Ok(())
}
