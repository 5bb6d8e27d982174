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
//!
//! Both add `u |exact|` for the reference's own final rounding to f32.

use super::U;
use crate::random::SplitMix64;

/// rmsnorm's `X[rows, cols]` uniform in [-3, 3) and `W[cols]` in [-2, 2).
pub fn rmsnorm_inputs(rng: &mut SplitMix64, rows: usize, cols: usize) -> (Vec<f32>, Vec<f32>) {
    let x = rng.vec(rows * cols, -3.0, 3.0);
    let w = rng.vec(cols, -2.0, 2.0);
    (x, w)
}

/// layernorm's `X` and `W` as rmsnorm's, then `B[cols]` in [-1, 1).
pub fn layernorm_inputs(
    rng: &mut SplitMix64,
    rows: usize,
    cols: usize,
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let (x, w) = rmsnorm_inputs(rng, rows, cols);
    let b = rng.vec(cols, -1.0, 1.0);
    (x, w, b)
}

/// The rmsnorm bound of the module doc for each element of `exact`.
pub fn rmsnorm_bounds(cols: usize, exact: &[f64]) -> Vec<f64> {
    let relative = ((cols as f64 + 2.0) / 2.0 + 4.0) * U + U;
    exact.iter().map(|e| relative * e.abs()).collect()
}

/// The layernorm bound of the module doc for each element of `exact`
/// (`X[rows, cols]`, `W[cols]`, `B[cols]`).
pub fn layernorm_bounds(
    (rows, cols): (usize, usize),
    x: &[f32],
    w: &[f32],
    b: &[f32],
    eps: f32,
    exact: &[f64],
) -> Vec<f64> {
    let c = cols as f64;
    let row_stats: Vec<(f64, f64, f64, f64)> = (0..rows)
        .map(|row| {
            let line: Vec<f64> = x[row * cols..(row + 1) * cols]
                .iter()
                .map(|&v| f64::from(v))
                .collect();
            let mean = line.iter().sum::<f64>() / c;
            let mean_abs = line.iter().map(|v| v.abs()).sum::<f64>() / c;
            let mean_abs_dev = line.iter().map(|v| (v - mean).abs()).sum::<f64>() / c;
            let var = line.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / c + f64::from(eps);
            (mean, mean_abs, mean_abs_dev, var)
        })
        .collect();
    (0..rows * cols)
        .map(|i| {
            let (row, col) = (i / cols, i % cols);
            let (mean, mean_abs, mean_abs_dev, var) = row_stats[row];
            let rstd = 1.0 / var.sqrt();
            let dm = (c + 2.0) * U * mean_abs;
            let dev = (f64::from(x[i]) - mean).abs();
            let rel_rstd = ((c + 4.0) * U + 2.0 * dm * mean_abs_dev / var) / 2.0 + 2.0 * U;
            let wc = f64::from(w[col]).abs();
            (dm + U * dev) * rstd * wc
                + dev * rstd * wc * rel_rstd
                + 4.0 * U * (exact[i].abs() + f64::from(b[col]).abs())
                + U * exact[i].abs()
        })
        .collect()
}
