// SPEC.md §10's edge cases, one kernel per element type, for the table
// tests (build-support/tests/edge_cases.rs: MLIR and ptxas;
// examples/tests/edge_cases.rs: the host against Rust's own semantics) and
// the device check (examples/examples/device_dump: the GPU against the
// host). Every result lands in its own tensor.
//
// Integers: `/`, `%`, `<<`, `>>` and `cdiv` on every pair of operands the
// test feeds (zero divisors, MIN / -1, shifts by negative amounts and by
// the bit width or more). Floats: `%` (fmod), `min`, `max` and the casts
// to every integer type (NaN, infinities, out-of-range values).
// Loops: runtime steps of either sign, counters that would wrap.

@grid(cdiv(N, 64))
kernel edge_int_i8(a: tensor<i8>[N], b: tensor<i8>[N], quo: tensor<i8>[N], rem: tensor<i8>[N], shl: tensor<i8>[N], shr: tensor<i8>[N], up: tensor<i8>[N]) {
  let base = program_id(0) * 64
  let x = a[base :+ 64]
  let y = b[base :+ 64]
  quo[base :+ 64] = x / y
  rem[base :+ 64] = x % y
  shl[base :+ 64] = x << y
  shr[base :+ 64] = x >> y
  for j in range(0, 64) {
    up[base + j] = cdiv(a[base + j], b[base + j])
  }
}

@grid(cdiv(N, 64))
kernel edge_int_u8(a: tensor<u8>[N], b: tensor<u8>[N], quo: tensor<u8>[N], rem: tensor<u8>[N], shl: tensor<u8>[N], shr: tensor<u8>[N], up: tensor<u8>[N]) {
  let base = program_id(0) * 64
  let x = a[base :+ 64]
  let y = b[base :+ 64]
  quo[base :+ 64] = x / y
  rem[base :+ 64] = x % y
  shl[base :+ 64] = x << y
  shr[base :+ 64] = x >> y
  for j in range(0, 64) {
    up[base + j] = cdiv(a[base + j], b[base + j])
  }
}

@grid(cdiv(N, 64))
kernel edge_int_i16(a: tensor<i16>[N], b: tensor<i16>[N], quo: tensor<i16>[N], rem: tensor<i16>[N], shl: tensor<i16>[N], shr: tensor<i16>[N], up: tensor<i16>[N]) {
  let base = program_id(0) * 64
  let x = a[base :+ 64]
  let y = b[base :+ 64]
  quo[base :+ 64] = x / y
  rem[base :+ 64] = x % y
  shl[base :+ 64] = x << y
  shr[base :+ 64] = x >> y
  for j in range(0, 64) {
    up[base + j] = cdiv(a[base + j], b[base + j])
  }
}

@grid(cdiv(N, 64))
kernel edge_int_u16(a: tensor<u16>[N], b: tensor<u16>[N], quo: tensor<u16>[N], rem: tensor<u16>[N], shl: tensor<u16>[N], shr: tensor<u16>[N], up: tensor<u16>[N]) {
  let base = program_id(0) * 64
  let x = a[base :+ 64]
  let y = b[base :+ 64]
  quo[base :+ 64] = x / y
  rem[base :+ 64] = x % y
  shl[base :+ 64] = x << y
  shr[base :+ 64] = x >> y
  for j in range(0, 64) {
    up[base + j] = cdiv(a[base + j], b[base + j])
  }
}

@grid(cdiv(N, 64))
kernel edge_int_i32(a: tensor<i32>[N], b: tensor<i32>[N], quo: tensor<i32>[N], rem: tensor<i32>[N], shl: tensor<i32>[N], shr: tensor<i32>[N], up: tensor<i32>[N]) {
  let base = program_id(0) * 64
  let x = a[base :+ 64]
  let y = b[base :+ 64]
  quo[base :+ 64] = x / y
  rem[base :+ 64] = x % y
  shl[base :+ 64] = x << y
  shr[base :+ 64] = x >> y
  for j in range(0, 64) {
    up[base + j] = cdiv(a[base + j], b[base + j])
  }
}

@grid(cdiv(N, 64))
kernel edge_int_u32(a: tensor<u32>[N], b: tensor<u32>[N], quo: tensor<u32>[N], rem: tensor<u32>[N], shl: tensor<u32>[N], shr: tensor<u32>[N], up: tensor<u32>[N]) {
  let base = program_id(0) * 64
  let x = a[base :+ 64]
  let y = b[base :+ 64]
  quo[base :+ 64] = x / y
  rem[base :+ 64] = x % y
  shl[base :+ 64] = x << y
  shr[base :+ 64] = x >> y
  for j in range(0, 64) {
    up[base + j] = cdiv(a[base + j], b[base + j])
  }
}

@grid(cdiv(N, 64))
kernel edge_int_i64(a: tensor<i64>[N], b: tensor<i64>[N], quo: tensor<i64>[N], rem: tensor<i64>[N], shl: tensor<i64>[N], shr: tensor<i64>[N], up: tensor<i64>[N]) {
  let base = program_id(0) * 64
  let x = a[base :+ 64]
  let y = b[base :+ 64]
  quo[base :+ 64] = x / y
  rem[base :+ 64] = x % y
  shl[base :+ 64] = x << y
  shr[base :+ 64] = x >> y
  for j in range(0, 64) {
    up[base + j] = cdiv(a[base + j], b[base + j])
  }
}

