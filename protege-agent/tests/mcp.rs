//! `mcp` tools against MCP servers built with rmcp's server side: one over streamable HTTP
//! on a free local port, one over standard input and output in a child process (this test
//! program itself, run as `mcp_stdio_server`). The tools offered and left out, the result the
//! model reads for each way a call can end, the bearer token, reconnection, and the errors
//! of a server that cannot be loaded.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use protege_agent::{McpTools, ToolOutcome, http_client};
use protege_core::{McpServer, McpTool, ToolDef};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, Resource, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

const TOKEN: &str = "kb-token-NEVER-SHOW-ME";

/// What the HTTP server's `search_exit` does, and the stdio server's: the server goes away
/// without answering.
type Exit = Arc<dyn Fn() + Send + Sync>;

/// The knowledge base: an MCP server with tools to keep and tools to leave out.
#[derive(Clone)]
struct Kb {
    exit: Exit,
}

fn schema(value: Value) -> Arc<Map<String, Value>> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => unreachable!(),
    }
}

fn query_schema() -> Arc<Map<String, Value>> {
    schema(json!({
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    }))
}

/// The description of `search_orders`: longer than the 1,024 characters kept.
fn long_description() -> String {
    format!("Orders by number. {}", "ø".repeat(2000))
}

fn listed_tools() -> Vec<Tool> {
    vec![
        Tool::new("search_kb", "Search the knowledge base", query_schema()),
        Tool::new(
            "search_orders",
            long_description(),
            schema(json!({
                "type": "object",
                "properties": {"order": {"type": "string"}},
                "required": ["order"],
            })),
        ),
        Tool::new("delete_all", "Delete every article", query_schema()),
        Tool::new(
            "bad name!",
            "A tool with a space in its name",
            query_schema(),
        ),
        Tool::new(
            "search_raw",
            "Takes a bare string",
            schema(json!({"type": "string"})),
        ),
        Tool::new("search_slow", "Never answers", query_schema()),
        Tool::new("search_media", "A chart", query_schema()),
        Tool::new("search_big", "Two kilobytes", query_schema()),
        Tool::new("search_pid", "The server's process id", query_schema()),
        Tool::new("search_echo", "Its input and headers", query_schema()),
        Tool::new("search_exit", "The server goes away", query_schema()),
        Tool::new("search_kb", "Listed twice", query_schema()),
    ]
}

impl ServerHandler for Kb {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(listed_tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        let text = |key: &str| {
            arguments
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let result = match request.name.as_ref() {
            "search_kb" if text("query") == "boom" => {
                return Err(ErrorData::internal_error("the index is rebuilding", None));
            }
            "search_kb" => CallToolResult::success(vec![
                ContentBlock::text(format!("2 articles match `{}`", text("query"))),
                ContentBlock::text("first: Resetting a password"),
            ]),
            "search_orders" => CallToolResult::error(vec![ContentBlock::text(format!(
                "order {} does not exist",
                text("order")
            ))]),
            "search_slow" => {
                tokio::time::sleep(Duration::from_secs(600)).await;
                CallToolResult::success(vec![ContentBlock::text("too late")])
            }
            "search_media" => CallToolResult::success(vec![
                ContentBlock::text("chart:"),
                ContentBlock::image("iVBORw0KGgo=", "image/png"),
                ContentBlock::audio("UklGRg==", "audio/wav"),
                ContentBlock::resource_link(Resource::new("file:///chart.csv", "chart")),
            ]),
            "search_big" => CallToolResult::success(vec![ContentBlock::text("x".repeat(2000))]),
            "search_pid" => {
                CallToolResult::success(vec![ContentBlock::text(std::process::id().to_string())])
            }
            "search_echo" => CallToolResult::success(vec![ContentBlock::text(format!(
                "query {} and token {TOKEN}",
                text("query")
            ))]),
            "search_exit" => {
                (self.exit)();
                // Never reached over stdio; over HTTP the server is gone before this is sent.
                tokio::time::sleep(Duration::from_secs(600)).await;
                CallToolResult::success(vec![])
            }
            other => {
                return Err(ErrorData::invalid_params(format!("no tool {other}"), None));
            }
        };
        Ok(result.into())
    }
}

/// The `Authorization` headers the HTTP server received.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<Option<String>>>>);

/// Refuses a request without `Authorization: Bearer TOKEN` (HTTP 401), after noting it.
async fn bearer(State(seen): State<Seen>, request: Request, next: Next) -> Response {
    let header = request
        .headers()
        .get("authorization")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let ok = header.as_deref() == Some(&format!("Bearer {TOKEN}"));
    seen.0.lock().unwrap().push(header);
    if ok {
        next.run(request).await
    } else {
        (StatusCode::UNAUTHORIZED, "no").into_response()
    }
}

/// An MCP server over streamable HTTP on `listener`; its `search_exit` stops it, and so
/// does the function returned.
fn serve_http(listener: tokio::net::TcpListener, seen: Seen) -> Exit {
    // A response stream that broke off is resumed after 100 ms, not the default 3 s.
    let retry = Duration::from_millis(100);
    let config = StreamableHttpServerConfig::default().with_sse_retry(Some(retry));
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.sse_retry = Some(retry);
    let token = config.cancellation_token.clone();
    let stop: Exit = Arc::new(move || token.cancel());
    let kb = Kb {
        exit: Arc::clone(&stop),
    };
    let stopped = config.cancellation_token.clone();
    let service = StreamableHttpService::new(move || Ok(kb.clone()), sessions.into(), config);
    let app = Router::new()
        .nest_service("/mcp", service)
        .layer(from_fn_with_state(seen, bearer));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move { stopped.cancelled().await })
            .await;
    });
    stop
}

