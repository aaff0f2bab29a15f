//! Importing real email (`protege db import-eml`): RFC 5322 files and mbox files, threaded
//! by References and In-Reply-To among the thread's participants (see `SECURITY.md`).
//!
//! An import reads in two passes. The first reads only the header lines of every message
//! (for an mbox, where each message lies) and sorts them by date, file order breaking
//! ties; the second reads, parses (with `mail-parser`, every transfer encoding and
//! charset it knows) and stores each message in that order, so a batch imported out of
//! order still ends in one thread. Memory stays flat in the size of the files: no body
//! is held beyond the message being stored.
//!
//! Messages are stored in batches of up to [`BATCH`] messages, one transaction each: the
//! batch's lookups are a few queries and its rows a few multi-row inserts (see
//! `threading.rs` and `store`).
//! Each message is still its own unit: when a batch cannot be stored whole (the database
//! rejects a message, or another writer stores one of them at the same moment), it is
//! rolled back and its messages are stored one by one, each in its own savepoint. A
//! message is skipped when its Message-ID is already stored, so importing the same files
//! twice changes nothing; a message the database rejects is reported and the others are
//! imported. Batches of concurrent imports take the database's import lock one after
//! the other (as fixture imports do), so they never wait on each other's rows.
//!
//! One file over 600 lines: the import's driver (the two passes, the pipelined batches and
//! the per-message fallback) is one flow whose steps share its state; threading is in the
//! module beside it, parsing and mbox streaming in `protege-mail`, the writes in `store`.

mod threading;

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use protege_core::{Error, ErrorKind, Result};
use protege_mail::eml::direction::Directions;
use protege_mail::eml::parse::{DateSource, ParsedEml, date_parser, header_date, parse_eml};
use protege_mail::eml::{MessageParser, mbox};
use protege_mail::{Direction, rfc3339_z};
use sea_orm::{DatabaseConnection, DatabaseTransaction};

use threading::{Stored, Threader};

pub use protege_mail::eml::DEFAULT_MAX_ATTACHMENT_BYTES;

/// The most header bytes read from an `.eml` file in the first pass.
const MAX_HEADER_BYTES: u64 = 1 << 20;

/// How to import: which addresses are the persona's own, the time used when a message
/// carries no usable date, the attachment size cap and where the direction comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmlOptions {
    /// The persona addresses (bare or header form), compared case-insensitively: mail From
    /// one of them may be outbound (see [`direction`](Self::direction)), any other mail is
    /// inbound.
    pub own_addresses: Vec<String>,
    /// The authserv-ids (RFC 8601) whose `Authentication-Results` headers are trusted: a
    /// message that arrived from outside (it has a `Received` header) and claims a persona
    /// address is outbound only when the topmost such header of a trusted authserv-id
    /// reports `dmarc=pass` for the From address's domain. Compared case-insensitively.
    pub trusted_authserv_ids: Vec<String>,
    /// The `sent_at` of a message with neither a valid `Date` nor a dated `Received`
    /// header (usually the import time).
    pub now: DateTime<Utc>,
    /// Attachment data larger than this many bytes is not stored: the attachment keeps
    /// its metadata (`data` NULL) and a warning names it.
    pub max_attachment_bytes: u64,
    /// `None` (`import-eml`, an operator's own archives): a message is outbound when it has
    /// one From header with one address, a persona's, and shows it did not arrive from
    /// outside (no `Received` header, or a trusted `Authentication-Results` with
    /// `dmarc=pass` for its domain); any other message claiming a persona address is
    /// stored inbound with a warning. `Some(direction)`: every message has it (mail
    /// received over HTTP is inbound); a forced outbound message must be From a persona
    /// address alone.
    pub direction: Option<Direction>,
    /// Who may join a thread: [`Threading::Participants`] (the default, and the only
    /// safe choice for mail strangers send) or [`Threading::References`] (an archive the
    /// operator trusts).
    pub threading: Threading,
    /// Which inbound messages get a job of the agent (§17), stored in the message's
    /// transaction: `None` (imports) gives none. Only [`ingest_eml`] reads it.
    pub jobs: Option<crate::jobs::JobRule>,
}

/// How an import decides which stored thread a message joins (see `SECURITY.md`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Threading {
    /// The thread of a message it references, only when its sender is a participant of
    /// that thread: a stranger who copies a customer's Message-IDs gets a thread of his own.
    #[default]
    Participants,
    /// The thread of a message it references, whoever sent it: for an archive whose
    /// headers the operator trusts (a mailing list's archive, an export of one's own
    /// mailbox), where every message is inbound and replies come from many people. Inbound
    /// mail claiming a persona address still joins nothing.
    References,
}

