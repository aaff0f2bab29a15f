//! The protege engine: what a language model sees before it answers an email.
//!
//! A persona declares ordered chains of [`Resolver`]s; each looks at a read-only
//! [`Context`] and contributes messages; [`Chain::request`] runs a chain, appends the
//! trailing user turn and the persona's tools, and checks the result with
//! [`Request::validate`].
//!
//! Applications depend on the `protege` crate, which re-exports this one; the examples are
//! written through it.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> protege::Result<()> {
//! use protege::{AppConfig, Chain, Context, DynChain, LoadText, PersonaInfo, Responsibility, Trigger};
//! let chain = DynChain::new().with(LoadText::template("You are {{ persona.name }}."));
//! let responsibility = Responsibility {
//!     name: "digest".into(), schedule: "0 8 * * *".into(), instructions: "Sum up.".into(),
//!     ..Responsibility::default()
//! };
//! let ctx = Context::builder(PersonaInfo::new("support"), AppConfig::new("."),
//!     Trigger::Responsibility(responsibility)).build();
//! let request = chain.request(&ctx).await?;
//! assert_eq!(serde_json::to_string(&request).unwrap(),
//!     r#"{"messages":[{"role":"system","content":"You are support."}],"tools":[]}"#);
//! # Ok(()) }
//! ```
//!
//! # What is where
//!
//! - the payload: [`Message`], [`Content`], [`Part`], [`Request`] and the [`message`]
//!   constructor;
//! - a run's input: [`Context`] (built with [`Context::builder`]), the persona
//!   ([`PersonaInfo`]), the application ([`AppConfig`]) and the [`Trigger`], a stored
//!   [`MailMessage`] (an [`Email`] with its database ids) or a scheduled
//!   [`Responsibility`];
//! - resolvers and chains: the [`Resolver`] trait, [`BoxResolver`] for chains built at run
//!   time ([`DynChain`]), [`StaticChain`] for the ones [`resolvers!`] builds, and
//!   [`assemble`] for a finished request with a report per resolver;
//! - the built-in resolvers: [`LoadText`], [`LoadFile`], [`LoadRecord`], [`ThreadHistory`],
//!   [`ThreadSummary`], [`CorrespondentHistory`] and [`OpenThreads`];
//! - when a responsibility is due: [`Schedule`] and its [`Slot`]s;
//! - templates ([`Template`]) and token counts ([`Tokenizer`], [`Calibration`]);
//! - [`db`]: connecting, migrating and reading mail back (importing it is `protege-store`'s);
//! - [`wire`]: a request as an OpenAI or Anthropic request body, and a provider's answer
//!   back as a [`wire::ModelResponse`];
//! - one error type: [`Error`] with its [`ErrorKind`].

#[cfg(not(any(feature = "sqlite", feature = "postgres", feature = "mysql")))]
compile_error!(
    "protege needs a database driver: enable at least one of the features `sqlite`, `postgres` and `mysql`"
);

mod agent_config;
mod assemble;
mod cache;
mod calibration;
mod chain;
mod context;
pub mod db;
mod error;
mod fault;
mod file;
mod limits;
mod macros;
mod mail;
mod message;
mod options;
mod pricing;
mod render;
mod request;
mod resolver;
mod resolvers;
mod schedule;
mod source;
mod template;
mod tokens;
mod validate;
pub mod wire;

// The payload: messages and the request they make.
pub use message::{Content, Message, Part, Request, Role, ToolCall, ToolDef, message};
pub use request::{attachment_part, build_request, is_attachment_part, user_turn};

// A run's input.
pub use agent_config::{
    AfterPerson, Approval, BuiltinTool, CatchUp, DEFAULT_ATTEMPT_TIMEOUT, DEFAULT_GIVE_UP_AFTER,
    DEFAULT_INBOX_POLL, DEFAULT_JOB_GIVE_UP_AFTER, DEFAULT_MAX_AGE, DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_CATCH_UP, DEFAULT_MAX_CC, DEFAULT_MAX_REPLIES_PER_CORRESPONDENT_PER_DAY,
    DEFAULT_MAX_REPLIES_PER_DAY, DEFAULT_MAX_REPLIES_PER_THREAD_PER_DAY, DEFAULT_MODEL_TIMEOUT,
    DEFAULT_PAUSE, DEFAULT_PROVIDER_ATTEMPTS, DEFAULT_TOOL_TIMEOUT, HttpTool, InboxAfter,
    McpServer, McpTool, PersonaAgent, PersonaInbox, PersonaOutbox, PersonaTool,
    READ_ATTACHMENT_DESCRIPTION, ReplyCaps, ReplyMode, SmtpServer, TlsMode, ToolRunner,
    Unauthenticated, glob_matches, read_attachment_id,
};
pub use context::{
    AppConfig, Context, ContextBuilder, DEFAULT_MAX_ROUNDS, DEFAULT_TOOL_RESULT_BYTES, MailRender,
    MailStats, ModelConfig, OpenaiApi, PersonaInfo, PersonaLimits, PersonaMail, Provider, Quoted,
    Responsibility, Trigger,
};
pub use protege_mail::{
    Attachment, DEFAULT_ATTACHMENT_PARTS, DEFAULT_MESSAGE_TEXT_BYTES, Direction, Email, Fence,
    MailLimits, MailMessage, PriorBodies, Stripped, bare_address, cap_text, one_line, rfc3339_z,
    strip_quoted,
};

// When responsibilities are due.
/// The IANA time zones of responsibilities (`chrono-tz`), re-exported so an application
/// names one with the same version.
pub use chrono_tz::Tz;
pub use schedule::{Due, LOCAL_TIME_FORMAT, ON_TIME, Schedule, Slot, parse_cron};

// Resolvers, chains and the finished request.
pub use assemble::{Assembled, Step, StepReport};
pub use chain::{Chain, DynChain, ResolverTuple, StaticChain, assemble};
pub use resolver::{BoxFuture, BoxResolver, Resolved, Resolver};
pub use source::{Source, describe as describe_sources};

// The built-in resolvers, their option types and how a persona file's options build them.
pub use resolvers::*;

// Options of a resolver, set by name from TOML and from `resolvers!`.
pub use options::{OptionValue, Options};
/// Derives [`Options`] next to `serde::Deserialize`, so `resolvers!` sets the type's options
/// by their TOML names: see [`Options`].
pub use protege_macros::Options;

// Prompt caching: the markers of wire bodies.
pub use cache::{CacheHints, CacheMode, CacheTtl, Conversation, TTL_GAPS, cache_key, hour_pays};
pub use pricing::{PRICE_KEYS, PriceOverrides, Prices, min_cacheable_tokens};

// Templates, token counts, files and mail text.
pub use calibration::{CALIBRATION_MIN_RUNS, Calibration, CalibrationFit};
pub use file::{LOAD_FILE_MAX_BYTES, read_regular_file};
pub use limits::TemplateLimits;
pub use protege_mail::{html_to_text, html_to_text_counted};
pub use template::Template;
pub use tokens::Tokenizer;

// Errors.
pub use error::{Error, ErrorKind, Result};

// The points where a test build stops the process.
pub use fault::{FAULT_ENV, fault};

// Paths the `resolvers!` and `Options` expansions name; not a public API.
#[doc(hidden)]
pub use macros::__private;
