// The elementwise steps of Qwen3.5's linear-attention mixer around the
// gated delta rule (arch/qwen35/linear_attn.rs), in place on the engine's
// buffers: the per-head write strength and decay, the SiLU after the
// short convolution, the L2 norm of the queries and keys, and the output
// gate.
//
// On the host each launch runs the engine's hand-written op (`@host_impl`,
// SPEC.md §11, ops/deltanet/gates.rs): llama.cpp's graph operation for
// operation (libm's exp and log), which the golden tests hold to its
// logits. `launch_generated` runs these bodies (gates_tests.rs compares
// the two); the GPU runs them.

// X[r, :] = X[r, :] / sqrt(sum(X[r, :]^2) + eps), built as llama.cpp
// builds it: an RMS norm with eps / C, the sum of the f32 squares in f64
// (as ggml's rms_norm keeps it), then a scale by 1 / sqrt(C).
@host_impl(l2_norm_host)
@grid(R)
kernel l2_norm(X: tensor<f32>[R, C], eps: f32) {
  let r = program_id(0)
  var sq: tile<f64>[256] = 0.0
  for c in range(0, C, 256) {
    let x = X[r, c :+ 256]
    sq += f64(x * x)
  }
  let n = f32(C)
  let scale = 1.0 / sqrt(f32(sum(sq) / f64(C)) + eps / n)
  let post = 1.0 / sqrt(n)
  for c in range(0, C, 256) {
    X[r, c :+ 256] = X[r, c :+ 256] * scale * post
  }
}

// X = silu(X) (the convolution's activation).
@host_impl(silu_in_place_host)
@grid(cdiv(N, 1024))
kernel silu_in_place(X: tensor<f32>[N]) {
  let i = program_id(0) * 1024
  X[i :+ 1024] = silu(X[i :+ 1024])
}

// X = X * silu(Z) (the mixer's output gate).
@host_impl(mul_silu_host)
@grid(cdiv(N, 1024))
kernel mul_silu(X: tensor<f32>[N], Z: tensor<f32>[N]) {
  let i = program_id(0) * 1024
  X[i :+ 1024] = X[i :+ 1024] * silu(Z[i :+ 1024])
}

// Per token t and value head h, from the two small projections:
//   Beta[t, h] = sigmoid(Beta[t, h])                       (write strength)
//   G[t, h]    = softplus(G[t, h] + DtBias[h]) * A[h]      (log decay)
// with ggml's softplus, log(1 + exp(x)) and the identity above 20.
@host_impl(deltanet_gates_host)
@grid(T, cdiv(H, 256))
kernel deltanet_gates(Beta: tensor<f32>[T, H], G: tensor<f32>[T, H],
                      DtBias: tensor<f32>[H], A: tensor<f32>[H]) {
  let t = program_id(0)
  let h = program_id(1) * 256
  Beta[t, h :+ 256] = sigmoid(Beta[t, h :+ 256])
  let x = G[t, h :+ 256] + DtBias[h :+ 256]
  G[t, h :+ 256] = where(x > 20.0, x, log(1.0 + exp(x))) * A[h :+ 256]
}
