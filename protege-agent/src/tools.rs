//! The model's `http` tools (§17 "Tools"): one signed `POST` per call, whose answer, failure
//! included, becomes the tool result the model reads, never an error of the run.
//!
//! The request carries the input as compact JSON and these headers:
//!
//! | header | value |
//! | --- | --- |
//! | `X-Protege-Run` | the run's id |
//! | `X-Protege-Tool-Call` | the call id: the same on every attempt, the tool's idempotency key |
//! | `X-Protege-Persona` | the persona's name |
//! | `X-Protege-Correspondent` | the trigger's bare From address; empty in a scheduled run |
//! | `X-Protege-Authenticated` | `true` or `false`: whether the sender was authenticated (§9) |
//! | `X-Protege-Timestamp` | Unix seconds when the call was made |
//! | `X-Protege-Signature` | with a secret: `v1=` and the lowercase hex HMAC-SHA256 of `{timestamp}.{run}.{call}.{persona}.{correspondent}.{authenticated}.{body}` |
//!
//! A tool verifies a call with [`verify`] (or [`verify_headers`]), which refuses a timestamp
//! more than five minutes from its own clock.

use std::fmt;
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use sha2::Sha256;
use tracing::Instrument;

use crate::provider::{read_limited, snippet};
use crate::retry::human;

/// The default cap of a tool's answer: `[limits] tool_result_bytes` (1 MiB).
pub const DEFAULT_RESULT_LIMIT: usize = 1 << 20;

/// How far a signed timestamp may be from the verifier's clock (five minutes).
pub const SIGNATURE_TOLERANCE: Duration = Duration::from_secs(300);

/// The most of an error answer's body quoted in the result (1 KiB).
const ERROR_BODY_BYTES: usize = 1024;

/// One call of an `http` tool.
#[derive(Clone, Copy)]
pub struct HttpCall<'a> {
    /// The tool's name, as the model calls it.
    pub name: &'a str,
    /// The tool's `http.url`.
    pub url: &'a str,
    /// The tool's secret (`secret_env`), if it has one: the call is then signed.
    pub secret: Option<&'a str>,
    /// The most the call may take, answer included (`http.timeout`).
    pub timeout: Duration,
    /// The run's id.
    pub run_id: &'a str,
    /// The model's call id.
    pub call_id: &'a str,
    /// The persona's name.
    pub persona: &'a str,
    /// The trigger's bare From address; empty in a scheduled run.
    pub correspondent: &'a str,
    /// Whether the trigger's sender was authenticated (§9).
    pub authenticated: bool,
    /// The model's input, already checked against the tool's schema ([`check_input`]).
    pub input: &'a Value,
    /// The time of the call, Unix seconds.
    pub now: i64,
    /// The largest answer taken as a result ([`DEFAULT_RESULT_LIMIT`] by default).
    pub limit: usize,
}

impl fmt::Debug for HttpCall<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpCall")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("secret", &self.secret.map(|_| "[redacted]"))
            .field("timeout", &self.timeout)
            .field("run_id", &self.run_id)
            .field("call_id", &self.call_id)
            .field("persona", &self.persona)
            .field("correspondent", &self.correspondent)
            .field("authenticated", &self.authenticated)
            .field("input", &self.input)
            .field("now", &self.now)
            .field("limit", &self.limit)
            .finish()
    }
}

/// A tool's result as the model reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutcome {
    /// The answer's text, or a sentence saying what went wrong.
    pub content: String,
    /// Whether the call failed (sent as the result's `is_error`).
    pub is_error: bool,
}

impl ToolOutcome {
    /// A failed call's result.
    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
        }
    }
}

/// What a signature covers, besides the secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signed<'a> {
    /// `X-Protege-Timestamp`: Unix seconds.
    pub timestamp: i64,
    /// `X-Protege-Run`.
    pub run: &'a str,
    /// `X-Protege-Tool-Call`.
    pub call_id: &'a str,
    /// `X-Protege-Persona`.
    pub persona: &'a str,
    /// `X-Protege-Correspondent`.
    pub correspondent: &'a str,
    /// `X-Protege-Authenticated`.
    pub authenticated: bool,
    /// The request body, as sent.
    pub body: &'a [u8],
}

