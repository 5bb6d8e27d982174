// The short causal convolution of Qwen3.5's linear-attention layers
// (ggml's `ssm_conv`) as one kernel: one filter of KW taps per channel,
// over the channel's state (its last H = KW - 1 inputs, oldest first) then
// the new tokens. The output of token t is the sum over taps i, in order
// from 0, of W[c, i] * input[t + i - H], where inputs before the first new
// token come from the state; afterwards the state holds the last H inputs.
// One program per block of channels; every tap sum runs in the host op's
// order, so the two bodies agree bit for bit.
//
// The state is read for the outputs before it is rewritten, and rewritten
// in ascending order, each slot from a later slot (or a new token), so
// every read sees the old state.
@host_impl(causal_conv1d_host)
@autotune(BLOCK_C in [64, 256])
@grid(cdiv(C, BLOCK_C))
kernel causal_conv1d(X: tensor<f32>[T, C], W: tensor<f32>[C, KW],
                     State: tensor<f32>[C, H], Out: tensor<f32>[T, C]) {
  let c0 = program_id(0) * BLOCK_C
  for t in range(0, T) {
    var acc: tile<f32>[BLOCK_C] = 0.0
    for i in range(0, KW) {
      let src = t + i - H
      var x: tile<f32>[BLOCK_C] = 0.0
      if src >= 0 {
        x = X[src, c0 :+ BLOCK_C]
      } else {
        x = State[c0 :+ BLOCK_C, t + i]
      }
      acc = acc + x * W[c0 :+ BLOCK_C, i]
    }
    Out[t, c0 :+ BLOCK_C] = acc
  }
  for m in range(0, H) {
    if m + T < H {
      State[c0 :+ BLOCK_C, m] = State[c0 :+ BLOCK_C, m + T]
    } else {
      State[c0 :+ BLOCK_C, m] = X[m + T - H, c0 :+ BLOCK_C]
    }
  }
}
