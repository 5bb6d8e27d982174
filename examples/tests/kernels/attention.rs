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
//! The f16 kernel adds the rounding of the probabilities to f16 before
//! `P @ V` (relative 2^-11 per weight, so `2^-11 max|v|`) and of the output
//! to f16 (`2^-11 |o|`); its inputs are exact in f32 and in the reference.

use half::f16;
use phobos_examples::check::{F16_UNIT_ROUNDOFF, F32_UNIT_ROUNDOFF, first_mismatch, to_f64};
use phobos_examples::kernels::{flash_attn_f16, flash_attn_f16_tc, flash_attn_f32};
use phobos_examples::random::SplitMix64;
use phobos_examples::reference::attention::attention;
use proptest::prelude::*;

const HEAD_DIM: usize = 64;
const U: f64 = F32_UNIT_ROUNDOFF;

struct Problem {
    heads: usize,
    seq_q: usize,
    seq_k: usize,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    scale: f32,
}

impl Problem {
    fn random(heads: usize, seq_q: usize, seq_k: usize, seed: u64, round_to_f16: bool) -> Problem {
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

    fn reference(&self) -> Vec<f64> {
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

    /// The f32 bound of the module doc for every output element.
    fn f32_bounds(&self, block_n: usize) -> Vec<f64> {
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

    fn max_v(&self) -> f64 {
        self.v
            .iter()
            .fold(0.0f64, |m, &x| m.max(f64::from(x).abs()))
    }
}

proptest! {
    #![proptest_config(crate::cases(10))]

    #[test]
    fn flash_attn_f32_matches_reference(
        heads in 1usize..3, seq_q in 1usize..90, seq_k in 1usize..150,
        config in 0..flash_attn_f32::CONFIGS.len(), seed: u64,
    ) {
        let problem = Problem::random(heads, seq_q, seq_k, seed, false);
        let device = crate::host();
        let q = device.tensor_from(&problem.q, [heads, seq_q, HEAD_DIM]).unwrap();
        let k = device.tensor_from(&problem.k, [heads, seq_k, HEAD_DIM]).unwrap();
        let v = device.tensor_from(&problem.v, [heads, seq_k, HEAD_DIM]).unwrap();
        let mut o = device.full([heads, seq_q, HEAD_DIM], f32::NAN).unwrap();
        let chosen = flash_attn_f32::CONFIGS[config];
        flash_attn_f32::launch_with(&device, &chosen, &q, &k, &v, &mut o, problem.scale).unwrap();

        let bounds = problem.f32_bounds(chosen.BLOCK_N as usize);
        let mismatch = first_mismatch(&to_f64(&o.to_vec().unwrap()), &problem.reference(), |i| bounds[i]);
        prop_assert!(mismatch.is_none(), "H={} S={} T={} {:?}: {}", heads, seq_q, seq_k, chosen, mismatch.unwrap_or_default());
    }

    #[test]
    fn flash_attn_f16_matches_reference(
        heads in 1usize..3, seq_q in 1usize..90, seq_k in 1usize..150,
        config in 0..flash_attn_f16::CONFIGS.len(), seed: u64,
    ) {
        let problem = Problem::random(heads, seq_q, seq_k, seed, true);
        let to_half = |xs: &[f32]| xs.iter().map(|&x| f16::from_f32(x)).collect::<Vec<_>>();
        let device = crate::host();
        let q = device.tensor_from(&to_half(&problem.q), [heads, seq_q, HEAD_DIM]).unwrap();
        let k = device.tensor_from(&to_half(&problem.k), [heads, seq_k, HEAD_DIM]).unwrap();
        let v = device.tensor_from(&to_half(&problem.v), [heads, seq_k, HEAD_DIM]).unwrap();
        let mut o = device.full([heads, seq_q, HEAD_DIM], f16::NAN).unwrap();
        let chosen = flash_attn_f16::CONFIGS[config];
        flash_attn_f16::launch_with(&device, &chosen, &q, &k, &v, &mut o, problem.scale).unwrap();

        let want = problem.reference();
        let f32_bounds = problem.f32_bounds(chosen.BLOCK_N as usize);
        let max_v = problem.max_v();
        let bound = |i: usize| f32_bounds[i] + F16_UNIT_ROUNDOFF * (max_v + want[i].abs());
        let mismatch = first_mismatch(&to_f64(&o.to_vec().unwrap()), &want, bound);
        prop_assert!(mismatch.is_none(), "H={} S={} T={} {:?}: {}", heads, seq_q, seq_k, chosen, mismatch.unwrap_or_default());
    }

    // The host back end ignores @tensorcore; the f16 bound holds on tensor
    // cores too (f32 accumulation, in any order).
    #[test]
    fn flash_attn_f16_tc_matches_the_flash_attn_f16_reference(
        heads in 1usize..3, seq_q in 1usize..90, seq_k in 1usize..150,
        config in 0..flash_attn_f16_tc::CONFIGS.len(), seed: u64,
    ) {
        let problem = Problem::random(heads, seq_q, seq_k, seed, true);
        let to_half = |xs: &[f32]| xs.iter().map(|&x| f16::from_f32(x)).collect::<Vec<_>>();
        let device = crate::host();
        let q = device.tensor_from(&to_half(&problem.q), [heads, seq_q, HEAD_DIM]).unwrap();
        let k = device.tensor_from(&to_half(&problem.k), [heads, seq_k, HEAD_DIM]).unwrap();
        let v = device.tensor_from(&to_half(&problem.v), [heads, seq_k, HEAD_DIM]).unwrap();
        let mut o = device.full([heads, seq_q, HEAD_DIM], f16::NAN).unwrap();
        let chosen = flash_attn_f16_tc::CONFIGS[config];
        flash_attn_f16_tc::launch_with(&device, &chosen, &q, &k, &v, &mut o, problem.scale).unwrap();

        let want = problem.reference();
        let f32_bounds = problem.f32_bounds(chosen.BLOCK_N as usize);
        let max_v = problem.max_v();
        let bound = |i: usize| f32_bounds[i] + F16_UNIT_ROUNDOFF * (max_v + want[i].abs());
        let mismatch = first_mismatch(&to_f64(&o.to_vec().unwrap()), &want, bound);
        prop_assert!(mismatch.is_none(), "H={} S={} T={} {:?}: {}", heads, seq_q, seq_k, chosen, mismatch.unwrap_or_default());
    }
}
