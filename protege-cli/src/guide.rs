//! The guide's commands and requests, checked against the real grammar and the real routes
//! (the README's, the architecture map's and every chapter's under `docs/src/`):
//!
//! - every `protege` command of a ```` ```sh ```` block, and every `$ protege` line of a
//!   ```` ```text ```` block, parses with the command line's clap definition; one whose
//!   shown output is clap's `error: invalid value` fails with exactly that line;
//! - every `curl` command and every ```` ```http ```` block names a route the service's
//!   router answers with that method, and its JSON body parses;
//! - every route of the reference's route table is one the router answers, and every route
//!   the router declares is in the table.

use std::path::{Path, PathBuf};

use clap::Parser as _;
use clap::error::ErrorKind;

use crate::commands::Cli;

#[path = "../../tests/support/markdown.rs"]
#[allow(
    dead_code,
    reason = "its links and anchors are the root crate's docs tests'"
)]
mod markdown;

use markdown::{Block, words};

/// The project's root, above this package.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Every fenced block of the documentation.
fn all_blocks() -> Vec<Block> {
    markdown::documents(&root())
        .iter()
        .flat_map(markdown::blocks)
        .collect()
}

/// The arguments of the `protege` command of a shell line: after environment assignments
/// (`PROTEGE_SERVE_TOKEN=s3cret protege serve`), a crontab's five time fields, or
/// `cargo run --release --` in the workspace.
fn protege_args(words: &[String]) -> Option<Vec<String>> {
    let cron = |w: &str| w.chars().all(|c| c.is_ascii_digit() || "*/,-".contains(c));
    let at = words.iter().position(|w| w == "protege" || w == "cargo")?;
    if !words[..at].iter().all(|w| w.contains('=') || cron(w)) {
        return None;
    }
    if words[at] == "protege" {
        return Some(words[at + 1..].to_vec());
    }
    let run = words.get(at + 1).is_some_and(|w| w == "run");
    let example = words.iter().any(|w| w == "--example" || w == "-p");
    let dashes = words.iter().position(|w| w == "--")?;
    (run && !example).then(|| words[dashes + 1..].to_vec())
}

/// `args` parsed by the `protege` command's grammar; help and version count as parsed.
fn parse(args: &[String]) -> Result<(), clap::Error> {
    let argv = std::iter::once("protege".to_owned()).chain(args.iter().cloned());
    match Cli::try_parse_from(argv) {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => Ok(()),
        Err(e) => Err(e),
    }
}

#[test]
fn every_protege_command_of_the_guide_parses() {
    let (mut parsed, mut refused) = (0, 0);
    for block in all_blocks() {
        for (line, next) in markdown::command_lines(&block) {
            let Some(args) = protege_args(&words(&line)) else {
                continue;
            };
            let shown_error = next.filter(|n| n.starts_with("error: invalid value"));
            match (parse(&args), shown_error) {
                (Ok(()), None) => parsed += 1,
                (Err(e), Some(shown)) => {
                    let rendered = e.render().to_string();
                    assert_eq!(
                        rendered.lines().next(),
                        Some(shown.as_str()),
                        "{}",
                        block.at
                    );
                    refused += 1;
                }
                (Ok(()), Some(shown)) => {
                    panic!("{}: `{line}` parses, the guide shows `{shown}`", block.at)
                }
                (Err(e), None) => panic!("{}: `{line}` does not parse:\n{}", block.at, e.render()),
            }
        }
    }
    println!("{parsed} commands parsed, {refused} refused as shown");
    assert!(parsed >= 54, "{parsed} commands parsed");
    assert!(refused >= 1, "{refused} commands refused");
}

/// A request the guide writes: where it is, its method, path and body.
#[derive(Debug)]
struct Request {
    at: String,
    method: String,
    path: String,
    body: Option<String>,
}

