// Y = (X - mean) / sqrt(var + eps) * W + B per row of X[R, C], one row per program.
@autotune(BLOCK_C in [64, 1024])
@grid(R)
kernel layernorm(X: tensor<f32>[R, C], W: tensor<f32>[C], B: tensor<f32>[C],
                 Y: tensor<f32>[R, C], eps: f32) {
  let r = program_id(0)
  var total: tile<f32>[BLOCK_C] = 0.0
  for c in range(0, C, BLOCK_C) {
    total += X[r, c :+ BLOCK_C]
  }
  let mean = sum(total) / f32(C)
  var sq_dev: tile<f32>[BLOCK_C] = 0.0
  for c in range(0, C, BLOCK_C) {
    // Masked columns read as zero; keep them out of the variance.
    let dev = where(arange(BLOCK_C) + c < C, X[r, c :+ BLOCK_C] - mean, 0.0)
    sq_dev += dev * dev
  }
  let rstd = rsqrt(sum(sq_dev) / f32(C) + eps)
  for c in range(0, C, BLOCK_C) {
    Y[r, c :+ BLOCK_C] = (X[r, c :+ BLOCK_C] - mean) * rstd * W[c :+ BLOCK_C] + B[c :+ BLOCK_C]
  }
}
