//! Loading a persona, stage 1 of 4: the file's text. A file that is not a regular file,
//! too large, unreadable or not UTF-8 is one diagnostic for the whole file; the next stage
//! is [`syntax`](crate::syntax).

use std::path::Path;

use crate::diagnostic::Diagnostic;

/// The most a persona file may hold: 1 MiB.
pub const PERSONA_FILE_MAX_BYTES: u64 = 1 << 20;

/// Reads the persona file at `path`: `Ok(None)` when it does not exist; a problem (not a
/// regular file, over [`PERSONA_FILE_MAX_BYTES`], unreadable, not UTF-8) is a diagnostic
/// for the whole file. A FIFO or device is never read, so reading never blocks.
pub(crate) fn read_source(path: &Path) -> Result<Option<String>, Diagnostic> {
    let shown = format!("`{}`", path.display());
    let bytes = protege_core::read_regular_file(path, &shown, PERSONA_FILE_MAX_BYTES)
        .map_err(|e| Diagnostic::whole_file(path, e.detail()))?;
    let Some(bytes) = bytes else {
        return Ok(None);
    };
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| Diagnostic::whole_file(path, "the persona file is not valid UTF-8"))
}
