//! Traces: with `OTEL_EXPORTER_OTLP_ENDPOINT` set, the `protege` command exports the spans
//! of a resolve (one child per resolver), a mail import, a run round and the HTTP requests
//! of `serve` over OTLP/HTTP; a collector in the test receives them as JSON and checks
//! their names, parents and attributes. Without the variable nothing is sent and the
//! output is the same.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;
use common::AGENT;
use common::server::{Server, protege};

const FIRST: &str = "<trace-1@example.com>";
const SECOND: &str = "<trace-2@example.com>";
const NOW: &str = "2026-03-10T10:00:00Z";

/// A raw inbound message to the agent.
fn mail(id: &str, subject: &str, body: &str) -> String {
    format!(
        "Message-ID: {id}\r\nFrom: Zoe <zoe@example.com>\r\nTo: support@acme.test\r\nSubject: {subject}\r\nDate: Tue, 10 Mar 2026 09:00:00 +0000\r\n\r\n{body}\r\n"
    )
}

/// An app root holding the `agent` persona, and its SQLite database.
fn agent_root() -> (tempfile::TempDir, String) {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    std::fs::write(root.path().join("personas/agent.toml"), AGENT).unwrap();
    let db = format!(
        "sqlite://{}?mode=rwc",
        root.path().join("protege.db").display()
    );
    (root, db)
}

/// The requests a collector received: (path, body).
type Received = Mutex<Vec<(String, Vec<u8>)>>;

/// A collector of OTLP/HTTP exports: every body posted to `/v1/traces`, and the number of
/// connections it accepted.
struct Collector {
    port: u16,
    bodies: Arc<Received>,
    connections: Arc<AtomicUsize>,
}

impl Collector {
    fn start() -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let (kept, counted) = (bodies.clone(), connections.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                counted.fetch_add(1, Ordering::SeqCst);
                let kept = kept.clone();
                std::thread::spawn(move || serve_connection(stream, &kept));
            }
        });
        Collector {
            port,
            bodies,
            connections,
        }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The spans received so far, by name, each with its parent's id.
    fn spans(&self) -> Vec<Span> {
        let bodies = self.bodies.lock().unwrap();
        let mut spans = Vec::new();
        for (path, body) in bodies.iter() {
            assert_eq!(path, "/v1/traces");
            let export: Value = serde_json::from_slice(body)
                .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(body)));
            for resource in export["resourceSpans"].as_array().unwrap() {
                let service = attributes(&resource["resource"]["attributes"]);
                assert_eq!(service.get("service.name"), Some(&json!("protege")));
                for scope in resource["scopeSpans"].as_array().unwrap() {
                    for span in scope["spans"].as_array().unwrap() {
                        spans.push(Span {
                            name: span["name"].as_str().unwrap().to_owned(),
                            id: span["spanId"].as_str().unwrap().to_owned(),
                            parent: span["parentSpanId"].as_str().unwrap_or_default().to_owned(),
                            kind: span["kind"].as_i64().unwrap_or_default(),
                            attributes: attributes(&span["attributes"]),
                        });
                    }
                }
            }
        }
        spans
    }
}

/// One exported span.
#[derive(Debug, Clone)]
struct Span {
    name: String,
    id: String,
    parent: String,
    kind: i64,
    attributes: BTreeMap<String, Value>,
}

/// OTLP/JSON key-values as plain JSON values (integers as numbers, whichever way they
/// were sent).
fn attributes(list: &Value) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for kv in list.as_array().into_iter().flatten() {
        let value = &kv["value"];
        let plain = if let Some(s) = value.get("stringValue") {
            s.clone()
        } else if let Some(i) = value.get("intValue") {
            match i {
                Value::String(s) => json!(s.parse::<i64>().unwrap()),
                other => other.clone(),
            }
        } else if let Some(b) = value.get("boolValue") {
            b.clone()
        } else if let Some(d) = value.get("doubleValue") {
            d.clone()
        } else {
            value.clone()
        };
        out.insert(kv["key"].as_str().unwrap().to_owned(), plain);
    }
    out
}

/// Answers the HTTP/1.1 requests of one connection with `200 {}`, keeping their bodies.
fn serve_connection(stream: TcpStream, kept: &Received) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        let mut length = 0;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        kept.lock().unwrap().push((path, body));
        let answer =
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// `protege ROOT DB ARGS` with the export to `collector` (or none): (status, stdout, stderr).
fn run(
    root: &Path,
    db: &str,
    collector: Option<&Collector>,
    args: &[&str],
) -> (i32, String, String) {
    let mut cmd = protege(root, db);
    cmd.args(args)
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_SERVICE_NAME")
        .env_remove("OTEL_RESOURCE_ATTRIBUTES");
    if let Some(collector) = collector {
        cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint())
            .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json");
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn only<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    let found: Vec<&Span> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "one `{name}` span: {spans:#?}");
    found[0]
}

