//! Load test of `protege serve`: requests/s, p50/p99 latency and server CPU time per request
//! for `POST /v1/resolve` of the support persona at 1, 8 and 64 keep-alive connections,
//! next to the same resolve called in process (the baseline: the engine without HTTP).
//!
//! ```sh
//! cargo bench --bench serve                                  # starts its own server on SQLite
//! cargo bench --bench serve -- --database postgres://postgres@127.0.0.1:5432/bench
//! cargo bench --bench serve -- --url http://host:8080/v1/resolve --body body.json
//! ```
//! `--seconds N` sets the time per connection count (default 5).

use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use protege::{Engine, ResolveInput};

#[path = "../tests/common/mod.rs"]
mod common;
use common::{project, protege_command};

struct Options {
    url: Option<String>,
    body: Option<PathBuf>,
    database: Option<String>,
    seconds: f64,
}

fn options() -> Options {
    let mut out = Options {
        url: None,
        body: None,
        database: None,
        seconds: 5.0,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--url" => out.url = args.next(),
            "--body" => out.body = args.next().map(PathBuf::from),
            "--database" => out.database = args.next(),
            "--seconds" => out.seconds = args.next().and_then(|s| s.parse().ok()).unwrap_or(5.0),
            _ => {} // cargo bench passes `--bench`
        }
    }
    out
}

const BODY: &str = r#"{"persona":"support","message_id":"<refund-3@example.com>","format":"anthropic","now":"2026-03-10T08:00:00Z"}"#;

/// Runs `protege demo` against `database` so the support persona has its thread.
fn prepare(database: &str) {
    let out = protege_command()
        .arg("--root")
        .arg(project())
        .arg("--database")
        .arg(database)
        .arg("demo")
        .output()
        .expect("run protege demo");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Starts `protege serve` on a free port; returns the child and the resolve URL.
fn start(database: &str) -> (Child, String) {
    let mut child = protege_command()
        .arg("--root")
        .arg(project())
        .arg("--database")
        .arg(database)
        .args(["serve", "--listen", "127.0.0.1:0", "--no-watch"])
        .env_remove("PROTEGE_SERVE_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start protege serve");
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let base = loop {
        let line = lines.next().expect("serve exited").unwrap();
        if let Some(at) = line.find("listening on http://") {
            break line[at + "listening on ".len()..].trim().to_owned();
        }
    };
    // Keep draining the log so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (child, format!("{base}/v1/resolve"))
}

/// The CPU seconds (user + system) a process has used, from /proc (Linux only).
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

struct Load {
    requests: usize,
    errors: usize,
    latencies: Vec<Duration>,
    elapsed: Duration,
}

/// Where to send the requests: `host:port` and the path of an `http://` URL.
fn target(url: &str) -> (String, String) {
    let rest = url
        .strip_prefix("http://")
        .expect("--url must be an http:// URL");
    match rest.find('/') {
        Some(at) => (rest[..at].to_owned(), rest[at..].to_owned()),
        None => (rest.to_owned(), "/".to_owned()),
    }
}

/// One keep-alive HTTP/1.1 exchange on `stream`: writes `request`, reads the response head
/// and its `Content-Length` body; true for a 2xx status.
async fn exchange(
    stream: &mut tokio::net::TcpStream,
    request: &[u8],
    buf: &mut Vec<u8>,
) -> std::io::Result<bool> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    stream.write_all(request).await?;
    buf.clear();
    let mut chunk = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = std::str::from_utf8(&buf[..head_end]).map_err(std::io::Error::other)?;
    let ok = head.starts_with("HTTP/1.1 2");
    let length: usize = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())
                .flatten()
        })
        .ok_or_else(|| std::io::Error::other("no Content-Length"))?;
    while buf.len() < head_end + length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Ok(ok)
}

