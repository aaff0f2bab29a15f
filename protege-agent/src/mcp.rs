//! The model's `mcp` tools (§17 "Tools"): the tools an MCP server lists, called through the
//! official Rust SDK (`rmcp`).
//!
//! [`McpTools::connect`] reaches the server of one `mcp` entry — streamable HTTP for a
//! `url` (through the agent's [`http_client`](crate::http_client), so rustls over ring, with
//! `Authorization: Bearer` when the entry has a token), or a child process spoken to over its
//! standard input and output for a `command` — and lists its tools. A listed tool is offered
//! when its name is 1 to 64 letters, digits, `_` or `-`, matches a pattern of `allow`, and
//! its input schema is a JSON object schema; every other one is kept as a [`LeftOut`] with
//! its reason, for the log. Descriptions are cut to [`DESCRIPTION_CHARS`] characters.
//!
//! [`McpTools::call`] calls one tool and turns whatever happens, failure included, into the
//! [`ToolOutcome`] the model reads: the result's text parts joined by newlines (other parts
//! named, `[image: image/png]`), the server's `isError` as `is_error`, and an error result
//! for a call that does not answer within its timeout, a lost connection or an answer over
//! the byte limit. The texts for the model name the tool, never the server's address.
//!
//! The connection stays open between calls. One that was lost (the server went away, the
//! process exited, a call failed in transport) is opened again by the next call, once,
//! before that call fails. Dropping [`McpTools`] closes the connection: a child process has
//! its standard input closed, then is sent `SIGTERM` and killed with its process group if it
//! has not exited within seconds; [`McpTools::close`] does the same and waits for it.
//!
//! The token is never written anywhere protege writes: not in `Debug`, not in an error, not
//! in a tool result (a server that echoes it has it replaced by `[redacted]`).

use std::fmt;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use protege_core::{McpServer, McpTool, ToolDef};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock,
    Implementation, ResourceContents,
};
use rmcp::service::{ClientInitializeError, RunningService};
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceError, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::ChildStderr;
use tokio::sync::Mutex;
use tracing::Instrument;

use crate::retry::human;
use crate::tools::ToolOutcome;

/// The most characters of a tool's description kept (the rest is cut).
pub const DESCRIPTION_CHARS: usize = 1024;

/// The longest tool name offered: names are `^[a-zA-Z0-9_-]{1,64}$`.
const NAME_CHARS: usize = 64;

/// The most of one line of a server's standard error logged at once.
const STDERR_LINE_BYTES: u64 = 4096;

/// The most characters of a server's own words (an error body) quoted in a sentence.
const QUOTE_CHARS: usize = 200;

/// The most characters of a server's error message passed on to the model (as the 1 KiB of
/// an `http` tool's error body).
const ERROR_MESSAGE_CHARS: usize = 1024;

/// How often a response stream that broke off is resumed before the call fails (rmcp's
/// default is forever), and the first and the longest wait between two attempts.
const RESUME_ATTEMPTS: usize = 3;
const RESUME_FIRST_WAIT: Duration = Duration::from_millis(250);
const RESUME_LONGEST_WAIT: Duration = Duration::from_secs(2);

/// What a redacted token reads as.
const REDACTED: &str = "[redacted]";

/// An open connection to a server.
type Connection = RunningService<RoleClient, ClientConfig>;

/// The tools of one `mcp` entry: the connection to its server, what it offers and what was
/// left out.
pub struct McpTools {
    /// How the server is named in errors and logs: its URL without credentials or query, or
    /// its command.
    server: String,
    /// How it is reached.
    target: McpServer,
    /// The bearer token of a `url` server.
    token: Option<String>,
    /// The client of a `url` server.
    http: reqwest::Client,
    /// How long opening a connection (and listing the tools, at load) may take.
    timeout: Duration,
    /// The tools offered.
    tools: Vec<ToolDef>,
    /// The tools listed but not offered.
    left_out: Vec<LeftOut>,
    /// The open connection; `None` once it was lost, until the next call opens another.
    connection: Mutex<Option<Arc<Connection>>>,
}

