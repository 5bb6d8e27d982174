//! `C = A @ B` with f16 inputs and f32 accumulation on tensor cores
//! (`@tensorcore`), checked against a plain Rust loop over the same f16
//! values in f64. M, N and K are ragged on purpose (masked edges).
//!
//! Run: `cargo run --release -p phobos-examples --example gemm_f16_tc`

use anyhow::Result;

phobos::kernel! {
    // gemm_f16 on tensor cores: C = A @ B with f16 inputs, f32 accumulation
    // and output. The MLIR back end runs the `dot` as mma.sync (m16n8k16 on
    // sm_80+, m16n8k8 on sm_75) with the accumulator in the mma C-fragment
    // layout; the host back end ignores @tensorcore.
    @tensorcore
    @launch(threads = 128)
    @autotune(TILE_M in [64, 128], TILE_N in [64, 128], TILE_K in [32])
    @grid(cdiv(M, TILE_M), cdiv(N, TILE_N))
    kernel gemm_f16_tc(A: tensor<f16>[M, K], B: tensor<f16>[K, N], C: tensor<f32>[M, N]) {
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
    phobos_examples::runnable::gemm_f16("gemm_f16_tc", gemm_f16_tc::launch)
}
