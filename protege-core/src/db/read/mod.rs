//! Every read of protege's tables.
//!
//! - `lookup`: a message by its Message-ID (the trigger of a reply run) and the messages of
//!   a thread;
//! - `history`: the prior turns behind `ThreadHistory`;
//! - `correspondents`: a correspondent's earlier threads behind `CorrespondentHistory`;
//! - `summary`: the running summary that applies to a reply run;
//! - `open_threads`: a persona's threads waiting for an answer, behind `OpenThreads`;
//! - `records`: `LoadRecord`'s rows of any table, as JSON;
//! - `runs`: a run and its rounds;
//! - `slots`: when a responsibility was first seen, and its newest slot fired;
//! - `rows`: how a row of protege's tables becomes a value, whichever driver read it.
//!
//! Each read is written once, over the calls of [`crate::db::session`], which chooses the
//! driver that runs its statements.

pub(crate) mod correspondents;
pub(crate) mod history;
pub(crate) mod jobs;
mod lookup;
pub(crate) mod open_threads;
mod outbox;
pub(crate) mod records;
pub(crate) mod rows;
mod runs;
mod slots;
pub(crate) mod summary;

pub use slots::{first_seen, newest_slot};

pub use lookup::{
    AttachmentListing, MessageListing, ThreadListing, list_thread_messages, list_threads,
    load_message, load_message_by_row, newest_inbound_message, recent_inbound_to,
    thread_inbound_messages, thread_message_ids, thread_message_ids_of, thread_messages,
};
pub use outbox::{
    OutboxFilter, claimable_outbox, first_contacts, last_delivery, list_outbox, load_outbox,
    may_claim, outbox_of_run, outbox_state,
};
pub use runs::{
    call_id_taken_in_thread, load_rounds, load_run, persona_addressed, replayed_tool_use,
    runs_of_message,
};
