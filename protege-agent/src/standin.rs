//! A provider stand-in for tests (cargo feature `standin`): an HTTP server on
//! `127.0.0.1` that speaks Anthropic's `POST /v1/messages` and OpenAI's
//! `POST /v1/chat/completions` and `POST /v1/responses`, answers from a script, and records
//! what it received.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use protege_agent::standin::{self, Scripted, StandIn};
//!
//! let provider = StandIn::start([
//!     Scripted::status(429, &[("retry-after", "1")], ""),
//!     Scripted::Json(200, standin::anthropic_text("Done.")),
//! ])
//! .await?;
//! // point the persona's `[model] base_url` at `provider.base_url()`, run, then:
//! assert_eq!(provider.requests().len(), 2);
//! assert_eq!(provider.wire_failures(), Vec::<String>::new());
//! # Ok(()) }
//! ```
//!
//! With `PROTEGE_WIRECHECK` naming the `wirecheck` program, every request body is checked
//! (`wirecheck anthropic|openai|openai-responses`) and so is every JSON answer sent with
//! status 200 (`anthropic-response|openai-response|openai-responses-response`; error bodies
//! are outside wirecheck's scope). The
//! bodies are kept and checked together, one `wirecheck` run per mode, when the test calls
//! [`StandIn::wire_failures`], or else when the stand-in is dropped, which then panics on a
//! failure so that no exchange goes unchecked. With `PROTEGE_WIRE_OUT` naming a folder,
//! each request body is also written there as `standin-PID-N.anthropic.json`,
//! `.openai.json` or `.openai-responses.json`, for CI's wirecheck pass over the bodies tests
//! wrote.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::body::Body;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

/// One scripted answer, used by the next request to a provider path.
#[derive(Debug, Clone)]
pub enum Scripted {
    /// A JSON body with this status.
    Json(u16, Value),
    /// A status, headers and a raw body.
    Status(u16, Vec<(String, String)>, String),
    /// The connection is closed (with a TCP reset) without an answer.
    Reset,
    /// The request is read and never answered.
    Silent,
    /// Waits, then answers as the inner answer.
    Delay(Duration, Box<Scripted>),
}

impl Scripted {
    /// A status with headers and a raw body.
    pub fn status(status: u16, headers: &[(&str, &str)], body: &str) -> Self {
        let headers = headers
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        Self::Status(status, headers, body.to_owned())
    }

    /// This answer after `delay`.
    pub fn after(self, delay: Duration) -> Self {
        Self::Delay(delay, Box::new(self))
    }
}

/// A request the stand-in received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The method, `POST` for the provider paths.
    pub method: String,
    /// The path, e.g. `/v1/messages`.
    pub path: String,
    /// The headers in the order received, names lowercase.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// When the whole request had arrived.
    pub at: Instant,
}

impl Recorded {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON, `Value::Null` when it is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// A running stand-in; dropping it stops the server.
#[derive(Debug)]
pub struct StandIn {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: JoinHandle<()>,
}

/// Answers a request from its JSON body once the script is spent.
type Responder = Arc<dyn Fn(&Value) -> Scripted + Send + Sync>;

#[derive(Debug)]
struct Shared {
    script: Mutex<VecDeque<Scripted>>,
    responder: Mutex<Option<ResponderSlot>>,
    requests: Mutex<Vec<Recorded>>,
    /// Bodies not checked yet: what each is, its wirecheck mode, the body.
    unchecked: Mutex<Vec<(String, &'static str, Vec<u8>)>>,
    wirecheck: Option<PathBuf>,
    wire_out: Option<PathBuf>,
    keep_bodies: AtomicBool,
}

/// A [`Responder`], shown as such.
struct ResponderSlot(Responder);

impl std::fmt::Debug for ResponderSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Responder")
    }
}

/// The error that makes the HTTP server drop a connection without answering.
#[derive(Debug)]
struct Reset;

impl std::fmt::Display for Reset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("scripted reset")
    }
}

impl std::error::Error for Reset {}

/// The provider paths and their wirecheck modes (request, response).
fn modes(path: &str) -> Option<(&'static str, &'static str)> {
    match path {
        "/v1/messages" => Some(("anthropic", "anthropic-response")),
        "/v1/chat/completions" => Some(("openai", "openai-response")),
        "/v1/responses" => Some(("openai-responses", "openai-responses-response")),
        _ => None,
    }
}

