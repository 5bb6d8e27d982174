//! The gemm kernels against the references, under the bounds of
//! `phobos_examples::bounds::gemm` (derived there). The `_pipe` kernels are
//! the same gemms with `@pipeline`, which changes only how the GPU back ends
//! stage tiles (the host back end ignores it): same references, same bounds.

/// The tests of an f32 gemm kernel module (`C = alpha A B + beta C`).
macro_rules! gemm_f32_tests {
    ($kernel:ident) => {
        mod $kernel {
            use phobos_examples::bounds::gemm::{f32_bounds, f32_inputs};
            use phobos_examples::check::{first_mismatch, to_f64};
            use phobos_examples::kernels::$kernel as kernel;
            use phobos_examples::random::SplitMix64;
            use phobos_examples::reference::gemm::gemm;
            use proptest::prelude::*;

            fn check(
                config: &kernel::Config,
                (m, n, k): (usize, usize, usize),
                seed: u64,
                alpha: f32,
                beta: f32,
            ) -> Result<(), String> {
                let mut rng = SplitMix64::new(seed);
                let (a, b, c) = f32_inputs(&mut rng, m, n, k);
                let device = crate::host();
                let ta = device.tensor_from(&a, [m, k]).unwrap();
                let tb = device.tensor_from(&b, [k, n]).unwrap();
                let mut tc = device.tensor_from(&c, [m, n]).unwrap();
                kernel::launch_with(&device, config, &ta, &tb, &mut tc, alpha, beta).unwrap();

                let want = to_f64(&gemm(m, n, k, &a, &b, &c, alpha, beta));
                let bounds = f32_bounds((m, n, k), &a, &b, &c, alpha, beta, &want);
                match first_mismatch(&to_f64(&tc.to_vec().unwrap()), &want, |i| bounds[i]) {
                    None => Ok(()),
                    Some(why) => Err(format!("m={m} n={n} k={k} {config:?}: {why}")),
                }
            }

            #[test]
            fn every_config_on_ragged_shapes() {
                crate::every_config(kernel::CONFIGS, |i, c| {
                    let shape = (
                        crate::ragged(c.TILE_M, i),
                        crate::ragged(c.TILE_N, i + 1),
                        crate::ragged(c.TILE_K, i + 2),
                    );
                    check(c, shape, i as u64, 1.25, -0.5)
                });
            }

            proptest! {
                #![proptest_config(crate::cases(16))]

                #[test]
                fn matches_reference(
                    m in 1usize..80, n in 1usize..80, k in 1usize..80,
                    config in 0..kernel::CONFIGS.len(), seed: u64,
                    alpha in -2.0f32..2.0, beta in -2.0f32..2.0,
                ) {
                    let result = check(&kernel::CONFIGS[config], (m, n, k), seed, alpha, beta);
                    prop_assert!(result.is_ok(), "{}", result.err().unwrap_or_default());
                }
            }
        }
    };
}

/// The tests of an f16-input gemm kernel module (`C = A B` in f32).
macro_rules! gemm_f16_tests {
    ($kernel:ident) => {
        mod $kernel {
            use phobos_examples::bounds::gemm::{f16_bounds, f16_inputs};
            use phobos_examples::check::{first_mismatch, to_f64};
            use phobos_examples::kernels::$kernel as kernel;
            use phobos_examples::random::SplitMix64;
            use phobos_examples::reference::gemm::matmul;
            use proptest::prelude::*;

            fn check(
                config: &kernel::Config,
                (m, n, k): (usize, usize, usize),
                seed: u64,
            ) -> Result<(), String> {
                let mut rng = SplitMix64::new(seed);
                let (a, b) = f16_inputs(&mut rng, m, n, k);
                let device = crate::host();
                let ta = device.tensor_from(&a, [m, k]).unwrap();
                let tb = device.tensor_from(&b, [k, n]).unwrap();
                let mut tc = device.full([m, n], f32::NAN).unwrap();
                kernel::launch_with(&device, config, &ta, &tb, &mut tc).unwrap();

                let want = matmul(m, n, k, &a, &b);
                let bounds = f16_bounds((m, n, k), &a, &b);
                match first_mismatch(&to_f64(&tc.to_vec().unwrap()), &want, |i| bounds[i]) {
                    None => Ok(()),
                    Some(why) => Err(format!("m={m} n={n} k={k} {config:?}: {why}")),
                }
            }

            #[test]
            fn every_config_on_ragged_shapes() {
                crate::every_config(kernel::CONFIGS, |i, c| {
                    let shape = (
                        crate::ragged(c.TILE_M, i),
                        crate::ragged(c.TILE_N, i + 1),
                        crate::ragged(c.TILE_K, i + 2),
                    );
                    check(c, shape, i as u64)
                });
            }

            proptest! {
                #![proptest_config(crate::cases(16))]

                #[test]
                fn matches_reference(
                    m in 1usize..70, n in 1usize..70, k in 1usize..90,
                    config in 0..kernel::CONFIGS.len(), seed: u64,
                ) {
                    let result = check(&kernel::CONFIGS[config], (m, n, k), seed);
                    prop_assert!(result.is_ok(), "{}", result.err().unwrap_or_default());
                }
            }
        }
    };
}

gemm_f32_tests!(gemm_f32);
gemm_f32_tests!(gemm_f32_pipe);
gemm_f16_tests!(gemm_f16);
gemm_f16_tests!(gemm_f16_pipe);
// The host back end ignores @tensorcore; the same bound holds on tensor
// cores (exact f16 products, f32 accumulation in some order).
gemm_f16_tests!(gemm_f16_tc);
gemm_f16_tests!(gemm_f16_tc_pipe);
