//! The front door: [`Engine`] turns a persona folder, a database and a [`ResolveInput`]
//! into a finished request, the same way for the command line, the HTTP service, the
//! examples and embedding applications.

#[cfg(feature = "agent")]
mod agent;
mod cache_report;
mod calibrate;
mod diff;
mod error;
mod fixture;
mod forget;
#[cfg(feature = "agent")]
mod inbox;
mod input;
mod jobs;
mod mail;
#[cfg(feature = "agent")]
mod mcp;
mod message_id;
mod outbox;
mod prune;
mod replica;
mod run;
mod runs_report;
#[cfg(feature = "agent")]
mod schedule;
mod stored;
mod summary;
mod trace;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use protege_config::{Diagnostic, Diagnostics, Event, Persona, PersonaSet, Registry, Watch};
use protege_core::db;
use protege_core::wire::{ModelSpec, to_anthropic, to_openai, to_openai_responses};
use protege_core::{
    AppConfig, Calibration, Context, PersonaInfo, Request, StepReport, Tokenizer, ToolDef, Trigger,
    assemble,
};
use sea_orm::DatabaseConnection;
use tokio::sync::{OnceCell, broadcast};

#[cfg(feature = "agent")]
pub use agent::{Agent, ApprovedCall, CallReport, Foreground, JOB_LEASE, JobReport, RoundReport};
pub use cache_report::{CacheReport, CacheReportRow};
pub use diff::{DiffOptions, DiffStatus, FirstChange, MAX_DIFF_FILES, PersonaDiff};
pub use error::{EngineError, EngineErrorKind};
#[cfg(feature = "agent")]
pub use inbox::{INBOX_LEASE, InboxPass, MAIL_MAX_BYTES, Refused};
pub use input::{Format, ResolveInput};
pub use jobs::JobInfo;
pub use mail::{EmlImport, EmlImported};
#[cfg(feature = "agent")]
pub use mcp::{McpStatus, PersonaMcp};
pub use outbox::{Claimed, Composed, DEFAULT_LEASE, MAX_SUBJECT_CHARS, OutboxEntry, retry_after};
#[cfg(feature = "serve")]
pub(crate) use run::Recorded;
pub use run::{
    Pending, PendingCall, PendingRound, RoundInput, RoundRecord, Run, RunInfo, RunRecord, Step,
    ToolResult,
};
pub use runs_report::{RunCacheReport, RunCacheRow};
#[cfg(feature = "agent")]
pub use schedule::DueSlot;
pub use summary::SUMMARY_MAX_BYTES;

/// The result of [`Engine::resolve`].
#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
    /// The canonical payload.
    pub request: Request,
    /// The output in the requested format: exactly what `protege resolve` prints.
    pub body: serde_json::Value,
    /// One row per resolver (then one for the trailing user turn of a reply run): the
    /// rows of `--explain`. Their `tokens` are counted only when the input asks for
    /// [`ResolveInput::explain`].
    pub steps: Vec<StepReport>,
    /// The wall time of the whole chain.
    pub elapsed: std::time::Duration,
    /// How tokens are counted for this run: the tokenizer of the input's `model`, else of
    /// the persona's `[model] name` (the estimate for a model that is not OpenAI's).
    pub tokenizer: Tokenizer,
    /// The calibration the `tokens` of [`steps`](Self::steps) were counted with instead of
    /// the estimate: set when the input asks for [`ResolveInput::explain`], the model has
    /// no public tokenizer, and enough of its runs are recorded
    /// ([`Engine::calibration`]).
    pub calibration: Option<Calibration>,
    /// The tokenizer's count of each message, when the steps' tokens were counted with it:
    /// [`message_tokens`](Self::message_tokens) without counting again.
    counted: Vec<usize>,
}

impl Resolution {
    /// Where the `tokens` of [`steps`](Self::steps) come from: `estimate`, `tokenizer
    /// NAME` (e.g. `tokenizer o200k_base`) or `calibrated from N runs`.
    pub fn token_source(&self) -> String {
        match (&self.calibration, self.tokenizer) {
            (Some(c), _) => c.source(),
            (None, Tokenizer::Estimate) => "estimate".to_owned(),
            (None, t) => format!("tokenizer {}", t.name()),
        }
    }

    /// Where each message of the request came from (§15), in request order, the trailing
    /// user turn included.
    pub fn sources(&self) -> &[protege_core::Source] {
        &self.request.sources
    }

    /// The SHA-256, in lowercase hex, of the body's compact JSON serialisation
    /// (`serde_json::to_vec(&self.body)`), which matches a stored copy of the request
    /// whatever its indentation.
    pub fn request_sha256(&self) -> String {
        let bytes = serde_json::to_vec(&self.body).unwrap_or_default();
        protege_core::Source::sha256_hex(&bytes)
    }

    /// The tokens of each message of the request, in request order, counted as the
    /// `tokens` of [`steps`](Self::steps) are (the calibration when there is one, else the
    /// tokenizer); a row's `tokens` is the sum of its messages' (up to the calibration's
    /// rounding).
    pub fn message_tokens(&self) -> Vec<usize> {
        let messages = &self.request.messages;
        if self.calibration.is_none() && self.counted.len() == messages.len() {
            return self.counted.clone();
        }
        messages
            .iter()
            .map(|m| match &self.calibration {
                Some(c) => c.count(std::slice::from_ref(m)),
                None => self.tokenizer.count_message(m),
            })
            .collect()
    }

