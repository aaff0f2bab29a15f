//! Load test of `protege serve`: requests/s, p50/p99 latency and CPU time per resolve for
//! `POST /v1/resolve` of the support persona at 1, 8 and 64 keep-alive connections, on
//! SQLite and PostgreSQL side by side, next to the same resolve called in process (the
//! baseline: the engine without HTTP).
//!
//! ```sh
//! cargo bench --bench serve                        # SQLite only (a temporary file)
//! cargo bench --bench serve -- --postgres postgres://postgres@127.0.0.1:5432/postgres
//! PROTEGE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test cargo bench --bench serve
//! cargo bench --bench serve -- --pin               # then once more, pinned to CPUs
//! cargo bench --bench serve -- --rounds 5          # every table five times over, medians
//! cargo bench --bench serve -- --database postgres://postgres@127.0.0.1:5432/bench
//! cargo bench --bench serve -- --url http://host:8080/v1/resolve --body body.json
//! ```
//!
//! Each database gets the demo data (`protege demo`) and its own `protege serve`. SQLite is
//! always measured. PostgreSQL is measured when `--postgres URL` is given or
//! `PROTEGE_TEST_POSTGRES_URL` is set: the database `protege_bench_serve` is dropped and
//! created again through that server URL, then served twice, over TCP (the URL's host and
//! port) and over the server's Unix socket (the same database, `host=DIR` with the
//! directory of `--socket DIR`, default `/var/run/postgresql`; skipped with a note when
//! the socket does not answer).
//!
//! The columns `serve CPU` and `postgres CPU` are the CPU time (user + system, from
//! `/proc/PID/stat`, Linux only) of the `serve` process and of the PostgreSQL server (every
//! process named `postgres`, whichever database it serves: a busy neighbour on the same
//! server counts too) during the measured seconds, divided by the resolves answered. The
//! summary gives, for each connection count, the ratio of `serve`'s CPU per resolve on
//! PostgreSQL (TCP, Unix socket) to SQLite's, then the same with the PostgreSQL server's
//! CPU added.
//!
//! `--pin` runs everything a second time (without the baselines) with `serve` on CPU 1
//! (`taskset -c 1`) and the load generator and every `postgres` process on CPU 0, so that
//! the database server and `serve` no longer share a core; the `postgres` processes get
//! their former CPUs back at the end. Without `taskset` the pinned run is skipped.
//!
//! `--rounds N` loads the databases in turn N times over (each with its own `serve`, all
//! started first), prints each round's rows, then the median of each column; each ratio of
//! the summary is then the median of the rounds' own ratios, each round having measured the
//! two sides a few seconds apart: on a machine whose speed drifts (a busy neighbour), the
//! ratio of one round to another moves less than either side does.
//!
//! `--database URL` measures that one database alone; `--url URL` measures a running
//! server (no CPU columns, no baseline), sending `--body FILE` instead of the support
//! persona's request. `--seconds N` sets the time per connection count (default 5).

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use protege::{Engine, ResolveInput};

#[path = "../tests/common/mod.rs"]
mod common;
use common::{project, protege_command};

struct Options {
    url: Option<String>,
    body: Option<PathBuf>,
    database: Option<String>,
    postgres: Option<String>,
    socket: PathBuf,
    pin: bool,
    seconds: f64,
    rounds: usize,
}

fn options() -> Options {
    let mut out = Options {
        url: None,
        body: None,
        database: None,
        postgres: std::env::var("PROTEGE_TEST_POSTGRES_URL")
            .ok()
            .filter(|u| !u.is_empty()),
        socket: PathBuf::from("/var/run/postgresql"),
        pin: false,
        seconds: 5.0,
        rounds: 1,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--url" => out.url = args.next(),
            "--body" => out.body = args.next().map(PathBuf::from),
            "--database" => out.database = args.next(),
            "--postgres" => out.postgres = args.next(),
            "--socket" => out.socket = args.next().map(PathBuf::from).unwrap_or(out.socket),
            "--pin" => out.pin = true,
            "--seconds" => out.seconds = args.next().and_then(|s| s.parse().ok()).unwrap_or(5.0),
            "--rounds" => {
                out.rounds = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .filter(|&n| n > 0)
                    .unwrap_or(1);
            }
            _ => {} // cargo bench passes `--bench`
        }
    }
    out
}

