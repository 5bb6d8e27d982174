// The engine's weight products: Y[M, N] = X[M, K] @ W[N, K]^T with W a GGUF
// weight, one kernel per format (the format is in the handle's type).
//
// The body is SPEC.md §14's ggml form: X quantized to the format's partner
// type along K, integer block dots, one block per step so the terms add in
// block order (iq4_xs has no integer form in the language: its body is the
// exact form). On the host, launches run the hand-written
// `phobos_rt::host::qmatmul::qmatmul_host` (`@host_impl`, SPEC.md §11):
// ggml's AVX2 float steps over the same integer sums, bit-exact with
// llama.cpp. `launch_generated` runs this body; ops/matmul/tests.rs
// compares the two on every format. The GPU runs this body.

@host_impl(qmatmul_host)
@grid(cdiv(M, 4), cdiv(N, 16))
kernel qmatmul_q4_0(X: tensor<f32>[M, K], W: tensor<q4_0>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(0) * 4
  let n0 = program_id(1) * 16
  var acc: tile<f32>[4, 16] = 0.0
  for k in range(0, K, 32) {
    acc += dot_t(X[m0 :+ 4, k :+ 32], W[n0 :+ 16, k :+ 32])
  }
  Y[m0 :+ 4, n0 :+ 16] = acc
}

@host_impl(qmatmul_host)
@grid(cdiv(M, 4), cdiv(N, 16))
kernel qmatmul_q4_1(X: tensor<f32>[M, K], W: tensor<q4_1>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(0) * 4
  let n0 = program_id(1) * 16
  var acc: tile<f32>[4, 16] = 0.0
  for k in range(0, K, 32) {
    acc += dot_t(X[m0 :+ 4, k :+ 32], W[n0 :+ 16, k :+ 32])
  }
  Y[m0 :+ 4, n0 :+ 16] = acc
}

@host_impl(qmatmul_host)
@grid(cdiv(M, 4), cdiv(N, 16))
kernel qmatmul_q5_0(X: tensor<f32>[M, K], W: tensor<q5_0>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(0) * 4
  let n0 = program_id(1) * 16
  var acc: tile<f32>[4, 16] = 0.0
  for k in range(0, K, 32) {
    acc += dot_t(X[m0 :+ 4, k :+ 32], W[n0 :+ 16, k :+ 32])
  }
  Y[m0 :+ 4, n0 :+ 16] = acc
}

@host_impl(qmatmul_host)
@grid(cdiv(M, 4), cdiv(N, 16))
kernel qmatmul_q5_1(X: tensor<f32>[M, K], W: tensor<q5_1>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(0) * 4
  let n0 = program_id(1) * 16
  var acc: tile<f32>[4, 16] = 0.0
  for k in range(0, K, 32) {
    acc += dot_t(X[m0 :+ 4, k :+ 32], W[n0 :+ 16, k :+ 32])
  }
  Y[m0 :+ 4, n0 :+ 16] = acc
}

@host_impl(qmatmul_host)
@grid(cdiv(M, 4), cdiv(N, 16))
kernel qmatmul_q8_0(X: tensor<f32>[M, K], W: tensor<q8_0>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(0) * 4
  let n0 = program_id(1) * 16
  var acc: tile<f32>[4, 16] = 0.0
  for k in range(0, K, 32) {
    acc += dot_t(X[m0 :+ 4, k :+ 32], W[n0 :+ 16, k :+ 32])
  }
  Y[m0 :+ 4, n0 :+ 16] = acc
}

@host_impl(qmatmul_host)
@grid(cdiv(M, 4), cdiv(N, 16))
kernel qmatmul_iq4_nl(X: tensor<f32>[M, K], W: tensor<iq4_nl>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(0) * 4
  let n0 = program_id(1) * 16
  var acc: tile<f32>[4, 16] = 0.0
  for k in range(0, K, 32) {
    acc += dot_t(X[m0 :+ 4, k :+ 32], W[n0 :+ 16, k :+ 32])
  }
  Y[m0 :+ 4, n0 :+ 16] = acc
}

@host_impl(qmatmul_host)
@grid(cdiv(M, 4), cdiv(N, 16))
kernel qmatmul_q2_k(X: tensor<f32>[M, K], W: tensor<q2_k>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(0) * 4
  let n0 = program_id(1) * 16
  var acc: tile<f32>[4, 16] = 0.0
  for k in range(0, K, 256) {
    acc += dot_t(X[m0 :+ 4, k :+ 256], W[n0 :+ 16, k :+ 256])
  }
  Y[m0 :+ 4, n0 :+ 16] = acc
}

@host_impl(qmatmul_host)
@grid(cdiv(M, 4), cdiv(N, 16))
kernel qmatmul_q3_k(X: tensor<f32>[M, K], W: tensor<q3_k>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(0) * 4
  let n0 = program_id(1) * 16
  var acc: tile<f32>[4, 16] = 0.0
  for k in range(0, K, 256) {
    acc += dot_t(X[m0 :+ 4, k :+ 256], W[n0 :+ 16, k :+ 256])
  }
  Y[m0 :+ 4, n0 :+ 16] = acc
}

@host_impl(qmatmul_host)
@grid(cdiv(M, 4), cdiv(N, 16))
kernel qmatmul_q4_k(X: tensor<f32>[M, K], W: tensor<q4_k>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(0) * 4
  let n0 = program_id(1) * 16
  var acc: tile<f32>[4, 16] = 0.0
  for k in range(0, K, 256) {
    acc += dot_t(X[m0 :+ 4, k :+ 256], W[n0 :+ 16, k :+ 256])
  }
  Y[m0 :+ 4, n0 :+ 16] = acc
}

@host_impl(qmatmul_host)
@grid(cdiv(M, 4), cdiv(N, 16))
kernel qmatmul_q5_k(X: tensor<f32>[M, K], W: tensor<q5_k>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(0) * 4
  let n0 = program_id(1) * 16
  var acc: tile<f32>[4, 16] = 0.0
  for k in range(0, K, 256) {
    acc += dot_t(X[m0 :+ 4, k :+ 256], W[n0 :+ 16, k :+ 256])
  }
  Y[m0 :+ 4, n0 :+ 16] = acc
}

@host_impl(qmatmul_host)
@grid(cdiv(M, 4), cdiv(N, 16))
kernel qmatmul_q6_k(X: tensor<f32>[M, K], W: tensor<q6_k>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(0) * 4
  let n0 = program_id(1) * 16
  var acc: tile<f32>[4, 16] = 0.0
  for k in range(0, K, 256) {
    acc += dot_t(X[m0 :+ 4, k :+ 256], W[n0 :+ 16, k :+ 256])
  }
  Y[m0 :+ 4, n0 :+ 16] = acc
}

@host_impl(qmatmul_host)
@grid(cdiv(M, 4), cdiv(N, 16))
kernel qmatmul_iq4_xs(X: tensor<f32>[M, K], W: tensor<iq4_xs>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(0) * 4
  let n0 = program_id(1) * 16
  var acc: tile<f32>[4, 16] = 0.0
  for k in range(0, K, 256) {
    acc += dot_t(X[m0 :+ 4, k :+ 256], W[n0 :+ 16, k :+ 256])
  }
  Y[m0 :+ 4, n0 :+ 16] = acc
}