    /// The JSON form of `--explain` (what `POST /v1/resolve` adds to the request with
    /// `"explain": true`): `explain`, one row per resolver (`resolver`, `messages`,
    /// `chars`, `tokens`, `ms`, `mail` when `[mail]` changed something, and `notes` when
    /// the resolver has something to say, such as a key that found no row), `sources`, one
    /// per message of the request, `message_tokens`, one per message of the request
    /// ([`message_tokens`](Self::message_tokens)), and `request_sha256`.
    pub fn explain_json(&self) -> serde_json::Map<String, serde_json::Value> {
        use serde_json::json;
        let rows: Vec<serde_json::Value> = self
            .steps
            .iter()
            .map(|s| {
                let mut row = json!({
                    "resolver": s.name,
                    "messages": s.messages,
                    "chars": s.chars,
                    "tokens": s.tokens.unwrap_or_default(),
                    "ms": s.elapsed.as_secs_f64() * 1000.0,
                });
                // What `[mail]` removed or changed, only when it did.
                if !s.mail.is_empty() {
                    row["mail"] = json!({
                        "quoted_chars_removed": s.mail.quoted_chars,
                        "hidden_chars_dropped": s.mail.hidden_chars,
                        "lines_neutralised": s.mail.neutralised_lines,
                    });
                }
                // What else it has to say, only when it has.
                if !s.notes.is_empty() {
                    row["notes"] = json!(s.notes);
                }
                row
            })
            .collect();
        let mut out = serde_json::Map::new();
        out.insert("explain".into(), serde_json::Value::Array(rows));
        out.insert("sources".into(), json!(self.sources()));
        out.insert("message_tokens".into(), json!(self.message_tokens()));
        out.insert("request_sha256".into(), self.request_sha256().into());
        out
    }

    /// The sentence that explains the token column of `--explain`: the tokenizer's
    /// ([`Tokenizer::describe`]), or the calibration's ([`Calibration::describe`]).
    pub fn describe_tokens(&self) -> String {
        match &self.calibration {
            Some(c) => c.describe(),
            None => self.tokenizer.describe().to_owned(),
        }
    }
}

/// Builds an [`Engine`]: where the app lives, its personas and its database.
///
/// Its `Debug` shows the database URLs without their passwords and never the fence key.
#[derive(Default)]
#[must_use = "an EngineBuilder does nothing until `.build().await`"]
pub struct EngineBuilder {
    root: Option<PathBuf>,
    personas: Option<PathBuf>,
    database: Option<String>,
    read_database: Option<String>,
    connection: Option<DatabaseConnection>,
    registry: Option<Registry>,
    config: Option<AppConfig>,
    watch: bool,
    trusted_authserv_ids: Vec<String>,
    connect_timeout: Option<std::time::Duration>,
    fence_key: Option<String>,
    check_env: bool,
}

impl std::fmt::Debug for EngineBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineBuilder")
            .field("root", &self.root)
            .field("personas", &self.personas)
            .field("database", &self.database.as_deref().map(db::redact_url))
            .field(
                "read_database",
                &self.read_database.as_deref().map(db::redact_url),
            )
            .field("connection", &self.connection)
            .field("registry", &self.registry)
            .field("config", &self.config)
            .field("watch", &self.watch)
            .field("trusted_authserv_ids", &self.trusted_authserv_ids)
            .field("connect_timeout", &self.connect_timeout)
            .field("fence_key", &self.fence_key.as_ref().map(|_| Redacted))
            .field("check_env", &self.check_env)
            .finish()
    }
}

/// A secret in a `Debug` output: `<redacted>`.
struct Redacted;

impl std::fmt::Debug for Redacted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl EngineBuilder {
    /// The app root relative paths resolve against (default `.`).
    pub fn root(mut self, root: impl Into<PathBuf>) -> Self {
        self.root = Some(root.into());
        self
    }

    /// The persona folder (default `<root>/personas`; a relative path is taken from the
    /// current directory).
    pub fn personas(mut self, dir: impl Into<PathBuf>) -> Self {
        self.personas = Some(dir.into());
        self
    }

    /// The database URL (default `sqlite://<root>/protege.db`, created and migrated on first
    /// use; [`from_env`](Self::from_env) reads `PROTEGE_DATABASE_URL`).
    pub fn database(mut self, url: impl Into<String>) -> Self {
        self.database = Some(url.into());
        self
    }

    /// The URL of a read replica of the database (a PostgreSQL streaming-replication
    /// standby, say; default none; [`from_env`](Self::from_env) reads
    /// `PROTEGE_READ_DATABASE_URL`; an empty URL is ignored). Every read of a resolve goes
    /// to it (the trigger message, the thread's history, records, summaries, correspondent
    /// history); a trigger message it does not have yet, or a replica that cannot be reached
    /// or fails, is read from the primary instead ([`Engine::replica_fallbacks`] counts
    /// those resolves). Writes and migrations always go to the primary: the replica is
    /// connected without migrating. The replica must be a copy of the primary kept by the
    /// database's own replication, row ids included.
    pub fn read_database(mut self, url: impl Into<String>) -> Self {
        self.read_database = Some(url.into()).filter(|u| !u.is_empty());
        self
    }

