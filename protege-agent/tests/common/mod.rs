//! What the provider tests share: the client with short waits, request bodies, calls.

#![allow(dead_code)] // each test file uses a part

use std::time::Duration;

use protege_agent::standin::{Scripted, StandIn};
use protege_agent::{ProviderCall, ProviderClient, ProviderError, ProviderFormat, ProviderReply};
use serde_json::{Value, json};

/// The API key of every call: it must never show in an error.
pub(crate) const KEY: &str = "sk-ant-api03-NEVER-SHOW-ME-0123456789";

/// The client with short waits: backoff up to 50 ms.
pub(crate) fn client() -> ProviderClient {
    ProviderClient::new()
        .expect("the HTTP client builds")
        .backoff(Duration::from_millis(10), Duration::from_millis(50))
}

/// A valid Anthropic Messages request.
pub(crate) fn anthropic_body() -> Value {
    json!({"model": "claude-sonnet-4-5", "max_tokens": 256, "system": "You are terse.", "messages": [{"role": "user", "content": "Say hi."}]})
}

/// A valid OpenAI Chat Completions request.
pub(crate) fn openai_body() -> Value {
    json!({"model": "gpt-4o", "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say hi."}]})
}

/// A valid OpenAI Responses request of a reasoning model, stateless.
pub(crate) fn openai_responses_body() -> Value {
    json!({"model": "gpt-5", "instructions": "You are terse.", "input": [{"type": "message", "role": "user", "content": "Say hi."}], "store": false, "include": ["reasoning.encrypted_content"]})
}

/// A call with the test key, a 5 s timeout and 5 attempts.
pub(crate) fn call<'a>(
    format: ProviderFormat,
    base_url: &'a str,
    body: &'a Value,
) -> ProviderCall<'a> {
    ProviderCall {
        format,
        base_url,
        api_key: KEY,
        body,
        timeout: Duration::from_secs(5),
        attempts: 5,
    }
}

/// A stand-in answering `script`, and the result of one Anthropic call to it.
pub(crate) async fn anthropic(
    script: Vec<Scripted>,
) -> (StandIn, Result<ProviderReply, ProviderError>) {
    let standin = StandIn::start(script).await.expect("the stand-in starts");
    let base = standin.base_url();
    let body = anthropic_body();
    let result = client()
        .call(&call(ProviderFormat::Anthropic, &base, &body))
        .await;
    (standin, result)
}

/// Asserts that wirecheck (when `PROTEGE_WIRECHECK` is set) refused nothing.
pub(crate) fn no_wire_failures(standin: &StandIn) {
    assert_eq!(standin.wire_failures(), Vec::<String>::new());
}

/// Anthropic's 529 body.
pub(crate) fn overloaded() -> String {
    json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
        .to_string()
}
