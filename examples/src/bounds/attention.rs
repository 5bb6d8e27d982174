//! Bound, per query row, with u = 2^-24 and `S = scale * max_j sum_c
//! |q_c k_jc|` (the largest score magnitude the row can produce):
//!
//! - each score is a 64-term dot product times `scale`: error `ds = 66 u S`;
//! - a score error moves its softmax weight by at most `2 ds` relative
//!   (numerator and denominator), and the weights are a convex combination
//!   of value rows, so the output moves by `2 ds max|v|` (4 ds leaves room
//!   for the online rescale seeing the same error twice);
//! - the denominator and accumulator sum T terms and are rescaled once per
//!   key block (`exp` within 2 ulp, its argument rounded with error
//!   `u |rowmax change| <= 2 u S`): `(2 T + 4 blocks + 4 S + 16) u max|v|`.
//!
//! The f16 kernels add the rounding of the probabilities to f16 before
//! `P @ V` (relative 2^-11 per weight, so `2^-11 max|v|`) and of the output
//! to f16 (`2^-11 |o|`); their inputs are exact in f32 and in the reference.
//! The smallest key block (`BLOCK_N`) makes the most rescales, the largest
//! bound.

use half::f16;

use super::U;
use crate::check::F16_UNIT_ROUNDOFF;
use crate::random::SplitMix64;
use crate::reference::attention::attention;

/// The head dimension of the example attention kernels.
pub const HEAD_DIM: usize = 64;

/// Random Q, K, V (`[heads, seq, HEAD_DIM]`, uniform in [-1, 1)) and the
/// scale `1 / sqrt(HEAD_DIM)`.
pub struct Problem {
    pub heads: usize,
    pub seq_q: usize,
    pub seq_k: usize,
    pub q: Vec<f32>,
    pub k: Vec<f32>,
    pub v: Vec<f32>,
    pub scale: f32,
}

impl Problem {
    /// Q, K and V drawn in that order from `seed`; with `round_to_f16` each
    /// value is rounded to f16, so the f64 reference sees the f16 kernel's
    /// inputs.
    pub fn random(
        heads: usize,
        seq_q: usize,
        seq_k: usize,
        seed: u64,
        round_to_f16: bool,
    ) -> Problem {
        let mut rng = SplitMix64::new(seed);
        let mut values = |len: usize| {
            let raw = rng.vec(len, -1.0, 1.0);
            if round_to_f16 {
                raw.into_iter().map(|x| f16::from_f32(x).to_f32()).collect()
            } else {
                raw
            }
        };
        let q = values(heads * seq_q * HEAD_DIM);
        let k = values(heads * seq_k * HEAD_DIM);
        let v = values(heads * seq_k * HEAD_DIM);
        Problem {
            heads,
            seq_q,
            seq_k,
            q,
            k,
            v,
            scale: 1.0 / (HEAD_DIM as f32).sqrt(),
        }
    }

    /// `softmax(scale Q K^T) V` per head, in f64.
    pub fn reference(&self) -> Vec<f64> {
        let (qs, ks) = (self.seq_q * HEAD_DIM, self.seq_k * HEAD_DIM);
        (0..self.heads)
            .flat_map(|h| {
                attention(
                    self.seq_q,
                    self.seq_k,
                    HEAD_DIM,
                    HEAD_DIM,
                    &self.q[h * qs..(h + 1) * qs],
                    &self.k[h * ks..(h + 1) * ks],
                    &self.v[h * ks..(h + 1) * ks],
                    self.scale,
                )
            })
            .collect()
    }

    /// The f32 bound of the module doc for every output element, with key
    /// blocks of `block_n`.
    pub fn f32_bounds(&self, block_n: usize) -> Vec<f64> {
        let blocks = self.seq_k.div_ceil(block_n) as f64;
        let mut bounds = Vec::with_capacity(self.q.len());
        for h in 0..self.heads {
            let value_rows = &self.v[h * self.seq_k * HEAD_DIM..(h + 1) * self.seq_k * HEAD_DIM];
            let max_v = value_rows
                .iter()
                .fold(0.0f64, |m, &x| m.max(f64::from(x).abs()));
            for i in 0..self.seq_q {
                let q_row = &self.q[(h * self.seq_q + i) * HEAD_DIM..][..HEAD_DIM];
                let largest = (0..self.seq_k)
                    .map(|j| {
                        let k_row = &self.k[(h * self.seq_k + j) * HEAD_DIM..][..HEAD_DIM];
                        q_row
                            .iter()
                            .zip(k_row)
                            .map(|(a, b)| f64::from(a * b).abs())
                            .sum::<f64>()
                    })
                    .fold(0.0f64, f64::max);
                let s = f64::from(self.scale) * largest;
                let ds = 66.0 * U * s;
                let bound = max_v
                    * (4.0 * ds + (2.0 * self.seq_k as f64 + 4.0 * blocks + 4.0 * s + 16.0) * U);
                bounds.extend(std::iter::repeat_n(bound, HEAD_DIM));
            }
        }
        bounds
    }

    /// The f16 bound of the module doc: the f32 one plus `2^-11 (max|v| +
    /// |exact|)`, `exact` being [`Problem::reference`].
    pub fn f16_bounds(&self, block_n: usize, exact: &[f64]) -> Vec<f64> {
        let max_v = self.max_v();
        self.f32_bounds(block_n)
            .into_iter()
            .zip(exact)
            .map(|(bound, e)| bound + F16_UNIT_ROUNDOFF * (max_v + e.abs()))
            .collect()
    }

    fn max_v(&self) -> f64 {
        self.v
            .iter()
            .fold(0.0f64, |m, &x| m.max(f64::from(x).abs()))
    }
}
