// Row-wise softmax of X[R, C] for any C: an online pass for the row max and
// denominator, then a pass that writes. Masked columns read as a large
// negative number so they add nothing to either.
@autotune(ROWS in [1, 8], BLOCK_C in [64, 1024])
@grid(cdiv(R, ROWS))
kernel softmax(X: tensor<f32>[R, C], Y: tensor<f32>[R, C]) {
  let r0 = program_id(0) * ROWS
  var row_max: tile<f32>[ROWS, 1] = -1.0e30
  var denom: tile<f32>[ROWS, 1] = 0.0
  for c in range(0, C, BLOCK_C) {
    let x = load(X[r0 :+ ROWS, c :+ BLOCK_C], -1.0e30)
    let new_max = max(row_max, rowmax(x))
    denom = denom * exp(row_max - new_max) + rowsum(exp(x - new_max))
    row_max = new_max
  }
  for c in range(0, C, BLOCK_C) {
    let x = load(X[r0 :+ ROWS, c :+ BLOCK_C], -1.0e30)
    Y[r0 :+ ROWS, c :+ BLOCK_C] = exp(x - row_max) / denom
  }
}
