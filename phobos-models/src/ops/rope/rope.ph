// Rotary position embedding as kernels, in ggml's two layouts, with the
// query scale fused in: every dim of every head is multiplied by `scale`
// after the rotation (1 for keys).
//
// CS[t, i, :] is (cos, sin) of pair i's angle at token t's position, made
// by `rope_angles` below (ggml accumulates the angle by repeated f32
// multiplies, a serial chain per position); both of a token's launches,
// queries and keys, share it. The first 2 * HALF dims of a head rotate; the rest pass
// through (scaled).
//
// Pairs go in whole blocks of 32 and then one at a time: a block's lanes
// past HALF are other elements of the head (the second half's, or the
// pass-through ones), which a masked store would write as well.
//
// On the host each launch runs the engine's hand-written rotation
// (`@host_impl`, SPEC.md §11); ops/rope/tests.rs compares these bodies
// with it.

// Neox: pair i is (i, i + HALF), contiguous halves.
@host_impl(rope_neox_host)
@grid(T, NH)
kernel rope_neox(X: tensor<f32>[T, NH, D], CS: tensor<f32>[T, HALF, 2], scale: f32) {
  let t = program_id(0)
  let h = program_id(1)
  let whole = HALF / 32 * 32
  for i in range(0, whole, 32) {
    let c = CS[t, i :+ 32, 0]
    let s = CS[t, i :+ 32, 1]
    let x0 = X[t, h, i :+ 32]
    let x1 = X[t, h, i + HALF :+ 32]
    X[t, h, i :+ 32] = (x0 * c - x1 * s) * scale
    X[t, h, i + HALF :+ 32] = (x0 * s + x1 * c) * scale
  }
  for i in range(whole, HALF) {
    let c = CS[t, i, 0]
    let s = CS[t, i, 1]
    let x0 = X[t, h, i]
    let x1 = X[t, h, i + HALF]
    X[t, h, i] = (x0 * c - x1 * s) * scale
    X[t, h, i + HALF] = (x0 * s + x1 * c) * scale
  }
  for d in range(2 * HALF, D, 32) {
    X[t, h, d :+ 32] *= scale
  }
}

// Normal: pair i is (2i, 2i + 1), adjacent; the head is viewed as DP pairs
// so the two members are the last dim's 0 and 1.
@host_impl(rope_normal_host)
@grid(T, NH)
kernel rope_normal(X: tensor<f32>[T, NH, DP, 2], CS: tensor<f32>[T, HALF, 2], scale: f32) {
  let t = program_id(0)
  let h = program_id(1)
  let whole = HALF / 32 * 32
  for i in range(0, whole, 32) {
    let c = CS[t, i :+ 32, 0]
    let s = CS[t, i :+ 32, 1]
    let x0 = X[t, h, i :+ 32, 0]
    let x1 = X[t, h, i :+ 32, 1]
    X[t, h, i :+ 32, 0] = (x0 * c - x1 * s) * scale
    X[t, h, i :+ 32, 1] = (x0 * s + x1 * c) * scale
  }
  for i in range(whole, HALF) {
    let c = CS[t, i, 0]
    let s = CS[t, i, 1]
    let x0 = X[t, h, i, 0]
    let x1 = X[t, h, i, 1]
    X[t, h, i, 0] = (x0 * c - x1 * s) * scale
    X[t, h, i, 1] = (x0 * s + x1 * c) * scale
  }
  for p in range(HALF, DP, 32) {
    X[t, h, p :+ 32, 0] *= scale
    X[t, h, p :+ 32, 1] *= scale
  }
}

// CS[t, i, :] = (cos, sin) of pair i's angle at position pos0 + t. The
// angle starts at (pos0 + t) * freq_scale and is multiplied by theta_scale
// once per pair, ggml's order (a serial chain per token, so pair i's angle
// carries i roundings); one program per token.
@host_impl(rope_angles_host)
@grid(T)
kernel rope_angles(CS: tensor<f32>[T, HALF, 2], pos0: i32, freq_scale: f32, theta_scale: f32) {
  let t = program_id(0)
  var theta = f32(pos0 + t) * freq_scale
  for i in range(0, HALF) {
    CS[t, i, 0] = cos(theta)
    CS[t, i, 1] = sin(theta)
    theta *= theta_scale
  }
}