impl EmlOptions {
    /// Options with the persona addresses and the import time; attachments up to
    /// [`DEFAULT_MAX_ATTACHMENT_BYTES`], direction from the From header.
    pub fn new(own_addresses: Vec<String>, now: DateTime<Utc>) -> Self {
        Self {
            own_addresses,
            trusted_authserv_ids: Vec::new(),
            now,
            max_attachment_bytes: DEFAULT_MAX_ATTACHMENT_BYTES,
            direction: None,
            threading: Threading::Participants,
            jobs: None,
        }
    }
}

/// A message or file that could not be imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmlFailure {
    /// The file, or `file#N` for the N-th message of an mbox (from 1).
    pub source: String,
    /// Why, one lowercase sentence.
    pub reason: String,
    /// Whether the database rejected it (the input may be fine: a re-run imports it once
    /// the database accepts it).
    pub database: bool,
}

impl fmt::Display for EmlFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.database {
            write!(
                f,
                "database error while importing {}: {}",
                self.source, self.reason
            )
        } else {
            write!(f, "{}: {}", self.source, self.reason)
        }
    }
}

/// What an import did: counts, the sources that failed with their reason, and warnings.
///
/// Its `Display` is what the command line prints: one `warning:` line per warning, one
/// `failed:` line per failure (both in file order), then
/// `imported 3 messages, skipped 1 duplicate, 1 failed` (with `N erased, ` before the
/// failures when mail erased by `forget` was skipped).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EmlSummary {
    /// Messages inserted.
    pub imported: usize,
    /// Messages skipped because their Message-ID was already stored.
    pub duplicates: usize,
    /// Messages skipped because their Message-ID was erased (`protege forget`).
    pub erased: usize,
    /// Sources that could not be imported.
    pub failed: Vec<EmlFailure>,
    /// Messages imported with a fallback (no Message-ID, no usable Date) or without the
    /// data of an oversized attachment, one sentence each, naming the source.
    pub warnings: Vec<String>,
    /// The messages inserted, in file order: where each came from and the thread it
    /// joined.
    pub stored: Vec<StoredEml>,
}

/// A message an import inserted, and the thread it joined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEml {
    /// The file it came from (with `#N` for the Nth message of an mbox).
    pub source: String,
    /// Its Message-ID (synthetic when it had none).
    pub message_id: String,
    /// The thread it is in.
    pub thread_id: i64,
    /// Inbound or outbound.
    pub direction: Direction,
}

impl EmlSummary {
    /// The last line of the summary: `imported 3 messages, skipped 1 duplicate, 1 failed`.
    pub fn totals(&self) -> impl fmt::Display + '_ {
        Totals(self)
    }

    /// The lines before the totals: one `warning: …` per warning, then one `failed: …` per
    /// failure, in file order.
    pub fn notes(&self) -> impl Iterator<Item = String> + '_ {
        let warnings = self.warnings.iter().map(|w| format!("warning: {w}"));
        warnings.chain(self.failed.iter().map(|f| format!("failed: {f}")))
    }
}

/// [`EmlSummary::totals`].
struct Totals<'a>(&'a EmlSummary);

impl fmt::Display for Totals<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0;
        let plural =
            |n: usize, one: &'static str, many: &'static str| if n == 1 { one } else { many };
        write!(
            f,
            "imported {} {}, skipped {} {}, ",
            s.imported,
            plural(s.imported, "message", "messages"),
            s.duplicates,
            plural(s.duplicates, "duplicate", "duplicates"),
        )?;
        // Said only when it happened: mail erased by `forget` and imported again.
        if s.erased > 0 {
            write!(f, "{} erased, ", s.erased)?;
        }
        write!(f, "{} failed", s.failed.len())
    }
}

impl fmt::Display for EmlSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for note in self.notes() {
            writeln!(f, "{note}")?;
        }
        write!(f, "{}", self.totals())
    }
}

