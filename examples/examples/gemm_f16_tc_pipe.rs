//! `C = A @ B` with f16 inputs and f32 accumulation on tensor cores
//! (`@tensorcore`) with double-buffered operand tiles
//! (`@pipeline`), checked against a plain Rust loop over the same f16
//! values in f64. M, N and K are ragged on purpose (masked edges).
//!
//! Run: `cargo run --release -p phobos-examples --example gemm_f16_tc_pipe`

use anyhow::{Context, Result, ensure};
use half::f16;
use phobos_examples::check::F32_UNIT_ROUNDOFF;
use phobos_examples::check::max_abs_error;
use phobos_examples::random::SplitMix64;
use phobos_examples::reference;

phobos::kernel! {
    // gemm_f16_tc with @pipeline: the A and B tiles of iteration k+1 load
    // while mma.sync consumes iteration k's (cp.async on sm_80+, register
    // prefetch on sm_75); ldmatrix reads the half the current iteration owns.
    @tensorcore
    @pipeline
    @launch(threads = 128)
    @autotune(TILE_M in [64, 128], TILE_N in [64, 128], TILE_K in [32])
    @grid(cdiv(M, TILE_M), cdiv(N, TILE_N))
    kernel gemm_f16_tc_pipe(A: tensor<f16>[M, K], B: tensor<f16>[K, N], C: tensor<f32>[M, N]) {
      let pm = program_id(0)
      let pn = program_id(1)
      var acc: tile<f32>[TILE_M, TILE_N] = 0.0
      for kt in range(0, K, TILE_K) {
        let a = A[pm * TILE_M :+ TILE_M, kt :+ TILE_K]
        let b = B[kt :+ TILE_K, pn * TILE_N :+ TILE_N]
        acc += dot(a, b)
      }
      C[pm * TILE_M :+ TILE_M, pn * TILE_N :+ TILE_N] = acc
    }
}

fn main() -> Result<()> {
    let (m, n, k) = (200, 150, 333);
    let mut rng = SplitMix64::new(3);
    let a: Vec<f16> = rng
        .vec(m * k, -1.0, 1.0)
        .into_iter()
        .map(f16::from_f32)
        .collect();
    let b: Vec<f16> = rng
        .vec(k * n, -1.0, 1.0)
        .into_iter()
        .map(f16::from_f32)
        .collect();

    let device = phobos::Device::default().context("opening the default device")?;
    let ta = device.tensor_from(&a, [m, k])?;
    let tb = device.tensor_from(&b, [k, n])?;
    let mut tc = device.zeros::<f32>([m, n])?;
    gemm_f16_tc_pipe::launch(&device, &ta, &tb, &mut tc).context("launching gemm_f16_tc_pipe")?;
    let got = tc.to_vec()?;

    // Products of f16 values are exact in f32; only the K-term f32
    // accumulation rounds: error <= (K + 1) * 2^-24 * sum|a||b| <= (K + 1) K 2^-24.
    let want: Vec<f32> = reference::gemm::matmul(m, n, k, &a, &b)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    let bound = (k as f64 + 2.0) * k as f64 * F32_UNIT_ROUNDOFF;
    let max_error = max_abs_error(&got, &want);
    ensure!(
        max_error <= bound,
        "gemm_f16_tc_pipe: max error {max_error:e} above {bound:e}"
    );
    println!(
        "gemm_f16_tc_pipe {m}x{n}x{k} on {}: max error {max_error:e} (bound {bound:e})",
        device.name()
    );
    Ok(())
}
