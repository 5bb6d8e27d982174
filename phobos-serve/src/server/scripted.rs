//! The test-only engine behind `--test-script FILE`: it "generates" text
//! given in a JSON script, as tokens of the model's real tokenizer, so that
//! everything around the engine (chat template, prompt tokens, prefix reuse,
//! streaming, stop strings, tool-call and reasoning parsing, batching,
//! cancellation) runs as it does with a real model. No weights are loaded.
//!
//! Script:
//! ```json
//! {"delay_ms_per_token": 0, "load_delay_ms": 0,
//!  "replies": [{"when_prompt_contains": "weather", "text": "<tool_call>...</tool_call>"}],
//!  "default": "Hello there!"}
//! ```
//! The first reply whose `when_prompt_contains` occurs in the decoded prompt
//! is emitted, then an end-of-generation token. Sampling parameters are
//! ignored; the reported log-probabilities are made up but consistent (the
//! chosen token is always the most likely).

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use phobos_models::chat::ChatTemplate;
use phobos_models::tokenizer::Tokenizer;
use serde::Deserialize;

use super::backend::{
    BackendError, InferenceBackend, ModelInfo, SamplingParams, StepOutput, TokenLogprob,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    #[serde(default)]
    pub delay_ms_per_token: u64,
    /// Pretend loading takes this long (to see /health answer 503).
    #[serde(default)]
    pub load_delay_ms: u64,
    #[serde(default)]
    pub replies: Vec<ScriptReply>,
    pub default: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptReply {
    pub when_prompt_contains: String,
    pub text: String,
}

pub struct ScriptedBackend {
    model_id: String,
    tokenizer: Tokenizer,
    template: ChatTemplate,
    context_len: usize,
    script: Script,
}

pub struct ScriptedSlot {
    cache: Vec<u32>,
    /// The reply still to emit, next token last.
    pending: Vec<u32>,
}

impl ScriptedBackend {
    pub fn new(
        model_id: String,
        tokenizer: Tokenizer,
        template: ChatTemplate,
        context_len: usize,
        script_path: &Path,
    ) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(script_path)
            .with_context(|| format!("reading the test script {}", script_path.display()))?;
        let script: Script = serde_json::from_str(&text)
            .with_context(|| format!("parsing the test script {}", script_path.display()))?;
        std::thread::sleep(Duration::from_millis(script.load_delay_ms));
        Ok(Self {
            model_id,
            tokenizer,
            template,
            context_len,
            script,
        })
    }

    fn reply_for(&self, prompt: &[u32]) -> &str {
        let text = self.tokenizer.decode(prompt, true);
        self.script
            .replies
            .iter()
            .find(|reply| text.contains(&reply.when_prompt_contains))
            .map_or(self.script.default.as_str(), |reply| reply.text.as_str())
    }
}

impl ModelInfo for ScriptedBackend {
    fn model_id(&self) -> &str {
        &self.model_id
    }
    fn backend_name(&self) -> &str {
        "scripted (test only)"
    }
    fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }
    fn chat_template(&self) -> &ChatTemplate {
        &self.template
    }
    fn context_len_per_slot(&self) -> usize {
        self.context_len
    }
}

impl InferenceBackend for ScriptedBackend {
    type Slot = ScriptedSlot;

    fn new_slot(&self) -> Result<ScriptedSlot, BackendError> {
        Ok(ScriptedSlot {
            cache: Vec::new(),
            pending: Vec::new(),
        })
    }

    fn cached_tokens<'a>(&self, slot: &'a ScriptedSlot) -> &'a [u32] {
        &slot.cache
    }

    fn ingest(
        &self,
        batch: &mut [(&mut ScriptedSlot, &[u32], &SamplingParams)],
    ) -> Result<Vec<usize>, BackendError> {
        let mut reused = Vec::with_capacity(batch.len());
        for (slot, prompt, _) in batch.iter_mut() {
            if prompt.is_empty() {
                return Err(BackendError("empty prompt".into()));
            }
            let common = slot
                .cache
                .iter()
                .zip(prompt.iter())
                .take_while(|(a, b)| a == b)
                .count()
                .min(prompt.len() - 1);
            slot.cache.truncate(common);
            slot.cache.extend_from_slice(&prompt[common..]);
            let reply = self.reply_for(prompt);
            let mut tokens = self
                .tokenizer
                .encode(reply, false, true)
                .map_err(|e| BackendError(format!("tokenizing the scripted reply: {e}")))?;
            if let Some(&end) = self.tokenizer.end_of_generation_ids().first() {
                tokens.push(end);
            }
            tokens.reverse();
            slot.pending = tokens;
            reused.push(common);
        }
        Ok(reused)
    }

    fn decode_step(
        &self,
        batch: &mut [(&mut ScriptedSlot, &SamplingParams)],
    ) -> Result<Vec<Result<StepOutput, BackendError>>, BackendError> {
        if self.script.delay_ms_per_token > 0 {
            std::thread::sleep(Duration::from_millis(self.script.delay_ms_per_token));
        }
        let n_vocab = self.tokenizer.n_tokens() as u32;
        let mut outputs = Vec::with_capacity(batch.len());
        for (slot, params) in batch.iter_mut() {
            let Some(token) = slot.pending.pop().or_else(|| self.tokenizer.eos_id()) else {
                outputs.push(Err(BackendError(
                    "the script ran out and the model has no EOS".into(),
                )));
                continue;
            };
            slot.cache.push(token);
            // Made-up but well-formed: the chosen token is the most likely,
            // the alternatives are the next ids, each less likely.
            let top_logprobs = (0..params.top_logprobs)
                .map(|rank| TokenLogprob {
                    id: (token + rank) % n_vocab.max(1),
                    logprob: -0.25 - 1.5 * rank as f32,
                })
                .collect();
            outputs.push(Ok(StepOutput {
                token,
                logprob: params.logprobs.then_some(-0.25),
                top_logprobs,
            }));
        }
        Ok(outputs)
    }
}