    /// How long connecting to the database may take (default
    /// [`db::DEFAULT_CONNECT_TIMEOUT`]).
    pub fn connect_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// The settings of the process environment, as the `protege` command reads them: the
    /// database URL of `PROTEGE_DATABASE_URL`, the read replica's of
    /// `PROTEGE_READ_DATABASE_URL` (see [`read_database`](Self::read_database)), the
    /// connect timeout of
    /// `PROTEGE_CONNECT_TIMEOUT` (see [`db::parse_connect_timeout`]) and the fence key of
    /// `PROTEGE_FENCE_KEY` (see [`fence_key`](Self::fence_key)); set but empty counts as
    /// unset. Nothing else of the library reads the environment. An invalid timeout is an
    /// [`EngineErrorKind::BadRequest`] error.
    pub fn from_env(mut self) -> Result<Self, EngineError> {
        if let Some(url) = std::env::var("PROTEGE_DATABASE_URL")
            .ok()
            .filter(|u| !u.is_empty())
        {
            self.database = Some(url);
        }
        if let Some(url) = std::env::var("PROTEGE_READ_DATABASE_URL")
            .ok()
            .filter(|u| !u.is_empty())
        {
            self.read_database = Some(url);
        }
        if let Some(key) = std::env::var("PROTEGE_FENCE_KEY")
            .ok()
            .filter(|k| !k.is_empty())
        {
            self.fence_key = Some(key);
        }
        if let Ok(text) = std::env::var("PROTEGE_CONNECT_TIMEOUT") {
            self.connect_timeout = Some(
                db::parse_connect_timeout(&text, "PROTEGE_CONNECT_TIMEOUT")
                    .map_err(|e| EngineError::from(e).with_kind(EngineErrorKind::BadRequest))?,
            );
        }
        Ok(self)
    }

    /// The secret the fences of `[mail] fence = true` derive their nonces from (any
    /// non-empty string; an empty one is ignored). Default: the key the database keeps,
    /// drawn at random when the schema is migrated, so every process on one database draws
    /// the same fences. Give the same key to every process that serves one database.
    pub fn fence_key(mut self, key: impl Into<String>) -> Self {
        self.fence_key = Some(key.into()).filter(|k| !k.is_empty());
        self
    }

    /// Authserv-ids (RFC 8601) whose `Authentication-Results` headers mail imports trust,
    /// beside each persona's `[mail] trusted_authserv_ids`.
    pub fn trusted_authserv_ids(mut self, ids: impl IntoIterator<Item = String>) -> Self {
        self.trusted_authserv_ids.extend(ids);
        self
    }

    /// An open database connection to use instead of a URL (its schema must be migrated).
    pub fn connection(mut self, db: DatabaseConnection) -> Self {
        self.connection = Some(db);
        self
    }

