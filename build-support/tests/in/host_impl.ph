// A kernel with a hand-written host path (SPEC.md §11, `@host_impl`): the
// attribute names a Rust function; the IR keeps the name for the host back
// end, every other back end ignores it.

@host_impl(scale_rows_host)
@autotune(BC in [8, 16])
@grid(R)
kernel scale_rows(X: tensor<f32>[R, C], Y: tensor<f32>[R, C], s: f32) {
  let r = program_id(0)
  for c in range(0, C, BC) {
    Y[r, c :+ BC] = X[r, c :+ BC] * s
  }
}
