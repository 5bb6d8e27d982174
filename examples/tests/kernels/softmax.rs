//! Bound: each output is `exp(x - max) / denominator`. The kernel's
//! denominator is a sum of C terms, each `exp` within 2 ulp (libm's expf is
//! within 1; 2 leaves room for the platform), rescaled once per column
//! block by another `exp`: relative error <= (C + 2 * 2 * blocks + 2) u.
//! `x - max` is rounded once (relative error u * |x - max| <= 8u for inputs
//! in [-4, 4]) before its `exp`, and the scaling by the denominator's
//! reciprocal adds 2u (the reciprocal and the product, each rounded once).
//! The bound per element is that relative error times the exact value.

use phobos_examples::check::{F32_UNIT_ROUNDOFF, first_mismatch, to_f64};
use phobos_examples::kernels::softmax;
use phobos_examples::random::SplitMix64;
use phobos_examples::reference;
use proptest::prelude::*;

/// Rows are tiled by ROWS, columns by BLOCK_C.
fn check(config: &softmax::Config, rows: usize, cols: usize, seed: u64) -> Result<(), String> {
    let mut rng = SplitMix64::new(seed);
    let x = rng.vec(rows * cols, -4.0, 4.0);
    let device = crate::host();
    let tx = device.tensor_from(&x, [rows, cols]).unwrap();
    let mut ty = device.full([rows, cols], f32::NAN).unwrap();
    softmax::launch_with(&device, config, &tx, &mut ty).unwrap();

    let want = to_f64(&reference::softmax::softmax_rows(rows, cols, &x));
    let blocks = cols.div_ceil(config.BLOCK_C as usize) as f64;
    let relative = (cols as f64 + 4.0 * blocks + 2.0 + 8.0 + 2.0 + 2.0) * F32_UNIT_ROUNDOFF;
    let bound = |i: usize| relative * want[i].abs();
    match first_mismatch(&to_f64(&ty.to_vec().unwrap()), &want, bound) {
        None => Ok(()),
        Some(why) => Err(format!("rows={rows} cols={cols} {config:?}: {why}")),
    }
}

#[test]
fn every_config_on_ragged_shapes() {
    crate::every_config(softmax::CONFIGS, |i, c| {
        check(
            c,
            crate::ragged(c.ROWS, i),
            crate::ragged(c.BLOCK_C, i + 1),
            i as u64,
        )
    });
}

#[test]
fn a_tensor_written_with_streaming_stores() {
    // 32 MiB of output: stored tiles are streamed out chunk by chunk
    // (`host::StoreSink`), in the one-block form and the two-pass form.
    for config in softmax::CONFIGS
        .iter()
        .filter(|c| c.BLOCK_C == 4096 || c.BLOCK_C == 128)
        .take(4)
    {
        check(config, 2048, 4096, 7).unwrap();
    }
}

proptest! {
    #![proptest_config(crate::cases(16))]

    #[test]
    fn softmax_matches_reference(rows in 1usize..20, cols in 1usize..2100, config in 0..softmax::CONFIGS.len(), seed: u64) {
        let result = check(&softmax::CONFIGS[config], rows, cols, seed);
        prop_assert!(result.is_ok(), "{}", result.err().unwrap_or_default());
    }
}
