//! The inspector page: three static files shipped inside the binary, served without the
//! token (they carry no data) under a strict content security policy. The page's script
//! asks `/v1/*` with the token the user types into the page, and inserts what it receives
//! as text, never as markup.

use axum::http::{HeaderName, HeaderValue, header};
use axum::response::{IntoResponse, Response};

const PAGE: &str = include_str!("ui/index.html");
const SCRIPT: &str = include_str!("ui/app.js");
const STYLE: &str = include_str!("ui/app.css");

/// The policy of the three files: everything from the service itself, no inline script or
/// style, no plugin, no frame, no form posted elsewhere.
const POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; \
     object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

pub(super) async fn page() -> Response {
    file("text/html; charset=utf-8", PAGE)
}

pub(super) async fn script() -> Response {
    file("text/javascript; charset=utf-8", SCRIPT)
}

pub(super) async fn style() -> Response {
    file("text/css; charset=utf-8", STYLE)
}

/// `body` as `content_type`, with the security headers and never cached.
fn file(content_type: &'static str, body: &'static str) -> Response {
    let headers: [(HeaderName, HeaderValue); 6] = [
        (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(POLICY),
        ),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
    ];
    (headers, body).into_response()
}
