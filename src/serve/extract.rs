//! The bodies of the routes, extracted with the service's own rejection ([`ApiError`]): the
//! content type checked, the size capped, the JSON parsed into the route's type.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, StatusCode, header};
use serde::de::DeserializeOwned;

use super::error::ApiError;

/// A JSON body of a route, and what it is called in errors.
pub(super) trait JsonBody: DeserializeOwned {
    /// `resolve` in "invalid resolve body: …".
    const WHAT: &'static str;
}

/// The body of a JSON route, parsed.
pub(super) struct Json<T>(pub(super) T);

impl<S: Send + Sync, T: JsonBody> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Raw::<JsonMedia>::from_request(request, state).await?.0;
        serde_json::from_slice(&bytes)
            .map(Json)
            .map_err(|e| ApiError::bad_request(format!("invalid {} body: {e}", T::WHAT)))
    }
}

/// The content type a [`Raw`] body must declare.
pub(super) trait Kind {
    /// The media type, compared case-insensitively without its parameters.
    const MEDIA_TYPE: &'static str;
    /// Whether a request without `Content-Type` is refused.
    const REQUIRED: bool;
}

/// `application/json`, optional.
pub(super) struct JsonMedia;

impl Kind for JsonMedia {
    const MEDIA_TYPE: &'static str = "application/json";
    const REQUIRED: bool = false;
}

/// `message/rfc822`, required.
pub(super) struct Rfc822;

impl Kind for Rfc822 {
    const MEDIA_TYPE: &'static str = "message/rfc822";
    const REQUIRED: bool = true;
}

/// The bytes of a body of kind `K`, under the route's `DefaultBodyLimit`.
pub(super) struct Raw<K>(pub(super) Bytes, pub(super) std::marker::PhantomData<K>);

impl<S: Send + Sync, K: Kind> FromRequest<S> for Raw<K> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        check_type(request.headers(), K::MEDIA_TYPE, K::REQUIRED)?;
        let limit = request.extensions().get::<Limit>().map_or(0, |l| l.0);
        match Bytes::from_request(request, state).await {
            Ok(bytes) => Ok(Raw(bytes, std::marker::PhantomData)),
            Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                Err(ApiError::payload_too_large(limit))
            }
            Err(rejection) => Err(ApiError::bad_request(rejection.body_text())),
        }
    }
}

/// The body limit of the route, put in the request's extensions by the route's layer so
/// the 413 after reading says the same number as the one before.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limit(pub(super) usize);

/// `415` when the body's declared type is not `expected` (or, when `required`, missing).
fn check_type(headers: &HeaderMap, expected: &str, required: bool) -> Result<(), ApiError> {
    let Some(given) = headers.get(header::CONTENT_TYPE) else {
        return if required {
            Err(ApiError::unsupported_media_type(expected))
        } else {
            Ok(())
        };
    };
    let essence = given
        .to_str()
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim();
    if essence.eq_ignore_ascii_case(expected) {
        Ok(())
    } else {
        Err(ApiError::unsupported_media_type(expected))
    }
}