/// Imports the RFC 5322 messages of `paths` into `db`: each path is an `.eml` file, an
/// mbox file (recognised by a first line that is an mbox separator, whatever its name),
/// or a directory searched recursively (in name order) for `*.eml`, `*.mbox` and mbox
/// files.
///
/// Messages are stored in order of their date (ties: file order). A message joins the
/// thread of a stored message it references (References newest first, then
/// In-Reply-To) or that replies to it, when its sender is one of that thread's
/// participants (the From addresses of its messages, the To and Cc of its outbound
/// messages, and the persona addresses); otherwise it starts a thread named by its
/// subject without `Re:`/`Fwd:`/`Fw:` prefixes. An inbound message From a persona
/// address joins nothing. A message whose Message-ID is stored is skipped when it is the
/// same message (direction, sender, subject and bodies), else recorded in
/// [`EmlSummary::failed`] as a conflict.
///
/// Only regular files are read: a FIFO, socket or device, a dangling symbolic link, an
/// unreadable file, a message that is not an email and a message the database rejects
/// are each recorded in [`EmlSummary::failed`] and the import goes on.
pub async fn import_eml_paths(
    db: &DatabaseConnection,
    paths: &[PathBuf],
    options: &EmlOptions,
) -> Result<EmlSummary> {
    let limits = Limits::of(db, options).await?;
    let mut notes = Notes::default();
    let mut files = Vec::new();
    for path in paths {
        collect(path, true, &mut files, &mut notes);
    }

    // First pass: where every message lies, and its date.
    let mut items: Vec<Item> = Vec::new();
    let parser = date_parser();
    for (file, (path, seq)) in files.iter().enumerate() {
        survey(
            &parser,
            path,
            *seq,
            file,
            options.now,
            &mut items,
            &mut notes,
        );
    }
    items.sort_by_key(|item| (item.sent_at, item.seq));

    // Second pass: parse and store in date order, a batch at a time; the next batch is
    // read and parsed while the database stores the current one.
    let mut threader = Threader::new(&options.own_addresses, options.threading);
    let mut batches = Batches {
        files: &files,
        items: items.iter(),
        reader: ItemReader::default(),
        directions: directions(options),
        limits,
    };
    let mut unreadable = Notes::default();
    let mut batch = batches.next(options, &mut unreadable).await;
    while !batch.is_empty() {
        let ((), next) = tokio::join!(
            store_batch(db, &mut threader, batch, &mut notes),
            batches.next(options, &mut unreadable),
        );
        batch = next;
    }
    notes.failed.append(&mut unreadable.failed);
    Ok(notes.into_summary())
}

/// The messages of the second pass, read and parsed a batch at a time.
#[derive(Debug)]
struct Batches<'a> {
    files: &'a [(PathBuf, Seq)],
    /// The messages not read yet, in the order they are stored.
    items: std::slice::Iter<'a, Item>,
    reader: ItemReader,
    /// What gives each message its direction.
    directions: Directions,
    limits: Limits,
}

/// The sizes an import keeps to: the attachment cap of its options, and the server's
/// packet limit on MySQL/MariaDB (see `packet.rs`).
#[derive(Debug, Clone, Copy)]
struct Limits {
    /// The cap of the options (`--max-attachment-bytes`).
    attachment_cap: u64,
    /// The server's `max_allowed_packet`, when it has one.
    packet: Option<u64>,
}

impl Limits {
    /// The limits of an import into `db` with `options` (reads the server's limit once).
    async fn of(db: &DatabaseConnection, options: &EmlOptions) -> Result<Self> {
        Ok(Self {
            attachment_cap: options.max_attachment_bytes,
            packet: crate::packet::max_row_bytes(db).await?,
        })
    }

    /// The most bytes of attachment data stored: the cap, lowered to what fits in a
    /// statement.
    fn attachment_bytes(&self) -> u64 {
        match self.packet {
            Some(packet) => self
                .attachment_cap
                .min(crate::packet::attachment_bytes(packet)),
            None => self.attachment_cap,
        }
    }

    /// Why `email` can never be stored: its own text is too large for a statement.
    fn refusal(&self, email: &protege_mail::Email) -> Option<String> {
        let packet = self.packet?;
        if crate::packet::message_fits(email, packet) {
            return None;
        }
        Some(format!(
            "the message's text ({} bytes) is too large for the database's `max_allowed_packet` of {packet} bytes: it cannot be stored",
            crate::packet::message_bytes(email)
        ))
    }

    /// The warning for an attachment whose data is not stored.
    fn oversized(&self, name: &str, size: usize) -> String {
        match self.packet {
            Some(packet) if size as u64 <= self.attachment_cap => format!(
                "attachment `{name}` ({size} bytes) is too large for the database's `max_allowed_packet` of {packet} bytes: its data is not stored"
            ),
            _ => format!(
                "attachment `{name}` ({size} bytes) is over the {} byte limit: its data is not stored",
                self.attachment_cap
            ),
        }
    }
}

impl Batches<'_> {
    /// The next batch: [`BATCH`] messages, or fewer holding [`BATCH_BYTES`] of raw mail;
    /// empty at the end. A message that cannot be read or parsed is recorded in `notes`.
    ///
    /// It yields after each message, so that the other futures of its task (the storing
    /// of the previous batch) go on while it parses.
    async fn next(&mut self, options: &EmlOptions, notes: &mut Notes) -> Vec<Pending> {
        let mut batch = Vec::new();
        let mut bytes = 0;
        while batch.len() < BATCH && bytes < BATCH_BYTES {
            let Some(item) = self.items.next() else {
                break;
            };
            let (path, _) = &self.files[item.file];
            let source = match item.mbox {
                Some(at) => format!("{}#{}", path.display(), at.index),
                None => path.display().to_string(),
            };
            let raw = match self.reader.read(path, item) {
                Ok(raw) => raw,
                Err(e) => {
                    notes.fail(item.seq, source, format!("cannot read: {}", io_reason(&e)));
                    continue;
                }
            };
            let with = Prepare {
                options,
                limits: &self.limits,
                directions: &self.directions,
            };
            if let Some(pending) = with.prepare(&raw, item.seq, source, notes) {
                bytes += raw.len();
                batch.push(pending);
            }
            drop(raw);
            tokio::task::yield_now().await;
        }
        batch
    }
}

