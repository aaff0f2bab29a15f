//! Connecting: database URLs, the connect timeout, the first probe of a server, and
//! passwords kept out of every message (URLs and driver errors alike).

use std::time::Duration;

use sea_orm::{ConnectOptions, Database, DatabaseConnection};

use super::reason::{db_reason, sqlx_reason};
use crate::error::{Error, ErrorKind, Result};

/// The connect timeout of [`connect`] (the `protege` command's when `PROTEGE_CONNECT_TIMEOUT`
/// is not set).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a SQLite connection waits for another writer's lock before giving up.
pub const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The connect timeout written as `PROTEGE_CONNECT_TIMEOUT` or `--connect-timeout` is: a
/// number of seconds above 0 and at most 86400, fractions allowed; blank means
/// [`DEFAULT_CONNECT_TIMEOUT`].
///
/// Any other value is an error of kind [`InvalidInput`](ErrorKind::InvalidInput) naming the
/// setting as `name` gives it (the variable or the flag the value came from).
pub fn parse_connect_timeout(text: &str, name: &str) -> Result<Duration> {
    if text.trim().is_empty() {
        return Ok(DEFAULT_CONNECT_TIMEOUT);
    }
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 86_400.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "invalid `{name}` `{text}`: expected a number of seconds greater than 0 and at most 86400"
                ),
            )
        })
}

/// Connects to `url`: `sqlite://PATH` (the file is created if missing), `sqlite::memory:`,
/// `postgres://` / `postgresql://`, or `mysql://` / `mariadb://`.
///
/// Every attempt, including the first probe of a server, is bounded by
/// [`DEFAULT_CONNECT_TIMEOUT`] ([`connect_within`] sets another): a server that accepts the TCP connection but never answers is an
/// error within it. SQLite connections wait up to [`SQLITE_BUSY_TIMEOUT`] for another
/// writer. An unreachable server or unopenable file is an error of kind
/// [`Database`](ErrorKind::Database) naming the URL without its password.
///
/// A SQLite database file is written in WAL mode (`journal_mode = WAL`, which the file
/// keeps) with `synchronous = NORMAL`, unless the URL opens it read-only: readers never
/// wait for a writer nor a writer for readers, so `serve` resolves while mail is imported
/// and runs are recorded, and a commit appends to the WAL without a sync of its own (the
/// WAL is synced at each checkpoint). A commit survives the process being killed at any
/// point; a power cut or an operating-system crash can lose the last commits before a
/// checkpoint, never the file's consistency. Copy a file in use with SQLite's `.backup` or
/// `VACUUM INTO`: the `-wal` file beside it holds the latest commits until a checkpoint.
pub async fn connect(url: &str) -> Result<DatabaseConnection> {
    connect_within(url, DEFAULT_CONNECT_TIMEOUT).await
}

/// [`connect`] with another connect timeout.
pub async fn connect_within(url: &str, timeout: Duration) -> Result<DatabaseConnection> {
    let shown = redact_url(url);
    let url = if let Some(rest) = url.strip_prefix("mariadb://") {
        format!("mysql://{rest}")
    } else if url.starts_with("sqlite:")
        || url.starts_with("postgres://")
        || url.starts_with("postgresql://")
        || url.starts_with("mysql://")
    {
        url.to_owned()
    } else {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "unsupported database URL `{shown}`: expected `sqlite://PATH`, `sqlite::memory:`, `postgres://...` or `mysql://...`"
            ),
        ));
    };
    if let Some(feature) = missing_driver(&url) {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "database URL `{shown}` needs protege's cargo feature `{feature}`, which this build leaves out"
            ),
        ));
    }
    let cannot = |reason: String| {
        Error::new(
            ErrorKind::Database,
            format!(
                "cannot connect to database `{shown}`: {}",
                redact_text(&reason, url.as_str())
            ),
        )
    };
    let timed_out = || cannot(format!("no answer within {}", seconds(timeout)));
    // One direct attempt first: a pool retries a refused connection until its acquire
    // timeout, while an unreachable server should be reported at once.
    match tokio::time::timeout(timeout, probe(&url)).await {
        Err(_) => return Err(timed_out()),
        Ok(Err(e)) => {
            let reason = sqlx_reason(&e);
            let err = sea_orm::DbErr::Conn(sea_orm::RuntimeErr::SqlxError(e.into()));
            return Err(cannot(reason).with_db_err(err));
        }
        Ok(Ok(())) => {}
    }
    let mut options = ConnectOptions::new(url.clone());
    options
        .sqlx_logging(false)
        .connect_timeout(timeout)
        .acquire_timeout(timeout)
        // Pinged before every use (the driver's default), a round trip per read. Pinging
        // only connections idle for 500 ms or more (HikariCP's rule) answered 7% more
        // PostgreSQL resolves at 8 connections, but a connection lost a moment after its last
        // use (the server restarted, a proxy or the network dropped it) then failed the
        // request it carried: one failed request per pooled connection instead of none.
        .test_before_acquire(true);
    #[cfg(feature = "sqlite")]
    {
        // A `mode=` of the URL says itself whether the file is created (`rwc`) or not.
        let create = url.starts_with("sqlite:") && !url.contains("mode=");
        // A file written by this connection: WAL, see `connect`.
        let wal = url.starts_with("sqlite:")
            && !url.contains(":memory:")
            && !url.contains("mode=memory")
            && !url.contains("mode=ro");
        options.map_sqlx_sqlite_opts(move |o| {
            use sea_orm::sqlx::sqlite::{SqliteJournalMode, SqliteSynchronous};
            let o = if create { o.create_if_missing(true) } else { o };
            let o = if wal {
                o.journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Normal)
            } else {
                o
            };
            o.busy_timeout(SQLITE_BUSY_TIMEOUT)
        });
    }
    match tokio::time::timeout(timeout, Database::connect(options)).await {
        Err(_) => Err(timed_out()),
        Ok(Err(e)) => Err(cannot(db_reason(&e)).with_db_err(e)),
        Ok(Ok(db)) => Ok(db),
    }
}

