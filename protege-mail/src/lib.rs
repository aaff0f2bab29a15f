//! Mail as protege reads it, with no database and no async: the content of an email
//! ([`Email`], [`Attachment`], [`Direction`]), a stored message ([`MailMessage`]), how a
//! message is rendered for the model ([`Email::to_llm_text`], [`MailLimits`],
//! [`cap_text`]), HTML bodies as text ([`html_to_text`], [`html_to_text_counted`]), quoted
//! text stripped from a thread's bodies ([`strip_quoted`], [`PriorBodies`]), the fence
//! around a body ([`Fence`]) and the parsing of RFC 5322 and mbox mail.
//!
//! Applications depend on the `protege` crate, which re-exports these items at its root;
//! the examples are written through it. `protege-core` renders mail into requests and
//! reads it from the database; `protege-store` parses and imports it with the `eml`
//! module here.

mod compose;
mod dates;
#[doc(hidden)]
pub mod eml;
mod fence;
mod hex;
mod html_text;
mod invisible;
mod lookalike;
mod mail;
mod quoted;
mod reply_headers;

pub use compose::{
    AutoSubmitted, MAX_REFERENCES, Recipients, Reply, body_text, markdown_to_html,
    reply_recipients, reply_references, reply_subject,
};
pub use fence::Fence;
pub use html_text::{html_to_text, html_to_text_counted};
pub use mail::{
    Attachment, DEFAULT_ATTACHMENT_PARTS, DEFAULT_MESSAGE_TEXT_BYTES, Direction, Email, MailLimits,
    MailMessage, address_key, bare_address, cap_text, header_date, rfc3339_z,
};
pub use quoted::{PriorBodies, STRIP_RULES, Stripped, strip_quoted};
pub use reply_headers::{MAX_KEPT_AUTH_RESULTS, MAX_KEPT_REFERENCES, ReplyHeaders};

// Helpers of the sibling crates (`protege-core`, `protege-store`); not a public API.
#[doc(hidden)]
pub use dates::{FIRST_YEAR, LAST_YEAR, in_range};
#[doc(hidden)]
pub use hex::{hex, sha256_hex};
#[doc(hidden)]
pub use invisible::drop_invisible;
#[doc(hidden)]
pub use mail::{one_line, readable_of, without_nul};
