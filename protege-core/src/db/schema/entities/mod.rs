//! The SeaORM entities of the tables: the four of the mail store and `thread_summaries`.
//!
//! Every table has an auto-increment `id`, so insertion order breaks ties everywhere.

pub mod attachment;
pub mod email_thread;
pub mod message;
pub mod thread_summary;
pub mod tool_use;
