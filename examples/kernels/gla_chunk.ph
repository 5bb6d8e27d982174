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