impl fmt::Debug for McpTools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.tools.iter().map(|t| t.name.as_str()).collect();
        f.debug_struct("McpTools")
            .field("server", &self.server)
            .field("token", &self.token.as_ref().map(|_| REDACTED))
            .field("timeout", &self.timeout)
            .field("tools", &names)
            .field("left_out", &self.left_out)
            .finish_non_exhaustive()
    }
}

/// A tool the server lists that is not offered to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    /// The name the server gave it.
    pub name: String,
    /// Why it is left out.
    pub reason: LeftOutReason,
}

impl fmt::Display for LeftOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tool `{}` is left out: {}",
            self.name.escape_debug(),
            self.reason
        )
    }
}

/// Why a listed tool is not offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LeftOutReason {
    /// The name is not `^[a-zA-Z0-9_-]{1,64}$`.
    Name,
    /// The name matches no pattern of `allow`.
    NotAllowed,
    /// The input schema is not a JSON object schema (`"type": "object"`).
    Schema,
    /// The server listed another tool of the same name before it.
    Duplicate,
}

impl fmt::Display for LeftOutReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Name => "its name is not 1 to 64 letters, digits, `_` or `-`",
            Self::NotAllowed => "its name matches no pattern of `allow`",
            Self::Schema => "its input schema is not a JSON object schema (`\"type\": \"object\"`)",
            Self::Duplicate => "the server lists another tool of that name before it",
        })
    }
}

/// Why the tools of an `mcp` entry could not be loaded: one sentence naming the server
/// (never its token), for the log and the persona's `mcp` status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct McpLoadError(String);

impl McpTools {
    /// Connects to the server of `entry`, lists its tools and sorts them into offered and
    /// left out. `token` is the value of the entry's `token_env`, sent as a bearer token to a
    /// `url` server; `http` is the client of `url` servers ([`http_client`](crate::http_client)).
    /// Connecting and listing together may take the entry's `timeout`.
    ///
    /// Fails with one sentence naming the server when it cannot be reached or started, does
    /// not answer in time, or does not answer as an MCP server; the entry's tools are then
    /// unavailable.
    pub async fn connect(
        entry: &McpTool,
        token: Option<String>,
        http: reqwest::Client,
    ) -> Result<Self, McpLoadError> {
        let mut tools = Self {
            server: server_label(&entry.server),
            target: entry.server.clone(),
            token: token.filter(|t| !t.is_empty()),
            http,
            timeout: entry.timeout,
            tools: Vec::new(),
            left_out: Vec::new(),
            connection: Mutex::new(None),
        };
        let load = async {
            let connection = tools.open().await?;
            let listed = connection
                .peer()
                .list_all_tools()
                .await
                .map_err(|e| format!("could not list its tools: {}", call_failure(&e)))?;
            Ok::<_, String>((connection, listed))
        };
        let (connection, listed) = match tokio::time::timeout(entry.timeout, load).await {
            Ok(Ok(loaded)) => loaded,
            Ok(Err(failure)) => return Err(tools.load_error(&failure)),
            Err(_) => {
                let failure = format!("did not answer within {}", human(entry.timeout));
                return Err(tools.load_error(&failure));
            }
        };
        let (offered, left_out) = sort(entry, listed);
        tools.tools = offered;
        tools.left_out = left_out;
        tools.connection = Mutex::new(Some(Arc::new(connection)));
        Ok(tools)
    }

    /// How the server is named in errors and logs: its URL (without credentials, query or
    /// fragment) or its command.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The tools offered to the model, in the server's order.
    pub fn tools(&self) -> &[ToolDef] {
        &self.tools
    }

    /// The tools the server lists that are not offered, each with its reason.
    pub fn left_out(&self) -> &[LeftOut] {
        &self.left_out
    }

