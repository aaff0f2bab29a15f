//! Mail in over IMAP (§19): each folder a persona's `[inbox]` reads (its `imap` folder, and
//! its `sent` folder) is read by one session across every process, the one holding the
//! folder's lease in `inbox_state`.
//!
//! A pass selects the folder and compares its `UIDVALIDITY` with the stored one:
//!
//! - **first sync** (nothing stored): the folder's `UIDNEXT` − 1 becomes the highest UID,
//!   so only later mail is answered; with `since`, the older mail from that day on is
//!   stored too, without jobs and without marking it;
//! - **a changed `UIDVALIDITY`**: the messages received since the last completed sync
//!   minus one day are read again; what is missing is stored, with jobs only for those
//!   received after that sync; the new validity is recorded only once the re-read is done,
//!   so a process killed half-way reads them again (nothing is stored twice);
//! - then every message above the highest UID, by UID.
//!
//! Each message: the storing is counted first (a UID whose storing began three times
//! without an answer crashed the process each time: refused as `crashed`), one over
//! [`MAIL_MAX_BYTES`] is refused unread, the others are fetched and stored through the one
//! write path ([`Engine::ingest_fetched`]), then marked (`after`) and the highest UID
//! raised past them. A message refused for what it is (not mail, a Message-ID conflict) is
//! recorded in `inbox_rejects`, marked and passed; one the database cannot take now is
//! neither marked nor passed: the pass stops and is tried again.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::Utc;
use serde::Serialize;
use serde_json::{Value, json};

use protege_agent::{Imap, ImapAccount, ImapError, Listed};
use protege_core::{PersonaInbox, bare_address};

use super::agent::{AbortOnDrop, lease_of, renewer};
use super::mcp::EnvReader;
use super::{Engine, EngineError, EngineErrorKind};
use crate::db;

/// The most bytes of one message fetched from a mailbox, as `POST /v1/mail` takes (25 MiB):
/// a larger one is refused unread.
pub const MAIL_MAX_BYTES: u64 = 25 * 1024 * 1024;

/// How long a session holds its folder's lease without renewing it, by default (`serve
/// --inbox-lease`).
pub const INBOX_LEASE: Duration = Duration::from_secs(60);

/// How long an IDLE lasts before it is re-issued (RFC 2177 asks for under 29 minutes).
const IDLE_REISSUE: Duration = Duration::from_secs(25 * 60);

/// The longest wait between two attempts of a session that failed.
const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// The most messages whose bytes one command fetches.
const FETCH_BATCH: usize = 50;

/// The most bytes one command fetches (a larger message is fetched alone).
const FETCH_BATCH_BYTES: u64 = 8 * 1024 * 1024;

/// How many times the storing of one UID may begin before it is refused as `crashed`.
const MAX_STORE_ATTEMPTS: i32 = 3;

/// One folder a session reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FolderJob {
    persona: String,
    inbox: PersonaInbox,
    folder: String,
    /// Whether inbound mail of this folder gets jobs (the `imap` folder, not `sent`).
    jobs: bool,
}

impl FolderJob {
    fn key(&self) -> String {
        self.inbox.key_of(&self.folder)
    }

    /// The folders of every loaded persona with an `[inbox]`.
    fn all(engine: &Engine) -> Vec<FolderJob> {
        let mut out = Vec::new();
        for persona in engine.personas() {
            let info = persona.info();
            let Some(inbox) = &info.inbox else { continue };
            out.push(FolderJob {
                persona: info.name.clone(),
                inbox: inbox.clone(),
                folder: inbox.folder.clone(),
                jobs: true,
            });
            if let Some(sent) = &inbox.sent {
                out.push(FolderJob {
                    persona: info.name.clone(),
                    inbox: inbox.clone(),
                    folder: sent.clone(),
                    jobs: false,
                });
            }
        }
        out
    }
}

/// What one pass over a folder did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct InboxPass {
    /// The folder, `user@host:port/FOLDER`.
    pub mailbox: String,
    /// Whether this was the folder's first sync (its older mail is not answered).
    pub first_sync: bool,
    /// Whether the folder's `UIDVALIDITY` had changed (its recent mail was read again).
    pub uid_validity_changed: bool,
    /// Messages stored now.
    pub stored: usize,
    /// Messages that were stored already.
    pub duplicates: usize,
    /// Messages erased by `protege forget` before (never stored again), marked.
    pub erased: usize,
    /// Messages refused for what they are (recorded in `inbox_rejects`, marked).
    pub refused: Vec<Refused>,
}