impl StandIn {
    /// Starts a stand-in on `127.0.0.1` and a free port, answering from `script` in order.
    /// A request to a provider path once the script is spent is answered 500 with a body
    /// saying so; any other path is answered 404. Needs a Tokio runtime.
    ///
    /// It also installs the process's crypto provider
    /// ([`install_crypto_provider`](crate::install_crypto_provider)), so a test may talk to
    /// it with a plain `reqwest::Client`.
    pub async fn start(script: impl IntoIterator<Item = Scripted>) -> std::io::Result<Self> {
        crate::install_crypto_provider();
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let shared = Arc::new(Shared {
            script: Mutex::new(script.into_iter().collect()),
            responder: Mutex::new(None),
            requests: Mutex::new(Vec::new()),
            unchecked: Mutex::new(Vec::new()),
            wirecheck: var("PROTEGE_WIRECHECK"),
            wire_out: var("PROTEGE_WIRE_OUT"),
            keep_bodies: AtomicBool::new(true),
        });
        let server = tokio::spawn(serve(listener, shared.clone()));
        Ok(Self {
            addr,
            shared,
            server,
        })
    }

    /// `http://127.0.0.1:PORT`: the `base_url` to give a persona.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The address the stand-in listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Writes no request body to `PROTEGE_WIRE_OUT`: for a test that sends a malformed body
    /// on purpose, which CI's wirecheck pass over that folder would refuse.
    pub fn without_wire_out(self) -> Self {
        self.shared.keep_bodies.store(false, Ordering::Relaxed);
        self
    }

    /// Answers every request that finds the script spent with `respond(body)`, the
    /// request's JSON body (`null` when it is not JSON): for a test whose requests arrive in
    /// an order it does not control, such as several workers answering many messages.
    pub fn respond_with(
        self,
        respond: impl Fn(&Value) -> Scripted + Send + Sync + 'static,
    ) -> Self {
        *lock(&self.shared.responder) = Some(ResponderSlot(Arc::new(respond)));
        self
    }

    /// Appends answers to the script.
    pub fn push(&self, answers: impl IntoIterator<Item = Scripted>) {
        lock(&self.shared.script).extend(answers);
    }

    /// Answers of the script not used yet.
    pub fn remaining(&self) -> usize {
        lock(&self.shared.script).len()
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared.requests).clone()
    }

    /// The newest request received, if any.
    pub fn last_request(&self) -> Option<Recorded> {
        lock(&self.shared.requests).last().cloned()
    }

    /// Checks every body received or sent since the last call with wirecheck and returns
    /// its verdicts that are not `ok`, one line per problem prefixed with what was checked
    /// (`request 2 to /v1/messages: wirecheck anthropic: $: max_tokens is required
    /// [max-tokens]`); empty when `PROTEGE_WIRECHECK` is not set.
    pub fn wire_failures(&self) -> Vec<String> {
        let unchecked: Vec<_> = lock(&self.shared.unchecked).drain(..).collect();
        match &self.shared.wirecheck {
            Some(program) if !unchecked.is_empty() => wirecheck(program, unchecked),
            _ => Vec::new(),
        }
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.server.abort();
        if !std::thread::panicking() {
            let failures = self.wire_failures();
            assert!(
                failures.is_empty(),
                "wirecheck refused what the stand-in saw:\n{}",
                failures.join("\n")
            );
        }
    }
}