    /// The registry of resolver names (default: the built-ins), for custom resolvers.
    pub fn registry(mut self, registry: Registry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// Application settings for resolvers (its root is replaced by the engine's root).
    pub fn config(mut self, config: AppConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// Whether to hot-reload the persona folder (default false).
    pub fn watch(mut self, watch: bool) -> Self {
        self.watch = watch;
        self
    }

    /// Checks at every load and reload that the environment variables a persona names
    /// (`[model] api_key_env` and the tools' secrets of a persona with an `[agent]` table,
    /// `[outbox] password_env`) are set: a persona naming an unset one is invalid, with a
    /// diagnostic at the key (default off; `protege serve --agent` turns it on, so a
    /// missing key is reported at load, never at the first mail).
    pub fn check_env(mut self, check: bool) -> Self {
        self.check_env = check;
        self
    }

    /// Loads the persona folder (invalid files are kept as [`Engine::diagnostics`]),
    /// starts watching it when asked, and prepares the database, which is connected on
    /// first use.
    ///
    /// A missing persona folder is an error only when the engine is to watch it: otherwise
    /// the engine serves the database doors ([`Engine::import_fixture`],
    /// [`Engine::import_eml`], [`Engine::store_summary`]…) and the calls that need personas
    /// say the folder is missing.
    pub async fn build(self) -> Result<Engine, EngineError> {
        let root = self.root.unwrap_or_else(|| PathBuf::from("."));
        let personas = self.personas.unwrap_or_else(|| root.join("personas"));
        let registry = self.registry.unwrap_or_default();
        let folder_problem = (!personas.is_dir()).then(|| {
            EngineError::new(
                EngineErrorKind::Config,
                if personas.exists() {
                    format!("persona folder `{}` is not a directory", personas.display())
                } else {
                    format!("persona folder `{}` does not exist", personas.display())
                },
            )
        });
        let (set, diagnostics) = match &folder_problem {
            Some(problem) if self.watch => return Err(problem.clone()),
            Some(_) => (
                PersonaSet::empty(&personas, registry),
                Diagnostics::default(),
            ),
            None => PersonaSet::builder(&personas)
                .registry(registry)
                .check_env(self.check_env)
                .load()?,
        };
        let events = if self.watch {
            let watch = set.watch()?;
            // Room for a burst of edits: a receiver that falls further behind misses events.
            let (tx, first) = broadcast::channel(4096);
            tokio::spawn(forward(watch, tx.clone()));
            Some((tx, std::sync::Mutex::new(Some(first))))
        } else {
            None
        };
        let database = self
            .database
            .unwrap_or_else(|| format!("sqlite://{}", root.join("protege.db").display()));
        let mut config = self.config.unwrap_or_default();
        config.root = root;
        let connect_timeout = self.connect_timeout.unwrap_or(db::DEFAULT_CONNECT_TIMEOUT);
        Ok(Engine {
            inner: Arc::new(Inner {
                config,
                set,
                diagnostics,
                folder_problem,
                trusted_authserv_ids: self.trusted_authserv_ids,
                connect_timeout,
                database,
                replica: self
                    .read_database
                    .map(|url| Arc::new(replica::Replica::new(url, connect_timeout))),
                db: match self.connection {
                    Some(conn) => OnceCell::new_with(Some(conn)),
                    None => OnceCell::new(),
                },
                applied: std::sync::OnceLock::new(),
                events,
                fits: calibrate::Fits::default(),
                #[cfg(feature = "agent")]
                mcp: mcp::McpCatalog::default(),
                #[cfg(feature = "agent")]
                inboxes: inbox::InboxStatus::default(),
                wake: Wake::default(),
                rounds: run::ParsedRounds::default(),
                fence_key: match self.fence_key {
                    Some(key) => OnceCell::new_with(Some(Arc::from(key.as_bytes()))),
                    None => OnceCell::new(),
                },
            }),
        })
    }
}

/// What a run offers besides its persona's defaults (the agent's runs): `extra` tools (its
/// MCP servers'), and for a scheduled run of the agent `only` the tools named
/// (`[[responsibilities]] tools`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Offer<'a> {
    pub(crate) extra: &'a [ToolDef],
    pub(crate) only: Option<&'a [String]>,
}

/// `info` with the tools a run offers: the persona's own and `offer`'s, a reply run of an
/// agent persona limited to its `[agent] reply_tools`, and a run limited to `offer.only`.
fn offered_tools(info: &Arc<PersonaInfo>, is_reply: bool, offer: &Offer<'_>) -> Arc<PersonaInfo> {
    let limit = info
        .agent
        .as_ref()
        .filter(|a| is_reply && a.reply_tools.is_some());
    if limit.is_none() && offer.extra.is_empty() && offer.only.is_none() {
        return info.clone();
    }
    let mut offered = (**info).clone();
    offered.tools.extend(offer.extra.iter().cloned());
    if let Some(agent) = limit {
        offered.tools.retain(|t| agent.offers_reply_tool(&t.name));
    }
    if let Some(only) = offer.only {
        offered.tools.retain(|t| only.contains(&t.name));
    }
    Arc::new(offered)
}

/// The receiver made with the reload channel, until [`Engine::events`] hands it out.
type FirstReceiver = std::sync::Mutex<Option<broadcast::Receiver<Event>>>;

async fn forward(mut watch: Watch, tx: broadcast::Sender<Event>) {
    while let Some(event) = watch.next().await {
        // No subscriber is fine: the set reloads whether anyone listens or not.
        let _ = tx.send(event);
    }
}

/// The engine: personas (hot-reloaded when asked), a database, and [`Engine::resolve`].
/// Cheap to clone; clones share everything.
///
/// ```no_run
/// # async fn demo() -> Result<(), protege::EngineError> {
/// use protege::{Engine, Format, ResolveInput};
/// let engine = Engine::builder().root(".").database("sqlite://protege.db").build().await?;
/// let out = engine
///     .resolve(&ResolveInput::reply("support", "<m1@example.com>").format(Format::Anthropic))
///     .await?;
/// println!("{}", serde_json::to_string_pretty(&out.body).unwrap());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    config: AppConfig,
    set: PersonaSet,
    diagnostics: Diagnostics,
    /// Why the persona folder could not be read, when it could not.
    folder_problem: Option<EngineError>,
    trusted_authserv_ids: Vec<String>,
    connect_timeout: std::time::Duration,
    database: String,
    /// The read replica, when one is set.
    replica: Option<Arc<replica::Replica>>,
    db: OnceCell<DatabaseConnection>,
    /// The migrations the engine's first connection applied.
    applied: std::sync::OnceLock<Vec<String>>,
    /// The reload events, and the receiver made with the channel, kept for the first
    /// caller of [`Engine::events`] so it misses nothing since the engine was built.
    events: Option<(broadcast::Sender<Event>, FirstReceiver)>,
    /// The token calibrations of the models, as [`Engine::calibration`] keeps them.
    fits: calibrate::Fits,
    /// The MCP connections of the agent's personas.
    #[cfg(feature = "agent")]
    mcp: mcp::McpCatalog,
    /// How the inbox sessions of this process stand.
    #[cfg(feature = "agent")]
    inboxes: inbox::InboxStatus,
    /// The fence key: given, or read from the database at the first fenced resolve.
    fence_key: OnceCell<Arc<[u8]>>,
    /// Wakes this process's agent worker when a job is made here, and its delivery worker
    /// when a reply is queued, instead of waiting for their next look.
    wake: Wake,
    /// The recorded rounds of the runs going on here, parsed once.
    rounds: run::ParsedRounds,
}

/// The wake-ups of the workers of one process.
#[derive(Debug, Default)]
pub(crate) struct Wake {
    /// A job was made.
    pub(crate) jobs: Arc<tokio::sync::Notify>,
    /// A reply was stored in the outbox.
    pub(crate) outbox: Arc<tokio::sync::Notify>,
}

/// The engine's `Debug`: the database URLs without their passwords, never the fence key.
impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner")
            .field("config", &self.config)
            .field("set", &self.set)
            .field("diagnostics", &self.diagnostics)
            .field("folder_problem", &self.folder_problem)
            .field("trusted_authserv_ids", &self.trusted_authserv_ids)
            .field("connect_timeout", &self.connect_timeout)
            .field("database", &db::redact_url(&self.database))
            .field("replica", &self.replica)
            .field("db", &self.db)
            .field("events", &self.events)
            .field("fits", &self.fits)
            .field("fence_key", &self.fence_key.get().map(|_| Redacted))
            .finish()
    }
}

