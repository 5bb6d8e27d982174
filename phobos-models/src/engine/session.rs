//! A session: one conversation's tokens, its KV cache and, for models with
//! linear-attention (DeltaNet) layers, their recurrent state.
//!
//! A recurrent state cannot be cut back to an earlier position the way a
//! KV cache can, so the session keeps checkpoints: copies of every
//! recurrent layer's state at the end of each forward pass that fed it two
//! or more tokens (a prompt or a piece of one), the newest
//! [`MAX_CHECKPOINTS`]. [`Session::truncate`] to `n` tokens restores the
//! newest checkpoint at or before `n` (or the empty state) and remembers
//! that the tokens between it and `n` still have to run through the
//! recurrent layers; the next forward pass replays them first (without
//! logits), so after `truncate(n)` the session answers exactly as one
//! that was fed its first `n` tokens. Decode steps (one token) take no
//! checkpoint: a state is megabytes in a real model.

use half::f16;

/// Checkpoints of recurrent state a session keeps (the newest).
pub const MAX_CHECKPOINTS: usize = 8;

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

/// One linear-attention layer's state for one sequence (both empty in
/// attention layers).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RecurrentLayer {
    /// The short convolution's last inputs (`ops::conv`).
    pub conv: Vec<f32>,
    /// The gated delta rule's state matrices (`ops::deltanet`).
    pub ssm: Vec<f32>,
}

impl RecurrentLayer {
    pub fn zeroed(conv_len: usize, ssm_len: usize) -> RecurrentLayer {
        RecurrentLayer {
            conv: vec![0.0; conv_len],
            ssm: vec![0.0; ssm_len],
        }
    }

    fn reset(&mut self) {
        self.conv.fill(0.0);
        self.ssm.fill(0.0);
    }

    fn n_bytes(&self) -> usize {
        (self.conv.len() + self.ssm.len()) * std::mem::size_of::<f32>()
    }
}

#[derive(Debug, Clone)]
struct Checkpoint {
    n_tokens: usize,
    layers: Vec<RecurrentLayer>,
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
    /// Per layer; every entry empty for models without recurrent layers.
    pub(crate) recurrent: Vec<RecurrentLayer>,
    /// Tokens the recurrent state has consumed: `tokens.len()`, or fewer
    /// after a truncation restored an older checkpoint (the rest are
    /// replayed by the next forward pass).
    pub(crate) recurrent_len: usize,
    checkpoints: Vec<Checkpoint>,
}

