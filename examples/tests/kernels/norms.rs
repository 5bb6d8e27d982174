//! rmsnorm and layernorm against the references, under the bounds of
//! `phobos_examples::bounds::norms` (derived there).

use phobos_examples::bounds::norms::{
    layernorm_bounds, layernorm_inputs, rmsnorm_bounds, rmsnorm_inputs,
};
use phobos_examples::check::{first_mismatch, to_f64};
use phobos_examples::kernels::{layernorm, rmsnorm};
use phobos_examples::random::SplitMix64;
use phobos_examples::reference;
use proptest::prelude::*;

proptest! {
    #![proptest_config(crate::cases(16))]

    #[test]
    fn rmsnorm_matches_reference(rows in 1usize..12, cols in 1usize..2100, config in 0..rmsnorm::CONFIGS.len(), seed: u64) {
        let mut rng = SplitMix64::new(seed);
        let (x, w) = rmsnorm_inputs(&mut rng, rows, cols);
        let eps = 1e-5f32;
        let device = crate::host();
        let tx = device.tensor_from(&x, [rows, cols]).unwrap();
        let tw = device.tensor_from(&w, [cols]).unwrap();
        let mut ty = device.full([rows, cols], f32::NAN).unwrap();
        let chosen = rmsnorm::CONFIGS[config];
        rmsnorm::launch_with(&device, &chosen, &tx, &tw, &mut ty, eps).unwrap();

        let want = to_f64(&reference::norm::rmsnorm(rows, cols, &x, &w, eps));
        let bounds = rmsnorm_bounds(cols, &want);
        let mismatch = first_mismatch(&to_f64(&ty.to_vec().unwrap()), &want, |i| bounds[i]);
        prop_assert!(mismatch.is_none(), "rows={} cols={} {:?}: {}", rows, cols, chosen, mismatch.unwrap_or_default());
    }

    #[test]
    fn layernorm_matches_reference(rows in 1usize..12, cols in 1usize..2100, config in 0..layernorm::CONFIGS.len(), seed: u64) {
        let mut rng = SplitMix64::new(seed);
        let (x, w, b) = layernorm_inputs(&mut rng, rows, cols);
        let eps = 1e-5f32;
        let device = crate::host();
        let tx = device.tensor_from(&x, [rows, cols]).unwrap();
        let tw = device.tensor_from(&w, [cols]).unwrap();
        let tb = device.tensor_from(&b, [cols]).unwrap();
        let mut ty = device.full([rows, cols], f32::NAN).unwrap();
        let chosen = layernorm::CONFIGS[config];
        layernorm::launch_with(&device, &chosen, &tx, &tw, &tb, &mut ty, eps).unwrap();

        let want = to_f64(&reference::norm::layernorm(rows, cols, &x, &w, &b, eps));
        let bounds = layernorm_bounds((rows, cols), &x, &w, &b, eps, &want);
        let mismatch = first_mismatch(&to_f64(&ty.to_vec().unwrap()), &want, |i| bounds[i]);
        prop_assert!(mismatch.is_none(), "rows={} cols={} {:?}: {}", rows, cols, chosen, mismatch.unwrap_or_default());
    }
}