/// A message an inbox pass refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refused {
    /// Its UID in the folder.
    pub uid: u32,
    /// Why.
    pub reason: String,
}

impl std::fmt::Display for InboxPass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: stored {}, already stored {}, refused {}",
            self.mailbox,
            self.stored,
            self.duplicates,
            self.refused.len()
        )?;
        if self.erased > 0 {
            write!(f, ", erased {}", self.erased)?;
        }
        if self.first_sync {
            write!(f, " (first sync: mail already there is not answered)")?;
        }
        if self.uid_validity_changed {
            write!(f, " (UIDVALIDITY changed: recent mail read again)")?;
        }
        for r in &self.refused {
            write!(f, "\n  refused UID {}: {}", r.uid, r.reason)?;
        }
        Ok(())
    }
}

/// Why a pass stopped.
#[derive(Debug)]
enum PassError {
    /// The IMAP exchange failed: connect again.
    Imap(ImapError),
    /// The database could not take a write now: try again without marking anything.
    Database(EngineError),
    /// Another process took the folder.
    LeaseLost,
}

impl std::fmt::Display for PassError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PassError::Imap(e) => write!(f, "{e}"),
            PassError::Database(e) => write!(f, "the database cannot store mail now: {e}"),
            PassError::LeaseLost => write!(f, "another process took the folder"),
        }
    }
}

impl From<ImapError> for PassError {
    fn from(e: ImapError) -> Self {
        PassError::Imap(e)
    }
}

impl From<EngineError> for PassError {
    fn from(e: EngineError) -> Self {
        PassError::Database(e)
    }
}

impl From<protege_core::Error> for PassError {
    fn from(e: protege_core::Error) -> Self {
        PassError::Database(e.into())
    }
}

/// How each folder's session stands, by persona, for `/readyz`.
#[derive(Debug, Default)]
pub(crate) struct InboxStatus(std::sync::Mutex<BTreeMap<String, BTreeMap<String, Value>>>);

impl InboxStatus {
    fn set(&self, job: &FolderJob, state: &str, reason: Option<&str>) {
        let mut value = json!({ "state": state, "folder": job.folder });
        if let Some(reason) = reason {
            value["reason"] = Value::from(reason);
        }
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(job.persona.clone())
            .or_default()
            .insert(job.folder.clone(), value);
    }

    fn remove(&self, job: &FolderJob) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(folders) = map.get_mut(&job.persona) {
            folders.remove(&job.folder);
            if folders.is_empty() {
                map.remove(&job.persona);
            }
        }
    }

    /// `{"persona": [{"state", "folder", "reason"?}, …]}`.
    pub(crate) fn report(&self) -> serde_json::Map<String, Value> {
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.iter()
            .map(|(persona, folders)| {
                (
                    persona.clone(),
                    Value::Array(folders.values().cloned().collect()),
                )
            })
            .collect()
    }
}

