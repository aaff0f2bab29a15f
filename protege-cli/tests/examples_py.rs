//! `examples/agent_loop.py`, the agent loop over HTTP in Python, against a running
//! `protege serve` on the shipped personas and the demo data: it prints exactly what the
//! Rust example `agent_loop` prints (`tests/expected/examples/agent_loop.txt.snap`), twice in a
//! row on the same database, and stops with the service's error on a refused request.

use std::process::{Command, Output};

mod common;
use common::server::{Server, TOKEN, demo_db};
use common::{project, snapshot};

/// `python3 examples/agent_loop.py ARGS` from the workspace root, with the service's URL
/// and `token` in its environment. A missing `python3` fails the test, never skips it.
fn agent_loop_py(base: &str, token: &str, args: &[&str]) -> Output {
    let mut cmd = Command::new("python3");
    cmd.arg(project().join("examples/agent_loop.py"))
        .args(args)
        .current_dir(project())
        .env("PROTEGE_URL", base)
        .env("PROTEGE_SERVE_TOKEN", token)
        .env("PYTHONIOENCODING", "utf-8");
    cmd.output().unwrap_or_else(|e| {
        panic!(
            "cannot run `python3` ({e}): this test runs examples/agent_loop.py and needs \
             Python 3 on the PATH"
        )
    })
}

/// `text` with every fence nonce (`<<<mail:` and 16 hex digits) written `NONCE`.
fn without_nonces(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("<<<mail:") {
        let (head, tail) = rest.split_at(at + "<<<mail:".len());
        out.push_str(head);
        let hex = tail.bytes().take_while(u8::is_ascii_hexdigit).count();
        if hex == 16 {
            out.push_str("NONCE");
            rest = &tail[16..];
        } else {
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).unwrap()
}

#[test]
fn the_python_loop_prints_what_the_rust_example_prints() {
    let expected =
        snapshot::expected_output(&project().join("tests/expected"), "examples/agent_loop.txt");
    let (_dir, db) = demo_db();
    let server = Server::start(&project(), &db, Some(TOKEN), &["--no-watch"]);
    // Again on the same database: the customer's mails get new Message-IDs each time.
    for attempt in 1..=2 {
        let out = agent_loop_py(&server.base, TOKEN, &[]);
        assert!(
            out.status.success(),
            "attempt {attempt}: {}\n{}",
            out.status,
            text(&out.stderr)
        );
        // Each attempt is a new thread, fenced with a nonce of its own.
        assert_eq!(
            without_nonces(text(&out.stdout)),
            without_nonces(&expected),
            "attempt {attempt}"
        );
        assert_eq!(text(&out.stderr), "", "attempt {attempt}");
    }
}

#[test]
fn the_python_loop_stops_with_the_services_error() {
    let (_dir, db) = demo_db();
    let server = Server::start(&project(), &db, Some(TOKEN), &["--no-watch"]);
    let out = agent_loop_py(&server.base, "wrong-token", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "");
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("error: POST /v1/mail?direction=inbound: HTTP 401 unauthorized: "),
        "{stderr}"
    );
    // --url wins over PROTEGE_URL; nothing listens there.
    let closed = format!("http://127.0.0.1:{}", closed_port());
    let out = agent_loop_py(&server.base, TOKEN, &["--url", &closed]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).starts_with(&format!(
            "error: POST /v1/mail?direction=inbound: cannot reach {closed}: "
        )),
        "{}",
        text(&out.stderr)
    );
}

/// A local port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}
