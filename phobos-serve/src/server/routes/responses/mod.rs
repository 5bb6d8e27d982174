//! POST /v1/responses: OpenAI's Responses API, stateless.
//!
//! The request is translated to a chat request ([`request`]) and runs
//! through the chat route's validation, template and sampler; the answer is
//! a `response` object whose `output` items ([`output`]) come from the same
//! markup parser. Streaming sends OpenAI's typed events (`event:` lines,
//! numbered by `sequence_number`, no `[DONE]`): `response.created`,
//! `response.in_progress`, the items' events, then `response.completed`,
//! `response.incomplete` (the token limit) or `response.failed`.

mod output;
mod request;

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::State;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::body::JsonBody;
use super::chat::{PreparedChat, prepare_chat};
use super::respond::engine_error;
use crate::server::error::ApiError;
use crate::server::generate::{Generation, Step, new_id, unix_now};
use crate::server::params::{CommonParams, Fields};
use crate::server::scheduler::FinishReason;
use crate::server::state::AppState;
use crate::server::text::markup::MarkupParser;
use output::OutputBuilder;

pub async fn responses(
    State(state): State<Arc<AppState>>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let loaded = state.loaded()?;
    let model = loaded.model.clone();
    let mut translated = request::translate(&body)?;
    let PreparedChat {
        params,
        prompt,
        ids,
    } = {
        let (model, defaults) = (model.clone(), state.defaults.clone());
        let chat = std::mem::take(&mut translated.chat);
        super::off_runtime(move || prepare_chat(&*model, &defaults, &Fields(&chat)))
            .await
            .map_err(request::in_responses_terms)?
    };
    let generation = Generation::start(
        "input",
        model.clone(),
        &loaded.scheduler,
        ids,
        params.sampling.clone(),
        params.max_tokens,
        params.stop.clone(),
        params.ignore_eos,
    )?;
    let builder = OutputBuilder::new(
        MarkupParser::new(prompt.tools, prompt.in_reasoning),
        translated.logprobs,
    );
    let shell = Shell::new(&body, model.model_id(), &params);
    if params.stream {
        Ok(stream(shell, generation, builder).into_response())
    } else {
        complete(shell, generation, builder).await
    }
}

/// The parts of the response object fixed by the request.
struct Shell {
    id: String,
    created_at: u64,
    model: String,
    /// The request's settings, echoed as OpenAI echoes them.
    echo: Map<String, Value>,
}

impl Shell {
    fn new(body: &Map<String, Value>, model: &str, params: &CommonParams) -> Self {
        let given = |name: &str, default: Value| {
            body.get(name)
                .filter(|v| !v.is_null())
                .cloned()
                .unwrap_or(default)
        };
        let mut echo = Map::new();
        echo.insert("instructions".into(), given("instructions", Value::Null));
        echo.insert(
            "max_output_tokens".into(),
            given("max_output_tokens", Value::Null),
        );
        echo.insert(
            "parallel_tool_calls".into(),
            given("parallel_tool_calls", true.into()),
        );
        echo.insert(
            "reasoning".into(),
            given("reasoning", json!({"effort": null, "summary": null})),
        );
        echo.insert("temperature".into(), params.sampling.temperature.into());
        echo.insert(
            "text".into(),
            given("text", json!({"format": {"type": "text"}})),
        );
        echo.insert("tool_choice".into(), given("tool_choice", "auto".into()));
        echo.insert("tools".into(), given("tools", json!([])));
        echo.insert("top_logprobs".into(), given("top_logprobs", 0.into()));
        echo.insert("top_p".into(), params.sampling.top_p.into());
        echo.insert("truncation".into(), given("truncation", "disabled".into()));
        echo.insert("user".into(), given("user", Value::Null));
        echo.insert("metadata".into(), given("metadata", json!({})));
        Self {
            id: new_id("resp_"),
            created_at: unix_now(),
            model: model.to_owned(),
            echo,
        }
    }

    /// The response object in `state`.
    fn object(&self, state: &Outcome<'_>) -> Value {
        let mut object = Map::new();
        object.insert("id".into(), self.id.clone().into());
        object.insert("object".into(), "response".into());
        object.insert("created_at".into(), self.created_at.into());
        object.insert("status".into(), state.status.into());
        object.insert("background".into(), false.into());
        object.insert("error".into(), state.error.clone());
        object.insert(
            "incomplete_details".into(),
            if state.status == "incomplete" {
                json!({"reason": "max_output_tokens"})
            } else {
                Value::Null
            },
        );
        object.insert("max_tool_calls".into(), Value::Null);
        object.insert("model".into(), self.model.clone().into());
        object.insert("output".into(), state.output.to_vec().into());
        object.insert("previous_response_id".into(), Value::Null);
        object.insert("store".into(), false.into());
        object.extend(self.echo.clone());
        object.insert("usage".into(), state.usage.clone());
        object.into()
    }
}

