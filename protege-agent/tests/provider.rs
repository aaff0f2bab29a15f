//! A provider call against the stand-in: what is retried and how, what fails at once, what
//! the requests carry, and that the API key never shows. With `PROTEGE_WIRECHECK` set, every
//! request and answer is also checked against the providers' schemas.

mod common;

use std::time::{Duration, Instant};

use common::*;
use protege_agent::standin::{self, Scripted, StandIn};
use protege_agent::{ProviderCall, ProviderError, ProviderFormat};
use serde_json::json;

#[tokio::test]
async fn a_429_waits_for_retry_after_then_succeeds() {
    let started = Instant::now();
    let rate_limited =
        json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}});
    let (standin, result) = anthropic(vec![
        Scripted::status(
            429,
            &[("retry-after", "1"), ("content-type", "application/json")],
            &rate_limited.to_string(),
        ),
        Scripted::Json(200, standin::anthropic_text("Hi.")),
    ])
    .await;
    let reply = result.expect("the second attempt succeeds");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "waited {:?}",
        started.elapsed()
    );
    assert!(reply.elapsed >= Duration::from_secs(1));
    assert_eq!(reply.attempts, 2);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, standin::anthropic_text("Hi."));
    assert_eq!(standin.requests().len(), 2);
    no_wire_failures(&standin);
}

#[tokio::test]
async fn anthropic_requests_carry_the_key_version_and_body() {
    let (standin, result) =
        anthropic(vec![Scripted::Json(200, standin::anthropic_text("Hi."))]).await;
    result.expect("the call succeeds");
    let requests = standin.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(request.header("x-api-key"), Some(KEY));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.body, serde_json::to_vec(&anthropic_body()).unwrap());
    no_wire_failures(&standin);
}

#[tokio::test]
async fn openai_requests_use_a_bearer_key_and_one_v1() {
    let standin = StandIn::start([Scripted::Json(200, standin::openai_text("Hi."))])
        .await
        .unwrap();
    let base = format!("{}/v1/", standin.base_url());
    let body = openai_body();
    let reply = client()
        .call(&call(ProviderFormat::OpenAiChat, &base, &body))
        .await
        .expect("the call succeeds");
    assert_eq!(reply.body, standin::openai_text("Hi."));
    let requests = standin.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(requests[0].header("x-api-key"), None);
    assert_eq!(requests[0].header("anthropic-version"), None);
    assert_eq!(requests[0].json(), openai_body());
    no_wire_failures(&standin);
}

