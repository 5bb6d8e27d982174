// The engine's row-wise ops as kernels: RMSNorm and the gated activations
// of the feed-forward block, in place on the engine's buffers.
//
// On the host each launch runs the engine's hand-written op (`@host_impl`,
// SPEC.md §11): ggml's numerics operation for operation, which the golden
// tests hold to llama.cpp's logits. `launch_generated` runs these bodies
// (ops/rows/tests.rs compares the two); the GPU runs them.

// X[r, :] *= W / sqrt(mean(X[r, :]^2) + eps), one row per program.
@host_impl(rms_norm_host)
@grid(R)
kernel rms_norm(X: tensor<f32>[R, C], W: tensor<f32>[C], eps: f32) {
  let r = program_id(0)
  var sq: tile<f32>[256] = 0.0
  for c in range(0, C, 256) {
    let x = X[r, c :+ 256]
    sq += x * x
  }
  let scale = 1.0 / sqrt(sum(sq) / f32(C) + eps)
  for c in range(0, C, 256) {
    X[r, c :+ 256] = X[r, c :+ 256] * scale * W[c :+ 256]
  }
}

// G = gelu(G) * U with ggml's CPU numerics: the argument and the result
// of the tanh GELU rounded to f16, 0 from -10 down, the identity from 10 up.
@host_impl(geglu_host)
@grid(cdiv(N, 1024))
kernel geglu(G: tensor<f32>[N], U: tensor<f32>[N]) {
  let i = program_id(0) * 1024
  let g = G[i :+ 1024]
  let act = f32(f16(gelu(f32(f16(g)))))
  G[i :+ 1024] = where(g <= -10.0, 0.0, where(g >= 10.0, g, act) * U[i :+ 1024])
}

// G = silu(G) * U.
@host_impl(swiglu_host)
@grid(cdiv(N, 1024))
kernel swiglu(G: tensor<f32>[N], U: tensor<f32>[N]) {
  let i = program_id(0) * 1024
  G[i :+ 1024] = silu(G[i :+ 1024]) * U[i :+ 1024]
}

// X += Y (the residual adds).
@host_impl(add_host)
@grid(cdiv(N, 1024))
kernel add(X: tensor<f32>[N], Y: tensor<f32>[N]) {
  let i = program_id(0) * 1024
  X[i :+ 1024] = X[i :+ 1024] + Y[i :+ 1024]
}

// X[r, :] += B for every row (projection biases).
@host_impl(add_bias_host)
@grid(R, cdiv(C, 256))
kernel add_bias(X: tensor<f32>[R, C], B: tensor<f32>[C]) {
  let r = program_id(0)
  let c = program_id(1) * 256
  X[r, c :+ 256] = X[r, c :+ 256] + B[c :+ 256]
}

// X[r, :] = exp(X[r, :] - max) / sum(exp(X[r, :] - max)), one row per
// program (the MoE router's gating rows). A row with no value above -inf
// (every expert masked) is left as it is, as the host op does, not filled
// with 0/0. Masked lanes load the row's first element, which never raises
// its max; the sum is kept in f64 as the host's is.
@host_impl(softmax_host)
@grid(R)
kernel softmax(X: tensor<f32>[R, C]) {
  let r = program_id(0)
  let first = X[r, 0]
  var mx: tile<f32>[256] = first
  for c in range(0, C, 256) {
    mx = max(mx, load(X[r, c :+ 256], first))
  }
  let m = max(mx)
  if m > -3.4028235e38 {
    var total: tile<f64>[256] = 0.0
    for c in range(0, C, 256) {
      let live = arange(256) < C - c
      total += where(live, f64(exp(X[r, c :+ 256] - m)), 0.0)
    }
    let inv = f32(1.0 / sum(total))
    for c in range(0, C, 256) {
      X[r, c :+ 256] = exp(X[r, c :+ 256] - m) * inv
    }
  }
}

// RMSNorm fused into the next weight product's activation quantization:
// Q[r, :] = q8_0(X[r, :] * W / sqrt(mean(X[r, :]^2) + eps)), the
// normalized row never written as f32. Not launched by the engine (see
// ARCHITECTURE.md); tested against rms_norm followed by the q8_0 quantizer.
@host_impl(rms_norm_q8_0_host)
@grid(R)
kernel rms_norm_q8_0(X: tensor<f32>[R, C], W: tensor<f32>[C], Q: tensor<q8_0>[R, C], eps: f32) {
  let r = program_id(0)
  var sq: tile<f32>[256] = 0.0
  for c in range(0, C, 256) {
    let x = X[r, c :+ 256]
    sq += x * x
  }
  let scale = 1.0 / sqrt(sum(sq) / f32(C) + eps)
  for c in range(0, C, 256) {
    Q[r, c :+ 256] = X[r, c :+ 256] * scale * W[c :+ 256]
  }
}
