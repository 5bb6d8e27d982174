//! `C = A @ B` with f16 inputs and f32 accumulation on tensor cores
//! (`@tensorcore`) with double-buffered operand tiles
//! (`@pipeline`), checked against a plain Rust loop over the same f16
//! values in f64. M, N and K are ragged on purpose (masked edges).
//!
//! Run: `cargo run --release -p phobos-examples --example gemm_f16_tc_pipe`

use anyhow::Result;

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
    phobos_examples::runnable::gemm_f16("gemm_f16_tc_pipe", gemm_f16_tc_pipe::launch)
}