/// A file-order position: the position of the file (or failing path) among those found,
/// and the index of the message within an mbox (0 for a whole file).
type Seq = (usize, usize);

/// Failures and warnings with the file-order position they belong to, and the counts.
#[derive(Debug, Default)]
struct Notes {
    summary: EmlSummary,
    failed: Vec<(Seq, EmlFailure)>,
    warnings: Vec<(Seq, String)>,
    stored: Vec<(Seq, StoredEml)>,
    /// The next file-order position.
    next_seq: usize,
}

impl Notes {
    fn seq(&mut self) -> Seq {
        self.next_seq += 1;
        (self.next_seq, 0)
    }

    fn fail(&mut self, seq: Seq, source: String, reason: String) {
        self.failed.push((
            seq,
            EmlFailure {
                source,
                reason,
                database: false,
            },
        ));
    }

    fn fail_database(&mut self, seq: Seq, source: String, err: &Error) {
        self.failed.push((
            seq,
            EmlFailure {
                source,
                reason: database_reason(err),
                database: true,
            },
        ));
    }

    /// Counts `pending` as imported into `thread`, with its warnings.
    fn imported(&mut self, pending: Pending, thread: i64, direction: Direction) {
        self.summary.imported += 1;
        let seq = pending.seq;
        self.warnings
            .extend(pending.warnings.into_iter().map(|w| (seq, w)));
        self.stored.push((
            seq,
            StoredEml {
                source: pending.source,
                message_id: pending.eml.email.message_id,
                thread_id: thread,
                direction,
            },
        ));
    }

    fn into_summary(mut self) -> EmlSummary {
        self.failed.sort_by_key(|(seq, _)| *seq);
        self.warnings.sort_by_key(|(seq, _)| *seq);
        self.stored.sort_by_key(|(seq, _)| *seq);
        self.summary.stored = self.stored.into_iter().map(|(_, s)| s).collect();
        self.summary.failed = self.failed.into_iter().map(|(_, f)| f).collect();
        self.summary.warnings = self.warnings.into_iter().map(|(_, w)| w).collect();
        self.summary
    }
}

/// The reason a database gave, without the driver's wrapping: the server's own message
/// when there is one.
fn database_reason(err: &Error) -> String {
    let text = match err.db_err() {
        Some(e) => {
            protege_core::db::server_message(e).unwrap_or_else(|| protege_core::db::db_reason(e))
        }
        None => err.detail().to_owned(),
    };
    let text = text.trim().trim_end_matches('.');
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => "unknown error".to_owned(),
    }
}

/// A message found by the first pass.
#[derive(Debug, Clone, Copy)]
struct Item {
    sent_at: DateTime<Utc>,
    /// File order.
    seq: Seq,
    /// The index of its file.
    file: usize,
    /// Where it lies in an mbox; `None` for a whole file.
    mbox: Option<MboxAt>,
}

#[derive(Debug, Clone, Copy)]
struct MboxAt {
    /// From 1.
    index: usize,
    offset: u64,
    len: u64,
}

/// The most messages stored in one batch (one transaction).
const BATCH: usize = 1024;

/// A batch is stored once its messages hold this many bytes of raw mail, even when it has
/// fewer than [`BATCH`] messages: memory stays flat whatever the size of the messages.
const BATCH_BYTES: usize = 8 << 20;

/// A parsed message waiting in the batch, with what the summary says of it.
#[derive(Debug)]
struct Pending {
    seq: Seq,
    source: String,
    /// The warnings shown when it is imported.
    warnings: Vec<String>,
    eml: ParsedEml,
}

/// Stores `batch` in one transaction; when that fails, rolls it back and stores its
/// messages one by one.
async fn store_batch(
    db: &DatabaseConnection,
    threader: &mut Threader,
    batch: Vec<Pending>,
    notes: &mut Notes,
) {
    if batch.is_empty() {
        return;
    }
    let emls: Vec<&ParsedEml> = batch.iter().map(|p| &p.eml).collect();
    let whole = async {
        let txn = protege_core::db::lock::begin_import(db).await?;
        match threader.store_batch(&txn, &emls).await {
            Ok(Some(stored)) => {
                txn.commit().await?;
                Ok(Some(stored))
            }
            other => {
                txn.rollback().await.ok();
                other
            }
        }
    };
    match whole.await {
        Ok(Some(stored)) => {
            for (pending, stored) in batch.into_iter().zip(stored) {
                match stored {
                    Stored::Imported { thread, direction } => {
                        notes.imported(pending, thread, direction);
                    }
                    Stored::Duplicate => notes.summary.duplicates += 1,
                    Stored::Erased => notes.summary.erased += 1,
                    Stored::Conflict(reason) => notes.fail(pending.seq, pending.source, reason),
                }
            }
        }
        _ => {
            threader.forget();
            store_one_by_one(db, threader, batch, notes).await;
        }
    }
}

