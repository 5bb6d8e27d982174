//! Bounds, with u = 2^-24 and statistics of the row in f64:
//!
//! rmsnorm: the mean square is a sum of C rounded squares, relative error
//! (C + 2) u; `rsqrt` halves that and adds 2 ulp; `x * rstd * w` adds 2u.
//! So `|got - exact| <= ((C + 2) / 2 + 4) u |exact|`.
//!
//! layernorm: the mean is off by `dm = (C + 2) u mean|x|`. Each deviation
//! `x - mean` is then off by `dm + u |x - mean|`; the variance (C rounded
//! squares, plus the squared-deviation effect `2 dm mean|x - mean|`) has
//! relative error `(C + 4) u + 2 dm mean|x - mean| / (var + eps)`; `rstd`
//! halves that and adds 2u. The output `(x - mean) rstd w + b` carries the
//! deviation error times `rstd |w|`, the rstd error times `|x - mean| rstd
//! |w|`, and 4u of its own roundings on `|y| + |b|`.

use phobos_examples::check::{F32_UNIT_ROUNDOFF, first_mismatch, to_f64};
use phobos_examples::kernels::{layernorm, rmsnorm};
use phobos_examples::random::SplitMix64;
use phobos_examples::reference;
use proptest::prelude::*;

const U: f64 = F32_UNIT_ROUNDOFF;

proptest! {
    #![proptest_config(crate::cases(16))]

    #[test]
    fn rmsnorm_matches_reference(rows in 1usize..12, cols in 1usize..2100, config in 0..rmsnorm::CONFIGS.len(), seed: u64) {
        let mut rng = SplitMix64::new(seed);
        let (x, w) = (rng.vec(rows * cols, -3.0, 3.0), rng.vec(cols, -2.0, 2.0));
        let eps = 1e-5f32;
        let device = crate::host();
        let tx = device.tensor_from(&x, [rows, cols]).unwrap();
        let tw = device.tensor_from(&w, [cols]).unwrap();
        let mut ty = device.full([rows, cols], f32::NAN).unwrap();
        let chosen = rmsnorm::CONFIGS[config];
        rmsnorm::launch_with(&device, &chosen, &tx, &tw, &mut ty, eps).unwrap();

        let want = to_f64(&reference::norm::rmsnorm(rows, cols, &x, &w, eps));
        let relative = ((cols as f64 + 2.0) / 2.0 + 4.0) * U;
        // +u: the reference's own final rounding to f32.
        let bound = |i: usize| (relative + U) * want[i].abs();
        let mismatch = first_mismatch(&to_f64(&ty.to_vec().unwrap()), &want, bound);
        prop_assert!(mismatch.is_none(), "rows={} cols={} {:?}: {}", rows, cols, chosen, mismatch.unwrap_or_default());
    }

    #[test]
    fn layernorm_matches_reference(rows in 1usize..12, cols in 1usize..2100, config in 0..layernorm::CONFIGS.len(), seed: u64) {
        let mut rng = SplitMix64::new(seed);
        let x = rng.vec(rows * cols, -3.0, 3.0);
        let (w, b) = (rng.vec(cols, -2.0, 2.0), rng.vec(cols, -1.0, 1.0));
        let eps = 1e-5f32;
        let device = crate::host();
        let tx = device.tensor_from(&x, [rows, cols]).unwrap();
        let tw = device.tensor_from(&w, [cols]).unwrap();
        let tb = device.tensor_from(&b, [cols]).unwrap();
        let mut ty = device.full([rows, cols], f32::NAN).unwrap();
        let chosen = layernorm::CONFIGS[config];
        layernorm::launch_with(&device, &chosen, &tx, &tw, &tb, &mut ty, eps).unwrap();

        let want = to_f64(&reference::norm::layernorm(rows, cols, &x, &w, &b, eps));
        let c = cols as f64;
        let bounds: Vec<f64> = (0..rows * cols)
            .map(|i| {
                let (row, col) = (i / cols, i % cols);
                let line: Vec<f64> = x[row * cols..(row + 1) * cols].iter().map(|&v| f64::from(v)).collect();
                let mean = line.iter().sum::<f64>() / c;
                let mean_abs = line.iter().map(|v| v.abs()).sum::<f64>() / c;
                let mean_abs_dev = line.iter().map(|v| (v - mean).abs()).sum::<f64>() / c;
                let var = line.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / c + f64::from(eps);
                let rstd = 1.0 / var.sqrt();
                let dm = (c + 2.0) * U * mean_abs;
                let dev = (line[col] - mean).abs();
                let rel_rstd = ((c + 4.0) * U + 2.0 * dm * mean_abs_dev / var) / 2.0 + 2.0 * U;
                let wc = f64::from(w[col]).abs();
                (dm + U * dev) * rstd * wc
                    + dev * rstd * wc * rel_rstd
                    + 4.0 * U * (want[i].abs() + f64::from(b[col]).abs())
                    + U * want[i].abs()
            })
            .collect();
        let mismatch = first_mismatch(&to_f64(&ty.to_vec().unwrap()), &want, |i| bounds[i]);
        prop_assert!(mismatch.is_none(), "rows={} cols={} {:?}: {}", rows, cols, chosen, mismatch.unwrap_or_default());
    }
}
