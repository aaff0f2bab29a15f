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
//! };
//! let ctx = Context::builder(PersonaInfo::new("support"), AppConfig::new("."),
//!     Trigger::Responsibility(responsibility)).build();
//! let request = chain.request(&ctx).await?;
//! assert_eq!(serde_json::to_string(&request).unwrap(),
//!     r#"{"messages":[{"role":"system","content":"You are support."}],"tools":[]}"#);
//! # Ok(()) }
//! ```

mod assemble;
mod cache;
mod chain;
mod context;
pub mod db;
mod error;
mod file;
mod html_text;
mod macros;
mod mail;
mod message;
mod options;
mod request;
mod resolver;
pub mod resolvers;
pub mod template;
pub mod tokens;
mod validate;
pub mod wire;

pub use assemble::{Assembled, StepReport, assemble};
pub use cache::{CacheHints, CacheMode, Conversation, cache_key};
pub use chain::{Chain, DynChain, ResolverTuple, StaticChain, Step};
pub use context::{
    AppConfig, Context, ContextBuilder, ModelConfig, PersonaInfo, PersonaLimits, Provider,
    Responsibility, Trigger,
};
pub use error::{Error, ErrorKind, Result};
pub use file::{LOAD_FILE_MAX_BYTES, read_regular_file};
pub use html_text::html_to_text;
pub use mail::{Attachment, Direction, MailMessage, bare_address, one_line, rfc3339_z};
pub use message::{Content, Message, Part, Request, Role, ToolCall, ToolDef, message};
pub use options::{OptionValue, Options};
/// Derives [`Options`] next to `serde::Deserialize`, so `resolvers!` sets the type's options
/// by their TOML names: see [`Options`].
pub use protege_macros::Options;
pub use request::{build_request, user_turn};
pub use resolver::{BoxFuture, BoxResolver, Resolved, Resolver};
pub use resolvers::{
    LoadFile, LoadRecord, LoadRecordFn, LoadText, ThreadHistory, ThreadSummary, Window,
};
pub use template::{Template, TemplateLimits};
pub use tokens::Tokenizer;

#[doc(hidden)]
pub use macros::__private;
