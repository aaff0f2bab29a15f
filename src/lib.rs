//! protege assembles what a large language model sees before it answers an email: the
//! ordered system, user, assistant and tool messages of a request, from personas written
//! as TOML files or as Rust code.
//!
//! This crate is the one to depend on: it re-exports the engine (`protege-core`, at the
//! crate root, with its mail types from `protege-mail` and its [`wire`] module), the
//! database ([`db`]: `protege-core`'s reads and `protege-store`'s imports) and the TOML
//! personas (`protege-config`, as [`config`]). The database layer, SeaORM, is re-exported as
//! [`db::sea_orm`]. The `protege` command line is the `protege-cli` package; its HTTP
//! routes are `serve::router`, with the cargo feature `serve`.
//!
//! # Cargo features
//!
//! - `sqlite` (default), `postgres`, `mysql`: the database drivers compiled in;
//! - `serve`: `serve::router`, protege's HTTP routes as an axum `Router` to mount in an
//!   application of your own.
//!
//! # Where to start
//!
//! - [`Engine`]: a persona folder, a database and a [`ResolveInput`] give the finished
//!   request, exactly what `protege resolve` prints (`examples/quickstart.rs`);
//! - [`resolvers!`] and [`Chain::request`]: the same chain written in Rust, checked at
//!   compile time (`examples/typed_chain.rs`);
//! - [`Resolver`]: a resolver of your own, used from Rust or, registered in a
//!   [`config::Registry`], from TOML (`examples/custom_resolver.rs`);
//! - [`db`]: the database — connecting, importing mail, finding a message
//!   ([`db::load_message`]) and its thread ([`db::thread_messages`]), and SeaORM itself
//!   ([`db::sea_orm`]) for queries of your own;
//! - [`wire`]: a finished [`Request`] as an OpenAI Chat Completions, OpenAI Responses or
//!   Anthropic request body ([`wire::to_openai`], [`wire::to_openai_responses`],
//!   [`wire::to_anthropic`]), and the provider's answer back as a [`wire::ModelResponse`]
//!   ([`wire::from_openai_response`], [`wire::from_openai_responses_response`],
//!   [`wire::from_anthropic_response`]);
//! - [`config`]: TOML personas on their own, with their diagnostics and hot reload.
//!
//! # Template variables
//!
//! Every template (`LoadText` `template`, a templated `LoadFile` path, `LoadRecord` `where`
//! values and per-record `template`) is minijinja and sees these variables:
//!
//! | variable | what | example |
//! | --- | --- | --- |
//! | `persona.name` | the persona's name | `{{ persona.name }}` → `support` |
//! | `persona.instructions` | its `instructions` (empty string when unset) | `{{ persona.instructions }}` |
//! | `persona.vars` | its `[vars]` table | `{{ persona.vars.team \| slugify }}` → `support-team` |
//! | `message.message_id` | the inbound message's Message-ID (reply runs only) | `{{ message.message_id }}` → `<m1@example.com>` |
//! | `message.from` | the sender's bare address | `{{ message.from }}` → `alice@example.com` |
//! | `message.from_display` | the sender as stored in the header | `{{ message.from_display }}` → `Alice <alice@example.com>` |
//! | `message.to` | the To addresses, bare, as a list | `{{ message.to \| join(", ") }}` → `support@acme.test` |
//! | `message.cc` | the Cc addresses, bare, as a list | `{% if message.cc %}Cc: {{ message.cc \| join(", ") }}{% endif %}` |
//! | `message.subject` | the subject | `Re: {{ message.subject }}` → `Re: Refund` |
//! | `message.sent_at` | RFC 3339 UTC with `Z` | `{{ message.sent_at }}` → `2026-01-05T10:00:00Z` |
//! | `message.body` | the readable body (the text body, else the HTML body as text), cut at `[limits] message_text_bytes`, between the thread's fence lines with `[mail] fence = true` | `{{ message.body }}` |
//! | `message.thread_id` | the thread's id | `{{ message.thread_id }}` → `7` |
//! | `responsibility.name` | the scheduled task's name (scheduled runs only) | `Task {{ responsibility.name }}` → `Task daily-digest` |
//! | `responsibility.schedule` | its 5-field cron expression | `{{ responsibility.schedule }}` → `0 8 * * *` |
//! | `responsibility.instructions` | its instructions | `{{ responsibility.instructions }}` |
//! | `mail.fence_note` | with `[mail] fence = true`, one sentence naming the thread's fence lines and saying that text between them is the sender's data, never instructions (empty when `fence` is off or in a scheduled run) | `{{ mail.fence_note }}` |
//! | `correlation_id` | the caller's correlation id (absent when unset) | `{% if correlation_id %}[{{ correlation_id }}]{% endif %}` |
//! | `now` | the run's time, RFC 3339 UTC with `Z` | `run at {{ now }}` → `run at 2026-01-05T10:05:00Z` |
//! | `record` | the row, as a map (LoadRecord per-record `template` only) | `{{ record.name }} ({{ record.plan }})` |
//! | `summary` | the text of the thread's running summary (ThreadSummary `template` only) | `Summary of the conversation so far:\n{{ summary }}` |
//! | `thread.subject`, `thread.summary`, `thread.messages` | an earlier thread of the sender with the persona (CorrespondentHistory `template` only): its subject, its newest running summary (none when it has none) and otherwise its last messages, each rendered as the history renders it | `{{ thread.subject }}: {% if thread.summary %}{{ thread.summary }}{% else %}{{ thread.messages \| length }} messages{% endif %}` |
//!
//! Besides minijinja's own filters there are `slugify`: lowercase ASCII letters and digits,
//! every other run of characters one `-` (`"Support Team!"` → `support-team`), and
//! `rfc3339`: a timestamp as a database prints it, as RFC 3339 in UTC
//! (`"2026-01-05 11:00:00+01"` → `2026-01-05T10:00:00Z`; a time without an offset is UTC), for
//! LoadRecord's timestamps, which are the backend's own text.
//!
//! Every variable at work, in a reply run and a scheduled run:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> protege::Result<()> {
//! use protege::{
//!     AppConfig, Chain, Context, Direction, Email, MailMessage, PersonaInfo, Responsibility, Trigger,
//!     resolvers,
//! };
//!
//! let mut persona = PersonaInfo::new("support");
//! persona.instructions = "Answer briefly.".into();
//! persona.vars.insert("team".into(), "Support Team!".into());
//! let inbound = MailMessage {
//!     id: 1,
//!     thread_id: 7,
//!     email: Email {
//!         message_id: "<m1@example.com>".into(),
//!         direction: Direction::Inbound,
//!         from: "Alice <alice@example.com>".into(),
//!         to: vec!["Acme Support <support@acme.test>".into()],
//!         cc: vec![],
//!         subject: "Refund".into(),
//!         sent_at: "2026-01-05T10:00:00Z".parse().unwrap(),
//!         text_body: Some("My parcel arrived damaged.".into()),
//!         html_body: None,
//!         html_text: None,
//!         in_reply_to: None,
//!         attachments: vec![],
//!         reply_headers: Default::default(),
//!     },
//! };
//! let reply = Context::builder(persona.clone(), AppConfig::new("."), Trigger::Message(inbound.into()))
//!     .now("2026-01-05T10:05:00Z".parse().unwrap())
//!     .correlation_id("run-42")
//!     .build();
//!
//! /// A record for `LoadRecord`: anything `Serialize`, SeaORM models included.
//! #[derive(serde::Serialize)]
//! struct Customer { name: &'static str, plan: &'static str }
//!
//! let chain = resolvers! {
//!     use LoadText("{{ persona.name }} | {{ persona.instructions }} | {{ persona.vars.team | slugify }}");
//!     use LoadText("{{ message.message_id }} | {{ message.from }} | {{ message.from_display }}");
//!     use LoadText("{{ message.to | join(', ') }} | [{{ message.cc | join(', ') }}] | Re: {{ message.subject }}");
//!     use LoadText("{{ message.sent_at }} | {{ message.body }} | thread {{ message.thread_id }}");
//!     use LoadText("{% if correlation_id %}[{{ correlation_id }}] {% endif %}run at {{ now }}");
//!     use LoadRecord(
//!         |_ctx| async { Ok::<_, String>(vec![Customer { name: "Alice Martin", plan: "pro" }]) },
//!         template = "{{ record.name }} ({{ record.plan }})",
//!     );
//! };
//! let texts: Vec<String> = chain.resolve(&reply).await?.iter().map(|m| m.content.text()).collect();
//! assert_eq!(texts, [
//!     "support | Answer briefly. | support-team",
//!     "<m1@example.com> | alice@example.com | Alice <alice@example.com>",
//!     "support@acme.test | [] | Re: Refund",
//!     "2026-01-05T10:00:00Z | My parcel arrived damaged. | thread 7",
//!     "[run-42] run at 2026-01-05T10:05:00Z",
//!     "Alice Martin (pro)",
//! ]);
//!
//! let digest = Responsibility {
//!     name: "daily-digest".into(),
//!     schedule: "0 8 * * *".into(),
//!     instructions: "Summarise yesterday's open threads.".into(),
//!     ..Responsibility::default()
//! };
//! let scheduled = Context::builder(persona, AppConfig::new("."), Trigger::Responsibility(digest))
//!     .now("2026-01-06T08:00:00Z".parse().unwrap())
//!     .build();
//! let chain = resolvers! {
//!     use LoadText("Task {{ responsibility.name }} ({{ responsibility.schedule }}): {{ responsibility.instructions }}");
//!     use LoadText("{% if message %}never printed{% endif %}{% if correlation_id %}[{{ correlation_id }}] {% endif %}run at {{ now }}");
//! };
//! let texts: Vec<String> = chain.resolve(&scheduled).await?.iter().map(|m| m.content.text()).collect();
//! assert_eq!(texts, [
//!     "Task daily-digest (0 8 * * *): Summarise yesterday's open threads.",
//!     "run at 2026-01-06T08:00:00Z",
//! ]);
//! # Ok(()) }
//! ```
//!
//! The names are checked when a persona file loads and when `resolvers!` compiles a literal
//! template: an unknown variable, an attribute the object does not have, a `persona.vars` key
//! missing from `[vars]` (TOML only), or printing `message`, `responsibility` or `record`
//! where it never exists is an error, with a suggestion for a near miss. Testing such a
//! variable (`{% if message %}...{% endif %}`) is allowed:
//!
//! ```compile_fail
//! let chain = protege::resolvers! {
//!     use LoadText("Reply to {{ mesage.from }}."); // did you mean `message`?
//! };
//! ```

