//! Bound: each output is `exp(x - max) / denominator`. The kernel's
//! denominator is a sum of C terms, each `exp` within 2 ulp (libm's expf is
//! within 1; 2 leaves room for the platform), rescaled once per column
//! block by another `exp`: relative error <= (C + 2 * 2 * blocks + 2) u.
//! `x - max` is rounded once (relative error u * |x - max| <= 8u for inputs
//! in [-4, 4]) before its `exp`, and the final division adds u. The bound
//! per element is that relative error times the exact value.

use phobos_examples::check::{F32_UNIT_ROUNDOFF, first_mismatch, to_f64};
use phobos_examples::kernels::softmax;
use phobos_examples::random::SplitMix64;
use phobos_examples::reference;
use proptest::prelude::*;

proptest! {
    #![proptest_config(crate::cases(16))]

    #[test]
    fn softmax_matches_reference(rows in 1usize..20, cols in 1usize..2100, config in 0..softmax::CONFIGS.len(), seed: u64) {
        let mut rng = SplitMix64::new(seed);
        let x = rng.vec(rows * cols, -4.0, 4.0);
        let device = crate::host();
        let tx = device.tensor_from(&x, [rows, cols]).unwrap();
        let mut ty = device.full([rows, cols], f32::NAN).unwrap();
        let chosen = softmax::CONFIGS[config];
        softmax::launch_with(&device, &chosen, &tx, &mut ty).unwrap();

        let want = to_f64(&reference::softmax::softmax_rows(rows, cols, &x));
        let blocks = cols.div_ceil(chosen.BLOCK_C as usize) as f64;
        let relative = (cols as f64 + 4.0 * blocks + 2.0 + 8.0 + 2.0 + 1.0) * F32_UNIT_ROUNDOFF;
        let bound = |i: usize| relative * want[i].abs();
        let mismatch = first_mismatch(&to_f64(&ty.to_vec().unwrap()), &want, bound);
        prop_assert!(mismatch.is_none(), "rows={} cols={} {:?}: {}", rows, cols, chosen, mismatch.unwrap_or_default());
    }
}