/// Stores the messages of `batch` one by one, each in its own savepoint of one
/// transaction: a message the database rejects is reported and the others are stored.
///
/// When a message ends the transaction itself (a lost connection, a deadlock), it is
/// reported and the messages stored before it in that transaction are stored again in a
/// new one: one message's failure never fails its neighbours.
async fn store_one_by_one(
    db: &DatabaseConnection,
    threader: &mut Threader,
    batch: Vec<Pending>,
    notes: &mut Notes,
) {
    let mut queue: std::collections::VecDeque<Pending> = batch.into();
    let mut txn = Txn::default();
    while let Some(pending) = queue.pop_front() {
        let open = match txn.get(db).await {
            Ok(open) => open,
            Err(err) => {
                notes.fail_database(pending.seq, pending.source, &err);
                continue;
            }
        };
        match threader.store(open, &pending.eml, None).await {
            Ok(Stored::Imported { thread, direction }) => {
                txn.stored.push((pending, thread, direction));
            }
            Ok(Stored::Duplicate) => notes.summary.duplicates += 1,
            Ok(Stored::Erased) => notes.summary.erased += 1,
            Ok(Stored::Conflict(reason)) => notes.fail(pending.seq, pending.source, reason),
            // A message no database can hold (e.g. its date): a fault of the input.
            Err(err) if err.kind() == ErrorKind::InvalidInput => {
                notes.fail(pending.seq, pending.source, err.detail().to_owned());
            }
            Err(err) => {
                if transaction_lost(&err) {
                    // Its rows are gone with the transaction: the cache may name them.
                    threader.forget();
                    for innocent in txn.lose().await.into_iter().rev() {
                        queue.push_front(innocent);
                    }
                }
                notes.fail_database(pending.seq, pending.source, &err);
            }
        }
    }
    txn.finish(notes).await;
}

/// The transaction of messages stored one by one, and the messages it holds.
#[derive(Debug, Default)]
struct Txn {
    txn: Option<DatabaseTransaction>,
    /// The messages stored in it with their thread and direction, counted as imported
    /// once it commits.
    stored: Vec<(Pending, i64, Direction)>,
}

impl Txn {
    /// The open transaction, begun (under the import lock) when needed.
    async fn get(&mut self, db: &DatabaseConnection) -> Result<&DatabaseTransaction> {
        let txn = match self.txn.take() {
            Some(txn) => txn,
            None => protege_core::db::lock::begin_import(db).await?,
        };
        Ok(self.txn.insert(txn))
    }

    /// Commits what the transaction holds and counts its messages as imported; when the
    /// commit fails, each of them is reported as failed.
    async fn finish(&mut self, notes: &mut Notes) {
        let stored = std::mem::take(&mut self.stored);
        let Some(txn) = self.txn.take() else {
            return;
        };
        match txn.commit().await {
            Ok(()) => {
                for (pending, thread, direction) in stored {
                    notes.imported(pending, thread, direction);
                }
            }
            Err(e) => {
                let err = Error::from(e);
                for (pending, _, _) in stored {
                    notes.fail_database(pending.seq, pending.source, &err);
                }
            }
        }
    }

    /// Drops the transaction after a failure of the transaction itself; returns the
    /// messages it held, which are stored nowhere now.
    async fn lose(&mut self) -> Vec<Pending> {
        if let Some(txn) = self.txn.take() {
            let _ = txn.rollback().await;
        }
        std::mem::take(&mut self.stored)
            .into_iter()
            .map(|(pending, _, _)| pending)
            .collect()
    }
}

/// Adds `path` (a regular file, or the importable files under a directory) to `out`
/// with its file-order position; anything else is recorded in `notes`.
fn collect(path: &Path, named: bool, out: &mut Vec<(PathBuf, Seq)>, notes: &mut Notes) {
    let shown = path.display().to_string();
    // The metadata of what a symbolic link points to: a dangling link is an error here.
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) => {
            let seq = notes.seq();
            notes.fail(seq, shown, format!("cannot read: {}", io_reason(&e)));
            return;
        }
    };
    if meta.is_file() {
        if named || is_importable(path) {
            out.push((path.to_owned(), notes.seq()));
        }
        return;
    }
    if !meta.is_dir() {
        let seq = notes.seq();
        notes.fail(
            seq,
            shown,
            "not a regular file (a FIFO, socket or device is never read)".to_owned(),
        );
        return;
    }
    let reader = match std::fs::read_dir(path) {
        Ok(reader) => reader,
        Err(e) => {
            let seq = notes.seq();
            notes.fail(
                seq,
                shown,
                format!("cannot read the directory: {}", io_reason(&e)),
            );
            return;
        }
    };
    let mut entries = Vec::new();
    for entry in reader {
        match entry {
            Ok(entry) => entries.push(entry.path()),
            Err(e) => {
                let seq = notes.seq();
                notes.fail(
                    seq,
                    shown.clone(),
                    format!("cannot read a directory entry: {}", io_reason(&e)),
                );
            }
        }
    }
    entries.retain(|p| {
        !p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'))
    });
    entries.sort();
    for entry in entries {
        // Symbolic links to directories are not followed (no cycles).
        let is_link_dir = std::fs::symlink_metadata(&entry)
            .map(|m| m.file_type().is_symlink())
            .unwrap_or(false)
            && entry.is_dir();
        if !is_link_dir {
            collect(&entry, false, out, notes);
        }
    }
}

