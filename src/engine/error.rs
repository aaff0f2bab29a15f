//! The error of [`Engine`](crate::Engine) calls, with a kind a caller can map to an exit
//! code or an HTTP status.

/// What went wrong, coarsely: the HTTP service maps each kind to a status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EngineErrorKind {
    /// The input itself is malformed: both or neither of `message_id`/`responsibility`,
    /// an empty model name (the command line's usage errors).
    BadRequest,
    /// An unknown persona, message or responsibility.
    NotFound,
    /// The input is well-formed but cannot be resolved: a resolver failed (missing file,
    /// template error, path outside the root), no model for a wire format, an outbound
    /// message as trigger.
    InvalidInput,
    /// The database could not be reached or failed.
    Unavailable,
    /// The persona folder could not be loaded or watched.
    Config,
}

/// An error of the engine: one sentence and its kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct EngineError {
    kind: EngineErrorKind,
    message: String,
}

impl EngineError {
    /// An error of `kind` saying `message`.
    pub(crate) fn new(kind: EngineErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// The same error, said of the persona `name` loaded from `path` (a run-time failure of
    /// one of its resolvers).
    pub(crate) fn in_persona(self, name: &str, path: &std::path::Path) -> Self {
        Self {
            kind: self.kind,
            message: format!("persona `{name}` (`{}`): {}", path.display(), self.message),
        }
    }

    /// What kind of error this is.
    pub fn kind(&self) -> EngineErrorKind {
        self.kind
    }
}

impl From<protege_core::Error> for EngineError {
    fn from(e: protege_core::Error) -> Self {
        let kind = match e.kind() {
            protege_core::ErrorKind::Database => EngineErrorKind::Unavailable,
            _ => EngineErrorKind::InvalidInput,
        };
        EngineError::new(kind, e.to_string())
    }
}

impl From<protege_config::Error> for EngineError {
    fn from(e: protege_config::Error) -> Self {
        EngineError::new(EngineErrorKind::Config, e.to_string())
    }
}