    /// Whether the tool called `name` is offered.
    pub fn offers(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.name == name)
    }

    /// Calls the offered tool `name` with `input` (already checked against its schema,
    /// [`check_input`](crate::check_input)) and turns whatever happens into its result. The
    /// call, reconnecting included, may take `timeout`; a result of more than `limit` bytes
    /// of text is an error result. A connection found lost is opened again first, once.
    pub async fn call(
        &self,
        name: &str,
        input: &Value,
        timeout: Duration,
        limit: usize,
    ) -> ToolOutcome {
        if !self.offers(name) {
            let name = name.escape_debug();
            return ToolOutcome::error(format!("tool `{name}` is not offered by its MCP server"));
        }
        let span = tracing::info_span!(
            "execute_tool",
            otel.name = format!("execute_tool {name}").as_str(),
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = name,
        );
        let started = Instant::now();
        let (outcome, label) = self
            .exchange(name, input, timeout, limit)
            .instrument(span)
            .await;
        metrics::counter!("protege_tool_calls_total", "tool" => name.to_owned(), "outcome" => label).increment(1);
        tracing::debug!(
            tool = name,
            outcome = label,
            seconds = started.elapsed().as_secs_f64(),
            "tool call"
        );
        ToolOutcome {
            content: self.scrub(outcome.content),
            is_error: outcome.is_error,
        }
    }

    /// Closes the connection and waits until it is closed (a child process has exited or
    /// been killed). Dropping does the same without waiting.
    pub async fn close(self) {
        let connection = self.connection.into_inner();
        if let Some(connection) = connection.and_then(Arc::into_inner) {
            let _ = connection.cancel().await;
        }
    }

    /// One call, and the outcome's metric label.
    async fn exchange(
        &self,
        name: &str,
        input: &Value,
        timeout: Duration,
        limit: usize,
    ) -> (ToolOutcome, &'static str) {
        let Value::Object(arguments) = input else {
            let text = format!("tool `{name}` was not called: its input must be a JSON object");
            return (ToolOutcome::error(text), "error");
        };
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments.clone());
        let answer = tokio::time::timeout(timeout, async {
            let connection = self.connection().await?;
            let result = connection.peer().call_tool(params).await;
            if let Err(e) = &result
                && lost(e)
            {
                self.forget(&connection).await;
            }
            Ok::<_, String>(result)
        })
        .await;
        match answer {
            Err(_) => {
                let text = format!("tool `{name}` did not answer within {}", human(timeout));
                (ToolOutcome::error(text), "timeout")
            }
            Ok(Err(failure)) => {
                tracing::warn!(mcp_server = %self.server, "cannot reconnect: {}", self.scrub(failure.clone()));
                let text = format!("tool `{name}` was not called: its MCP server {failure}");
                (ToolOutcome::error(text), "unreachable")
            }
            Ok(Ok(Err(e))) => {
                let label = if lost(&e) { "unreachable" } else { "error" };
                let text = format!("tool `{name}` {}", call_failure(&e));
                (ToolOutcome::error(text), label)
            }
            Ok(Ok(Ok(result))) => {
                let content = result_text(&result);
                if content.len() > limit {
                    let text = format!("tool `{name}` answered more than {limit} bytes");
                    return (ToolOutcome::error(text), "too_large");
                }
                let is_error = result.is_error == Some(true);
                let label = if is_error { "error" } else { "ok" };
                (ToolOutcome { content, is_error }, label)
            }
        }
    }

    /// The open connection, opening another when the last one was lost.
    async fn connection(&self) -> Result<Arc<Connection>, String> {
        let mut slot = self.connection.lock().await;
        if let Some(connection) = slot.as_ref()
            && !connection.peer().is_transport_closed()
        {
            return Ok(Arc::clone(connection));
        }
        // A closed connection is dropped before another is opened.
        *slot = None;
        tracing::info!(mcp_server = %self.server, "reconnecting to the MCP server");
        let connection = Arc::new(self.open().await?);
        *slot = Some(Arc::clone(&connection));
        Ok(connection)
    }

    /// Drops `connection`, which failed in transport, unless another replaced it already:
    /// the next call opens a new one.
    async fn forget(&self, connection: &Arc<Connection>) {
        let mut slot = self.connection.lock().await;
        if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, connection)) {
            *slot = None;
        }
    }

    /// Opens a connection: the MCP handshake over streamable HTTP or a new child process.
    /// `Err` completes "MCP server `X` …".
    async fn open(&self) -> Result<Connection, String> {
        let client = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("protege", env!("CARGO_PKG_VERSION")),
        );
        match &self.target {
            McpServer::Url(url) => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                let mut resume = ExponentialBackoff::default();
                resume.max_times = Some(RESUME_ATTEMPTS);
                resume.base_duration = RESUME_FIRST_WAIT;
                resume.max_delay = Some(RESUME_LONGEST_WAIT);
                config.retry_config = Arc::new(resume);
                if let Some(token) = &self.token {
                    config = config.auth_header(token.clone());
                }
                let transport =
                    StreamableHttpClientTransport::with_client(self.http.clone(), config);
                client.serve(transport).await.map_err(|e| init_failure(&e))
            }
            McpServer::Command(argv) => {
                let Some((program, args)) = argv.split_first() else {
                    return Err("has no command".to_owned());
                };
                let mut command = tokio::process::Command::new(program);
                command.args(args);
                let mut command = process_wrap::tokio::CommandWrap::from(command);
                // Its own process group, so that a kill reaches what it started too.
                #[cfg(unix)]
                command.wrap(process_wrap::tokio::ProcessGroup::leader());
                command.wrap(process_wrap::tokio::KillOnDrop);
                let (transport, stderr) = TokioChildProcess::builder(command)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| format!("could not be started: {e}"))?;
                if let Some(stderr) = stderr {
                    tokio::spawn(log_stderr(self.server.clone(), stderr));
                }
                client.serve(transport).await.map_err(|e| init_failure(&e))
            }
        }
    }

    /// The load error for a failure ("could not be reached: …").
    fn load_error(&self, failure: &str) -> McpLoadError {
        McpLoadError(self.scrub(format!("MCP server `{}` {failure}", self.server)))
    }

    /// `text` with the token, if it occurs, replaced by `[redacted]`.
    fn scrub(&self, text: String) -> String {
        match &self.token {
            Some(token) if text.contains(token.as_str()) => text.replace(token.as_str(), REDACTED),
            _ => text,
        }
    }
}

