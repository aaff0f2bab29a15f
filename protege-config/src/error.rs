//! The one error type of `protege-config`: problems outside a persona file's contents.

use std::fmt;

/// What went wrong, broadly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The persona folder cannot be read.
    Io,
    /// The folder cannot be watched.
    Watch,
}

/// An error of `protege-config` (invalid persona files are reported as
/// [`Diagnostic`](crate::Diagnostic)s instead).
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    detail: String,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

/// `Result` with [`Error`] as its error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn new(
        kind: ErrorKind,
        detail: String,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            kind,
            detail,
            source: Some(Box::new(source)),
        }
    }

    /// The broad category of the error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|s| s as _)
    }
}
