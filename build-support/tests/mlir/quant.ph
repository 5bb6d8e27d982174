// Quantized operands on the MLIR back end (SPEC.md §14): a dequantized
// tile, a GGUF matmul in ggml's form (q4_k against the activation quantized
// to q8_K), the same in the exact form, a legacy format (q4_1 against
// q8_1), and a contraction over the free (blocked) dim.

@grid(cdiv(N, 4), cdiv(K, 256))
kernel dequant_q6_k(W: tensor<q6_k>[N, K], Y: tensor<f32>[N, K]) {
  let n0 = program_id(0) * 4
  let k0 = program_id(1) * 256
  Y[n0 :+ 4, k0 :+ 256] = dequant(W[n0 :+ 4, k0 :+ 256])
}

@grid(cdiv(N, 4), cdiv(M, 2))
kernel matmul_q4_k(X: tensor<f32>[M, K], W: tensor<q4_k>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(1) * 2
  let n0 = program_id(0) * 4
  var acc: tile<f32>[2, 4] = 0.0
  for k in range(0, K, 256) {
    let w = W[n0 :+ 4, k :+ 256]
    acc += dot_t(X[m0 :+ 2, k :+ 256], w)
  }
  Y[m0 :+ 2, n0 :+ 4] = acc
}

@grid(cdiv(N, 4), cdiv(M, 2))
kernel matmul_q4_k_exact(X: tensor<f32>[M, K], W: tensor<q4_k>[N, K], Y: tensor<f32>[M, N]) {
  let m0 = program_id(1) * 2
  let n0 = program_id(0) * 4
  var acc: tile<f32>[2, 4] = 0.0
  for k in range(0, K, 256) {
    acc += dot_t(X[m0 :+ 2, k :+ 256], dequant(W[n0 :+ 4, k :+ 256]))
  }
  Y[m0 :+ 2, n0 :+ 4] = acc
}

@grid(cdiv(N, 2))
kernel matvec_q4_1(W: tensor<q4_1>[N, K], X: tensor<f16>[K, 1], Y: tensor<f32>[N, 1]) {
  let n0 = program_id(0) * 2
  var acc: tile<f32>[2, 1] = 0.0
  for k in range(0, K, 32) {
    acc += dot(W[n0 :+ 2, k :+ 32], X[k :+ 32, 0 :+ 1])
  }
  Y[n0 :+ 2, 0 :+ 1] = acc
}

@grid(cdiv(N, 32))
kernel free_dim_q8_0(X: tensor<f32>[M, K], W: tensor<q8_0>[K, N], Y: tensor<f32>[M, N]) {
  let n0 = program_id(0) * 32
  var acc: tile<f32>[2, 32] = 0.0
  for k in range(0, K, 8) {
    acc += dot(X[0 :+ 2, k :+ 8], W[k :+ 8, n0 :+ 32])
  }
  Y[0 :+ 2, n0 :+ 32] = acc
}
