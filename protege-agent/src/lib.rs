//! The runtime of protege's agent (§17–§19 of the design):
//!
//! - **providers**: [`ProviderClient`] sends one round's request to Anthropic's Messages API
//!   or OpenAI's Chat Completions or Responses API, retries what a retry can mend (429, 529,
//!   5xx, a reset connection, a timeout; backoff with full jitter, `retry-after` honoured)
//!   and sorts the rest into [`ProviderError`]: `Retry` (back to the queue), `Poison` (the
//!   job fails) or `Pause` (the persona's jobs wait). Each call is a `gen_ai` client span
//!   with the provider's usage.
//! - **tools**: [`call_http`] makes one signed call of an `http` tool and turns its answer,
//!   failure included, into a [`ToolOutcome`] for the model; [`signature`] and [`verify`]
//!   are the signing scheme tools check; [`check_input`] checks a call's input against the
//!   tool's JSON Schema before any call. [`McpTools`] connects to the MCP server of an
//!   `mcp` entry (streamable HTTP or a child process), lists the tools it offers and calls
//!   them, reconnecting once when the connection was lost.
//! - **delivery**: [`Delivery`] claims the outbox's queued replies, sends their stored bytes
//!   over SMTP and records what the server answered.
//! - **inbox**: [`Imap`] is the IMAP client of `[inbox]`: it connects (TLS, STARTTLS, or
//!   plain text to a loopback server), lists and fetches a folder's messages by UID, marks
//!   them and waits for new mail with IDLE.
//! - **tests**: with the cargo feature `standin`, `standin::StandIn` is a local provider
//!   that answers from a script and records what it received, for this crate's tests and
//!   other crates'.
//!
//! Outgoing HTTP uses one [`http_client`]: rustls over ring (the crypto provider the SMTP
//! connection uses too), the operating system's certificate verifier, no redirects. Since
//! `reqwest` is then built without a crypto provider of its own, a program that builds other
//! `reqwest` clients (an OTLP exporter, tests) calls [`install_crypto_provider`] first.
//!
//! Applications depend on the `protege` crate, which re-exports this crate as
//! `protege::agent` behind its `agent` feature.

mod delivery;
mod http;
mod imap;
mod mcp;
mod provider;
mod retry;
mod smtp;
#[cfg(feature = "standin")]
pub mod standin;
mod tools;

pub use delivery::{Delivery, LEASE, Pass, Personas};
pub use http::{http_client, install_crypto_provider};
pub use imap::{COMMAND_TIMEOUT, Folder, Imap, ImapAccount, ImapError, Listed};
pub use mcp::{DESCRIPTION_CHARS, LeftOut, LeftOutReason, McpLoadError, McpTools, server_label};
pub use provider::{
    ERROR_BODY_BYTES, ProviderCall, ProviderClient, ProviderError, ProviderFormat, ProviderReply,
};
pub use smtp::{Attempt, Outcome, send};
pub use tools::{
    DEFAULT_RESULT_LIMIT, HttpCall, SIGNATURE_TOLERANCE, SignatureError, Signed, ToolOutcome,
    call_http, check_input, signature, verify, verify_headers,
};
