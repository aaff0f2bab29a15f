//! The SeaORM entities of the four tables: `email_threads`, `messages`, `attachments` and
//! `tool_uses`.
//!
//! Every table has an auto-increment `id`, so insertion order breaks ties everywhere.

pub mod attachment;
pub mod email_thread;
pub mod message;
pub mod tool_use;
