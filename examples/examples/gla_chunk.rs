//! Chunkwise gated linear attention on random data, checked against the
//! step-by-step recurrence in f64.
//!
//! Run: `cargo run --release -p phobos-examples --example gla_chunk`

use anyhow::{Context, Result, ensure};
use phobos_examples::check::F32_UNIT_ROUNDOFF;
use phobos_examples::random::SplitMix64;
use phobos_examples::reference::gla::{GlaHead, gla_recurrent};

phobos::kernel! {
    // Chunkwise gated linear attention (scalar log-decay gate per step), one
    // head per program. The recurrence it computes is
    //   S_t = exp(g_t) * S_{t-1} + k_t^T v_t,   o_t = scale * q_t S_t
    // but a chunk of CHUNK steps at a time: the intra-chunk part as a masked
    // (decayed) attention matrix, the inter-chunk part through the carried state.
    // G is [H, T, 1] so that a slice of it is a column tile.
    @autotune(CHUNK in [16, 64])
    @grid(H)
    kernel gla_chunk(Q: tensor<f32>[H, T, 64], K: tensor<f32>[H, T, 64], V: tensor<f32>[H, T, 64],
                     G: tensor<f32>[H, T, 1], O: tensor<f32>[H, T, 64], scale: f32) {
      let h = program_id(0)
      var state: tile<f32>[64, 64] = 0.0
      for t0 in range(0, T, CHUNK) {
        let q = Q[h, t0 :+ CHUNK, :] * scale
        let k = K[h, t0 :+ CHUNK, :]
        let v = V[h, t0 :+ CHUNK, :]
        // Steps past T read a zero gate: no decay, and their k and v are zero.
        let g = G[h, t0 :+ CHUNK, :]
        let decay_in = cumsum(g)
        let chunk_decay = sum(g)
        let intra = tril(dot_t(q, k) * exp(decay_in - transpose(decay_in)))
        O[h, t0 :+ CHUNK, :] = dot(q * exp(decay_in), state) + dot(intra, v)
        let k_decayed = k * exp(chunk_decay - decay_in)
        state = state * exp(chunk_decay) + dot(transpose(k_decayed), v)
      }
    }
}

fn main() -> Result<()> {
    let (heads, steps, dim) = (2, 301, 64);
    let scale = 0.125f32;
    let mut rng = SplitMix64::new(8);
    let q = rng.vec(heads * steps * dim, -1.0, 1.0);
    let k = rng.vec(heads * steps * dim, -1.0, 1.0);
    let v = rng.vec(heads * steps * dim, -1.0, 1.0);
    let g = rng.vec(heads * steps, -0.3, 0.0);

    let device = phobos::Device::default().context("opening the default device")?;
    let shape = [heads, steps, dim];
    let (tq, tk, tv) = (
        device.tensor_from(&q, shape)?,
        device.tensor_from(&k, shape)?,
        device.tensor_from(&v, shape)?,
    );
    let tg = device.tensor_from(&g, [heads, steps, 1])?;
    let mut to = device.zeros::<f32>(shape)?;
    gla_chunk::launch(&device, &tq, &tk, &tv, &tg, &mut to, scale)
        .context("launching gla_chunk")?;
    let got = to.to_vec()?;

    let per_head = steps * dim;
    let mut worst = 0.0f64;
    for h in 0..heads {
        let head = GlaHead {
            steps,
            key_dim: dim,
            value_dim: dim,
            q: &q[h * per_head..(h + 1) * per_head],
            k: &k[h * per_head..(h + 1) * per_head],
            v: &v[h * per_head..(h + 1) * per_head],
            log_gate: &g[h * steps..(h + 1) * steps],
        };
        let want = gla_recurrent(&head, scale, false);
        let magnitude = gla_recurrent(&head, scale, true);
        for i in 0..per_head {
            let error = (f64::from(got[h * per_head + i]) - want[i]).abs()
                / magnitude[i].max(f64::MIN_POSITIVE);
            worst = worst.max(error);
        }
    }
    // Relative to the magnitude of the summed terms: the in-chunk decays come
    // from a cumsum of up to CHUNK gates (tests/kernels/gla.rs derives it).
    let chunk = 16.0;
    let relative = (steps as f64
        + 4.0 * chunk
        + 160.0
        + 3.0 * (2.0 * chunk * chunk * 0.3 + chunk * 0.3 + 2.0))
        * F32_UNIT_ROUNDOFF;
    ensure!(
        worst <= relative,
        "gla_chunk: max relative error {worst:e} above {relative:e}"
    );
    println!(
        "gla_chunk H={heads} T={steps} on {}: max relative error {worst:e}",
        device.name()
    );
    Ok(())
}
