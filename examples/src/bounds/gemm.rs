//! Bound: a dot product of K terms in f32, in any order, is within
//! `K * u * sum |a_i b_i|` of the exact value (u = 2^-24); `alpha * acc +
//! beta * c` adds three more roundings of at most `u` each relative to its
//! terms' magnitudes. So `|got - exact| <= (K + 3) u (|alpha| sum|a||b| +
//! |beta| |c|)`, computed per element from the absolute values. f16 inputs
//! are exact in f32 and their products are exact (11 + 11 bits < 24), so
//! the f16 kernel has the same bound with `K + 1`.
//!
//! The `_pipe` and `_tc` kernels are the same gemms staged or multiplied
//! differently on a GPU (f32 accumulation in some order): same bounds.

use half::f16;

use super::U;
use crate::random::SplitMix64;
use crate::reference::gemm::{gemm, matmul};

/// `A[M, K]`, `B[K, N]` and `C[M, N]` uniform in [-1, 1), in that order.
pub fn f32_inputs(
    rng: &mut SplitMix64,
    m: usize,
    n: usize,
    k: usize,
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    (
        rng.vec(m * k, -1.0, 1.0),
        rng.vec(k * n, -1.0, 1.0),
        rng.vec(m * n, -1.0, 1.0),
    )
}

/// `A[M, K]` and `B[K, N]` uniform in [-1, 1), rounded to f16.
pub fn f16_inputs(rng: &mut SplitMix64, m: usize, n: usize, k: usize) -> (Vec<f16>, Vec<f16>) {
    let mut values = |len: usize| -> Vec<f16> {
        rng.vec(len, -1.0, 1.0)
            .into_iter()
            .map(f16::from_f32)
            .collect()
    };
    let a = values(m * k);
    let b = values(k * n);
    (a, b)
}

fn abs(values: &[f32]) -> Vec<f32> {
    values.iter().map(|v| v.abs()).collect()
}

/// The f32 bound of the module doc for each element of `C = alpha A B +
/// beta C`, plus `u |exact|` for the reference's own rounding to f32.
pub fn f32_bounds(
    (m, n, k): (usize, usize, usize),
    a: &[f32],
    b: &[f32],
    c: &[f32],
    alpha: f32,
    beta: f32,
    exact: &[f64],
) -> Vec<f64> {
    let magnitude = gemm(m, n, k, &abs(a), &abs(b), &abs(c), alpha.abs(), beta.abs());
    magnitude
        .iter()
        .zip(exact)
        .map(|(&mag, &e)| (k as f64 + 3.0) * U * f64::from(mag) + U * e.abs())
        .collect()
}

/// The f16-input bound of the module doc, `(K + 1) u |A||B|`, for each
/// element of `C = A B`.
pub fn f16_bounds((m, n, k): (usize, usize, usize), a: &[f16], b: &[f16]) -> Vec<f64> {
    let abs_a: Vec<f64> = a.iter().map(|v| f64::from(*v).abs()).collect();
    let abs_b: Vec<f64> = b.iter().map(|v| f64::from(*v).abs()).collect();
    matmul(m, n, k, &abs_a, &abs_b)
        .iter()
        .map(|mag| (k as f64 + 1.0) * U * mag)
        .collect()
}
