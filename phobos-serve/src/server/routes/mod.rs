//! The router: OpenAI's routes under /v1 (and llama-server's unprefixed
//! aliases), the API-key check, request accounting, and OpenAI-shaped
//! answers for unknown paths and wrong methods.

mod body;
mod chat;
mod completions;
mod misc;
mod respond;
mod responses;
mod tool_choice;

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use super::error::ApiError;
use super::metrics::RecentRequest;
use super::state::AppState;

pub fn router(state: Arc<AppState>) -> Router {
    let protected = Router::new()
        .route("/v1/chat/completions", post(chat::chat_completions))
        .route("/chat/completions", post(chat::chat_completions))
        .route("/v1/completions", post(completions::completions))
        .route("/completions", post(completions::completions))
        .route("/v1/responses", post(responses::responses))
        .route("/responses", post(responses::responses))
        .route("/v1/models", get(misc::models))
        .route("/models", get(misc::models))
        .route("/v1/models/{id}", get(misc::model))
        .route("/models/{id}", get(misc::model))
        .route("/tokenize", post(misc::tokenize))
        .route("/detokenize", post(misc::detokenize))
        .route("/apply-template", post(misc::apply_template))
        .route("/metrics", get(misc::metrics))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_key));
    Router::new()
        .route("/", get(misc::chat_page))
        .route("/health", get(misc::health))
        .route("/v1/health", get(misc::health))
        .merge(protected)
        .fallback(not_found)
        .method_not_allowed_fallback(wrong_method)
        .layer(DefaultBodyLimit::max(state.max_body_bytes))
        .layer(middleware::from_fn_with_state(state.clone(), account))
        .with_state(state)
}

async fn not_found(request: Request) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        format!(
            "no route {} {}; the API is under /v1 (chat/completions, completions, responses, models)",
            request.method(),
            request.uri().path()
        ),
    )
}

async fn wrong_method(request: Request) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "{} is not allowed on {}",
            request.method(),
            request.uri().path()
        ),
    )
}

/// The credentials of an `Authorization: Bearer KEY` value; the scheme's
/// name is case-insensitive (RFC 9110), the spaces around the key do not
/// count.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

/// `Authorization: Bearer KEY` when the server has a key.
async fn require_key(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    if let Some(key) = &state.api_key {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer_token);
        if !given.is_some_and(|given| constant_time_eq(given.as_bytes(), key.as_bytes())) {
            return ApiError::new(
                StatusCode::UNAUTHORIZED,
                "invalid_api_key",
                "missing or wrong API key: send 'Authorization: Bearer KEY' with the server's --api-key",
            )
            .into_response();
        }
    }
    next.run(request).await
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Counts every answer by status and keeps the latest for the dashboard.
async fn account(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let path = request.uri().path().to_owned();
    let started = Instant::now();
    let response = next.run(request).await;
    let latency_ms = started.elapsed().as_millis() as u64;
    let status = response.status().as_u16();
    tracing::info!(path, status, latency_ms, "request");
    state.metrics.record_request(RecentRequest {
        path,
        status,
        latency_ms,
    });
    response
}

/// Runs `work` (rendering a template, tokenizing a prompt: up to seconds
/// for a body near the size limit) on tokio's blocking pool, so the
/// runtime's few worker threads keep answering other requests (`/health`
/// waited 26 s behind three 8 MB prompts when it ran on them).
pub(crate) async fn off_runtime<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|error| {
            Err(ApiError::new(
                axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                format!("preparing the prompt failed: {error}"),
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::bearer_token;

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        for value in ["Bearer k1", "bearer k1", "BEARER  k1 ", " Bearer k1"] {
            assert_eq!(bearer_token(value), Some("k1"), "{value:?}");
        }
        assert_eq!(bearer_token("Basic k1"), None);
        assert_eq!(bearer_token("Bearerk1"), None);
        assert_eq!(bearer_token("k1"), None);
    }
}
