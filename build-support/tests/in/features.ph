// Exercises the grammar beyond the example kernels.
@autotune(BM in [16, 64], BK in [32, 64, 128])
@cluster(SUPER in [1, 4])
@grid(cdiv(M, BM), 2)
@launch(128, 2)
@pipeline
@tensorcore
kernel qmatvec(W: tensor<q4_0>[M, K], X: tensor<f16>[K, 1], Y: tensor<f32>[M, 1],
               Hist: tensor<i32>[64], scale: f32, n_iter: i32) {
  let row0 = program_id(0) * BM
  var acc: tile<f32>[BM, 1] = 0
  for k in range(0, K, BK) {
    let w = W[row0 :+ BM, k :+ BK]
    let x = X[k :+ BK, 0 : 1]
    acc += dot(w, x)
  }
  let wd = dequant(W[row0 :+ BM, 0 :+ BK]); let first = wd[0, :]
  var i = 0
  while i < n_iter && i < 10 {
    i += 1
  }
  if scale > 0.0 {
    acc *= scale
  } else if scale < -1.0 {
    acc max= 0.0
  }
  else {
    acc = -acc
  }
  let flags = (arange(64) & 3) == 1 || !(arange(64) >= 32)
  atomic_add(Hist[0 :+ 64], where(flags, 1, 0))
  let r = reshape(first, 2, BK / 2)
  let t = transpose(r)
  let bits = i32(sum(t) > 0.5) << 2 | ~1 ^ 7
  Y[row0 :+ BM, 0 :+ 1] += acc * f32(bits) + sin(first[0]) + cos(f32(n_iter % 3))
  Y[row0 :+ BM, :] max= abs(acc) + floor(acc) + round(acc) + sqrt(acc) + log(acc) + tanh(acc)
  Y[row0 :+ BM, 0] -= reshape(sigmoid(silu(gelu(rowsum(acc)))), BM); Y[0, 0] /= 2
}
