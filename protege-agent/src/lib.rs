//! The runtime of protege's agent (§17–§19 of the design): for now the outbox's delivery
//! ([`Delivery`]), which claims queued replies, sends their stored bytes over SMTP and
//! records what the server answered.
//!
//! Applications depend on the `protege` crate, which re-exports this crate as
//! `protege::agent` behind its `agent` feature.

mod delivery;
mod smtp;

pub use delivery::{Delivery, LEASE, Pass, Personas};
pub use smtp::{Attempt, Outcome, send};
