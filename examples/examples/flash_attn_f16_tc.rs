//! Flash attention with f16 inputs and output (f32 softmax state and
//! accumulator) on random data, checked against plain softmax(scale * Q K^T) V
//! per head in f64 over the same f16 values; both contractions on tensor
//! cores (`@tensorcore`).
//!
//! Run: `cargo run --release -p phobos-examples --example flash_attn_f16_tc`

use anyhow::{Context, Result, ensure};
use half::f16;
use phobos_examples::check::max_abs_error;
use phobos_examples::check::{F16_UNIT_ROUNDOFF, F32_UNIT_ROUNDOFF};
use phobos_examples::random::SplitMix64;
use phobos_examples::reference;

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

fn to_f16(values: &[f32]) -> Vec<f16> {
    values.iter().map(|&x| f16::from_f32(x)).collect()
}

fn main() -> Result<()> {
    let (heads, seq_q, seq_k, dim) = (3, 100, 203, 64);
    let scale = 1.0 / (dim as f32).sqrt();
    let mut rng = SplitMix64::new(7);
    let q = rng
        .vec(heads * seq_q * dim, -1.0, 1.0)
        .into_iter()
        .map(|x| f16::from_f32(x).to_f32())
        .collect::<Vec<_>>();
    let k = rng
        .vec(heads * seq_k * dim, -1.0, 1.0)
        .into_iter()
        .map(|x| f16::from_f32(x).to_f32())
        .collect::<Vec<_>>();
    let v = rng
        .vec(heads * seq_k * dim, -1.0, 1.0)
        .into_iter()
        .map(|x| f16::from_f32(x).to_f32())
        .collect::<Vec<_>>();

    let device = phobos::Device::default().context("opening the default device")?;
    let tq = device.tensor_from(&to_f16(&q), [heads, seq_q, dim])?;
    let tk = device.tensor_from(&to_f16(&k), [heads, seq_k, dim])?;
    let tv = device.tensor_from(&to_f16(&v), [heads, seq_k, dim])?;
    let mut to = device.zeros::<f16>([heads, seq_q, dim])?;
    flash_attn_f16_tc::launch(&device, &tq, &tk, &tv, &mut to, scale)
        .context("launching flash_attn_f16_tc")?;
    let got: Vec<f32> = to.to_vec()?.into_iter().map(f32::from).collect();

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
    // Outputs are convex combinations of values in [-1, 1]; rounding the
    // probabilities to f16 before P @ V and the output to f16 each cost
    // 2^-11 of the largest value; the f32 part is as in flash_attn_f32.
    let bound = 2.0 * F16_UNIT_ROUNDOFF
        + (4.0 * 66.0 * 8.0 + 2.0 * seq_k as f64 + 64.0) * F32_UNIT_ROUNDOFF;
    let max_error = max_abs_error(&got, &want);
    ensure!(
        max_error <= bound,
        "flash_attn_f16_tc: max error {max_error:e} above {bound:e}"
    );
    println!(
        "flash_attn_f16_tc H={heads} S={seq_q} T={seq_k} on {}: max error {max_error:e} (bound {bound:e})",
        device.name()
    );
    Ok(())
}
