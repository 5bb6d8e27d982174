// Row-wise softmax of X[R, C] for any C. A row that fits one block
// (C <= BLOCK_C) is read once: its max, its exps and their sum, then the
// exps scaled and stored, one exp per element. A longer row takes an
// online pass for the row max and denominator, then a pass that writes
// (two exps per element). Masked columns read as a large negative number
// so they add nothing to either. The exps are scaled by the reciprocal of
// their sum, not divided by it: a vector division costs as much as a
// third of the exp, and the reciprocal adds one rounding.
@autotune(ROWS in [1, 4], BLOCK_C in [128, 4096])
@grid(cdiv(R, ROWS))
kernel softmax(X: tensor<f32>[R, C], Y: tensor<f32>[R, C]) {
  let r0 = program_id(0) * ROWS
  if C <= BLOCK_C {
    let x = load(X[r0 :+ ROWS, 0 :+ BLOCK_C], -1.0e30)
    // The next program's rows (most likely this thread's next) arrive
    // while these rows' exps are computed, instead of after.
    prefetch(X[r0 + ROWS :+ ROWS, 0 :+ BLOCK_C])
    let e = exp(x - rowmax(x))
    Y[r0 :+ ROWS, 0 :+ BLOCK_C] = e * (1.0 / rowsum(e))
  } else {
    var row_max: tile<f32>[ROWS, 1] = -1.0e30
    var denom: tile<f32>[ROWS, 1] = 0.0
    for c in range(0, C, BLOCK_C) {
      let x = load(X[r0 :+ ROWS, c :+ BLOCK_C], -1.0e30)
      let new_max = max(row_max, rowmax(x))
      denom = denom * exp(row_max - new_max) + rowsum(exp(x - new_max))
      row_max = new_max
    }
    let scale = 1.0 / denom
    for c in range(0, C, BLOCK_C) {
      let x = load(X[r0 :+ ROWS, c :+ BLOCK_C], -1.0e30)
      Y[r0 :+ ROWS, c :+ BLOCK_C] = exp(x - row_max) * scale
    }
  }
}
