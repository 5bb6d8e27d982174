// Y = (X - mean) / sqrt(var + eps) * W + B per row of X[R, C], ROWS rows
// per program. The loop that stores a row also sums the next row of the
// block, so reading that row from memory overlaps writing this one
// instead of taking turns with it; the variance pass reads the row again
// from cache. Both passes sum into a scalar: `sum` of an elementwise
// expression is computed without writing the expression's tile, where a
// `tile<f32>[BLOCK_C]` accumulator is loaded and stored every block (on
// Zen 1 that store made the variance pass a third of the kernel). Every
// row's sums are added in the same order as with one row per program.
@autotune(ROWS in [1, 8], BLOCK_C in [64, 4096])
@grid(cdiv(R, ROWS))
kernel layernorm(X: tensor<f32>[R, C], W: tensor<f32>[C], B: tensor<f32>[C],
                 Y: tensor<f32>[R, C], eps: f32) {
  let r0 = program_id(0) * ROWS
  var total: f32 = 0.0
  for c in range(0, C, BLOCK_C) {
    total += sum(X[r0, c :+ BLOCK_C])
  }
  let end = min(r0 + ROWS, R)
  for r in range(r0, r0 + ROWS) {
    if r < end {
      let mean = total / f32(C)
      var sq_dev: f32 = 0.0
      for c in range(0, C, BLOCK_C) {
        // Masked columns read as the mean, so they add nothing to the variance.
        let x = load(X[r, c :+ BLOCK_C], mean)
        sq_dev += sum((x - mean) * (x - mean))
      }
      let rstd = rsqrt(sq_dev / f32(C) + eps)
      total = 0.0
      let next = r + 1 < end
      for c in range(0, C, BLOCK_C) {
        Y[r, c :+ BLOCK_C] = (X[r, c :+ BLOCK_C] - mean) * rstd * W[c :+ BLOCK_C] + B[c :+ BLOCK_C]
        if next {
          total += sum(X[r + 1, c :+ BLOCK_C])
        }
      }
    }
  }
}
