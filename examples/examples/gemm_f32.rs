//! `C = alpha * A @ B + beta * C` in f32 on random data, checked against
//! a plain Rust triple loop accumulating in f64.
//!
//! Run: `cargo run --release -p phobos-examples --example gemm_f32`

use anyhow::{Context, Result, ensure};
use phobos_examples::bounds::gemm::f32_inputs;
use phobos_examples::check::F32_UNIT_ROUNDOFF;
use phobos_examples::check::max_abs_error;
use phobos_examples::random::SplitMix64;
use phobos_examples::reference;

phobos::kernel! {
    // C = alpha * A @ B + beta * C in f32, one TILE_M x TILE_N block of C per program.
    @autotune(TILE_M in [32, 256], TILE_N in [32, 256], TILE_K in [4, 128])
    @grid(cdiv(M, TILE_M), cdiv(N, TILE_N))
    kernel gemm_f32(A: tensor<f32>[M, K], B: tensor<f32>[K, N], C: tensor<f32>[M, N],
                    alpha: f32, beta: f32) {
      let pm = program_id(0)
      let pn = program_id(1)
      var acc: tile<f32>[TILE_M, TILE_N] = 0.0
      for kt in range(0, K, TILE_K) {
        let a = A[pm * TILE_M :+ TILE_M, kt :+ TILE_K]
        let b = B[kt :+ TILE_K, pn * TILE_N :+ TILE_N]
        acc += dot(a, b)
      }
      let c_old = C[pm * TILE_M :+ TILE_M, pn * TILE_N :+ TILE_N]
      C[pm * TILE_M :+ TILE_M, pn * TILE_N :+ TILE_N] = alpha * acc + beta * c_old
    }
}

fn main() -> Result<()> {
    // Not multiples of any tile size: edge programs are masked.
    let (m, n, k) = (333, 517, 129);
    let (alpha, beta) = (1.5f32, -0.5f32);
    let mut rng = SplitMix64::new(2);
    let (a, b, c) = f32_inputs(&mut rng, m, n, k);

    let device = phobos::Device::default().context("opening the default device")?;
    let ta = device.tensor_from(&a, [m, k])?;
    let tb = device.tensor_from(&b, [k, n])?;
    let mut tc = device.tensor_from(&c, [m, n])?;
    gemm_f32::launch(&device, &ta, &tb, &mut tc, alpha, beta).context("launching gemm_f32")?;
    let got = tc.to_vec()?;

    // A K-term f32 dot product is within K * 2^-24 * sum|a||b| of exact;
    // with |a|, |b| <= 1 that sum is at most K, so the error is below
    // (K + 3) * K * 2^-24 * (|alpha| + |beta|).
    let want = reference::gemm::gemm(m, n, k, &a, &b, &c, alpha, beta);
    let bound =
        (k as f64 + 3.0) * k as f64 * F32_UNIT_ROUNDOFF * f64::from(alpha.abs() + beta.abs());
    let max_error = max_abs_error(&got, &want);
    ensure!(
        max_error <= bound,
        "gemm_f32: max error {max_error:e} above {bound:e}"
    );
    println!(
        "gemm_f32 {m}x{n}x{k} on {}: max error {max_error:e} (bound {bound:e})",
        device.name()
    );
    Ok(())
}
