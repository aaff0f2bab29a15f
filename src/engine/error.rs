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
    /// The database could not be reached or failed, also inside a resolver (`LoadRecord`,
    /// `ThreadHistory`).
    Unavailable,
    /// The persona folder could not be loaded or watched.
    Config,
    /// The input clashes with what is stored: a Message-ID already stored for another
    /// message, a round of a run recorded with another response.
    Conflict,
    /// A value given is over its cap: a tool result over `[limits] tool_result_bytes`.
    TooLarge,
}

/// An error of the engine: one sentence and its kind; when it reports an error of the
/// engine's libraries, that error too ([`core_error`](Self::core_error),
/// [`config_error`](Self::config_error)), for a caller that needs its finer kind (a template
/// error against a missing file, say).
///
/// Its [`source`](std::error::Error::source) is the library error's own source, not the
/// library error itself, whose text the sentence already holds: a printer of error chains
/// (`anyhow`'s `{:#}`) shows it once. Two errors are equal when their kinds and sentences
/// are.
#[derive(Debug, Clone)]
pub struct EngineError {
    kind: EngineErrorKind,
    message: String,
    /// Boxed: most errors carry none, and a `Result` of the engine stays small.
    cause: Option<Box<Cause>>,
}

/// The library error an [`EngineError`] reports.
#[derive(Debug, Clone)]
enum Cause {
    Core(protege_core::Error),
    Config(protege_config::Error),
}

impl EngineError {
    /// An error of `kind` saying `message`.
    pub(crate) fn new(kind: EngineErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            cause: None,
        }
    }

    /// The same error, said of the persona `name` loaded from `path` (a run-time failure of
    /// one of its resolvers).
    pub(crate) fn in_persona(self, name: &str, path: &std::path::Path) -> Self {
        Self {
            message: format!("persona `{name}` (`{}`): {}", path.display(), self.message),
            ..self
        }
    }

    /// The same error, of another kind.
    pub(crate) fn with_kind(self, kind: EngineErrorKind) -> Self {
        Self { kind, ..self }
    }

    /// What kind of error this is.
    pub fn kind(&self) -> EngineErrorKind {
        self.kind
    }

    /// The engine's error this one reports, if any: its [`kind`](protege_core::Error::kind)
    /// tells a template error, a missing file, a path outside the root or a database
    /// failure apart.
    pub fn core_error(&self) -> Option<&protege_core::Error> {
        match self.cause.as_deref() {
            Some(Cause::Core(e)) => Some(e),
            _ => None,
        }
    }

    /// The persona folder's error this one reports, if any.
    pub fn config_error(&self) -> Option<&protege_config::Error> {
        match self.cause.as_deref() {
            Some(Cause::Config(e)) => Some(e),
            _ => None,
        }
    }
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EngineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self.cause.as_deref() {
            Some(Cause::Core(e)) => e.source(),
            Some(Cause::Config(e)) => e.source(),
            None => None,
        }
    }
}

impl PartialEq for EngineError {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.message == other.message
    }
}

impl Eq for EngineError {}

impl From<protege_core::Error> for EngineError {
    fn from(e: protege_core::Error) -> Self {
        // A failed resolver keeps the kind of the error it failed with: a database failure
        // inside `LoadRecord` or `ThreadHistory` is the database's, not the input's.
        let mut cause = &e;
        while let Some(inner) = cause.resolver_cause() {
            cause = inner;
        }
        let kind = match cause.kind() {
            protege_core::ErrorKind::Database => EngineErrorKind::Unavailable,
            _ => EngineErrorKind::InvalidInput,
        };
        Self {
            kind,
            message: e.to_string(),
            cause: Some(Box::new(Cause::Core(e))),
        }
    }
}

impl From<protege_config::Error> for EngineError {
    fn from(e: protege_config::Error) -> Self {
        Self {
            kind: EngineErrorKind::Config,
            message: e.to_string(),
            cause: Some(Box::new(Cause::Config(e))),
        }
    }
}
