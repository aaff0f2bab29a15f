//! `protege_cli::main_with`: the example `own_protege` is the shipped command with the
//! `OpenOrders` resolver registered. It checks, resolves and serves a persona that the
//! shipped binary rejects, and gives the request the library's `custom_resolver` example
//! gives.
//!
//! The example's `main` is compiled into this test (no harness): run with
//! `PROTEGE_TEST_RUN_EXAMPLE=1`, the test binary is the example, so the tests run it as a
//! process without building it again.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};

#[path = "../examples/own_protege.rs"]
mod own_protege;

use own_protege::custom_resolver;

mod common;
use common::project as workspace;
use common::snapshot;

/// Set when this binary is to be the example.
const RUN_EXAMPLE: &str = "PROTEGE_TEST_RUN_EXAMPLE";

fn main() -> std::process::ExitCode {
    if std::env::var_os(RUN_EXAMPLE).is_some() {
        return own_protege::main();
    }
    own_protege_checks_and_resolves_what_the_shipped_binary_rejects();
    println!("test own_protege_checks_and_resolves_what_the_shipped_binary_rejects ... ok");
    own_protege_serves_the_persona_with_the_custom_resolver();
    println!("test own_protege_serves_the_persona_with_the_custom_resolver ... ok");
    std::process::ExitCode::SUCCESS
}

/// An app root with the shop persona, its mail and the application's `orders` table.
fn shop() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    std::fs::write(
        root.path().join("personas/shop.toml"),
        custom_resolver::PERSONA,
    )
    .unwrap();
    std::fs::write(root.path().join("mail.json"), custom_resolver::MAIL).unwrap();
    root
}

/// The example: this binary, told to be it.
fn own_protege() -> Command {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.env(RUN_EXAMPLE, "1");
    command
}

/// The shipped binary.
fn shipped() -> Command {
    Command::new(env!("CARGO_BIN_EXE_protege"))
}

/// Runs `program` with `args` in the app root: exit code, stdout, stderr.
fn run(mut program: Command, root: &Path, args: &[&str]) -> (i32, String, String) {
    let out = program
        .arg("--root")
        .arg(root)
        .args(args)
        .env_remove("PROTEGE_DATABASE_URL")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What the `custom_resolver` example prints: the request of the reply run.
fn expected_request() -> String {
    snapshot::expected_output(
        &workspace().join("tests/expected"),
        "examples/custom_resolver.json",
    )
}

const RESOLVE: &[&str] = &[
    "resolve",
    "--persona",
    "shop",
    "--message",
    "<q1@example.com>",
    "--now",
    "2026-01-05T09:05:00Z",
];

fn own_protege_checks_and_resolves_what_the_shipped_binary_rejects() {
    let root = shop();
    let root = root.path();

    let (code, stdout, stderr) = run(shipped(), root, &["check"]);
    assert_eq!((code, stdout.as_str()), (1, ""));
    assert!(
        stderr.contains("error: unknown resolver `OpenOrders`"),
        "{stderr}"
    );
    assert!(
        stderr.ends_with("error: check failed: 1 problem in 1 persona file\n"),
        "{stderr}"
    );

    assert_eq!(
        run(own_protege(), root, &["check"]),
        (0, "ok: 1 persona (shop)\n".to_owned(), String::new())
    );
    let mail = root.join("mail.json");
    let (code, _, stderr) = run(
        own_protege(),
        root,
        &["db", "import", mail.to_str().unwrap()],
    );
    assert_eq!((code, stderr.as_str()), (0, ""));
    let db = rusqlite::Connection::open(root.join("protege.db")).unwrap();
    db.execute_batch(custom_resolver::ORDERS).unwrap();
    drop(db);
    assert_eq!(
        run(own_protege(), root, RESOLVE),
        (0, expected_request(), String::new())
    );
}

fn own_protege_serves_the_persona_with_the_custom_resolver() {
    let root = shop();
    let root = root.path();
    let mail = root.join("mail.json");
    let (code, _, stderr) = run(
        own_protege(),
        root,
        &["db", "import", mail.to_str().unwrap()],
    );
    assert_eq!((code, stderr.as_str()), (0, ""));
    let db = rusqlite::Connection::open(root.join("protege.db")).unwrap();
    db.execute_batch(custom_resolver::ORDERS).unwrap();
    drop(db);

    let mut child = own_protege()
        .arg("--root")
        .arg(root)
        .args(["serve", "--listen", "127.0.0.1:0", "--no-watch"])
        .env_remove("PROTEGE_DATABASE_URL")
        .env_remove("PROTEGE_SERVE_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let address = loop {
        let line = lines
            .next()
            .expect("serve stopped before listening")
            .unwrap();
        if let Some(at) = line.find("listening on http://") {
            break line[at + "listening on http://".len()..].trim().to_owned();
        }
    };
    let body = r#"{"persona":"shop","message_id":"<q1@example.com>","now":"2026-01-05T09:05:00Z"}"#;
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    write!(
        stream,
        "POST /v1/resolve HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let (head, text) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    assert_eq!(text, expected_request());
}
