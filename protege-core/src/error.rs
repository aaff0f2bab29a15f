//! The one error type of `protege-core`.

use std::borrow::Cow;
use std::fmt;

/// What went wrong, broadly; the [`Error`] carries the detail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A template failed to compile or to render.
    Template,
    /// A file named by a resolver does not exist.
    FileNotFound,
    /// A templated path left the app root.
    PathOutsideRoot,
    /// A path names a directory, FIFO, socket or device instead of a regular file.
    NotRegularFile,
    /// A file is larger than the cap for its kind.
    FileTooLarge,
    /// A template render ran out of fuel or wrote more than its output cap.
    TemplateBudget,
    /// Reading a file failed for another reason than absence.
    Io,
    /// A request broke a well-formedness rule (the tool-call pairing checked by
    /// [`Request::validate`](crate::Request::validate)).
    InvalidRequest,
    /// A resolver of a chain failed; the detail names it and its position.
    Resolver,
    /// The database failed or holds something unexpected.
    Database,
    /// A fixture is malformed; the detail names the JSON path.
    Fixture,
    /// A wire format cannot be produced from the request.
    Wire,
    /// A value given by the caller is out of range or malformed.
    InvalidInput,
    /// An error raised by user code (a custom resolver or loader closure).
    Custom,
}

/// The error of every fallible operation in `protege-core`.
///
/// Its `Display` is one lowercase sentence that names what failed and where, so it can
/// be shown to a user as is.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    detail: Cow<'static, str>,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    line: Option<usize>,
}

/// `Result` with [`Error`] as its error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Creates an error of `kind` with a human-readable detail.
    pub fn new(kind: ErrorKind, detail: impl Into<Cow<'static, str>>) -> Self {
        Self {
            kind,
            detail: detail.into(),
            source: None,
            line: None,
        }
    }

    /// Creates an error from user code, for custom resolvers and loader closures.
    pub fn custom(detail: impl fmt::Display) -> Self {
        Self::new(ErrorKind::Custom, detail.to_string())
    }

    /// Attaches the underlying cause.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// The broad category of the error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// For a template error: the 1-based line inside the template.
    pub fn template_line(&self) -> Option<usize> {
        self.line
    }

    pub(crate) fn set_line(&mut self, line: Option<usize>) {
        self.line = line;
    }

    /// The human-readable detail (the same text `Display` prints).
    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// Wraps the error of the resolver at 1-based `position` named `name`.
    pub(crate) fn in_resolver(self, name: &str, position: usize) -> Self {
        Self {
            kind: ErrorKind::Resolver,
            detail: format!("resolver {position} `{name}` failed: {}", self.detail).into(),
            line: None,
            source: Some(Box::new(self)),
        }
    }

    /// The error a resolver failed with, when this error wraps one.
    pub fn resolver_cause(&self) -> Option<&Error> {
        if self.kind != ErrorKind::Resolver {
            return None;
        }
        self.source
            .as_deref()
            .and_then(|s| s.downcast_ref::<Error>())
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

impl From<sea_orm::DbErr> for Error {
    fn from(err: sea_orm::DbErr) -> Self {
        Error::new(
            ErrorKind::Database,
            format!("database error: {}", crate::db::db_reason(&err)),
        )
        .with_source(err)
    }
}
