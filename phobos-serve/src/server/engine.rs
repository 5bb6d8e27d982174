//! The real engine behind the server: phobos-models' [`Model`] driven
//! through [`InferenceBackend`]. One slot is one engine [`Session`] plus the
//! logits after its last token and the request's sampler.

use std::sync::Arc;

use anyhow::Context;
use phobos_models::chat::ChatTemplate;
use phobos_models::engine::{LogitsWanted, Model, SeqInput, Session};
use phobos_models::gguf::Gguf;
use phobos_models::sample::{Sampler, SamplerConfig};
use phobos_models::tokenizer::Tokenizer;

use super::ServeArgs;
use super::backend::{
    BackendError, InferenceBackend, ModelInfo, SamplingParams, StepOutput, TokenLogprob,
};
use super::load;

/// A loaded model served by the engine.
pub struct EngineBackend {
    model: Arc<Model>,
    model_id: String,
    template: ChatTemplate,
    context_len_per_slot: usize,
}

/// One slot: its KV cache, the logits after its last cached token (empty
/// until a prompt is ingested) and the sampler of the request it serves.
pub struct EngineSlot {
    session: Session,
    logits: Vec<f32>,
    sampler: Sampler,
}

/// Loads `args.model` for serving. The context per slot is `--ctx-size`
/// (per slot, as documented), capped at the model's training context.
pub fn load(args: &ServeArgs) -> anyhow::Result<EngineBackend> {
    let model = crate::cli::load::load_model(&args.model, args.threads)?;
    let template_source =
        Gguf::open(&args.model).with_context(|| format!("opening {}", args.model.display()))?;
    let (_, template) =
        load::tokenizer_and_template(&template_source, args.chat_template_file.as_deref())
            .with_context(|| args.model.display().to_string())?;
    let requested = args.context_len_per_slot();
    let context_len_per_slot = requested.min(model.n_ctx_train()).max(1);
    if context_len_per_slot < requested {
        tracing::warn!(
            requested,
            n_ctx_train = model.n_ctx_train(),
            "--ctx-size is larger than the model's training context; using the model's"
        );
    }
    Ok(EngineBackend {
        model,
        model_id: load::model_id(args),
        template,
        context_len_per_slot,
    })
}

fn sampler_for(params: &SamplingParams) -> Sampler {
    let seed = params.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    Sampler::new(SamplerConfig {
        temperature: params.temperature,
        top_k: params.top_k as usize,
        top_p: params.top_p,
        min_p: params.min_p,
        repeat_penalty: params.repeat_penalty,
        presence_penalty: params.presence_penalty,
        frequency_penalty: params.frequency_penalty,
        seed,
        ..SamplerConfig::default()
    })
}

fn engine_error(err: impl std::fmt::Display) -> BackendError {
    BackendError(err.to_string())
}

impl ModelInfo for EngineBackend {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn backend_name(&self) -> &str {
        "cpu"
    }

    fn tokenizer(&self) -> &Tokenizer {
        self.model.tokenizer()
    }

    fn chat_template(&self) -> &ChatTemplate {
        &self.template
    }

    fn context_len_per_slot(&self) -> usize {
        self.context_len_per_slot
    }

    fn memory_bytes(&self) -> u64 {
        let weights = self.model.gguf().len_bytes();
        let kv = (self.model.kv_bytes_per_token() * self.context_len_per_slot) as u64;
        weights + kv
    }
}

impl InferenceBackend for EngineBackend {
    type Slot = EngineSlot;

    fn new_slot(&self) -> Result<EngineSlot, BackendError> {
        let session = self
            .model
            .new_session(self.context_len_per_slot)
            .map_err(engine_error)?;
        Ok(EngineSlot {
            session,
            logits: Vec::new(),
            sampler: Sampler::new(SamplerConfig::greedy()),
        })
    }

    fn cached_tokens<'a>(&self, slot: &'a EngineSlot) -> &'a [u32] {
        slot.session.tokens()
    }

    fn ingest(
        &self,
        batch: &mut [(&mut EngineSlot, &[u32], &SamplingParams)],
    ) -> Result<Vec<usize>, BackendError> {
        let mut reused = Vec::with_capacity(batch.len());
        for (slot, prompt, _) in batch.iter_mut() {
            if prompt.is_empty() {
                return Err(BackendError("the prompt has no tokens".into()));
            }
            // The last prompt token always runs, so its logits are fresh.
            let common = slot.session.common_prefix_len(prompt).min(prompt.len() - 1);
            slot.session.truncate(common);
            slot.logits.clear();
            reused.push(common);
        }
        let mut inputs: Vec<SeqInput<'_>> = batch
            .iter_mut()
            .zip(&reused)
            .map(|((slot, prompt, _), &common)| SeqInput {
                session: &mut slot.session,
                tokens: &prompt[common..],
                logits: LogitsWanted::Last,
            })
            .collect();
        let logits = self.model.forward(&mut inputs).map_err(engine_error)?;
        drop(inputs);
        for ((slot, prompt, params), slot_logits) in batch.iter_mut().zip(logits) {
            slot.logits = slot_logits;
            // The penalties look at the prompt too, as llama.cpp's do.
            slot.sampler = sampler_for(params);
            slot.sampler.accept(prompt);
        }
        Ok(reused)
    }

    fn decode_step(
        &self,
        batch: &mut [(&mut EngineSlot, &SamplingParams)],
    ) -> Result<Vec<StepOutput>, BackendError> {
        let mut outputs = Vec::with_capacity(batch.len());
        let mut next_tokens = Vec::with_capacity(batch.len());
        for (slot, params) in batch.iter_mut() {
            if slot.logits.is_empty() {
                return Err(BackendError(
                    "a slot was stepped before its prompt was ingested".into(),
                ));
            }
            let output = if params.logprobs || params.top_logprobs > 0 {
                let sampled = slot
                    .sampler
                    .sample(&slot.logits, params.top_logprobs as usize);
                StepOutput {
                    token: sampled.id,
                    logprob: params.logprobs.then_some(sampled.logprob),
                    top_logprobs: sampled
                        .top_logprobs
                        .iter()
                        .map(|&(id, logprob)| TokenLogprob { id, logprob })
                        .collect(),
                }
            } else {
                StepOutput {
                    token: slot.sampler.sample_id(&slot.logits),
                    logprob: None,
                    top_logprobs: Vec::new(),
                }
            };
            next_tokens.push([output.token]);
            outputs.push(output);
        }
        // One batched forward over every slot with room for the new token;
        // a full slot keeps its cache and the scheduler ends it (length).
        let mut inputs = Vec::with_capacity(batch.len());
        let mut fed = Vec::with_capacity(batch.len());
        for (index, ((slot, _), token)) in batch.iter_mut().zip(&next_tokens).enumerate() {
            if slot.session.len() < slot.session.n_ctx() {
                fed.push(index);
                inputs.push(SeqInput {
                    session: &mut slot.session,
                    tokens: token,
                    logits: LogitsWanted::Last,
                });
            }
        }
        let logits = if inputs.is_empty() {
            Vec::new()
        } else {
            self.model.forward(&mut inputs).map_err(engine_error)?
        };
        drop(inputs);
        for (index, slot_logits) in fed.into_iter().zip(logits) {
            batch[index].0.logits = slot_logits;
        }
        Ok(outputs)
    }
}
