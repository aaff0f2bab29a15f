//! The connections of `serve`: accepting under a cap, the header and idle timeouts, answers
//! in the service's JSON shape for requests hyper refuses before any route sees them, and a
//! shutdown that does not wait for clients that never completed a request.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};

/// The largest request head hyper reads (request line and header fields), in bytes.
pub(super) const MAX_HEAD_BYTES: usize = 128 * 1024;
/// The most header fields of one request.
const MAX_HEADERS: usize = 100;
/// How long a refused connection is read from before it is closed, at most.
const LINGER: Duration = Duration::from_secs(1);
/// How many bytes of a refused connection are read, at most.
const LINGER_BYTES: usize = 64 * 1024;
/// How many refused connections may linger at once, beyond the cap.
const MAX_LINGERING: usize = 64;
/// How long the accept loop pauses after `accept` failed (out of file descriptors, say).
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// The connection settings of `serve`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    /// How long a client may take to send a complete request head, from its first byte.
    pub(super) header_timeout: Duration,
    /// How long a connection may stay open with no request in flight and no byte sent.
    pub(super) idle_timeout: Duration,
    /// The most connections open at once; over it a new one is answered 503 and closed.
    pub(super) max_connections: usize,
    /// The most connections open at once from one client address.
    pub(super) max_per_client: usize,
}

/// File descriptors kept for everything but client connections: the database pool, the
/// persona folder's watch, files read, the listener.
const RESERVED_FDS: u64 = 128;

/// The default of `--max-connections`: what the soft file-descriptor limit leaves after
/// [`RESERVED_FDS`], at most 1024 and at least 16. Over the limit `accept` fails, and a cap
/// above it would refuse no one while the database and the files run out of descriptors.
pub(super) fn default_max_connections() -> usize {
    #[cfg(unix)]
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX);
    #[cfg(not(unix))]
    let soft = u64::MAX;
    derived_cap(soft)
}

/// [`default_max_connections`] for a soft limit of `soft` descriptors.
fn derived_cap(soft: u64) -> usize {
    soft.saturating_sub(RESERVED_FDS).clamp(16, 1024) as usize
}

/// The connections open per client address.
#[derive(Debug, Default)]
struct PerClient(Mutex<std::collections::HashMap<std::net::IpAddr, usize>>);

impl PerClient {
    /// Counts one more connection of `ip`, unless it holds `cap` already.
    fn enter(self: &Arc<Self>, ip: std::net::IpAddr, cap: usize) -> Option<ClientSlot> {
        let mut open = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(ip).or_default();
        if *n >= cap {
            return None;
        }
        *n += 1;
        Some(ClientSlot {
            clients: self.clone(),
            ip,
        })
    }
}

/// One counted connection of a client; uncounted when dropped.
struct ClientSlot {
    clients: Arc<PerClient>,
    ip: std::net::IpAddr,
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut open = self.clients.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// Accepts connections on `listener` and serves `router` on each until `stopping` turns
/// true; then stops accepting, closes the connections that have no request in flight and
/// returns once the others have finished.
pub(super) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    mut stopping: watch::Receiver<bool>,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let clients = Arc::new(PerClient::default());
    let lingering = Arc::new(Semaphore::new(MAX_LINGERING));
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stopping.wait_for(|s| *s) => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(error = %e, "cannot accept a connection");
                tokio::time::sleep(ACCEPT_PAUSE).await;
                continue;
            }
        };
        // Finished connections are reaped as we go, so the set stays small.
        while tasks.try_join_next().is_some() {}
        let admitted = match clients.enter(peer.ip(), limits.max_per_client) {
            None => Err(format!(
                "this client has {} connections open, its limit; close one or retry later",
                limits.max_per_client
            )),
            Some(client) => match slots.clone().try_acquire_owned() {
                Ok(slot) => Ok((client, slot)),
                Err(_) => Err(format!(
                    "the service has {} connections open, its limit; retry later",
                    limits.max_connections
                )),
            },
        };
        let (client, slot) = match admitted {
            Ok(admitted) => admitted,
            Err(message) => {
                let refusal = Refusal::new(503, "unavailable", message);
                refusal.record(Instant::now());
                match lingering.clone().try_acquire_owned() {
                    Ok(linger) => {
                        tasks.spawn(async move {
                            refuse(stream, refusal).await;
                            drop(linger);
                        });
                    }
                    // Too many refusals under way: answer what the socket takes at once.
                    Err(_) => drop(stream.try_write(refusal.bytes.as_bytes())),
                }
                continue;
            }
        };
        let router = router.clone();
        let stopping = stopping.clone();
        tasks.spawn(async move {
            connection(stream, router, limits, stopping).await;
            drop(slot);
            drop(client);
        });
    }
    drop(listener);
    while tasks.join_next().await.is_some() {}
}