/// Where a response stands.
struct Outcome<'a> {
    status: &'static str,
    output: &'a [Value],
    usage: Value,
    error: Value,
}

impl<'a> Outcome<'a> {
    fn in_progress() -> Self {
        Self {
            status: "in_progress",
            output: &[],
            usage: Value::Null,
            error: Value::Null,
        }
    }

    fn finished(reason: FinishReason, generation: &Generation, builder: &'a OutputBuilder) -> Self {
        Self {
            status: match reason {
                FinishReason::Length => "incomplete",
                FinishReason::Stop => "completed",
            },
            output: builder.items(),
            usage: json!({
                "input_tokens": generation.prompt_tokens,
                "input_tokens_details": {"cached_tokens": generation.cached_tokens},
                "output_tokens": generation.completion_tokens,
                "output_tokens_details": {"reasoning_tokens": builder.reasoning_tokens},
                "total_tokens": generation.prompt_tokens + generation.completion_tokens,
            }),
            error: Value::Null,
        }
    }
}

async fn complete(
    shell: Shell,
    mut generation: Generation,
    mut builder: OutputBuilder,
) -> Result<Response, ApiError> {
    let reason = loop {
        match generation.next().await {
            Step::Text(text, logprobs) => {
                builder.push(&text, logprobs);
            }
            Step::Done(reason) => break reason,
            Step::Failed(message) => return Err(engine_error(message)),
        }
    };
    builder.finish(reason == FinishReason::Length);
    let outcome = Outcome::finished(reason, &generation, &builder);
    Ok(axum::Json(shell.object(&outcome)).into_response())
}

type Events = mpsc::Sender<Result<SseEvent, Infallible>>;

/// A task pumps the events into a small channel; when the client goes away
/// the channel closes and the task drops the generation, which frees its
/// slot at the engine's next step.
fn stream(shell: Shell, generation: Generation, builder: OutputBuilder) -> impl IntoResponse {
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        let cancelled = tx.clone();
        tokio::select! {
            _ = pump(shell, generation, builder, tx) => {}
            () = cancelled.closed() => {}
        }
    });
    let events = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    Sse::new(events).keep_alive(KeepAlive::default())
}

/// Numbers the events in the order they are sent.
struct Sender {
    tx: Events,
    sequence_number: u64,
}

impl Sender {
    /// `Err` when the client went away.
    async fn send(&mut self, mut event: Value) -> Result<(), ()> {
        let kind = event["type"].as_str().unwrap_or("message").to_owned();
        event["sequence_number"] = self.sequence_number.into();
        self.sequence_number += 1;
        let sse = SseEvent::default().event(kind).data(event.to_string());
        self.tx.send(Ok(sse)).await.map_err(|_| ())
    }

    async fn send_all(&mut self, events: Vec<Value>) -> Result<(), ()> {
        for event in events {
            self.send(event).await?;
        }
        Ok(())
    }
}

async fn pump(
    shell: Shell,
    mut generation: Generation,
    mut builder: OutputBuilder,
    tx: Events,
) -> Result<(), ()> {
    let mut sender = Sender {
        tx,
        sequence_number: 0,
    };
    let opening = shell.object(&Outcome::in_progress());
    sender
        .send(json!({"type": "response.created", "response": opening}))
        .await?;
    sender
        .send(json!({"type": "response.in_progress", "response": opening}))
        .await?;
    let reason = loop {
        match generation.next().await {
            Step::Text(text, logprobs) => sender.send_all(builder.push(&text, logprobs)).await?,
            Step::Done(reason) => break reason,
            Step::Failed(message) => {
                let failed = Outcome {
                    status: "failed",
                    output: builder.items(),
                    usage: Value::Null,
                    error: json!({"code": "server_error", "message": format!("generation failed: {message}")}),
                };
                let response = shell.object(&failed);
                return sender
                    .send(json!({"type": "response.failed", "response": response}))
                    .await;
            }
        }
    };
    sender
        .send_all(builder.finish(reason == FinishReason::Length))
        .await?;
    let outcome = Outcome::finished(reason, &generation, &builder);
    let kind = if outcome.status == "incomplete" {
        "response.incomplete"
    } else {
        "response.completed"
    };
    sender
        .send(json!({"type": kind, "response": shell.object(&outcome)}))
        .await
}