impl Engine {
    /// One pass over every folder of `persona`'s `[inbox]` (`protege inbox fetch`): it
    /// claims each folder's lease as `owner`, stores new mail, makes the jobs, marks what it
    /// stored, and gives the lease back. `env` reads the password.
    pub async fn fetch_inbox(
        &self,
        persona: &str,
        owner: &str,
        env: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Result<Vec<InboxPass>, EngineError> {
        let p = self.require_persona(persona)?;
        if p.info().inbox.is_none() {
            return Err(EngineError::new(
                EngineErrorKind::InvalidInput,
                format!("persona `{persona}` has no `[inbox]`: there is no mailbox to fetch"),
            ));
        }
        let env: EnvReader = Arc::new(env);
        let mut out = Vec::new();
        for job in FolderJob::all(self)
            .into_iter()
            .filter(|j| j.persona == persona)
        {
            let conn = self.db().await?;
            let key = job.key();
            let now = Utc::now();
            if db::claim_inbox(
                conn,
                &key,
                &job.persona,
                owner,
                now + lease_of(INBOX_LEASE),
                now,
            )
            .await?
            .is_none()
            {
                return Err(EngineError::new(
                    EngineErrorKind::Conflict,
                    format!(
                        "the mailbox `{key}` is being read by another process (`protege serve --agent`): try again when it stops"
                    ),
                ));
            }
            let lost = Arc::new(AtomicBool::new(false));
            let _renewer = renew_folder(
                conn.clone(),
                key.clone(),
                owner.to_owned(),
                INBOX_LEASE,
                lost.clone(),
            );
            let result = async {
                let account = account(&job.inbox, &env).map_err(ImapError::Connection)?;
                let mut imap = Imap::connect(&account).await?;
                let pass = self.pass(&mut imap, &job, owner, &lost).await;
                imap.logout().await;
                pass
            }
            .await;
            db::release_inbox(conn, &key, owner, Utc::now()).await?;
            match result {
                Ok(pass) => out.push(pass),
                Err(PassError::Database(e)) => return Err(e),
                Err(e) => {
                    return Err(EngineError::new(
                        EngineErrorKind::Unavailable,
                        format!("the mailbox `{key}` could not be read: {e}"),
                    ));
                }
            }
        }
        Ok(out)
    }

    /// The inbox sessions of this process until `stop` turns true: every few seconds the
    /// loaded personas' `[inbox]` folders are compared with the sessions running; a new or
    /// changed folder gets a session, a removed one's session stops. Each session claims its
    /// folder's lease (one process reads a folder), reads it, and waits for new mail.
    pub async fn run_inboxes(
        &self,
        owner: String,
        lease: Duration,
        env: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        let env: EnvReader = Arc::new(env);
        let mut running: BTreeMap<
            String,
            (FolderJob, tokio::sync::watch::Sender<bool>, AbortOnDrop),
        > = BTreeMap::new();
        loop {
            if *stop.borrow() {
                break;
            }
            let wanted = FolderJob::all(self);
            running.retain(|key, (job, halt, _)| {
                let keep = wanted.iter().any(|w| w.key() == *key && w == job);
                if !keep {
                    let _ = halt.send(true);
                    self.inner.inboxes.remove(job);
                }
                keep
            });
            for job in wanted {
                let key = job.key();
                if running.contains_key(&key) {
                    continue;
                }
                let (halt, halted) = tokio::sync::watch::channel(false);
                let engine = self.clone();
                let (owner, env, session_job) = (owner.clone(), env.clone(), job.clone());
                let task = tokio::spawn(async move {
                    engine.session(session_job, owner, lease, env, halted).await;
                });
                running.insert(key, (job, halt, AbortOnDrop(task)));
            }
            tokio::select! {
                () = tokio::time::sleep(Duration::from_secs(5)) => {}
                _ = stop.changed() => {}
            }
        }
        // Each session gives its lease back when it sees the stop.
        for (_, (_, halt, task)) in std::mem::take(&mut running) {
            let _ = halt.send(true);
            let mut handle = task;
            let _ = tokio::time::timeout(Duration::from_secs(10), &mut handle.0).await;
        }
    }

    /// One folder's session until `stop`: claim, connect, read, wait; back off on failure.
    async fn session(
        &self,
        job: FolderJob,
        owner: String,
        lease: Duration,
        env: EnvReader,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        let key = job.key();
        let mut failures: u32 = 0;
        let status = &self.inner.inboxes;
        while !*stop.borrow() {
            let outcome = self.hold(&job, &key, &owner, lease, &env, &mut stop).await;
            let wait = match outcome {
                Held::Stopped => break,
                Held::Elsewhere => {
                    status.set(&job, "elsewhere", Some("another process reads this folder"));
                    failures = 0;
                    lease / 3
                }
                Held::Failed(why) => {
                    failures = failures.saturating_add(1);
                    tracing::warn!(persona = %job.persona, mailbox = %key, "inbox down: {why}");
                    status.set(&job, "down", Some(&why));
                    backoff(failures)
                }
            };
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                _ = stop.changed() => {}
            }
        }
        if let Ok(conn) = self.db().await {
            let _ = db::release_inbox(conn, &key, &owner, Utc::now()).await;
        }
        status.remove(&job);
    }