/// Answers a connection over the cap, then reads and drops what the client sent for up to
/// a second before closing, so that its request does not turn the close into a reset that
/// would discard the answer.
async fn refuse(mut stream: TcpStream, refusal: Refusal) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let linger = async {
        stream.write_all(refusal.bytes.as_bytes()).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        let mut left = LINGER_BYTES;
        while left > 0 {
            let n = stream.read(&mut sink).await?;
            if n == 0 {
                break;
            }
            left = left.saturating_sub(n);
        }
        Ok::<_, io::Error>(())
    };
    let _ = tokio::time::timeout(LINGER, linger).await;
}

/// What one connection shares between its I/O, its service and its watchdog.
#[derive(Debug)]
struct State {
    opened: Instant,
    /// Requests inside the service now.
    in_flight: AtomicUsize,
    /// Responses the service has produced.
    answered: AtomicUsize,
    times: Mutex<Times>,
}

#[derive(Debug, Clone, Copy)]
struct Times {
    /// The last byte read or written, or the last request's end.
    active: Instant,
    /// The first byte of a request head not yet complete.
    head: Option<Instant>,
}

impl State {
    fn new() -> Self {
        let now = Instant::now();
        Self {
            opened: now,
            in_flight: AtomicUsize::new(0),
            answered: AtomicUsize::new(0),
            times: Mutex::new(Times {
                active: now,
                head: None,
            }),
        }
    }

    fn times(&self) -> std::sync::MutexGuard<'_, Times> {
        self.times
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn read(&self) {
        let now = Instant::now();
        let idle = self.in_flight.load(Ordering::SeqCst) == 0;
        let mut times = self.times();
        times.active = now;
        if idle && times.head.is_none() {
            times.head = Some(now);
        }
    }

    fn wrote(&self) {
        self.times().active = Instant::now();
    }

    /// When the connection is due to close if nothing happens first: none while a request
    /// is in flight.
    fn due(&self, limits: &Limits) -> Option<Instant> {
        if self.in_flight.load(Ordering::SeqCst) > 0 {
            return None;
        }
        let times = *self.times();
        Some(match times.head {
            Some(head) => head + limits.header_timeout,
            None => times.active + limits.idle_timeout,
        })
    }

    /// Whether the connection may be dropped at shutdown: no request in flight, and it
    /// either never completed one or is half-way through sending the next head.
    fn droppable(&self) -> bool {
        self.in_flight.load(Ordering::SeqCst) == 0
            && (self.answered.load(Ordering::SeqCst) == 0 || self.times().head.is_some())
    }
}

/// Marks a request in flight for as long as it lives.
struct InFlight(Arc<State>);

impl InFlight {
    fn new(state: Arc<State>) -> Self {
        state.in_flight.fetch_add(1, Ordering::SeqCst);
        state.times().head = None;
        Self(state)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.answered.fetch_add(1, Ordering::SeqCst);
        self.0.times().active = Instant::now();
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn connection(
    stream: TcpStream,
    router: Router,
    limits: Limits,
    mut stopping: watch::Receiver<bool>,
) {
    let state = Arc::new(State::new());
    let io = TokioIo::new(Watched {
        inner: stream,
        state: state.clone(),
        pending: Vec::new(),
        chunks: super::chunks::Chunks::new(protege::serve::MAX_BODY_BYTES),
    });
    let tower = TowerToHyperService::new(router);
    let in_service = state.clone();
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let guard = InFlight::new(in_service.clone());
        let answer = hyper::service::Service::call(&tower, request);
        async move {
            let response = answer.await;
            drop(guard);
            response
        }
    });
    let conn = http1::Builder::new()
        .max_buf_size(MAX_HEAD_BYTES)
        .max_headers(MAX_HEADERS)
        .serve_connection(io, service);
    tokio::pin!(conn);
    let mut shutting_down = false;
    loop {
        let due = state
            .due(&limits)
            .unwrap_or_else(|| Instant::now() + limits.idle_timeout);
        tokio::select! {
            _ = conn.as_mut() => return,
            () = tokio::time::sleep_until(due.into()) => {
                if state.due(&limits).is_some_and(|d| d <= Instant::now()) {
                    return;
                }
            }
            _ = stopping.wait_for(|s| *s), if !shutting_down => {
                shutting_down = true;
                conn.as_mut().graceful_shutdown();
                if state.droppable() {
                    return;
                }
            }
        }
    }
}