/// The path of a `curl` URL (`localhost:8080/v1/resolve`, `$URL/v1/runs/$RUN`,
/// `"$URL/v1/mail?direction=outbound"`), its query left out and each `$VARIABLE` segment
/// written as `1`.
fn url_path(url: &str) -> Option<String> {
    let after_host = |r: &str| r.find('/').map(|at| r[at..].to_owned());
    let rest = match url.strip_prefix("$URL") {
        Some(rest) => rest.to_owned(),
        None => url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("localhost"))
            .and_then(after_host)?,
    };
    let path = rest.split('?').next().unwrap();
    let segments: Vec<&str> = path
        .split('/')
        .map(|s| if s.starts_with('$') { "1" } else { s })
        .collect();
    Some(segments.join("/"))
}

/// The request of a `curl` command line.
fn curl(at: &str, line: &str) -> Option<Request> {
    let from = line.find("curl ")?;
    let words = words(line[from..].trim_start_matches("$("));
    let value = |flags: &[&str]| {
        words
            .iter()
            .position(|w| flags.contains(&w.as_str()))
            .and_then(|i| words.get(i + 1).cloned())
    };
    let data = value(&["-d", "--data", "--data-binary", "--data-raw"]);
    let method = value(&["-X", "--request"])
        .unwrap_or_else(|| if data.is_some() { "POST" } else { "GET" }.to_owned());
    let path = words.iter().find_map(|w| url_path(w))?;
    Some(Request {
        at: at.to_owned(),
        method,
        path,
        body: data.filter(|d| !d.starts_with('@')),
    })
}

/// The request of an ```` ```http ```` block: `METHOD PATH`, headers, a blank line, the body.
fn http(block: &Block) -> Request {
    let (head, body) = block
        .text
        .split_once("\n\n")
        .unwrap_or((block.text.as_str(), ""));
    let (method, path) = head
        .lines()
        .next()
        .and_then(|l| l.split_once(' '))
        .unwrap_or_else(|| panic!("{}: no request line", block.at));
    Request {
        at: block.at.clone(),
        method: method.to_owned(),
        path: path.trim().to_owned(),
        body: Some(body.trim().to_owned()).filter(|b| !b.is_empty()),
    }
}

/// The requests of the guide's `curl` commands and ```` ```http ```` blocks.
fn guide_requests() -> Vec<Request> {
    let mut out = Vec::new();
    for block in all_blocks() {
        match block.info.as_str() {
            "sh" => out.extend(
                markdown::command_lines(&block)
                    .iter()
                    .filter_map(|(line, _)| curl(&block.at, line)),
            ),
            "http" => out.push(http(&block)),
            _ => {}
        }
    }
    out
}

/// The routes of the reference's route table: `(method, path)` of each route its rows'
/// first cells name (`POST /v1/outbox/hold`, `/release` gives two), `{id}` written as `1`,
/// and the table's text.
fn reference_routes() -> (Vec<(String, String)>, String) {
    let reference = std::fs::read_to_string(root().join("docs/src/reference.md")).unwrap();
    let start = reference.find("| route | does |").expect("the route table");
    let table: String = reference[start..]
        .lines()
        .take_while(|l| l.starts_with('|'))
        .map(|l| format!("{l}\n"))
        .collect();
    let mut routes = Vec::new();
    for row in table.lines().skip(2) {
        let cell = row.trim_start_matches("| ").split(" | ").next().unwrap();
        let mut method = String::new();
        let mut last = String::new();
        for code in cell.split('`').skip(1).step_by(2) {
            let path = match code.split_once(' ') {
                Some((m, p)) => {
                    method = m.to_owned();
                    p.to_owned()
                }
                // `/release` beside `POST /v1/outbox/hold`: the last segment replaced.
                None => format!("{}{code}", &last[..last.rfind('/').unwrap()]),
            };
            last = path.clone();
            routes.push((method.clone(), path.replace("{id}", "1")));
        }
    }
    (routes, table)
}

