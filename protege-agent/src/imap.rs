//! The IMAP client of the agent's inbox (§19), over `async-imap` with rustls: connect (TLS
//! from the first byte, STARTTLS, or plain text to a loopback server), log in, select a
//! folder, list and fetch messages by UID, mark them, and wait for new mail with IDLE
//! (RFC 2177) or, on a server without it, by waiting the persona's `poll`.
//!
//! Every command has a time limit: a server that stops answering mid-FETCH is an error the
//! caller answers by connecting again, never a session stuck for ever. The password is
//! never part of an error.

use std::collections::HashSet;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use async_imap::extensions::idle::IdleResponse;
use async_imap::types::UnsolicitedResponse;
use chrono::{DateTime, NaiveDate, Utc};
use futures::TryStreamExt as _;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use protege_core::{InboxAfter, TlsMode};

/// How long a connection, a login or one command may take.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// Why an IMAP exchange failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImapError {
    /// The server refused the login (a wrong user or password, an account without IMAP).
    #[error("the server refused the login: {0}")]
    Login(String),
    /// The folder does not exist or cannot be selected.
    #[error("the folder cannot be selected: {0}")]
    Folder(String),
    /// The connection failed, was lost, timed out, or the server answered what the client
    /// could not use.
    #[error("{0}")]
    Connection(String),
}

/// An account, as `[inbox]` and its password give it.
#[derive(Clone)]
pub struct ImapAccount {
    /// The host.
    pub host: String,
    /// The port.
    pub port: u16,
    /// How the connection is secured.
    pub security: TlsMode,
    /// The login.
    pub user: String,
    /// The password.
    pub password: String,
    /// A PEM bundle of roots added to the system's (`ca_file`, read).
    pub ca_pem: Option<Vec<u8>>,
    /// How long a connection, the login or one command may take.
    pub timeout: Duration,
}

impl fmt::Debug for ImapAccount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ImapAccount")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("security", &self.security)
            .field("user", &self.user)
            .field("password", &"<redacted>")
            .finish_non_exhaustive()
    }
}

/// A folder as `SELECT` found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Folder {
    /// `UIDVALIDITY`.
    pub uid_validity: u32,
    /// `UIDNEXT`: the UID the next message will get (at least 1).
    pub uid_next: u32,
    /// How many messages it holds.
    pub exists: u32,
}

/// A message of a folder, before its bytes are fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listed {
    /// Its UID.
    pub uid: u32,
    /// `RFC822.SIZE`, in bytes.
    pub size: u64,
    /// `INTERNALDATE`: when the server received it.
    pub internal_date: Option<DateTime<Utc>>,
}

/// The connection: plain TCP (loopback, `tls = "none"`) or TLS.
#[derive(Debug)]
enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

type Session = async_imap::Session<Stream>;

/// A logged-in IMAP session.
pub struct Imap {
    session: Option<Session>,
    timeout: Duration,
    idle: bool,
    moves: bool,
    uidplus: bool,
    /// New mail announced while a command ran (an `EXISTS` the server sent unasked).
    announced: bool,
}

impl fmt::Debug for Imap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Imap")
            .field("idle", &self.idle)
            .field("moves", &self.moves)
            .finish_non_exhaustive()
    }
}

/// Runs `fut` within `limit`, a lost time a [`ImapError::Connection`].
async fn within<T>(
    limit: Duration,
    what: &str,
    fut: impl Future<Output = Result<T, ImapError>>,
) -> Result<T, ImapError> {
    match tokio::time::timeout(limit, fut).await {
        Ok(out) => out,
        Err(_) => Err(ImapError::Connection(format!(
            "{what} took longer than {}s",
            limit.as_secs()
        ))),
    }
}

/// What the server said in a `NO` or `BAD` answer, one line: async-imap words it as
/// `code: CODE, info: Some("TEXT")`, and TEXT is what the server wrote.
fn server_text(why: &str) -> String {
    let text = why
        .split_once("info: Some(\"")
        .and_then(|(_, rest)| rest.strip_suffix("\")"))
        .map_or_else(
            || why.to_owned(),
            |t| t.replace("\\\"", "\"").replace("\\\\", "\\"),
        );
    protege_core::one_line(&text).into_owned()
}

/// The text of an async-imap error, one line.
fn text(error: &async_imap::error::Error) -> String {
    protege_core::one_line(&error.to_string()).into_owned()
}

fn lost(what: &str, error: &async_imap::error::Error) -> ImapError {
    ImapError::Connection(format!("{what}: {}", text(error)))
}

