// Y = X / sqrt(mean(X^2) + eps) * W per row of X[R, C], ROWS rows per
// program. The loop that scales and stores a row also sums the squares of
// the next row of the block, so reading that row from memory overlaps
// writing this one (one stream in and one out, as in a copy) instead of
// taking turns with it. The squares are summed into a scalar (`sum` of an
// elementwise expression writes no tile), as in layernorm: a
// `tile<f32>[BLOCK_C]` accumulator was loaded and stored every block, and
// with it 4096-column blocks ran slower than 1024, without it faster
// (BENCHMARKS.md, session 31). Every row's sum is added in the same order
// as with one row per program.
@autotune(ROWS in [1, 8], BLOCK_C in [64, 4096])
@grid(cdiv(R, ROWS))
kernel rmsnorm(X: tensor<f32>[R, C], W: tensor<f32>[C], Y: tensor<f32>[R, C], eps: f32) {
  let r0 = program_id(0) * ROWS
  var ss: f32 = 0.0
  for c in range(0, C, BLOCK_C) {
    let x = X[r0, c :+ BLOCK_C]
    ss += sum(x * x)
  }
  let end = min(r0 + ROWS, R)
  for r in range(r0, r0 + ROWS) {
    if r < end {
      let rstd = rsqrt(ss / f32(C) + eps)
      ss = 0.0
      let next = r + 1 < end
      for c in range(0, C, BLOCK_C) {
        Y[r, c :+ BLOCK_C] = X[r, c :+ BLOCK_C] * rstd * W[c :+ BLOCK_C]
        if next {
          let x = X[r + 1, c :+ BLOCK_C]
          ss += sum(x * x)
        }
      }
    }
  }
}