#[tokio::test]
async fn openai_responses_requests_go_to_v1_responses_with_a_bearer_key_and_are_retried() {
    let calls = [("lookup_order", json!({"order": "A1"}))];
    let standin = StandIn::start([
        Scripted::status(500, &[], "internal error"),
        Scripted::Json(200, standin::openai_responses_function_calls(&calls)),
    ])
    .await
    .unwrap();
    let base = standin.base_url();
    let body = openai_responses_body();
    let reply = client()
        .call(&call(ProviderFormat::OpenAiResponses, &base, &body))
        .await
        .expect("the second attempt succeeds");
    assert_eq!(reply.attempts, 2);
    assert_eq!(reply.body, standin::openai_responses_function_calls(&calls));
    let requests = standin.requests();
    assert_eq!(
        requests
            .iter()
            .map(|r| (r.method.as_str(), r.path.as_str()))
            .collect::<Vec<_>>(),
        [("POST", "/v1/responses"), ("POST", "/v1/responses")]
    );
    assert_eq!(
        requests[1].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(requests[1].header("x-api-key"), None);
    assert_eq!(requests[1].header("anthropic-version"), None);
    assert_eq!(requests[1].json(), openai_responses_body());
    no_wire_failures(&standin);
}

#[tokio::test]
async fn a_529_is_retried() {
    let (standin, result) = anthropic(vec![
        Scripted::status(529, &[], &overloaded()),
        Scripted::Json(
            200,
            standin::anthropic_tool_use(&[("lookup_order", json!({"order": "A1"}))]),
        ),
    ])
    .await;
    let reply = result.expect("the second attempt succeeds");
    assert_eq!(reply.attempts, 2);
    assert_eq!(
        reply.body["content"][0]["id"],
        standin::anthropic_call_id(0)
    );
    assert_eq!(standin.requests().len(), 2);
    no_wire_failures(&standin);
}

#[tokio::test]
async fn five_500s_give_the_job_back() {
    let mut script = vec![Scripted::status(500, &[], "internal error"); 5];
    script.push(Scripted::Json(200, standin::anthropic_text("never read")));
    let (standin, result) = anthropic(script).await;
    assert_eq!(
        result,
        Err(ProviderError::Retry {
            after: None,
            status: Some(500),
            message: "the provider answered HTTP 500: internal error (attempt 5 of 5)".to_owned(),
        })
    );
    assert_eq!(standin.requests().len(), 5);
    assert_eq!(standin.remaining(), 1);
    no_wire_failures(&standin);
}

#[tokio::test]
async fn the_last_retry_after_travels_with_the_error() {
    let standin = StandIn::start(vec![Scripted::status(503, &[("retry-after", "0")], ""); 2])
        .await
        .unwrap();
    let base = standin.base_url();
    let body = anthropic_body();
    let result = client()
        .call(&ProviderCall {
            attempts: 2,
            ..call(ProviderFormat::Anthropic, &base, &body)
        })
        .await;
    assert_eq!(
        result,
        Err(ProviderError::Retry {
            after: Some(Duration::ZERO),
            status: Some(503),
            message: "the provider answered HTTP 503 (attempt 2 of 2)".to_owned(),
        })
    );
}

#[tokio::test]
async fn a_retry_after_past_the_cap_ends_the_call() {
    let (standin, result) = anthropic(vec![
        Scripted::status(429, &[("retry-after", "120")], "busy"),
        Scripted::Json(200, standin::anthropic_text("never read")),
    ])
    .await;
    assert_eq!(
        result,
        Err(ProviderError::Retry {
            after: Some(Duration::from_secs(120)),
            status: Some(429),
            message: "the provider answered HTTP 429: busy; the provider asks to wait 2m"
                .to_owned(),
        })
    );
    assert_eq!(standin.requests().len(), 1);
}

#[tokio::test]
async fn a_reset_connection_is_retried() {
    let (standin, result) = anthropic(vec![
        Scripted::Reset,
        Scripted::Json(200, standin::anthropic_text("Hi.")),
    ])
    .await;
    let reply = result.expect("the second attempt succeeds");
    assert_eq!(reply.attempts, 2);
    assert_eq!(standin.requests().len(), 2);
    no_wire_failures(&standin);
}

#[tokio::test]
async fn a_silent_provider_times_out_on_every_attempt() {
    let standin = StandIn::start([Scripted::Silent, Scripted::Silent, Scripted::Silent])
        .await
        .unwrap();
    let base = standin.base_url();
    let body = anthropic_body();
    let started = Instant::now();
    let result = client()
        .call(&ProviderCall {
            timeout: Duration::from_millis(300),
            attempts: 3,
            ..call(ProviderFormat::Anthropic, &base, &body)
        })
        .await;
    let elapsed = started.elapsed();
    assert_eq!(
        result,
        Err(ProviderError::Retry {
            after: None,
            status: None,
            message: "the provider did not answer within 300ms (attempt 3 of 3)".to_owned(),
        })
    );
    assert_eq!(standin.requests().len(), 3);
    assert!(elapsed >= Duration::from_millis(900), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    no_wire_failures(&standin);
}

#[tokio::test]
async fn a_delayed_answer_within_the_timeout_is_taken() {
    let (standin, result) = anthropic(vec![
        Scripted::Json(200, standin::anthropic_text("Hi.")).after(Duration::from_millis(200)),
    ])
    .await;
    let reply = result.expect("the answer arrives in time");
    assert!(reply.elapsed >= Duration::from_millis(200));
    assert_eq!(reply.attempts, 1);
    no_wire_failures(&standin);
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_given_back() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", free.local_addr().unwrap());
    drop(free);
    let body = anthropic_body();
    let result = client()
        .call(&ProviderCall {
            attempts: 2,
            ..call(ProviderFormat::Anthropic, &base, &body)
        })
        .await;
    let Err(ProviderError::Retry {
        after: None,
        status: None,
        message,
    }) = result
    else {
        panic!("not a retry: {result:?}");
    };
    assert!(
        message.starts_with("cannot connect to the provider: "),
        "{message}"
    );
    assert!(message.ends_with(" (attempt 2 of 2)"), "{message}");
}

#[tokio::test]
async fn a_bad_request_fails_at_once_with_the_providers_body() {
    for status in [400, 413, 422] {
        let error = json!({"type": "error", "error": {"type": "invalid_request_error", "message": "messages: at least one message is required"}});
        let (standin, result) = anthropic(vec![
            Scripted::Json(status, error.clone()),
            Scripted::Json(200, standin::anthropic_text("never read")),
        ])
        .await;
        assert_eq!(
            result,
            Err(ProviderError::Poison {
                status,
                body: error.to_string()
            })
        );
        assert_eq!(standin.requests().len(), 1);
        no_wire_failures(&standin);
    }
}

#[tokio::test]
async fn an_error_body_is_kept_up_to_4_kib() {
    let long = "x".repeat(10_000);
    let (_standin, result) = anthropic(vec![Scripted::status(400, &[], &long)]).await;
    assert_eq!(
        result,
        Err(ProviderError::Poison {
            status: 400,
            body: "x".repeat(4096)
        })
    );
}

#[tokio::test]
async fn refused_access_pauses_the_persona() {
    for status in [401, 403, 404] {
        let error = json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}});
        let (standin, result) = anthropic(vec![Scripted::Json(status, error.clone())]).await;
        assert_eq!(
            result,
            Err(ProviderError::Pause {
                status,
                body: error.to_string()
            })
        );
        assert_eq!(standin.requests().len(), 1);
    }
}

