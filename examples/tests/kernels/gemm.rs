//! The gemm kernels against the references, under the bounds of
//! `phobos_examples::bounds::gemm` (derived there). The `_pipe` kernels are
//! the same gemms with `@pipeline`, which changes only how the GPU back ends
//! stage tiles (the host back end ignores it): same references, same bounds.

use phobos_examples::bounds::gemm::{f16_bounds, f16_inputs, f32_bounds, f32_inputs};
use phobos_examples::check::{first_mismatch, to_f64};
use phobos_examples::kernels::{
    gemm_f16, gemm_f16_pipe, gemm_f16_tc, gemm_f16_tc_pipe, gemm_f32, gemm_f32_pipe,
};
use phobos_examples::random::SplitMix64;
use phobos_examples::reference::gemm::{gemm, matmul};
use proptest::prelude::*;

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
                let (a, b, c) = f32_inputs(&mut rng, m, n, k);
                let device = crate::host();
                let ta = device.tensor_from(&a, [m, k]).unwrap();
                let tb = device.tensor_from(&b, [k, n]).unwrap();
                let mut tc = device.tensor_from(&c, [m, n]).unwrap();
                $kernel::launch_with(&device, &$kernel::CONFIGS[config], &ta, &tb, &mut tc, alpha, beta).unwrap();

                let want = to_f64(&gemm(m, n, k, &a, &b, &c, alpha, beta));
                let bounds = f32_bounds((m, n, k), &a, &b, &c, alpha, beta, &want);
                let mismatch = first_mismatch(&to_f64(&tc.to_vec().unwrap()), &want, |i| bounds[i]);
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
                let (a, b) = f16_inputs(&mut rng, m, n, k);
                let device = crate::host();
                let ta = device.tensor_from(&a, [m, k]).unwrap();
                let tb = device.tensor_from(&b, [k, n]).unwrap();
                let mut tc = device.full([m, n], f32::NAN).unwrap();
                $kernel::launch_with(&device, &$kernel::CONFIGS[config], &ta, &tb, &mut tc).unwrap();

                let want = matmul(m, n, k, &a, &b);
                let bounds = f16_bounds((m, n, k), &a, &b);
                let mismatch = first_mismatch(&to_f64(&tc.to_vec().unwrap()), &want, |i| bounds[i]);
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
