//! One round's request to a model provider (§17 "Providers"): the body §13 builds, sent to
//! Anthropic's Messages API or OpenAI's Chat Completions or Responses API, retried where a
//! retry can help, and sorted into what the job does next when it cannot.
//!
//! | answer | what [`ProviderClient::call`] does |
//! | --- | --- |
//! | 2xx with a JSON body | [`ProviderReply`] |
//! | 408, 409, 429, 529, any 5xx, a reset or refused connection, no answer within the timeout | retried (backoff with full jitter, never sooner than `retry-after`), then [`ProviderError::Retry`] |
//! | 400, 413, 422 and any other 4xx below | [`ProviderError::Poison`] at once |
//! | 401, 403, 404, a redirect | [`ProviderError::Pause`] at once |
//! | 2xx whose body is not JSON or is over the size cap | [`ProviderError::Poison`] |
//!
//! The API key goes into one request header, marked sensitive, and nowhere else: errors,
//! logs and `Debug` never show it, and a provider's error body that echoes it has it
//! replaced by `[redacted]`.

use std::fmt;
use std::time::{Duration, Instant, SystemTime};

use reqwest::header::{CONTENT_TYPE, HeaderValue};
use serde_json::Value;
use tracing::{Instrument, Span, field::Empty};

use crate::retry::{backoff, human, retry_after};

/// The most of a provider's error body kept in an error (4 KiB).
pub const ERROR_BODY_BYTES: usize = 4096;

/// The wire format of a provider's API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderFormat {
    /// Anthropic Messages: `POST /v1/messages`, key in `x-api-key`.
    Anthropic,
    /// OpenAI Chat Completions: `POST /v1/chat/completions`, key as a bearer token.
    OpenAiChat,
    /// OpenAI Responses: `POST /v1/responses`, key as a bearer token.
    OpenAiResponses,
}

impl ProviderFormat {
    /// The provider's name in metrics and in the `gen_ai.system` attribute of traces.
    pub fn system(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::OpenAiChat | Self::OpenAiResponses => "openai",
        }
    }

    /// The endpoint for `base_url`: the API's path after `/v1`, with `/v1` added unless
    /// `base_url` already ends with it (`https://api.anthropic.com` and
    /// `https://api.anthropic.com/v1` both give `https://api.anthropic.com/v1/messages`); a
    /// trailing `/` is ignored.
    pub fn endpoint(self, base_url: &str) -> String {
        let base = base_url.trim_end_matches('/');
        let path = match self {
            Self::Anthropic => "messages",
            Self::OpenAiChat => "chat/completions",
            Self::OpenAiResponses => "responses",
        };
        if base.ends_with("/v1") {
            format!("{base}/{path}")
        } else {
            format!("{base}/v1/{path}")
        }
    }
}

/// One call: where, with which key, what, and how patiently.
#[derive(Clone, Copy)]
pub struct ProviderCall<'a> {
    /// The provider's API.
    pub format: ProviderFormat,
    /// The persona's `[model] base_url` (see [`ProviderFormat::endpoint`]).
    pub base_url: &'a str,
    /// The API key, read from the persona's `api_key_env`.
    pub api_key: &'a str,
    /// The request body, as §13 builds it (its `model` names the span).
    pub body: &'a Value,
    /// The most one attempt may take, answer body included (`[model] timeout`).
    pub timeout: Duration,
    /// Attempts before giving the job back to the queue (`[agent] provider_attempts`,
    /// default 5; 0 counts as 1).
    pub attempts: u32,
}

impl fmt::Debug for ProviderCall<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderCall")
            .field("format", &self.format)
            .field("base_url", &self.base_url)
            .field("api_key", &"[redacted]")
            .field("model", &model_of(self.body))
            .field("timeout", &self.timeout)
            .field("attempts", &self.attempts)
            .finish()
    }
}

/// A provider's successful answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderReply {
    /// The response body (§13 parses it).
    pub body: Value,
    /// The HTTP status (a 2xx).
    pub status: u16,
    /// Attempts made, this one included.
    pub attempts: u32,
    /// Time from the first attempt to this answer, waits included.
    pub elapsed: Duration,
}

