//! The JSON errors of the HTTP service: `{"error":{"kind":KIND,"message":TEXT}}`.

use crate::{EngineError, EngineErrorKind};
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An error answer: its status, kind and sentence.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    kind: &'static str,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            kind,
            message: message.into(),
        }
    }

    /// 400: the body is malformed.
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// 401: no or a wrong bearer token.
    pub(crate) fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "this route needs `Authorization: Bearer <token>` with the token the service was started with",
        )
    }

    /// 404: an unknown route, persona, message or responsibility.
    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 404: no route has this path; the guide's reference lists the routes.
    pub(crate) fn no_such_route() -> Self {
        Self::not_found("no such route; see the routes in docs/src/reference.md")
    }

    /// 405: a known route with another method.
    pub(crate) fn method_not_allowed() -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "this route does not take this method; see the routes in docs/src/reference.md",
        )
    }

    /// 409: the body clashes with what is stored (a Message-ID stored for another message).
    pub(crate) fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", message)
    }

    /// 413: the body is over the route's limit.
    pub(crate) fn payload_too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("the body is over this route's limit of {limit} bytes"),
        )
    }

    /// 413: what the body holds is over its cap (a summary over 1 MiB).
    pub(crate) fn too_large(message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", message)
    }

    /// 415: the body's content type is not the route's.
    pub(crate) fn unsupported_media_type(expected: &str) -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            format!("this route takes `Content-Type: {expected}`"),
        )
    }

    /// 422: well-formed but cannot be done.
    pub(crate) fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_input", message)
    }

    /// 503: the database is down, or nothing is ready yet.
    pub(crate) fn unavailable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message)
    }

    /// 504: over the per-request deadline.
    pub(crate) fn timeout(seconds: f64) -> Self {
        Self::new(
            StatusCode::GATEWAY_TIMEOUT,
            "timeout",
            format!("the request took longer than the deadline of {seconds} s"),
        )
    }

    /// 500: a bug.
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        let message = e.to_string();
        match e.kind() {
            EngineErrorKind::BadRequest => Self::bad_request(message),
            EngineErrorKind::NotFound => Self::not_found(message),
            EngineErrorKind::Unavailable => Self::unavailable(message),
            EngineErrorKind::InvalidInput => Self::invalid_input(message),
            EngineErrorKind::Conflict => Self::conflict(message),
            EngineErrorKind::TooLarge => Self::too_large(message),
            _ => Self::internal(message),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({ "error": { "kind": self.kind, "message": self.message } });
        (self.status, Json(body)).into_response()
    }
}
