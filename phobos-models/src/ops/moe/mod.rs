//! Mixture-of-experts feed-forward: a router picks `k` of `n_expert`
//! SwiGLU experts per token and sums their outputs with the router's
//! weights (llama.cpp's `build_moe_ffn`, softmax gating).
//!
//! Routing per token: softmax over the router's logits, the `k` largest
//! probabilities (ties to the lower expert id), then optionally normalised
//! to sum 1 (`norm_topk_prob`; the sum clamped below at 2^-14, F16's
//! smallest normal, as ggml does) and scaled. Expert outputs are summed in
//! the order of the selection (largest weight first), as ggml adds them.

use std::borrow::Cow;

use phobos_rt::host::qmatmul::with_shared_activations;

use super::matmul::{QMatmulError, QMatrixRef, matmul};
use super::rows::{Body, softmax, swiglu};
use super::softmax::softmax_in_place;

mod route;

use crate::quant::GgmlType;
pub use route::route_rows;

/// `n_expert` weight matrices of `rows` x `cols` stored one after another
/// (a ggml tensor of dims `[cols, rows, n_expert]`).
#[derive(Debug, Clone, Copy)]
pub struct ExpertsRef<'a> {
    pub ty: GgmlType,
    pub n_expert: usize,
    pub rows: usize,
    pub cols: usize,
    pub data: &'a [u8],
    /// Rows each expert has in `data`: `rows`, or more when these matrices
    /// are a part of a fused tensor (`ffn_gate_up_exps` holds each expert's
    /// gate rows, then its up rows).
    pub expert_rows: usize,
    /// The first of each expert's rows that belongs to these matrices.
    pub first_row: usize,
}

impl<'a> ExpertsRef<'a> {
    /// Expert `e`'s matrix; `None` when `data` does not hold it.
    pub fn expert(&self, e: usize) -> Option<QMatrixRef<'a>> {
        let whole = QMatrixRef {
            ty: self.ty,
            rows: self.rows,
            cols: self.cols,
            data: &[],
        };
        let row_bytes = whole.row_bytes()?;
        let first = e
            .checked_mul(self.expert_rows)?
            .checked_add(self.first_row)?;
        let data = self
            .data
            .get(first.checked_mul(row_bytes)?..)?
            .get(..self.rows * row_bytes)?;
        Some(QMatrixRef { data, ..whole })
    }
}

/// How the router's probabilities become expert weights.
#[derive(Debug, Clone, Copy)]
pub struct Routing {
    pub n_expert_used: usize,
    /// Renormalise the chosen probabilities to sum 1.
    pub normalize: bool,
    /// Multiplies the weights (1: none).
    pub scale: f32,
}

/// The smallest normal F16, ggml's floor for the renormalising sum.
const MIN_WEIGHT_SUM: f32 = 6.103_515_6e-5;

/// The experts and weights for one token from its router logits.
pub fn route(logits: &[f32], routing: &Routing) -> Vec<(usize, f32)> {
    let mut probs = logits.to_vec();
    softmax_in_place(&mut probs);
    route_probs(&probs, routing)
}

/// [`route`] from the router's probabilities (its logits' softmax).
pub fn route_probs(probs: &[f32], routing: &Routing) -> Vec<(usize, f32)> {
    let mut order: Vec<usize> = (0..probs.len()).collect();
    // Stable sort: equal probabilities keep the lower expert first.
    order.sort_by(|&a, &b| probs[b].total_cmp(&probs[a]));
    order.truncate(routing.n_expert_used.min(probs.len()));
    let mut chosen: Vec<(usize, f32)> = order.iter().map(|&e| (e, probs[e])).collect();
    if routing.normalize {
        let sum = chosen
            .iter()
            .map(|&(_, w)| w)
            .sum::<f32>()
            .max(MIN_WEIGHT_SUM);
        chosen.iter_mut().for_each(|(_, w)| *w /= sum);
    }
    if routing.scale != 1.0 {
        chosen.iter_mut().for_each(|(_, w)| *w *= routing.scale);
    }
    chosen
}