/// An MCP server over streamable HTTP on a free port: its URL and what it received.
async fn http_server() -> (String, Seen) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen = Seen::default();
    let _ = serve_http(listener, seen.clone());
    (url, seen)
}

fn entry(server: McpServer) -> McpTool {
    McpTool {
        server,
        allow: vec!["search_*".to_owned()],
        token_env: Some("KB_MCP_TOKEN".to_owned()),
        timeout: Duration::from_secs(10),
    }
}

async fn connect(server: McpServer) -> McpTools {
    McpTools::connect(
        &entry(server),
        Some(TOKEN.to_owned()),
        http_client().unwrap(),
    )
    .await
    .unwrap()
}

fn ok(content: &str) -> ToolOutcome {
    ToolOutcome {
        content: content.to_owned(),
        is_error: false,
    }
}

fn failed(content: &str) -> ToolOutcome {
    ToolOutcome::error(content)
}

const TIMEOUT: Duration = Duration::from_secs(10);
const LIMIT: usize = 1 << 20;

fn query(q: &str) -> Value {
    json!({"query": q})
}

/// The stdio server's command: this test program, run as `mcp_stdio_server`. The test
/// harness writes its own lines to standard output, so the shell moves them to standard
/// error and hands the server the real standard output as descriptor 3.
fn stdio_command(before: &str, args: &[&str]) -> McpServer {
    let script = format!(
        "{before}exec 3>&1 1>&2; PROTEGE_TEST_MCP_STDIO=1 exec \"$0\" mcp_stdio_server --exact --ignored --nocapture --test-threads=1"
    );
    let exe = std::env::current_exe().unwrap();
    let mut argv = vec![
        "sh".to_owned(),
        "-c".to_owned(),
        script,
        exe.to_string_lossy().into_owned(),
    ];
    argv.extend(args.iter().map(|a| (*a).to_owned()));
    McpServer::Command(argv)
}

/// Not a test: the MCP server the stdio tests start, serving on standard input and on
/// descriptor 3 when `PROTEGE_TEST_MCP_STDIO` is set.
#[tokio::test]
#[ignore = "the stdio MCP server of the other tests, not a test"]
async fn mcp_stdio_server() {
    if std::env::var_os("PROTEGE_TEST_MCP_STDIO").is_none() {
        return;
    }
    let out = tokio::fs::OpenOptions::new()
        .write(true)
        .open("/dev/fd/3")
        .await
        .unwrap();
    let kb = Kb {
        exit: Arc::new(|| std::process::exit(3)),
    };
    let running = kb.serve((tokio::io::stdin(), out)).await.unwrap();
    let _ = running.waiting().await;
}