#[tokio::test]
async fn a_200_that_is_not_json_is_poison() {
    let (_standin, result) =
        anthropic(vec![Scripted::status(200, &[], "<html>gateway</html>")]).await;
    assert_eq!(
        result,
        Err(ProviderError::Poison {
            status: 200,
            body: "the provider's answer is not JSON (expected value at line 1 column 1): <html>gateway</html>".to_owned(),
        })
    );
}

#[tokio::test]
async fn an_answer_over_the_cap_is_poison() {
    let standin = StandIn::start([Scripted::Json(
        200,
        standin::anthropic_text(&"y".repeat(4000)),
    )])
    .await
    .unwrap();
    let base = standin.base_url();
    let body = anthropic_body();
    let result = client()
        .max_response_bytes(1024)
        .call(&call(ProviderFormat::Anthropic, &base, &body))
        .await;
    assert_eq!(
        result,
        Err(ProviderError::Poison {
            status: 200,
            body: "the provider's answer is over 1024 bytes".to_owned()
        })
    );
    no_wire_failures(&standin);
}

#[tokio::test]
async fn the_key_never_shows() {
    let echo = format!("{{\"error\":\"Incorrect API key provided: {KEY}\"}}");
    let (_standin, paused) = anthropic(vec![Scripted::status(401, &[], &echo)]).await;
    let (_standin, retried) = anthropic(vec![Scripted::status(500, &[], &echo); 5]).await;
    let (_standin, poisoned) = anthropic(vec![Scripted::status(400, &[], &echo)]).await;
    let (_standin, timed_out) = {
        let standin = StandIn::start([Scripted::Silent]).await.unwrap();
        let base = standin.base_url();
        let body = anthropic_body();
        let call = ProviderCall {
            timeout: Duration::from_millis(100),
            attempts: 1,
            ..call(ProviderFormat::Anthropic, &base, &body)
        };
        assert!(!format!("{call:?}").contains(KEY));
        let result = client().call(&call).await;
        (standin, result)
    };
    let bad_key = client()
        .call(&ProviderCall {
            api_key: "sk\nbroken",
            ..call(
                ProviderFormat::Anthropic,
                "http://127.0.0.1:9",
                &anthropic_body(),
            )
        })
        .await;
    assert_eq!(
        bad_key,
        Err(ProviderError::Pause {
            status: 0,
            body: "the API key is not a valid HTTP header value".to_owned()
        })
    );
    let errors = [paused, retried, poisoned, timed_out];
    for error in &errors {
        let error = error.as_ref().expect_err("every call fails");
        assert!(!error.to_string().contains(KEY), "{error}");
        assert!(!format!("{error:?}").contains(KEY), "{error:?}");
        assert!(!format!("{error:#?}").contains(KEY), "{error:#?}");
    }
    assert_eq!(
        errors[0],
        Err(ProviderError::Pause {
            status: 401,
            body: "{\"error\":\"Incorrect API key provided: [redacted]\"}".to_owned(),
        })
    );
    assert!(!format!("{:?}", client()).contains(KEY));
}
