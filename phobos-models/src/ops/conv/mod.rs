//! Short causal convolution over time, one filter per channel, with a
//! rolling state: Qwen3.5's linear-attention layers run their mixed
//! Q/K/V projection through it (ggml's `ssm_conv` with the conv state of
//! llama.cpp's recurrent cache).
//!
//! For a kernel of `k` taps the output of token `t` in channel `c` is
//! `sum_i w[c][i] * in[t + i - (k - 1)][c]`, `i = 0..k`: the newest input
//! meets the last tap. Inputs before the first new token come from the
//! state, the `k - 1` most recent inputs of the sequence so far (zeros for
//! a new sequence), so a prompt run whole or in pieces gives the same
//! outputs. Each sum runs over the taps in order in f32, as ggml's does.

mod handle;

pub use handle::causal_conv1d_launch;

/// One sequence's conv state: for every channel its last `kernel - 1`
/// inputs, oldest first (`[channels][kernel - 1]`).
pub fn conv_state_len(channels: usize, kernel: usize) -> usize {
    channels * kernel.saturating_sub(1)
}

/// `x` is `[n_tokens][channels]`, `weights` `[channels][kernel]` (ggml
/// dims `[kernel, channels]`), `state` as [`conv_state_len`]; writes
/// `out` (`[n_tokens][channels]`) and advances `state` past `x`.
pub fn causal_conv1d(
    state: &mut [f32],
    x: &[f32],
    weights: &[f32],
    kernel: usize,
    out: &mut [f32],
) {
    let channels = weights.len().checked_div(kernel).unwrap_or(0);
    if channels == 0 {
        return;
    }
    let history = kernel - 1;
    let n_tokens = x.len() / channels;
    debug_assert_eq!(state.len(), conv_state_len(channels, kernel));
    debug_assert_eq!(out.len(), x.len());
    // One channel's inputs: its state, then the new tokens.
    let mut window = vec![0f32; history + n_tokens];
    for c in 0..channels {
        let taps = &weights[c * kernel..(c + 1) * kernel];
        let channel_state = &mut state[c * history..(c + 1) * history];
        window[..history].copy_from_slice(channel_state);
        for t in 0..n_tokens {
            window[history + t] = x[t * channels + c];
        }
        for t in 0..n_tokens {
            let mut sum = 0f32;
            for (w, v) in taps.iter().zip(&window[t..t + kernel]) {
                sum += v * w;
            }
            out[t * channels + c] = sum;
        }
        channel_state.copy_from_slice(&window[n_tokens..n_tokens + history]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Straight from the definition, in f64, over the whole sequence.
    fn reference(x: &[f32], weights: &[f32], kernel: usize, channels: usize) -> Vec<f64> {
        let n = x.len() / channels;
        let mut out = vec![0f64; x.len()];
        for t in 0..n {
            for c in 0..channels {
                for i in 0..kernel {
                    // Input index t + i - (kernel - 1); before 0 it is zero.
                    if let Some(src) = (t + i).checked_sub(kernel - 1) {
                        out[t * channels + c] +=
                            f64::from(weights[c * kernel + i]) * f64::from(x[src * channels + c]);
                    }
                }
            }
        }
        out
    }

    pub(super) fn values(seed: u64, n: usize) -> Vec<f32> {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state % 2001) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

    proptest! {
        /// Any split of the sequence into pieces (including pieces shorter
        /// than the state) gives the reference outputs.
        #[test]
        fn pieces_match_the_f64_reference(kernel in 1usize..6, channels in 1usize..9, n_tokens in 1usize..20, cut_a in 0usize..20, cut_b in 0usize..20, seed in 0u64..10_000) {
            let x = values(seed, n_tokens * channels);
            let weights = values(seed + 1, channels * kernel);
            let want = reference(&x, &weights, kernel, channels);
            let (a, b) = (cut_a.min(n_tokens), cut_b.min(n_tokens));
            let cuts = [0, a.min(b), a.max(b), n_tokens];
            let mut state = vec![0f32; conv_state_len(channels, kernel)];
            let mut got = vec![0f32; x.len()];
            for w in cuts.windows(2) {
                let (lo, hi) = (w[0] * channels, w[1] * channels);
                causal_conv1d(&mut state, &x[lo..hi], &weights, kernel, &mut got[lo..hi]);
            }
            for (g, r) in got.iter().zip(&want) {
                // At most 5 products of magnitude <= 1 summed in f32.
                prop_assert!((f64::from(*g) - r).abs() <= 1e-6 * kernel as f64, "{g} vs {r}");
            }
            // The state holds the last kernel - 1 inputs (zeros before the start).
            for c in 0..channels {
                for j in 0..kernel - 1 {
                    let src = (n_tokens + j).checked_sub(kernel - 1);
                    let want = src.map_or(0.0, |s| x[s * channels + c]);
                    prop_assert_eq!(state[c * (kernel - 1) + j], want);
                }
            }
        }
    }

    #[test]
    fn newest_input_meets_the_last_tap() {
        // Kernel [0, 0, 1]: the output is the input itself; [1, 0, 0]: the
        // input two tokens back.
        let x = [1.0, 2.0, 3.0, 4.0];
        let mut state = vec![0f32; 2];
        let mut out = [0f32; 4];
        causal_conv1d(&mut state, &x, &[0.0, 0.0, 1.0], 3, &mut out);
        assert_eq!(out, x);
        let mut state = vec![0f32; 2];
        causal_conv1d(&mut state, &x, &[1.0, 0.0, 0.0], 3, &mut out);
        assert_eq!(out, [0.0, 0.0, 1.0, 2.0]);
        assert_eq!(state, [3.0, 4.0]);
    }
}
