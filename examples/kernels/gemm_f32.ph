// C = alpha * A @ B + beta * C in f32, one TILE_M x TILE_N block of C per program.
@autotune(TILE_M in [32, 256], TILE_N in [32, 256], TILE_K in [4, 128])
@grid(cdiv(M, TILE_M), cdiv(N, TILE_N))
kernel gemm_f32(A: tensor<f32>[M, K], B: tensor<f32>[K, N], C: tensor<f32>[M, N],
                alpha: f32, beta: f32) {
  let pm = program_id(0)
  let pn = program_id(1)
  var acc: tile<f32>[TILE_M, TILE_N] = 0.0
  for kt in range(0, K, TILE_K) {
    let a = A[pm * TILE_M :+ TILE_M, kt :+ TILE_K]
    let b = B[kt :+ TILE_K, pn * TILE_N :+ TILE_N]
    acc += dot(a, b)
  }
  let c_old = C[pm * TILE_M :+ TILE_M, pn * TILE_N :+ TILE_N]
  C[pm * TILE_M :+ TILE_M, pn * TILE_N :+ TILE_N] = alpha * acc + beta * c_old
}
