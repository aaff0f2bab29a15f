//! Message-IDs for the mail a persona sends.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use protege_config::Persona;

use super::Engine;

/// The domain of a persona without addresses.
const NO_DOMAIN: &str = "protege.invalid";

impl Engine {
    /// A new Message-ID for mail `persona` sends: `<32 hex digits@domain>`, the digits 128
    /// random bits from the operating system, the domain that of the persona's first
    /// address (`protege.invalid` when it has none).
    ///
    /// A Message-ID belongs to the message stored first (see `SECURITY.md`): a stranger
    /// who can predict the id of the agent's next reply can store a message of his own
    /// under it first. Give every outbound reply an id from here, not one derived from a
    /// counter, a time or the message it answers.
    pub fn new_message_id(persona: &Persona) -> String {
        let domain = persona
            .info
            .addresses
            .first()
            .map(|a| protege_core::bare_address(a))
            .and_then(|a| a.rsplit_once('@'))
            .map(|(_, domain)| domain.trim())
            .filter(|domain| !domain.is_empty())
            .unwrap_or(NO_DOMAIN);
        format!("<{:032x}@{domain}>", random_128())
    }
}

/// 128 random bits from the operating system.
pub(super) fn random_128() -> u128 {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_ok() {
        return u128::from_le_bytes(bytes);
    }
    // The operating system's source failed (not seen on supported systems): the process's
    // randomly keyed hasher over the time and a counter, still unguessable from outside.
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let state = std::collections::hash_map::RandomState::new();
    let mut out = 0u128;
    for half in 0..2u8 {
        let mut hasher = state.build_hasher();
        hasher.write_u128(nanos);
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        hasher.write_u8(half);
        out = (out << 64) | u128::from(hasher.finish());
    }
    out
}
