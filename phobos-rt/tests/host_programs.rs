//! Whole tile programs written the way generated host code calls the
//! library (run_grid + masked load/store + tile ops), checked against plain
//! loops on shapes that are not multiples of the tile sizes.

use phobos_rt::host::{self, Slice, TensorRead, TensorWrite, Tile};
use phobos_rt::{Device, Result, Tensor};
use proptest::prelude::*;

fn span(start: i64, len: usize) -> Slice {
    Slice::Span { start, len }
}

/// `C = alpha * A @ B + beta * C` with 16x16 tiles and K-step 8; B may be a
/// transposed (strided) view.
fn gemm(
    a: &Tensor<f32>,
    b: &Tensor<f32>,
    c: &mut Tensor<f32>,
    alpha: f32,
    beta: f32,
) -> Result<()> {
    const TM: usize = 16;
    const TN: usize = 16;
    const TK: usize = 8;
    let (m, k) = (a.shape()[0], a.shape()[1]);
    let n = b.shape()[1];
    let (a, b, c) = (
        TensorRead::new(a)?,
        TensorRead::new(b)?,
        TensorWrite::new(c)?,
    );
    host::try_run_grid([m.div_ceil(TM), n.div_ceil(TN), 1], |pid| {
        let (row, col) = (i64::from(pid[0]) * TM as i64, i64::from(pid[1]) * TN as i64);
        let mut acc = host::zeros::<f32>(&[TM, TN])?;
        for kt in (0..k as i64).step_by(TK) {
            let a_tile = host::load(&a, &[span(row, TM), span(kt, TK)], 0.0)?;
            let b_tile = host::load(&b, &[span(kt, TK), span(col, TN)], 0.0)?;
            host::dot_acc(&mut acc, &a_tile, &b_tile)?;
        }
        let c_slice = [span(row, TM), span(col, TN)];
        let old = host::load(&c, &c_slice, 0.0)?;
        let scaled = host::mul(&Tile::scalar(alpha), &acc)?;
        let out = host::add(&scaled, &host::mul(&Tile::scalar(beta), &old)?)?;
        host::store(&c, &c_slice, &out)
    })
}

/// Row softmax with 4-row blocks and a 8-wide column loop (online max/sum).
fn softmax(x: &Tensor<f32>, y: &mut Tensor<f32>) -> Result<()> {
    const ROWS: usize = 4;
    const BLOCK: usize = 8;
    let (r, c) = (x.shape()[0], x.shape()[1]);
    let (x, y) = (TensorRead::new(x)?, TensorWrite::new(y)?);
    host::try_run_grid([r.div_ceil(ROWS), 1, 1], |pid| {
        let r0 = i64::from(pid[0]) * ROWS as i64;
        let mut row_max = host::full(&[ROWS, 1], f32::NEG_INFINITY)?;
        let mut denom = host::zeros::<f32>(&[ROWS, 1])?;
        for c0 in (0..c as i64).step_by(BLOCK) {
            let tile = host::load(&x, &[span(r0, ROWS), span(c0, BLOCK)], f32::NEG_INFINITY)?;
            let new_max = host::maximum(&row_max, &host::rowmax(&tile)?)?;
            let rescale = host::exp(&host::sub(&row_max, &new_max)?);
            let shifted = host::exp(&host::sub(&tile, &new_max)?);
            denom = host::add(&host::mul(&denom, &rescale)?, &host::rowsum(&shifted)?)?;
            row_max = new_max;
        }
        for c0 in (0..c as i64).step_by(BLOCK) {
            let slice = [span(r0, ROWS), span(c0, BLOCK)];
            let tile = host::load(&x, &slice, f32::NEG_INFINITY)?;
            let out = host::div(&host::exp(&host::sub(&tile, &row_max)?), &denom)?;
            host::store(&y, &slice, &out)?;
        }
        Ok(())
    })
}

fn values(len: usize, seed: u32) -> Vec<f32> {
    (0..len as u32)
        .map(|i| ((i * 37 + seed * 11) % 17) as f32 / 4.0 - 2.0)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn gemm_program_matches_loops(m in 1usize..40, k in 1usize..30, n in 1usize..40, transposed_b in any::<bool>()) {
        let dev = Device::host();
        let (av, bv, cv) = (values(m * k, 1), values(k * n, 2), values(m * n, 3));
        let a = dev.tensor_from(&av, [m, k]).unwrap();
        // B as a [K, N] view of an [N, K] buffer when transposed.
        let b_t_data: Vec<f32> = (0..n * k).map(|i| bv[(i % k) * n + i / k]).collect();
        let b_buffer = dev.tensor_from(&b_t_data, [n, k]).unwrap();
        let b = if transposed_b {
            b_buffer.strided([k, n], &[1, k], 0).unwrap()
        } else {
            dev.tensor_from(&bv, [k, n]).unwrap()
        };
        let mut c = dev.tensor_from(&cv, [m, n]).unwrap();
        gemm(&a, &b, &mut c, 0.5, -1.0).unwrap();
        let got = c.to_vec().unwrap();
        for i in 0..m {
            for j in 0..n {
                // Inputs are multiples of 1/4 in [-2, 2]: every partial sum
                // is exact in f32, so the result is exact too.
                let dot: f32 = (0..k).map(|p| av[i * k + p] * bv[p * n + j]).sum();
                prop_assert_eq!(got[i * n + j], 0.5 * dot - cv[i * n + j]);
            }
        }
    }

    #[test]
    fn softmax_program_matches_loops(r in 1usize..11, c in 1usize..30) {
        let dev = Device::host();
        let xv = values(r * c, 4);
        let x = dev.tensor_from(&xv, [r, c]).unwrap();
        let mut y = dev.zeros::<f32>([r, c]).unwrap();
        softmax(&x, &mut y).unwrap();
        let got = y.to_vec().unwrap();
        for i in 0..r {
            let row = &xv[i * c..(i + 1) * c];
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let denom: f64 = row.iter().map(|&v| f64::from(v - max).exp()).sum();
            for j in 0..c {
                let want = f64::from(row[j] - max).exp() / denom;
                // A handful of f32 roundings in exp, the online rescale and
                // the division: a few ulps of a value <= 1.
                prop_assert!((f64::from(got[i * c + j]) - want).abs() < 1e-6, "[{i},{j}]");
            }
        }
    }
}