/// A regular file found in a directory is imported when named `*.eml` / `*.mbox` or
/// when it starts like an mbox.
fn is_importable(path: &Path) -> bool {
    let by_name = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("eml") || e.eq_ignore_ascii_case("mbox"));
    by_name
        || open_regular(path)
            .map(BufReader::new)
            .and_then(|mut r| first_line_is_separator(&mut r))
            .unwrap_or(false)
}

/// Opens `path` for reading when it is a regular file (checked before opening, so a FIFO
/// is never opened, and again on the open file).
fn open_regular(path: &Path) -> std::io::Result<File> {
    let not_regular = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a FIFO, socket or device is never read)",
        )
    };
    if !std::fs::metadata(path)?.is_file() {
        return Err(not_regular());
    }
    let file = File::open(path)?;
    if !file.metadata()?.is_file() {
        return Err(not_regular());
    }
    Ok(file)
}

/// Whether the first line of `reader` is an mbox separator (the reader is not advanced).
fn first_line_is_separator<R: BufRead>(reader: &mut R) -> std::io::Result<bool> {
    let head = reader.fill_buf()?;
    let line = match head.iter().position(|&b| b == b'\n') {
        Some(end) => &head[..=end],
        None => head,
    };
    Ok(mbox::is_separator(line))
}

/// The first pass over one file: adds its messages to `items`.
fn survey(
    parser: &MessageParser,
    path: &Path,
    seq: Seq,
    file: usize,
    now: DateTime<Utc>,
    items: &mut Vec<Item>,
    notes: &mut Notes,
) {
    let shown = path.display().to_string();
    let outcome = open_regular(path).and_then(|f| {
        let mut reader = BufReader::with_capacity(64 * 1024, f);
        if !first_line_is_separator(&mut reader)? {
            let mut header = Vec::new();
            let mut limited = reader.take(MAX_HEADER_BYTES);
            loop {
                let start = header.len();
                if limited.read_until(b'\n', &mut header)? == 0
                    || matches!(&header[start..], b"\n" | b"\r\n")
                {
                    break;
                }
            }
            items.push(Item {
                sent_at: header_date(parser, &header, now),
                seq,
                file,
                mbox: None,
            });
            return Ok(());
        }
        let mut index = 0;
        mbox::scan(reader, |entry| {
            index += 1;
            items.push(Item {
                sent_at: header_date(parser, &entry.header, now),
                seq: (seq.0, index),
                file,
                mbox: Some(MboxAt {
                    index,
                    offset: entry.offset,
                    len: entry.len,
                }),
            });
        })
    });
    if let Err(e) = outcome {
        notes.fail(seq, shown, format!("cannot read: {}", io_reason(&e)));
    }
}

/// Reads the raw bytes of the messages found by the first pass, keeping the last mbox
/// open so that its messages are read without opening it again for each.
#[derive(Debug, Default)]
struct ItemReader {
    /// The index of the open file, and the file.
    open: Option<(usize, File)>,
}

impl ItemReader {
    /// The raw bytes of `item`, a message of `path`.
    fn read(&mut self, path: &Path, item: &Item) -> std::io::Result<Vec<u8>> {
        let Some(at) = item.mbox else {
            self.open = None;
            let mut raw = Vec::new();
            open_regular(path)?.read_to_end(&mut raw)?;
            return Ok(raw);
        };
        let file = match &mut self.open {
            Some((file, open)) if *file == item.file => open,
            open => &mut open.insert((item.file, open_regular(path)?)).1,
        };
        let mut raw = Vec::with_capacity(usize::try_from(at.len).unwrap_or(0).min(1 << 24));
        let read = file
            .seek(SeekFrom::Start(at.offset))
            .and_then(|_| file.take(at.len).read_to_end(&mut raw));
        if let Err(e) = read {
            self.open = None;
            return Err(e);
        }
        Ok(mbox::unescape(raw))
    }
}

fn io_reason(err: &std::io::Error) -> String {
    let text = err.to_string();
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => text,
    }
}

/// What parsing a message needs: the import's options and limits, and what gives each
/// message its direction.
#[derive(Debug, Clone, Copy)]
struct Prepare<'a> {
    options: &'a EmlOptions,
    limits: &'a Limits,
    directions: &'a Directions,
}