/// Why a call gave no reply, sorted by what the job does next. The `Display` is one
/// sentence for the job's `error` column; none of it ever holds the API key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// Worth trying again later: the job goes back to the queue, not before `after` when
    /// the provider said so.
    #[error("{message}")]
    Retry {
        /// How long the provider asked to wait, if it did.
        after: Option<Duration>,
        /// The last HTTP status, if the last attempt had an answer.
        status: Option<u16>,
        /// What went wrong on the last attempt.
        message: String,
    },
    /// The request itself is refused: the job fails with the provider's error body and is
    /// never retried by itself.
    #[error("the provider refused the request with HTTP {status}: {body}")]
    Poison {
        /// The HTTP status.
        status: u16,
        /// The provider's error body (at most 4 KiB), or what was wrong with a 2xx body.
        body: String,
    },
    /// The persona's access is refused (key, permissions, model or URL): its jobs pause.
    #[error("the provider refused the persona's access with HTTP {status}: {body}")]
    Pause {
        /// The HTTP status; 0 when no request could be made (an API key that is not a
        /// valid header value).
        status: u16,
        /// The provider's error body (at most 4 KiB).
        body: String,
    },
}

/// The provider client of a process: one connection pool, reused by every call.
#[derive(Debug, Clone)]
pub struct ProviderClient {
    http: reqwest::Client,
    backoff_base: Duration,
    backoff_cap: Duration,
    max_retry_after: Duration,
    max_response_bytes: usize,
}

/// How one attempt ended short of a reply.
enum Failure {
    /// Another attempt may succeed.
    Transient {
        status: Option<u16>,
        after: Option<Duration>,
        message: String,
    },
    /// No attempt will.
    Final(ProviderError),
}

impl ProviderClient {
    /// A client with its own connection pool ([`http_client`](crate::http_client)) and the
    /// default waits: backoff from 500 ms up to 30 s, `retry-after` honoured up to 60 s,
    /// answers up to 32 MiB.
    pub fn new() -> protege_core::Result<Self> {
        Ok(Self::with_http(crate::http_client()?))
    }

    /// A client over an existing `reqwest` client, with the default waits.
    pub fn with_http(http: reqwest::Client) -> Self {
        Self {
            http,
            backoff_base: Duration::from_millis(500),
            backoff_cap: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
            max_response_bytes: 32 << 20,
        }
    }

    /// Sets the backoff: the wait before attempt `n + 1` is random between zero and
    /// `min(cap, base × 2^(n−1))`.
    pub fn backoff(mut self, base: Duration, cap: Duration) -> Self {
        self.backoff_base = base;
        self.backoff_cap = cap;
        self
    }

    /// Sets the longest `retry-after` waited for within a call; a provider asking for more
    /// ends the call with [`ProviderError::Retry`] carrying its delay.
    pub fn max_retry_after(mut self, max: Duration) -> Self {
        self.max_retry_after = max;
        self
    }

    /// Sets the largest answer read; a larger one is [`ProviderError::Poison`].
    pub fn max_response_bytes(mut self, max: usize) -> Self {
        self.max_response_bytes = max;
        self
    }

    /// Sends one round's request, retrying as the module documents, inside a `gen_ai`
    /// client span (`chat {model}`) that records the status and the provider's usage.
    pub async fn call(&self, call: &ProviderCall<'_>) -> Result<ProviderReply, ProviderError> {
        let model = model_of(call.body);
        let system = call.format.system();
        let name = format!("chat {model}");
        let span = tracing::info_span!(
            "chat",
            otel.name = name.as_str(),
            otel.kind = "client",
            otel.status_code = Empty,
            gen_ai.operation.name = "chat",
            gen_ai.system = system,
            gen_ai.provider.name = system,
            gen_ai.request.model = model,
            gen_ai.response.model = Empty,
            gen_ai.response.id = Empty,
            gen_ai.usage.input_tokens = Empty,
            gen_ai.usage.output_tokens = Empty,
            http.response.status_code = Empty,
            error.type = Empty,
        );
        let result = self.attempts(call).instrument(span.clone()).await;
        match &result {
            Ok(reply) => record_usage(&span, call.format, &reply.body),
            Err(e) => {
                span.record("otel.status_code", "ERROR");
                let kind = match e {
                    ProviderError::Retry { status: None, .. } => "transport".to_owned(),
                    ProviderError::Retry {
                        status: Some(s), ..
                    }
                    | ProviderError::Poison { status: s, .. }
                    | ProviderError::Pause { status: s, .. } => s.to_string(),
                };
                span.record("error.type", kind.as_str());
            }
        }
        result
    }

