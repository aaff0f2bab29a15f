//! The delivering `protege serve` killed (SIGKILL) at the three moments that matter, with a
//! real Postfix behind a proxy the test controls: before the claim, after the claim (the
//! exchange not begun), and after the server's final `250` but before `sent` is written.
//! Each case counts the copies that arrive once a second `serve` has taken over: never
//! none, and an identical second copy (same bytes, same Message-ID) only in the last.
//!
//! The moments are made real, not simulated: the test holds the SQLite file's write lock
//! (`BEGIN IMMEDIATE`) so that the worker's claim, or its `sent`, waits for it, and the
//! proxy holds the connection, or the end of the data, until the test lets it through.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use protege::outbox::Composed;
use protege::runs::RoundInput;
use protege::{Direction, Engine, Format, ResolveInput};
use serde_json::Value;

mod common;
use common::AGENT;
use common::postfix::Postfix;
use common::server::Server;

const TRIGGER: &str = "<kill-1@example.com>";

/// What the proxy does with the next connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// Forwards everything.
    Nothing,
    /// Accepts the connection and says nothing until released.
    Connection,
    /// Forwards everything but the end of the data (`CRLF . CRLF`), which waits until
    /// released.
    EndOfData,
}

/// A proxy on a loopback port in front of Postfix's smtpd.
struct Proxy {
    port: u16,
    /// Reports each held moment.
    held: mpsc::Receiver<()>,
    /// Lets the held moment go.
    release: mpsc::Sender<()>,
}

impl Proxy {
    /// A proxy to `upstream` holding `hold` on its first connection (later ones pass).
    fn start(upstream: u16, hold: Hold) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (held_tx, held) = mpsc::channel();
        let (release, release_rx) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            let mut hold = hold;
            let mut release_rx = Some(release_rx);
            for client in listener.incoming().flatten() {
                let this = std::mem::replace(&mut hold, Hold::Nothing);
                let rx = if this == Hold::Nothing {
                    None
                } else {
                    release_rx.take()
                };
                let held_tx = held_tx.clone();
                std::thread::spawn(move || relay(client, upstream, this, rx, held_tx));
            }
        });
        Proxy {
            port,
            held,
            release,
        }
    }

    fn wait_held(&self) {
        self.held
            .recv_timeout(Duration::from_secs(60))
            .expect("the proxy held nothing within 60 s");
    }
}

/// Relays one connection, holding what `hold` says.
fn relay(
    mut client: TcpStream,
    upstream: u16,
    hold: Hold,
    release: Option<mpsc::Receiver<()>>,
    held: mpsc::Sender<()>,
) {
    if hold == Hold::Connection {
        let _ = held.send(());
        if let Some(rx) = &release {
            let _ = rx.recv();
        }
        return;
    }
    let Ok(mut server) = TcpStream::connect(("127.0.0.1", upstream)) else {
        return;
    };
    let (mut client_read, mut server_write) =
        (client.try_clone().unwrap(), server.try_clone().unwrap());
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut server, &mut client);
    });
    let mut buffer = [0u8; 64 * 1024];
    let mut tail: Vec<u8> = Vec::new();
    let mut release = release;
    loop {
        let n = match client_read.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let chunk = &buffer[..n];
        tail.extend_from_slice(chunk);
        if tail.len() > 8 {
            tail.drain(..tail.len() - 8);
        }
        if hold == Hold::EndOfData
            && tail.ends_with(b"\r\n.\r\n")
            && let Some(rx) = release.take()
        {
            // Everything but the final `.` line goes; the rest waits.
            let (before, end) = chunk.split_at(chunk.len().saturating_sub(3));
            let _ = server_write.write_all(before);
            let _ = held.send(());
            let _ = rx.recv();
            let _ = server_write.write_all(end);
            continue;
        }
        if server_write.write_all(chunk).is_err() {
            return;
        }
    }
}

/// An app root whose `agent` persona sends through the proxy on `port`.
fn root_for(port: u16) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    let persona = format!(
        "{AGENT}\n[mail]\ntrusted_authserv_ids = [\"mx.acme.test\"]\n\n\
         [outbox]\nsmtp = \"smtp://127.0.0.1:{port}\"\ntls = \"none\"\nattempt_timeout = \"120s\"\n"
    );
    std::fs::write(root.path().join("personas/agent.toml"), persona).unwrap();
    root
}