/// Why [`verify`] refused a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The signature header is missing or is not `v1=` and 64 hex digits.
    #[error("the signature is missing or malformed")]
    Malformed,
    /// The timestamp is more than five minutes from the verifier's clock.
    #[error("the timestamp is more than five minutes away")]
    Stale,
    /// The signature does not match the secret and the signed fields.
    #[error("the signature does not match")]
    Mismatch,
}

/// The `X-Protege-Signature` value of a call: `v1=` and the lowercase hex HMAC-SHA256,
/// keyed with `secret`, of `{timestamp}.{run}.{call}.{persona}.{correspondent}.{authenticated}.{body}`.
pub fn signature(secret: &str, signed: &Signed<'_>) -> String {
    let digest = mac(secret, signed).finalize().into_bytes();
    let mut out = String::with_capacity(3 + 2 * digest.len());
    out.push_str("v1=");
    for byte in digest {
        out.push(char::from_digit(u32::from(byte >> 4), 16).unwrap_or('0'));
        out.push(char::from_digit(u32::from(byte & 0xf), 16).unwrap_or('0'));
    }
    out
}

/// Checks a call's `X-Protege-Signature` value against the signed fields, in constant
/// time, refusing a timestamp more than [`SIGNATURE_TOLERANCE`] away from `now` (Unix
/// seconds).
pub fn verify(
    secret: &str,
    signed: &Signed<'_>,
    header: &str,
    now: i64,
) -> Result<(), SignatureError> {
    let hex = header
        .trim()
        .strip_prefix("v1=")
        .ok_or(SignatureError::Malformed)?;
    let given = decode_hex(hex).ok_or(SignatureError::Malformed)?;
    if now.abs_diff(signed.timestamp) > SIGNATURE_TOLERANCE.as_secs() {
        return Err(SignatureError::Stale);
    }
    mac(secret, signed)
        .verify_slice(&given)
        .map_err(|_| SignatureError::Mismatch)
}

/// [`verify`] over a received request's headers and body.
pub fn verify_headers(
    secret: &str,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<(), SignatureError> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| std::str::from_utf8(v.as_bytes()).ok())
    };
    let timestamp = text("x-protege-timestamp")
        .and_then(|t| t.parse().ok())
        .ok_or(SignatureError::Malformed)?;
    let authenticated = match text("x-protege-authenticated") {
        Some("true") => true,
        Some("false") => false,
        _ => return Err(SignatureError::Malformed),
    };
    let signed = Signed {
        timestamp,
        run: text("x-protege-run").ok_or(SignatureError::Malformed)?,
        call_id: text("x-protege-tool-call").ok_or(SignatureError::Malformed)?,
        persona: text("x-protege-persona").ok_or(SignatureError::Malformed)?,
        correspondent: text("x-protege-correspondent").unwrap_or(""),
        authenticated,
        body,
    };
    verify(
        secret,
        &signed,
        text("x-protege-signature").ok_or(SignatureError::Malformed)?,
        now,
    )
}

/// The HMAC of the signed fields, joined by `.`.
fn mac(secret: &str, s: &Signed<'_>) -> Hmac<Sha256> {
    // HMAC takes a key of any length.
    let mut mac =
        <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).unwrap_or_else(|_| unreachable!());
    let authenticated = if s.authenticated { "true" } else { "false" };
    let timestamp = s.timestamp.to_string();
    for part in [
        timestamp.as_str(),
        s.run,
        s.call_id,
        s.persona,
        s.correspondent,
        authenticated,
    ] {
        mac.update(part.as_bytes());
        mac.update(b".");
    }
    mac.update(s.body);
    mac
}

/// 64 hex digits as 32 bytes.
fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
        .collect()
}