/// How a server is named: a URL without credentials, query or fragment, or a command.
/// How the server of an `mcp` entry is named in errors, logs and reports: its URL without
/// credentials, query or fragment, or its command.
pub fn server_label(server: &McpServer) -> String {
    match server {
        McpServer::Url(url) => match reqwest::Url::parse(url) {
            Ok(mut parsed) => {
                let _ = parsed.set_username("");
                let _ = parsed.set_password(None);
                parsed.set_query(None);
                parsed.set_fragment(None);
                parsed.to_string()
            }
            Err(_) => url.clone(),
        },
        McpServer::Command(argv) => argv.join(" "),
    }
}

/// Sorts the listed tools into those offered and those left out.
fn sort(entry: &McpTool, listed: Vec<rmcp::model::Tool>) -> (Vec<ToolDef>, Vec<LeftOut>) {
    let mut offered: Vec<ToolDef> = Vec::new();
    let mut left_out = Vec::new();
    for tool in listed {
        let name = tool.name.into_owned();
        let object = tool.input_schema.get("type").and_then(Value::as_str) == Some("object");
        let reason = if !valid_name(&name) {
            Some(LeftOutReason::Name)
        } else if !entry.allows(&name) {
            Some(LeftOutReason::NotAllowed)
        } else if !object {
            Some(LeftOutReason::Schema)
        } else if offered.iter().any(|t| t.name == name) {
            Some(LeftOutReason::Duplicate)
        } else {
            None
        };
        match reason {
            Some(reason) => left_out.push(LeftOut { name, reason }),
            None => offered.push(ToolDef {
                name,
                description: cap(tool.description.as_deref().unwrap_or_default()),
                input_schema: Value::Object(Arc::unwrap_or_clone(tool.input_schema)),
            }),
        }
    }
    (offered, left_out)
}