    /// Holds the folder while it can: the lease claimed and renewed, one connection, passes
    /// and waits.
    async fn hold(
        &self,
        job: &FolderJob,
        key: &str,
        owner: &str,
        lease: Duration,
        env: &EnvReader,
        stop: &mut tokio::sync::watch::Receiver<bool>,
    ) -> Held {
        let conn = match self.db().await {
            Ok(conn) => conn.clone(),
            Err(e) => return Held::Failed(e.to_string()),
        };
        let now = Utc::now();
        match db::claim_inbox(&conn, key, &job.persona, owner, now + lease_of(lease), now).await {
            Ok(Some(_)) => {}
            Ok(None) => return Held::Elsewhere,
            Err(e) => return Held::Failed(format!("the database: {e}")),
        }
        let lost = Arc::new(AtomicBool::new(false));
        let _renewer = renew_folder(
            conn.clone(),
            key.to_owned(),
            owner.to_owned(),
            lease,
            lost.clone(),
        );
        let held = self.read_folder(job, owner, env, stop, &lost).await;
        let _ = db::release_inbox(&conn, key, owner, Utc::now()).await;
        held
    }

    async fn read_folder(
        &self,
        job: &FolderJob,
        owner: &str,
        env: &EnvReader,
        stop: &mut tokio::sync::watch::Receiver<bool>,
        lost: &AtomicBool,
    ) -> Held {
        let account = match account(&job.inbox, env) {
            Ok(account) => account,
            Err(why) => return Held::Failed(why),
        };
        let mut imap = tokio::select! {
            connected = Imap::connect(&account) => match connected {
                Ok(imap) => imap,
                Err(e) => return Held::Failed(e.to_string()),
            },
            _ = stop.changed() => return Held::Stopped,
        };
        let wait = if imap.has_idle() {
            IDLE_REISSUE
        } else {
            job.inbox.poll
        };
        let mut database_failures: u32 = 0;
        loop {
            let pass = tokio::select! {
                pass = self.pass(&mut imap, job, owner, lost) => pass,
                _ = stop.changed() => return Held::Stopped,
            };
            match pass {
                Ok(_) => {
                    database_failures = 0;
                    self.inner.inboxes.set(job, "up", None);
                }
                Err(PassError::Database(e)) => {
                    // Nothing was marked: wait, then read again on the same connection.
                    database_failures = database_failures.saturating_add(1);
                    let why = format!("the database cannot store mail now: {e}");
                    tracing::warn!(persona = %job.persona, "{why}");
                    self.inner.inboxes.set(job, "down", Some(&why));
                    tokio::select! {
                        () = tokio::time::sleep(backoff(database_failures)) => continue,
                        _ = stop.changed() => return Held::Stopped,
                    }
                }
                Err(PassError::LeaseLost) => return Held::Elsewhere,
                Err(e @ PassError::Imap(_)) => return Held::Failed(e.to_string()),
            }
            if lost.load(Ordering::SeqCst) {
                return Held::Elsewhere;
            }
            tokio::select! {
                woke = imap.wait(wait) => if let Err(e) = woke {
                    return Held::Failed(e.to_string());
                },
                _ = stop.changed() => {
                    imap.logout().await;
                    return Held::Stopped;
                }
            }
        }
    }

