//! The one response builder behind /v1/chat/completions and /v1/completions.
//!
//! Both APIs share the envelope (id, object, created, model, fingerprint),
//! usage (summed over choices, with `prompt_tokens_details.cached_tokens`),
//! the SSE sequence (opening chunks, content chunks, one finish chunk per
//! choice, the `include_usage` chunk with empty choices, `data: [DONE]`),
//! cancellation when the client goes away, and the non-streaming body. What
//! differs — the fields of one choice (`delta`/`message` or `text`, and the
//! logprobs shape) — is a [`ChoiceFormat`].

use std::convert::Infallible;

use axum::http::StatusCode;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::future::try_join_all;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::server::error::ApiError;
use crate::server::generate::{Generation, Step, TokenLogprobs, finish_reason_text, new_id};

/// A choice's fields (everything but `index` and `finish_reason`).
pub type Fields = Map<String, Value>;

/// How one API writes the fields of a choice.
pub trait ChoiceFormat: Send + 'static {
    /// Streaming: the chunks sent before any token (chat: the role).
    fn opening(&mut self) -> Vec<Fields>;
    /// Streaming: the chunks this new text gives (none while text is held
    /// back and no log-probabilities are due).
    fn stream_text(&mut self, text: &str, logprobs: Vec<TokenLogprobs>) -> Vec<Fields>;
    /// Streaming: the chunks still held when the generation ends.
    fn stream_end(&mut self) -> Vec<Fields>;
    /// Streaming: the fields of the finish chunk besides `finish_reason`.
    fn finish_fields(&self) -> Fields;
    /// Non-streaming: takes in new text.
    fn absorb(&mut self, text: &str, logprobs: Vec<TokenLogprobs>);
    /// Non-streaming: the whole choice (message or text, logprobs).
    fn complete(&mut self) -> Fields;
    /// The answer called tools (finish_reason `tool_calls`).
    fn called_tools(&self) -> bool;
}

/// One choice: a generation and how its text is written.
pub struct Choice<F> {
    pub generation: Generation,
    pub format: F,
}

/// The parts of every body and chunk that do not depend on the choice.
pub struct Envelope {
    id: String,
    created: u64,
    model: String,
    object: &'static str,
    chunk_object: &'static str,
    /// `n`: consecutive choices share one prompt, counted once in usage.
    choices_per_prompt: usize,
}

impl Envelope {
    pub fn chat(model: &str) -> Self {
        Self::new(
            "chatcmpl-",
            model,
            "chat.completion",
            "chat.completion.chunk",
        )
    }

    pub fn text(model: &str) -> Self {
        // The legacy API names its chunks as its bodies.
        Self::new("cmpl-", model, "text_completion", "text_completion")
    }

    fn new(prefix: &str, model: &str, object: &'static str, chunk_object: &'static str) -> Self {
        Self {
            id: new_id(prefix),
            created: crate::server::generate::unix_now(),
            model: model.to_owned(),
            object,
            chunk_object,
            choices_per_prompt: 1,
        }
    }

    /// Each prompt's `n` choices are consecutive in the response.
    pub fn with_choices_per_prompt(mut self, n_choices: usize) -> Self {
        self.choices_per_prompt = n_choices.max(1);
        self
    }

    /// Usage over every choice: OpenAI counts each prompt of a multi-prompt
    /// request once, however many choices it has, and every completion.
    fn usage<'a>(&self, generations: impl Iterator<Item = &'a Generation>) -> Value {
        let (mut prompt, mut completion, mut cached) = (0, 0, 0);
        for (index, generation) in generations.enumerate() {
            if index % self.choices_per_prompt == 0 {
                prompt += generation.prompt_tokens;
                cached += generation.cached_tokens;
            }
            completion += generation.completion_tokens;
        }
        json!({
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        })
    }

    fn body(&self, object: &str, choices: Vec<Value>) -> Map<String, Value> {
        let mut body = Map::new();
        body.insert("id".into(), self.id.clone().into());
        body.insert("object".into(), object.into());
        body.insert("created".into(), self.created.into());
        body.insert("model".into(), self.model.clone().into());
        body.insert(
            "system_fingerprint".into(),
            crate::server::FINGERPRINT.into(),
        );
        body.insert("choices".into(), choices.into());
        body
    }

    /// One SSE chunk of choice `index`; with `include_usage` every chunk but
    /// the last carries `"usage": null`, as OpenAI sends them.
    fn chunk(
        &self,
        index: usize,
        fields: Fields,
        finish_reason: Option<&str>,
        include_usage: bool,
    ) -> SseEvent {
        let choice = choice_object(index, fields, finish_reason.into());
        let mut body = self.body(self.chunk_object, vec![choice]);
        if include_usage {
            body.insert("usage".into(), Value::Null);
        }
        SseEvent::default().data(Value::Object(body).to_string())
    }
}

pub fn engine_error(message: String) -> ApiError {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "engine_error",
        format!("generation failed: {message}"),
    )
}

