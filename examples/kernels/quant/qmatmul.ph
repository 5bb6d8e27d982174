// Quantized matmuls for the device check (not an example): Y[M, N] =
// X[M, K] @ W[N, K]^T in SPEC.md §14's ggml form, one kernel per format
// with an integer form. BM takes 4, 8, 16 and 32: at 4 and 8 each output
// sums its level products with dp4a; at 16 and 32 (whole tiles of 16
// partner rows by 8 weight rows) the int8 tensor cores (mma.sync) sum them
// on sm_80 and later. Every variant must equal the host's generated body
// bit for bit (examples/src/bin/device_check/quant.rs).

@autotune(BM in [4, 32], BN in [16])
@grid(cdiv(M, BM), cdiv(N, BN))
kernel qmm_q4_0(X: tensor<f32>[M, K], W: tensor<q4_0>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(0) * BM
  let n0 = program_id(1) * BN
  var acc: tile<f32>[BM, BN] = 0.0
  for k in range(0, K, 32) {
    acc += dot_t(X[m0 :+ BM, k :+ 32], W[n0 :+ BN, k :+ 32])
  }
  Y[m0 :+ BM, n0 :+ BN] = acc
}

@autotune(BM in [4, 32], BN in [16])
@grid(cdiv(M, BM), cdiv(N, BN))
kernel qmm_q4_1(X: tensor<f32>[M, K], W: tensor<q4_1>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(0) * BM
  let n0 = program_id(1) * BN
  var acc: tile<f32>[BM, BN] = 0.0
  for k in range(0, K, 32) {
    acc += dot_t(X[m0 :+ BM, k :+ 32], W[n0 :+ BN, k :+ 32])
  }
  Y[m0 :+ BM, n0 :+ BN] = acc
}

@autotune(BM in [4, 32], BN in [16])
@grid(cdiv(M, BM), cdiv(N, BN))
kernel qmm_q5_0(X: tensor<f32>[M, K], W: tensor<q5_0>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(0) * BM
  let n0 = program_id(1) * BN
  var acc: tile<f32>[BM, BN] = 0.0
  for k in range(0, K, 32) {
    acc += dot_t(X[m0 :+ BM, k :+ 32], W[n0 :+ BN, k :+ 32])
  }
  Y[m0 :+ BM, n0 :+ BN] = acc
}

@autotune(BM in [4, 32], BN in [16])
@grid(cdiv(M, BM), cdiv(N, BN))
kernel qmm_q5_1(X: tensor<f32>[M, K], W: tensor<q5_1>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(0) * BM
  let n0 = program_id(1) * BN
  var acc: tile<f32>[BM, BN] = 0.0
  for k in range(0, K, 32) {
    acc += dot_t(X[m0 :+ BM, k :+ 32], W[n0 :+ BN, k :+ 32])
  }
  Y[m0 :+ BM, n0 :+ BN] = acc
}

@autotune(BM in [4, 32], BN in [16])
@grid(cdiv(M, BM), cdiv(N, BN))
kernel qmm_q8_0(X: tensor<f32>[M, K], W: tensor<q8_0>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(0) * BM
  let n0 = program_id(1) * BN
  var acc: tile<f32>[BM, BN] = 0.0
  for k in range(0, K, 32) {
    acc += dot_t(X[m0 :+ BM, k :+ 32], W[n0 :+ BN, k :+ 32])
  }
  Y[m0 :+ BM, n0 :+ BN] = acc
}

@autotune(BM in [4, 32], BN in [16])
@grid(cdiv(M, BM), cdiv(N, BN))
kernel qmm_iq4_nl(X: tensor<f32>[M, K], W: tensor<iq4_nl>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(0) * BM
  let n0 = program_id(1) * BN
  var acc: tile<f32>[BM, BN] = 0.0
  for k in range(0, K, 32) {
    acc += dot_t(X[m0 :+ BM, k :+ 32], W[n0 :+ BN, k :+ 32])
  }
  Y[m0 :+ BM, n0 :+ BN] = acc
}

@autotune(BM in [4, 32], BN in [16])
@grid(cdiv(M, BM), cdiv(N, BN))
kernel qmm_q2_k(X: tensor<f32>[M, K], W: tensor<q2_k>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(0) * BM
  let n0 = program_id(1) * BN
  var acc: tile<f32>[BM, BN] = 0.0
  for k in range(0, K, 256) {
    acc += dot_t(X[m0 :+ BM, k :+ 256], W[n0 :+ BN, k :+ 256])
  }
  Y[m0 :+ BM, n0 :+ BN] = acc
}

@autotune(BM in [4, 32], BN in [16])
@grid(cdiv(M, BM), cdiv(N, BN))
kernel qmm_q3_k(X: tensor<f32>[M, K], W: tensor<q3_k>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(0) * BM
  let n0 = program_id(1) * BN
  var acc: tile<f32>[BM, BN] = 0.0
  for k in range(0, K, 256) {
    acc += dot_t(X[m0 :+ BM, k :+ 256], W[n0 :+ BN, k :+ 256])
  }
  Y[m0 :+ BM, n0 :+ BN] = acc
}

@autotune(BM in [4, 32], BN in [16])
@grid(cdiv(M, BM), cdiv(N, BN))
kernel qmm_q4_k(X: tensor<f32>[M, K], W: tensor<q4_k>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(0) * BM
  let n0 = program_id(1) * BN
  var acc: tile<f32>[BM, BN] = 0.0
  for k in range(0, K, 256) {
    acc += dot_t(X[m0 :+ BM, k :+ 256], W[n0 :+ BN, k :+ 256])
  }
  Y[m0 :+ BM, n0 :+ BN] = acc
}

@autotune(BM in [4, 32], BN in [16])
@grid(cdiv(M, BM), cdiv(N, BN))
kernel qmm_q5_k(X: tensor<f32>[M, K], W: tensor<q5_k>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(0) * BM
  let n0 = program_id(1) * BN
  var acc: tile<f32>[BM, BN] = 0.0
  for k in range(0, K, 256) {
    acc += dot_t(X[m0 :+ BM, k :+ 256], W[n0 :+ BN, k :+ 256])
  }
  Y[m0 :+ BM, n0 :+ BN] = acc
}

@autotune(BM in [4, 32], BN in [16])
@grid(cdiv(M, BM), cdiv(N, BN))
kernel qmm_q6_k(X: tensor<f32>[M, K], W: tensor<q6_k>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(0) * BM
  let n0 = program_id(1) * BN
  var acc: tile<f32>[BM, BN] = 0.0
  for k in range(0, K, 256) {
    acc += dot_t(X[m0 :+ BM, k :+ 256], W[n0 :+ BN, k :+ 256])
  }
  Y[m0 :+ BM, n0 :+ BN] = acc
}