/// Whether `name` is `^[a-zA-Z0-9_-]{1,64}$`.
fn valid_name(name: &str) -> bool {
    (1..=NAME_CHARS).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The first [`DESCRIPTION_CHARS`] characters of a description.
fn cap(description: &str) -> String {
    match description.char_indices().nth(DESCRIPTION_CHARS) {
        Some((end, _)) => description[..end].to_owned(),
        None => description.to_owned(),
    }
}

/// `text` cut to `chars` characters, `…` marking the cut.
fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// The text of a result: its text parts joined by newlines, other parts named; the
/// structured content as JSON when there are no parts.
fn result_text(result: &CallToolResult) -> String {
    if result.content.is_empty()
        && let Some(structured) = &result.structured_content
    {
        return structured.to_string();
    }
    let parts: Vec<String> = result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::Image(image) => format!("[image: {}]", image.mime_type),
            ContentBlock::Audio(audio) => format!("[audio: {}]", audio.mime_type),
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::TextResourceContents { text, .. } => text.clone(),
                ResourceContents::BlobResourceContents { uri, mime_type, .. } => match mime_type {
                    Some(mime) => format!("[resource: {uri}, {mime}]"),
                    None => format!("[resource: {uri}]"),
                },
                _ => "[resource]".to_owned(),
            },
            ContentBlock::ResourceLink(link) => format!("[resource link: {}]", link.uri),
            _ => "[content]".to_owned(),
        })
        .collect();
    parts.join("\n")
}

/// Whether a failed call means the connection is gone.
fn lost(error: &ServiceError) -> bool {
    matches!(
        error,
        ServiceError::TransportClosed | ServiceError::TransportSend(_)
    )
}

/// What went wrong with a request, completing "tool `NAME` …".
fn call_failure(error: &ServiceError) -> String {
    match error {
        ServiceError::McpError(data) => {
            format!("failed: {}", cut(&data.message, ERROR_MESSAGE_CHARS))
        }
        ServiceError::TransportSend(e) => {
            format!(
                "did not answer: its MCP server {}",
                transport_failure(e.error.as_ref())
            )
        }
        ServiceError::TransportClosed => {
            "did not answer: the connection to its MCP server was lost".to_owned()
        }
        ServiceError::Timeout { timeout } => format!("did not answer within {}", human(*timeout)),
        ServiceError::Cancelled { .. } => "did not answer: the call was cancelled".to_owned(),
        ServiceError::UnexpectedResponse => "did not answer with a tool result".to_owned(),
        other => format!("failed: {other}"),
    }
}

/// Why a handshake failed, completing "MCP server `X` …".
fn init_failure(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::TransportError { error, .. } => {
            transport_failure(error.error.as_ref())
        }
        ClientInitializeError::ConnectionClosed(_) => {
            "closed the connection before it answered".to_owned()
        }
        ClientInitializeError::JsonRpcError(data) => {
            format!("refused the connection: {}", quote(&data.message))
        }
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => init_failure(fallback),
        other => format!("did not answer as an MCP server: {other}"),
    }
}