fn names(tools: &[ToolDef]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

fn left_out(tools: &McpTools) -> Vec<(String, String)> {
    tools
        .left_out()
        .iter()
        .map(|l| (l.name.clone(), l.reason.to_string()))
        .collect()
}

/// The tools offered, in the server's order: `delete_all`, `bad name!`, `search_raw` and the
/// second `search_kb` are left out.
const KEPT: [&str; 8] = [
    "search_kb",
    "search_orders",
    "search_slow",
    "search_media",
    "search_big",
    "search_pid",
    "search_echo",
    "search_exit",
];

fn expected_left_out() -> Vec<(String, String)> {
    [
        ("delete_all", "its name matches no pattern of `allow`"),
        (
            "bad name!",
            "its name is not 1 to 64 letters, digits, `_` or `-`",
        ),
        (
            "search_raw",
            "its input schema is not a JSON object schema (`\"type\": \"object\"`)",
        ),
        (
            "search_kb",
            "the server lists another tool of that name before it",
        ),
    ]
    .iter()
    .map(|(n, r)| ((*n).to_owned(), (*r).to_owned()))
    .collect()
}

/// The offered tools, what was left out and why, and the tool definitions the model reads.
async fn check_listing(tools: &McpTools) {
    assert_eq!(names(tools.tools()), KEPT);
    assert_eq!(left_out(tools), expected_left_out());
    assert_eq!(
        tools.left_out()[1].to_string(),
        "tool `bad name!` is left out: its name is not 1 to 64 letters, digits, `_` or `-`"
    );
    let kb = &tools.tools()[0];
    assert_eq!(kb.description, "Search the knowledge base");
    assert_eq!(kb.input_schema, Value::Object((*query_schema()).clone()));
    let orders = &tools.tools()[1];
    assert_eq!(orders.description.chars().count(), 1024);
    assert!(long_description().starts_with(&orders.description));
    assert!(tools.offers("search_kb"));
    assert!(!tools.offers("delete_all"));
}

/// What every server answers the same way, whatever the transport.
async fn check_calls(tools: &McpTools) {
    assert_eq!(
        tools
            .call("search_kb", &query("password"), TIMEOUT, LIMIT)
            .await,
        ok("2 articles match `password`\nfirst: Resetting a password")
    );
    assert_eq!(
        tools
            .call("search_orders", &json!({"order": "A7"}), TIMEOUT, LIMIT)
            .await,
        failed("order A7 does not exist")
    );
    assert_eq!(
        tools
            .call("search_media", &query("q"), TIMEOUT, LIMIT)
            .await,
        ok("chart:\n[image: image/png]\n[audio: audio/wav]\n[resource link: file:///chart.csv]")
    );
    assert_eq!(
        tools.call("search_big", &query("q"), TIMEOUT, 1000).await,
        failed("tool `search_big` answered more than 1000 bytes")
    );
    assert_eq!(
        tools.call("search_big", &query("q"), TIMEOUT, 2000).await,
        ok(&"x".repeat(2000))
    );
    // A tool left out is not called, whatever the model asks.
    assert_eq!(
        tools.call("delete_all", &query("q"), TIMEOUT, LIMIT).await,
        failed("tool `delete_all` is not offered by its MCP server")
    );
    assert_eq!(
        tools.call("search_kb", &json!(["q"]), TIMEOUT, LIMIT).await,
        failed("tool `search_kb` was not called: its input must be a JSON object")
    );
    // A call that hangs ends at its timeout; the connection serves the next call.
    let started = Instant::now();
    assert_eq!(
        tools
            .call(
                "search_slow",
                &query("q"),
                Duration::from_millis(300),
                LIMIT
            )
            .await,
        failed("tool `search_slow` did not answer within 300ms")
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(
        tools
            .call("search_kb", &query("again"), TIMEOUT, LIMIT)
            .await,
        ok("2 articles match `again`\nfirst: Resetting a password")
    );
    // A server that echoes the token has it redacted.
    assert_eq!(
        tools.call("search_echo", &query("q"), TIMEOUT, LIMIT).await,
        ok("query q and token [redacted]")
    );
    let debug = format!("{tools:?}");
    assert!(!debug.contains(TOKEN), "{debug}");
}

#[tokio::test]
async fn http_server_tools_are_listed_filtered_and_called_with_the_bearer_token() {
    let (url, seen) = http_server().await;
    let tools = connect(McpServer::Url(url.clone())).await;
    assert_eq!(tools.server(), url);
    check_listing(&tools).await;
    check_calls(&tools).await;
    let headers = seen.0.lock().unwrap().clone();
    assert!(!headers.is_empty());
    assert!(
        headers
            .iter()
            .all(|h| h.as_deref() == Some("Bearer kb-token-NEVER-SHOW-ME")),
        "{headers:?}"
    );
}

#[tokio::test]
async fn stdio_server_tools_are_listed_filtered_and_called() {
    let tools = connect(stdio_command("", &[])).await;
    check_listing(&tools).await;
    check_calls(&tools).await;
    // The tools are shared between tasks, and a call runs on any of them.
    let tools = Arc::new(tools);
    let shared = Arc::clone(&tools);
    let outcome = tokio::spawn(async move {
        shared
            .call("search_kb", &query("spawned"), TIMEOUT, LIMIT)
            .await
    })
    .await
    .unwrap();
    assert_eq!(
        outcome,
        ok("2 articles match `spawned`\nfirst: Resetting a password")
    );
}

#[tokio::test]
async fn a_server_down_at_load_is_an_error_naming_it() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let error = McpTools::connect(
        &entry(McpServer::Url(url.clone())),
        Some(TOKEN.to_owned()),
        http_client().unwrap(),
    )
    .await
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("MCP server `{url}` could not be reached: Connection refused (os error 111)")
    );
    assert!(!format!("{error:?}").contains(TOKEN));

    let missing = McpServer::Command(vec!["/nonexistent/kb-mcp".to_owned()]);
    let error = McpTools::connect(&entry(missing), None, http_client().unwrap())
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "MCP server `/nonexistent/kb-mcp` could not be started: No such file or directory (os error 2)"
    );

    let exits = McpServer::Command(vec!["sh".to_owned(), "-c".to_owned(), "exit 1".to_owned()]);
    let error = McpTools::connect(&entry(exits), None, http_client().unwrap())
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "MCP server `sh -c exit 1` closed the connection before it answered"
    );
}

