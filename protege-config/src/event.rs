//! What a reload did to a persona set: one [`Event`] per persona added, replaced or
//! removed, or per file rejected.

use std::path::{Path, PathBuf};

use crate::diagnostic::Diagnostics;

/// What happened to the persona folder; `watch` prints one JSON line per event.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// A persona present when watching started.
    Loaded {
        /// The persona's name.
        persona: String,
        /// Its file.
        path: PathBuf,
    },
    /// A valid edit replaced a persona.
    Reloaded {
        /// The persona's name.
        persona: String,
        /// Its file.
        path: PathBuf,
    },
    /// A new file (or a file that became valid) added a persona.
    Added {
        /// The persona's name.
        persona: String,
        /// Its file.
        path: PathBuf,
    },
    /// A deleted file (or a renamed persona) removed a persona.
    Removed {
        /// The persona's name.
        persona: String,
        /// Its file.
        path: PathBuf,
    },
    /// An invalid file: the last good version, if any, stays live.
    Rejected {
        /// The file.
        path: PathBuf,
        /// Every problem of the file.
        diagnostics: Diagnostics,
    },
}

impl Event {
    /// The event as one JSON line (no newline): `{"event":"loaded","persona":NAME,"path":PATH}`,
    /// or for a rejection `{"event":"rejected","path":PATH,"error":TEXT}`, where `TEXT` is
    /// the `path:line:col: error: message` lines of its diagnostics.
    pub fn to_json_line(&self) -> String {
        let (kind, persona, path) = match self {
            Event::Loaded { persona, path } => ("loaded", persona, path),
            Event::Reloaded { persona, path } => ("reloaded", persona, path),
            Event::Added { persona, path } => ("added", persona, path),
            Event::Removed { persona, path } => ("removed", persona, path),
            Event::Rejected { path, .. } => {
                return serde_json::json!({
                    "event": "rejected",
                    "path": path.display().to_string(),
                    "error": self.error_text().unwrap_or_default(),
                })
                .to_string();
            }
        };
        serde_json::json!({
            "event": kind,
            "persona": persona,
            "path": path.display().to_string(),
        })
        .to_string()
    }

    /// For a rejection: the headlines of its diagnostics, one per line.
    pub fn error_text(&self) -> Option<String> {
        match self {
            Event::Rejected { diagnostics, .. } => Some(diagnostics.to_string()),
            _ => None,
        }
    }

    /// The persona the event is about (none for a rejection).
    pub fn persona(&self) -> Option<&str> {
        match self {
            Event::Loaded { persona, .. }
            | Event::Reloaded { persona, .. }
            | Event::Added { persona, .. }
            | Event::Removed { persona, .. } => Some(persona),
            Event::Rejected { .. } => None,
        }
    }

    /// The file the event is about.
    pub fn path(&self) -> &Path {
        match self {
            Event::Loaded { path, .. }
            | Event::Reloaded { path, .. }
            | Event::Added { path, .. }
            | Event::Removed { path, .. }
            | Event::Rejected { path, .. } => path,
        }
    }
}
