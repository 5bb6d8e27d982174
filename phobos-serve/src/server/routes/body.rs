//! The JSON body extractor every POST route uses: size limit (413), read
//! timeout for slow clients (408), truncated bodies (400), and OpenAI-shaped
//! errors for all of them.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, FailedToBufferBody};
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde_json::{Map, Value};

use crate::server::error::ApiError;
use crate::server::params::Fields;
use crate::server::state::AppState;

pub struct JsonBody(pub Map<String, Value>);

impl FromRequest<Arc<AppState>> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &Arc<AppState>) -> Result<Self, ApiError> {
        let limit = state.max_body_bytes;
        // A declared length over the limit is refused before any of the
        // body is waited for (else the client would wait out the timeout).
        let declared_bytes = request
            .headers()
            .get(axum::http::header::CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<u64>().ok());
        if declared_bytes.is_some_and(|bytes| bytes > limit as u64) {
            return Err(too_large(limit));
        }
        let read = tokio::time::timeout(state.read_timeout, Bytes::from_request(request, state));
        let bytes = match read.await {
            Err(_) => {
                return Err(ApiError::new(
                    StatusCode::REQUEST_TIMEOUT,
                    "request_timeout",
                    format!(
                        "the request body did not arrive within {} s",
                        state.read_timeout.as_secs_f32()
                    ),
                ));
            }
            Ok(Ok(bytes)) => bytes,
            Ok(Err(BytesRejection::FailedToBufferBody(FailedToBufferBody::LengthLimitError(
                _,
            )))) => return Err(too_large(limit)),
            Ok(Err(rejection)) => {
                return Err(ApiError::bad_request(format!(
                    "the request body could not be read: {rejection}"
                )));
            }
        };
        Fields::parse_body(&bytes).map(JsonBody)
    }
}

fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "request_too_large",
        format!("the request body is over the server's limit of {limit} bytes"),
    )
}