impl Prepare<'_> {
    /// Parses `raw` and gives it its direction; returns it with its warnings (the fallbacks
    /// used, a persona address stored inbound), or why it cannot be imported (not an
    /// email, a forged or ambiguous sender, too large for the database).
    fn parse(&self, raw: &[u8]) -> std::result::Result<(ParsedEml, Vec<String>), String> {
        let mut eml = parse_eml(raw, self.options.now, self.limits.attachment_bytes())?;
        let (direction, warning) = self.directions.decide(&eml.origin, &eml.email.from)?;
        eml.email.direction = direction;
        if let Some(reason) = self.limits.refusal(&eml.email) {
            return Err(reason);
        }
        let mut warnings: Vec<String> = warning.into_iter().collect();
        warnings.extend(fallbacks(&eml, self.limits));
        Ok((eml, warnings))
    }

    /// Parses one message into the batch entry that stores it, with its warnings; a
    /// message that cannot be imported is recorded in `notes`.
    fn prepare(&self, raw: &[u8], seq: Seq, source: String, notes: &mut Notes) -> Option<Pending> {
        match self.parse(raw) {
            Ok((eml, warnings)) => Some(Pending {
                warnings: warnings
                    .into_iter()
                    .map(|w| format!("{source}: {w}"))
                    .collect(),
                seq,
                source,
                eml,
            }),
            Err(reason) => {
                notes.fail(seq, source, reason);
                None
            }
        }
    }
}

/// How the direction of the messages is decided under `options`.
fn directions(options: &EmlOptions) -> Directions {
    Directions::new(
        options
            .own_addresses
            .iter()
            .map(|a| threading::key(a))
            .collect(),
        &options.trusted_authserv_ids,
        options.direction,
    )
}

/// The fallbacks parsing used for `eml` (no Message-ID, no usable Date, an unsplit
/// multipart body, attachment data over the cap or too large for the database), one
/// sentence each.
fn fallbacks(eml: &ParsedEml, limits: &Limits) -> Vec<String> {
    let mut warnings = Vec::new();
    if eml.synthetic_id {
        warnings.push(format!(
            "no `Message-ID` header, using `{}`",
            eml.email.message_id
        ));
    }
    match eml.date_source {
        DateSource::Date => {}
        DateSource::Received => warnings.push(format!(
            "missing or invalid `Date` header, using the first `Received` date {}",
            rfc3339_z(&eml.email.sent_at)
        )),
        DateSource::ImportTime => warnings.push(format!(
            "missing or invalid `Date` header and no dated `Received` header, using the import time {}",
            rfc3339_z(&eml.email.sent_at)
        )),
    }
    if let Some(content_type) = &eml.unsplit {
        warnings.push(format!(
            "the `{content_type}` body has no part delimited by its boundary (wrong or missing `boundary`): its raw text is kept as the text body"
        ));
    }
    for (name, size) in &eml.oversized {
        warnings.push(limits.oversized(name, *size));
    }
    warnings
}

/// Whether `err` ended the whole batch transaction, not only the message's savepoint: a
/// deadlock or serialization failure (SQLSTATE class 40), or a lost connection (class 08,
/// or no answer from the server).
fn transaction_lost(err: &Error) -> bool {
    err.db_err().is_some_and(protege_core::db::transaction_lost)
}

/// What [`ingest_eml`] did with one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ingested {
    /// True when the message was stored now; false when its Message-ID was already stored
    /// or was erased.
    pub imported: bool,
    /// True when its Message-ID was erased by `forget` (`erased_messages`): nothing was
    /// stored, and [`thread_id`](Self::thread_id) is 0.
    pub erased: bool,
    /// The Message-ID (synthetic when the message had none).
    pub message_id: String,
    /// The thread the message is in.
    pub thread_id: i64,
    /// Its direction.
    pub direction: Direction,
    /// Fallbacks used (no Message-ID, no usable Date, attachment data over the cap).
    pub warnings: Vec<String>,
}