const BODY: &str = r#"{"persona":"support","message_id":"<refund-3@example.com>","format":"anthropic","now":"2026-03-10T08:00:00Z"}"#;

/// The connection counts of every table.
const CONNECTIONS: [usize; 3] = [1, 8, 64];

/// The PostgreSQL database the bench fills with the demo data.
const BENCH_DB: &str = "protege_bench_serve";

/// A database measured: its label in the tables, its URL, and whether the CPU time of the
/// PostgreSQL server is measured with it.
struct Target {
    label: &'static str,
    url: String,
    postgres: bool,
}

/// Runs `protege demo` against `database` so the support persona has its thread.
fn prepare(database: &str) {
    let out = protege_command()
        .arg("--root")
        .arg(project())
        .arg("--database")
        .arg(database)
        .arg("demo")
        .env_remove("PROTEGE_DATABASE_URL")
        .output()
        .expect("run protege demo");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `url` (a server URL) naming the database `name` instead of its own, query kept.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority = base.find("://").map_or(0, |at| at + 3);
    let end = base[authority..]
        .find('/')
        .map_or(base.len(), |at| authority + at);
    match query {
        Some(query) => format!("{}/{name}?{query}", &base[..end]),
        None => format!("{}/{name}", &base[..end]),
    }
}

/// `url` reaching the same server and database through the Unix socket in `dir`: host
/// `localhost`, the URL's port (it names the socket file) and `host=DIR`.
fn unix_url(url: &str, dir: &Path) -> String {
    let authority = url.find("://").map_or(0, |at| at + 3);
    let end = url[authority..]
        .find(['/', '?'])
        .map_or(url.len(), |at| authority + at);
    let (user, host) = match url[authority..end].rsplit_once('@') {
        Some((user, host)) => (format!("{user}@"), host),
        None => (String::new(), &url[authority..end]),
    };
    let port = host
        .rsplit_once(':')
        .filter(|(_, port)| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
        .map(|(_, port)| format!(":{port}"))
        .unwrap_or_default();
    let separator = if url.contains('?') { '&' } else { '?' };
    format!(
        "{}{user}localhost{port}{}{separator}host={}",
        &url[..authority],
        &url[end..],
        dir.display()
    )
}

/// Drops and creates [`BENCH_DB`] on the PostgreSQL server of `server`; its URL.
async fn fresh_postgres(server: &str) -> String {
    common::server::execute(
        server,
        &format!("DROP DATABASE IF EXISTS {BENCH_DB} WITH (FORCE)"),
    )
    .await;
    common::server::execute(server, &format!("CREATE DATABASE {BENCH_DB}")).await;
    with_database(server, BENCH_DB)
}

/// Connects to `url` and checks that the connection came through a Unix socket (the
/// server sees no client address).
async fn over_socket(url: &str) -> Result<(), String> {
    use protege::db::sea_orm::{ConnectionTrait as _, Database, Statement};
    let conn = Database::connect(url).await.map_err(|e| e.to_string())?;
    let sql = "SELECT inet_client_addr() IS NULL AS local";
    let row = conn
        .query_one_raw(Statement::from_string(conn.get_database_backend(), sql))
        .await
        .map_err(|e| e.to_string())?
        .ok_or("no answer")?;
    let local: bool = row.try_get("", "local").map_err(|e| e.to_string())?;
    let _ = conn.close().await;
    if local {
        Ok(())
    } else {
        Err("the connection went over TCP".to_owned())
    }
}

/// The databases of this run, each filled with the demo data: `--database` alone, or
/// SQLite (a file in `dir`) and, with a PostgreSQL server, its database over TCP and over
/// the Unix socket.
fn targets(options: &Options, runtime: &tokio::runtime::Runtime, dir: &Path) -> Vec<Target> {
    if let Some(url) = &options.database {
        prepare(url);
        let postgres = url.starts_with("postgres");
        let label = if postgres { "PostgreSQL" } else { "database" };
        return vec![Target {
            label,
            url: url.clone(),
            postgres,
        }];
    }
    let sqlite = format!("sqlite://{}", dir.join("bench.db").display());
    prepare(&sqlite);
    let mut out = vec![Target {
        label: "SQLite",
        url: sqlite,
        postgres: false,
    }];
    let Some(server) = &options.postgres else {
        return out;
    };
    let tcp = runtime.block_on(fresh_postgres(server));
    prepare(&tcp);
    let unix = unix_url(&tcp, &options.socket);
    out.push(Target {
        label: "PostgreSQL TCP",
        url: tcp,
        postgres: true,
    });
    match runtime.block_on(over_socket(&unix)) {
        Ok(()) => out.push(Target {
            label: "PostgreSQL Unix",
            url: unix,
            postgres: true,
        }),
        Err(why) => println!(
            "PostgreSQL over the Unix socket in {} left out: {why}",
            options.socket.display()
        ),
    }
    out
}

/// A running `protege serve`; killed when dropped.
struct Serve {
    child: Child,
    url: String,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `protege` command, run on CPU 1 alone when `pinned`.
fn serve_command(pinned: bool) -> Command {
    if !pinned {
        return protege_command();
    }
    let mut command = Command::new("taskset");
    command
        .args(["-c", "1"])
        .arg(env!("CARGO_BIN_EXE_protege"))
        .current_dir(project())
        .env("PROTEGE_FENCE_KEY", common::FENCE_KEY);
    command
}

/// Starts `protege serve` on a free port; the running server and its resolve URL.
fn start(database: &str, pinned: bool) -> Serve {
    let mut child = serve_command(pinned)
        .arg("--root")
        .arg(project())
        .arg("--database")
        .arg(database)
        .args(["serve", "--listen", "127.0.0.1:0", "--no-watch"])
        .env_remove("PROTEGE_SERVE_TOKEN")
        .env_remove("PROTEGE_DATABASE_URL")
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
    Serve {
        child,
        url: format!("{base}/v1/resolve"),
    }
}

/// The CPU seconds (user + system) a process has used, from /proc (Linux only).
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// The ids of the processes named `postgres` (the PostgreSQL server's).
fn postgres_pids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|comm| comm.trim_end() == "postgres")
        })
        .collect()
}

