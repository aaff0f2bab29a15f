//! The one error type of `protege-core`.

use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

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
    /// What the caller gave clashes with what is stored (a Message-ID stored for another
    /// message).
    Conflict,
    /// An error raised by user code (a custom resolver or loader closure).
    Custom,
}

/// The error of every fallible operation in `protege-core`.
///
/// Its `Display` is one lowercase sentence that names what failed and where, so it can
/// be shown to a user as is. A cause that sentence already states (an I/O or driver
/// error, a failing resolver's own error) is not also its
/// [`source`](std::error::Error::source), so a printer of error chains (`anyhow`'s `{:#}`)
/// shows it once; a cause attached with [`with_source`](Error::with_source) is the source.
/// A clone shares the causes of the original.
#[derive(Debug, Clone, thiserror::Error)]
pub struct Error {
    kind: ErrorKind,
    detail: Cow<'static, str>,
    #[source]
    source: Option<Cause>,
    /// The template the error happened in, which `Display` names before the detail.
    template: Option<Arc<str>>,
    /// The 1-based line inside that template.
    line: Option<usize>,
    /// The error of the failed resolver, which the detail quotes.
    resolver: Option<Arc<Error>>,
    /// The database's error, which the detail quotes.
    database: Option<Arc<sea_orm::DbErr>>,
    /// Where the database's reason starts in the detail.
    reason_at: Option<usize>,
}

/// A cause attached with [`Error::with_source`], shared by the clones of the error.
///
/// Deliberately not an `Error` itself: `source()` then returns the caller's error, which
/// `downcast_ref` finds, rather than an `Arc` around it.
#[derive(Clone)]
struct Cause(Arc<dyn std::error::Error + Send + Sync + 'static>);

impl Deref for Cause {
    type Target = dyn std::error::Error + Send + Sync + 'static;

    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

impl fmt::Debug for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

/// `Result` with [`Error`] as its error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The start of the detail of an error raised by the database itself.
const DATABASE_ERROR: &str = "database error: ";

impl Error {
    /// Creates an error of `kind` with a human-readable detail.
    pub fn new(kind: ErrorKind, detail: impl Into<Cow<'static, str>>) -> Self {
        Self {
            kind,
            detail: detail.into(),
            source: None,
            template: None,
            line: None,
            resolver: None,
            database: None,
            reason_at: None,
        }
    }

    /// Creates an error from user code, for custom resolvers and loader closures.
    pub fn custom(detail: impl fmt::Display) -> Self {
        Self::new(ErrorKind::Custom, detail.to_string())
    }

    /// Attaches the underlying cause, which [`source`](std::error::Error::source) returns.
    ///
    /// The detail should then say what failed without repeating the cause's text
    /// (`cannot load the orders`, not `cannot load the orders: permission denied`), or
    /// a printer of error chains shows it twice.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Cause(Arc::new(source)));
        self
    }

    /// An error the database raised: `database error: REASON`, of kind
    /// [`Database`](ErrorKind::Database).
    pub(crate) fn database(reason: &str) -> Self {
        let mut error = Self::new(ErrorKind::Database, format!("{DATABASE_ERROR}{reason}"));
        error.reason_at = Some(DATABASE_ERROR.len());
        error
    }

    /// Keeps the database's error behind this one (its text is in the detail).
    pub(crate) fn with_db_err(mut self, err: sea_orm::DbErr) -> Self {
        self.database = Some(Arc::new(err));
        self
    }

    /// The same error with another detail, for context such as the file being imported;
    /// kind, causes and line are kept, and the new detail is the whole sentence.
    #[doc(hidden)]
    pub fn with_detail(mut self, detail: impl Into<Cow<'static, str>>) -> Self {
        self.detail = detail.into();
        self.template = None;
        self.reason_at = None;
        self
    }

    /// The broad category of the error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The same error located in the template `name`, at its 1-based `line` when known:
    /// `Display` then reads ``template `NAME` line N: DETAIL``.
    pub(crate) fn in_template(mut self, name: &str, line: Option<usize>) -> Self {
        self.template = Some(name.into());
        self.line = line;
        self
    }

    /// For a template error: the name of the template.
    pub fn template_name(&self) -> Option<&str> {
        self.template.as_deref()
    }

    /// For a template error: the 1-based line inside the template.
    pub fn template_line(&self) -> Option<usize> {
        self.line
    }

    /// The human-readable detail: what `Display` prints, less the template and line that
    /// it puts first for a template error ([`template_name`](Self::template_name),
    /// [`template_line`](Self::template_line)).
    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// The SeaORM error behind a database error (for structured checks such as
    /// [`DbErr::sql_err`](sea_orm::DbErr::sql_err)); its reason is already in the detail.
    pub fn db_err(&self) -> Option<&sea_orm::DbErr> {
        self.database.as_deref()
    }

    /// For an error built as `database error: REASON`: the reason.
    pub(crate) fn database_reason(&self) -> Option<&str> {
        self.reason_at.and_then(|at| self.detail.get(at..))
    }

    /// Wraps the error of the resolver at 1-based `position` named `name`.
    ///
    /// The new detail quotes this error's, so its source is this error's source.
    pub(crate) fn in_resolver(self, name: &str, position: usize) -> Self {
        Self {
            kind: ErrorKind::Resolver,
            detail: format!("resolver {position} `{name}` failed: {self}").into(),
            source: self.source.clone(),
            template: None,
            line: None,
            database: self.database.clone(),
            reason_at: None,
            resolver: Some(Arc::new(self)),
        }
    }

    /// The error a resolver failed with, when this error wraps one.
    pub fn resolver_cause(&self) -> Option<&Error> {
        self.resolver.as_deref()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.template, self.line) {
            (Some(name), Some(line)) => write!(f, "template `{name}` line {line}: ")?,
            (Some(name), None) => write!(f, "template `{name}`: ")?,
            (None, _) => {}
        }
        f.write_str(&self.detail)
    }
}

