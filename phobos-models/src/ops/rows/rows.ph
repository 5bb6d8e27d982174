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
