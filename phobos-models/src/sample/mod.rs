//! The sampler chain, in llama.cpp's default order: penalties, top-k,
//! top-p, min-p, temperature, then a draw. Temperature `<= 0` is greedy
//! (argmax after the penalties), as in llama.cpp.
//!
//! Defaults are llama.cpp's: temperature 0.8, top-k 40, top-p 0.95,
//! min-p 0.05, penalty window 64, repeat penalty 1 (off), presence and
//! frequency penalties 0.

mod rng;

pub use rng::SplitMix64;

use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq)]
pub struct SamplerConfig {
    pub temperature: f32,
    /// 0 keeps every token.
    pub top_k: usize,
    pub top_p: f32,
    pub min_p: f32,
    pub repeat_penalty: f32,
    pub presence_penalty: f32,
    pub frequency_penalty: f32,
    /// How many recent tokens the penalties look at (0: none).
    pub penalty_last_n: usize,
    pub seed: u64,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        Self {
            temperature: 0.8,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.05,
            repeat_penalty: 1.0,
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
            penalty_last_n: 64,
            seed: 0xC0FFEE,
        }
    }
}

impl SamplerConfig {
    pub fn greedy() -> Self {
        Self {
            temperature: 0.0,
            ..Self::default()
        }
    }
}

/// A chosen token with its log-probability and the most likely
/// alternatives, all from the model's distribution before sampling (what
/// llama.cpp's `n_probs` reports).
#[derive(Debug, Clone, PartialEq)]
pub struct SampledToken {
    pub id: u32,
    pub logprob: f32,
    pub top_logprobs: Vec<(u32, f32)>,
}

/// A sampler with its own random state and penalty history.
#[derive(Debug, Clone)]
pub struct Sampler {
    config: SamplerConfig,
    rng: SplitMix64,
    history: Vec<u32>,
}

impl Sampler {
    pub fn new(config: SamplerConfig) -> Self {
        let rng = SplitMix64::new(config.seed);
        Self {
            config,
            rng,
            history: Vec::new(),
        }
    }

    pub fn config(&self) -> &SamplerConfig {
        &self.config
    }

    /// Records tokens the penalties should see (the prompt, accepted output).
    pub fn accept(&mut self, tokens: &[u32]) {
        self.history.extend_from_slice(tokens);
    }

    /// Picks the next token from `logits` and records it, with its
    /// log-probability and the `n_top_logprobs` most likely alternatives.
    pub fn sample(&mut self, logits: &[f32], n_top_logprobs: usize) -> SampledToken {
        let id = self.sample_id(logits);
        let (logprob, top_logprobs) = log_probs(logits, id, n_top_logprobs);
        SampledToken {
            id,
            logprob,
            top_logprobs,
        }
    }

    /// Picks the next token from `logits` and records it, without the
    /// log-probabilities (a log-softmax over the whole vocabulary, which a
    /// caller that does not report them should not pay for).
    pub fn sample_id(&mut self, logits: &[f32]) -> u32 {
        let id = self.choose(logits);
        self.history.push(id);
        id
    }

    /// Like [`Self::sample_id`], over only the tokens `allowed` accepts
    /// (constrained decoding). The unconstrained draw is tried first and
    /// kept when allowed, which makes the common case one check; otherwise
    /// a fresh draw is made over the logits with every refused token at
    /// minus infinity. With fresh randomness the two stages together draw
    /// token `t` with probability p(t) + (1 - A) p(t) / A = p(t) / A (A the
    /// allowed mass): exactly the masked distribution, without computing
    /// the mask in the common case. `None` when no token is allowed.
    pub fn sample_id_constrained(
        &mut self,
        logits: &[f32],
        allowed: &mut dyn FnMut(u32) -> bool,
    ) -> Option<u32> {
        let first = self.choose(logits);
        if allowed(first) {
            self.history.push(first);
            return Some(first);
        }
        let mut any_allowed = false;
        let masked: Vec<f32> = logits
            .iter()
            .enumerate()
            .map(|(id, &logit)| {
                if id as u32 != first && allowed(id as u32) {
                    any_allowed = true;
                    logit
                } else {
                    f32::NEG_INFINITY
                }
            })
            .collect();
        if !any_allowed {
            return None;
        }
        // Every allowed logit may itself be minus infinity; the draw then
        // still has to land on an allowed token.
        let id = self.choose(&masked);
        let id = if masked
            .get(id as usize)
            .is_some_and(|l| *l > f32::NEG_INFINITY)
        {
            id
        } else {
            (0..logits.len() as u32).find(|&t| t != first && allowed(t))?
        };
        self.history.push(id);
        Some(id)
    }