    /// One pass over the selected folder of `job` (see the module's description).
    async fn pass(
        &self,
        imap: &mut Imap,
        job: &FolderJob,
        owner: &str,
        lost: &AtomicBool,
    ) -> Result<InboxPass, PassError> {
        let key = job.key();
        let conn = self.db().await?.clone();
        // Mail that arrives while this pass runs may be missed by its listing: the sync
        // counts from its beginning.
        let began = Utc::now();
        let folder = imap.select(&job.folder).await?;
        let state = db::inbox_state(&conn, &key)
            .await?
            .ok_or(PassError::LeaseLost)?;
        let mut pass = InboxPass {
            mailbox: key.clone(),
            ..InboxPass::default()
        };
        let validity = i64::from(folder.uid_validity);
        let highest = match state.uid_validity {
            None => {
                pass.first_sync = true;
                if let Some(day) = job.inbox.since {
                    let old: Vec<(Listed, Take)> = imap
                        .list_since(day)
                        .await?
                        .into_iter()
                        .filter(|l| l.uid < folder.uid_next)
                        .map(|l| (l, Take::Old))
                        .collect();
                    self.take_all(imap, job, owner, validity, old, &mut pass, lost)
                        .await?;
                }
                let start = i64::from(folder.uid_next) - 1;
                if !db::reset_inbox(&conn, &key, owner, validity, start, Utc::now()).await? {
                    return Err(PassError::LeaseLost);
                }
                start
            }
            Some(stored) if stored != validity => {
                pass.uid_validity_changed = true;
                // A folder never read to its end counts from its last change.
                let last = state.last_sync_at.unwrap_or(state.updated_at);
                let day = (last - chrono::Duration::days(1)).date_naive();
                // `INTERNALDATE` counts whole seconds: a message of the sync's own second is
                // new. One stored already gets no second job either way.
                let since = last - chrono::Duration::seconds(1);
                let again: Vec<(Listed, Take)> = imap
                    .list_since(day)
                    .await?
                    .into_iter()
                    .map(|l| {
                        let new = l.internal_date.is_none_or(|d| d >= since);
                        (l, if new { Take::New } else { Take::Again })
                    })
                    .collect();
                self.take_all(imap, job, owner, validity, again, &mut pass, lost)
                    .await?;
                let start = i64::from(folder.uid_next) - 1;
                if !db::reset_inbox(&conn, &key, owner, validity, start, Utc::now()).await? {
                    return Err(PassError::LeaseLost);
                }
                start
            }
            Some(_) => state.highest_uid,
        };
        let after = u32::try_from(highest.max(0)).unwrap_or(u32::MAX);
        let new: Vec<(Listed, Take)> = imap
            .list_after(after)
            .await?
            .into_iter()
            .map(|l| (l, Take::New))
            .collect();
        self.take_all(imap, job, owner, validity, new, &mut pass, lost)
            .await?;
        if !db::finish_sync(&conn, &key, owner, began, Utc::now()).await? {
            return Err(PassError::LeaseLost);
        }
        Ok(pass)
    }

    /// Takes `listed` in UID order, fetching the bytes of up to [`FETCH_BATCH`] messages
    /// (and [`FETCH_BATCH_BYTES`]) with one command; each message is then taken alone.
    #[allow(clippy::too_many_arguments)]
    async fn take_all(
        &self,
        imap: &mut Imap,
        job: &FolderJob,
        owner: &str,
        uid_validity: i64,
        listed: Vec<(Listed, Take)>,
        pass: &mut InboxPass,
        lost: &AtomicBool,
    ) -> Result<(), PassError> {
        let mut rest = listed.as_slice();
        while !rest.is_empty() {
            let mut bytes = 0;
            let mut n = 0;
            for (l, _) in rest.iter().take(FETCH_BATCH) {
                if n > 0 && bytes + l.size > FETCH_BATCH_BYTES {
                    break;
                }
                bytes += l.size.min(MAIL_MAX_BYTES + 1);
                n += 1;
            }
            let (chunk, after) = rest.split_at(n);
            rest = after;
            let uids: Vec<u32> = chunk
                .iter()
                .filter(|(l, _)| l.size <= MAIL_MAX_BYTES)
                .map(|(l, _)| l.uid)
                .collect();
            let mut bodies = imap.fetch_many(&uids).await?;
            if self
                .take_old(job, owner, uid_validity, chunk, &mut bodies, pass)
                .await?
            {
                continue;
            }
            for (listed, take) in chunk {
                if lost.load(Ordering::SeqCst) {
                    return Err(PassError::LeaseLost);
                }
                let body = bodies.remove(&listed.uid);
                self.take(imap, job, owner, uid_validity, *listed, *take, body, pass)
                    .await?;
            }
        }
        Ok(())
    }

