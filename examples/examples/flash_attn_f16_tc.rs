//! Flash attention with f16 inputs and output (f32 softmax state and
//! accumulator) on random data, checked against plain softmax(scale * Q K^T) V
//! per head in f64 over the same f16 values; both contractions on tensor
//! cores (`@tensorcore`).
//!
//! Run: `cargo run --release -p phobos-examples --example flash_attn_f16_tc`

use anyhow::Result;

phobos::kernel! {
    // flash_attn_f16 on tensor cores (@tensorcore): dot_t(q, k) and dot(p, v)
    // run as mma.sync. f16 Q, K, V and O; the online-softmax state and the
    // accumulator in f32. Probabilities are rounded to f16 for the P @ V
    // contraction, as tensor-core kernels do.
    @tensorcore
    @launch(threads = 128)
    @autotune(BLOCK_M in [16, 64], BLOCK_N in [16, 64])
    @grid(cdiv(S, BLOCK_M), H)
    kernel flash_attn_f16_tc(Q: tensor<f16>[H, S, 64], K: tensor<f16>[H, T, 64],
                             V: tensor<f16>[H, T, 64], O: tensor<f16>[H, S, 64], scale: f32) {
      let m0 = program_id(0) * BLOCK_M
      let h = program_id(1)
      let q = Q[h, m0 :+ BLOCK_M, :]
      var row_max: tile<f32>[BLOCK_M, 1] = -1.0e30
      var denom: tile<f32>[BLOCK_M, 1] = 0.0
      var acc: tile<f32>[BLOCK_M, 64] = 0.0
      for n0 in range(0, T, BLOCK_N) {
        let k = K[h, n0 :+ BLOCK_N, :]
        let v = V[h, n0 :+ BLOCK_N, :]
        let s = where(arange(BLOCK_N) + n0 < T, dot_t(q, k) * scale, -1.0e30)
        let new_max = max(row_max, rowmax(s))
        let p = exp(s - new_max)
        let rescale = exp(row_max - new_max)
        denom = denom * rescale + rowsum(p)
        acc = acc * rescale + dot(f16(p), v)
        row_max = new_max
      }
      O[h, m0 :+ BLOCK_M, :] = f16(acc / denom)
    }
}

fn main() -> Result<()> {
    phobos_examples::runnable::flash_attn_f16("flash_attn_f16_tc", flash_attn_f16_tc::launch)
}
