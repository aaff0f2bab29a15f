// Tests may stay long: one fault after another, each self-contained.
//! Faults: several writers at once, connections that hang, output that cannot
//! be written, fixtures that break the rules, and usage mistakes — all through the built
//! `protege` binary. Database cases run on SQLite and on every server named by
//! `PROTEGE_TEST_POSTGRES_URL` / `PROTEGE_TEST_MYSQL_URL`.

use std::io::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use protege::db;
use protege::db::sea_orm::{ConnectionTrait, DatabaseConnection, Statement};

mod common;
use common::{project, protege_command};

/// `protege --root <project> --database URL ARGS...` with a clean environment.
fn command(url: &str, args: &[&str]) -> Command {
    let mut cmd = protege_command();
    cmd.arg("--root")
        .arg(project())
        .arg("--database")
        .arg(url)
        .args(args)
        .env_remove("PROTEGE_DATABASE_URL")
        .env_remove("PROTEGE_CONNECT_TIMEOUT")
        .stdin(Stdio::null());
    cmd
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl From<Output> for Run {
    fn from(out: Output) -> Self {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// Waits for `child` at most `limit`, killing it (and failing the test) past that.
fn wait_with_watchdog(mut child: Child, limit: Duration) -> Run {
    let start = Instant::now();
    loop {
        match child.try_wait().expect("wait for protege") {
            Some(_) => return child.wait_with_output().expect("collect output").into(),
            None if start.elapsed() > limit => {
                child.kill().ok();
                let out = child.wait_with_output().expect("collect output");
                panic!(
                    "protege still running after {limit:?}; stderr: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn run(url: &str, args: &[&str]) -> Run {
    let child = command(url, args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn protege");
    wait_with_watchdog(child, Duration::from_secs(120))
}

// ---------------------------------------------------------------------------------------
// Fresh, empty databases on every backend.

/// A database the test owns: a new SQLite file, or a new database on a server.
struct FreshDb {
    backend: &'static str,
    url: String,
    server: Option<(String, String)>,
    _dir: tempfile::TempDir,
}

fn servers() -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for (name, var) in [
        ("postgres", "PROTEGE_TEST_POSTGRES_URL"),
        ("mysql", "PROTEGE_TEST_MYSQL_URL"),
    ] {
        if let Ok(url) = std::env::var(var)
            && !url.is_empty()
        {
            out.push((name, url));
        }
    }
    out
}

/// `url` with its database path replaced by `name`.
fn with_database(url: &str, name: &str) -> String {
    let scheme_end = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[scheme_end..];
    let path_start = rest.find('/').map_or(url.len(), |i| scheme_end + i);
    let query = url[path_start..]
        .find('?')
        .map(|i| &url[path_start + i..])
        .unwrap_or("");
    format!("{}/{name}{query}", &url[..path_start])
}

fn unique(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("pt_{test}_{}_{nanos}", std::process::id())
}

/// One empty (unmigrated) database per backend.
async fn fresh_databases(test: &str) -> Vec<FreshDb> {
    let dir = tempfile::tempdir().unwrap();
    let mut out = vec![FreshDb {
        backend: "sqlite",
        url: format!("sqlite://{}", dir.path().join("fresh.db").display()),
        server: None,
        _dir: dir,
    }];
    for (backend, server) in servers() {
        let name = unique(test);
        let admin = db::connect(&server).await.expect("test server");
        let sql = if backend == "mysql" {
            format!("CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
        } else {
            format!("CREATE DATABASE \"{name}\"")
        };
        admin
            .execute_unprepared(&sql)
            .await
            .expect("create database");
        admin.close().await.ok();
        out.push(FreshDb {
            backend,
            url: with_database(&server, &name),
            server: Some((server, name)),
            _dir: tempfile::tempdir().unwrap(),
        });
    }
    out
}

impl FreshDb {
    async fn drop_database(self) {
        let Some((server, name)) = self.server else {
            return;
        };
        let admin = db::connect(&server).await.expect("test server");
        let sql = if self.backend == "mysql" {
            format!("DROP DATABASE IF EXISTS `{name}`")
        } else {
            format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")
        };
        admin.execute_unprepared(&sql).await.ok();
        admin.close().await.ok();
    }
}

async fn count(conn: &DatabaseConnection, sql: &str) -> i64 {
    let row = conn
        .query_one_raw(Statement::from_string(
            conn.get_database_backend(),
            format!("SELECT COUNT(*) AS n FROM {sql}"),
        ))
        .await
        .expect("count query")
        .expect("one row");
    row.try_get::<i64>("", "n").expect("count")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Starts `n` copies of `protege ARGS` at once and waits for all of them.
fn all_at_once(n: usize, url: &str, args: &[&str]) -> Vec<Run> {
    let children: Vec<Child> = (0..n)
        .map(|_| {
            command(url, args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn protege")
        })
        .collect();
    children
        .into_iter()
        .map(|c| wait_with_watchdog(c, Duration::from_secs(180)))
        .collect()
}

// ---------------------------------------------------------------------------------------
// Several writers at once.

/// What `db migrate` prints on a new database: every migration it applied, by name.
const ALL_APPLIED: &str = "applied 16 migrations:\n  m20260101_000001_create_tables\n  \
     m20260601_000001_create_thread_summaries\n  \
     m20261201_000001_index_messages_in_reply_to\n  m20261202_000002_store_html_text\n  \
     m20261203_000001_create_runs\n  m20261204_000001_create_settings\n  \
     m20261204_000002_convert_html_again\n  m20261205_000001_create_message_addresses\n  \
     m20261206_000001_create_message_strips\n  m20261207_000001_mail_rules_again\n  \
     m20261208_000001_create_outbox\n  m20261209_000001_create_agent_jobs\n  \
     m20261210_000001_responsibility_slot_times\n  m20261211_000001_create_inbox\n  \
     m20261212_000001_create_erasure\n  m20261213_000001_index_outbox_persona_created\n\
     database schema is up to date\n";

#[test]
fn concurrent_migrations_all_succeed_on_every_backend() {
    let rt = runtime();
    for fresh in rt.block_on(fresh_databases("migrate")) {
        let runs = all_at_once(6, &fresh.url, &["db", "migrate"]);
        // One process applies the migrations and names them; the others find the schema
        // up to date.
        let first = ALL_APPLIED;
        let mut outputs: Vec<(i32, &str, &str)> = runs
            .iter()
            .map(|r| (r.code, r.stdout.as_str(), r.stderr.as_str()))
            .collect();
        outputs.sort();
        let mut expected = vec![(0, "database schema is up to date\n", ""); 5];
        expected.push((0, first, ""));
        expected.sort();
        assert_eq!(outputs, expected, "backend {}", fresh.backend);
        rt.block_on(async {
            let conn = db::connect(&fresh.url).await.unwrap();
            // One row per migration (the mail store, `thread_summaries`, the In-Reply-To
            // index, the stored text of HTML bodies, the runs, the settings, the HTML bodies
            // converted again, the messages' addresses, their stripped bodies, the mail made
            // again by the second rules, the outbox, the agent's jobs, the slots' wall-clock
            // times, the inbox's state, what erasure keeps, the index of the daily cap), each
            // applied once.
            assert_eq!(
                count(&conn, "protege_migrations").await,
                16,
                "{}",
                fresh.backend
            );
            assert_eq!(count(&conn, "messages").await, 0, "{}", fresh.backend);
            conn.close().await.ok();
        });
        rt.block_on(fresh.drop_database());
    }
}

/// Two overlapping fixtures: `small` holds thread 1's first two messages, `large` all of
/// thread 1 and a second thread.
fn overlapping_fixtures(dir: &Path) -> (PathBuf, PathBuf) {
    let message = |id: &str, at: &str, tool: bool| {
        serde_json::json!({
            "message_id": id, "direction": "inbound", "from": "Alice <alice@example.com>",
            "to": ["support@acme.test"], "subject": "Refund", "sent_at": at,
            "text_body": format!("body of {id}"),
            "attachments": [{"id": format!("att-{id}"), "filename": "a.txt",
                             "content_type": "text/plain", "byte_size": 3,
                             "data_base64": "YWJj"}],
            "tool_uses": if tool { serde_json::json!([{"run_id": "run-1", "turn_index": 0,
                "position": 0, "tool_call_id": "call_1", "name": "lookup_order",
                "input": {"order": "A-1"}, "result": "shipped"}]) } else { serde_json::json!([]) },
        })
    };
    let m1 = message("<m1@example.com>", "2026-01-05T10:00:00Z", true);
    let m2 = message("<m2@example.com>", "2026-01-05T11:00:00Z", false);
    let m3 = message("<m3@example.com>", "2026-01-05T12:00:00Z", false);
    let m4 = message("<m4@example.com>", "2026-01-06T09:00:00Z", false);
    let small = serde_json::json!({"threads": [{"subject": "Refund", "messages": [m1, m2]}]});
    let large = serde_json::json!({"threads": [
        {"subject": "Refund", "messages": [m1, m2, m3]},
        {"subject": "Other", "messages": [m4]},
    ]});
    let small_path = dir.join("small.json");
    let large_path = dir.join("large.json");
    std::fs::write(&small_path, small.to_string()).unwrap();
    std::fs::write(&large_path, large.to_string()).unwrap();
    (small_path, large_path)
}

/// The number of messages an `imported T threads, M messages (P already present)` line
/// reports as new and as already present.
fn imported(line: &str) -> (i64, i64) {
    let words: Vec<&str> = line.split_whitespace().collect();
    let messages = words[3].parse().expect("message count");
    let present = words[5]
        .trim_start_matches('(')
        .parse()
        .expect("present count");
    (messages, present)
}

#[test]
fn concurrent_imports_of_overlapping_fixtures_store_each_message_once() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (small, large) = overlapping_fixtures(dir.path());
    let (small, large) = (small.to_str().unwrap(), large.to_str().unwrap());
    for fresh in rt.block_on(fresh_databases("import")) {
        // Three of each, all started together on an empty database (their first command).
        let children: Vec<(bool, Child)> = (0..6)
            .map(|i| {
                let file = if i % 2 == 0 { small } else { large };
                let child = command(&fresh.url, &["db", "import", file])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("spawn protege");
                (i % 2 == 0, child)
            })
            .collect();
        let mut new_messages = 0;
        for (is_small, child) in children {
            let r = wait_with_watchdog(child, Duration::from_secs(180));
            assert_eq!((r.code, r.stderr.as_str()), (0, ""), "{}", fresh.backend);
            let (messages, present) = imported(r.stdout.trim_end());
            assert_eq!(messages + present, if is_small { 2 } else { 4 });
            new_messages += messages;
        }
        assert_eq!(new_messages, 4, "{}", fresh.backend);
        rt.block_on(async {
            let conn = db::connect(&fresh.url).await.unwrap();
            let b = fresh.backend;
            assert_eq!(count(&conn, "email_threads").await, 2, "{b}");
            assert_eq!(count(&conn, "messages").await, 4, "{b}");
            assert_eq!(count(&conn, "attachments").await, 4, "{b}");
            assert_eq!(count(&conn, "tool_uses").await, 1, "{b}");
            assert_eq!(
                count(&conn, "(SELECT DISTINCT email_thread_id FROM messages WHERE message_id IN ('<m1@example.com>', '<m2@example.com>', '<m3@example.com>')) t").await,
                1,
                "{b}: thread 1 is one thread"
            );
            conn.close().await.ok();
        });
        // A later import of the same file changes nothing.
        let again = run(&fresh.url, &["db", "import", large]);
        assert_eq!(
            (again.code, again.stdout.as_str()),
            (0, "imported 0 threads, 0 messages (4 already present)\n")
        );
        rt.block_on(fresh.drop_database());
    }
}

#[test]
fn a_database_failure_during_import_blames_the_database_not_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (small, _) = overlapping_fixtures(dir.path());
    let url = format!("sqlite://{}", dir.path().join("refusing.db").display());
    assert_eq!(run(&url, &["db", "migrate"]).code, 0);
    // The fixture is fine; the database refuses the write.
    runtime().block_on(async {
        let conn = db::connect(&url).await.unwrap();
        conn.execute_unprepared(
            "CREATE TRIGGER refuse BEFORE INSERT ON messages BEGIN SELECT RAISE(ABORT, 'disk quota exceeded'); END",
        )
        .await
        .unwrap();
        conn.close().await.ok();
    });
    let r = run(&url, &["db", "import", small.to_str().unwrap()]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        format!(
            "error: database error while importing `{}`: error returned from database: (code: 1811) disk quota exceeded\n",
            small.display()
        )
    );
    runtime().block_on(async {
        let conn = db::connect(&url).await.unwrap();
        assert_eq!(count(&conn, "email_threads").await, 0);
    });
}

// ---------------------------------------------------------------------------------------
// Connections.

/// A server that accepts TCP connections and never says a word.
fn silent_server() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

#[test]
fn a_server_that_never_answers_is_an_error_within_the_timeout() {
    let (listener, port) = silent_server();
    // Accept and hold every connection so the client sees an open, silent socket.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    for scheme in ["postgres", "mysql"] {
        let url = format!("{scheme}://app:hunter22@127.0.0.1:{port}/prod");
        let start = Instant::now();
        let child = command(&url, &["db", "migrate"])
            .env("PROTEGE_CONNECT_TIMEOUT", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let r = wait_with_watchdog(child, Duration::from_secs(30));
        let elapsed = start.elapsed();
        assert_eq!(r.code, 1, "{scheme}");
        assert_eq!(
            r.stderr,
            format!(
                "error: cannot connect to database `{scheme}://app:***@127.0.0.1:{port}/prod`: no answer within 1 s\n"
            )
        );
        assert!(
            elapsed < Duration::from_secs(10),
            "{scheme} took {elapsed:?}"
        );
    }
}

#[test]
fn connect_timeout_and_empty_database_url_settings() {
    let dir = tempfile::tempdir().unwrap();
    let out = protege_command()
        .arg("--root")
        .arg(dir.path())
        .args(["db", "migrate"])
        .env("PROTEGE_DATABASE_URL", "")
        .env_remove("PROTEGE_CONNECT_TIMEOUT")
        .output()
        .unwrap();
    let r = Run::from(out);
    assert_eq!((r.code, r.stdout.as_str()), (0, ALL_APPLIED));
    assert!(
        dir.path().join("protege.db").is_file(),
        "the default database"
    );

    let url = format!("sqlite://{}", dir.path().join("x.db").display());
    let r = Run::from(
        command(&url, &["db", "migrate"])
            .env("PROTEGE_CONNECT_TIMEOUT", "soon")
            .output()
            .unwrap(),
    );
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        "error: invalid `PROTEGE_CONNECT_TIMEOUT` `soon`: expected a number of seconds greater than 0 and at most 86400\n"
    );
    // The flag: its error names the flag, and it wins over the variable.
    let r = Run::from(
        command(&url, &["db", "migrate", "--connect-timeout", "0"])
            .output()
            .unwrap(),
    );
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            2,
            "error: invalid `--connect-timeout` `0`: expected a number of seconds greater than 0 and at most 86400\n"
        )
    );
    let r = Run::from(
        command(&url, &["--connect-timeout", "2.5", "db", "migrate"])
            .env("PROTEGE_CONNECT_TIMEOUT", "soon")
            .output()
            .unwrap(),
    );
    assert_eq!(
        (r.code, r.stdout.as_str(), r.stderr.as_str()),
        (0, ALL_APPLIED, "")
    );
    // Run again: nothing left to apply.
    let r = Run::from(command(&url, &["db", "migrate"]).output().unwrap());
    assert_eq!(
        (r.code, r.stdout.as_str(), r.stderr.as_str()),
        (0, "database schema is up to date\n", "")
    );
}

#[test]
fn help_names_the_database_variables_without_their_values() {
    let r = Run::from(
        protege_command()
            .arg("--help")
            .env("PROTEGE_DATABASE_URL", "postgres://app:hunter22@db/prod")
            .env(
                "PROTEGE_READ_DATABASE_URL",
                "postgres://app:hunter22@replica/prod",
            )
            .env("PROTEGE_CONNECT_TIMEOUT", "3")
            .output()
            .unwrap(),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stdout.contains("hunter22"), "{}", r.stdout);
    for line in [
        "[env: PROTEGE_DATABASE_URL]",
        "[env: PROTEGE_READ_DATABASE_URL]",
        "[env: PROTEGE_CONNECT_TIMEOUT=3]",
    ] {
        assert!(r.stdout.contains(line), "{line} missing from {}", r.stdout);
    }
}

#[test]
fn passwords_never_appear_in_output() {
    assert_eq!(
        db::redact_url("postgres://app:hunter22@db.example/prod"),
        "postgres://app:***@db.example/prod"
    );
    assert_eq!(
        db::redact_url("mysql://root@127.0.0.1:3306/test"),
        "mysql://root@127.0.0.1:3306/test"
    );
    assert_eq!(
        db::redact_url(
            "postgresql://u:p%40ss@h/d?sslmode=require&password=a&Pass=b&pwd=c&sslpassword=d&user=e"
        ),
        "postgresql://u:***@h/d?sslmode=require&password=***&Pass=***&pwd=***&sslpassword=***&user=e"
    );
    assert_eq!(
        db::redact_url("postgres://h/d?passwords=keep#frag"),
        "postgres://h/d?passwords=keep#frag"
    );
    assert_eq!(db::redact_url("mariadb://u:a@b@h/d"), "mariadb://u:***@h/d");
    assert_eq!(db::redact_url("sqlite:///tmp/x.db"), "sqlite:///tmp/x.db");
    assert_eq!(
        db::redact_text(
            "login for app with hunter22 failed at postgres://app:hunter22@h/d",
            "postgres://app:hunter22@h/d"
        ),
        "login for app with *** failed at postgres://app:***@h/d"
    );

    // A refused connection: the URL is printed without its secrets.
    let (listener, port) = silent_server();
    drop(listener);
    let url = format!("postgres://app:hunter22@127.0.0.1:{port}/prod?sslpassword=topsecret");
    let r = run(&url, &["db", "migrate"]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        format!(
            "error: cannot connect to database `postgres://app:***@127.0.0.1:{port}/prod?sslpassword=***`: error communicating with database: Connection refused (os error 111)\n"
        )
    );
    assert!(!r.stderr.contains("hunter22") && !r.stderr.contains("topsecret"));
}

// ---------------------------------------------------------------------------------------
// Output.

/// A database holding the demo data.
fn demo_db() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("demo.db").display());
    let r = run(&url, &["demo"]);
    assert_eq!(r.code, 0, "demo failed: {}", r.stderr);
    (dir, url)
}

/// A pipe whose read end is already closed.
fn closed_pipe() -> std::io::PipeWriter {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    writer
}

fn dev_full() -> std::fs::File {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap()
}

const EML: &str = "From: Alice <alice@example.com>\r\nTo: support@acme.test\r\nSubject: Hello\r\nMessage-ID: <eml-1@example.com>\r\nDate: Mon, 5 Jan 2026 10:00:00 +0000\r\n\r\nHi there.\r\n";

/// The commands that print data, each with the exit code it has when its output is lost
/// to a closed pipe (its normal one).
fn printing_commands(dir: &Path) -> Vec<Vec<String>> {
    let eml = dir.join("one.eml");
    std::fs::write(&eml, EML).unwrap();
    let fixture = project().join("examples/data/demo.json");
    [
        vec!["check"],
        vec![
            "resolve",
            "--persona",
            "support",
            "--message",
            "<refund-3@example.com>",
            "--now",
            "2026-03-10T08:00:00Z",
        ],
        vec!["db", "import", fixture.to_str().unwrap()],
        vec!["db", "import-eml", eml.to_str().unwrap()],
        vec![
            "resolve",
            "--persona",
            "support",
            "--message",
            "<refund-3@example.com>",
            "--now",
            "2026-03-10T08:00:00Z",
            "--explain",
        ],
    ]
    .into_iter()
    .map(|args| args.into_iter().map(str::to_owned).collect())
    .collect()
}

/// `stderr` without the `--explain` table (its times vary), checking the table's shape.
fn explain_free(stderr: &str) -> &str {
    const LAST: &str = "tokens are estimated as characters / 4, rounded up, plus 4 per message\n";
    match stderr.find(LAST) {
        Some(at) => {
            assert!(stderr.starts_with("  #  resolver "), "{stderr}");
            &stderr[at + LAST.len()..]
        }
        None => stderr,
    }
}

#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    let (dir, url) = demo_db();
    for args in printing_commands(dir.path()) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = command(&url, &args)
            .stdout(closed_pipe())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let r = Run::from(out);
        assert_eq!((r.code, explain_free(&r.stderr)), (0, ""), "{args:?}");

        // Closed stderr: stdout is still complete.
        let out = command(&url, &args)
            .stdout(Stdio::piped())
            .stderr(closed_pipe())
            .output()
            .unwrap();
        let r = Run::from(out);
        assert_eq!(r.code, 0, "{args:?}");
        assert!(r.stdout.ends_with('\n') && !r.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn a_full_disk_is_cannot_write_output() {
    let (dir, url) = demo_db();
    for args in printing_commands(dir.path()) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = Run::from(
            command(&url, &args)
                .stdout(dev_full())
                .stderr(Stdio::piped())
                .output()
                .unwrap(),
        );
        assert_eq!(
            (r.code, explain_free(&r.stderr)),
            (
                1,
                "error: cannot write output: no space left on device (os error 28)\n"
            ),
            "{args:?}"
        );
    }
    // Help goes to stdout too.
    let r = Run::from(
        command(&url, &["--help"])
            .stdout(dev_full())
            .stderr(Stdio::piped())
            .output()
            .unwrap(),
    );
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            1,
            "error: cannot write output: no space left on device (os error 28)\n"
        )
    );
    // `--explain` writes its table to stderr first: a full stderr stops it with exit 1.
    let args = printing_commands(dir.path()).pop().unwrap();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = Run::from(
        command(&url, &args)
            .stdout(Stdio::piped())
            .stderr(dev_full())
            .output()
            .unwrap(),
    );
    assert_eq!((r.code, r.stdout.as_str()), (1, ""));
}

// ---------------------------------------------------------------------------------------
// Usage.

#[test]
fn usage_rules() {
    let (_dir, url) = demo_db();
    let r = run(
        &url,
        &[
            "resolve",
            "--persona",
            "support",
            "--message",
            "<refund-2@acme.test>",
        ],
    );
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        "error: message `<refund-2@acme.test>` was sent by the persona; a reply run answers an inbound message\n"
    );

    let r = run(
        &url,
        &[
            "resolve",
            "--persona",
            "support",
            "--message",
            "<refund-3@example.com>",
            "--format",
            "openai",
            "--model",
            "",
        ],
    );
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        "error: a value is required for '--model <NAME>' but none was supplied\n\nFor more information, try '--help'.\n"
    );

    let file = project().join("Cargo.toml");
    let r = run(&url, &["--personas", file.to_str().unwrap(), "check"]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        format!(
            "error: persona folder `{}` is not a directory\n",
            file.display()
        )
    );
}