/// The CPU seconds of every `postgres` process, by process id.
fn postgres_cpu() -> HashMap<u32, f64> {
    postgres_pids()
        .into_iter()
        .filter_map(|pid| Some((pid, cpu_seconds(pid)?)))
        .collect()
}

/// The CPU seconds the PostgreSQL server used between two [`postgres_cpu`]: the processes
/// seen both times, and those started in between from zero (those gone are not counted).
fn postgres_used(before: &HashMap<u32, f64>, after: &HashMap<u32, f64>) -> f64 {
    after
        .iter()
        .map(|(pid, cpu)| cpu - before.get(pid).copied().unwrap_or(0.0))
        .sum()
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

/// One line of a table: the load at one connection count and the CPU time per resolve.
#[derive(Clone)]
struct Row {
    connections: usize,
    per_second: f64,
    p50: f64,
    p99: f64,
    errors: usize,
    serve_cpu: Option<f64>,
    postgres_cpu: Option<f64>,
}

/// A short warm-up, then `seconds` of load on `url` at `connections`, with the CPU time of
/// the process `server` and, when `postgres`, of the PostgreSQL server.
fn measure(
    runtime: &tokio::runtime::Runtime,
    url: &str,
    body: &str,
    connections: usize,
    seconds: f64,
    server: Option<u32>,
    postgres: bool,
) -> Row {
    runtime.block_on(load(url, body, connections, 0.5));
    let serve_before = server.and_then(cpu_seconds);
    let postgres_before = postgres.then(postgres_cpu);
    let run = runtime.block_on(load(url, body, connections, seconds));
    let serve_after = server.and_then(cpu_seconds);
    let postgres_after = postgres.then(postgres_cpu);
    let per_resolve = |cpu: f64| (run.requests > 0).then(|| cpu * 1e6 / run.requests as f64);
    Row {
        connections,
        per_second: run.requests as f64 / run.elapsed.as_secs_f64(),
        p50: percentile(&run.latencies, 0.50),
        p99: percentile(&run.latencies, 0.99),
        errors: run.errors,
        serve_cpu: serve_before
            .zip(serve_after)
            .and_then(|(a, b)| per_resolve(b - a)),
        postgres_cpu: postgres_before
            .zip(postgres_after)
            .and_then(|(a, b)| per_resolve(postgres_used(&a, &b))),
    }
}

fn header() {
    println!(
        "{:<15}  {:>11}  {:>10}  {:>8}  {:>8}  {:>6}  {:>20}  {:>23}",
        "database",
        "connections",
        "requests/s",
        "p50 ms",
        "p99 ms",
        "errors",
        "serve CPU µs/resolve",
        "postgres CPU µs/resolve"
    );
}

fn print_row(label: &str, row: &Row) {
    let micros = |cpu: Option<f64>| cpu.map_or("-".to_owned(), |c| format!("{c:.0}"));
    println!(
        "{:<15}  {:>11}  {:>10.0}  {:>8.2}  {:>8.2}  {:>6}  {:>20}  {:>23}",
        label,
        row.connections,
        row.per_second,
        row.p50,
        row.p99,
        row.errors,
        micros(row.serve_cpu),
        micros(row.postgres_cpu)
    );
}

/// The middle value of `values` (the mean of the two middle ones for an even count); `None`
/// when there is none.
fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

/// The row of each column's median over `rounds` (the rows of one target at one connection
/// count), the errors added up.
fn median_row(rounds: &[Row]) -> Row {
    let of =
        |field: &dyn Fn(&Row) -> Option<f64>| median(rounds.iter().filter_map(field).collect());
    Row {
        connections: rounds[0].connections,
        per_second: of(&|r| Some(r.per_second)).unwrap_or(0.0),
        p50: of(&|r| Some(r.p50)).unwrap_or(0.0),
        p99: of(&|r| Some(r.p99)).unwrap_or(0.0),
        errors: rounds.iter().map(|r| r.errors).sum(),
        serve_cpu: of(&|r| r.serve_cpu),
        postgres_cpu: of(&|r| r.postgres_cpu),
    }
}

/// For each PostgreSQL target, the ratios of its CPU per resolve to SQLite's at each
/// connection count: `serve`'s alone, then with the PostgreSQL server's. `results` holds,
/// per target, per connection count, the row of each round; a ratio is the median of the
/// rounds' own ratios (each round measured the two side by side, so a slower moment of the
/// machine weighs on both sides of it).
fn summary(targets: &[Target], results: &[Vec<Vec<Row>>]) {
    let Some(sqlite) = targets.iter().position(|t| t.label == "SQLite") else {
        return;
    };
    let ratios = |counts: &[Vec<Row>], cpu: &dyn Fn(&Row) -> Option<f64>| {
        counts
            .iter()
            .zip(&results[sqlite])
            .map(|(rounds, bases)| {
                let each = rounds
                    .iter()
                    .zip(bases)
                    .filter_map(|(row, base)| match (cpu(row), base.serve_cpu) {
                        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
                        _ => None,
                    })
                    .collect();
                match median(each) {
                    Some(ratio) => format!("{} conn {ratio:.2}×", rounds[0].connections),
                    None => format!("{} conn -", rounds[0].connections),
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    for (target, counts) in targets.iter().zip(results).filter(|(t, _)| t.postgres) {
        let serve = ratios(counts, &|row| row.serve_cpu);
        println!("CPU per resolve, {}/SQLite: {serve}", target.label);
    }
    for (target, counts) in targets.iter().zip(results).filter(|(t, _)| t.postgres) {
        let both = ratios(counts, &|row| Some(row.serve_cpu? + row.postgres_cpu?));
        println!(
            "CPU per resolve with the PostgreSQL server's, {}/SQLite: {both}",
            target.label
        );
    }
}

/// The CPU list a process may run on (`taskset -p -c`), e.g. `0,1`.
fn affinity(pid: u32) -> Option<String> {
    let out = Command::new("taskset")
        .args(["-p", "-c", &pid.to_string()])
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    Some(text.rsplit_once(": ")?.1.trim().to_owned()).filter(|_| out.status.success())
}

/// Puts every thread of process `pid` on the CPUs of `list`.
fn set_affinity(pid: u32, list: &str) {
    let _ = Command::new("taskset")
        .args(["-a", "-p", "-c", list, &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn taskset_available() -> bool {
    Command::new("taskset")
        .arg("-V")
        .output()
        .is_ok_and(|out| out.status.success())
}

/// This process and every `postgres` process pinned to CPU 0; each gets its former CPUs
/// back when dropped (a panic included), and a `postgres` process started in between
/// (forked from a pinned one) this process's former CPUs.
struct Pinning {
    restore: Vec<(u32, String)>,
    all: String,
}

impl Pinning {
    fn apply() -> Pinning {
        let own = std::process::id();
        let all = affinity(own).unwrap_or_else(|| "0,1".to_owned());
        let mut restore = vec![(own, all.clone())];
        set_affinity(own, "0");
        for pid in postgres_pids() {
            if let Some(list) = affinity(pid) {
                set_affinity(pid, "0");
                restore.push((pid, list));
            }
        }
        Pinning { restore, all }
    }
}

impl Drop for Pinning {
    fn drop(&mut self) {
        for (pid, list) in &self.restore {
            set_affinity(*pid, list);
        }
        for pid in postgres_pids() {
            if !self.restore.iter().any(|(known, _)| *known == pid) {
                set_affinity(pid, &self.all);
            }
        }
    }
}

/// One table: each target served by its own `protege serve` and loaded at every
/// connection count for `--seconds`, `--rounds` times over (the targets in turn in each
/// round, so that the machine's slower moments fall on all of them), then (unpinned) the
/// in-process baselines, then the ratios. With several rounds, each round's rows, then their
/// medians.
fn pass(
    runtime: &tokio::runtime::Runtime,
    targets: &[Target],
    body: &str,
    options: &Options,
    pinned: bool,
) {
    let Options {
        seconds, rounds, ..
    } = *options;
    let _pinning = pinned.then(Pinning::apply);
    println!();
    if pinned {
        println!("pinned: serve on CPU 1, the load generator and PostgreSQL on CPU 0");
    } else {
        println!("unpinned: every process on every CPU");
    }
    let servers: Vec<Serve> = targets.iter().map(|t| start(&t.url, pinned)).collect();
    // Per target, per connection count, the row of each round.
    let mut results = vec![vec![Vec::with_capacity(rounds); CONNECTIONS.len()]; targets.len()];
    for round in 1..=rounds {
        if rounds > 1 {
            println!("round {round} of {rounds}");
        }
        header();
        for ((target, serve), counts) in targets.iter().zip(&servers).zip(&mut results) {
            for (&connections, rows) in CONNECTIONS.iter().zip(counts.iter_mut()) {
                let row = measure(
                    runtime,
                    &serve.url,
                    body,
                    connections,
                    seconds,
                    Some(serve.child.id()),
                    target.postgres,
                );
                print_row(target.label, &row);
                rows.push(row);
            }
        }
    }
    drop(servers);
    if rounds > 1 {
        println!("median of {rounds} rounds");
        header();
        for (target, counts) in targets.iter().zip(&results) {
            for rows in counts {
                print_row(target.label, &median_row(rows));
            }
        }
    }
    if !pinned {
        for target in targets {
            let rate = runtime.block_on(baseline(&target.url, seconds.min(3.0)));
            println!(
                "baseline, {}: {rate:.0} resolves/s in process on one task (no HTTP)",
                target.label
            );
        }
    }
    summary(targets, &results);
}

/// The load on a server started elsewhere (`--url`): no CPU time, no baseline.
fn external(runtime: &tokio::runtime::Runtime, url: &str, body: &str, seconds: f64) {
    println!("target: {url}");
    header();
    for connections in CONNECTIONS {
        let row = measure(runtime, url, body, connections, seconds, None, false);
        print_row("-", &row);
    }
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
    if let Some(url) = &options.url {
        external(&runtime, url, &body, options.seconds);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let targets = targets(&options, &runtime, dir.path());
    for target in &targets {
        println!(
            "{:<15}  {}",
            target.label,
            protege::db::redact_url(&target.url)
        );
    }
    pass(&runtime, &targets, &body, &options, false);
    if options.pin {
        if taskset_available() {
            pass(&runtime, &targets, &body, &options, true);
        } else {
            println!("taskset not found: no pinned run");
        }
    }
}
