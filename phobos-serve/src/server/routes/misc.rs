//! The small routes: models, health, metrics, llama-server's tokenize /
//! detokenize / apply-template, and the chat page.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use serde_json::{Value, json};

use super::body::JsonBody;
use super::chat::render_chat;
use crate::server::backend::ModelInfo;
use crate::server::error::ApiError;
use crate::server::generate::unix_now;
use crate::server::params::{Fields, token_ids};
use crate::server::state::AppState;

const CHAT_PAGE: &str = include_str!("../page/index.html");

pub async fn chat_page() -> Html<&'static str> {
    Html(CHAT_PAGE)
}

pub async fn health(State(state): State<Arc<AppState>>) -> Response {
    match state.loaded.get() {
        Some(_) => (StatusCode::OK, axum::Json(json!({"status": "ok"}))).into_response(),
        None => ApiError::loading().into_response(),
    }
}

pub async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics.render(),
    )
        .into_response()
}

pub async fn models(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    let model = &state.loaded()?.model;
    Ok(axum::Json(json!({
        "object": "list",
        "data": [model_object(model.as_ref())],
    }))
    .into_response())
}

/// OpenAI's model object for the served model.
fn model_object(model: &dyn ModelInfo) -> Value {
    json!({
        "id": model.model_id(),
        "object": "model",
        "created": unix_now(),
        "owned_by": "phobos",
        "meta": {
            "backend": model.backend_name(),
            "n_ctx_slot": model.context_len_per_slot(),
            "n_vocab": model.tokenizer().n_tokens(),
        },
    })
}

/// `GET /v1/models/{id}`: the served model's object, or 404 for any other.
pub async fn model(
    State(state): State<Arc<AppState>>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Result<Response, ApiError> {
    let model = &state.loaded()?.model;
    if id != model.model_id() {
        return Err(ApiError {
            param: Some("model".into()),
            ..ApiError::new(
                axum::http::StatusCode::NOT_FOUND,
                "model_not_found",
                format!(
                    "the model '{id}' does not exist; this server serves '{}'",
                    model.model_id()
                ),
            )
        });
    }
    Ok(axum::Json(model_object(model.as_ref())).into_response())
}

/// `{"content": TEXT, "add_special": bool, "with_pieces": bool}` →
/// `{"tokens": [...]}` (ids, or `{"id", "piece"}` objects with pieces).
pub async fn tokenize(
    State(state): State<Arc<AppState>>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let model = state.loaded()?.model.clone();
    super::off_runtime(move || tokenize_body(&*model, &body)).await
}

fn tokenize_body(
    model: &dyn ModelInfo,
    body: &serde_json::Map<String, Value>,
) -> Result<Response, ApiError> {
    let fields = Fields(body);
    let content = fields.string("content")?.ok_or_else(|| {
        ApiError::invalid("content", "'content' (the text to tokenize) is required")
    })?;
    let add_special = fields.boolean("add_special")?.unwrap_or(false);
    let parse_special = fields.boolean("parse_special")?.unwrap_or(true);
    let with_pieces = fields.boolean("with_pieces")?.unwrap_or(false);
    let tokenizer = model.tokenizer();
    let ids = tokenizer
        .encode(content, add_special && tokenizer.adds_bos(), parse_special)
        .map_err(|e| ApiError::bad_request(format!("the text could not be tokenized: {e}")))?;
    let tokens: Vec<Value> = if with_pieces {
        ids.iter()
            .map(|&id| {
                let piece = tokenizer.token_to_piece(id, true);
                match String::from_utf8(piece) {
                    Ok(text) => json!({"id": id, "piece": text}),
                    Err(e) => json!({"id": id, "piece": e.into_bytes()}),
                }
            })
            .collect()
    } else {
        ids.iter().map(|&id| json!(id)).collect()
    };
    Ok(axum::Json(json!({"tokens": tokens})).into_response())
}

/// `{"tokens": [ids]}` → `{"content": TEXT}`.
pub async fn detokenize(
    State(state): State<Arc<AppState>>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let model = &state.loaded()?.model;
    let fields = Fields(&body);
    let items = fields
        .array("tokens")?
        .ok_or_else(|| ApiError::invalid("tokens", "'tokens' (a list of token ids) is required"))?;
    let ids = token_ids(items, model.tokenizer().n_tokens(), "tokens")?;
    Ok(axum::Json(json!({"content": model.tokenizer().decode(&ids, true)})).into_response())
}

/// `{"messages": [...], "tools": [...]}` → `{"prompt": TEXT}`: the prompt the
/// chat template renders.
pub async fn apply_template(
    State(state): State<Arc<AppState>>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let model = state.loaded()?.model.clone();
    let prompt = super::off_runtime(move || render_chat(&*model, &Fields(&body))).await?;
    Ok(axum::Json(json!({"prompt": prompt.text})).into_response())
}
