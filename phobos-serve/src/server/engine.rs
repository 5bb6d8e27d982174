//! The real engine behind the server: phobos-models' [`Model`] driven
//! through [`InferenceBackend`]. One slot is one engine [`Session`] plus the
//! logits after its last token and the request's sampler.

use std::sync::Arc;

use anyhow::Context;
use phobos_models::chat::ChatTemplate;
use phobos_models::engine::{Footprint, LogitsWanted, Model, SeqInput, Session};
use phobos_models::gguf::Gguf;
use phobos_models::sample::{SampledToken, Sampler, SamplerConfig};
use phobos_models::tokenizer::Tokenizer;

use super::ServeArgs;
use super::backend::{
    BackendError, InferenceBackend, ModelInfo, SamplingParams, StepOutput, TokenLogprob,
};
use super::json_format::{JsonConstraint, TokenPieces};
use super::load;

/// A loaded model served by the engine.
pub struct EngineBackend {
    model: Arc<Model>,
    model_id: String,
    template: ChatTemplate,
    context_len_per_slot: usize,
    /// Weights plus every slot full (KV cache, recurrent state and its
    /// checkpoints), fixed at load.
    memory_estimate_bytes: u64,
    /// Every token's bytes, for requests with a JSON `response_format`.
    pieces: TokenPieces,
}

/// One slot: its KV cache, the logits after its last cached token (empty
/// until a prompt is ingested) and the sampler of the request it serves.
pub struct EngineSlot {
    session: Session,
    logits: Vec<f32>,
    sampler: Sampler,
    /// The request's JSON constraint, following what it generated.
    json: Option<JsonConstraint>,
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
    let memory_estimate_bytes = memory_estimate_bytes(
        model.gguf().len_bytes(),
        &model.footprint(),
        args.parallel as usize,
        context_len_per_slot,
    );
    let pieces = TokenPieces::new(model.tokenizer());
    Ok(EngineBackend {
        pieces,
        model,
        model_id: load::model_id(args),
        template,
        context_len_per_slot,
        memory_estimate_bytes,
    })
}

/// The file (weights, mapped) and `n_slots` sessions at their largest:
/// a full KV cache of `context_len_per_slot` tokens, and for models with
/// DeltaNet layers the recurrent state plus its checkpoints.
fn memory_estimate_bytes(
    file_bytes: u64,
    footprint: &Footprint,
    n_slots: usize,
    context_len_per_slot: usize,
) -> u64 {
    let per_slot = footprint.session_bytes_max(context_len_per_slot);
    file_bytes.saturating_add(per_slot.saturating_mul(n_slots.max(1) as u64))
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
        self.memory_estimate_bytes
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
            json: None,
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
            slot.json = params.json_format.clone().map(JsonConstraint::new);
        }
        Ok(reused)
    }

    fn decode_step(
        &self,
        batch: &mut [(&mut EngineSlot, &SamplingParams)],
    ) -> Result<Vec<Result<StepOutput, BackendError>>, BackendError> {
        let mut outputs = Vec::with_capacity(batch.len());
        for (slot, params) in batch.iter_mut() {
            outputs.push(sample_slot(&self.pieces, slot, params));
        }
        // One batched forward over every slot with room for the new token;
        // a full slot keeps its cache and the scheduler ends it (length).
        let mut inputs = Vec::with_capacity(batch.len());
        let mut fed = Vec::with_capacity(batch.len());
        let next_tokens: Vec<[u32; 1]> = outputs
            .iter()
            .map(|output| [output.as_ref().map_or(0, |output| output.token)])
            .collect();
        for (index, ((slot, _), token)) in batch.iter_mut().zip(&next_tokens).enumerate() {
            if outputs[index].is_ok() && slot.session.len() < slot.session.n_ctx() {
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

/// Samples one slot's next token from its logits (bias, JSON format and
/// log-probabilities applied); an error ends only this slot's request.
fn sample_slot(
    pieces: &TokenPieces,
    slot: &mut EngineSlot,
    params: &SamplingParams,
) -> Result<StepOutput, BackendError> {
    if slot.logits.is_empty() {
        return Err(BackendError(
            "a slot was stepped before its prompt was ingested".into(),
        ));
    }
    for &(id, bias) in &params.logit_bias {
        if let Some(logit) = slot.logits.get_mut(id as usize) {
            *logit += bias;
        }
    }
    let wants_logprobs = params.logprobs || params.top_logprobs > 0;
    let n_top = params.top_logprobs as usize;
    let sampled = match &mut slot.json {
        Some(json) => json
            .sample(
                &mut slot.sampler,
                pieces,
                &slot.logits,
                wants_logprobs.then_some(n_top),
            )
            .map_err(engine_error)?,
        None if wants_logprobs => slot.sampler.sample(&slot.logits, n_top),
        None => SampledToken {
            id: slot.sampler.sample_id(&slot.logits),
            logprob: 0.0,
            top_logprobs: Vec::new(),
        },
    };
    Ok(StepOutput {
        token: sampled.id,
        logprob: params.logprobs.then_some(sampled.logprob),
        top_logprobs: sampled
            .top_logprobs
            .iter()
            .map(|&(id, logprob)| TokenLogprob { id, logprob })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use phobos_models::engine::MAX_CHECKPOINTS;

    #[test]
    fn the_estimate_counts_every_slot_with_its_recurrent_checkpoints() {
        let footprint = Footprint {
            weights_mapped_bytes: 900,
            weights_f32_bytes: 0,
            weights_resident_bytes: None,
            weights_copied_bytes: 0,
            kv_bytes_per_token: 10,
            recurrent_bytes_per_session: 7,
            scratch_bytes_per_row: 0,
            logits_bytes_per_row: 0,
        };
        let per_slot = 10 * 64 + 7 * (1 + MAX_CHECKPOINTS as u64);
        assert_eq!(
            memory_estimate_bytes(1000, &footprint, 3, 64),
            1000 + 3 * per_slot
        );
    }
}