    /// Stores a chunk of a first sync's older mail (`Take::Old`: no jobs, no marks) in one
    /// transaction, with `bodies` fetched; false, with nothing done, when the chunk is not
    /// all such mail, holds a message too large or not fetched, or was begun before and
    /// never finished (then each message is taken alone, so the one that crashed the
    /// process is refused after three attempts). The chunk's storing is recorded as
    /// pending under the negative of its first UID, apart from any single UID.
    async fn take_old(
        &self,
        job: &FolderJob,
        owner: &str,
        uid_validity: i64,
        chunk: &[(Listed, Take)],
        bodies: &mut std::collections::HashMap<u32, Vec<u8>>,
        pass: &mut InboxPass,
    ) -> Result<bool, PassError> {
        let batchable = chunk.len() > 1
            && chunk.iter().all(|(l, take)| {
                *take == Take::Old && l.size <= MAIL_MAX_BYTES && bodies.contains_key(&l.uid)
            });
        if !batchable {
            return Ok(false);
        }
        let conn = self.db().await?.clone();
        let key = job.key();
        let first = -i64::from(chunk[0].0.uid);
        let attempts = db::begin_storing(&conn, &key, owner, first, Utc::now())
            .await?
            .ok_or(PassError::LeaseLost)?;
        if attempts > 1 {
            return Ok(false);
        }
        let raws: Vec<(u32, Vec<u8>)> = chunk
            .iter()
            .filter_map(|(l, _)| bodies.remove(&l.uid).map(|raw| (l.uid, raw)))
            .collect();
        let slices: Vec<&[u8]> = raws.iter().map(|(_, raw)| raw.as_slice()).collect();
        let outcomes = self
            .ingest_fetched_batch(&slices)
            .await
            .map_err(PassError::Database)?;
        protege_core::fault("inbox.after_batch");
        for ((uid, raw), outcome) in raws.iter().zip(outcomes) {
            if let Some(reason) = counted(outcome, pass)? {
                let rejected = rejected(uid_validity, i64::from(*uid), reason, Some(raw));
                self.refuse(job, &rejected, pass).await?;
            }
        }
        Ok(true)
    }

    /// Records `rejected` in `inbox_rejects` and in `pass`, with a warning in the log.
    async fn refuse(
        &self,
        job: &FolderJob,
        rejected: &db::Rejected,
        pass: &mut InboxPass,
    ) -> Result<(), PassError> {
        let key = job.key();
        let conn = self.db().await?;
        db::reject_message(conn, &key, rejected, Utc::now()).await?;
        let (uid, reason) = (rejected.uid, &rejected.reason);
        tracing::warn!(persona = %job.persona, mailbox = %key, uid, "a message was refused: {reason}");
        pass.refused.push(Refused {
            uid: u32::try_from(uid).unwrap_or_default(),
            reason: reason.clone(),
        });
        Ok(())
    }

    /// Stores, refuses or passes one listed message (`body`, when fetched already), marks
    /// it and raises the highest UID (`Take::Old` messages are stored only).
    #[allow(clippy::too_many_arguments)]
    async fn take(
        &self,
        imap: &mut Imap,
        job: &FolderJob,
        owner: &str,
        uid_validity: i64,
        listed: Listed,
        take: Take,
        body: Option<Vec<u8>>,
        pass: &mut InboxPass,
    ) -> Result<(), PassError> {
        let key = job.key();
        let conn = self.db().await?.clone();
        let uid = i64::from(listed.uid);
        let attempts = db::begin_storing(&conn, &key, owner, uid, Utc::now())
            .await?
            .ok_or(PassError::LeaseLost)?;
        let refusal = if attempts > MAX_STORE_ATTEMPTS {
            Some((
                format!("crashed: its storing began {MAX_STORE_ATTEMPTS} times without an answer"),
                None,
            ))
        } else if listed.size > MAIL_MAX_BYTES {
            Some((
                format!(
                    "too large: {} bytes, over the limit of {MAIL_MAX_BYTES} bytes",
                    listed.size
                ),
                None,
            ))
        } else {
            let raw = match body {
                Some(raw) => Some(raw),
                None => imap.fetch(listed.uid).await?,
            };
            match raw {
                // Expunged meanwhile: nothing to store or mark.
                None => None,
                Some(raw) => {
                    let jobs = job.jobs && take == Take::New;
                    let stored = self.ingest_fetched(&raw, &job.persona, jobs).await;
                    counted(stored, pass)?.map(|reason| (reason, Some(raw)))
                }
            }
        };
        if let Some((reason, raw)) = refusal {
            let rejected = rejected(uid_validity, uid, reason, raw.as_deref());
            self.refuse(job, &rejected, pass).await?;
        }
        protege_core::fault("inbox.after_store");
        if take != Take::Old {
            imap.mark(listed.uid, &job.inbox.after).await?;
        }
        // A first sync's older mail and a re-read do not move the highest UID: the reset
        // after them sets it.
        if take == Take::New && !db::raise_highest_uid(&conn, &key, owner, uid, Utc::now()).await? {
            return Err(PassError::LeaseLost);
        }
        Ok(())
    }
}

