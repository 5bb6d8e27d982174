// MoE routing per token as one kernel: from a row of router
// probabilities (P, the softmax of the router's logits), the KSEL largest,
// largest first, equal probabilities lowest expert first (a stable sort's
// order), written as expert ids and weights. With `normalize` != 0 the
// weights are divided by their sum (summed in selection order, floored at
// f16's smallest normal, as ggml does); then multiplied by `scale` when it
// is not 1.
//
// Selection j takes the largest (probability, -index) pair below the
// previous one: every pass over the row sees the whole row, so no list of
// chosen experts is kept. Probabilities are what a softmax gives: no NaN.
//
// On the host a launch runs the engine's routing (`@host_impl`, a stable
// sort, `route_probs`); the two agree bit for bit (ops/moe/route_tests.rs).
@host_impl(route_host)
@autotune(BLOCK_E in [64, 256])
@grid(N)
kernel route(P: tensor<f32>[N, E], Ids: tensor<i32>[N, KSEL], W: tensor<f32>[N, KSEL],
             normalize: i32, scale: f32) {
  let n = program_id(0)
  var prev_p = 3.0e38
  var prev_e = -1
  var total = 0.0
  for j in range(0, KSEL) {
    var best_p = -3.0e38
    var best_e = E
    for e0 in range(0, E, BLOCK_E) {
      let e = arange(BLOCK_E) + e0
      let p = P[n, e0 :+ BLOCK_E]
      let eligible = e < E && (p < prev_p || (p == prev_p && e > prev_e))
      let top = max(where(eligible, p, -3.0e38))
      let first = min(where(eligible && p == top, e, E))
      if first < E && (top > best_p || (top == best_p && first < best_e)) {
        best_p = top
        best_e = first
      }
    }
    Ids[n, j] = best_e
    W[n, j] = best_p
    total = total + best_p
    prev_p = best_p
    prev_e = best_e
  }
  if normalize != 0 || scale != 1.0 {
    let sum = max(total, 6.1035156e-5)
    for j in range(0, KSEL) {
      var w = W[n, j]
      if normalize != 0 {
        w = w / sum
      }
      if scale != 1.0 {
        w = w * scale
      }
      W[n, j] = w
    }
  }
}
