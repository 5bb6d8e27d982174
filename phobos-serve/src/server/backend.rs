//! What the server needs from an inference engine, and nothing more.
//!
//! The server owns the scheduling (queue, slots, continuous batching,
//! cancellation); an engine only has to keep one KV cache per slot, fill it
//! from a prompt while reusing the prefix it already holds, and advance
//! several slots by one token in one batched forward pass.

use phobos_models::chat::ChatTemplate;
use phobos_models::tokenizer::Tokenizer;

use super::json_format::JsonFormat;

/// An engine error, reported to the client of the request that hit it as a
/// 500 (the server keeps running and frees the slot).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BackendError(pub String);

/// Sampling parameters of one request, already validated and merged with the
/// server's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingParams {
    /// 0 means greedy.
    pub temperature: f32,
    /// In (0, 1]; 1 disables it.
    pub top_p: f32,
    /// 0 disables it.
    pub top_k: u32,
    /// In [0, 1]; 0 disables it.
    pub min_p: f32,
    /// Multiplicative penalty on tokens already in the context (1 disables it).
    pub repeat_penalty: f32,
    /// OpenAI's additive penalties in [-2, 2].
    pub presence_penalty: f32,
    pub frequency_penalty: f32,
    /// The request's seed; `None` for a random one.
    pub seed: Option<u64>,
    /// How many alternatives to report per token (0 = no logprobs at all
    /// unless `logprobs` is set).
    pub top_logprobs: u32,
    /// Report the chosen token's log-probability.
    pub logprobs: bool,
    /// The output's JSON constraint (`response_format`, or a tool call
    /// `tool_choice` demands), if the request has one.
    pub json_format: Option<JsonFormat>,
    /// `logit_bias`: added to these tokens' logits before sampling.
    pub logit_bias: Vec<(u32, f32)>,
}

/// A token with its natural-log probability under the (unmodified) model
/// distribution.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenLogprob {
    pub id: u32,
    pub logprob: f32,
}

/// What one slot produced in one decode step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepOutput {
    pub token: u32,
    /// The chosen token's log-probability, when the request asked for it.
    pub logprob: Option<f32>,
    /// The most likely alternatives, best first (empty unless asked).
    pub top_logprobs: Vec<TokenLogprob>,
}

/// The read-only side of a loaded model: what the HTTP handlers need.
pub trait ModelInfo: Send + Sync + 'static {
    /// The id `/v1/models` lists and requests may name.
    fn model_id(&self) -> &str;
    /// A short word for the dashboard and `/v1/models` ("cpu", "cuda", ...).
    fn backend_name(&self) -> &str;
    fn tokenizer(&self) -> &Tokenizer;
    /// The chat template prompts are rendered with.
    fn chat_template(&self) -> &ChatTemplate;
    /// Tokens one slot's KV cache holds (prompt plus generated).
    fn context_len_per_slot(&self) -> usize;
    /// Bytes of weights and caches with every slot full (KV cache and any
    /// recurrent state with its checkpoints), for the dashboard (0 = unknown).
    fn memory_bytes(&self) -> u64 {
        0
    }
}

/// The engine the scheduler drives. One `Slot` is one KV cache; the
/// scheduler creates `--parallel` of them at start and never more.
pub trait InferenceBackend: ModelInfo {
    type Slot: Send + 'static;

    /// A fresh slot with an empty cache of `context_len_per_slot` tokens.
    fn new_slot(&self) -> Result<Self::Slot, BackendError>;

    /// The tokens the slot's cache holds now (what prefix reuse compares
    /// against).
    fn cached_tokens<'a>(&self, slot: &'a Self::Slot) -> &'a [u32];

    /// Prefill for several slots at once: makes each slot's cache hold
    /// exactly its prompt and computes the logits after the prompt's last
    /// token, reusing the longest common prefix with what the cache held
    /// (all slots in one batched forward pass). Returns, per input in order,
    /// how many prompt tokens were reused (at most `prompt.len() - 1`: the
    /// last one is always run to get logits). `params` carries the seed so
    /// the slot's sampler can be reset.
    fn ingest(
        &self,
        batch: &mut [(&mut Self::Slot, &[u32], &SamplingParams)],
    ) -> Result<Vec<usize>, BackendError>;

    /// One decode step for several slots at once (continuous batching): for
    /// each `(slot, params)` sample the next token from the slot's current
    /// logits, append it to the slot's cache and compute the logits after it
    /// (all slots in one batched forward pass). Returns one output per input,
    /// in order: a slot whose own step failed (its response format admits
    /// no next token, say) gets its error there and is not fed, so one
    /// request's failure never ends the others'. `Err` is for failures of
    /// the whole batch (the forward pass).
    fn decode_step(
        &self,
        batch: &mut [(&mut Self::Slot, &SamplingParams)],
    ) -> Result<Vec<Result<StepOutput, BackendError>>, BackendError>;
}