impl Engine {
    /// Starts building an engine.
    pub fn builder() -> EngineBuilder {
        EngineBuilder::default()
    }

    /// The app root.
    pub fn root(&self) -> &Path {
        &self.inner.config.root
    }

    /// The live personas, sorted by name (a snapshot: a reload does not change it).
    pub fn personas(&self) -> Vec<Arc<Persona>> {
        let mut all = self.inner.set.personas();
        all.sort_by(|a, b| a.name().cmp(b.name()));
        all
    }

    /// The persona called `name`, from the live snapshot.
    pub fn persona(&self, name: &str) -> Option<Arc<Persona>> {
        self.inner.set.get(name)
    }

    /// The persona called `name`, or the error that says why there is none: the persona
    /// folder is missing ([`EngineErrorKind::Config`]), or no valid persona has the name
    /// ([`EngineErrorKind::NotFound`], naming the known personas or the invalid files).
    pub fn require_persona(&self, name: &str) -> Result<Arc<Persona>, EngineError> {
        self.personas_ready()?;
        self.persona(name).ok_or_else(|| self.unknown_persona(name))
    }

    /// The problems of the persona files that were invalid when the engine was built.
    pub fn diagnostics(&self) -> &Diagnostics {
        &self.inner.diagnostics
    }

    /// Checks the persona folder, as `protege check` does: the names of the valid personas
    /// when every file is valid, else the problems of the invalid files. A missing folder
    /// is an [`EngineErrorKind::Config`] error.
    pub fn check(&self) -> Result<Result<Vec<String>, Diagnostics>, EngineError> {
        self.personas_ready()?;
        if self.inner.diagnostics.is_empty() {
            Ok(Ok(self.inner.set.names()))
        } else {
            Ok(Err(self.inner.diagnostics.clone()))
        }
    }

    /// Checks what the personas name outside themselves that can be checked before any
    /// message comes, as `protege check --database URL` does: each `LoadFile` entry's fixed
    /// path under the app root, each `LoadRecord` entry's table and the columns its
    /// `where` and `order_by` name, in the database's catalogue (one statement for the
    /// tables, one per table named). The problems point at their place in the persona
    /// files, with a suggestion from what exists; templated paths wait for a message. The
    /// database is only opened when some persona names a table.
    pub async fn check_resources(&self) -> Result<Diagnostics, EngineError> {
        self.personas_ready()?;
        let mut problems = Vec::new();
        let mut read = Vec::new();
        for persona in self.inner.set.personas() {
            match std::fs::read_to_string(persona.path()) {
                Ok(source) => read.push(protege_config::Resources::read(persona.path(), &source)),
                Err(e) => problems.push(Diagnostic::whole_file(
                    persona.path(),
                    format!("cannot read the persona file again: {e}"),
                )),
            }
        }
        let mut tables: Vec<&str> = read.iter().flat_map(|r| r.tables()).collect();
        tables.sort_unstable();
        tables.dedup();
        let mut catalogue = protege_config::Catalogue::default();
        if !tables.is_empty() {
            // A check only reads the catalogue: a database not opened yet is connected to
            // without migrating it (`check --database` on a production database changes
            // nothing there).
            let opened = match self.inner.db.get() {
                Some(_) => None,
                None => Some(
                    db::connect_within(&self.inner.database, self.inner.connect_timeout).await?,
                ),
            };
            let conn = match &opened {
                Some(conn) => conn,
                None => self.db().await?,
            };
            catalogue.tables = db::table_names(conn).await?;
            for table in tables {
                if catalogue.tables.iter().any(|t| t == table) {
                    let columns = db::table_columns(conn, table).await?;
                    catalogue.columns.insert(table.to_owned(), columns);
                }
            }
            if let Some(conn) = opened {
                conn.close().await.ok();
            }
        }
        for resources in &read {
            problems.extend(resources.diagnostics(&self.inner.config.root, &catalogue));
        }
        problems.sort_by(|a, b| {
            (a.path(), a.line(), a.column()).cmp(&(b.path(), b.line(), b.column()))
        });
        Ok(problems.into())
    }

    /// The error of a call that needs personas when the persona folder could not be read.
    pub(crate) fn personas_ready(&self) -> Result<(), EngineError> {
        match &self.inner.folder_problem {
            Some(problem) => Err(problem.clone()),
            None => Ok(()),
        }
    }

    /// Checks that the database answers (connecting first if needed), as `/readyz` does.
    pub async fn ping(&self) -> Result<(), EngineError> {
        self.db()
            .await?
            .ping()
            .await
            .map_err(|e| protege_core::Error::from(e).into())
    }

    /// Whether a read replica is set ([`EngineBuilder::read_database`]).
    pub fn has_read_replica(&self) -> bool {
        self.inner.replica.is_some()
    }

    /// Checks that the read replica answers (connecting first if needed, never migrating),
    /// as `/readyz` does: `None` when no replica is set, an error when it is marked down
    /// after a failure, or does not answer within a second (it is then marked down).
    pub async fn ping_read_replica(&self) -> Option<Result<(), EngineError>> {
        let replica = self.inner.replica.as_ref()?;
        if replica.is_down() {
            return Some(Err(EngineError::new(
                EngineErrorKind::Unavailable,
                "the read replica is down: reads go to the primary until it answers again",
            )));
        }
        let out = match tokio::time::timeout(replica::PING_TIMEOUT, replica.ping()).await {
            Ok(out) => out,
            Err(_) => Err(EngineError::new(
                EngineErrorKind::Unavailable,
                "the read replica did not answer within a second",
            )),
        };
        if let Err(e) = &out {
            replica.mark_down(e);
        }
        Some(out)
    }

