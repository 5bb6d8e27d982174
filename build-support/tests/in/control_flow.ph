// Semicolons, nested control flow, atomics and integer work on one line each.
@grid(cdiv(N, 128), 1)
kernel histogram(V: tensor<u8>[N], Counts: tensor<i32>[256], Total: tensor<i64>[1]) {
  let base = program_id(0) * 128; let lanes = arange(128)
  let v = load(V[base :+ 128], 0)
  var seen: i64 = 0
  for b in range(0, 256, 64) {
    let hits = where((i32(v) >= b) && (i32(v) < b + 64), 1, 0)
    if sum(hits) > 0 { atomic_add(Counts[b :+ 64], rowsum(reshape(hits, 64, 2))[:, 0]) }
    seen += i64(sum(hits))
  }
  var k = 3
  while k > 0 { k -= 1 }
  Total[0] += seen + i64(k) + i64(sum(lanes) >> 7)
}