#[derive(Debug, thiserror::Error)]
pub enum MoeError {
    #[error("expert {expert} is outside the {n_expert} experts' weights")]
    Expert { expert: usize, n_expert: usize },
    #[error(transparent)]
    Matmul(#[from] QMatmulError),
    #[error(transparent)]
    RowOp(#[from] super::rows::RowOpError),
}

/// The expert weights of one layer.
#[derive(Debug, Clone, Copy)]
pub struct MoeWeights<'a> {
    /// `[n_expert][n_embd]` router.
    pub router: QMatrixRef<'a>,
    pub gate: ExpertsRef<'a>,
    pub up: ExpertsRef<'a>,
    pub down: ExpertsRef<'a>,
}

/// `x` is `[m][n_embd]`; returns `[m][n_embd]`. Tokens are grouped by
/// expert so each expert's weights are read once per batch.
pub fn moe_ffn(
    x: &[f32],
    m: usize,
    weights: &MoeWeights<'_>,
    routing: &Routing,
) -> Result<Vec<f32>, MoeError> {
    let n_embd = weights.router.cols;
    let n_expert = weights.router.rows;
    let mut logits = vec![0f32; m * n_expert];
    matmul(&weights.router, x, m, &mut logits)?;
    // The batch's gating rows in one launch.
    let mut probs = logits;
    softmax(&mut probs, n_expert)?;
    let choices = route_rows(&probs, n_expert, routing, Body::Launch)?;

    // (token, slot) pairs per expert.
    let mut by_expert: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n_expert];
    for (t, chosen) in choices.iter().enumerate() {
        for (slot, &(e, _)) in chosen.iter().enumerate() {
            by_expert[e].push((t, slot));
        }
    }
    let k = routing.n_expert_used.min(n_expert);
    // Each (token, slot)'s weighted expert output, summed in slot order below.
    let mut slot_out = vec![0f32; m * k * n_embd];
    // An expert that every token chose (always so for one token: decode)
    // reads `x` itself, so its gate and up launches, and every such expert,
    // share one quantization of `x`; others gather their tokens' rows and
    // share theirs between gate and up.
    with_shared_activations(x, || -> Result<(), MoeError> {
        for (e, pairs) in by_expert.iter().enumerate() {
            if pairs.is_empty() {
                continue;
            }
            let missing = || MoeError::Expert {
                expert: e,
                n_expert: weights.gate.n_expert,
            };
            let gate_w = weights.gate.expert(e).ok_or_else(missing)?;
            let up_w = weights.up.expert(e).ok_or_else(missing)?;
            let down_w = weights.down.expert(e).ok_or_else(missing)?;
            let n = pairs.len();
            let all_tokens = n == m && pairs.iter().enumerate().all(|(i, &(t, _))| t == i);
            let xe: Cow<'_, [f32]> = if all_tokens {
                Cow::Borrowed(x)
            } else {
                pairs
                    .iter()
                    .flat_map(|&(t, _)| x[t * n_embd..(t + 1) * n_embd].iter().copied())
                    .collect()
            };
            let n_ff = gate_w.rows;
            let mut gate = vec![0f32; n * n_ff];
            let mut up = vec![0f32; n * n_ff];
            let mut gate_up = || -> Result<(), QMatmulError> {
                matmul(&gate_w, &xe, n, &mut gate)?;
                matmul(&up_w, &xe, n, &mut up)
            };
            if all_tokens {
                gate_up()?;
            } else {
                with_shared_activations(&xe, gate_up)?;
            }
            swiglu(&mut gate, &up)?;
            let mut down = vec![0f32; n * n_embd];
            matmul(&down_w, &gate, n, &mut down)?;
            for (&(t, slot), row) in pairs.iter().zip(down.chunks(n_embd)) {
                let w = choices[t][slot].1;
                let dst = &mut slot_out[(t * k + slot) * n_embd..(t * k + slot + 1) * n_embd];
                for (d, &v) in dst.iter_mut().zip(row) {
                    *d = v * w;
                }
            }
        }
        Ok(())
    })?;
    let mut out = vec![0f32; m * n_embd];
    for (t, row) in out.chunks_mut(n_embd).enumerate() {
        for slot in 0..choices[t].len() {
            let src = &slot_out[(t * k + slot) * n_embd..(t * k + slot + 1) * n_embd];
            for (o, &v) in row.iter_mut().zip(src) {
                *o += v;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn f32_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn f32_experts(data: &[u8], n_expert: usize, rows: usize, cols: usize) -> ExpertsRef<'_> {
        ExpertsRef {
            ty: GgmlType::F32,
            n_expert,
            rows,
            cols,
            data,
            expert_rows: rows,
            first_row: 0,
        }
    }

    #[test]
    fn route_picks_the_largest_and_renormalises() {
        let routing = Routing {
            n_expert_used: 2,
            normalize: true,
            scale: 1.0,
        };
        let chosen = route(&[0.0, 2.0, -1.0, 1.0], &routing);
        assert_eq!(chosen.iter().map(|c| c.0).collect::<Vec<_>>(), vec![1, 3]);
        let e = std::f64::consts::E;
        let want = e / (e + 1.0);
        assert!((f64::from(chosen[0].1) - want).abs() < 1e-6);
        assert!((chosen[0].1 + chosen[1].1 - 1.0).abs() < 1e-6);
    }

    #[test]
    fn route_without_normalising_keeps_softmax_probabilities() {
        let routing = Routing {
            n_expert_used: 1,
            normalize: false,
            scale: 2.0,
        };
        let chosen = route(&[0.0, 0.0], &routing);
        // A tie goes to the lower expert id.
        assert_eq!(chosen, vec![(0, 1.0)]);
    }

    proptest! {
        /// Against a plain per-token loop over all experts in f64.
        #[test]
        fn matches_dense_reference(m in 1usize..5, n_expert in 1usize..6, k in 1usize..4, seed in 0u64..500) {
            let (n_embd, n_ff) = (8usize, 12usize);
            let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let mut next = || { state ^= state << 13; state ^= state >> 7; state ^= state << 17; (state % 2001) as f32 / 1000.0 - 1.0 };
            let router: Vec<f32> = (0..n_expert * n_embd).map(|_| next()).collect();
            let gate: Vec<f32> = (0..n_expert * n_ff * n_embd).map(|_| next()).collect();
            let up: Vec<f32> = (0..n_expert * n_ff * n_embd).map(|_| next()).collect();
            let down: Vec<f32> = (0..n_expert * n_embd * n_ff).map(|_| next()).collect();
            let x: Vec<f32> = (0..m * n_embd).map(|_| next()).collect();
            let (rb, gb, ub, db) = (f32_bytes(&router), f32_bytes(&gate), f32_bytes(&up), f32_bytes(&down));
            let weights = MoeWeights {
                router: QMatrixRef { ty: GgmlType::F32, rows: n_expert, cols: n_embd, data: &rb },
                gate: f32_experts(&gb, n_expert, n_ff, n_embd),
                up: f32_experts(&ub, n_expert, n_ff, n_embd),
                down: f32_experts(&db, n_expert, n_embd, n_ff),
            };
            let routing = Routing { n_expert_used: k, normalize: true, scale: 1.0 };
            let got = moe_ffn(&x, m, &weights, &routing).unwrap();
            for t in 0..m {
                let xt = &x[t * n_embd..(t + 1) * n_embd];
                let logits: Vec<f32> = (0..n_expert)
                    .map(|e| (0..n_embd).map(|i| router[e * n_embd + i] * xt[i]).sum())
                    .collect();
                let chosen = route(&logits, &routing);
                let mut want = vec![0f64; n_embd];
                for &(e, w) in &chosen {
                    let h: Vec<f64> = (0..n_ff).map(|f| {
                        let dot = |mat: &[f32]| (0..n_embd).map(|i| f64::from(mat[(e * n_ff + f) * n_embd + i]) * f64::from(xt[i])).sum::<f64>();
                        let g = dot(&gate);
                        g / (1.0 + (-g).exp()) * dot(&up)
                    }).collect();
                    for (o, want_o) in want.iter_mut().enumerate() {
                        let y: f64 = (0..n_ff).map(|f| f64::from(down[(e * n_embd + o) * n_ff + f]) * h[f]).sum();
                        *want_o += f64::from(w) * y;
                    }
                }
                for (g, w) in got[t * n_embd..(t + 1) * n_embd].iter().zip(&want) {
                    prop_assert!((f64::from(*g) - w).abs() <= 1e-4 * (1.0 + w.abs()), "{g} vs {w}");
                }
            }
        }
    }

    #[test]
    fn short_expert_data_is_an_error() {
        let router = f32_bytes(&[1.0; 8]);
        let short = vec![0u8; 4];
        let experts = ExpertsRef {
            ty: GgmlType::F32,
            n_expert: 1,
            rows: 1,
            cols: 8,
            data: &short,
            expert_rows: 1,
            first_row: 0,
        };
        let weights = MoeWeights {
            router: QMatrixRef {
                ty: GgmlType::F32,
                rows: 1,
                cols: 8,
                data: &router,
            },
            gate: experts,
            up: experts,
            down: experts,
        };
        let routing = Routing {
            n_expert_used: 1,
            normalize: false,
            scale: 1.0,
        };
        assert!(matches!(
            moe_ffn(&[0.5; 8], 1, &weights, &routing),
            Err(MoeError::Expert { expert: 0, .. })
        ));
    }

    /// Quantized experts (their kernels, activations quantized once per
    /// shared rows) give the bits of one plain `matmul` per token and
    /// expert, summed in slot order: for one token (every expert reads `x`
    /// itself) and for a batch (experts gather their tokens' rows).
    #[test]
    fn quantized_experts_equal_per_token_matmuls_bit_for_bit() {
        let (n_embd, n_ff, n_expert) = (64usize, 32usize, 4usize);
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 2001) as f32 / 1000.0 - 1.0
        };
        let mut quantized = |len: usize| {
            let values: Vec<f32> = (0..len).map(|_| next()).collect();
            let mut bytes = Vec::new();
            crate::quant::quantize(GgmlType::Q8_0, &values, &mut bytes).unwrap();
            bytes
        };
        let (rb, gb, ub, db) = (
            quantized(n_expert * n_embd),
            quantized(n_expert * n_ff * n_embd),
            quantized(n_expert * n_ff * n_embd),
            quantized(n_expert * n_embd * n_ff),
        );
        let experts = |data, rows, cols| ExpertsRef {
            ty: GgmlType::Q8_0,
            n_expert,
            rows,
            cols,
            data,
            expert_rows: rows,
            first_row: 0,
        };
        let weights = MoeWeights {
            router: QMatrixRef {
                ty: GgmlType::Q8_0,
                rows: n_expert,
                cols: n_embd,
                data: &rb,
            },
            gate: experts(&gb, n_ff, n_embd),
            up: experts(&ub, n_ff, n_embd),
            down: experts(&db, n_embd, n_ff),
        };
        let routing = Routing {
            n_expert_used: 2,
            normalize: true,
            scale: 1.0,
        };
        for m in [1usize, 5] {
            let x: Vec<f32> = (0..m * n_embd)
                .map(|i| ((i * 37) % 101) as f32 / 50.0 - 1.0)
                .collect();
            let got = moe_ffn(&x, m, &weights, &routing).unwrap();
            for t in 0..m {
                let xt = &x[t * n_embd..(t + 1) * n_embd];
                let mut logits = vec![0f32; n_expert];
                matmul(&weights.router, xt, 1, &mut logits).unwrap();
                let mut want = vec![0f32; n_embd];
                for (e, w) in route(&logits, &routing) {
                    let (mut gate, mut up) = (vec![0f32; n_ff], vec![0f32; n_ff]);
                    matmul(&weights.gate.expert(e).unwrap(), xt, 1, &mut gate).unwrap();
                    matmul(&weights.up.expert(e).unwrap(), xt, 1, &mut up).unwrap();
                    swiglu(&mut gate, &up).unwrap();
                    let mut down = vec![0f32; n_embd];
                    matmul(&weights.down.expert(e).unwrap(), &gate, 1, &mut down).unwrap();
                    for (o, v) in want.iter_mut().zip(down) {
                        *o += v * w;
                    }
                }
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(
                    bits(&got[t * n_embd..(t + 1) * n_embd]),
                    bits(&want),
                    "m {m}, token {t}"
                );
            }
        }
    }
}