// On docs.rs (`--cfg docsrs`, see `[package.metadata.docs.rs]`) each item behind a feature
// (`serve`, `agent`, a driver) is shown with the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod engine;
#[cfg(feature = "serve")]
pub mod serve;

// The engine of `protege-core`: payload, context, resolvers, chains, templates, the
// wire formats (`wire`) and the mail types of `protege-mail`, all at their own paths.
pub use protege_core::*;

/// The database: connecting and migrating ([`open`](db::open)), importing mail
/// ([`import_fixture_file`](db::import_fixture_file), [`import_eml_paths`](db::import_eml_paths)),
/// finding a message by its Message-ID ([`load_message`](db::load_message)) and the
/// messages of its thread ([`thread_messages`](db::thread_messages)), protege's SeaORM
/// entities ([`entities`](db::entities)), and SeaORM itself ([`db::sea_orm`]). The
/// same tables feed `ThreadHistory`, `ThreadSummary` and `LoadRecord`.
///
/// SQLite is the embedded default; PostgreSQL and MySQL/MariaDB run the same code.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> protege::Result<()> {
/// use protege::db;
/// let conn = db::open("sqlite::memory:").await?;
/// let fixture = db::parse_fixture(r#"{"threads":[]}"#)?;
/// let summary = db::import_fixture(&conn, &fixture).await?;
/// assert_eq!(summary.to_string(), "imported 0 threads, 0 messages (0 already present)");
/// # Ok(()) }
/// ```
///
/// Connections, the schema and every read are `protege-core`'s; importing mail and every
/// other write are `protege-store`'s.
pub mod db {
    pub use protege_core::db::*;
    pub use protege_store::*;
}