/// A connection's socket, noting its activity and answering hyper's own error responses
/// (400, 414, 431: a request refused before it reached a route) in the service's JSON
/// shape, logged and counted like every other answer.
struct Watched {
    inner: TcpStream,
    state: Arc<State>,
    /// Bytes of a replacement answer not yet written.
    pending: Vec<u8>,
    /// The chunk sizes the client declares.
    chunks: super::chunks::Chunks,
}

impl Watched {
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.pending.is_empty() {
            let n = std::task::ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.pending.drain(..n);
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.state.read();
            if let Some(size) = self.chunks.read(&buf.filled()[before..]) {
                // Answered at once, before the body: the client may be sending nothing more.
                let refusal = Refusal::new(
                    413,
                    "payload_too_large",
                    format!(
                        "the request declares a chunk of {size} bytes, over the {} bytes a body may have",
                        protege::serve::MAX_BODY_BYTES
                    ),
                );
                refusal.record(self.state.opened);
                let _ = self.inner.try_write(refusal.bytes.as_bytes());
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "a declared chunk over the body limit",
                )));
            }
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        std::task::ready!(self.poll_pending(cx))?;
        self.state.wrote();
        if let Some(refusal) = Refusal::of_hyper(buf) {
            refusal.record(self.state.opened);
            self.pending = refusal.bytes.into_bytes();
            // hyper's own answer counts as written: ours goes out in its place.
            let _ = self.poll_pending(cx)?;
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// An answer given outside the routes: its status and the whole HTTP response.
struct Refusal {
    status: u16,
    bytes: String,
}

impl Refusal {
    fn new(status: u16, kind: &str, message: String) -> Self {
        let body = serde_json::json!({ "error": { "kind": kind, "message": message } }).to_string();
        let reason = axum::http::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or_default();
        Self {
            status,
            bytes: format!(
                "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            ),
        }
    }

    /// The JSON answer replacing `written`, when it is the empty answer hyper writes itself
    /// for a request it could not parse. The service's own answers always have a body and a
    /// content type.
    fn of_hyper(written: &[u8]) -> Option<Self> {
        if !written.starts_with(b"HTTP/1.1 4") {
            return None;
        }
        let head = std::str::from_utf8(written.get(..written.len().min(512))?).ok()?;
        let status = head.strip_prefix("HTTP/1.1 ")?.get(..3)?;
        let lower = head.to_ascii_lowercase();
        if !head.ends_with("\r\n\r\n")
            || !lower.contains("\r\ncontent-length: 0\r\n")
            || lower.contains("\r\ncontent-type:")
        {
            return None;
        }
        let (status, message) = match status {
            "400" => (
                400,
                "the request line or a header field is malformed (RFC 9112)".to_owned(),
            ),
            "414" => (414, "the request target is over 65534 bytes".to_owned()),
            "431" => (
                431,
                format!(
                    "the request head is over {MAX_HEAD_BYTES} bytes or {MAX_HEADERS} header fields"
                ),
            ),
            _ => return None,
        };
        let kind = match status {
            400 => "bad_request",
            414 => "uri_too_long",
            _ => "header_fields_too_large",
        };
        Some(Self::new(status, kind, message))
    }

    /// The log line and the request counter of this answer.
    fn record(&self, start: Instant) {
        let ms = start.elapsed().as_secs_f64() * 1000.0;
        tracing::info!(
            method = "-",
            route = "unmatched",
            status = self.status,
            ms = format!("{ms:.2}"),
            "request"
        );
        metrics::counter!(
            "protege_http_requests_total",
            "route" => "unmatched",
            "status" => self.status.to_string()
        )
        .increment(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_cap_leaves_descriptors_for_the_rest() {
        assert_eq!(derived_cap(1024), 896);
        assert_eq!(derived_cap(256), 128);
        assert_eq!(derived_cap(100), 16);
        assert_eq!(derived_cap(1 << 20), 1024);
    }

    #[test]
    fn a_client_is_counted_until_its_connections_close() {
        let clients = Arc::new(PerClient::default());
        let ip: std::net::IpAddr = "127.0.0.1".parse().unwrap();
        let first = clients.enter(ip, 2).unwrap();
        let second = clients.enter(ip, 2).unwrap();
        assert!(clients.enter(ip, 2).is_none());
        assert!(clients.enter("127.0.0.2".parse().unwrap(), 2).is_some());
        drop(first);
        assert!(clients.enter(ip, 2).is_some());
        drop(second);
        assert!(clients.0.lock().unwrap().is_empty());
    }
}
