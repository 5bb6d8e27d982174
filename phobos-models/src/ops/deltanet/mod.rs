//! The gated delta rule: the recurrence of Qwen3.5's linear-attention
//! layers (ggml's `gated_delta_net`), and the L2 normalisation of its
//! queries and keys.
//!
//! Each value head keeps a state matrix `S` (`head_dim` keys by
//! `head_dim` values). Per token, with the head's query `q` and key `k`
//! (both L2-normalised), value `v`, log decay `g` (<= 0) and write
//! strength `beta` (in (0, 1)):
//!
//! ```text
//! S     = exp(g) * S
//! delta = beta * (v - S^T k)
//! S     = S + k delta^T
//! o     = S^T q / sqrt(head_dim)
//! ```
//!
//! Value head `h` reads key head `h % n_k_heads` (ggml tiles the key heads
//! over the value heads rather than repeating each). The state is stored
//! transposed (`[value j][key i]`) so every dot runs over contiguous
//! memory; the order of the f32 operations follows ggml's. A sequence run
//! whole, in pieces or a token at a time goes through the same steps.

use rayon::prelude::*;

mod gates;
mod handle;

pub use gates::{
    deltanet_gates, deltanet_gates_with, l2_norm, l2_norm_with, mul_silu, mul_silu_with,
    silu_in_place, silu_in_place_with,
};
pub use handle::gated_delta_rule_launch;

/// Heads and head width of one layer's recurrence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeltaNetShape {
    pub n_k_heads: usize,
    pub n_v_heads: usize,
    /// Width of every query, key and value head (ggml requires them equal).
    pub head_dim: usize,
}

impl DeltaNetShape {
    /// Floats of one sequence's state: a `head_dim` square per value head.
    pub fn state_len(&self) -> usize {
        self.n_v_heads * self.head_dim * self.head_dim
    }
}

/// One sequence's new tokens: `q`, `k` are `[n_tokens][n_k_heads * d]`,
/// `v` and `out` `[n_tokens][n_v_heads * d]`, `g` and `beta`
/// `[n_tokens][n_v_heads]`; `state` ([`DeltaNetShape::state_len`]) is
/// advanced past the tokens.
#[allow(clippy::too_many_arguments)]
pub fn gated_delta_rule(
    shape: &DeltaNetShape,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    g: &[f32],
    beta: &[f32],
    state: &mut [f32],
    out: &mut [f32],
) {
    let d = shape.head_dim;
    let (n_k, n_v) = (shape.n_k_heads, shape.n_v_heads);
    if d == 0 || n_k == 0 || n_v == 0 {
        return;
    }
    let n_tokens = v.len() / (n_v * d);
    debug_assert_eq!(state.len(), shape.state_len());
    debug_assert_eq!(q.len(), n_tokens * n_k * d);
    debug_assert_eq!(k.len(), q.len());
    debug_assert_eq!(g.len(), n_tokens * n_v);
    debug_assert_eq!(beta.len(), g.len());
    let scale = 1.0 / (d as f32).sqrt();
    // Each head runs its tokens in order into its own output column block.
    let per_head: Vec<Vec<f32>> = state
        .par_chunks_mut(d * d)
        .enumerate()
        .map(|(h, s)| {
            let hk = h % n_k;
            let mut head_out = vec![0f32; n_tokens * d];
            let mut delta = vec![0f32; d];
            for t in 0..n_tokens {
                let q_t = &q[(t * n_k + hk) * d..][..d];
                let k_t = &k[(t * n_k + hk) * d..][..d];
                let v_t = &v[(t * n_v + h) * d..][..d];
                let decay = g[t * n_v + h].exp();
                let b = beta[t * n_v + h];
                s.iter_mut().for_each(|x| *x *= decay);
                for (j, dj) in delta.iter_mut().enumerate() {
                    *dj = (v_t[j] - dot(&s[j * d..(j + 1) * d], k_t)) * b;
                }
                for (j, &dj) in delta.iter().enumerate() {
                    for (x, &ki) in s[j * d..(j + 1) * d].iter_mut().zip(k_t) {
                        *x += ki * dj;
                    }
                }
                let o = &mut head_out[t * d..(t + 1) * d];
                for (j, oj) in o.iter_mut().enumerate() {
                    *oj = dot(&s[j * d..(j + 1) * d], q_t) * scale;
                }
            }
            head_out
        })
        .collect();
    for (h, head_out) in per_head.iter().enumerate() {
        for t in 0..n_tokens {
            out[(t * n_v + h) * d..][..d].copy_from_slice(&head_out[t * d..(t + 1) * d]);
        }
    }
}

/// f32 dot with eight partial sums (as ggml's SIMD dot accumulates).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    crate::ops::matmul::dot_f32(a, b)
}

