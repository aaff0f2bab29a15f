//! The write side of protege's database: importing mail from fixtures
//! ([`import_fixture_file`]) and RFC 5322 / mbox files ([`import_eml_paths`],
//! [`ingest_eml`]), threading it, every write of mail and of a thread's running summary
//! ([`store_summary`]), and the runs that answer it ([`insert_run`], [`record_round`]).
//!
//! Applications depend on the `protege` crate, whose `protege::db` module holds these items
//! next to `protege-core`'s reads, connections and migrations; the examples are written
//! through it.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> protege::Result<()> {
//! use protege::db;
//! let conn = db::open("sqlite::memory:").await?;
//! let fixture = db::parse_fixture(r#"{"threads":[]}"#)?;
//! let summary = db::import_fixture(&conn, &fixture).await?;
//! assert_eq!(summary.to_string(), "imported 0 threads, 0 messages (0 already present)");
//! # Ok(()) }
//! ```
//!
//! The crate by responsibility:
//!
//! - `fixture` and `eml`: importing mail (the parsing of RFC 5322 and mbox mail is
//!   `protege-mail`'s), and threading it;
//! - `store`: every write of mail, and storing a running summary;
//! - `forget`: erasing a correspondent, and `prune`: dropping old threads (§15), both
//!   through `erase`, the deletes of a set of messages with what hangs on them;
//! - `runs`: a run's row and each of its rounds (§13);
//! - `slots`: a responsibility first seen, and a slot fired with its job (§19);
//! - `inbox`: where the agent stands in each IMAP folder it reads, and what it refused (§19);
//! - `packet`: keeping each row under the server's packet limit on MySQL/MariaDB.

mod eml;
mod erase;
mod fixture;
mod forget;
mod inbox;
mod jobs;
mod outbox;
mod packet;
mod prune;
mod runs;
mod slots;
mod store;

pub use eml::{
    DEFAULT_MAX_ATTACHMENT_BYTES, EmlFailure, EmlOptions, EmlSummary, Ingested, StoredEml,
    Threading, import_eml_paths, ingest_eml, ingest_eml_batch,
};
pub use erase::{Removed, message_sha256};
pub use fixture::{
    ExportSummary, FIXTURE_SCHEMA, Fixture, FixtureMessage, FixtureThread, FixtureToolUse,
    ImportSummary, export_fixture, import_fixture, import_fixture_file, import_fixture_str,
    parse_fixture,
};
pub use forget::{Forgotten, forget, forget_key};
pub use inbox::{
    Rejected, begin_storing, claim_inbox, finish_sync, inbox_rejects, inbox_state,
    raise_highest_uid, reject_message, release_inbox, renew_inbox, reset_inbox,
};
pub use jobs::{
    AgentPersona, CapsOf, ClaimedJob, JobEnd, JobRule, NewJob, RELEASED, claim_job, decide_calls,
    end_job, pause_persona, renew_job, resume_paused, retry_failed_jobs, retry_job, set_job_run,
    take_job, wait_for_approval,
};
pub use outbox::{
    Change, NewReply, OPERATOR_HOLD, StoredReply, claim, drop_recipients, edit_reply, hold,
    leased_by, mark_failed, mark_sent, release_setting_holds, renew_lease, retry_after,
    state as outbox_state, store_reply, unclaim,
};
pub use prune::{MAX_DURATION_DAYS, Pruned, parse_duration, prune};
// The writes of runs: the engine of the `protege` crate (`Engine::start_run`,
// `Engine::record_round`) and the tests use them; an application goes through `Engine`.
#[doc(hidden)]
pub use runs::{
    NewRound, NewRun, RUN_ABANDONED, RUN_STARTED, RoundToolUse, RoundWrite, UsageSample,
    abandon_run, insert_run, message_id_of, message_key_of, persona_runs, record_pending,
    record_round, stop_run, usage_sample_stats, usage_samples,
};
pub use slots::{fire_slot, see_responsibility};
pub use store::{StoredSummary, store_summary};
