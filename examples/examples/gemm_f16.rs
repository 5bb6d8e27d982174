//! `C = A @ B` with f16 inputs and f32 accumulation, checked against a
//! plain Rust loop over the same f16 values in f64.
//!
//! Run: `cargo run --release -p phobos-examples --example gemm_f16`

use anyhow::Result;

phobos::kernel! {
    // C = A @ B with f16 inputs and f32 accumulation and output.
    @autotune(TILE_M in [32, 128], TILE_N in [32, 128], TILE_K in [16, 64])
    @grid(cdiv(M, TILE_M), cdiv(N, TILE_N))
    kernel gemm_f16(A: tensor<f16>[M, K], B: tensor<f16>[K, N], C: tensor<f32>[M, N]) {
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
    phobos_examples::runnable::gemm_f16("gemm_f16", gemm_f16::launch)
}
