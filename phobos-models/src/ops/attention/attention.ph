// Causal attention of new tokens over an f16 KV cache, as one kernel: grouped
// query heads, an optional sliding window and optional softcapping. One
// program per (token, query head, block of value columns); each is a
// flash-style loop over blocks of the keys it can see (online softmax, the
// accumulator rescaled when the running max grows).
//
// Q holds the new tokens' queries, already scaled; the caches hold rows
// 0..P, and the token t sits at position pos0 + t. `window` > 0 hides a key
// at j from a query at p when p - j >= window; `softcap` > 0 maps a score s
// to softcap * tanh(s / softcap). Keys at or past P are never read.
//
// On the host a launch runs the engine's hand-written flash kernel
// (`@host_impl`, ops/attention/kernel.rs: queries in SIMD lanes, key
// blocks converted once); the two differ only in the order of their sums
// and in how the running max splits each exp, within f32's bound
// (ops/attention/tests.rs compares both with an f64 definition).
@host_impl(attention_host)
@autotune(BLOCK_N in [32, 64], BLOCK_V in [128, 256])
@grid(T, NH, cdiv(DV, BLOCK_V))
kernel attention(Q: tensor<f32>[T, NH, DK], Kc: tensor<f16>[P, NKV, DK],
                 Vc: tensor<f16>[P, NKV, DV], O: tensor<f32>[T, NH, DV],
                 pos0: i32, window: i32, softcap: f32) {
  let t = program_id(0)
  let h = program_id(1)
  let v0 = program_id(2) * BLOCK_V
  let kv = h / (NH / NKV)
  let pos = pos0 + t
  var first = 0
  if window > 0 {
    first = max(pos - window + 1, 0)
  }
  let last = min(pos, P - 1)
  var row_max: tile<f32>[1, 1] = -1.0e30
  var denom: tile<f32>[1, 1] = 0.0
  var acc: tile<f32>[1, BLOCK_V] = 0.0
  for n0 in range((first / BLOCK_N) * BLOCK_N, last + 1, BLOCK_N) {
    var s: tile<f32>[1, BLOCK_N] = 0.0
    for d0 in range(0, DK, 64) {
      s += dot_t(Q[t, h :+ 1, d0 :+ 64], f32(Kc[n0 :+ BLOCK_N, kv, d0 :+ 64]))
    }
    if softcap > 0.0 {
      s = softcap * tanh(s / softcap)
    }
    let j = arange(BLOCK_N) + n0
    s = where(j >= first && j <= last, s, -1.0e30)
    let new_max = max(row_max, rowmax(s))
    let p = exp(s - new_max)
    let rescale = exp(row_max - new_max)
    denom = denom * rescale + rowsum(p)
    acc = acc * rescale + dot(p, f32(Vc[n0 :+ BLOCK_N, kv, v0 :+ BLOCK_V]))
    row_max = new_max
  }
  // A program that sees no key (P == 0) writes zeros, not 0 / 0.
  O[t, h :+ 1, v0 :+ BLOCK_V] = acc / max(denom, 1.0e-30)
}