/// A lock that survives a panicked holder (the data is plain records).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Accepts connections until aborted; aborting drops the connections too.
async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    while let Ok((stream, _)) = listener.accept().await {
        while connections.try_join_next().is_some() {}
        // A connection dropped by a scripted `Reset` ends with a TCP reset, as a crashed
        // server's would.
        let _ = stream.set_zero_linger();
        let shared = shared.clone();
        connections.spawn(async move {
            let service =
                hyper::service::service_fn(move |request| answer(shared.clone(), request));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Records a request and answers it from the script.
async fn answer(shared: Arc<Shared>, request: Request<Incoming>) -> Result<Response<Body>, Reset> {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(Body::new(body), usize::MAX)
        .await
        .map_err(|_| Reset)?;
    let path = parts.uri.path().to_owned();
    let n = {
        let mut requests = lock(&shared.requests);
        requests.push(Recorded {
            method: parts.method.to_string(),
            path: path.clone(),
            headers: parts
                .headers
                .iter()
                .map(|(n, v)| {
                    (
                        n.as_str().to_owned(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            body: body.to_vec(),
            at: Instant::now(),
        });
        requests.len()
    };
    let Some((request_mode, response_mode)) =
        modes(&path).filter(|_| parts.method == hyper::Method::POST)
    else {
        return Ok(json_response(
            404,
            &json!({"error": format!("the stand-in has no route `{path}`")}),
        ));
    };
    shared.write_out(request_mode, &body);
    shared.check(
        format!("request {n} to {path}"),
        request_mode,
        body.to_vec(),
    );
    let next = lock(&shared.script).pop_front().or_else(|| {
        let responder = lock(&shared.responder).as_ref().map(|r| r.0.clone())?;
        let value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        Some(responder(&value))
    });
    let mut scripted = next.unwrap_or_else(|| {
        Scripted::Json(
            500,
            json!({"error": format!("the stand-in's script has no answer for request {n}")}),
        )
    });
    loop {
        match scripted {
            Scripted::Delay(delay, inner) => {
                tokio::time::sleep(delay).await;
                scripted = *inner;
            }
            Scripted::Json(status, value) => {
                if status == 200 {
                    let bytes = serde_json::to_vec(&value).unwrap_or_default();
                    shared.check(format!("answer {n} from {path}"), response_mode, bytes);
                }
                return Ok(json_response(status, &value));
            }
            Scripted::Status(status, headers, body) => {
                let mut response = Response::builder().status(status);
                for (name, value) in headers {
                    response = response.header(name, value);
                }
                return response.body(Body::from(body)).map_err(|_| Reset);
            }
            Scripted::Reset => return Err(Reset),
            Scripted::Silent => {
                let never: Infallible = std::future::pending().await;
                match never {}
            }
        }
    }
}

/// A JSON answer.
fn json_response(status: u16, value: &Value) -> Response<Body> {
    let body = serde_json::to_vec(value).unwrap_or_default();
    let mut response = Response::new(Body::from(body));
    *response.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

impl Shared {
    /// Writes a request body to `PROTEGE_WIRE_OUT`, when set.
    fn write_out(&self, mode: &str, body: &[u8]) {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        if let Some(dir) = self
            .wire_out
            .as_ref()
            .filter(|_| self.keep_bodies.load(Ordering::Relaxed))
        {
            let n = COUNT.fetch_add(1, Ordering::Relaxed);
            let file = dir.join(format!("standin-{}-{n}.{mode}.json", std::process::id()));
            let _ = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(file, body));
        }
    }

    /// Keeps a body for wirecheck, when `PROTEGE_WIRECHECK` is set.
    fn check(&self, what: String, mode: &'static str, body: Vec<u8>) {
        if self.wirecheck.is_some() {
            lock(&self.unchecked).push((what, mode, body));
        }
    }
}

/// Runs `program MODE FILES...` once per mode over the bodies; the lines that are not `ok`,
/// each file's name replaced by what its body was.
fn wirecheck(program: &Path, bodies: Vec<(String, &'static str, Vec<u8>)>) -> Vec<String> {
    let mut failures = Vec::new();
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(e) => return vec![format!("cannot make a folder for wirecheck: {e}")],
    };
    let mut modes: Vec<&str> = bodies.iter().map(|(_, mode, _)| *mode).collect();
    modes.sort_unstable();
    modes.dedup();
    for mode in modes {
        let mut files: Vec<(PathBuf, &str)> = Vec::new();
        for (i, (what, _, body)) in bodies.iter().enumerate().filter(|(_, b)| b.1 == mode) {
            let file = dir.path().join(format!("{i}.json"));
            if let Err(e) = std::fs::write(&file, body) {
                failures.push(format!("{what}: cannot write it for wirecheck: {e}"));
                continue;
            }
            files.push((file, what));
        }
        let output = std::process::Command::new(program)
            .arg(mode)
            .args(files.iter().map(|(file, _)| file))
            .output();
        let output = match output {
            Ok(output) => output,
            Err(e) => {
                failures.push(format!("cannot run `{}`: {e}", program.display()));
                continue;
            }
        };
        if output.status.code() == Some(2) {
            let stderr = String::from_utf8_lossy(&output.stderr);
            failures.push(format!("wirecheck {mode} could not run: {}", stderr.trim()));
            continue;
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        for line in stdout.lines().filter(|l| !l.trim().is_empty()) {
            // With several files each line starts with `FILE: `; with one it does not.
            let (what, verdict) = match files.iter().find_map(|(file, what)| {
                line.strip_prefix(&format!("{}: ", file.display()))
                    .map(|rest| (*what, rest))
            }) {
                Some(found) => found,
                None => (files.first().map_or("", |(_, what)| *what), line),
            };
            if verdict.trim() != "ok" {
                failures.push(format!("{what}: wirecheck {mode}: {verdict}"));
            }
        }
    }
    failures
}

/// An Anthropic Messages answer (status 200) whose content is one `tool_use` block per
/// `(name, input)`, ids `toolu_01…01`, `toolu_01…02`, …, `stop_reason` `tool_use`, usage
/// 100 input and 20 output tokens.
pub fn anthropic_tool_use(calls: &[(&str, Value)]) -> Value {
    let content: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, input))| {
            json!({
                "type": "tool_use",
                "id": anthropic_call_id(i),
                "name": name,
                "input": input,
                "caller": {"type": "direct"}
            })
        })
        .collect();
    anthropic_message(content, "tool_use")
}

/// The id [`anthropic_tool_use`] gives its call number `i` (from 0).
pub fn anthropic_call_id(i: usize) -> String {
    format!("toolu_01{:022}", i + 1)
}

/// An Anthropic Messages answer (status 200) with one text block and `stop_reason`
/// `end_turn`, usage 100 input and 20 output tokens.
pub fn anthropic_text(text: &str) -> Value {
    anthropic_message(vec![json!({"type": "text", "text": text})], "end_turn")
}

fn anthropic_message(content: Vec<Value>, stop_reason: &str) -> Value {
    json!({
        "id": "msg_01StandIn00000000000000",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": {
            "input_tokens": 100,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 20,
            "service_tier": "standard"
        }
    })
}

/// An OpenAI Chat Completions answer (status 200) calling one function per
/// `(name, input)`, ids `call_…01`, `call_…02`, …, `finish_reason` `tool_calls`, usage 100
/// prompt and 20 completion tokens.
pub fn openai_tool_calls(calls: &[(&str, Value)]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, input))| {
            json!({
                "id": openai_call_id(i),
                "type": "function",
                "function": {"name": name, "arguments": input.to_string()}
            })
        })
        .collect();
    openai_completion(
        json!({"role": "assistant", "content": null, "tool_calls": calls, "refusal": null}),
        "tool_calls",
    )
}

/// The id [`openai_tool_calls`] gives its call number `i` (from 0).
pub fn openai_call_id(i: usize) -> String {
    format!("call_{:024}", i + 1)
}

/// An OpenAI Chat Completions answer (status 200) with one text message and
/// `finish_reason` `stop`, usage 100 prompt and 20 completion tokens.
pub fn openai_text(text: &str) -> Value {
    openai_completion(
        json!({"role": "assistant", "content": text, "refusal": null, "annotations": []}),
        "stop",
    )
}

fn openai_completion(message: Value, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-StandIn0000000000000000000000",
        "object": "chat.completion",
        "created": 1_741_569_952,
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": 100,
            "completion_tokens": 20,
            "total_tokens": 120,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0
            }
        },
        "service_tier": "default"
    })
}