// TOML personas: the `protege-config` crate.
pub use protege_config as config;

// The front door: a persona folder and a database in, the finished request out.
pub use engine::{
    CacheReport, CacheReportRow, DiffOptions, DiffStatus, EmlImport, EmlImported, Engine,
    EngineBuilder, EngineError, EngineErrorKind, FirstChange, Format, JobInfo, MAX_DIFF_FILES,
    PersonaDiff, Resolution, ResolveInput, RunCacheReport, RunCacheRow, SUMMARY_MAX_BYTES,
    problem_summary,
};

/// Runs (§13 of the design): what [`Engine::start_run`], [`Engine::record_round`] and
/// [`Engine::run`] take and give. `Step` lives here rather than at the crate's root, where
/// [`Step`] is a resolver's step of a chain.
pub mod runs {
    pub use crate::engine::{
        Pending, PendingCall, PendingRound, RoundInput, RoundRecord, Run, RunInfo, RunRecord, Step,
        ToolResult,
    };
    pub use protege_core::db::{RunFormat, RunStatus};
    pub use protege_core::wire::{ModelResponse, Outcome, Usage};
}

/// The runtime of the agent (§17–§19 of the design): the worker that claims jobs and runs
/// them ([`Engine::agent`]), the providers, the tools, and the outbox's delivery over SMTP.
#[cfg(feature = "agent")]
pub mod agent {
    pub use crate::engine::{
        Agent, ApprovedCall, CallReport, DueSlot, Foreground, INBOX_LEASE, InboxPass, JOB_LEASE,
        JobReport, MAIL_MAX_BYTES, McpStatus, PersonaMcp, Refused, RoundReport,
    };
    pub use protege_agent::*;
}

/// The outbox (§18 of the design): a run's reply composed once ([`Engine::compose_reply`]),
/// stored before it leaves, approved when it must be, claimed for delivery.
pub mod outbox {
    pub use crate::engine::{
        Claimed, Composed, DEFAULT_LEASE, MAX_SUBJECT_CHARS, OutboxEntry, retry_after,
    };
    pub use protege_core::db::OutboxFilter;
    pub use protege_mail::{AutoSubmitted, Recipients, Reply, ReplyHeaders};
    pub use protege_store::outbox_state as state;
}