impl Session {
    pub(crate) fn new(
        model_id: u64,
        n_ctx: usize,
        n_layer: usize,
        recurrent_state_lens: &[(usize, usize)],
    ) -> Session {
        let recurrent = recurrent_state_lens
            .iter()
            .map(|&(conv, ssm)| RecurrentLayer::zeroed(conv, ssm))
            .collect();
        Session {
            model_id,
            n_ctx,
            tokens: Vec::new(),
            kv: vec![KvLayer::default(); n_layer],
            recurrent,
            recurrent_len: 0,
            checkpoints: Vec::new(),
        }
    }

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
    /// a new prompt shares, then feed only the rest). With recurrent
    /// layers this restores a checkpoint; see the module docs.
    pub fn truncate(&mut self, n_tokens: usize) {
        let n = n_tokens.min(self.tokens.len());
        self.tokens.truncate(n);
        for layer in &mut self.kv {
            layer.truncate(n);
        }
        if !self.has_recurrent() {
            self.recurrent_len = n;
        } else if self.recurrent_len > n {
            self.rewind_recurrent(n);
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

    /// Bytes of recurrent state: the live state and its checkpoints (0 for
    /// models without recurrent layers).
    pub fn recurrent_bytes(&self) -> usize {
        let state: usize = self.recurrent.iter().map(RecurrentLayer::n_bytes).sum();
        state * (1 + self.checkpoints.len())
    }

    /// Positions of the checkpoints held now, oldest first.
    pub fn checkpoint_positions(&self) -> Vec<usize> {
        self.checkpoints.iter().map(|c| c.n_tokens).collect()
    }

    pub(crate) fn has_recurrent(&self) -> bool {
        self.recurrent
            .iter()
            .any(|l| !l.conv.is_empty() || !l.ssm.is_empty())
    }

    /// Tokens held but not yet run through the recurrent layers.
    pub(crate) fn pending_replay(&self) -> &[u32] {
        if !self.has_recurrent() {
            return &[];
        }
        &self.tokens[self.recurrent_len.min(self.tokens.len())..]
    }

    /// Restores the newest checkpoint at or before `n` tokens (the empty
    /// state when there is none); the tokens after it await replay.
    pub(crate) fn rewind_recurrent(&mut self, n: usize) {
        self.checkpoints.retain(|c| c.n_tokens <= n);
        match self.checkpoints.last() {
            Some(c) => {
                for (live, saved) in self.recurrent.iter_mut().zip(&c.layers) {
                    live.clone_from(saved);
                }
                self.recurrent_len = c.n_tokens;
            }
            None => {
                self.recurrent.iter_mut().for_each(RecurrentLayer::reset);
                self.recurrent_len = 0;
            }
        }
    }

    /// After a forward pass fed `n_fed` tokens (replayed ones included):
    /// the recurrent state is current, and a pass of two or more tokens
    /// leaves a checkpoint.
    pub(crate) fn commit_recurrent(&mut self, n_fed: usize) {
        self.recurrent_len = self.tokens.len();
        if n_fed < 2 || !self.has_recurrent() {
            return;
        }
        if self.checkpoints.last().map(|c| c.n_tokens) == Some(self.recurrent_len) {
            return;
        }
        if self.checkpoints.len() == MAX_CHECKPOINTS {
            self.checkpoints.remove(0);
        }
        self.checkpoints.push(Checkpoint {
            n_tokens: self.recurrent_len,
            layers: self.recurrent.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> Session {
        Session::new(1, 64, 2, &[(2, 3), (0, 0)])
    }

    /// Stands in for a forward pass: the state becomes a function of the
    /// tokens so a restore can be checked.
    fn feed(s: &mut Session, tokens: &[u32]) {
        let replay = s.pending_replay().len();
        s.tokens.extend_from_slice(tokens);
        let marker = s.tokens.iter().map(|&t| t as f32).sum::<f32>();
        s.recurrent[0].conv.fill(marker);
        s.recurrent[0].ssm.fill(-marker);
        s.commit_recurrent(replay + tokens.len());
    }

    #[test]
    fn truncation_restores_the_newest_checkpoint_before_it() {
        let mut s = session();
        feed(&mut s, &[1, 2, 3]);
        feed(&mut s, &[4]);
        feed(&mut s, &[5, 6]);
        assert_eq!(s.checkpoint_positions(), [3, 6]);
        s.truncate(5);
        assert_eq!(s.len(), 5);
        assert_eq!(s.recurrent_len, 3);
        assert_eq!(s.pending_replay(), [4, 5]);
        assert_eq!(s.recurrent[0].conv, [6.0, 6.0]);
        assert_eq!(s.checkpoint_positions(), [3]);
        s.truncate(2);
        assert_eq!(s.recurrent_len, 0);
        assert_eq!(s.recurrent[0].ssm, [0.0; 3]);
        assert_eq!(s.pending_replay(), [1, 2]);
    }

    #[test]
    fn truncating_at_the_end_keeps_the_live_state() {
        let mut s = session();
        feed(&mut s, &[1, 2, 3]);
        feed(&mut s, &[4]);
        s.truncate(4);
        assert_eq!(s.recurrent_len, 4);
        assert!(s.pending_replay().is_empty());
        assert_eq!(s.recurrent[0].conv, [10.0, 10.0]);
    }

    #[test]
    fn only_the_newest_checkpoints_are_kept() {
        let mut s = session();
        for i in 0..MAX_CHECKPOINTS as u32 + 3 {
            feed(&mut s, &[i, i]);
        }
        let positions = s.checkpoint_positions();
        assert_eq!(positions.len(), MAX_CHECKPOINTS);
        assert_eq!(positions.last(), Some(&s.len()));
        assert_eq!(s.recurrent_bytes(), 5 * 4 * (1 + MAX_CHECKPOINTS));
    }

    #[test]
    fn models_without_recurrent_layers_take_no_checkpoints() {
        let mut s = Session::new(1, 64, 2, &[(0, 0), (0, 0)]);
        s.tokens.extend_from_slice(&[1, 2, 3]);
        s.commit_recurrent(3);
        assert!(s.checkpoint_positions().is_empty());
        assert_eq!(s.recurrent_bytes(), 0);
        s.truncate(1);
        assert_eq!(s.recurrent_len, 1);
        assert!(s.pending_replay().is_empty());
    }
}
