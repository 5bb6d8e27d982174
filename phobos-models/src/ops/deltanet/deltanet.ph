// The gated delta rule of Qwen3.5's linear-attention layers (ggml's
// `gated_delta_net`) as one kernel. The state of value head h is stored
// transposed, S[h, j, i] = S_h[key i][value j]; its value rows are
// independent, so one program runs a block of rows of one head through
// every token in order:
//
//   pred  = exp(g) * (S k)              (per row j: the state's answer to k)
//   delta = beta * (v - pred)
//   S     = exp(g) * S + delta k^T
//   o     = (S q) / sqrt(D)
//
// Value head h reads key head h % NK (ggml tiles the key heads over the
// value heads). The first pass over the keys only reads S; the second
// reads each block, writes it back updated and reads the output from it,
// so every element of S is read and written by the same program (and in
// the same tile layout) in order.
//
// On the host a launch runs the engine's hand-written recurrence
// (`@host_impl`, ops/deltanet/mod.rs, ggml's operation order); the two
// differ in the order of their sums and in where the decay multiplies
// (exp(g) * (S k) here, (exp(g) * S) k there), within f32's bound.
@host_impl(gated_delta_rule_host)
@autotune(BLOCK_J in [16, 32], BLOCK_I in [64, 128])
@grid(NV, cdiv(D, BLOCK_J))
kernel gated_delta_rule(Q: tensor<f32>[T, NK, D], K: tensor<f32>[T, NK, D],
                        V: tensor<f32>[T, NV, D], G: tensor<f32>[T, NV],
                        Beta: tensor<f32>[T, NV], S: tensor<f32>[NV, D, D],
                        O: tensor<f32>[T, NV, D]) {
  let h = program_id(0)
  let j0 = program_id(1) * BLOCK_J
  let hk = h % NK
  let scale = 1.0 / sqrt(f32(D))
  for t in range(0, T) {
    let decay = exp(G[t, h])
    let b = Beta[t, h]
    var sk: tile<f32>[BLOCK_J, 1] = 0.0
    for i0 in range(0, D, BLOCK_I) {
      sk += dot_t(S[h, j0 :+ BLOCK_J, i0 :+ BLOCK_I], K[t, hk :+ 1, i0 :+ BLOCK_I])
    }
    let delta = (reshape(V[t, h, j0 :+ BLOCK_J], BLOCK_J, 1) - sk * decay) * b
    var sq: tile<f32>[BLOCK_J, 1] = 0.0
    for i0 in range(0, D, BLOCK_I) {
      let s = S[h, j0 :+ BLOCK_J, i0 :+ BLOCK_I] * decay + dot(delta, K[t, hk :+ 1, i0 :+ BLOCK_I])
      S[h, j0 :+ BLOCK_J, i0 :+ BLOCK_I] = s
      sq += dot_t(s, Q[t, hk :+ 1, i0 :+ BLOCK_I])
    }
    O[t, h, j0 :+ BLOCK_J] = reshape(sq, BLOCK_J) * scale
  }
}
