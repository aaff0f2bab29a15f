//! `http` tools against a local tool server: the signed request a tool receives, and the
//! result the model reads for each way a call can end; the schema check of a call's input.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use protege_agent::{
    DEFAULT_RESULT_LIMIT, HttpCall, SignatureError, Signed, ToolOutcome, call_http, check_input,
    http_client, signature, verify, verify_headers,
};
use serde_json::{Value, json};

const SECRET: &str = "tool-secret-NEVER-SHOW-ME";

/// One request the tool server received: headers (lowercase names, in order) and body.
type Request = (Vec<(String, String)>, Vec<u8>);

/// What the tool server received.
#[derive(Default, Clone)]
struct Seen(Arc<Mutex<Vec<Request>>>);

async fn lookup(State(seen): State<Seen>, headers: HeaderMap, body: Bytes) -> (StatusCode, String) {
    let pairs = headers
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    seen.0.lock().unwrap().push((pairs, body.to_vec()));
    if headers.contains_key("x-protege-signature")
        && let Err(e) = verify_headers(SECRET, &headers, &body, unix_now())
    {
        return (StatusCode::UNAUTHORIZED, e.to_string());
    }
    (
        StatusCode::OK,
        json!({"order": "A1", "status": "shipped"}).to_string(),
    )
}

