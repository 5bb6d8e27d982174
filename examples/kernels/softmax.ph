// Row-wise softmax of X[R, C] for any C. A row that fits one block
// (C <= BLOCK_C) is read once: its max, its exps and their sum, then the
// exps scaled and stored, one exp per element. A longer row takes an
// online pass for the row max and denominator, then a pass that writes
// (two exps per element). Masked columns read as a large negative number
// so they add nothing to either.
@autotune(ROWS in [1, 4], BLOCK_C in [128, 4096])
@grid(cdiv(R, ROWS))
kernel softmax(X: tensor<f32>[R, C], Y: tensor<f32>[R, C]) {
  let r0 = program_id(0) * ROWS
  if C <= BLOCK_C {
    let x = load(X[r0 :+ ROWS, 0 :+ BLOCK_C], -1.0e30)
    let e = exp(x - rowmax(x))
    Y[r0 :+ ROWS, 0 :+ BLOCK_C] = e / rowsum(e)
  } else {
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
}
