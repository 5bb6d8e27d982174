// Embedding lookup: Y[t, :] = dequant(E[Ids[t], :]), one kernel per format
// the language types (the format is in the handle's type), 256 columns (a
// whole number of blocks of every format) per program.
//
// On the host each launch runs the engine's row dequantizer (`@host_impl`,
// bit-exact with phobos-models' dequantizer, as `dequant` is: SPEC.md §14);
// `launch_generated` runs these bodies, which ops/embed/tests.rs compares.

@host_impl(embed_host)
@grid(T, cdiv(D, 256))
kernel embed_q4_0(Ids: tensor<i32>[T], E: tensor<q4_0>[V, D], Y: tensor<f32>[T, D]) {
  let t = program_id(0)
  let c = program_id(1) * 256
  let id = Ids[t]
  Y[t, c :+ 256] = dequant(E[id, c :+ 256])
}

@host_impl(embed_host)
@grid(T, cdiv(D, 256))
kernel embed_q4_1(Ids: tensor<i32>[T], E: tensor<q4_1>[V, D], Y: tensor<f32>[T, D]) {
  let t = program_id(0)
  let c = program_id(1) * 256
  let id = Ids[t]
  Y[t, c :+ 256] = dequant(E[id, c :+ 256])
}

@host_impl(embed_host)
@grid(T, cdiv(D, 256))
kernel embed_q5_0(Ids: tensor<i32>[T], E: tensor<q5_0>[V, D], Y: tensor<f32>[T, D]) {
  let t = program_id(0)
  let c = program_id(1) * 256
  let id = Ids[t]
  Y[t, c :+ 256] = dequant(E[id, c :+ 256])
}

@host_impl(embed_host)
@grid(T, cdiv(D, 256))
kernel embed_q5_1(Ids: tensor<i32>[T], E: tensor<q5_1>[V, D], Y: tensor<f32>[T, D]) {
  let t = program_id(0)
  let c = program_id(1) * 256
  let id = Ids[t]
  Y[t, c :+ 256] = dequant(E[id, c :+ 256])
}

@host_impl(embed_host)
@grid(T, cdiv(D, 256))
kernel embed_q8_0(Ids: tensor<i32>[T], E: tensor<q8_0>[V, D], Y: tensor<f32>[T, D]) {
  let t = program_id(0)
  let c = program_id(1) * 256
  let id = Ids[t]
  Y[t, c :+ 256] = dequant(E[id, c :+ 256])
}

@host_impl(embed_host)
@grid(T, cdiv(D, 256))
kernel embed_iq4_nl(Ids: tensor<i32>[T], E: tensor<iq4_nl>[V, D], Y: tensor<f32>[T, D]) {
  let t = program_id(0)
  let c = program_id(1) * 256
  let id = Ids[t]
  Y[t, c :+ 256] = dequant(E[id, c :+ 256])
}

@host_impl(embed_host)
@grid(T, cdiv(D, 256))
kernel embed_q2_k(Ids: tensor<i32>[T], E: tensor<q2_k>[V, D], Y: tensor<f32>[T, D]) {
  let t = program_id(0)
  let c = program_id(1) * 256
  let id = Ids[t]
  Y[t, c :+ 256] = dequant(E[id, c :+ 256])
}

@host_impl(embed_host)
@grid(T, cdiv(D, 256))
kernel embed_q3_k(Ids: tensor<i32>[T], E: tensor<q3_k>[V, D], Y: tensor<f32>[T, D]) {
  let t = program_id(0)
  let c = program_id(1) * 256
  let id = Ids[t]
  Y[t, c :+ 256] = dequant(E[id, c :+ 256])
}

@host_impl(embed_host)
@grid(T, cdiv(D, 256))
kernel embed_q4_k(Ids: tensor<i32>[T], E: tensor<q4_k>[V, D], Y: tensor<f32>[T, D]) {
  let t = program_id(0)
  let c = program_id(1) * 256
  let id = Ids[t]
  Y[t, c :+ 256] = dequant(E[id, c :+ 256])
}

@host_impl(embed_host)
@grid(T, cdiv(D, 256))
kernel embed_q5_k(Ids: tensor<i32>[T], E: tensor<q5_k>[V, D], Y: tensor<f32>[T, D]) {
  let t = program_id(0)
  let c = program_id(1) * 256
  let id = Ids[t]
  Y[t, c :+ 256] = dequant(E[id, c :+ 256])
}

@host_impl(embed_host)
@grid(T, cdiv(D, 256))
kernel embed_q6_k(Ids: tensor<i32>[T], E: tensor<q6_k>[V, D], Y: tensor<f32>[T, D]) {
  let t = program_id(0)
  let c = program_id(1) * 256
  let id = Ids[t]
  Y[t, c :+ 256] = dequant(E[id, c :+ 256])
}

@host_impl(embed_host)
@grid(T, cdiv(D, 256))
kernel embed_iq4_xs(Ids: tensor<i32>[T], E: tensor<iq4_xs>[V, D], Y: tensor<f32>[T, D]) {
  let t = program_id(0)
  let c = program_id(1) * 256
  let id = Ids[t]
  Y[t, c :+ 256] = dequant(E[id, c :+ 256])
}