/// A tool server on a free port, and its base URL.
async fn tool_server() -> (String, Seen) {
    let seen = Seen::default();
    let app = Router::new()
        .route("/lookup", post(lookup))
        .route(
            "/fail",
            post(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "database down") }),
        )
        .route(
            "/fail-long",
            post(|| async { (StatusCode::BAD_GATEWAY, "e".repeat(5000)) }),
        )
        .route("/hang", post(std::future::pending::<&'static str>))
        .route("/huge", post(|| async { Body::from(vec![b'x'; 10 << 20]) }))
        .route(
            "/latin1",
            post(|| async { Body::from(b"caf\xe9".to_vec()) }),
        )
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn tool<'a>(url: &'a str, input: &'a Value) -> HttpCall<'a> {
    HttpCall {
        name: "lookup_order",
        url,
        secret: Some(SECRET),
        timeout: Duration::from_secs(10),
        run_id: "run_01JTEST",
        call_id: "toolu_01A",
        persona: "support",
        correspondent: "ada@example.com",
        authenticated: true,
        input,
        now: unix_now(),
        limit: DEFAULT_RESULT_LIMIT,
    }
}

#[tokio::test]
async fn a_signed_call_carries_its_headers_and_the_answer_is_the_result() {
    let (base, seen) = tool_server().await;
    let url = format!("{base}/lookup");
    let input = json!({"order": "A1", "qty": 2});
    let call = tool(&url, &input);
    let outcome = call_http(&http_client().unwrap(), &call).await;
    assert_eq!(
        outcome,
        ToolOutcome {
            content: r#"{"order":"A1","status":"shipped"}"#.to_owned(),
            is_error: false
        }
    );

    let seen = seen.0.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let (headers, body) = &seen[0];
    assert_eq!(body, br#"{"order":"A1","qty":2}"#);
    let protege: Vec<(String, String)> = headers
        .iter()
        .filter(|(n, _)| n.starts_with("x-protege-"))
        .cloned()
        .collect();
    let signed = Signed {
        timestamp: call.now,
        run: "run_01JTEST",
        call_id: "toolu_01A",
        persona: "support",
        correspondent: "ada@example.com",
        authenticated: true,
        body,
    };
    let expected: Vec<(String, String)> = [
        ("x-protege-run", "run_01JTEST".to_owned()),
        ("x-protege-tool-call", "toolu_01A".to_owned()),
        ("x-protege-persona", "support".to_owned()),
        ("x-protege-correspondent", "ada@example.com".to_owned()),
        ("x-protege-authenticated", "true".to_owned()),
        ("x-protege-timestamp", call.now.to_string()),
        ("x-protege-signature", signature(SECRET, &signed)),
    ]
    .into_iter()
    .map(|(n, v)| (n.to_owned(), v))
    .collect();
    assert_eq!(protege, expected);
    let content_type = headers
        .iter()
        .find(|(n, _)| n == "content-type")
        .map(|(_, v)| v.as_str());
    assert_eq!(content_type, Some("application/json"));
    assert!(!format!("{call:?}").contains(SECRET));
}

#[tokio::test]
async fn a_stale_or_forged_call_is_refused_by_the_tool() {
    let (base, seen) = tool_server().await;
    let url = format!("{base}/lookup");
    let input = json!({"order": "A1"});
    let client = http_client().unwrap();
    let stale = call_http(
        &client,
        &HttpCall {
            now: unix_now() - 301,
            ..tool(&url, &input)
        },
    )
    .await;
    assert_eq!(
        stale,
        ToolOutcome::error(
            "tool `lookup_order` answered HTTP 401: the timestamp is more than five minutes away"
        )
    );
    let forged = call_http(
        &client,
        &HttpCall {
            secret: Some("guess"),
            ..tool(&url, &input)
        },
    )
    .await;
    assert_eq!(
        forged,
        ToolOutcome::error("tool `lookup_order` answered HTTP 401: the signature does not match")
    );
    assert_eq!(seen.0.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn an_unsigned_scheduled_call_has_an_empty_correspondent_and_no_signature() {
    let (base, seen) = tool_server().await;
    let url = format!("{base}/lookup");
    let input = json!({});
    let call = HttpCall {
        secret: None,
        correspondent: "",
        authenticated: false,
        ..tool(&url, &input)
    };
    let outcome = call_http(&http_client().unwrap(), &call).await;
    assert!(!outcome.is_error, "{outcome:?}");
    let seen = seen.0.lock().unwrap().clone();
    let (headers, body) = &seen[0];
    assert_eq!(body, b"{}");
    let get = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(get("x-protege-correspondent"), Some(""));
    assert_eq!(get("x-protege-authenticated"), Some("false"));
    assert_eq!(get("x-protege-signature"), None);
}

#[tokio::test]
async fn an_error_status_is_an_error_result_quoting_1_kib() {
    let (base, _) = tool_server().await;
    let client = http_client().unwrap();
    let input = json!({"order": "A1"});
    let url = format!("{base}/fail");
    assert_eq!(
        call_http(&client, &tool(&url, &input)).await,
        ToolOutcome::error("tool `lookup_order` answered HTTP 500: database down")
    );
    let url = format!("{base}/fail-long");
    assert_eq!(
        call_http(&client, &tool(&url, &input)).await,
        ToolOutcome::error(format!(
            "tool `lookup_order` answered HTTP 502: {}",
            "e".repeat(1024)
        ))
    );
}

#[tokio::test]
async fn a_tool_that_hangs_times_out() {
    let (base, _) = tool_server().await;
    let url = format!("{base}/hang");
    let input = json!({"order": "A1"});
    let started = Instant::now();
    let outcome = call_http(
        &http_client().unwrap(),
        &HttpCall {
            timeout: Duration::from_millis(200),
            ..tool(&url, &input)
        },
    )
    .await;
    assert_eq!(
        outcome,
        ToolOutcome::error("tool `lookup_order` did not answer within 200ms")
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn an_answer_over_the_limit_is_an_error_result_read_no_further() {
    let (base, _) = tool_server().await;
    let url = format!("{base}/huge");
    let input = json!({"order": "A1"});
    let started = Instant::now();
    let outcome = call_http(&http_client().unwrap(), &tool(&url, &input)).await;
    assert_eq!(
        outcome,
        ToolOutcome::error("tool `lookup_order` answered more than 1048576 bytes")
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn an_answer_that_is_not_utf8_is_read_lossily() {
    let (base, _) = tool_server().await;
    let url = format!("{base}/latin1");
    let input = json!({});
    let outcome = call_http(&http_client().unwrap(), &tool(&url, &input)).await;
    assert_eq!(
        outcome,
        ToolOutcome {
            content: "caf\u{fffd}".to_owned(),
            is_error: false
        }
    );
}

#[tokio::test]
async fn an_unreachable_tool_is_an_error_result() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/lookup", free.local_addr().unwrap());
    drop(free);
    let input = json!({});
    let outcome = call_http(&http_client().unwrap(), &tool(&url, &input)).await;
    assert!(outcome.is_error);
    assert!(
        outcome
            .content
            .starts_with("tool `lookup_order` could not be reached: "),
        "{}",
        outcome.content
    );
    assert!(!outcome.content.contains(SECRET));
}

#[test]
fn signatures_match_the_documented_scheme() {
    // The same HMAC by hand: `printf '%s' '1700000000.run_1.toolu_1.support.ada@example.com.true.{"order":"A1"}'
    // | openssl dgst -sha256 -hmac s3cret`.
    let signed = Signed {
        timestamp: 1_700_000_000,
        run: "run_1",
        call_id: "toolu_1",
        persona: "support",
        correspondent: "ada@example.com",
        authenticated: true,
        body: br#"{"order":"A1"}"#,
    };
    assert_eq!(
        signature("s3cret", &signed),
        format!("v1={}", include_str!("fixtures/signature.hex").trim())
    );
    assert_eq!(
        verify(
            "s3cret",
            &signed,
            &signature("s3cret", &signed),
            1_700_000_100
        ),
        Ok(())
    );
    assert_eq!(
        verify(
            "s3cret",
            &signed,
            &signature("s3cret", &signed),
            1_700_000_301
        ),
        Err(SignatureError::Stale)
    );
}

#[test]
fn input_is_checked_against_the_schema_naming_the_path() {
    let schema = json!({
        "type": "object",
        "properties": {
            "order": {"type": "string"},
            "lines": {"type": "array", "items": {"type": "object", "properties": {"qty": {"type": "integer", "minimum": 1}}}}
        },
        "required": ["order"],
        "additionalProperties": false
    });
    assert_eq!(
        check_input(&schema, &json!({"order": "A1", "lines": [{"qty": 2}]})),
        Ok(())
    );
    assert_eq!(
        check_input(&schema, &json!({"order": 5})),
        Err(r#"$.order: 5 is not of type "string""#.to_owned())
    );
    assert_eq!(
        check_input(&schema, &json!({})),
        Err(r#"$: "order" is a required property"#.to_owned())
    );
    assert_eq!(
        check_input(
            &schema,
            &json!({"order": "A1", "lines": [{"qty": 1}, {"qty": 0}]})
        ),
        Err("$.lines[1].qty: 0 is less than the minimum of 1".to_owned())
    );
    assert_eq!(
        check_input(&schema, &json!({"order": "A1", "note": "x"})),
        Err("$: Additional properties are not allowed ('note' was unexpected)".to_owned())
    );
    assert_eq!(
        check_input(&schema, &json!({"order": 1, "lines": "none"})),
        Err(
            r#"$.order: 1 is not of type "string"; $.lines: "none" is not of type "array""#
                .to_owned()
        )
    );
    assert_eq!(
        check_input(&json!({"type": "nope"}), &json!({})),
        Err(r#"the tool's input schema is invalid: "nope" is not valid under any of the schemas listed in the 'anyOf' keyword"#.to_owned())
    );
}