/// `UID FETCH SET ITEMS`, every answer read.
async fn uid_fetch(
    session: &mut Session,
    set: &str,
    items: &str,
) -> Result<Vec<async_imap::types::Fetch>, ImapError> {
    let fetches = session
        .uid_fetch(set, items)
        .await
        .map_err(|e| lost("UID FETCH", &e))?;
    fetches
        .try_collect()
        .await
        .map_err(|e| lost("UID FETCH", &e))
}

/// Adds `flag` to message `uid` (`UID STORE +FLAGS.SILENT`).
async fn add_flag(session: &mut Session, uid: &str, flag: &str) -> Result<(), ImapError> {
    let stored = session
        .uid_store(uid, format!("+FLAGS.SILENT ({flag})"))
        .await
        .map_err(|e| lost("UID STORE", &e))?;
    let _: Vec<_> = stored
        .try_collect()
        .await
        .map_err(|e| lost("UID STORE", &e))?;
    Ok(())
}

/// The TLS connector of `account`: the system's roots and those of its `ca_file`.
fn connector(account: &ImapAccount) -> Result<tokio_rustls::TlsConnector, ImapError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut extra = Vec::new();
    if let Some(pem) = &account.ca_pem {
        for cert in CertificateDer::pem_slice_iter(pem) {
            extra.push(cert.map_err(|e| {
                ImapError::Connection(format!("`ca_file` is not a PEM certificate: {e}"))
            })?);
        }
    }
    let verifier =
        rustls_platform_verifier::Verifier::new_with_extra_roots(extra, provider.clone())
            .map_err(|e| ImapError::Connection(format!("cannot set up TLS: {e}")))?;
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ImapError::Connection(format!("cannot set up TLS: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

async fn tls(account: &ImapAccount, tcp: TcpStream) -> Result<Stream, ImapError> {
    let name = ServerName::try_from(account.host.clone())
        .map_err(|e| ImapError::Connection(format!("`{}` {e}", account.host)))?;
    let stream = connector(account)?
        .connect(name, tcp)
        .await
        .map_err(|e| ImapError::Connection(format!("TLS with {}: {e}", account.host)))?;
    Ok(Stream::Tls(Box::new(stream)))
}

impl Imap {
    /// Connects to `account`'s server and logs in.
    pub async fn connect(account: &ImapAccount) -> Result<Imap, ImapError> {
        within(account.timeout, "connecting and logging in", async {
            let tcp = TcpStream::connect((account.host.as_str(), account.port))
                .await
                .map_err(|e| {
                    ImapError::Connection(format!(
                        "cannot connect to {}:{}: {e}",
                        account.host, account.port
                    ))
                })?;
            let stream = match account.security {
                TlsMode::Implicit => tls(account, tcp).await?,
                TlsMode::StartTls | TlsMode::None => Stream::Plain(tcp),
            };
            let mut client = async_imap::Client::new(stream);
            client
                .read_response()
                .await
                .map_err(|e| ImapError::Connection(format!("reading the greeting: {e}")))?
                .ok_or_else(|| {
                    ImapError::Connection("the server closed the connection at once".into())
                })?;
            if account.security == TlsMode::StartTls {
                client
                    .run_command_and_check_ok("STARTTLS", None)
                    .await
                    .map_err(|e| lost("STARTTLS", &e))?;
                let Stream::Plain(tcp) = client.into_inner() else {
                    unreachable!("STARTTLS runs over the plain connection")
                };
                client = async_imap::Client::new(tls(account, tcp).await?);
            }
            let mut session = client
                .login(&account.user, &account.password)
                .await
                .map_err(|(e, _)| match e {
                    async_imap::error::Error::No(why) | async_imap::error::Error::Bad(why) => {
                        ImapError::Login(server_text(&why))
                    }
                    other => lost("logging in", &other),
                })?;
            let capabilities = session
                .capabilities()
                .await
                .map_err(|e| lost("CAPABILITY", &e))?;
            Ok(Imap {
                idle: capabilities.has_str("IDLE"),
                moves: capabilities.has_str("MOVE"),
                uidplus: capabilities.has_str("UIDPLUS"),
                session: Some(session),
                timeout: account.timeout,
                announced: false,
            })
        })
        .await
    }

    /// Whether the server waits with IDLE (otherwise the caller polls).
    pub fn has_idle(&self) -> bool {
        self.idle
    }

    fn session(&mut self) -> &mut Session {
        self.session
            .as_mut()
            .expect("the session is back after IDLE, or the Imap was dropped")
    }

    /// Selects `folder`.
    pub async fn select(&mut self, folder: &str) -> Result<Folder, ImapError> {
        let limit = self.timeout;
        let session = self.session();
        let mailbox = within(limit, "SELECT", async {
            session.select(folder).await.map_err(|e| match e {
                async_imap::error::Error::No(why) | async_imap::error::Error::Bad(why) => {
                    ImapError::Folder(format!("`{folder}`: {}", server_text(&why)))
                }
                other => lost("SELECT", &other),
            })
        })
        .await?;
        let uid_validity = mailbox.uid_validity.ok_or_else(|| {
            ImapError::Connection(format!("the server gave `{folder}` no UIDVALIDITY"))
        })?;
        let uid_next = match mailbox.uid_next {
            Some(next) => next,
            // RFC 3501 lets a server leave UIDNEXT out; the highest UID + 1 serves.
            None => self.highest_uid().await? + 1,
        };
        self.announced = false;
        Ok(Folder {
            uid_validity,
            uid_next: uid_next.max(1),
            exists: mailbox.exists,
        })
    }

    /// The highest UID of the selected folder (0 when it is empty).
    async fn highest_uid(&mut self) -> Result<u32, ImapError> {
        let listed = self.list("*", 0).await?;
        Ok(listed.iter().map(|l| l.uid).max().unwrap_or(0))
    }

    /// The messages of the selected folder with a UID above `after`, by UID.
    pub async fn list_after(&mut self, after: u32) -> Result<Vec<Listed>, ImapError> {
        // `N:*` also names the last message when every UID is below N (RFC 3501 §6.4.8):
        // it is filtered out.
        self.list(&format!("{}:*", after.saturating_add(1)), after)
            .await
    }

    /// The messages of the selected folder received on `day` or later, by UID.
    pub async fn list_since(&mut self, day: NaiveDate) -> Result<Vec<Listed>, ImapError> {
        let limit = self.timeout;
        let session = self.session();
        let query = format!("SINCE {}", day.format("%-d-%b-%Y"));
        let uids: HashSet<u32> = within(limit, "UID SEARCH", async {
            session
                .uid_search(&query)
                .await
                .map_err(|e| lost("UID SEARCH", &e))
        })
        .await?;
        let mut uids: Vec<u32> = uids.into_iter().collect();
        uids.sort_unstable();
        let mut out = Vec::with_capacity(uids.len());
        // In pieces, so no command line grows without bound.
        for chunk in uids.chunks(500) {
            let set: Vec<String> = chunk.iter().map(u32::to_string).collect();
            out.extend(self.list(&set.join(","), 0).await?);
        }
        out.sort_by_key(|l| l.uid);
        Ok(out)
    }

    async fn list(&mut self, set: &str, after: u32) -> Result<Vec<Listed>, ImapError> {
        let limit = self.timeout;
        let session = self.session();
        let mut out: Vec<Listed> = within(limit, "UID FETCH", async {
            let fetched = uid_fetch(session, set, "(UID RFC822.SIZE INTERNALDATE)").await?;
            Ok(fetched
                .iter()
                .filter_map(|f| {
                    Some(Listed {
                        uid: f.uid?,
                        size: u64::from(f.size.unwrap_or(0)),
                        internal_date: f.internal_date().map(|d| d.with_timezone(&Utc)),
                    })
                })
                .collect())
        })
        .await?;
        out.retain(|l| l.uid > after);
        out.sort_by_key(|l| l.uid);
        out.dedup_by_key(|l| l.uid);
        Ok(out)
    }

    /// The bytes of message `uid` of the selected folder, without setting `\Seen`; `None`
    /// when it is gone (expunged meanwhile).
    pub async fn fetch(&mut self, uid: u32) -> Result<Option<Vec<u8>>, ImapError> {
        let limit = self.timeout;
        let session = self.session();
        within(limit, "UID FETCH BODY.PEEK[]", async {
            let fetched = uid_fetch(session, &uid.to_string(), "(UID BODY.PEEK[])").await?;
            Ok(fetched
                .iter()
                .find(|f| f.uid == Some(uid))
                .and_then(|f| f.body().map(<[u8]>::to_vec)))
        })
        .await
    }

    /// The bytes of the messages `uids` of the selected folder, without setting `\Seen`, by
    /// UID (a message expunged meanwhile is missing).
    pub async fn fetch_many(
        &mut self,
        uids: &[u32],
    ) -> Result<std::collections::HashMap<u32, Vec<u8>>, ImapError> {
        if uids.is_empty() {
            return Ok(std::collections::HashMap::new());
        }
        let limit = self.timeout;
        let session = self.session();
        let set: Vec<String> = uids.iter().map(u32::to_string).collect();
        within(limit, "UID FETCH BODY.PEEK[]", async {
            let fetched = uid_fetch(session, &set.join(","), "(UID BODY.PEEK[])").await?;
            Ok(fetched
                .iter()
                .filter_map(|f| Some((f.uid?, f.body()?.to_vec())))
                .filter(|(uid, _)| uids.contains(uid))
                .collect())
        })
        .await
    }

    /// Does `after` to message `uid`: sets `\Seen`, or moves it (`MOVE`, or `COPY` then
    /// `\Deleted` and `UID EXPUNGE` on a server without it).
    pub async fn mark(&mut self, uid: u32, after: &InboxAfter) -> Result<(), ImapError> {
        let limit = self.timeout;
        let (moves, uidplus) = (self.moves, self.uidplus);
        let session = self.session();
        let uid = uid.to_string();
        within(limit, "marking a message", async {
            match after {
                InboxAfter::Seen => add_flag(session, &uid, "\\Seen").await?,
                InboxAfter::Move(folder) if moves => {
                    session
                        .uid_mv(&uid, folder)
                        .await
                        .map_err(|e| lost(&format!("UID MOVE to `{folder}`"), &e))?;
                }
                InboxAfter::Move(folder) => {
                    session
                        .uid_copy(&uid, folder)
                        .await
                        .map_err(|e| lost(&format!("UID COPY to `{folder}`"), &e))?;
                    add_flag(session, &uid, "\\Deleted").await?;
                    if uidplus {
                        let gone = session
                            .uid_expunge(&uid)
                            .await
                            .map_err(|e| lost("UID EXPUNGE", &e))?;
                        let _: Vec<_> = gone
                            .try_collect()
                            .await
                            .map_err(|e| lost("UID EXPUNGE", &e))?;
                    }
                }
            }
            Ok(())
        })
        .await
    }

    /// Whether the server announced new mail (`EXISTS`) while the last commands ran.
    fn drain_announcements(&mut self) -> bool {
        let session = self.session();
        let mut announced = false;
        while let Ok(response) = session.unsolicited_responses.try_recv() {
            announced |= matches!(response, UnsolicitedResponse::Exists(_));
        }
        self.announced |= announced;
        std::mem::take(&mut self.announced)
    }

    /// Waits at most `max` for the selected folder to change: with IDLE when the server has
    /// it (the caller keeps `max` under 29 minutes, RFC 2177), otherwise by sleeping `max`.
    /// True when the server said something changed (then the caller lists new mail).
    pub async fn wait(&mut self, max: Duration) -> Result<bool, ImapError> {
        if self.drain_announcements() {
            return Ok(true);
        }
        if !self.idle {
            tokio::time::sleep(max).await;
            return Ok(false);
        }
        let session = self.session.take().expect("the session is here");
        let mut handle = session.idle();
        let limit = self.timeout;
        within(limit, "IDLE", async {
            handle.init().await.map_err(|e| lost("IDLE", &e))
        })
        .await?;
        let (wait, _stop) = handle.wait_with_timeout(max);
        // The server's keep-alive lines restart async-imap's own timer: `max` is kept here.
        let woke = match tokio::time::timeout(max, wait).await {
            Ok(Ok(IdleResponse::NewData(_))) => true,
            Ok(Ok(IdleResponse::Timeout | IdleResponse::ManualInterrupt)) | Err(_) => false,
            Ok(Err(e)) => return Err(lost("IDLE", &e)),
        };
        let session = within(limit, "DONE", async {
            handle.done().await.map_err(|e| lost("DONE", &e))
        })
        .await?;
        self.session = Some(session);
        Ok(woke)
    }

    /// Logs out (best effort: the connection is closed either way).
    pub async fn logout(mut self) {
        let limit = self.timeout;
        if let Some(session) = self.session.as_mut() {
            let _ = tokio::time::timeout(limit, session.logout()).await;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_server_s_words_are_kept() {
        assert_eq!(
            super::server_text(
                "code: None, info: Some(\"[AUTHENTICATIONFAILED] Authentication \\\"failed\\\".\")"
            ),
            "[AUTHENTICATIONFAILED] Authentication \"failed\"."
        );
        assert_eq!(super::server_text("odd"), "odd");
    }
}
