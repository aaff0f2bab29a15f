//! The one error type of `protege-config`: problems outside a persona file's contents.

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
/// [`Diagnostics`](crate::Diagnostics) instead).
///
/// Its `Display` is one sentence that states the cause too (`cannot read the persona
/// folder `p`: permission denied`), so it has no `source()` to print a second time.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{detail}")]
pub struct Error {
    kind: ErrorKind,
    detail: String,
}

/// `Result` with [`Error`] as its error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn new(kind: ErrorKind, detail: String) -> Self {
        Self { kind, detail }
    }

    /// The broad category of the error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}
