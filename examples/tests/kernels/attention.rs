//! The flash-attention kernels against the reference, under the bounds of
//! `phobos_examples::bounds::attention` (derived there) at the chosen
//! config's `BLOCK_N`.

use half::f16;
use phobos_examples::bounds::attention::{HEAD_DIM, Problem};
use phobos_examples::check::{first_mismatch, to_f64};
use phobos_examples::kernels::{flash_attn_f16, flash_attn_f16_tc, flash_attn_f32};
use proptest::prelude::*;

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
}

/// A proptest of an f16 attention kernel module, under the f16 bound.
macro_rules! flash_attn_f16_property {
    ($test:ident, $kernel:ident) => {
        proptest! {
            #![proptest_config(crate::cases(10))]

            #[test]
            fn $test(
                heads in 1usize..3, seq_q in 1usize..90, seq_k in 1usize..150,
                config in 0..$kernel::CONFIGS.len(), seed: u64,
            ) {
                let problem = Problem::random(heads, seq_q, seq_k, seed, true);
                let to_half = |xs: &[f32]| xs.iter().map(|&x| f16::from_f32(x)).collect::<Vec<_>>();
                let device = crate::host();
                let q = device.tensor_from(&to_half(&problem.q), [heads, seq_q, HEAD_DIM]).unwrap();
                let k = device.tensor_from(&to_half(&problem.k), [heads, seq_k, HEAD_DIM]).unwrap();
                let v = device.tensor_from(&to_half(&problem.v), [heads, seq_k, HEAD_DIM]).unwrap();
                let mut o = device.full([heads, seq_q, HEAD_DIM], f16::NAN).unwrap();
                let chosen = $kernel::CONFIGS[config];
                $kernel::launch_with(&device, &chosen, &q, &k, &v, &mut o, problem.scale).unwrap();

                let want = problem.reference();
                let bounds = problem.f16_bounds(chosen.BLOCK_N as usize, &want);
                let mismatch = first_mismatch(&to_f64(&o.to_vec().unwrap()), &want, |i| bounds[i]);
                prop_assert!(mismatch.is_none(), "H={} S={} T={} {:?}: {}", heads, seq_q, seq_k, chosen, mismatch.unwrap_or_default());
            }
        }
    };
}

flash_attn_f16_property!(flash_attn_f16_matches_reference, flash_attn_f16);
// The host back end ignores @tensorcore; the f16 bound holds on tensor
// cores too (f32 accumulation, in any order).
flash_attn_f16_property!(
    flash_attn_f16_tc_matches_the_flash_attn_f16_reference,
    flash_attn_f16_tc
);
