// Y = X / sqrt(mean(X^2) + eps) * W per row of X[R, C], one row per program.
@autotune(BLOCK_C in [64, 1024])
@grid(R)
kernel rmsnorm(X: tensor<f32>[R, C], W: tensor<f32>[C], Y: tensor<f32>[R, C], eps: f32) {
  let r = program_id(0)
  var sq: tile<f32>[BLOCK_C] = 0.0
  for c in range(0, C, BLOCK_C) {
    let x = X[r, c :+ BLOCK_C]
    sq += x * x
  }
  let rstd = rsqrt(sum(sq) / f32(C) + eps)
  for c in range(0, C, BLOCK_C) {
    Y[r, c :+ BLOCK_C] = X[r, c :+ BLOCK_C] * rstd * W[c :+ BLOCK_C]
  }
}
