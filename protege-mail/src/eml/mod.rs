//! RFC 5322 mail before it is stored: one message parsed into an [`Email`](crate::Email)
//! (`parse`), mbox files split while streaming (`mbox`) and the direction of a message
//! decided from its headers (`direction`). The import that drives them, threads the
//! messages and writes them is `protege-store`'s.

pub mod direction;
pub mod gate;
pub mod mbox;
pub mod parse;

/// The `mail-parser` parser that [`parse::date_parser`] builds, named so an importer
/// keeps one without depending on `mail-parser` itself.
pub use mail_parser::MessageParser;

/// The default attachment cap of an import (`EmlOptions::max_attachment_bytes`): 25 MiB.
pub const DEFAULT_MAX_ATTACHMENT_BYTES: u64 = 25 << 20;