/// Drives `connections` keep-alive connections for `seconds`, each sending the next request
/// as soon as the previous answer is read. A deliberately small client (fixed request
/// bytes, `Content-Length` bodies only, as the server sends) so that the load generator,
/// which shares the machine's cores with the server, takes as little of them as it can.
async fn load(url: &str, body: &str, connections: usize, seconds: f64) -> Load {
    let (host, path) = target(url);
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes();
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let host = host.clone();
        let request = request.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut errors = 0;
            let mut buf = Vec::with_capacity(64 * 1024);
            let mut stream = None;
            while Instant::now() < until {
                let t = Instant::now();
                if stream.is_none() {
                    match tokio::net::TcpStream::connect(&host).await {
                        Ok(s) => {
                            s.set_nodelay(true).ok();
                            stream = Some(s);
                        }
                        Err(_) => {
                            errors += 1;
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            continue;
                        }
                    }
                }
                let conn = stream.as_mut().unwrap();
                match exchange(conn, &request, &mut buf).await {
                    Ok(true) => latencies.push(t.elapsed()),
                    Ok(false) => errors += 1,
                    Err(_) => {
                        errors += 1;
                        stream = None;
                    }
                }
            }
            (latencies, errors)
        }));
    }
    let mut out = Load {
        requests: 0,
        errors: 0,
        latencies: Vec::new(),
        elapsed: Duration::ZERO,
    };
    for task in tasks {
        let (latencies, errors) = task.await.unwrap();
        out.errors += errors;
        out.latencies.extend(latencies);
    }
    out.elapsed = start.elapsed();
    out.requests = out.latencies.len();
    out.latencies.sort();
    out
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

/// In-process resolves per second on one task: the same work without HTTP.
async fn baseline(database: &str, seconds: f64) -> f64 {
    let engine = Engine::builder()
        .root(project())
        .database(database)
        .build()
        .await
        .unwrap();
    let input: ResolveInput = serde_json::from_str(BODY).unwrap();
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let start = Instant::now();
    let mut n = 0;
    while Instant::now() < until {
        let out = engine.resolve(&input).await.unwrap();
        std::hint::black_box(serde_json::to_string_pretty(&out.body).unwrap());
        n += 1;
    }
    n as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let options = options();
    // One thread for the load generator: the server gets the rest of the machine.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let body = match &options.body {
        Some(path) => std::fs::read_to_string(path).expect("read --body"),
        None => BODY.to_owned(),
    };
    let _dir = tempfile::tempdir().unwrap();
    let database = options
        .database
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", _dir.path().join("bench.db").display()));
    let (server, url) = match &options.url {
        Some(url) => (None, url.clone()),
        None => {
            prepare(&database);
            let (child, url) = start(&database);
            (Some(child), url)
        }
    };
    println!("target: {url}");
    println!(
        "{:>11}  {:>10}  {:>9}  {:>9}  {:>7}  {:>14}",
        "connections", "requests/s", "p50 ms", "p99 ms", "errors", "CPU µs/request"
    );
    for connections in [1, 8, 64] {
        // A short warm-up, then the measured run.
        runtime.block_on(load(&url, &body, connections, 0.5));
        let cpu_before = server.as_ref().and_then(|c| cpu_seconds(c.id()));
        let run = runtime.block_on(load(&url, &body, connections, options.seconds));
        let cpu_after = server.as_ref().and_then(|c| cpu_seconds(c.id()));
        let cpu = match (cpu_before, cpu_after) {
            (Some(a), Some(b)) if run.requests > 0 => {
                format!("{:.0}", (b - a) * 1e6 / run.requests as f64)
            }
            _ => "-".to_owned(),
        };
        println!(
            "{:>11}  {:>10.0}  {:>9.2}  {:>9.2}  {:>7}  {:>14}",
            connections,
            run.requests as f64 / run.elapsed.as_secs_f64(),
            percentile(&run.latencies, 0.50),
            percentile(&run.latencies, 0.99),
            run.errors,
            cpu
        );
    }
    if options.url.is_none() {
        let in_process = runtime.block_on(baseline(&database, options.seconds.min(3.0)));
        println!("baseline: {in_process:.0} resolves/s in process on one task (no HTTP)");
    }
    if let Some(mut child) = server {
        let _ = child.kill();
        let _ = child.wait();
    }
}
