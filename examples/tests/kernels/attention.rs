//! The flash-attention kernels against the reference, under the bounds of
//! `phobos_examples::bounds::attention` (derived there) at the chosen
//! config's `BLOCK_N`. Queries are tiled by `BLOCK_M`, keys by `BLOCK_N`;
//! the head dimension is fixed (64).

mod flash_attn_f32 {
    use phobos_examples::bounds::attention::{HEAD_DIM, Problem};
    use phobos_examples::check::{first_mismatch, to_f64};
    use phobos_examples::kernels::flash_attn_f32 as kernel;
    use proptest::prelude::*;

    fn check(
        config: &kernel::Config,
        (heads, seq_q, seq_k): (usize, usize, usize),
        seed: u64,
    ) -> Result<(), String> {
        let problem = Problem::random(heads, seq_q, seq_k, seed, false);
        let device = crate::host();
        let q = device
            .tensor_from(&problem.q, [heads, seq_q, HEAD_DIM])
            .unwrap();
        let k = device
            .tensor_from(&problem.k, [heads, seq_k, HEAD_DIM])
            .unwrap();
        let v = device
            .tensor_from(&problem.v, [heads, seq_k, HEAD_DIM])
            .unwrap();
        let mut o = device.full([heads, seq_q, HEAD_DIM], f32::NAN).unwrap();
        kernel::launch_with(&device, config, &q, &k, &v, &mut o, problem.scale).unwrap();

        let bounds = problem.f32_bounds(config.BLOCK_N as usize);
        match first_mismatch(&to_f64(&o.to_vec().unwrap()), &problem.reference(), |i| {
            bounds[i]
        }) {
            None => Ok(()),
            Some(why) => Err(format!("H={heads} S={seq_q} T={seq_k} {config:?}: {why}")),
        }
    }

    #[test]
    fn every_config_on_ragged_shapes() {
        crate::every_config(kernel::CONFIGS, |i, c| {
            let shape = (
                2,
                crate::ragged(c.BLOCK_M, i),
                crate::ragged(c.BLOCK_N, i + 1),
            );
            check(c, shape, i as u64)
        });
    }

    proptest! {
        #![proptest_config(crate::cases(10))]

        #[test]
        fn matches_reference(
            heads in 1usize..3, seq_q in 1usize..90, seq_k in 1usize..150,
            config in 0..kernel::CONFIGS.len(), seed: u64,
        ) {
            let result = check(&kernel::CONFIGS[config], (heads, seq_q, seq_k), seed);
            prop_assert!(result.is_ok(), "{}", result.err().unwrap_or_default());
        }
    }
}

/// The tests of an f16 attention kernel module, under the f16 bound.
macro_rules! flash_attn_f16_tests {
    ($kernel:ident) => {
        mod $kernel {
            use half::f16;
            use phobos_examples::bounds::attention::{HEAD_DIM, Problem};
            use phobos_examples::check::{first_mismatch, to_f64};
            use phobos_examples::kernels::$kernel as kernel;
            use proptest::prelude::*;

            fn check(
                config: &kernel::Config,
                (heads, seq_q, seq_k): (usize, usize, usize),
                seed: u64,
            ) -> Result<(), String> {
                let problem = Problem::random(heads, seq_q, seq_k, seed, true);
                let to_half = |xs: &[f32]| xs.iter().map(|&x| f16::from_f32(x)).collect::<Vec<_>>();
                let device = crate::host();
                let q = device
                    .tensor_from(&to_half(&problem.q), [heads, seq_q, HEAD_DIM])
                    .unwrap();
                let k = device
                    .tensor_from(&to_half(&problem.k), [heads, seq_k, HEAD_DIM])
                    .unwrap();
                let v = device
                    .tensor_from(&to_half(&problem.v), [heads, seq_k, HEAD_DIM])
                    .unwrap();
                let mut o = device.full([heads, seq_q, HEAD_DIM], f16::NAN).unwrap();
                kernel::launch_with(&device, config, &q, &k, &v, &mut o, problem.scale).unwrap();

                let want = problem.reference();
                let bounds = problem.f16_bounds(config.BLOCK_N as usize, &want);
                match first_mismatch(&to_f64(&o.to_vec().unwrap()), &want, |i| bounds[i]) {
                    None => Ok(()),
                    Some(why) => Err(format!("H={heads} S={seq_q} T={seq_k} {config:?}: {why}")),
                }
            }

            #[test]
            fn every_config_on_ragged_shapes() {
                crate::every_config(kernel::CONFIGS, |i, c| {
                    let shape = (
                        2,
                        crate::ragged(c.BLOCK_M, i),
                        crate::ragged(c.BLOCK_N, i + 1),
                    );
                    check(c, shape, i as u64)
                });
            }

            proptest! {
                #![proptest_config(crate::cases(10))]

                #[test]
                fn matches_reference(
                    heads in 1usize..3, seq_q in 1usize..90, seq_k in 1usize..150,
                    config in 0..kernel::CONFIGS.len(), seed: u64,
                ) {
                    let result = check(&kernel::CONFIGS[config], (heads, seq_q, seq_k), seed);
                    prop_assert!(result.is_ok(), "{}", result.err().unwrap_or_default());
                }
            }
        }
    };
}

flash_attn_f16_tests!(flash_attn_f16);
// The host back end ignores @tensorcore; the f16 bound holds on tensor
// cores too (f32 accumulation, in any order).
flash_attn_f16_tests!(flash_attn_f16_tc);