/// Stores Zoe's mail to `to` and a finished run's reply (queued) in `db`; the reply's
/// Message-ID.
async fn queued_reply(root: &Path, db: &str, to: &str) -> String {
    let engine = Engine::builder()
        .root(root)
        .database(db)
        .build()
        .await
        .unwrap();
    let mail = format!(
        "Received: from mail.example.com by mx.acme.test; Tue, 10 Mar 2026 09:00:01 +0000\r\n\
         Authentication-Results: mx.acme.test; dmarc=pass header.from=example.com\r\n\
         Message-ID: {TRIGGER}\r\nFrom: Zoe <{to}>\r\nTo: support@acme.test\r\n\
         Subject: Order\r\nDate: Tue, 10 Mar 2026 09:00:00 +0000\r\n\r\nWhere is it?\r\n"
    );
    engine
        .ingest_mail(mail.as_bytes(), Some(Direction::Inbound))
        .await
        .unwrap();
    let input = ResolveInput::reply("agent", TRIGGER)
        .format(Format::Anthropic)
        .now("2026-03-10T10:00:00Z".parse().unwrap());
    let run = engine.start_run(&input).await.unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/responses/anthropic/good-loop-round-1.json");
    let response: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    engine
        .record_round(
            &run.id,
            RoundInput {
                round: 0,
                response,
                results: Vec::new(),
            },
        )
        .await
        .unwrap();
    match engine.compose_reply(&run.id).await.unwrap() {
        Composed::Reply { outbox } => {
            assert_eq!(outbox.state, "queued");
            outbox.message_id
        }
        other => panic!("no reply: {other:?}"),
    }
}

/// The outbox row's state, read from the file.
fn state(file: &Path) -> String {
    let conn = rusqlite::Connection::open(file).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    conn.query_row("SELECT state FROM outbox", [], |row| row.get(0))
        .unwrap()
}

/// Waits until the row is in `want`.
fn wait_state(file: &Path, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while state(file) != want {
        assert!(Instant::now() < deadline, "the row never became `{want}`");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Takes the file's write lock; held until the connection is dropped.
fn write_lock(file: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(file).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    conn
}

/// A `serve` of `root` over `db` whose leases last two seconds.
fn serve(root: &Path, db: &str) -> Server {
    Server::start(root, db, None, &["--delivery-lease", "2"])
}

/// One case: `kill` arranges the moment and kills the first `serve`; then a second `serve`
/// takes over. With `locked`, the file's write lock is taken before the first `serve`
/// starts and held until `kill` returns, so its first claim waits for it. The copies that
/// arrived, and whether they are identical with the reply's Message-ID.
async fn case(
    postfix: &Postfix,
    name: &str,
    hold: Hold,
    locked: bool,
    kill: impl FnOnce(&Path, Server, &Proxy, &Postfix),
) -> (usize, bool) {
    let proxy = Proxy::start(postfix.port(), hold);
    let root = root_for(proxy.port);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.db");
    let db = format!("sqlite://{}?mode=rwc", file.display());
    let to = format!("zoe-{name}@example.com");
    let message_id = queued_reply(root.path(), &db, &to).await;
    let lock = locked.then(|| write_lock(&file));
    let first = serve(root.path(), &db);
    kill(&file, first, &proxy, postfix);
    drop(lock);
    // A second process takes over once the lease of the first has run out.
    let _second = serve(root.path(), &db);
    wait_state(&file, "sent");
    // Anything the first process sent has arrived by now; a duplicate would follow the
    // second's within moments.
    std::thread::sleep(Duration::from_secs(2));
    let copies = postfix.delivered(&to);
    let identical = copies
        .windows(2)
        .all(|w| Postfix::as_sent(&w[0]) == Postfix::as_sent(&w[1]))
        && copies
            .iter()
            .all(|c| String::from_utf8_lossy(c).contains(&format!("\nMessage-ID: {message_id}\n")));
    (copies.len(), identical)
}

#[tokio::test]
async fn a_killed_delivery_loses_nothing_and_repeats_only_after_the_servers_250() {
    let Some(postfix) = Postfix::start() else {
        return;
    };
    // Before the claim: the worker's claim waits for the write lock, taken before the
    // process started, and the process dies.
    let before_claim = case(
        &postfix,
        "before-claim",
        Hold::Nothing,
        true,
        |file, mut first, _, _| {
            std::thread::sleep(Duration::from_secs(3));
            first.child.kill().unwrap();
            first.child.wait().unwrap();
            assert_eq!(state(file), "queued");
        },
    )
    .await;
    // After the claim: the row is the worker's, the server has not even greeted it.
    let after_claim = case(
        &postfix,
        "after-claim",
        Hold::Connection,
        false,
        |file, mut first, proxy, _| {
            proxy.wait_held();
            assert_eq!(state(file), "sending");
            first.child.kill().unwrap();
            first.child.wait().unwrap();
            let _ = proxy.release.send(());
        },
    )
    .await;
    // After the server's 250: the message is queued by Postfix, `sent` waits for the lock.
    let after_250 = case(
        &postfix,
        "after-250",
        Hold::EndOfData,
        false,
        |file, mut first, proxy, postfix| {
            proxy.wait_held();
            let lock = write_lock(file);
            let _ = proxy.release.send(());
            // The server answered 250 (the message is in its queue and then in the Maildir).
            let deadline = Instant::now() + Duration::from_secs(60);
            let to = "zoe-after-250@example.com";
            while postfix.delivered(to).is_empty() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            first.child.kill().unwrap();
            first.child.wait().unwrap();
            drop(lock);
            assert_eq!(state(file), "sending");
        },
    )
    .await;
    assert_eq!(before_claim, (1, true), "killed before the claim");
    assert_eq!(after_claim, (1, true), "killed after the claim");
    assert_eq!(after_250, (2, true), "killed after the server's 250");
}