/// The answer to a generation request: an SSE stream when `stream`, else
/// one JSON body once every choice is done.
pub async fn respond<F: ChoiceFormat>(
    envelope: Envelope,
    choices: Vec<Choice<F>>,
    stream: bool,
    include_usage: bool,
) -> Result<Response, ApiError> {
    if stream {
        Ok(stream_response(envelope, choices, include_usage).into_response())
    } else {
        complete(envelope, choices).await
    }
}

async fn complete<F: ChoiceFormat>(
    envelope: Envelope,
    mut choices: Vec<Choice<F>>,
) -> Result<Response, ApiError> {
    let bodies = try_join_all(
        choices
            .iter_mut()
            .enumerate()
            .map(|(index, choice)| complete_choice(index, choice)),
    )
    .await?;
    let mut body = envelope.body(envelope.object, bodies);
    body.insert(
        "usage".into(),
        envelope.usage(choices.iter().map(|c| &c.generation)),
    );
    Ok(axum::Json(Value::Object(body)).into_response())
}

async fn complete_choice<F: ChoiceFormat>(
    index: usize,
    choice: &mut Choice<F>,
) -> Result<Value, ApiError> {
    let reason = loop {
        match choice.generation.next().await {
            Step::Text(text, logprobs) => choice.format.absorb(&text, logprobs),
            Step::Done(reason) => break reason,
            Step::Failed(message) => return Err(engine_error(message)),
        }
    };
    let finish = finish_reason_text(reason, choice.format.called_tools());
    Ok(choice_object(
        index,
        choice.format.complete(),
        finish.into(),
    ))
}

/// A choice in OpenAI's key order: index, the format's fields (`delta`,
/// `message` or `text`), logprobs, finish_reason.
fn choice_object(index: usize, mut fields: Fields, finish_reason: Value) -> Value {
    let logprobs = fields.remove("logprobs").unwrap_or(Value::Null);
    let mut choice = Map::new();
    choice.insert("index".into(), index.into());
    choice.extend(fields);
    choice.insert("logprobs".into(), logprobs);
    choice.insert("finish_reason".into(), finish_reason);
    choice.into()
}

type Events = mpsc::Sender<Result<SseEvent, Infallible>>;

/// Why a streamed choice stopped early.
enum Interrupted {
    /// The client went away.
    Gone,
    Failed(String),
}

/// A task pumps the choices into a small channel; when the client goes away
/// the channel closes and the task drops the generations, which frees their
/// slots at the engine's next step.
fn stream_response<F: ChoiceFormat>(
    envelope: Envelope,
    choices: Vec<Choice<F>>,
    include_usage: bool,
) -> impl IntoResponse {
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        let cancelled = tx.clone();
        tokio::select! {
            () = pump(envelope, choices, include_usage, tx) => {}
            () = cancelled.closed() => {}
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

async fn pump<F: ChoiceFormat>(
    envelope: Envelope,
    mut choices: Vec<Choice<F>>,
    include_usage: bool,
    tx: Events,
) {
    let streamed = try_join_all(
        choices
            .iter_mut()
            .enumerate()
            .map(|(index, choice)| stream_choice(&envelope, index, choice, include_usage, &tx)),
    )
    .await;
    match streamed {
        Ok(_) => {}
        Err(Interrupted::Gone) => return,
        Err(Interrupted::Failed(message)) => {
            let error = engine_error(message).body().to_string();
            let _ = tx.send(Ok(SseEvent::default().data(error))).await;
            return;
        }
    }
    if include_usage {
        let mut body = envelope.body(envelope.chunk_object, Vec::new());
        body.insert(
            "usage".into(),
            envelope.usage(choices.iter().map(|c| &c.generation)),
        );
        let event = SseEvent::default().data(Value::Object(body).to_string());
        if tx.send(Ok(event)).await.is_err() {
            return;
        }
    }
    let _ = tx.send(Ok(SseEvent::default().data("[DONE]"))).await;
}

async fn stream_choice<F: ChoiceFormat>(
    envelope: &Envelope,
    index: usize,
    choice: &mut Choice<F>,
    include_usage: bool,
    tx: &Events,
) -> Result<(), Interrupted> {
    let send = |fields: Fields, finish: Option<&str>| {
        let event = envelope.chunk(index, fields, finish, include_usage);
        async move { tx.send(Ok(event)).await.map_err(|_| Interrupted::Gone) }
    };
    for fields in choice.format.opening() {
        send(fields, None).await?;
    }
    let reason = loop {
        match choice.generation.next().await {
            Step::Text(text, logprobs) => {
                for fields in choice.format.stream_text(&text, logprobs) {
                    send(fields, None).await?;
                }
            }
            Step::Done(reason) => break reason,
            Step::Failed(message) => return Err(Interrupted::Failed(message)),
        }
    };
    for fields in choice.format.stream_end() {
        send(fields, None).await?;
    }
    let finish = finish_reason_text(reason, choice.format.called_tools());
    send(choice.format.finish_fields(), Some(finish)).await
}

/// `{"key": value}` as choice fields.
pub fn fields<const N: usize>(entries: [(&str, Value); N]) -> Fields {
    entries
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect()
}
