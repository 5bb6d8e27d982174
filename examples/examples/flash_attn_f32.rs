//! Flash attention (online softmax) in f32 on random data, checked against
//! plain softmax(scale * Q K^T) V per head in f64.
//!
//! Run: `cargo run --release -p phobos-examples --example flash_attn_f32`

use anyhow::{Context, Result, ensure};
use phobos_examples::check::F32_UNIT_ROUNDOFF;
use phobos_examples::check::max_abs_error;
use phobos_examples::random::SplitMix64;
use phobos_examples::reference;

phobos::kernel! {
    // Attention O = softmax(scale * Q K^T) V per head, head dim 64, with the
    // online softmax: K and V are streamed in BLOCK_N rows, never materialized
    // as a full score matrix. Key columns past T are masked out of the softmax.
    @autotune(BLOCK_M in [16, 64], BLOCK_N in [16, 64])
    @grid(cdiv(S, BLOCK_M), H)
    kernel flash_attn_f32(Q: tensor<f32>[H, S, 64], K: tensor<f32>[H, T, 64],
                          V: tensor<f32>[H, T, 64], O: tensor<f32>[H, S, 64], scale: f32) {
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
        acc = acc * rescale + dot(p, v)
        row_max = new_max
      }
      O[h, m0 :+ BLOCK_M, :] = acc / denom
    }
}

fn main() -> Result<()> {
    let (heads, seq_q, seq_k, dim) = (3, 100, 203, 64);
    let scale = 1.0 / (dim as f32).sqrt();
    let mut rng = SplitMix64::new(7);
    let q = rng.vec(heads * seq_q * dim, -1.0, 1.0);
    let k = rng.vec(heads * seq_k * dim, -1.0, 1.0);
    let v = rng.vec(heads * seq_k * dim, -1.0, 1.0);

    let device = phobos::Device::default().context("opening the default device")?;
    let tq = device.tensor_from(&q, [heads, seq_q, dim])?;
    let tk = device.tensor_from(&k, [heads, seq_k, dim])?;
    let tv = device.tensor_from(&v, [heads, seq_k, dim])?;
    let mut to = device.zeros::<f32>([heads, seq_q, dim])?;
    flash_attn_f32::launch(&device, &tq, &tk, &tv, &mut to, scale)
        .context("launching flash_attn_f32")?;
    let got: Vec<f32> = to.to_vec()?;

    let (qs, ks) = (seq_q * dim, seq_k * dim);
    let want: Vec<f32> = (0..heads)
        .flat_map(|h| {
            let (q, k, v) = (
                &q[h * qs..(h + 1) * qs],
                &k[h * ks..(h + 1) * ks],
                &v[h * ks..(h + 1) * ks],
            );
            reference::attention::attention(seq_q, seq_k, dim, dim, q, k, v, scale)
        })
        .map(|x| x as f32)
        .collect();
    // Outputs are convex combinations of values in [-1, 1]; scores carry a
    // 64-term dot-product error and the softmax sums T terms
    // (tests/kernels/attention.rs derives the per-row bound).
    let bound = (4.0 * 66.0 * 8.0 + 2.0 * seq_k as f64 + 64.0) * F32_UNIT_ROUNDOFF;
    let max_error = max_abs_error(&got, &want);
    ensure!(
        max_error <= bound,
        "flash_attn_f32: max error {max_error:e} above {bound:e}"
    );
    println!(
        "flash_attn_f32 H={heads} S={seq_q} T={seq_k} on {}: max error {max_error:e} (bound {bound:e})",
        device.name()
    );
    Ok(())
}
