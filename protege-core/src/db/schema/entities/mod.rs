//! The SeaORM entities of the tables: the four of the mail store, the addresses of its
//! messages (`message_addresses`) and their stripped bodies (`message_strips`),
//! `thread_summaries`, the runs of §13 (`runs`, `run_rounds`) and the outbox of §18
//! (`outbox`), the agent's jobs of §17 (`agent_jobs`), the fired slots of §19
//! (`responsibility_slots`) and when each responsibility was first seen
//! (`responsibilities_seen`), the IMAP folders read (`inbox_state`, `inbox_rejects`), and
//! what erasure keeps (`erased_messages`) and needs (`run_sources`).
//!
//! Every table has an auto-increment `id`, so insertion order breaks ties everywhere, except
//! `runs`, whose key is the run's text id (`run_` and a sortable 26-character ULID).

pub mod agent_job;
pub mod attachment;
pub mod email_thread;
pub mod erased_message;
pub mod inbox_reject;
pub mod inbox_state;
pub mod message;
pub mod message_address;
pub mod message_strip;
pub mod outbox;
pub mod responsibility_seen;
pub mod responsibility_slot;
pub mod run;
pub mod run_round;
pub mod run_source;
pub mod thread_summary;
pub mod tool_use;
