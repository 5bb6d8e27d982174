//! rmsnorm and layernorm against the references, under the bounds of
//! `phobos_examples::bounds::norms` (derived there). Columns are tiled by
//! BLOCK_C; rows come ROWS to a program, the last block ragged.

use phobos_examples::bounds::norms::{
    layernorm_bounds, layernorm_inputs, rmsnorm_bounds, rmsnorm_inputs,
};
use phobos_examples::check::{first_mismatch, to_f64};
use phobos_examples::kernels::{layernorm, rmsnorm};
use phobos_examples::random::SplitMix64;
use phobos_examples::reference;
use proptest::prelude::*;

const EPS: f32 = 1e-5;

fn check_rmsnorm(
    config: &rmsnorm::Config,
    rows: usize,
    cols: usize,
    seed: u64,
) -> Result<(), String> {
    let mut rng = SplitMix64::new(seed);
    let (x, w) = rmsnorm_inputs(&mut rng, rows, cols);
    let device = crate::host();
    let tx = device.tensor_from(&x, [rows, cols]).unwrap();
    let tw = device.tensor_from(&w, [cols]).unwrap();
    let mut ty = device.full([rows, cols], f32::NAN).unwrap();
    rmsnorm::launch_with(&device, config, &tx, &tw, &mut ty, EPS).unwrap();

    let want = to_f64(&reference::norm::rmsnorm(rows, cols, &x, &w, EPS));
    let bounds = rmsnorm_bounds(cols, &want);
    match first_mismatch(&to_f64(&ty.to_vec().unwrap()), &want, |i| bounds[i]) {
        None => Ok(()),
        Some(why) => Err(format!("rows={rows} cols={cols} {config:?}: {why}")),
    }
}

fn check_layernorm(
    config: &layernorm::Config,
    rows: usize,
    cols: usize,
    seed: u64,
) -> Result<(), String> {
    let mut rng = SplitMix64::new(seed);
    let (x, w, b) = layernorm_inputs(&mut rng, rows, cols);
    let device = crate::host();
    let tx = device.tensor_from(&x, [rows, cols]).unwrap();
    let tw = device.tensor_from(&w, [cols]).unwrap();
    let tb = device.tensor_from(&b, [cols]).unwrap();
    let mut ty = device.full([rows, cols], f32::NAN).unwrap();
    layernorm::launch_with(&device, config, &tx, &tw, &tb, &mut ty, EPS).unwrap();

    let want = to_f64(&reference::norm::layernorm(rows, cols, &x, &w, &b, EPS));
    let bounds = layernorm_bounds((rows, cols), &x, &w, &b, EPS, &want);
    match first_mismatch(&to_f64(&ty.to_vec().unwrap()), &want, |i| bounds[i]) {
        None => Ok(()),
        Some(why) => Err(format!("rows={rows} cols={cols} {config:?}: {why}")),
    }
}

#[test]
fn rmsnorm_every_config_on_ragged_shapes() {
    crate::every_config(rmsnorm::CONFIGS, |i, c| {
        let (rows, cols) = (crate::ragged(c.ROWS, i), crate::ragged(c.BLOCK_C, i));
        check_rmsnorm(c, rows, cols, i as u64)
    });
}

#[test]
fn layernorm_every_config_on_ragged_shapes() {
    crate::every_config(layernorm::CONFIGS, |i, c| {
        let (rows, cols) = (crate::ragged(c.ROWS, i), crate::ragged(c.BLOCK_C, i));
        check_layernorm(c, rows, cols, i as u64)
    });
}

proptest! {
    #![proptest_config(crate::cases(16))]

    #[test]
    fn rmsnorm_matches_reference(rows in 1usize..20, cols in 1usize..2100, config in 0..rmsnorm::CONFIGS.len(), seed: u64) {
        let result = check_rmsnorm(&rmsnorm::CONFIGS[config], rows, cols, seed);
        prop_assert!(result.is_ok(), "{}", result.err().unwrap_or_default());
    }

    #[test]
    fn layernorm_matches_reference(rows in 1usize..20, cols in 1usize..2100, config in 0..layernorm::CONFIGS.len(), seed: u64) {
        let result = check_layernorm(&layernorm::CONFIGS[config], rows, cols, seed);
        prop_assert!(result.is_ok(), "{}", result.err().unwrap_or_default());
    }
}