/// Calls an `http` tool and turns whatever happens into its result: a 2xx body is the
/// result's text (invalid UTF-8 replaced); another status, no answer within the timeout,
/// a connection that fails or an answer over `limit` bytes is an error result saying so.
pub async fn call_http(client: &reqwest::Client, tool: &HttpCall<'_>) -> ToolOutcome {
    let span = tracing::info_span!(
        "execute_tool",
        otel.name = format!("execute_tool {}", tool.name).as_str(),
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool.name,
        gen_ai.tool.call.id = tool.call_id,
        http.response.status_code = tracing::field::Empty,
    );
    let started = Instant::now();
    let (outcome, label) = exchange(client, tool).instrument(span).await;
    metrics::counter!("protege_tool_calls_total", "tool" => tool.name.to_owned(), "outcome" => label).increment(1);
    tracing::debug!(
        tool = tool.name,
        outcome = label,
        seconds = started.elapsed().as_secs_f64(),
        "tool call"
    );
    outcome
}

/// The HTTP exchange of one call, and the outcome's metric label.
async fn exchange(client: &reqwest::Client, tool: &HttpCall<'_>) -> (ToolOutcome, &'static str) {
    let name = tool.name;
    let body = serde_json::to_vec(tool.input).unwrap_or_default();
    let headers = match headers(tool, &body) {
        Ok(headers) => headers,
        Err(header) => {
            let text = format!(
                "tool `{name}` was not called: the value of `{header}` is not a valid HTTP header value"
            );
            return (ToolOutcome::error(text), "error");
        }
    };
    let request = client.post(tool.url).headers(headers).body(body);
    let limit = tool.limit;
    let answer = tokio::time::timeout(tool.timeout, async {
        let mut response = request.send().await?;
        let status = response.status().as_u16();
        tracing::Span::current().record("http.response.status_code", status);
        let cap = if (200..300).contains(&status) {
            limit
        } else {
            ERROR_BODY_BYTES
        };
        let (bytes, over) = read_limited(&mut response, cap).await?;
        Ok::<_, reqwest::Error>((status, bytes, over))
    })
    .await;
    match answer {
        Err(_) => {
            let text = format!(
                "tool `{name}` did not answer within {}",
                human(tool.timeout)
            );
            (ToolOutcome::error(text), "timeout")
        }
        Ok(Err(e)) if e.is_connect() => {
            let text = format!(
                "tool `{name}` could not be reached: {}",
                crate::http::chain(&e)
            );
            (ToolOutcome::error(text), "unreachable")
        }
        Ok(Err(e)) => {
            let text = format!(
                "the call of tool `{name}` failed: {}",
                crate::http::chain(&e)
            );
            (ToolOutcome::error(text), "error")
        }
        Ok(Ok((status, _, true))) if (200..300).contains(&status) => (
            ToolOutcome::error(format!("tool `{name}` answered more than {limit} bytes")),
            "too_large",
        ),
        Ok(Ok((status, bytes, _))) if (200..300).contains(&status) => {
            let content = String::from_utf8(bytes)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
            (
                ToolOutcome {
                    content,
                    is_error: false,
                },
                "ok",
            )
        }
        Ok(Ok((status, bytes, _))) => {
            let body = snippet(&bytes, ERROR_BODY_BYTES);
            let text = if body.trim().is_empty() {
                format!("tool `{name}` answered HTTP {status}")
            } else {
                format!("tool `{name}` answered HTTP {status}: {body}")
            };
            (ToolOutcome::error(text), "error")
        }
    }
}