// ---------------------------------------------------------------------------------------
// Fixture checks, each with its JSON path.

fn fixture_error(edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut f = serde_json::json!({"threads": [{"subject": "S", "messages": [
        {"message_id": "<a@x>", "direction": "inbound", "from": "a@x", "to": ["b@x"],
         "subject": "S", "sent_at": "2026-01-05T10:00:00Z",
         "attachments": [{"id": "att-a", "filename": "f", "content_type": "text/plain",
                          "byte_size": 3, "data_base64": "YWJj"}],
         "tool_uses": [{"run_id": "r", "turn_index": 0, "position": 0,
                        "tool_call_id": "call_1", "name": "lookup", "input": {}}]},
        {"message_id": "<b@x>", "direction": "outbound", "from": "b@x", "to": ["a@x"],
         "subject": "S", "sent_at": "2026-01-05T11:00:00Z",
         "tool_uses": [{"run_id": "r", "turn_index": 1, "position": 0,
                        "tool_call_id": "call_2", "name": "lookup", "input": {}}]}]}]});
    edit(&mut f);
    match db::parse_fixture(&f.to_string()) {
        Ok(_) => "ok".to_owned(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn fixtures_are_checked_before_anything_is_written() {
    let m0 = "threads[0].messages[0]";
    assert_eq!(fixture_error(|_| {}), "ok");
    assert_eq!(
        fixture_error(
            |f| f["threads"][0]["messages"][1]["tool_uses"][0]["tool_call_id"] = "call_1".into()
        ),
        "threads[0].messages[1].tool_uses[0].tool_call_id: duplicate tool call id `call_1` in this thread (first at threads[0].messages[0].tool_uses[0].tool_call_id)"
    );
    for bad in ["look up", "", "ü", &"x".repeat(65), "a.b"] {
        assert_eq!(
            fixture_error(|f| f["threads"][0]["messages"][0]["tool_uses"][0]["name"] = bad.into()),
            format!(
                "{m0}.tool_uses[0].name: invalid tool name `{bad}`: expected 1 to 64 characters from `a-z`, `A-Z`, `0-9`, `_` and `-`"
            )
        );
    }
    assert_eq!(
        fixture_error(
            |f| f["threads"][0]["messages"][0]["tool_uses"][0]["name"] = "A-z_09"
                .repeat(10)
                .chars()
                .take(64)
                .collect::<String>()
                .into()
        ),
        "ok"
    );
    for bad in [
        "1969-12-31T23:59:59Z",
        "1970-01-01T00:30:00+01:00",
        "9999-12-31T23:00:00-02:00",
        "0001-01-01T00:00:00Z",
    ] {
        assert_eq!(
            fixture_error(|f| f["threads"][0]["messages"][0]["sent_at"] = bad.into()),
            format!("{m0}.sent_at: timestamp `{bad}` is outside the years 1970 to 9999 (UTC)")
        );
    }
    for good in ["1970-01-01T00:00:00Z", "9999-12-31T23:59:59Z"] {
        assert_eq!(
            fixture_error(|f| f["threads"][0]["messages"][0]["sent_at"] = good.into()),
            "ok"
        );
    }
    assert_eq!(
        fixture_error(
            |f| f["threads"][0]["messages"][0]["attachments"][0]["data_base64"] =
                "YW\r\n Jj\n".into()
        ),
        "ok"
    );
    assert_eq!(
        fixture_error(
            |f| f["threads"][0]["messages"][0]["attachments"][0]["data_base64"] = "YW\nJ*".into()
        ),
        format!(
            "{m0}.attachments[0].data_base64: invalid base64: unexpected character `*` at offset 4"
        )
    );
    let decoded = db::parse_fixture(
        &serde_json::json!({"threads": [{"subject": "S", "messages": [
            {"message_id": "<a@x>", "direction": "inbound", "from": "a@x", "to": [],
             "subject": "S", "sent_at": "2026-01-05T10:00:00Z",
             "attachments": [{"id": "att-a", "filename": "f", "content_type": "text/plain",
                              "byte_size": 6, "data_base64": "YWJj\r\nZGVm\n"}]}]}]})
        .to_string(),
    )
    .unwrap();
    assert_eq!(
        decoded.threads[0].messages[0].attachments[0]
            .data
            .as_deref(),
        Some(&b"abcdef"[..])
    );
    // A byte-order mark is accepted.
    let with_bom = format!("\u{feff}{}", serde_json::json!({"threads": []}));
    assert_eq!(db::parse_fixture(&with_bom).unwrap().threads.len(), 0);
}

#[test]
fn a_fixture_with_a_bom_imports_and_a_bad_one_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("bom.db").display());
    let (small, _) = overlapping_fixtures(dir.path());
    let text = std::fs::read_to_string(&small).unwrap();
    let bom = dir.path().join("bom.json");
    let mut file = std::fs::File::create(&bom).unwrap();
    file.write_all("\u{feff}".as_bytes()).unwrap();
    file.write_all(text.as_bytes()).unwrap();
    drop(file);
    let r = run(&url, &["db", "import", bom.to_str().unwrap()]);
    assert_eq!(
        (r.code, r.stdout.as_str(), r.stderr.as_str()),
        (0, "imported 1 thread, 2 messages (0 already present)\n", "")
    );

    // A bad tool name in a later thread: the whole file is rejected, nothing written.
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["threads"][0]["messages"][0]["message_id"] = "<new@example.com>".into();
    value["threads"][0]["messages"][0]["attachments"] = serde_json::json!([]);
    value["threads"][0]["messages"][1]["message_id"] = "<new2@example.com>".into();
    value["threads"][0]["messages"][1]["attachments"] = serde_json::json!([]);
    value["threads"][0]["messages"][0]["tool_uses"][0]["name"] = "bad name".into();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, value.to_string()).unwrap();
    let r = run(&url, &["db", "import", bad.to_str().unwrap()]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        format!(
            "error: fixture `{}`: threads[0].messages[0].tool_uses[0].name: invalid tool name `bad name`: expected 1 to 64 characters from `a-z`, `A-Z`, `0-9`, `_` and `-`\n",
            bad.display()
        )
    );
    let rt = runtime();
    rt.block_on(async {
        let conn = db::connect(&url).await.unwrap();
        assert_eq!(count(&conn, "messages").await, 2);
        assert_eq!(count(&conn, "email_threads").await, 1);
    });
}
