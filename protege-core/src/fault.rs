//! Named points where a test stops the process (§19): with the cargo feature
//! `fault-injection` in a debug build, [`fault`] aborts the process at once when
//! `PROTEGE_FAULT` names the point, as a kill would, with no destructor run and nothing
//! flushed. Without the feature, and in every release build, it does nothing and costs
//! nothing. `protege-cli` enables the feature for its own tests (a dev-dependency), so the
//! test build of the `protege` binary has the points and `cargo build --release` never does.
//!
//! The points: `outbox.after_claim` (a reply claimed for delivery, before the SMTP
//! exchange), `outbox.after_250` (the server accepted it, before `sent` is recorded),
//! `agent.after_response` (a round's response stored, before its tools run),
//! `agent.after_tools` (a round's results recorded, before the next request),
//! `inbox.after_store` (a fetched message stored, before it is marked on the server),
//! `inbox.after_batch` (a first sync's chunk of older mail stored, before the sync ends).

/// The variable naming the point to stop at.
pub const FAULT_ENV: &str = "PROTEGE_FAULT";

/// Aborts the process when `PROTEGE_FAULT` is `point` (with the `fault-injection` feature).
#[inline]
pub fn fault(point: &str) {
    #[cfg(all(feature = "fault-injection", debug_assertions))]
    if std::env::var(FAULT_ENV).is_ok_and(|p| p == point) {
        eprintln!("fault injected at {point}: aborting");
        std::process::abort();
    }
    #[cfg(not(all(feature = "fault-injection", debug_assertions)))]
    let _ = point;
}