/// Why a transport failed, completing "MCP server `X` …".
fn transport_failure(error: &(dyn std::error::Error + Send + Sync + 'static)) -> String {
    if let Some(e) = error.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        return match e {
            StreamableHttpError::Client(e) => request_failure(e),
            StreamableHttpError::HttpStatus(status) => format!("answered HTTP {}", status.status),
            StreamableHttpError::AuthRequired(_) => {
                "answered HTTP 401: the token is missing or refused".to_owned()
            }
            StreamableHttpError::InsufficientScope(_) => {
                "answered HTTP 403: the token does not grant these tools".to_owned()
            }
            StreamableHttpError::UnexpectedContentType(Some(kind)) => {
                format!("did not answer as an MCP server (it answered `{kind}`)")
            }
            StreamableHttpError::UnexpectedContentType(None) => {
                "did not answer as an MCP server (its answer had no content type)".to_owned()
            }
            StreamableHttpError::UnexpectedServerResponse(message) => {
                // `HTTP 401 Unauthorized: BODY` for a status without a JSON-RPC error.
                match message.strip_prefix("HTTP ") {
                    Some(rest) if rest.starts_with(|c: char| c.is_ascii_digit()) => {
                        format!("answered HTTP {}", quote(rest))
                    }
                    _ => format!("did not answer as an MCP server: {}", quote(message)),
                }
            }
            StreamableHttpError::Io(e) => format!("could not be reached: {e}"),
            StreamableHttpError::UnexpectedEndOfStream
            | StreamableHttpError::TransportChannelClosed => "closed the connection".to_owned(),
            other => format!("did not answer as an MCP server: {other}"),
        };
    }
    if let Some(e) = error.downcast_ref::<std::io::Error>() {
        // A child process that exited: writing to it fails, or reading from it ends.
        return match e.kind() {
            std::io::ErrorKind::BrokenPipe
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::UnexpectedEof => {
                "closed the connection before it answered".to_owned()
            }
            _ => format!("failed: {e}"),
        };
    }
    format!("failed: {error}")
}

/// A server's own words on one line, cut to [`QUOTE_CHARS`] characters.
fn quote(text: &str) -> String {
    let line: String = text
        .trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    cut(&line, QUOTE_CHARS)
}

/// Why an HTTP request failed, completing "MCP server `X` …".
fn request_failure(error: &reqwest::Error) -> String {
    if let Some(status) = error.status() {
        format!("answered HTTP {}", status.as_u16())
    } else if error.is_timeout() {
        "did not answer in time".to_owned()
    } else if error.is_connect() {
        // The innermost cause says it best: `Connection refused (os error 111)`.
        let mut cause: &(dyn std::error::Error + 'static) = error;
        while let Some(next) = cause.source() {
            cause = next;
        }
        format!("could not be reached: {cause}")
    } else {
        format!("could not be reached: {}", crate::http::chain(error))
    }
}

/// Logs each line a server writes to its standard error, until it closes it.
async fn log_stderr(server: String, stderr: ChildStderr) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut reader)
            .take(STDERR_LINE_BYTES)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_end();
                if !text.is_empty() {
                    tracing::info!(mcp_server = %server, "{text}");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(valid_name("search_kb"));
        assert!(valid_name("A-1"));
        assert!(valid_name(&"a".repeat(64)));
        assert!(!valid_name(&"a".repeat(65)));
        assert!(!valid_name(""));
        assert!(!valid_name("bad name!"));
        assert!(!valid_name("dotted.name"));
        assert!(!valid_name("é"));
    }

    #[test]
    fn descriptions_are_cut_by_characters() {
        assert_eq!(cap("short"), "short");
        let long = "é".repeat(DESCRIPTION_CHARS + 10);
        assert_eq!(cap(&long).chars().count(), DESCRIPTION_CHARS);
    }

    #[test]
    fn labels_leave_out_credentials_and_query() {
        let url = McpServer::Url("https://user:pw@kb.internal/mcp?key=1#x".to_owned());
        assert_eq!(server_label(&url), "https://kb.internal/mcp");
        let command = McpServer::Command(vec!["kb-server".to_owned(), "--stdio".to_owned()]);
        assert_eq!(server_label(&command), "kb-server --stdio");
    }
}
