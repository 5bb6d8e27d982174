//! `response_format` made real: output constrained to JSON, or to JSON of
//! a schema, while it is sampled.
//!
//! A [`JsonMatcher`] follows the text generated so far. At each step the
//! sampler draws as usual; a token whose bytes the matcher refuses is
//! dropped and the draw is repeated over the tokens it accepts (every
//! other logit set to minus infinity), so the common case costs one check
//! and the fallback one pass over the vocabulary. End-of-generation tokens
//! are allowed exactly when the value is complete, and nothing else then.

mod framed;
mod matcher;
mod schema;
#[cfg(test)]
mod tests;

use phobos_models::sample::{SampledToken, Sampler};
use phobos_models::tokenizer::Tokenizer;

use framed::FramedMatcher;
pub use framed::{Alternative, JsonFormat, MAX_ALTERNATIVES};
pub use matcher::JsonMatcher;
pub use schema::JsonShape;

/// Every token's bytes as the matcher sees them (control tokens are empty
/// and never allowed), and which ones end generation.
#[derive(Debug)]
pub struct TokenPieces {
    pieces: Vec<Box<[u8]>>,
    end_of_generation: Vec<bool>,
}

impl TokenPieces {
    pub fn new(tokenizer: &Tokenizer) -> Self {
        let n = tokenizer.n_tokens();
        let ids = 0..n as u32;
        Self {
            pieces: ids
                .clone()
                .map(|id| tokenizer.token_to_piece(id, false).into_boxed_slice())
                .collect(),
            end_of_generation: ids.map(|id| tokenizer.is_end_of_generation(id)).collect(),
        }
    }

    pub fn piece(&self, id: u32) -> &[u8] {
        self.pieces.get(id as usize).map_or(&[], |p| p)
    }

    fn ends_generation(&self, id: u32) -> bool {
        self.end_of_generation
            .get(id as usize)
            .copied()
            .unwrap_or(false)
    }
}

/// A request's constraint in a slot: the matcher over what it generated.
#[derive(Debug, Clone)]
pub struct JsonConstraint {
    matcher: FramedMatcher,
    scratch: FramedMatcher,
}

/// No token can continue the text (a model whose vocabulary cannot spell
/// what the schema needs next, or no end-of-generation token).
#[derive(Debug, thiserror::Error)]
#[error("no token of the vocabulary continues the JSON the response format asks for")]
pub struct NoAllowedToken;

impl JsonConstraint {
    pub fn new(format: JsonFormat) -> Self {
        let matcher = FramedMatcher::new(format);
        Self {
            scratch: matcher.clone(),
            matcher,
        }
    }

    /// Whether token `id` may come next.
    pub fn allows(&mut self, pieces: &TokenPieces, id: u32) -> bool {
        if pieces.ends_generation(id) {
            return self.matcher.can_end();
        }
        if self.matcher.is_finished() {
            return false;
        }
        self.scratch.clone_from(&self.matcher);
        self.scratch.feed_all(pieces.piece(id))
    }

    /// Draws the next token among the allowed ones and advances the
    /// matcher past it. Log-probabilities (when `n_top_logprobs` is
    /// `Some`) are the model's own, before the constraint.
    pub fn sample(
        &mut self,
        sampler: &mut Sampler,
        pieces: &TokenPieces,
        logits: &[f32],
        n_top_logprobs: Option<usize>,
    ) -> Result<SampledToken, NoAllowedToken> {
        let id = sampler
            .sample_id_constrained(logits, &mut |id| self.allows(pieces, id))
            .ok_or(NoAllowedToken)?;
        if !pieces.ends_generation(id) && !self.matcher.feed_all(pieces.piece(id)) {
            return Err(NoAllowedToken);
        }
        Ok(match n_top_logprobs {
            Some(n) => {
                let (logprob, top_logprobs) = phobos_models::sample::log_probs(logits, id, n);
                SampledToken {
                    id,
                    logprob,
                    top_logprobs,
                }
            }
            None => SampledToken {
                id,
                logprob: 0.0,
                top_logprobs: Vec::new(),
            },
        })
    }
}
