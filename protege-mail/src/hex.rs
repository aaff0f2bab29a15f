//! Lowercase hex, and the SHA-256 of bytes in it: the one encoding every crate of the
//! workspace writes digests, keys and nonces in.

use std::fmt::Write as _;

use sha2::{Digest, Sha256};

/// `bytes` as lowercase hex, two digits a byte.
///
/// ```
/// assert_eq!(protege_mail::hex(&[0x00, 0xab, 0x7f]), "00ab7f");
/// ```
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        // Writing to a `String` cannot fail.
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// The SHA-256 of `bytes` in lowercase hex (64 digits).
///
/// ```
/// assert_eq!(
///     protege_mail::sha256_hex(b"abc"),
///     "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
/// );
/// ```
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}