/// The paths the router declares, read from its `.route("PATH", ...)` calls.
fn declared_paths() -> Vec<String> {
    let source = std::fs::read_to_string(root().join("src/serve/mod.rs")).unwrap();
    // The code alone: the module's docs show an application's own `.route(...)`.
    let code: String = source
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| format!("{l}\n"))
        .collect();
    code.split(".route(")
        .skip(1)
        .map(|call| {
            let call = call.trim_start();
            let path = call.strip_prefix('"').expect("a path literal");
            path[..path.find('"').unwrap()].to_owned()
        })
        .collect()
}

#[test]
fn every_route_the_router_declares_is_in_the_reference() {
    let (routes, table) = reference_routes();
    let declared = declared_paths();
    assert!(declared.len() >= 35, "{declared:?}");
    for path in &declared {
        let named = routes.iter().any(|(_, p)| *p == path.replace("{id}", "1"));
        assert!(
            named || table.contains(&format!("`{path}`")),
            "the route `{path}` is not in the reference's route table"
        );
    }
    assert!(routes.len() >= 34, "{routes:?}");
}

/// The answer of the router, served with every route (`/metrics` and the agent's
/// included), to each of `requests`: its status and body.
async fn answers(requests: &[(String, String, Option<String>)]) -> Vec<(u16, String)> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("personas")).unwrap();
    let engine = protege::Engine::builder()
        .root(dir.path())
        .database(format!(
            "sqlite://{}",
            dir.path().join("guide.db").display()
        ))
        .build()
        .await
        .unwrap();
    let app = protege::serve::Service::new(engine)
        .metrics(String::new)
        .router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    protege::agent::install_crypto_provider();
    let client = reqwest::Client::new();
    let mut out = Vec::new();
    for (method, path, body) in requests {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = client.request(method, format!("http://{address}{path}"));
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.clone());
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        out.push((status, response.text().await.unwrap()));
    }
    server.abort();
    out
}

/// Whether an answer comes from a route: not the router's fallback (an unknown path) nor a
/// method the path does not take.
fn routed((status, body): &(u16, String)) -> bool {
    *status != 405 && !body.contains("no such route")
}

#[tokio::test]
async fn every_request_of_the_guide_names_a_route_with_a_json_body() {
    let requests = guide_requests();
    for request in &requests {
        if let Some(body) = &request.body
            && let Err(e) = serde_json::from_str::<serde_json::Value>(body)
        {
            panic!(
                "{}: the body of {} {} is not JSON: {e}",
                request.at, request.method, request.path
            );
        }
    }
    let sent: Vec<_> = requests
        .iter()
        .map(|r| (r.method.clone(), r.path.clone(), r.body.clone()))
        .collect();
    for (request, answer) in requests.iter().zip(answers(&sent).await) {
        assert!(
            routed(&answer),
            "{}: {} {} is no route of the service: {answer:?}",
            request.at,
            request.method,
            request.path
        );
    }
    println!("{} requests checked", requests.len());
    assert!(requests.len() >= 16, "{} requests", requests.len());
    // The check tells a route from none: an unknown path and a wrong method are refused.
    let wrong = answers(&[
        ("GET".to_owned(), "/v1/nothing".to_owned(), None),
        ("GET".to_owned(), "/v1/resolve".to_owned(), None),
    ])
    .await;
    assert!(wrong.iter().all(|a| !routed(a)), "{wrong:?}");
}

#[tokio::test]
async fn every_route_of_the_reference_is_a_route_of_the_service() {
    let (routes, _) = reference_routes();
    let sent: Vec<_> = routes
        .iter()
        .map(|(method, path)| (method.clone(), path.clone(), None))
        .collect();
    for ((method, path), answer) in routes.iter().zip(answers(&sent).await) {
        assert!(
            routed(&answer),
            "the reference's `{method} {path}` is no route of the service: {answer:?}"
        );
    }
    assert!(routes.len() >= 34, "{} routes", routes.len());
}