    /// The attempts of one call.
    async fn attempts(&self, call: &ProviderCall<'_>) -> Result<ProviderReply, ProviderError> {
        let started = Instant::now();
        let url = call.format.endpoint(call.base_url);
        let body = serde_json::to_vec(call.body).map_err(|e| ProviderError::Poison {
            status: 0,
            body: format!("the request body cannot be written as JSON: {e}"),
        })?;
        let attempts = call.attempts.max(1);
        let mut n = 0;
        loop {
            n += 1;
            let (status, after, message) = match self.attempt(call, &url, &body).await {
                Ok((status, body)) => {
                    return Ok(ProviderReply {
                        body,
                        status,
                        attempts: n,
                        elapsed: started.elapsed(),
                    });
                }
                Err(Failure::Final(e)) => return Err(e),
                Err(Failure::Transient {
                    status,
                    after,
                    message,
                }) => (status, after, message),
            };
            let message = redact(message, call.api_key);
            if n == attempts {
                let message = format!("{message} (attempt {n} of {attempts})");
                return Err(ProviderError::Retry {
                    after,
                    status,
                    message,
                });
            }
            if let Some(wait) = after.filter(|wait| *wait > self.max_retry_after) {
                let message = format!("{message}; the provider asks to wait {}", human(wait));
                return Err(ProviderError::Retry {
                    after,
                    status,
                    message,
                });
            }
            let wait =
                backoff(self.backoff_base, self.backoff_cap, n).max(after.unwrap_or_default());
            tracing::warn!(attempt = n, of = attempts, wait = %human(wait), "{message}; retrying");
            tokio::time::sleep(wait).await;
        }
    }

    /// One HTTP exchange, bounded by the call's timeout from connect to the body's end.
    async fn attempt(
        &self,
        call: &ProviderCall<'_>,
        url: &str,
        body: &[u8],
    ) -> Result<(u16, Value), Failure> {
        let system = call.format.system();
        let request = self.request(call, url, body)?;
        let started = Instant::now();
        let exchange = tokio::time::timeout(call.timeout, async {
            let mut response = request.send().await?;
            let status = response.status().as_u16();
            Span::current().record("http.response.status_code", status);
            let after = retry_after(response.headers(), SystemTime::now());
            let limit = if (200..300).contains(&status) {
                self.max_response_bytes
            } else {
                ERROR_BODY_BYTES
            };
            let (bytes, over) = read_limited(&mut response, limit).await?;
            Ok::<_, reqwest::Error>((status, after, bytes, over))
        })
        .await;
        let label = match &exchange {
            Ok(Ok((status, ..))) => status.to_string(),
            _ => "error".to_owned(),
        };
        metrics::counter!("protege_provider_requests_total", "provider" => system, "status" => label).increment(1);
        metrics::histogram!("protege_provider_seconds", "provider" => system)
            .record(started.elapsed().as_secs_f64());
        let (status, after, bytes, over) = match exchange {
            Err(_) => {
                let message = format!("the provider did not answer within {}", human(call.timeout));
                return Err(Failure::Transient {
                    status: None,
                    after: None,
                    message,
                });
            }
            Ok(Err(e)) => {
                let message = if e.is_connect() {
                    format!("cannot connect to the provider: {}", crate::http::chain(&e))
                } else {
                    format!(
                        "the connection to the provider failed: {}",
                        crate::http::chain(&e)
                    )
                };
                return Err(Failure::Transient {
                    status: None,
                    after: None,
                    message,
                });
            }
            Ok(Ok(answer)) => answer,
        };
        self.judge(status, after, &bytes, over, call.api_key)
    }

    /// What an answer means: a reply, another attempt, or the end of the call.
    fn judge(
        &self,
        status: u16,
        after: Option<Duration>,
        bytes: &[u8],
        over: bool,
        api_key: &str,
    ) -> Result<(u16, Value), Failure> {
        let text = || redact(snippet(bytes, ERROR_BODY_BYTES), api_key);
        match status {
            200..=299 if over => Err(Failure::Final(ProviderError::Poison {
                status,
                body: format!(
                    "the provider's answer is over {} bytes",
                    self.max_response_bytes
                ),
            })),
            200..=299 => serde_json::from_slice(bytes)
                .map(|json| (status, json))
                .map_err(|e| {
                    Failure::Final(ProviderError::Poison {
                        status,
                        body: format!("the provider's answer is not JSON ({e}): {}", text()),
                    })
                }),
            408 | 409 | 429 | 500..=599 => {
                let body = text();
                let message = if body.trim().is_empty() {
                    format!("the provider answered HTTP {status}")
                } else {
                    format!("the provider answered HTTP {status}: {body}")
                };
                Err(Failure::Transient {
                    status: Some(status),
                    after,
                    message,
                })
            }
            300..=399 | 401 | 403 | 404 => Err(Failure::Final(ProviderError::Pause {
                status,
                body: text(),
            })),
            _ => Err(Failure::Final(ProviderError::Poison {
                status,
                body: text(),
            })),
        }
    }