    /// How many resolves ran on the primary instead of the read replica since the engine
    /// was built: the trigger message was not on the replica yet, or the replica could not
    /// be reached or failed (0 without a replica).
    pub fn replica_fallbacks(&self) -> u64 {
        self.inner
            .replica
            .as_ref()
            .map_or(0, |replica| replica.fallbacks())
    }

    /// The reload events of the persona folder: from when the engine was built for the
    /// first call, from now on for the others; `None` when
    /// the engine does not watch its folder.
    pub fn events(&self) -> Option<broadcast::Receiver<Event>> {
        let (tx, first) = self.inner.events.as_ref()?;
        let kept = first.lock().unwrap_or_else(|p| p.into_inner()).take();
        Some(kept.unwrap_or_else(|| tx.subscribe()))
    }

    /// The names of the migrations this engine applied when it connected (none when the
    /// schema was up to date, or before it connected).
    pub fn migrations_applied(&self) -> &[String] {
        self.inner.applied.get().map_or(&[], Vec::as_slice)
    }

    /// The database, connected (and migrated) on first use.
    pub async fn db(&self) -> Result<&DatabaseConnection, EngineError> {
        self.inner
            .db
            .get_or_try_init(|| async {
                let conn =
                    db::connect_within(&self.inner.database, self.inner.connect_timeout).await?;
                let applied = db::migrate(&conn).await?;
                let _ = self.inner.applied.set(applied);
                Ok::<_, EngineError>(conn)
            })
            .await
    }

    /// The fence key: the one given, else the database's (drawn and stored when there is
    /// none yet, as the migration does).
    pub(super) async fn fence_key(
        &self,
        conn: &DatabaseConnection,
    ) -> Result<Arc<[u8]>, EngineError> {
        self.inner
            .fence_key
            .get_or_try_init(|| async {
                if let Some(key) = db::settings::fence_key(conn).await? {
                    return Ok::<_, EngineError>(Arc::from(key.as_bytes()));
                }
                db::settings::insert_fence_key(conn)
                    .await
                    .map_err(protege_core::Error::from)?;
                let key = db::settings::fence_key(conn).await?.unwrap_or_default();
                Ok(Arc::from(key.as_bytes()))
            })
            .await
            .cloned()
    }

    /// Resolves `input`: runs the persona's chain for the trigger, appends the user turn
    /// and the tools, validates, and encodes the request in the asked format.
    pub async fn resolve(&self, input: &ResolveInput) -> Result<Resolution, EngineError> {
        Ok(self.resolve_with_parts(input, &Offer::default()).await?.0)
    }

    /// [`Engine::resolve`], with what a run keeps of it besides the resolution, under a
    /// `protege.resolve` span (see [`trace`]); `offer` is what an agent's run offers
    /// besides the persona's tools.
    pub(crate) async fn resolve_with_parts(
        &self,
        input: &ResolveInput,
        offer: &Offer<'_>,
    ) -> Result<(Resolution, ResolvedParts), EngineError> {
        let span = trace::resolve_span(input);
        let out = self.resolve_traced(input, offer, &span).await;
        if let Err(e) = &out {
            trace::record_error(&span, e);
        }
        out
    }

    /// [`Engine::resolve_with_parts`] for `span`: on the read replica when one is set and
    /// up, else (or when the replica lacks the trigger message or fails) on the primary.
    async fn resolve_traced(
        &self,
        input: &ResolveInput,
        offer: &Offer<'_>,
        span: &tracing::Span,
    ) -> Result<(Resolution, ResolvedParts), EngineError> {
        if let Some(replica) = self.inner.replica.as_ref() {
            if !replica.is_down() {
                let attempt = match replica.conn().await {
                    Ok(conn) => self.resolve_on(conn, input, offer, span).await,
                    Err(e) => Err(ResolveFailure::Failed(e)),
                };
                match attempt {
                    Ok(out) => return Ok(out),
                    // Not replayed on the replica yet: the primary has it.
                    Err(ResolveFailure::MissingTrigger(_)) => {}
                    Err(ResolveFailure::Failed(e)) if e.kind() == EngineErrorKind::Unavailable => {
                        replica.mark_down(&e);
                    }
                    Err(ResolveFailure::Failed(e)) => return Err(e),
                }
            }
            replica.count_fallback();
        }
        self.resolve_on(self.db().await?, input, offer, span)
            .await
            .map_err(ResolveFailure::into_error)
    }

