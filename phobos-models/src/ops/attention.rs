//! Causal attention of a run of new tokens over a KV cache, with grouped
//! query heads and an optional sliding window.
//!
//! The cache holds keys and values in f16 (llama.cpp's default cache type)
//! for positions `0..pos0 + n_tokens`, one row of `n_head_kv * head_dim`
//! per position; the new tokens sit at positions `pos0..pos0 + n_tokens`.
//! Queries arrive already scaled.

use half::f16;
use rayon::prelude::*;

use super::softmax::softmax_in_place;

#[derive(Debug, Clone, Copy)]
pub struct AttentionShape {
    pub n_head: usize,
    pub n_head_kv: usize,
    pub head_dim_k: usize,
    pub head_dim_v: usize,
    /// A key at position `j` is hidden from a query at `p` when
    /// `p - j >= window` (llama.cpp's standard sliding window).
    pub window: Option<usize>,
    /// `softcap * tanh(score / softcap)` before the softmax, where the
    /// architecture has it.
    pub softcap: Option<f32>,
}

/// `q` is `[n_tokens][n_head * head_dim_k]`, `out` is
/// `[n_tokens][n_head * head_dim_v]`.
pub fn attention(
    shape: &AttentionShape,
    q: &[f32],
    pos0: usize,
    k_cache: &[f16],
    v_cache: &[f16],
    out: &mut [f32],
) {
    let s = *shape;
    let q_width = s.n_head * s.head_dim_k;
    let out_width = s.n_head * s.head_dim_v;
    let k_width = s.n_head_kv * s.head_dim_k;
    let v_width = s.n_head_kv * s.head_dim_v;
    let group = s.n_head / s.n_head_kv.max(1);
    out.par_chunks_mut(s.head_dim_v)
        .enumerate()
        .for_each(|(task, out_head)| {
            let (t, h) = (task / s.n_head, task % s.n_head);
            let pos = pos0 + t;
            let kv_h = h / group.max(1);
            let first = match s.window {
                Some(w) => (pos + 1).saturating_sub(w),
                None => 0,
            };
            let q_head = &q[t * q_width + h * s.head_dim_k..][..s.head_dim_k];
            let mut scores: Vec<f32> = (first..=pos)
                .map(|j| {
                    let k = &k_cache[j * k_width + kv_h * s.head_dim_k..][..s.head_dim_k];
                    let mut acc = 0f32;
                    for (a, b) in q_head.iter().zip(k) {
                        acc += a * b.to_f32();
                    }
                    match s.softcap {
                        Some(cap) => cap * (acc / cap).tanh(),
                        None => acc,
                    }
                })
                .collect();
            softmax_in_place(&mut scores);
            out_head.fill(0.0);
            for (j, &p) in (first..=pos).zip(&scores) {
                let v = &v_cache[j * v_width + kv_h * s.head_dim_v..][..s.head_dim_v];
                for (o, b) in out_head.iter_mut().zip(v) {
                    *o += p * b.to_f32();
                }
            }
        });
    debug_assert_eq!(out.len() % out_width.max(1), 0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn reference(
        s: &AttentionShape,
        q: &[f32],
        pos0: usize,
        k: &[f16],
        v: &[f16],
        n_tokens: usize,
    ) -> Vec<f64> {
        let mut out = vec![0f64; n_tokens * s.n_head * s.head_dim_v];
        let group = s.n_head / s.n_head_kv;
        for t in 0..n_tokens {
            let pos = pos0 + t;
            for h in 0..s.n_head {
                let kh = h / group;
                let mut scores = Vec::new();
                for j in 0..=pos {
                    if s.window.is_some_and(|w| pos - j >= w) {
                        continue;
                    }
                    let mut acc = 0f64;
                    for d in 0..s.head_dim_k {
                        acc += f64::from(q[t * s.n_head * s.head_dim_k + h * s.head_dim_k + d])
                            * f64::from(
                                k[j * s.n_head_kv * s.head_dim_k + kh * s.head_dim_k + d].to_f32(),
                            );
                    }
                    if let Some(cap) = s.softcap {
                        acc = f64::from(cap) * (acc / f64::from(cap)).tanh();
                    }
                    scores.push((j, acc));
                }
                let max = scores.iter().map(|x| x.1).fold(f64::NEG_INFINITY, f64::max);
                let denom: f64 = scores.iter().map(|x| (x.1 - max).exp()).sum();
                for &(j, sc) in &scores {
                    let p = (sc - max).exp() / denom;
                    for d in 0..s.head_dim_v {
                        out[t * s.n_head * s.head_dim_v + h * s.head_dim_v + d] += p * f64::from(
                            v[j * s.n_head_kv * s.head_dim_v + kh * s.head_dim_v + d].to_f32(),
                        );
                    }
                }
            }
        }
        out
    }

    proptest! {
        #[test]
        fn matches_f64_reference(n_head_kv in 1usize..3, group in 1usize..4, hd in 1usize..20, pos0 in 0usize..12, n_tokens in 1usize..6, window in proptest::option::of(1usize..8), softcap in proptest::option::of(5f32..50.0), seed in 0u64..10_000) {
            let s = AttentionShape { n_head: n_head_kv * group, n_head_kv, head_dim_k: hd, head_dim_v: hd, window, softcap };
            let n_pos = pos0 + n_tokens;
            let mut state = seed * 2 + 1;
            let mut next = || { state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); ((state >> 33) % 2001) as f32 / 500.0 - 2.0 };
            let q: Vec<f32> = (0..n_tokens * s.n_head * hd).map(|_| next()).collect();
            let k: Vec<f16> = (0..n_pos * n_head_kv * hd).map(|_| f16::from_f32(next())).collect();
            let v: Vec<f16> = (0..n_pos * n_head_kv * hd).map(|_| f16::from_f32(next())).collect();
            let mut out = vec![0f32; n_tokens * s.n_head * hd];
            attention(&s, &q, pos0, &k, &v, &mut out);
            let want = reference(&s, &q, pos0, &k, &v, n_tokens);
            for (g, w) in out.iter().zip(&want) {
                // Scores up to |q||k| ~ 4*hd summed in f32; values <= 2.
                prop_assert!((f64::from(*g) - w).abs() <= 1e-4 * (1.0 + hd as f64), "{g} vs {w}");
            }
        }
    }
}