#[tokio::test]
async fn a_refused_token_is_an_error_without_the_token() {
    let (url, seen) = http_server().await;
    let wrong = "wrong-token-NEVER-SHOW-ME";
    let error = McpTools::connect(
        &entry(McpServer::Url(url.clone())),
        Some(wrong.to_owned()),
        http_client().unwrap(),
    )
    .await
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("MCP server `{url}` answered HTTP 401 Unauthorized: no")
    );
    assert!(!format!("{error:?}").contains(wrong));
    assert_eq!(
        seen.0.lock().unwrap().first().cloned().flatten().as_deref(),
        Some("Bearer wrong-token-NEVER-SHOW-ME")
    );
}

#[tokio::test]
async fn a_server_that_answers_garbage_is_an_error() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let app = Router::new().route(
        "/mcp",
        axum::routing::post(|| async { ([("content-type", "text/html")], "<h1>hello</h1>") }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    let error = McpTools::connect(
        &entry(McpServer::Url(url.clone())),
        None,
        http_client().unwrap(),
    )
    .await
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("MCP server `{url}` did not answer as an MCP server (it answered `text/html`)")
    );
}

#[tokio::test]
async fn a_server_that_never_answers_at_load_is_an_error() {
    let mut silent = entry(stdio_command("", &[]));
    silent.server = McpServer::Command(vec!["sleep".to_owned(), "30".to_owned()]);
    silent.timeout = Duration::from_millis(500);
    let started = Instant::now();
    let error = McpTools::connect(&silent, None, http_client().unwrap())
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "MCP server `sleep 30` did not answer within 500ms"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}

