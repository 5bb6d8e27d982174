//! Bound: a dot product of K terms in f32, in any order, is within
//! `K * u * sum |a_i b_i|` of the exact value (u = 2^-24); `alpha * acc +
//! beta * c` adds three more roundings of at most `u` each relative to its
//! terms' magnitudes. So `|got - exact| <= (K + 3) u (|alpha| sum|a||b| +
//! |beta| |c|)`, computed per element from the absolute values. f16 inputs
//! are exact in f32 and their products are exact (11 + 11 bits < 24), so
//! the f16 kernel has the same bound with `K + 1`.
//!
//! The `_pipe` kernels are the same gemms with `@pipeline`, which changes
//! only how the GPU back ends stage tiles (the host back end ignores it):
//! same references, same bounds.

use half::f16;
use phobos_examples::check::{F32_UNIT_ROUNDOFF, first_mismatch, to_f64};
use phobos_examples::kernels::{
    gemm_f16, gemm_f16_pipe, gemm_f16_tc, gemm_f16_tc_pipe, gemm_f32, gemm_f32_pipe,
};
use phobos_examples::random::SplitMix64;
use phobos_examples::reference::gemm::{gemm, matmul};
use proptest::prelude::*;

fn abs(values: &[f32]) -> Vec<f32> {
    values.iter().map(|v| v.abs()).collect()
}

/// A proptest of an f32 gemm kernel module (`C = alpha A B + beta C`).
macro_rules! gemm_f32_property {
    ($test:ident, $kernel:ident) => {
        proptest! {
            #![proptest_config(crate::cases(16))]

            #[test]
            fn $test(
                m in 1usize..80, n in 1usize..80, k in 1usize..80,
                config in 0..$kernel::CONFIGS.len(), seed: u64,
                alpha in -2.0f32..2.0, beta in -2.0f32..2.0,
            ) {
                let mut rng = SplitMix64::new(seed);
                let (a, b, c) = (rng.vec(m * k, -1.0, 1.0), rng.vec(k * n, -1.0, 1.0), rng.vec(m * n, -1.0, 1.0));
                let device = crate::host();
                let ta = device.tensor_from(&a, [m, k]).unwrap();
                let tb = device.tensor_from(&b, [k, n]).unwrap();
                let mut tc = device.tensor_from(&c, [m, n]).unwrap();
                $kernel::launch_with(&device, &$kernel::CONFIGS[config], &ta, &tb, &mut tc, alpha, beta).unwrap();

                let want = to_f64(&gemm(m, n, k, &a, &b, &c, alpha, beta));
                let magnitude = gemm(m, n, k, &abs(&a), &abs(&b), &abs(&c), alpha.abs(), beta.abs());
                let bound = |i: usize| (k as f64 + 3.0) * F32_UNIT_ROUNDOFF * f64::from(magnitude[i])
                    // the reference itself is rounded to f32 once
                    + F32_UNIT_ROUNDOFF * want[i].abs();
                let mismatch = first_mismatch(&to_f64(&tc.to_vec().unwrap()), &want, bound);
                prop_assert!(mismatch.is_none(), "m={} n={} k={} {:?}: {}", m, n, k, $kernel::CONFIGS[config], mismatch.unwrap_or_default());
            }
        }
    };
}

/// A proptest of an f16-input gemm kernel module (`C = A B` in f32).
macro_rules! gemm_f16_property {
    ($test:ident, $kernel:ident) => {
        proptest! {
            #![proptest_config(crate::cases(16))]

            #[test]
            fn $test(
                m in 1usize..70, n in 1usize..70, k in 1usize..90,
                config in 0..$kernel::CONFIGS.len(), seed: u64,
            ) {
                let mut rng = SplitMix64::new(seed);
                let a: Vec<f16> = rng.vec(m * k, -1.0, 1.0).into_iter().map(f16::from_f32).collect();
                let b: Vec<f16> = rng.vec(k * n, -1.0, 1.0).into_iter().map(f16::from_f32).collect();
                let device = crate::host();
                let ta = device.tensor_from(&a, [m, k]).unwrap();
                let tb = device.tensor_from(&b, [k, n]).unwrap();
                let mut tc = device.full([m, n], f32::NAN).unwrap();
                $kernel::launch_with(&device, &$kernel::CONFIGS[config], &ta, &tb, &mut tc).unwrap();

                let want = matmul(m, n, k, &a, &b);
                let abs_a: Vec<f64> = a.iter().map(|v| f64::from(*v).abs()).collect();
                let abs_b: Vec<f64> = b.iter().map(|v| f64::from(*v).abs()).collect();
                let magnitude = matmul(m, n, k, &abs_a, &abs_b);
                let bound = |i: usize| (k as f64 + 1.0) * F32_UNIT_ROUNDOFF * magnitude[i];
                let mismatch = first_mismatch(&to_f64(&tc.to_vec().unwrap()), &want, bound);
                prop_assert!(mismatch.is_none(), "m={} n={} k={} {:?}: {}", m, n, k, $kernel::CONFIGS[config], mismatch.unwrap_or_default());
            }
        }
    };
}

gemm_f32_property!(gemm_f32_matches_reference, gemm_f32);
gemm_f32_property!(gemm_f32_pipe_matches_reference, gemm_f32_pipe);
gemm_f16_property!(gemm_f16_matches_reference, gemm_f16);
gemm_f16_property!(gemm_f16_pipe_matches_reference, gemm_f16_pipe);
// The host back end ignores @tensorcore; the same bound holds on tensor
// cores (exact f16 products, f32 accumulation in some order).
gemm_f16_property!(gemm_f16_tc_matches_the_gemm_f16_reference, gemm_f16_tc);
gemm_f16_property!(
    gemm_f16_tc_pipe_matches_the_gemm_f16_reference,
    gemm_f16_tc_pipe
);