@grid(cdiv(N, 64))
kernel edge_float_f16(a: tensor<f16>[N], b: tensor<f16>[N], rem: tensor<f16>[N], lo: tensor<f16>[N], hi: tensor<f16>[N], to_i8: tensor<i8>[N], to_u8: tensor<u8>[N], to_i16: tensor<i16>[N], to_u16: tensor<u16>[N], to_i32: tensor<i32>[N], to_u32: tensor<u32>[N], to_i64: tensor<i64>[N]) {
  let base = program_id(0) * 64
  let x = a[base :+ 64]
  let y = b[base :+ 64]
  rem[base :+ 64] = x % y
  lo[base :+ 64] = min(x, y)
  hi[base :+ 64] = max(x, y)
  to_i8[base :+ 64] = i8(x)
  to_u8[base :+ 64] = u8(x)
  to_i16[base :+ 64] = i16(x)
  to_u16[base :+ 64] = u16(x)
  to_i32[base :+ 64] = i32(x)
  to_u32[base :+ 64] = u32(x)
  to_i64[base :+ 64] = i64(x)
}

@grid(cdiv(N, 64))
kernel edge_float_bf16(a: tensor<bf16>[N], b: tensor<bf16>[N], rem: tensor<bf16>[N], lo: tensor<bf16>[N], hi: tensor<bf16>[N], to_i8: tensor<i8>[N], to_u8: tensor<u8>[N], to_i16: tensor<i16>[N], to_u16: tensor<u16>[N], to_i32: tensor<i32>[N], to_u32: tensor<u32>[N], to_i64: tensor<i64>[N]) {
  let base = program_id(0) * 64
  let x = a[base :+ 64]
  let y = b[base :+ 64]
  rem[base :+ 64] = x % y
  lo[base :+ 64] = min(x, y)
  hi[base :+ 64] = max(x, y)
  to_i8[base :+ 64] = i8(x)
  to_u8[base :+ 64] = u8(x)
  to_i16[base :+ 64] = i16(x)
  to_u16[base :+ 64] = u16(x)
  to_i32[base :+ 64] = i32(x)
  to_u32[base :+ 64] = u32(x)
  to_i64[base :+ 64] = i64(x)
}

@grid(cdiv(N, 64))
kernel edge_float_f32(a: tensor<f32>[N], b: tensor<f32>[N], rem: tensor<f32>[N], lo: tensor<f32>[N], hi: tensor<f32>[N], to_i8: tensor<i8>[N], to_u8: tensor<u8>[N], to_i16: tensor<i16>[N], to_u16: tensor<u16>[N], to_i32: tensor<i32>[N], to_u32: tensor<u32>[N], to_i64: tensor<i64>[N]) {
  let base = program_id(0) * 64
  let x = a[base :+ 64]
  let y = b[base :+ 64]
  rem[base :+ 64] = x % y
  lo[base :+ 64] = min(x, y)
  hi[base :+ 64] = max(x, y)
  to_i8[base :+ 64] = i8(x)
  to_u8[base :+ 64] = u8(x)
  to_i16[base :+ 64] = i16(x)
  to_u16[base :+ 64] = u16(x)
  to_i32[base :+ 64] = i32(x)
  to_u32[base :+ 64] = u32(x)
  to_i64[base :+ 64] = i64(x)
}

@grid(cdiv(N, 64))
kernel edge_float_f64(a: tensor<f64>[N], b: tensor<f64>[N], rem: tensor<f64>[N], lo: tensor<f64>[N], hi: tensor<f64>[N], to_i8: tensor<i8>[N], to_u8: tensor<u8>[N], to_i16: tensor<i16>[N], to_u16: tensor<u16>[N], to_i32: tensor<i32>[N], to_u32: tensor<u32>[N], to_i64: tensor<i64>[N]) {
  let base = program_id(0) * 64
  let x = a[base :+ 64]
  let y = b[base :+ 64]
  rem[base :+ 64] = x % y
  lo[base :+ 64] = min(x, y)
  hi[base :+ 64] = max(x, y)
  to_i8[base :+ 64] = i8(x)
  to_u8[base :+ 64] = u8(x)
  to_i16[base :+ 64] = i16(x)
  to_u16[base :+ 64] = u16(x)
  to_i32[base :+ 64] = i32(x)
  to_u32[base :+ 64] = u32(x)
  to_i64[base :+ 64] = i64(x)
}

@grid(N)
kernel edge_loop_i32(start: tensor<i32>[N], end: tensor<i32>[N], step: tensor<i32>[N], count: tensor<i32>[N], last: tensor<i32>[N]) {
  let p = program_id(0)
  var n = 0
  var l: i32 = 0
  for i in range(start[p], end[p], step[p]) {
    n += 1
    l = i
  }
  count[p] = n
  last[p] = l
}

@grid(N)
kernel edge_loop_u8(start: tensor<u8>[N], end: tensor<u8>[N], step: tensor<u8>[N], count: tensor<i32>[N], last: tensor<u8>[N]) {
  let p = program_id(0)
  var n = 0
  var l: u8 = 0
  for i in range(start[p], end[p], step[p]) {
    n += 1
    l = i
  }
  count[p] = n
  last[p] = l
}