fn children<'a>(spans: &'a [Span], parent: &Span, name: &str) -> Vec<&'a Span> {
    spans
        .iter()
        .filter(|s| s.parent == parent.id && s.name == name)
        .collect()
}

/// The `--explain=json` rows of a resolve of the agent's reply to `FIRST`.
fn explained(root: &Path, db: &str) -> Value {
    let (code, _, stderr) = run(
        root,
        db,
        None,
        &[
            "resolve",
            "--persona",
            "agent",
            "--message",
            FIRST,
            "--format",
            "anthropic",
            "--now",
            NOW,
            "--explain=json",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str(&stderr).unwrap()
}

/// Checks the `protege.resolve` span `resolve` and its resolver spans against the
/// `--explain=json` of the same resolve.
fn check_resolve(spans: &[Span], resolve: &Span, explain: &Value) {
    let rows = explain["explain"].as_array().unwrap();
    let total: i64 = rows.iter().map(|r| r["tokens"].as_i64().unwrap()).sum();
    let a = &resolve.attributes;
    assert_eq!(a["protege.persona"], json!("agent"));
    assert_eq!(a["protege.message_id"], json!(FIRST));
    assert!(!a.contains_key("protege.responsibility"));
    assert_eq!(a["gen_ai.request.model"], json!("claude-sonnet-4-5"));
    assert_eq!(a["gen_ai.usage.input_tokens"], json!(total));
    assert_eq!(a["protege.request_sha256"], explain["request_sha256"]);
    let resolvers = children(spans, resolve, "protege.resolver");
    let names: Vec<&Value> = resolvers
        .iter()
        .map(|s| &s.attributes["protege.resolver.name"])
        .collect();
    assert_eq!(
        names,
        vec![
            &json!("LoadText"),
            &json!("ThreadHistory"),
            &json!("(trailing user turn)")
        ]
    );
    assert_eq!(resolvers.len(), rows.len());
    for (span, row) in resolvers.iter().zip(rows) {
        let a = &span.attributes;
        assert_eq!(a["protege.resolver.name"], row["resolver"]);
        assert_eq!(a["protege.resolver.messages"], row["messages"]);
        assert_eq!(a["protege.resolver.chars"], row["chars"]);
        assert_eq!(a["protege.resolver.tokens"], row["tokens"]);
    }
}

/// Waits (generously) for the spans named `names` to have arrived.
fn wait_for(collector: &Collector, names: &[&str]) -> Vec<Span> {
    let start = Instant::now();
    loop {
        let spans = collector.spans();
        if names.iter().all(|n| spans.iter().any(|s| s.name == *n)) {
            return spans;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "spans {names:?} not received within 60 s: {spans:#?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn short_commands_export_their_spans() {
    let (root, db) = agent_root();
    let eml = root.path().join("first.eml");
    std::fs::write(&eml, mail(FIRST, "Where is my order?", "Where is A-1042?")).unwrap();

    let collector = Collector::start();
    let (code, _, stderr) = run(
        root.path(),
        &db,
        Some(&collector),
        &["db", "import-eml", eml.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{stderr}");
    // The command exits once its spans are exported: no waiting.
    let spans = collector.spans();
    let import = only(&spans, "protege.mail.import");
    assert_eq!(import.parent, "");
    assert_eq!(import.attributes["protege.mail.paths"], json!(1));
    assert_eq!(import.attributes["protege.mail.imported"], json!(1));
    assert_eq!(import.attributes["protege.mail.duplicates"], json!(0));
    assert_eq!(import.attributes["protege.mail.failed"], json!(0));

    let explain = explained(root.path(), &db);
    let collector = Collector::start();
    let args = [
        "resolve",
        "--persona",
        "agent",
        "--message",
        FIRST,
        "--format",
        "anthropic",
        "--now",
        NOW,
    ];
    let traced = run(root.path(), &db, Some(&collector), &args);
    assert_eq!(traced.0, 0, "{}", traced.2);
    let spans = collector.spans();
    let resolve = only(&spans, "protege.resolve");
    assert_eq!(resolve.parent, "");
    assert_eq!(resolve.kind, 1, "internal");
    check_resolve(&spans, resolve, &explain);
    assert_eq!(spans.len(), 4, "{spans:#?}");

    // Without the variable: nothing sent, the same output.
    let silent = Collector::start();
    let plain = run(root.path(), &db, None, &args);
    assert_eq!(plain, traced);
    assert!(traced.2.is_empty(), "{}", traced.2);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(silent.connections.load(Ordering::SeqCst), 0);
    assert!(silent.spans().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_exports_requests_mail_and_rounds() {
    let (root, db) = agent_root();
    let collector = Collector::start();
    let endpoint = collector.endpoint();
    let mut server = Server::start_env(
        root.path(),
        &db,
        Some(common::server::TOKEN),
        &["--no-watch"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        ],
    );
    let first = mail(FIRST, "Where is my order?", "Where is A-1042?");
    let (status, text) = server
        .post("/v1/mail", "message/rfc822", first.clone())
        .await;
    assert_eq!(status, 201, "{text}");
    let input = json!({"persona": "agent", "message_id": FIRST, "format": "anthropic", "now": NOW});
    let (status, text) = server
        .post("/v1/runs", "application/json", input.to_string())
        .await;
    assert_eq!(status, 201, "{text}");
    let run_id = serde_json::from_str::<Value>(&text).unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // What `--explain=json` says of the same resolve, before anything else is stored.
    let explain = explained(root.path(), &db);
    let response: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/responses/anthropic/good-loop-round-1.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let round = json!({"round": 0, "response": response});
    let (status, text) = server
        .post(
            &format!("/v1/runs/{run_id}/rounds"),
            "application/json",
            round.to_string(),
        )
        .await;
    assert_eq!(status, 200, "{text}");
    let second = mail(SECOND, "Hello?", "Anyone there?");
    let (status, text) = server.post("/v1/mail", "message/rfc822", second).await;
    assert_eq!(status, 201, "{text}");

    // SIGTERM: serve drains and exports what it still holds before it exits.
    let pid = server.child.id().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let exited = tokio::task::spawn_blocking(move || {
        let status = server.child.wait().unwrap();
        (status, server)
    });
    let (status, _server) = tokio::time::timeout(Duration::from_secs(60), exited)
        .await
        .expect("serve exits within 60 s of SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");

    let spans = wait_for(
        &collector,
        &[
            "POST /v1/mail",
            "POST /v1/runs",
            "POST /v1/runs/{id}/rounds",
            "protege.run.round",
        ],
    );
    // Two mails: each an HTTP span with its import as child.
    let mails: Vec<&Span> = spans.iter().filter(|s| s.name == "POST /v1/mail").collect();
    assert_eq!(mails.len(), 2, "{spans:#?}");
    let mut imported = Vec::new();
    for request in &mails {
        assert_eq!(request.kind, 2, "server");
        assert_eq!(request.parent, "");
        assert_eq!(request.attributes["http.request.method"], json!("POST"));
        assert_eq!(request.attributes["http.route"], json!("/v1/mail"));
        assert_eq!(request.attributes["http.response.status_code"], json!(201));
        let import = children(&spans, request, "protege.mail.import");
        assert_eq!(import.len(), 1, "{spans:#?}");
        imported.push(import[0].attributes.clone());
    }
    imported.sort_by_key(|a| a["protege.message_id"].as_str().unwrap().to_owned());
    let sizes = [first.len(), mail(SECOND, "Hello?", "Anyone there?").len()];
    for ((attributes, id), bytes) in imported.iter().zip([FIRST, SECOND]).zip(sizes) {
        assert_eq!(attributes["protege.message_id"], json!(id));
        assert_eq!(attributes["protege.mail.direction"], json!("inbound"));
        assert_eq!(attributes["protege.mail.bytes"], json!(bytes));
        assert_eq!(attributes["protege.mail.stored"], json!(true));
        assert!(attributes["protege.thread_id"].as_i64().unwrap() > 0);
    }

    // The run's start resolves under its request.
    let start = only(&spans, "POST /v1/runs");
    let resolve = children(&spans, start, "protege.resolve");
    assert_eq!(resolve.len(), 1, "{spans:#?}");
    check_resolve(&spans, resolve[0], &explain);

    // The round: the provider's usage, under the GenAI conventions' names.
    let request = only(&spans, "POST /v1/runs/{id}/rounds");
    assert_eq!(request.attributes["http.response.status_code"], json!(200));
    let round = only(&spans, "protege.run.round");
    assert_eq!(round.parent, request.id);
    let a = &round.attributes;
    assert_eq!(a["protege.run_id"], json!(run_id));
    assert_eq!(a["protege.run.round"], json!(0));
    assert_eq!(a["protege.persona"], json!("agent"));
    assert_eq!(a["protege.run.status"], json!("done"));
    assert_eq!(a["gen_ai.provider.name"], json!("anthropic"));
    assert_eq!(a["gen_ai.request.model"], json!("claude-sonnet-4-5"));
    assert_eq!(a["gen_ai.usage.input_tokens"], json!(143 + 1460 + 212));
    assert_eq!(a["gen_ai.usage.output_tokens"], json!(57));
    assert_eq!(a["gen_ai.usage.cache_read.input_tokens"], json!(1460));
    assert_eq!(a["gen_ai.usage.cache_creation.input_tokens"], json!(212));
}