/// L2-normalises each `width`-wide run of `x` in place the way llama.cpp
/// builds it for the gated delta net: an RMS norm with `eps / width` (sum
/// of squares in f64, as ggml's `rms_norm`), then a scale by
/// `1 / sqrt(width)`, i.e. `x / sqrt(sum(x^2) + eps)`.
pub fn l2_norm_rows(x: &mut [f32], width: usize, eps: f32) {
    if width == 0 {
        return;
    }
    let n = width as f32;
    let post = 1.0 / n.sqrt();
    for row in x.chunks_mut(width) {
        let sum_sq: f64 = row.iter().map(|&v| f64::from(v * v)).sum();
        let mean = (sum_sq / width as f64) as f32;
        let scale = 1.0 / (mean + eps / n).sqrt();
        for v in row.iter_mut() {
            *v = *v * scale * post;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The recurrence in f64 with `S` stored the natural way (`[key][value]`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn reference(
        shape: &DeltaNetShape,
        q: &[f32],
        k: &[f32],
        v: &[f32],
        g: &[f32],
        beta: &[f32],
        n_tokens: usize,
    ) -> Vec<f64> {
        let d = shape.head_dim;
        let (n_k, n_v) = (shape.n_k_heads, shape.n_v_heads);
        let mut out = vec![0f64; n_tokens * n_v * d];
        for h in 0..n_v {
            let hk = h % n_k;
            let mut s = vec![vec![0f64; d]; d];
            for t in 0..n_tokens {
                let at = |x: &[f32], heads: usize, head: usize, i: usize| {
                    f64::from(x[(t * heads + head) * d + i])
                };
                let decay = f64::from(g[t * n_v + h]).exp();
                let b = f64::from(beta[t * n_v + h]);
                s.iter_mut().flatten().for_each(|x| *x *= decay);
                let delta: Vec<f64> = (0..d)
                    .map(|j| {
                        let sk: f64 = (0..d).map(|i| s[i][j] * at(k, n_k, hk, i)).sum();
                        b * (at(v, n_v, h, j) - sk)
                    })
                    .collect();
                for (i, row) in s.iter_mut().enumerate() {
                    for (x, dj) in row.iter_mut().zip(&delta) {
                        *x += at(k, n_k, hk, i) * dj;
                    }
                }
                for j in 0..d {
                    let sq: f64 = (0..d).map(|i| s[i][j] * at(q, n_k, hk, i)).sum();
                    out[(t * n_v + h) * d + j] = sq / (d as f64).sqrt();
                }
            }
        }
        out
    }

    pub(super) fn values(seed: u64, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                lo + (hi - lo) * ((state % 10_001) as f32 / 10_000.0)
            })
            .collect()
    }

    proptest! {
        /// Against the f64 reference, with the tokens fed in two pieces.
        #[test]
        fn pieces_match_the_f64_reference(n_k in 1usize..3, group in 1usize..3, d in 1usize..12, n_tokens in 1usize..10, cut in 0usize..10, seed in 0u64..10_000) {
            let shape = DeltaNetShape { n_k_heads: n_k, n_v_heads: n_k * group, head_dim: d };
            let n_v = shape.n_v_heads;
            let mut q = values(seed, n_tokens * n_k * d, -1.0, 1.0);
            let mut k = values(seed + 1, n_tokens * n_k * d, -1.0, 1.0);
            l2_norm_rows(&mut q, d, 1e-6);
            l2_norm_rows(&mut k, d, 1e-6);
            let v = values(seed + 2, n_tokens * n_v * d, -2.0, 2.0);
            let g = values(seed + 3, n_tokens * n_v, -3.0, 0.0);
            let beta = values(seed + 4, n_tokens * n_v, 0.0, 1.0);
            let want = reference(&shape, &q, &k, &v, &g, &beta, n_tokens);
            let cut = cut.min(n_tokens);
            let mut state = vec![0f32; shape.state_len()];
            let mut got = vec![0f32; v.len()];
            let (kd, vd) = (n_k * d, n_v * d);
            gated_delta_rule(&shape, &q[..cut * kd], &k[..cut * kd], &v[..cut * vd], &g[..cut * n_v], &beta[..cut * n_v], &mut state, &mut got[..cut * vd]);
            gated_delta_rule(&shape, &q[cut * kd..], &k[cut * kd..], &v[cut * vd..], &g[cut * n_v..], &beta[cut * n_v..], &mut state, &mut got[cut * vd..]);
            // Unit keys keep the state bounded by the values (|v| <= 2, d
            // terms per sum): f32 rounding over a few dozen steps.
            for (gv, r) in got.iter().zip(&want) {
                prop_assert!((f64::from(*gv) - r).abs() <= 1e-5 * (1.0 + d as f64), "{gv} vs {r}");
            }
        }

        #[test]
        fn l2_norm_gives_unit_rows(width in 1usize..64, x in proptest::collection::vec(-10f32..10.0, 64)) {
            let mut got = x[..width].to_vec();
            l2_norm_rows(&mut got, width, 1e-6);
            let sum_sq: f64 = x[..width].iter().map(|&v| f64::from(v) * f64::from(v)).sum();
            for (g, &v) in got.iter().zip(&x[..width]) {
                let want = f64::from(v) / (sum_sq + 1e-6).sqrt();
                prop_assert!((f64::from(*g) - want).abs() <= 1e-6, "{g} vs {want}");
            }
        }
    }

    #[test]
    fn one_token_from_zero_state_writes_beta_v_along_k() {
        // S = k (beta v)^T, so o = (k . q) beta v / sqrt(d).
        let shape = DeltaNetShape {
            n_k_heads: 1,
            n_v_heads: 1,
            head_dim: 4,
        };
        let k = [1.0, 0.0, 0.0, 0.0];
        let q = [0.5, 0.5, 0.5, 0.5];
        let v = [2.0, -4.0, 6.0, 8.0];
        let mut state = vec![0f32; shape.state_len()];
        let mut out = [0f32; 4];
        gated_delta_rule(&shape, &q, &k, &v, &[-1.0], &[0.5], &mut state, &mut out);
        for (o, vj) in out.iter().zip(v) {
            assert!((o - 0.5 * 0.5 * vj / 2.0).abs() < 1e-6, "{o}");
        }
    }
}