/// A duration in whole or fractional seconds: `1 s`, `2.5 s`.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{s} s")
    }
}

/// The cargo feature the driver of `url` (a supported scheme) needs, when this build
/// leaves it out.
fn missing_driver(url: &str) -> Option<&'static str> {
    if url.starts_with("sqlite:") {
        (!cfg!(feature = "sqlite")).then_some("sqlite")
    } else if url.starts_with("postgres") {
        (!cfg!(feature = "postgres")).then_some("postgres")
    } else {
        (!cfg!(feature = "mysql")).then_some("mysql")
    }
}

/// Opens and closes one connection to a server URL (SQLite files need no probe).
async fn probe(url: &str) -> std::result::Result<(), sea_orm::sqlx::Error> {
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    use sea_orm::sqlx::{ConnectOptions as _, Connection as _};
    #[cfg(feature = "postgres")]
    if url.starts_with("postgres") {
        let options: sea_orm::sqlx::postgres::PgConnectOptions = url.parse()?;
        options.connect().await?.close().await?;
    }
    #[cfg(feature = "mysql")]
    if url.starts_with("mysql") {
        let options: sea_orm::sqlx::mysql::MySqlConnectOptions = url.parse()?;
        options.connect().await?.close().await?;
    }
    let _ = url;
    Ok(())
}

/// Connects to `url` and applies pending migrations: what the CLI does on first use of
/// a database.
pub async fn open(url: &str) -> Result<DatabaseConnection> {
    let db = connect(url).await?;
    super::migrate(&db).await?;
    Ok(db)
}

/// Query parameters whose value is a secret, compared case-insensitively.
const SECRET_PARAMS: [&str; 4] = ["password", "pass", "pwd", "sslpassword"];

/// The URL with its secrets replaced by `***`: the password of `user:password@` and the
/// values of the query parameters `password`, `pass`, `pwd` and `sslpassword`.
///
/// ```
/// use protege::db::redact_url;
/// assert_eq!(
///     redact_url("postgres://app:s3cret@db.test/prod?sslmode=require&sslpassword=k"),
///     "postgres://app:***@db.test/prod?sslmode=require&sslpassword=***"
/// );
/// ```
pub fn redact_url(url: &str) -> String {
    let (base, query) = match url.find('?') {
        Some(q) => (&url[..q], Some(&url[q + 1..])),
        None => (url, None),
    };
    let mut out = redact_userinfo(base);
    if let Some(query) = query {
        out.push('?');
        let (query, fragment) = match query.find('#') {
            Some(h) => (&query[..h], Some(&query[h..])),
            None => (query, None),
        };
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((name, _)) if is_secret_param(name) => format!("{name}=***"),
                _ => pair.to_owned(),
            })
            .collect();
        out.push_str(&pairs.join("&"));
        out.push_str(fragment.unwrap_or(""));
    }
    out
}

fn is_secret_param(name: &str) -> bool {
    SECRET_PARAMS.iter().any(|p| p.eq_ignore_ascii_case(name))
}

/// `user:password@` of a URL without query shown as `user:***@`.
fn redact_userinfo(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let Some(at) = authority.rfind('@') else {
        return url.to_owned();
    };
    let userinfo = &authority[..at];
    match userinfo.find(':') {
        Some(colon) => format!(
            "{}{}:***{}",
            &url[..scheme_end + 3],
            &userinfo[..colon],
            &rest[at..]
        ),
        None => url.to_owned(),
    }
}

/// The secrets of `url` (its password and secret query values, raw and percent-decoded).
fn secrets(url: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    if let Some(scheme_end) = base.find("://") {
        let rest = &base[scheme_end + 3..];
        let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
        if let Some(at) = authority.rfind('@')
            && let Some((_, password)) = authority[..at].split_once(':')
        {
            out.push(password.to_owned());
        }
    }
    for pair in query.split(['&', '#']) {
        if let Some((name, value)) = pair.split_once('=')
            && is_secret_param(name)
        {
            out.push(value.to_owned());
        }
    }
    let decoded: Vec<String> = out.iter().map(|s| percent_decode(s)).collect();
    out.extend(decoded);
    // Very short values would blank out unrelated text; drivers do not echo them anyway.
    out.retain(|s| s.chars().count() >= 3);
    out.sort_by_key(|s| std::cmp::Reverse(s.len()));
    out.dedup();
    out
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `text` with every secret of `url` replaced by `***` (the URL itself shown redacted):
/// for messages that may quote a driver's words.
pub fn redact_text(text: &str, url: &str) -> String {
    let mut out = if url.is_empty() {
        text.to_owned()
    } else {
        text.replace(url, &redact_url(url))
    };
    for secret in secrets(url) {
        out = out.replace(&secret, "***");
    }
    out
}