/// The process id the stdio server answers with.
async fn pid(tools: &McpTools) -> u32 {
    let outcome = tools.call("search_pid", &query("q"), TIMEOUT, LIMIT).await;
    assert!(!outcome.is_error, "{outcome:?}");
    outcome.content.parse().unwrap()
}

/// Whether process `pid` is gone (or a zombie no one reaped yet).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

async fn wait_gone(pid: u32) {
    let started = Instant::now();
    while !gone(pid) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "process {pid} still runs"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_stdio_server_ends_when_its_tools_are_dropped_or_closed() {
    let tools = connect(stdio_command("", &[])).await;
    let first = pid(&tools).await;
    drop(tools);
    wait_gone(first).await;

    let tools = connect(stdio_command("", &[])).await;
    let second = pid(&tools).await;
    tools.close().await;
    assert!(gone(second));
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_lost_stdio_server_is_started_again_by_the_next_call() {
    let tools = connect(stdio_command("", &[])).await;
    let first = pid(&tools).await;
    assert_eq!(
        tools.call("search_exit", &query("q"), TIMEOUT, LIMIT).await,
        failed("tool `search_exit` did not answer: the connection to its MCP server was lost")
    );
    let second = pid(&tools).await;
    assert_ne!(first, second);
    wait_gone(first).await;
}

#[tokio::test]
async fn a_server_that_cannot_be_started_again_fails_the_next_call() {
    let dir = std::env::temp_dir().join(format!("protege-mcp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let marker = dir.join("started");
    let _ = std::fs::remove_file(&marker);
    // The server starts once: the second time the shell exits at once.
    let once = "if [ -e \"$1\" ]; then exit 1; fi; : > \"$1\"; ";
    let tools = connect(stdio_command(once, &[marker.to_str().unwrap()])).await;
    assert_eq!(
        tools.call("search_exit", &query("q"), TIMEOUT, LIMIT).await,
        failed("tool `search_exit` did not answer: the connection to its MCP server was lost")
    );
    assert_eq!(
        tools.call("search_kb", &query("q"), TIMEOUT, LIMIT).await,
        failed(
            "tool `search_kb` was not called: its MCP server closed the connection before it answered"
        )
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn an_http_server_that_goes_away_during_a_call_and_comes_back() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let _ = serve_http(listener, Seen::default());
    let tools = connect(McpServer::Url(format!("http://{address}/mcp"))).await;
    // The response stream breaks off; resuming it fails a few times, then the call fails
    // (before its timeout).
    let started = Instant::now();
    assert_eq!(
        tools.call("search_exit", &query("q"), TIMEOUT, LIMIT).await,
        failed("tool `search_exit` did not answer: the connection to its MCP server was lost")
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // The next call opens a connection again, once, and fails when it cannot.
    assert_eq!(
        tools.call("search_kb", &query("q"), TIMEOUT, LIMIT).await,
        failed(
            "tool `search_kb` was not called: its MCP server could not be reached: Connection refused (os error 111)"
        )
    );
    // The server comes back on the same port: the next call reconnects.
    let listener = tokio::net::TcpListener::bind(address).await.unwrap();
    let _ = serve_http(listener, Seen::default());
    assert_eq!(
        tools
            .call("search_kb", &query("back"), TIMEOUT, LIMIT)
            .await,
        ok("2 articles match `back`\nfirst: Resetting a password")
    );
}

#[tokio::test]
async fn an_http_server_restarted_between_calls() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let stop = serve_http(listener, Seen::default());
    let tools = connect(McpServer::Url(format!("http://{address}/mcp"))).await;
    assert!(
        !tools
            .call("search_kb", &query("q"), TIMEOUT, LIMIT)
            .await
            .is_error
    );
    stop();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // A new server, which knows nothing of the old session.
    let listener = tokio::net::TcpListener::bind(address).await.unwrap();
    let _ = serve_http(listener, Seen::default());
    assert_eq!(
        tools
            .call("search_kb", &query("again"), TIMEOUT, LIMIT)
            .await,
        ok("2 articles match `again`\nfirst: Resetting a password")
    );
}
