//! One generation as the handlers see it: submit a job, then read text (with
//! stop strings already applied, never split inside a UTF-8 character) and
//! per-token log-probabilities until the end.

use std::sync::Arc;

use axum::http::StatusCode;
use phobos_models::tokenizer::StreamDecoder;
use tokio::sync::mpsc;

use super::backend::{ModelInfo, SamplingParams, StepOutput};
use super::error::ApiError;
use super::scheduler::{Event, FinishReason, Job, Scheduler};
use super::text::stop::StopMatcher;

/// One generated token's log-probabilities, ready to serialize.
#[derive(Debug, Clone)]
pub struct TokenLogprobs {
    pub token: String,
    pub bytes: Vec<u8>,
    pub logprob: f32,
    pub top: Vec<(String, Vec<u8>, f32)>,
}

#[derive(Debug)]
pub enum Step {
    /// New text (possibly empty when only held-back bytes arrived) and the
    /// log-probabilities of the tokens it came from.
    Text(String, Vec<TokenLogprobs>),
    Done(FinishReason),
    Failed(String),
}

pub struct Generation {
    model: Arc<dyn ModelInfo>,
    events: mpsc::UnboundedReceiver<Event>,
    decoder: StreamDecoder,
    stop: StopMatcher,
    pub prompt_tokens: usize,
    pub cached_tokens: usize,
    pub completion_tokens: usize,
    finished: Option<FinishReason>,
    want_logprobs: bool,
}

impl Generation {
    /// Queues the job; a full queue is a 503 with Retry-After. A prompt
    /// that is empty or too long is a 400 naming `prompt_param`, the
    /// request field it came from (`messages`, `prompt`, `input`).
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        prompt_param: &'static str,
        model: Arc<dyn ModelInfo>,
        scheduler: &Scheduler,
        prompt: Vec<u32>,
        params: SamplingParams,
        max_tokens: Option<usize>,
        stop: Vec<String>,
        ignore_eos: bool,
    ) -> Result<Self, ApiError> {
        let context_len = model.context_len_per_slot();
        if prompt.is_empty() {
            return Err(ApiError::invalid(
                prompt_param,
                "the prompt is empty; send some text",
            ));
        }
        if prompt.len() >= context_len {
            return Err(ApiError {
                param: Some(prompt_param.into()),
                ..ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "context_length_exceeded",
                    format!(
                        "the prompt is {} tokens but a slot holds {context_len}; shorten the prompt \
                         or start the server with a larger --ctx-size",
                        prompt.len()
                    ),
                )
            });
        }
        let room = context_len - prompt.len();
        let max_tokens = max_tokens.map_or(room, |n| n.min(room));
        let (sender, events) = mpsc::unbounded_channel();
        let prompt_tokens = prompt.len();
        let want_logprobs = params.logprobs || params.top_logprobs > 0;
        scheduler
            .submit(Job {
                prompt,
                params,
                max_tokens,
                ignore_eos,
                events: sender,
            })
            .map_err(|full| ApiError {
                retry_after_secs: Some(1),
                ..ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "server_busy",
                    format!("the server is busy: {full}; retry later"),
                )
            })?;
        Ok(Self {
            model,
            events,
            decoder: StreamDecoder::new(),
            stop: StopMatcher::new(stop),
            prompt_tokens,
            cached_tokens: 0,
            completion_tokens: 0,
            finished: None,
            want_logprobs,
        })
    }

    /// The next piece of the answer.
    pub async fn next(&mut self) -> Step {
        if let Some(reason) = self.finished {
            return Step::Done(reason);
        }
        loop {
            let Some(event) = self.events.recv().await else {
                return Step::Failed("the engine stopped".into());
            };
            match event {
                Event::Started { cached_tokens } => self.cached_tokens = cached_tokens,
                Event::Token(output) => {
                    self.completion_tokens += 1;
                    let logprobs = self.logprobs(&output);
                    let text = self.decoder.push(self.model.tokenizer(), output.token);
                    let released = self.stop.push(&text);
                    if released.stopped {
                        // Dropping the receiver frees the slot at the next step.
                        self.events.close();
                        self.finished = Some(FinishReason::Stop);
                    }
                    return Step::Text(released.text, logprobs);
                }
                Event::Finished(reason) => {
                    self.finished = Some(reason);
                    let tail = self.decoder.finish();
                    let mut text = self.stop.push(&tail).text;
                    text.push_str(&self.stop.finish());
                    return Step::Text(text, Vec::new());
                }
                Event::Failed(message) => return Step::Failed(message),
            }
        }
    }

    fn logprobs(&self, output: &StepOutput) -> Vec<TokenLogprobs> {
        if !self.want_logprobs {
            return Vec::new();
        }
        let tokenizer = self.model.tokenizer();
        let piece = |id: u32| {
            let bytes = tokenizer.token_to_piece(id, true);
            (String::from_utf8_lossy(&bytes).into_owned(), bytes)
        };
        let (token, bytes) = piece(output.token);
        vec![TokenLogprobs {
            token,
            bytes,
            logprob: output.logprob.unwrap_or(0.0),
            top: output
                .top_logprobs
                .iter()
                .map(|alt| {
                    let (text, bytes) = piece(alt.id);
                    (text, bytes, alt.logprob)
                })
                .collect(),
        }]
    }
}

pub fn finish_reason_text(reason: FinishReason, tool_calls: bool) -> &'static str {
    match reason {
        FinishReason::Length => "length",
        FinishReason::Stop if tool_calls => "tool_calls",
        FinishReason::Stop => "stop",
    }
}

/// Unique-enough ids for responses and tool calls: a per-process random
/// key hashed with a counter.
pub fn new_id(prefix: &str) -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::BuildHasher;
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    static KEY: OnceLock<RandomState> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let hash = KEY.get_or_init(RandomState::new).hash_one(n);
    format!("{prefix}{hash:016x}")
}

pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
