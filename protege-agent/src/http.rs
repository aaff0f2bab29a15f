//! The HTTP client of the agent's outgoing calls (providers and `http` tools): rustls over
//! ring, the crypto provider the SMTP connection already uses, with the operating system's
//! certificate verifier, and no redirects (a redirected `POST` is a misconfigured URL, not
//! something to follow).

use std::sync::Arc;
use std::time::Duration;

use protege_core::{Error, ErrorKind, Result};
use rustls_platform_verifier::BuilderVerifierExt;

/// How long an idle pooled connection is kept.
const IDLE: Duration = Duration::from_secs(60);

/// Makes ring the process's default rustls crypto provider, unless one is installed already.
///
/// `reqwest` is built without a crypto provider of its own (ring is the one lettre uses
/// too), so a `reqwest::Client` built by other code of the same program (an OTLP exporter,
/// a test's `reqwest::Client::new()`) panics unless a default provider is installed first:
/// a program calls this once at its start. [`http_client`] calls it too.
pub fn install_crypto_provider() {
    // `Err` means a provider is installed already, which is all this asks for.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A new HTTP client for providers and tools; build one per process and clone it (clones
/// share the connection pool).
///
/// Fails only when the TLS configuration cannot be built.
pub fn http_client() -> Result<reqwest::Client> {
    install_crypto_provider();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|builder| builder.with_platform_verifier())
        .map_err(|e| Error::new(ErrorKind::Io, format!("cannot set up TLS: {e}")))?
        .with_no_client_auth();
    // The client speaks HTTP/1.1 only (as reqwest's own TLS set-up does without `http2`).
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("protege/", env!("CARGO_PKG_VERSION")))
        .pool_idle_timeout(IDLE)
        .build()
        .map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("cannot set up the HTTP client: {}", chain(&e)),
            )
        })
}

/// An error and its causes in one line, `outer: inner: innermost`, each said once (the URL
/// left out: the caller names what it was calling).
pub(crate) fn chain(error: &reqwest::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = next {
        let text = match e.downcast_ref::<reqwest::Error>() {
            Some(_) if parts.is_empty() => top_line(error),
            _ => e.to_string(),
        };
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = e.source();
    }
    parts.join(": ")
}

/// The first line of a `reqwest` error without its URL.
fn top_line(error: &reqwest::Error) -> String {
    let text = error.to_string();
    match text.find(" for url (") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}