/// Counts the outcome of storing one fetched message in `pass`: `Ok(None)` when it was
/// stored (now, before, or never again because it was erased), `Ok(Some(reason))` when it
/// is refused for what it is, `Err` when the database cannot take it now.
fn counted(
    stored: Result<db::Ingested, EngineError>,
    pass: &mut InboxPass,
) -> Result<Option<String>, PassError> {
    match stored {
        Ok(stored) => {
            if stored.imported {
                pass.stored += 1;
            } else if stored.erased {
                pass.erased += 1;
            } else {
                pass.duplicates += 1;
            }
            Ok(None)
        }
        Err(e)
            if matches!(
                e.kind(),
                EngineErrorKind::InvalidInput | EngineErrorKind::Conflict
            ) =>
        {
            Ok(Some(e.to_string()))
        }
        Err(e) => Err(PassError::Database(e)),
    }
}

/// The `inbox_rejects` row of UID `uid`, refused for `reason`, with the Message-ID and
/// From read from `raw` when it was fetched.
fn rejected(uid_validity: i64, uid: i64, reason: String, raw: Option<&[u8]>) -> db::Rejected {
    let (message_id, from_address) = raw.map(identity).unwrap_or_default();
    db::Rejected {
        uid_validity,
        uid,
        message_id,
        from_address,
        reason,
    }
}

/// How a listed message is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Take {
    /// New mail: stored with its job, marked, the highest UID raised past it.
    New,
    /// Read again after a changed `UIDVALIDITY`, older than the last sync: stored without
    /// a job, marked.
    Again,
    /// Older mail of a first sync with `since`: stored without a job, not marked.
    Old,
}

/// How a session's hold on its folder ended.
enum Held {
    /// `stop` turned true.
    Stopped,
    /// Another process holds the folder (or took it).
    Elsewhere,
    /// The connection, the login or the database failed: why.
    Failed(String),
}

/// The wait after the `n`th failure in a row: 1 s doubled each time, at most
/// [`MAX_BACKOFF`], with up to a quarter more at random so replicas do not retry together.
fn backoff(n: u32) -> Duration {
    let base = Duration::from_secs(1)
        .saturating_mul(1u32 << n.saturating_sub(1).min(16))
        .min(MAX_BACKOFF);
    let mut bytes = [0u8; 2];
    let _ = getrandom::fill(&mut bytes);
    let jitter = base.mul_f64(f64::from(u16::from_le_bytes(bytes)) / f64::from(u16::MAX) / 4.0);
    base + jitter
}

/// The account of `inbox`, its password read through `env`; or why it cannot be used.
fn account(inbox: &PersonaInbox, env: &EnvReader) -> Result<ImapAccount, String> {
    let password = env(&inbox.password_env)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| {
            format!(
                "the environment variable `{}` of `password_env` is not set",
                inbox.password_env
            )
        })?;
    let ca_pem = match &inbox.ca_file {
        Some(path) => Some(
            std::fs::read(path)
                .map_err(|e| format!("`ca_file` `{}` cannot be read: {e}", path.display()))?,
        ),
        None => None,
    };
    Ok(ImapAccount {
        host: inbox.host.clone(),
        port: inbox.port,
        security: inbox.security,
        user: inbox.user.clone(),
        password,
        ca_pem,
        timeout: protege_agent::COMMAND_TIMEOUT,
    })
}

/// Renews `owner`'s lease of `mailbox` every third of `lease` until dropped; sets `lost`
/// when a renewal finds it gone.
fn renew_folder(
    conn: sea_orm::DatabaseConnection,
    mailbox: String,
    owner: String,
    lease: Duration,
    lost: Arc<AtomicBool>,
) -> AbortOnDrop {
    let what = format!("`{mailbox}`");
    renewer(lease, lost, what, move |until, now| {
        let (conn, mailbox, owner) = (conn.clone(), mailbox.clone(), owner.clone());
        async move { db::renew_inbox(&conn, &mailbox, &owner, until, now).await }
    })
}

/// The Message-ID and the bare From address of a refused message, as far as they read.
fn identity(raw: &[u8]) -> (Option<String>, Option<String>) {
    let Some(message) = mail_parser::MessageParser::default().parse_headers(raw) else {
        return (None, None);
    };
    let message_id = message
        .message_id()
        .map(|id| protege_core::one_line(id).chars().take(998).collect());
    let from = message
        .from()
        .and_then(|from| from.first())
        .and_then(|a| a.address())
        .map(|a| bare_address(a).to_lowercase());
    (message_id, from)
}