/// Stores the raw messages `raws` as [`ingest_eml`] stores each of them, in one
/// transaction when it can (one commit for the lot, the batched statements of an import):
/// each message's outcome, in order, as [`ingest_eml`] gives it (bytes that are not an
/// email [`ErrorKind::InvalidInput`], a Message-ID stored for another message
/// [`ErrorKind::Conflict`]). When the transaction cannot hold them all (another writer
/// stored one of them meanwhile, or the database refused a row) the messages are stored
/// one by one, so one message never fails its neighbours. With `options.jobs` set, each is
/// stored alone: a job is written with its message.
pub async fn ingest_eml_batch(
    db: &DatabaseConnection,
    raws: &[&[u8]],
    options: &EmlOptions,
) -> Result<Vec<Result<Ingested>>> {
    let mut out: Vec<Option<Result<Ingested>>> = (0..raws.len()).map(|_| None).collect();
    if options.jobs.is_none() && raws.len() > 1 {
        let limits = Limits::of(db, options).await?;
        let directions = directions(options);
        let with = Prepare {
            options,
            limits: &limits,
            directions: &directions,
        };
        let mut parsed: Vec<(usize, ParsedEml, Vec<String>)> = Vec::new();
        for (i, raw) in raws.iter().enumerate() {
            match with.parse(raw) {
                Ok((eml, warnings)) => parsed.push((i, eml, warnings)),
                Err(reason) => out[i] = Some(Err(Error::new(ErrorKind::InvalidInput, reason))),
            }
        }
        let mut threader = Threader::new(&options.own_addresses, options.threading);
        let batch: Vec<&ParsedEml> = parsed.iter().map(|(_, eml, _)| eml).collect();
        let txn = sea_orm::TransactionTrait::begin(db).await?;
        let stored = match threader.store_batch(&txn, &batch).await {
            Ok(Some(stored)) => {
                txn.commit().await?;
                Some(stored)
            }
            _ => {
                txn.rollback().await.ok();
                None
            }
        };
        match stored {
            Some(stored) => {
                for ((i, eml, warnings), stored) in parsed.into_iter().zip(stored) {
                    out[i] = Some(ingested(db, stored, &eml, warnings).await);
                }
            }
            // One by one, as parsed already.
            None => {
                for (i, eml, warnings) in parsed {
                    out[i] = Some(store_parsed(db, &eml, warnings, options).await);
                }
            }
        }
    }
    let mut done = Vec::with_capacity(raws.len());
    for (raw, outcome) in raws.iter().zip(out) {
        done.push(match outcome {
            Some(outcome) => outcome,
            None => ingest_eml(db, raw, options).await,
        });
    }
    Ok(done)
}

/// Stores one raw RFC 5322 message (mail received by an application) on the same write
/// path as [`import_eml_paths`]: the same parsing, participant threading, one-line headers
/// and insert-or-skip. With `options.direction = Some(Outbound)` the From address must be a
/// persona address (an application recording mail it sent); otherwise the error is
/// [`ErrorKind::InvalidInput`](protege_core::ErrorKind::InvalidInput), as it is for bytes that
/// are not an email. A message whose Message-ID is stored for another message (another
/// direction, sender or content) is [`ErrorKind::Conflict`](protege_core::ErrorKind::Conflict).
pub async fn ingest_eml(
    db: &DatabaseConnection,
    raw: &[u8],
    options: &EmlOptions,
) -> Result<Ingested> {
    let limits = Limits::of(db, options).await?;
    let directions = directions(options);
    let with = Prepare {
        options,
        limits: &limits,
        directions: &directions,
    };
    let (eml, warnings) = with
        .parse(raw)
        .map_err(|reason| Error::new(ErrorKind::InvalidInput, reason))?;
    store_parsed(db, &eml, warnings, options).await
}

/// Stores the parsed message `eml` alone, as [`ingest_eml`] does once it has parsed it.
async fn store_parsed(
    db: &DatabaseConnection,
    eml: &ParsedEml,
    warnings: Vec<String>,
    options: &EmlOptions,
) -> Result<Ingested> {
    let mut threader = Threader::new(&options.own_addresses, options.threading);
    // Mail the agent receives gets its job, inbound only.
    let job = options
        .jobs
        .as_ref()
        .filter(|_| eml.email.direction == Direction::Inbound)
        .and_then(|rule| rule.job_of(eml, options.now));
    let stored = threader
        .store(db, eml, job.as_ref().map(|j| (j, options.now)))
        .await?;
    ingested(db, stored, eml, warnings).await
}

/// What storing `eml` (parsed with `warnings`) came to, as [`ingest_eml`] reports it: a
/// message stored already is read back for its thread and direction.
async fn ingested(
    db: &DatabaseConnection,
    stored: Stored,
    eml: &ParsedEml,
    warnings: Vec<String>,
) -> Result<Ingested> {
    let message_id = eml.email.message_id.clone();
    match stored {
        Stored::Imported { thread, direction } => Ok(Ingested {
            imported: true,
            erased: false,
            message_id,
            thread_id: thread,
            direction,
            warnings,
        }),
        Stored::Erased => Ok(Ingested {
            imported: false,
            erased: true,
            message_id,
            thread_id: 0,
            direction: eml.email.direction,
            warnings: Vec::new(),
        }),
        Stored::Conflict(reason) => Err(Error::new(ErrorKind::Conflict, reason)),
        Stored::Duplicate => {
            let stored = protege_core::db::load_message(db, &message_id)
                .await?
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::Database,
                        format!(
                            "message `{message_id}` was reported as stored but cannot be read back"
                        ),
                    )
                })?;
            Ok(Ingested {
                imported: false,
                erased: false,
                message_id,
                thread_id: stored.thread_id,
                direction: stored.direction,
                warnings: Vec::new(),
            })
        }
    }
}
