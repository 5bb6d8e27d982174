//! POST /v1/completions (text in, text out).

use std::sync::Arc;

use axum::extract::State;
use axum::response::sse::Event as SseEvent;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::body::JsonBody;
use super::chat::{engine_error, sse_response, tokenize_prompt};
use crate::server::error::ApiError;
use crate::server::generate::{
    Generation, Step, TokenLogprobs, finish_reason_text, new_id, unix_now,
};
use crate::server::params::{Fields, common_params};
use crate::server::state::AppState;

pub async fn completions(
    State(state): State<Arc<AppState>>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let loaded = state.loaded()?;
    let model = loaded.model.clone();
    let fields = Fields(&body);
    let mut params = common_params(&fields, &state.defaults, model.model_id())?;
    // Completions' `logprobs` is how many alternatives to report (0..=5).
    if let Some(n) = fields.integer("logprobs", 0, 5)? {
        params.sampling.logprobs = true;
        params.sampling.top_logprobs = n as u32;
    }
    if fields.boolean("echo")? == Some(true) {
        return Err(ApiError::invalid(
            "echo",
            "'echo' is not supported; leave it false",
        ));
    }
    let invalid_prompt = || {
        ApiError::invalid(
            "prompt",
            "'prompt' must be a string, a list of one string, or a list of token ids",
        )
    };
    let ids = match fields.get("prompt") {
        None => return Err(ApiError::invalid("prompt", "'prompt' is required")),
        Some(Value::String(text)) => tokenize_prompt(&*model, text)?,
        Some(Value::Array(items)) if items.len() == 1 && items[0].is_string() => {
            tokenize_prompt(&*model, items[0].as_str().unwrap_or(""))?
        }
        Some(Value::Array(items)) if items.iter().all(Value::is_u64) => {
            let n_vocab = model.tokenizer().n_tokens() as u64;
            items
                .iter()
                .map(|v| match v.as_u64() {
                    Some(id) if id < n_vocab => Ok(id as u32),
                    _ => Err(ApiError::invalid(
                        "prompt",
                        format!("token ids must be below the vocabulary size {n_vocab}"),
                    )),
                })
                .collect::<Result<Vec<u32>, _>>()?
        }
        Some(Value::Array(items)) if items.len() > 1 && items.iter().all(Value::is_string) => {
            return Err(ApiError::invalid(
                "prompt",
                "send one prompt per request (a list of several prompts is not supported)",
            ));
        }
        Some(_) => return Err(invalid_prompt()),
    };
    let logprobs = params.sampling.logprobs;
    let mut generation = Generation::start(
        model.clone(),
        &loaded.scheduler,
        ids,
        params.sampling,
        params.max_tokens,
        params.stop,
    )?;
    let meta = Meta {
        id: new_id("cmpl-"),
        created: unix_now(),
        model: model.model_id().to_owned(),
        logprobs,
    };
    if params.stream {
        let (tx, rx) = mpsc::channel(16);
        let include_usage = params.include_usage;
        tokio::spawn(async move {
            let cancelled = tx.clone();
            tokio::select! {
                () = pump(generation, meta, include_usage, tx) => {}
                () = cancelled.closed() => {}
            }
        });
        return Ok(sse_response(rx).into_response());
    }
    let mut text = String::new();
    let mut entries = Vec::new();
    let reason = loop {
        match generation.next().await {
            Step::Text(piece, logprobs) => {
                text.push_str(&piece);
                entries.extend(logprobs);
            }
            Step::Done(reason) => break reason,
            Step::Failed(message) => return Err(engine_error(message)),
        }
    };
    let body = json!({
        "id": meta.id,
        "object": "text_completion",
        "created": meta.created,
        "model": meta.model,
        "system_fingerprint": crate::server::FINGERPRINT,
        "choices": [{
            "index": 0,
            "text": text,
            "logprobs": if logprobs { logprobs_json(&entries, 0) } else { Value::Null },
            "finish_reason": finish_reason_text(reason, false),
        }],
        "usage": usage(&generation),
    });
    Ok(axum::Json(body).into_response())
}

struct Meta {
    id: String,
    created: u64,
    model: String,
    logprobs: bool,
}

fn usage(generation: &Generation) -> Value {
    json!({
        "prompt_tokens": generation.prompt_tokens,
        "completion_tokens": generation.completion_tokens,
        "total_tokens": generation.prompt_tokens + generation.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": generation.cached_tokens},
    })
}

/// The legacy completions shape: parallel lists.
fn logprobs_json(entries: &[TokenLogprobs], text_offset: usize) -> Value {
    let mut offset = text_offset;
    let mut offsets = Vec::with_capacity(entries.len());
    for entry in entries {
        offsets.push(offset);
        offset += entry.token.len();
    }
    json!({
        "tokens": entries.iter().map(|e| e.token.clone()).collect::<Vec<_>>(),
        "token_logprobs": entries.iter().map(|e| e.logprob).collect::<Vec<_>>(),
        "top_logprobs": entries.iter().map(|e| {
            e.top.iter().map(|(token, _, logprob)| (token.clone(), json!(logprob))).collect::<serde_json::Map<_, _>>()
        }).collect::<Vec<_>>(),
        "text_offset": offsets,
    })
}

fn chunk(meta: &Meta, text: &str, logprobs: Value, finish: Value, include_usage: bool) -> SseEvent {
    let mut body = json!({
        "id": meta.id,
        "object": "text_completion",
        "created": meta.created,
        "model": meta.model,
        "system_fingerprint": crate::server::FINGERPRINT,
        "choices": [{"index": 0, "text": text, "logprobs": logprobs, "finish_reason": finish}],
    });
    if include_usage {
        body["usage"] = Value::Null;
    }
    SseEvent::default().data(body.to_string())
}

async fn pump(
    mut generation: Generation,
    meta: Meta,
    include_usage: bool,
    tx: mpsc::Sender<Result<SseEvent, std::convert::Infallible>>,
) {
    let mut text_offset = 0;
    let reason = loop {
        match generation.next().await {
            Step::Text(text, entries) => {
                if text.is_empty() && entries.is_empty() {
                    continue;
                }
                let logprobs = if meta.logprobs {
                    logprobs_json(&entries, text_offset)
                } else {
                    Value::Null
                };
                text_offset += text.len();
                if tx
                    .send(Ok(chunk(
                        &meta,
                        &text,
                        logprobs,
                        Value::Null,
                        include_usage,
                    )))
                    .await
                    .is_err()
                {
                    return;
                }
            }
            Step::Done(reason) => break reason,
            Step::Failed(message) => {
                let _ = tx
                    .send(Ok(
                        SseEvent::default().data(engine_error(message).body().to_string())
                    ))
                    .await;
                return;
            }
        }
    };
    let finish = finish_reason_text(reason, false);
    if tx
        .send(Ok(chunk(
            &meta,
            "",
            Value::Null,
            finish.into(),
            include_usage,
        )))
        .await
        .is_err()
    {
        return;
    }
    if include_usage {
        let body = json!({
            "id": meta.id, "object": "text_completion", "created": meta.created, "model": meta.model,
            "system_fingerprint": crate::server::FINGERPRINT,
            "choices": [], "usage": usage(&generation),
        });
        if tx
            .send(Ok(SseEvent::default().data(body.to_string())))
            .await
            .is_err()
        {
            return;
        }
    }
    let _ = tx.send(Ok(SseEvent::default().data("[DONE]"))).await;
}