impl From<sea_orm::DbErr> for Error {
    fn from(err: sea_orm::DbErr) -> Self {
        Error::database(&crate::db::db_reason(&err)).with_db_err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AppConfig, Chain, Context, DynChain, LoadRecord, LoadText, PersonaInfo};
    use crate::{Responsibility, Trigger};

    /// The error as `anyhow` prints a chain (`{:#}`: every cause, joined by `: `), after
    /// checking that `cause` appears in it exactly once.
    fn printed(err: Error, cause: &str) -> String {
        let text = format!("{:#}", anyhow::Error::from(err));
        assert_eq!(text.matches(cause).count(), 1, "{cause:?} in {text:?}");
        text
    }

    fn ctx(root: &std::path::Path, db: Option<sea_orm::DatabaseConnection>) -> Context {
        let trigger = Trigger::Responsibility(Responsibility {
            name: "digest".into(),
            schedule: "0 8 * * *".into(),
            instructions: String::new(),
            ..Responsibility::default()
        });
        let mut builder =
            Context::builder(PersonaInfo::new("support"), AppConfig::new(root), trigger);
        if let Some(db) = db {
            builder = builder.db(db);
        }
        builder.build()
    }

    #[tokio::test]
    async fn a_database_error_prints_its_reason_once() {
        let dir = tempfile::tempdir().unwrap();
        let reason = "error returned from database: (code: 1) no such table: nope";
        // In memory through SeaORM, and a SQLite file through the SQLite C library.
        let file = format!("sqlite://{}", dir.path().join("p.db").display());
        for url in ["sqlite::memory:", file.as_str()] {
            let db = crate::db::open(url).await.unwrap();
            let chain = DynChain::new().with(LoadRecord::table("nope"));
            let err = chain.resolve(&ctx(dir.path(), Some(db))).await.unwrap_err();
            assert_eq!(
                printed(err.clone(), reason),
                format!("resolver 1 `LoadRecord` failed: cannot read table `nope`: {reason}"),
                "{url}"
            );
            assert_eq!(printed(err.clone(), reason), err.to_string());
        }
        let err = crate::db::connect_within(
            "sqlite:///nonexistent/protege/p.db?mode=ro",
            std::time::Duration::from_secs(5),
        )
        .await
        .unwrap_err();
        let reason = "error returned from database: (code: 14) unable to open database file";
        assert_eq!(
            printed(err.clone(), reason),
            format!(
                "cannot connect to database `sqlite:///nonexistent/protege/p.db?mode=ro`: {reason}"
            )
        );
        assert!(err.db_err().is_some());
    }

    #[tokio::test]
    async fn a_template_error_prints_its_reason_once() {
        let dir = tempfile::tempdir().unwrap();
        let chain = DynChain::new().with(LoadText::template("Hi {{ persona.nmae }}"));
        let err = chain.resolve(&ctx(dir.path(), None)).await.unwrap_err();
        let reason = "`persona.nmae` is undefined";
        assert_eq!(
            printed(err.clone(), reason),
            format!("resolver 1 `LoadText` failed: template `LoadText` line 1: {reason}")
        );
        assert_eq!(err.resolver_cause().unwrap().template_line(), Some(1));
    }

    #[test]
    fn an_attached_source_is_printed_after_the_detail_and_can_be_downcast() {
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "permission denied");
        let err = Error::custom("cannot load the orders")
            .with_source(io)
            .in_resolver("Orders", 2);
        let copy = err.clone();
        assert_eq!(
            printed(copy, "permission denied"),
            "resolver 2 `Orders` failed: cannot load the orders: permission denied"
        );
        let source = std::error::Error::source(&err).unwrap();
        assert_eq!(
            source.downcast_ref::<std::io::Error>().unwrap().kind(),
            std::io::ErrorKind::PermissionDenied
        );
        assert_eq!(
            err.resolver_cause().unwrap().to_string(),
            "cannot load the orders"
        );
    }
}