/// The request's headers; the name of a header whose value cannot be sent, when one can't.
fn headers(tool: &HttpCall<'_>, body: &[u8]) -> Result<HeaderMap, &'static str> {
    let mut headers = HeaderMap::new();
    let mut put = |name: &'static str, value: &str| {
        let value = HeaderValue::from_bytes(value.as_bytes()).map_err(|_| name)?;
        headers.insert(HeaderName::from_static(name), value);
        Ok::<(), &'static str>(())
    };
    let timestamp = tool.now.to_string();
    let authenticated = if tool.authenticated { "true" } else { "false" };
    put("x-protege-run", tool.run_id)?;
    put("x-protege-tool-call", tool.call_id)?;
    put("x-protege-persona", tool.persona)?;
    put("x-protege-correspondent", tool.correspondent)?;
    put("x-protege-authenticated", authenticated)?;
    put("x-protege-timestamp", &timestamp)?;
    if let Some(secret) = tool.secret {
        let signed = Signed {
            timestamp: tool.now,
            run: tool.run_id,
            call_id: tool.call_id,
            persona: tool.persona,
            correspondent: tool.correspondent,
            authenticated: tool.authenticated,
            body,
        };
        let mut value = HeaderValue::from_str(&signature(secret, &signed))
            .map_err(|_| "x-protege-signature")?;
        value.set_sensitive(true);
        headers.insert(HeaderName::from_static("x-protege-signature"), value);
    }
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(headers)
}

/// Checks a tool call's input against the tool's JSON Schema: `Err` lists each problem
/// with the JSON path it is at (`$.order: 5 is not of type "string"`), so the model can
/// mend its call. An input that fails is answered with an error result, not a call.
pub fn check_input(schema: &Value, input: &Value) -> Result<(), String> {
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("the tool's input schema is invalid: {e}"))?;
    let problems: Vec<String> = validator
        .iter_errors(input)
        .map(|e| format!("{}: {e}", json_path(input, e.instance_path().as_str())))
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// A JSON pointer into `value` written as a JSON path: `/items/0/name` is `$.items[0].name`.
fn json_path(value: &Value, pointer: &str) -> String {
    let mut path = String::from("$");
    let mut at = Some(value);
    for raw in pointer.split('/').skip(1) {
        let segment = raw.replace("~1", "/").replace("~0", "~");
        let index = segment
            .parse::<usize>()
            .ok()
            .filter(|_| matches!(at, Some(Value::Array(_))));
        match index {
            Some(i) => {
                path.push_str(&format!("[{i}]"));
                at = at.and_then(|v| v.get(i));
            }
            None => {
                let plain = segment
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && segment
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_');
                if plain {
                    path.push('.');
                    path.push_str(&segment);
                } else {
                    path.push_str(&format!("[{}]", Value::from(segment.as_str())));
                }
                at = at.and_then(|v| v.get(segment.as_str()));
            }
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_paths_follow_the_value() {
        let value = serde_json::json!({"items": [{"name": 1}], "a b": {"0": 2}});
        assert_eq!(json_path(&value, ""), "$");
        assert_eq!(json_path(&value, "/items/0/name"), "$.items[0].name");
        assert_eq!(json_path(&value, "/a b/0"), "$[\"a b\"][\"0\"]");
        assert_eq!(json_path(&value, "/x~1y"), "$[\"x/y\"]");
    }

    #[test]
    fn signatures_are_hex_hmacs() {
        let signed = Signed {
            timestamp: 1_700_000_000,
            run: "run_1",
            call_id: "toolu_1",
            persona: "support",
            correspondent: "ada@example.com",
            authenticated: true,
            body: br#"{"order":"A1"}"#,
        };
        let sig = signature("s3cret", &signed);
        assert_eq!(sig.len(), 67);
        assert!(sig.starts_with("v1="));
        assert_eq!(verify("s3cret", &signed, &sig, 1_700_000_000 + 299), Ok(()));
        assert_eq!(verify("s3cret", &signed, &sig, 1_700_000_000 - 299), Ok(()));
        assert_eq!(
            verify("s3cret", &signed, &sig, 1_700_000_000 + 301),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            verify("other", &signed, &sig, 1_700_000_000),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify("s3cret", &signed, "v1=abc", 1_700_000_000),
            Err(SignatureError::Malformed)
        );
        let changed = Signed {
            authenticated: false,
            ..signed
        };
        assert_eq!(
            verify("s3cret", &changed, &sig, 1_700_000_000),
            Err(SignatureError::Mismatch)
        );
    }
}