    /// The resolve of `input` with every read on `conn`: when a subscriber records the
    /// span, the tokens are counted (as `--explain` counts them) for its figures and one
    /// `protege.resolver` span is made per step.
    async fn resolve_on(
        &self,
        conn: &DatabaseConnection,
        input: &ResolveInput,
        offer: &Offer<'_>,
        span: &tracing::Span,
    ) -> Result<(Resolution, ResolvedParts), ResolveFailure> {
        self.personas_ready()?;
        let now = checked_now(input)?;
        let persona = self.require_persona(&input.persona)?;
        let info = persona.info();
        let model = match input.format {
            Format::Messages => None,
            Format::Openai | Format::OpenaiResponses | Format::Anthropic | Format::Provider => {
                Some(ModelSpec::resolve(
                    info.model.as_ref(),
                    input.model.as_deref(),
                )?)
            }
        };
        let format = wire_format(info, input.format)?;
        let trigger = trigger(conn, info, input).await?;
        let message_row = match &trigger {
            Trigger::Message(m) => Some(m.id),
            Trigger::Responsibility(_) => None,
        };
        let is_reply = message_row.is_some();
        let model_name = input
            .model
            .as_deref()
            .or_else(|| info.model.as_ref().and_then(|m| m.name.as_deref()));
        let info = offered_tools(info, is_reply, offer);
        let mut builder = Context::builder(info.clone(), self.inner.config.clone(), trigger)
            .db(conn.clone())
            .tokenizer(Tokenizer::for_optional_model(model_name));
        if info.mail.fence {
            // The key is read (or drawn) once, on the primary: it may be written.
            builder = builder.fence_key(self.fence_key(self.db().await?).await?);
        }
        builder = builder.explain(input.explain);
        if let Some(now) = now {
            builder = builder.now(now);
        }
        let ctx = builder.build();
        let chain = if is_reply {
            persona.message_chain()
        } else {
            persona.responsibility_chain()
        };
        let mut assembled = assemble(chain, &ctx).await.map_err(|e| {
            let path = persona.path();
            let shown = path.strip_prefix(self.root()).unwrap_or(path);
            EngineError::from(e).in_persona(&info.name, shown)
        })?;
        // A recorded span counts the tokens too, for its figures; they are kept only when
        // the input asks for `--explain`.
        let traced = !span.is_disabled();
        let (calibration, counted) = if input.explain || traced {
            self.count_tokens(&mut assembled, model_name).await?
        } else {
            (None, Vec::new())
        };
        if format != Format::Messages
            && let Some(spec) = &model
            && let Some(m) = ctx.message()
        {
            assembled.request.cache.hour = hour_pays(conn, spec, m).await?;
        }
        let body = encode(&assembled.request, format, model.clone())?;
        let mut resolution = Resolution {
            request: assembled.request,
            body,
            steps: assembled.steps,
            elapsed: assembled.elapsed,
            tokenizer: assembled.tokenizer,
            calibration,
            counted,
        };
        if traced {
            trace::record_resolution(span, &resolution, model_name);
            if !input.explain {
                for step in &mut resolution.steps {
                    step.tokens = None;
                }
                resolution.calibration = None;
                resolution.counted = Vec::new();
            }
        }
        Ok((
            resolution,
            ResolvedParts {
                format,
                model,
                message_row,
            },
        ))
    }

    /// Counts the tokens of each step of `assembled`: with the tokenizer of `model_name`,
    /// or, for a model without a public tokenizer, with its calibration once enough of its
    /// runs are recorded (`ThreadHistory`'s budget keeps the estimate: it is spent before
    /// this point, without a query for the calibration). The calibration used, or the
    /// tokenizer's count of each message.
    async fn count_tokens(
        &self,
        assembled: &mut protege_core::Assembled,
        model_name: Option<&str>,
    ) -> Result<(Option<Calibration>, Vec<usize>), EngineError> {
        let mut calibration = None;
        if let Some(name) = model_name.filter(|_| assembled.tokenizer == Tokenizer::Estimate) {
            calibration = self.calibration(name).await?;
        }
        Ok(match calibration {
            Some(c) => {
                assembled.count_tokens_calibrated(&c);
                (Some(c), Vec::new())
            }
            None => (None, assembled.count_tokens()),
        })
    }

    pub(crate) fn unknown_persona(&self, name: &str) -> EngineError {
        let known: Vec<String> = self
            .personas()
            .iter()
            .map(|p| format!("`{}`", p.name()))
            .collect();
        EngineError::new(
            EngineErrorKind::NotFound,
            if !self.inner.diagnostics.is_empty() {
                format!(
                    "unknown persona `{name}`: it is not among the valid personas, and the persona folder has {}",
                    problem_summary(&self.inner.diagnostics)
                )
            } else if known.is_empty() {
                format!(
                    "unknown persona `{name}`: the persona folder `{}` holds no personas",
                    self.inner.set.dir().display()
                )
            } else {
                format!(
                    "unknown persona `{name}`; known personas: {}",
                    known.join(", ")
                )
            },
        )
    }
}

/// Why a resolve on one database failed: its trigger message is not there (the primary
/// may have it), or anything else.
#[derive(Debug)]
enum ResolveFailure {
    MissingTrigger(EngineError),
    Failed(EngineError),
}

impl ResolveFailure {
    fn into_error(self) -> EngineError {
        match self {
            Self::MissingTrigger(e) | Self::Failed(e) => e,
        }
    }
}

impl<E: Into<EngineError>> From<E> for ResolveFailure {
    fn from(e: E) -> Self {
        Self::Failed(e.into())
    }
}

/// What a run keeps of a resolve besides its [`Resolution`].
pub(crate) struct ResolvedParts {
    /// The format of the body, `provider` replaced by the persona's.
    pub(crate) format: Format,
    /// The model of a wire format.
    pub(crate) model: Option<ModelSpec>,
    /// The row id of the inbound message of a reply run.
    pub(crate) message_row: Option<i64>,
}

