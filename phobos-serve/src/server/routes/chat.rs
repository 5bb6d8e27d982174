//! POST /v1/chat/completions.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::State;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use phobos_models::chat::{ChatMessage, ChatRequest};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::body::JsonBody;
use crate::server::backend::ModelInfo;
use crate::server::error::ApiError;
use crate::server::generate::{
    Generation, Step, TokenLogprobs, finish_reason_text, new_id, unix_now,
};
use crate::server::params::{Fields, common_params};
use crate::server::state::AppState;
use crate::server::text::markup::{MarkupParser, Piece};

/// The rendered prompt and how to read the answer.
pub struct ChatPrompt {
    pub text: String,
    pub tools: bool,
    /// The generation prompt already opened a reasoning block.
    pub in_reasoning: bool,
}

/// Renders `messages` (and `tools`) through the model's own chat template.
pub fn render_chat(model: &dyn ModelInfo, fields: &Fields<'_>) -> Result<ChatPrompt, ApiError> {
    let raw_messages = fields.array("messages")?.ok_or_else(|| {
        ApiError::invalid(
            "messages",
            "'messages' is required: a list of {role, content} objects",
        )
    })?;
    if raw_messages.is_empty() {
        return Err(ApiError::invalid(
            "messages",
            "'messages' must not be empty",
        ));
    }
    let mut messages = Vec::with_capacity(raw_messages.len());
    for (index, raw) in raw_messages.iter().enumerate() {
        let invalid = |what: String| ApiError::invalid(&format!("messages[{index}]"), what);
        if !raw.is_object() {
            return Err(invalid(format!(
                "messages[{index}] must be an object with 'role' and 'content'"
            )));
        }
        let mut message = ChatMessage::from_openai_json(raw)
            .map_err(|e| invalid(format!("messages[{index}]: {e}")))?;
        message.role = match message.role.as_str() {
            "developer" => "system".into(),
            "system" | "user" | "assistant" | "tool" => message.role,
            other => {
                return Err(invalid(format!(
                    "messages[{index}].role must be system, developer, user, assistant or tool, not '{other}'"
                )));
            }
        };
        messages.push(message);
    }
    let choice_none = matches!(fields.get("tool_choice"), Some(Value::String(s)) if s == "none");
    let mut tools = Vec::new();
    if let Some(items) = fields.array("tools")? {
        for (index, tool) in items.iter().enumerate() {
            let name = tool
                .get("function")
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str);
            if tool.get("type").and_then(Value::as_str) != Some("function") || name.is_none() {
                return Err(ApiError::invalid(
                    &format!("tools[{index}]"),
                    format!(
                        "tools[{index}] must be {{\"type\": \"function\", \"function\": {{\"name\": ..., \"parameters\": ...}}}}"
                    ),
                ));
            }
            if !choice_none {
                tools.push(tool.clone());
            }
        }
    }
    let mut extra = serde_json::Map::new();
    if let Some(kwargs) = fields.object("chat_template_kwargs")? {
        extra.extend(kwargs.0.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    let tokenizer = model.tokenizer();
    let token_text = |id: Option<u32>| {
        id.and_then(|id| tokenizer.token_text(id))
            .unwrap_or("")
            .to_owned()
    };
    let request = ChatRequest {
        messages,
        tools: tools.clone(),
        add_generation_prompt: true,
        bos_token: token_text(tokenizer.bos_id()),
        eos_token: token_text(tokenizer.eos_id()),
        extra,
        now_unix_seconds: None,
    };
    let text = model.chat_template().render(&request).map_err(|e| {
        ApiError::bad_request(format!(
            "the chat template could not render these messages: {e}"
        ))
    })?;
    let in_reasoning = text.trim_end().ends_with("<think>");
    Ok(ChatPrompt {
        text,
        tools: !tools.is_empty(),
        in_reasoning,
    })
}

/// Prompt text to ids: BOS as the model wants it unless the template wrote
/// it already; special-token text is parsed.
pub fn tokenize_prompt(model: &dyn ModelInfo, text: &str) -> Result<Vec<u32>, ApiError> {
    let tokenizer = model.tokenizer();
    let bos_text = tokenizer
        .bos_id()
        .and_then(|id| tokenizer.token_text(id))
        .unwrap_or("");
    let add_bos = tokenizer.adds_bos() && (bos_text.is_empty() || !text.starts_with(bos_text));
    let mut ids = tokenizer
        .encode(text, false, true)
        .map_err(|e| ApiError::bad_request(format!("the prompt could not be tokenized: {e}")))?;
    if add_bos && let Some(bos) = tokenizer.bos_id() {
        ids.insert(0, bos);
    }
    Ok(ids)
}

pub async fn chat_completions(
    State(state): State<Arc<AppState>>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let loaded = state.loaded()?;
    let model = loaded.model.clone();
    let fields = Fields(&body);
    let mut params = common_params(&fields, &state.defaults, model.model_id())?;
    params.sampling.logprobs = fields.boolean("logprobs")?.unwrap_or(false);
    if let Some(top) = fields.integer("top_logprobs", 0, 20)? {
        if !params.sampling.logprobs {
            return Err(ApiError::invalid(
                "top_logprobs",
                "'top_logprobs' needs 'logprobs': true",
            ));
        }
        params.sampling.top_logprobs = top as u32;
    }
    let prompt = render_chat(&*model, &fields)?;
    let ids = tokenize_prompt(&*model, &prompt.text)?;
    let logprobs = params.sampling.logprobs;
    let generation = Generation::start(
        model.clone(),
        &loaded.scheduler,
        ids,
        params.sampling,
        params.max_tokens,
        params.stop,
    )?;
    let meta = Meta {
        id: new_id("chatcmpl-"),
        created: unix_now(),
        model: model.model_id().to_owned(),
        logprobs,
    };
    let parser = MarkupParser::new(prompt.tools, prompt.in_reasoning);
    if params.stream {
        Ok(stream(generation, parser, meta, params.include_usage).into_response())
    } else {
        complete(generation, parser, meta).await
    }
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

fn logprobs_json(entries: &[TokenLogprobs]) -> Value {
    let content: Vec<Value> = entries
        .iter()
        .map(|entry| {
            json!({
                "token": entry.token,
                "logprob": entry.logprob,
                "bytes": entry.bytes,
                "top_logprobs": entry.top.iter().map(|(token, bytes, logprob)| json!({
                    "token": token, "logprob": logprob, "bytes": bytes,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({"content": content})
}

fn tool_call_json(index: usize, name: &str, arguments: &str) -> Value {
    json!({
        "index": index,
        "id": new_id("call_"),
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    })
}

async fn complete(
    mut generation: Generation,
    mut parser: MarkupParser,
    meta: Meta,
) -> Result<Response, ApiError> {
    let (mut content, mut reasoning) = (String::new(), String::new());
    let mut tool_calls = Vec::new();
    let mut logprobs = Vec::new();
    let mut collect = |pieces: Vec<Piece>, tool_calls: &mut Vec<Value>| {
        for piece in pieces {
            match piece {
                Piece::Content(text) => content.push_str(&text),
                Piece::Reasoning(text) => reasoning.push_str(&text),
                Piece::ToolCall { name, arguments } => {
                    let mut call = tool_call_json(tool_calls.len(), &name, &arguments);
                    if let Some(map) = call.as_object_mut() {
                        map.remove("index");
                    }
                    tool_calls.push(call);
                }
            }
        }
    };
    let reason = loop {
        match generation.next().await {
            Step::Text(text, entries) => {
                logprobs.extend(entries);
                collect(parser.push(&text), &mut tool_calls);
            }
            Step::Done(reason) => break reason,
            Step::Failed(message) => return Err(engine_error(message)),
        }
    };
    collect(parser.finish(), &mut tool_calls);
    let mut message = json!({
        "role": "assistant",
        "content": if content.is_empty() && !tool_calls.is_empty() { Value::Null } else { content.into() },
    });
    if !reasoning.is_empty() {
        message["reasoning_content"] = reasoning.into();
    }
    if !tool_calls.is_empty() {
        message["tool_calls"] = tool_calls.clone().into();
    }
    let body = json!({
        "id": meta.id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "system_fingerprint": crate::server::FINGERPRINT,
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": if meta.logprobs { logprobs_json(&logprobs) } else { Value::Null },
            "finish_reason": finish_reason_text(reason, !tool_calls.is_empty()),
        }],
        "usage": usage(&generation),
    });
    Ok(axum::Json(body).into_response())
}

pub fn engine_error(message: String) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::INTERNAL_SERVER_ERROR,
        "engine_error",
        format!("generation failed: {message}"),
    )
}

fn chunk(
    meta: &Meta,
    delta: Value,
    logprobs: Value,
    finish: Value,
    include_usage: bool,
) -> SseEvent {
    let mut body = json!({
        "id": meta.id,
        "object": "chat.completion.chunk",
        "created": meta.created,
        "model": meta.model,
        "system_fingerprint": crate::server::FINGERPRINT,
        "choices": [{"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish}],
    });
    if include_usage {
        body["usage"] = Value::Null;
    }
    SseEvent::default().data(body.to_string())
}

type Events = mpsc::Sender<Result<SseEvent, Infallible>>;

/// The SSE response: a task pumps the generation into a small channel; when
/// the client goes away the channel closes and the task drops the
/// generation, which frees the slot.
pub fn sse_response(rx: mpsc::Receiver<Result<SseEvent, Infallible>>) -> impl IntoResponse {
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

fn stream(
    generation: Generation,
    parser: MarkupParser,
    meta: Meta,
    include_usage: bool,
) -> impl IntoResponse {
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        let cancelled = tx.clone();
        tokio::select! {
            () = pump(generation, parser, meta, include_usage, tx) => {}
            () = cancelled.closed() => {}
        }
    });
    sse_response(rx)
}

async fn pump(
    mut generation: Generation,
    mut parser: MarkupParser,
    meta: Meta,
    include_usage: bool,
    tx: Events,
) {
    let send = |event: SseEvent| {
        let tx = tx.clone();
        async move { tx.send(Ok(event)).await.is_ok() }
    };
    let no_logprobs = Value::Null;
    if !send(chunk(
        &meta,
        json!({"role": "assistant", "content": ""}),
        no_logprobs.clone(),
        Value::Null,
        include_usage,
    ))
    .await
    {
        return;
    }
    let mut tool_index = 0;
    let reason = loop {
        let (pieces, entries) = match generation.next().await {
            Step::Text(text, entries) => (parser.push(&text), entries),
            Step::Done(reason) => break reason,
            Step::Failed(message) => {
                let _ =
                    send(SseEvent::default().data(engine_error(message).body().to_string())).await;
                return;
            }
        };
        let mut logprobs = if meta.logprobs && !entries.is_empty() {
            logprobs_json(&entries)
        } else {
            Value::Null
        };
        if pieces.is_empty() && !logprobs.is_null() {
            // Text held back (a possible stop string or marker) still has
            // its tokens' log-probabilities reported, with empty content.
            if !send(chunk(
                &meta,
                json!({"content": ""}),
                logprobs,
                Value::Null,
                include_usage,
            ))
            .await
            {
                return;
            }
            continue;
        }
        for piece in pieces {
            let logprobs = std::mem::take(&mut logprobs);
            if !send_piece(
                &meta,
                piece,
                &mut tool_index,
                logprobs,
                include_usage,
                &send,
            )
            .await
            {
                return;
            }
        }
    };
    for piece in parser.finish() {
        if !send_piece(
            &meta,
            piece,
            &mut tool_index,
            Value::Null,
            include_usage,
            &send,
        )
        .await
        {
            return;
        }
    }
    let finish = finish_reason_text(reason, tool_index > 0);
    if !send(chunk(
        &meta,
        json!({}),
        Value::Null,
        finish.into(),
        include_usage,
    ))
    .await
    {
        return;
    }
    if include_usage {
        let body = json!({
            "id": meta.id,
            "object": "chat.completion.chunk",
            "created": meta.created,
            "model": meta.model,
            "system_fingerprint": crate::server::FINGERPRINT,
            "choices": [],
            "usage": usage(&generation),
        });
        if !send(SseEvent::default().data(body.to_string())).await {
            return;
        }
    }
    let _ = send(SseEvent::default().data("[DONE]")).await;
}

async fn send_piece<F, Fut>(
    meta: &Meta,
    piece: Piece,
    tool_index: &mut usize,
    logprobs: Value,
    include_usage: bool,
    send: &F,
) -> bool
where
    F: Fn(SseEvent) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    match piece {
        Piece::Content(text) => {
            send(chunk(
                meta,
                json!({"content": text}),
                logprobs,
                Value::Null,
                include_usage,
            ))
            .await
        }
        Piece::Reasoning(text) => {
            send(chunk(
                meta,
                json!({"reasoning_content": text}),
                logprobs,
                Value::Null,
                include_usage,
            ))
            .await
        }
        Piece::ToolCall { name, arguments } => {
            // As OpenAI streams calls: id, type and name first with empty
            // arguments, then the arguments in fragments.
            let index = *tool_index;
            *tool_index += 1;
            let head = tool_call_json(index, &name, "");
            if !send(chunk(
                meta,
                json!({"tool_calls": [head]}),
                logprobs,
                Value::Null,
                include_usage,
            ))
            .await
            {
                return false;
            }
            let chars: Vec<char> = arguments.chars().collect();
            for fragment in chars.chunks(16) {
                let fragment: String = fragment.iter().collect();
                let delta =
                    json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]});
                if !send(chunk(meta, delta, Value::Null, Value::Null, include_usage)).await {
                    return false;
                }
            }
            true
        }
    }
}