    /// The request of one attempt, the key in a header marked sensitive.
    fn request(
        &self,
        call: &ProviderCall<'_>,
        url: &str,
        body: &[u8],
    ) -> Result<reqwest::RequestBuilder, Failure> {
        let (name, value) = match call.format {
            ProviderFormat::Anthropic => ("x-api-key", call.api_key.to_owned()),
            ProviderFormat::OpenAiChat | ProviderFormat::OpenAiResponses => {
                ("authorization", format!("Bearer {}", call.api_key))
            }
        };
        let mut value = HeaderValue::try_from(value).map_err(|_| {
            Failure::Final(ProviderError::Pause {
                status: 0,
                body: "the API key is not a valid HTTP header value".to_owned(),
            })
        })?;
        value.set_sensitive(true);
        let mut request = self
            .http
            .post(url)
            .header(CONTENT_TYPE, "application/json")
            .header(name, value)
            .body(body.to_vec());
        if call.format == ProviderFormat::Anthropic {
            request = request.header("anthropic-version", "2023-06-01");
        }
        Ok(request)
    }
}

/// Reads a body up to `limit` bytes and stops there: `(bytes, true)` when more was coming.
pub(crate) async fn read_limited(
    response: &mut reqwest::Response,
    limit: usize,
) -> reqwest::Result<(Vec<u8>, bool)> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = limit - bytes.len();
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            return Ok((bytes, true));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok((bytes, false))
}

/// At most `limit` bytes of a body as text, cut at a character boundary.
pub(crate) fn snippet(bytes: &[u8], limit: usize) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(limit)]);
    let mut end = text.len().min(limit);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// `text` with every occurrence of `key` replaced by `[redacted]`.
fn redact(text: String, key: &str) -> String {
    if key.is_empty() || !text.contains(key) {
        text
    } else {
        text.replace(key, "[redacted]")
    }
}

/// The `model` of a request body, or "" when it has none.
fn model_of(body: &Value) -> &str {
    body.get("model").and_then(Value::as_str).unwrap_or("")
}

/// Records the response's model, id and token counts on the call's span.
fn record_usage(span: &Span, format: ProviderFormat, body: &Value) {
    let (input, output) = match format {
        ProviderFormat::Anthropic | ProviderFormat::OpenAiResponses => {
            ("input_tokens", "output_tokens")
        }
        ProviderFormat::OpenAiChat => ("prompt_tokens", "completion_tokens"),
    };
    let usage = &body["usage"];
    if let Some(n) = usage[input].as_u64() {
        span.record("gen_ai.usage.input_tokens", n);
    }
    if let Some(n) = usage[output].as_u64() {
        span.record("gen_ai.usage.output_tokens", n);
    }
    if let Some(model) = body["model"].as_str() {
        span.record("gen_ai.response.model", model);
    }
    if let Some(id) = body["id"].as_str() {
        span.record("gen_ai.response.id", id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_add_v1_once() {
        let a = ProviderFormat::Anthropic;
        let o = ProviderFormat::OpenAiChat;
        let r = ProviderFormat::OpenAiResponses;
        assert_eq!(
            a.endpoint("https://api.anthropic.com"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            a.endpoint("https://api.anthropic.com/"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            a.endpoint("https://api.anthropic.com/v1"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            o.endpoint("https://api.openai.com/v1/"),
            "https://api.openai.com/v1/chat/completions"
        );
        assert_eq!(
            o.endpoint("http://127.0.0.1:8080/proxy"),
            "http://127.0.0.1:8080/proxy/v1/chat/completions"
        );
        assert_eq!(
            r.endpoint("https://api.openai.com"),
            "https://api.openai.com/v1/responses"
        );
        assert_eq!(
            r.endpoint("https://api.openai.com/v1/"),
            "https://api.openai.com/v1/responses"
        );
        assert_eq!(
            r.endpoint("http://127.0.0.1:8080/proxy"),
            "http://127.0.0.1:8080/proxy/v1/responses"
        );
    }

    #[test]
    fn snippets_cut_at_characters() {
        assert_eq!(snippet("héllo".as_bytes(), 2), "h");
        assert_eq!(snippet(b"hello", 10), "hello");
        assert_eq!(snippet(&[b'a', 0xff, b'b'], 3), "a");
    }

    #[test]
    fn keys_are_redacted() {
        assert_eq!(
            redact("bad key sk-1 given".into(), "sk-1"),
            "bad key [redacted] given"
        );
        assert_eq!(redact("nothing".into(), ""), "nothing");
    }
}
