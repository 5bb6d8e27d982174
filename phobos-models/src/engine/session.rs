//! A session: one conversation's tokens and its KV cache.

use half::f16;

/// Keys and values of one attention layer, one row per position, grown as
/// positions are written.
#[derive(Debug, Clone, Default)]
pub(crate) struct KvLayer {
    pub k: Vec<f16>,
    pub v: Vec<f16>,
    pub k_width: usize,
    pub v_width: usize,
}

impl KvLayer {
    pub fn truncate(&mut self, n_pos: usize) {
        self.k.truncate(n_pos * self.k_width);
        self.v.truncate(n_pos * self.v_width);
    }
}

/// The state of one sequence on a model: the tokens it has seen and their
/// keys and values. Created by `Model::new_session`; sessions are
/// independent, so several can run on one model from several threads.
#[derive(Debug, Clone)]
pub struct Session {
    pub(crate) model_id: u64,
    pub(crate) n_ctx: usize,
    pub(crate) tokens: Vec<u32>,
    pub(crate) kv: Vec<KvLayer>,
}

impl Session {
    /// Tokens whose keys and values are in the cache, in order.
    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The most tokens this session can hold.
    pub fn n_ctx(&self) -> usize {
        self.n_ctx
    }

    /// Forgets every token from `n_tokens` on (prefix reuse: keep the part
    /// a new prompt shares, then feed only the rest).
    pub fn truncate(&mut self, n_tokens: usize) {
        let n = n_tokens.min(self.tokens.len());
        self.tokens.truncate(n);
        for layer in &mut self.kv {
            layer.truncate(n);
        }
    }

    pub fn clear(&mut self) {
        self.truncate(0);
    }

    /// How many leading tokens `prompt` shares with this session.
    pub fn common_prefix_len(&self, prompt: &[u32]) -> usize {
        self.tokens
            .iter()
            .zip(prompt)
            .take_while(|(a, b)| a == b)
            .count()
    }

    /// Bytes the cache holds now.
    pub fn kv_bytes(&self) -> usize {
        self.kv
            .iter()
            .map(|l| (l.k.len() + l.v.len()) * std::mem::size_of::<f16>())
            .sum()
    }
}
