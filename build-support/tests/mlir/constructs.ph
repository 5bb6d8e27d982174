// Every construct the MLIR back end lowers, for the ptxas check in
// tests/mlir_ptx.rs. Not meant to compute anything useful.
@autotune(B in [64, 128])
@grid(cdiv(N, B))
kernel zoo_elementwise(X: tensor<f32>[N], Y: tensor<f32>[N], H: tensor<f16>[N], BF: tensor<bf16>[N], I: tensor<i32>[N], U: tensor<u32>[N], M: tensor<bool>[N], Z: tensor<f32>[N]) {
  let base = program_id(0) * B
  let x = X[base :+ B]
  let h = H[base :+ B]
  let b = BF[base :+ B]
  let i = I[base :+ B]
  let u = U[base :+ B]
  let m = M[base :+ B]
  var t: tile<f32>[B] = sigmoid(x) + silu(x) + gelu(x) + tanh(x) + log(abs(x) + 1.0) + sqrt(abs(x))
  t += floor(x) + round(x) + sin(x) + cos(x) + min(x, 0.5) + max(x, -0.5) + f32(h) * f32(b)
  let ii = (i << 2) >> 1 ^ (i & 7) | (i % 5) - (i / 3) + abs(i)
  let uu = (u >> 3) + (u % 7) + (u / 2)
  t += f32(ii) + f32(uu) + f32(i32(x)) + f32(u8(h))
  Y[base :+ B] = where(m && (x > 0.0 || !(x < -1.0)), t, -t)
  Z[base :+ B] += x
  Z[base :+ B] max= t
  H[base :+ B] = f16(t) * h
  BF[base :+ B] = bf16(t) + b
  M[base :+ B] = x != 0.0
}

@grid(1)
kernel zoo_control(X: tensor<f32>[N], Y: tensor<f32>[N], S: tensor<f32>[1], n_iter: i32, step: i32) {
  var acc = 0.0
  var k = 0
  while k < n_iter {
    acc += X[k]
    k += 1
  }
  if acc > 0.0 {
    Y[0] = acc
  } else {
    Y[0] = -acc
  }
  for j in range(N - 1, -1, step) {
    atomic_add(S[0], X[j])
  }
  let np = num_programs(0)
  Y[1] = f32(np)
}

@grid(cdiv(R, 16))
kernel zoo_tiles(X: tensor<f32>[R, 32], A8: tensor<i8>[16, 32], B8: tensor<i8>[32, 16], O: tensor<f32>[R, 32], OI: tensor<i32>[16, 16], T: tensor<f32>[R, 32]) {
  let x = X[program_id(0) * 16 :+ 16, :]
  let top = x[0 :+ 8, :]
  let flat = reshape(top, 256)
  let back = reshape(flat, 8, 32)
  O[program_id(0) * 16 :+ 8, :] = back + rowmin(top)
  OI[0 :+ 16, 0 :+ 16] = dot(A8[0 :+ 16, 0 :+ 32], B8[0 :+ 32, 0 :+ 16])
  atomic_add(T[program_id(0) * 16 :+ 16, :], x * max(x))
}