/// The wire format a resolve asked for, `provider` replaced by the persona's.
/// Whether the prefix of a reply to `message` should be cached for an hour (Anthropic's
/// breakpoints, OpenAI's extended retention): with `cache = "auto"` and `cache_ttl =
/// "auto"`, when the thread's recent gaps make it pay.
async fn hour_pays(
    conn: &DatabaseConnection,
    spec: &ModelSpec,
    message: &protege_core::MailMessage,
) -> Result<bool, EngineError> {
    if spec.cache != protege_core::CacheMode::Auto || spec.cache_ttl != protege_core::CacheTtl::Auto
    {
        return Ok(false);
    }
    let gaps = cache_report::recent_gaps(conn, message.thread_id, message.email.sent_at).await?;
    Ok(protege_core::hour_pays(&gaps))
}

/// The time `input` resolves at (`None`: now); an empty model name or a time that is not
/// RFC 3339 is a bad request.
fn checked_now(input: &ResolveInput) -> Result<Option<chrono::DateTime<chrono::Utc>>, EngineError> {
    if input.model.as_deref().is_some_and(|m| m.trim().is_empty()) {
        return Err(EngineError::new(
            EngineErrorKind::BadRequest,
            "the model name is empty; pass a model such as `gpt-4o` or leave it out",
        ));
    }
    input
        .now
        .map(input::run_time)
        .transpose()
        .map_err(|message| EngineError::new(EngineErrorKind::BadRequest, message))
}

fn wire_format(info: &protege_core::PersonaInfo, format: Format) -> Result<Format, EngineError> {
    match format {
        Format::Provider => Format::of_model(info.model.as_ref()).ok_or_else(|| {
            EngineError::new(
                EngineErrorKind::InvalidInput,
                format!(
                    "persona `{}` names no provider: set `provider` in its `[model]` table or ask for `openai`, `openai-responses` or `anthropic`",
                    info.name
                ),
            )
        }),
        other => Ok(other),
    }
}

/// The error for a Message-ID that no stored message has, with a hint when the same id
/// with (or without) its angle brackets is stored: a Message-ID copied from a mail
/// client or from notmuch often lacks them.
pub(crate) async fn unknown_message(conn: &DatabaseConnection, id: &str) -> EngineError {
    let other = match id.strip_prefix('<').and_then(|rest| rest.strip_suffix('>')) {
        Some(bare) => bare.to_owned(),
        None => format!("<{id}>"),
    };
    let stored = !other.is_empty() && matches!(db::load_message(conn, &other).await, Ok(Some(_)));
    let hint = if stored {
        format!("; did you mean `{other}`?")
    } else {
        String::new()
    };
    EngineError::new(
        EngineErrorKind::NotFound,
        format!("unknown message `{id}`: no message with this Message-ID in the database{hint}"),
    )
}

/// The trigger of a resolve: the inbound message of `message_id`, or the persona's
/// responsibility.
async fn trigger(
    conn: &DatabaseConnection,
    info: &protege_core::PersonaInfo,
    input: &ResolveInput,
) -> Result<Trigger, ResolveFailure> {
    match (&input.message_id, &input.responsibility) {
        (Some(id), None) => {
            let Some(m) = db::load_message(conn, id).await? else {
                return Err(ResolveFailure::MissingTrigger(
                    unknown_message(conn, id).await,
                ));
            };
            if m.direction == protege_core::Direction::Outbound {
                return Err(EngineError::new(
                    EngineErrorKind::InvalidInput,
                    format!(
                        "message `{id}` was sent by the persona; a reply run answers an inbound message"
                    ),
                )
                .into());
            }
            Ok(Trigger::Message(Arc::new(m)))
        }
        (None, Some(name)) => Ok(Trigger::Responsibility(
            info.responsibility(name)
                .cloned()
                .ok_or_else(|| unknown_responsibility(info, name))?,
        )),
        _ => Err(EngineError::new(
            EngineErrorKind::BadRequest,
            "give exactly one of `message_id` (a reply run) and `responsibility` (a scheduled run)",
        )
        .into()),
    }
}

/// `request` in `format`: a provider's body, or protege's canonical JSON.
fn encode(
    request: &Request,
    format: Format,
    model: Option<ModelSpec>,
) -> Result<serde_json::Value, EngineError> {
    Ok(match (format, model) {
        (Format::Openai, Some(m)) => to_openai(request, &m)?,
        (Format::OpenaiResponses, Some(m)) => to_openai_responses(request, &m)?,
        (Format::Anthropic, Some(m)) => to_anthropic(request, &m)?,
        _ => serde_json::to_value(request).map_err(|e| {
            EngineError::new(
                EngineErrorKind::InvalidInput,
                format!("cannot serialise the request: {e}"),
            )
        })?,
    })
}

fn unknown_responsibility(info: &protege_core::PersonaInfo, name: &str) -> EngineError {
    let known: Vec<String> = info
        .responsibilities
        .iter()
        .map(|r| format!("`{}`", r.name))
        .collect();
    EngineError::new(
        EngineErrorKind::NotFound,
        if known.is_empty() {
            format!(
                "unknown responsibility `{name}`: persona `{}` has no responsibilities",
                info.name
            )
        } else {
            format!(
                "unknown responsibility `{name}` for persona `{}`; valid: {}",
                info.name,
                known.join(", ")
            )
        },
    )
}

/// `N problems in M persona files`.
pub fn problem_summary(diagnostics: &[Diagnostic]) -> String {
    let mut files: Vec<&Path> = diagnostics.iter().map(Diagnostic::path).collect();
    files.sort();
    files.dedup();
    let problems = diagnostics.len();
    format!(
        "{problems} {} in {} persona {}",
        if problems == 1 { "problem" } else { "problems" },
        files.len(),
        if files.len() == 1 { "file" } else { "files" }
    )
}