/// An OpenAI Responses answer (status 200) of a reasoning model (`gpt-5-2025-08-07`): one
/// `reasoning` item with its `encrypted_content`, then one `function_call` per `(name,
/// input)`, call ids `call_…01`, `call_…02`, … (as [`openai_call_id`]), item ids
/// `fc_…01`, …, `status` `completed`, usage 100 input and 20 output tokens. The shape is
/// that of recorded answers of `POST /v1/responses` with `store: false` and `include:
/// ["reasoning.encrypted_content"]`.
pub fn openai_responses_function_calls(calls: &[(&str, Value)]) -> Value {
    let mut output = vec![responses_reasoning()];
    output.extend(calls.iter().enumerate().map(|(i, (name, input))| {
        json!({
            "id": format!("fc_{:046}", i + 1),
            "type": "function_call",
            "status": "completed",
            "arguments": input.to_string(),
            "call_id": openai_call_id(i),
            "name": name
        })
    }));
    openai_response(output)
}

/// An OpenAI Responses answer (status 200) of a reasoning model (`gpt-5-2025-08-07`): one
/// `reasoning` item with its `encrypted_content`, then one assistant `message` with `text`,
/// `status` `completed`, usage 100 input and 20 output tokens.
pub fn openai_responses_text(text: &str) -> Value {
    openai_response(vec![
        responses_reasoning(),
        json!({
            "id": format!("msg_{:046}", 1),
            "type": "message",
            "status": "completed",
            "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": text}],
            "role": "assistant"
        }),
    ])
}

/// The encrypted content of the reasoning item of [`openai_responses_text`] and
/// [`openai_responses_function_calls`].
pub const OPENAI_REASONING_CONTENT: &str =
    "gAAAAABStandInEncryptedReasoning00000000000000000000000000000000";

fn responses_reasoning() -> Value {
    json!({
        "id": format!("rs_{:046}", 1),
        "type": "reasoning",
        "encrypted_content": OPENAI_REASONING_CONTENT,
        "summary": []
    })
}

fn openai_response(output: Vec<Value>) -> Value {
    json!({
        "id": "resp_StandIn0000000000000000000000000000000000000000",
        "object": "response",
        "created_at": 1_754_925_861,
        "status": "completed",
        "background": false,
        "error": null,
        "incomplete_details": null,
        "instructions": null,
        "max_output_tokens": null,
        "max_tool_calls": null,
        "model": "gpt-5-2025-08-07",
        "output": output,
        "parallel_tool_calls": true,
        "previous_response_id": null,
        "prompt_cache_key": null,
        "reasoning": {"effort": "medium", "summary": null},
        "safety_identifier": null,
        "service_tier": "default",
        "store": false,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [],
        "top_logprobs": 0,
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": 20,
            "output_tokens_details": {"reasoning_tokens": 12},
            "total_tokens": 120
        },
        "user": null,
        "metadata": {}
    })
}