    fn choose(&mut self, logits: &[f32]) -> u32 {
        let penalized = self.penalized(logits);
        let logits: &[f32] = penalized.as_deref().unwrap_or(logits);
        let c = &self.config;
        if c.temperature <= 0.0 {
            return argmax_logits(logits);
        }
        // top-k: the k largest, sorted descending (everything sorted when 0).
        // Equal logits order by token id, so a seed gives the same draws
        // however the candidates were gathered. One pass over the
        // vocabulary with a running floor keeps this O(vocab) without
        // copying it: a full sort of a 262k vocabulary cost more than the
        // batched forward pass.
        let mut cand = if c.top_k > 0 && c.top_k < logits.len() {
            top_k_of(logits, c.top_k)
        } else {
            logits
                .iter()
                .enumerate()
                .map(|(i, &l)| (i as u32, l))
                .collect()
        };
        cand.sort_unstable_by(by_logit_desc);
        // top-p: the smallest head whose probability reaches p.
        if c.top_p < 1.0 {
            let probs = softmax_of(&cand);
            let mut cum = 0.0;
            let mut keep = cand.len();
            for (i, p) in probs.iter().enumerate() {
                cum += p;
                if cum >= f64::from(c.top_p) {
                    keep = i + 1;
                    break;
                }
            }
            cand.truncate(keep.max(1));
        }
        // min-p: tokens at least min_p times as likely as the best.
        if c.min_p > 0.0 && !cand.is_empty() {
            let threshold = cand[0].1 + c.min_p.ln();
            let keep = cand.iter().take_while(|x| x.1 >= threshold).count();
            cand.truncate(keep.max(1));
        }
        for x in &mut cand {
            x.1 /= c.temperature;
        }
        let probs = softmax_of(&cand);
        let r = self.rng.next_f64();
        let mut cum = 0.0;
        for (x, p) in cand.iter().zip(&probs) {
            cum += p;
            if r < cum {
                return x.0;
            }
        }
        cand.last().map_or(0, |x| x.0)
    }

    /// `logits` with the repetition, presence and frequency penalties
    /// applied to the tokens of the penalty window; `None` (use `logits`
    /// as they are) when no penalty is active.
    fn penalized(&self, logits: &[f32]) -> Option<Vec<f32>> {
        let c = &self.config;
        let neutral =
            c.repeat_penalty == 1.0 && c.presence_penalty == 0.0 && c.frequency_penalty == 0.0;
        if neutral || c.penalty_last_n == 0 {
            return None;
        }
        let start = self.history.len().saturating_sub(c.penalty_last_n);
        let mut counts: HashMap<u32, u32> = HashMap::new();
        for &t in &self.history[start..] {
            *counts.entry(t).or_default() += 1;
        }
        let mut out = logits.to_vec();
        for (&t, &n) in &counts {
            let Some(x) = out.get_mut(t as usize) else {
                continue;
            };
            if *x <= 0.0 {
                *x *= c.repeat_penalty;
            } else {
                *x /= c.repeat_penalty;
            }
            *x -= n as f32 * c.frequency_penalty + c.presence_penalty;
        }
        Some(out)
    }
}

/// The sampler's candidate order: larger logit first, then lower token id.
fn by_logit_desc(a: &(u32, f32), b: &(u32, f32)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

/// The `k` first candidates of `logits` in [`by_logit_desc`] order
/// (unsorted), `0 < k < logits.len()`. Candidates collect in a buffer of
/// `2k`; each time it fills, it is cut to its best `k`, whose last logit
/// becomes the floor a later token must beat. Tokens come in id order, so a
/// later token equal to the floor ranks after it and is rightly skipped.
fn top_k_of(logits: &[f32], k: usize) -> Vec<(u32, f32)> {
    let mut kept: Vec<(u32, f32)> = Vec::with_capacity(2 * k);
    let mut floor: Option<f32> = None;
    for (i, &l) in logits.iter().enumerate() {
        if floor.is_some_and(|f| l.total_cmp(&f).is_le()) {
            continue;
        }
        kept.push((i as u32, l));
        if kept.len() == 2 * k {
            kept.select_nth_unstable_by(k - 1, by_logit_desc);
            kept.truncate(k);
            floor = Some(kept[k - 1].1);
        }
    }
    if kept.len() > k {
        kept.select_nth_unstable_by(k - 1, by_logit_desc);
        kept.truncate(k);
    }
    kept
}

/// The largest logit's token; the lowest id among equals.
pub fn argmax(cand: &[(u32, f32)]) -> u32 {
    let mut best = (0u32, f32::NEG_INFINITY);
    for &(id, l) in cand {
        if l > best.1 {
            best = (id, l);
        }
    }
    best.0
}

/// Index of the largest value of `logits`.
pub fn argmax_logits(logits: &[f32]) -> u32 {
    let mut best = (0usize, f32::NEG_INFINITY);
    for (i, &l) in logits.iter().enumerate() {
        if l > best.1 {
            best = (i, l);
        }
    }
    best.0 as u32
}

fn softmax_of(cand: &[(u32, f32)]) -> Vec<f64> {
    let max = cand.iter().map(|x| x.1).fold(f32::NEG_INFINITY, f32::max);
    let exps: Vec<f64> = cand.iter().map(|x| f64::from(x.1 - max).exp()).collect();
    let sum: f64 = exps.iter().sum();
    exps.into_iter().map(|e| e / sum).collect()
}

/// Log-softmax of `logits` at `id`, and the `n` most likely tokens.
pub fn log_probs(logits: &[f32], id: u32, n: usize) -> (f32, Vec<(u32, f32)>) {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let log_sum = logits
        .iter()
        .map(|&l| f64::from(l - max).exp())
        .sum::<f64>()
        .ln();
    let lp = |l: f32| (f64::from(l - max) - log_sum) as f32;
    let chosen = logits
        .get(id as usize)
        .map_or(f32::NEG_INFINITY, |&l| lp(l));
    let mut top: Vec<(u32, f32)> = Vec::with_capacity(n + 1);
    if n > 0 {
        for (i, &l) in logits.iter().enumerate() {
            if top.len() < n || l > top[top.len() - 1].1 {
                let at = top.partition_point(|x| x.1 >= l);
                top.insert(at, (i as u32, l));
                top.truncate(n);
            }
        }
    }
    (chosen, top.into_iter().map(|(i, l)| (i, lp(l))).collect())
}

#[cfg(test)]
mod tests;
