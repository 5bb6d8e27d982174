//! Quantized operands through the whole MLIR pipeline: for every format the
//! PTX back end lowers, a dequant kernel and the contractions in ggml's form
//! (quantized operand on either side) and in the exact form (spelled with
//! `dequant`, and over the free dim) compile to PTX for sm_75, sm_80 and
//! sm_90 (ggml's form with `dp4a`, or int8 `mma.sync` for prompt-sized
//! tiles on sm_80+), and ptxas assembles each (skipped with a note when ptxas is
//! missing, unless `PHOBOS_REQUIRE_PTXAS=1`). Their numerics were checked
//! on the host (`back::mlir::emit::quant` unit tests); running them is the
//! device check's job.
#![cfg(feature = "ptx")]

mod support;

use support::{assemble, ptxas};

use phobos_build::{Source, back::mlir, check_source, ir};

const LOWERED: [(&str, i64); 12] = [
    ("q4_0", 32),
    ("q4_1", 32),
    ("q5_0", 32),
    ("q5_1", 32),
    ("q8_0", 32),
    ("iq4_nl", 32),
    ("q2_k", 256),
    ("q3_k", 256),
    ("q4_k", 256),
    ("q5_k", 256),
    ("q6_k", 256),
    ("iq4_xs", 256),
];

/// The kernels of one format: dequant, `dot_t(x, w)`, `dot_t(w, x)`,
/// `dot(w, x)`, the exact `dot_t(x, dequant(w))` and the free-dim `dot(x, w)`.
fn kernels_for(format: &str, block: i64) -> String {
    format!(
        "
@grid(cdiv(N, 4), cdiv(K, {block}))
kernel dq(W: tensor<{format}>[N, K], Y: tensor<f32>[N, K]) {{
  let n0 = program_id(0) * 4
  let k0 = program_id(1) * {block}
  Y[n0 :+ 4, k0 :+ {block}] = dequant(W[n0 :+ 4, k0 :+ {block}])
}}

@grid(cdiv(N, 4), cdiv(M, 2))
kernel mm(X: tensor<f32>[M, K], W: tensor<{format}>[N, K], Y: tensor<f32>[M, N]) {{
  let m0 = program_id(1) * 2
  let n0 = program_id(0) * 4
  var acc: tile<f32>[2, 4] = 0.0
  for k in range(0, K, {block}) {{
    let w = W[n0 :+ 4, k :+ {block}]
    acc += dot_t(X[m0 :+ 2, k :+ {block}], w)
  }}
  Y[m0 :+ 2, n0 :+ 4] = acc
}}

@grid(cdiv(N, 4))
kernel mt(W: tensor<{format}>[N, K], X: tensor<bf16>[M, K], Y: tensor<f32>[N, M]) {{
  let n0 = program_id(0) * 4
  var acc: tile<f32>[4, 2] = 0.0
  for k in range(0, K, {block}) {{
    acc += dot_t(W[n0 :+ 4, k :+ {block}], X[0 :+ 2, k :+ {block}])
  }}
  Y[n0 :+ 4, 0 :+ 2] = acc
}}

@grid(cdiv(N, 4))
kernel mv(W: tensor<{format}>[N, K], X: tensor<f16>[K, 1], Y: tensor<f32>[N, 1]) {{
  let n0 = program_id(0) * 4
  var acc: tile<f32>[4, 1] = 0.0
  for k in range(0, K, {block}) {{
    acc += dot(W[n0 :+ 4, k :+ {block}], X[k :+ {block}, 0 :+ 1])
  }}
  Y[n0 :+ 4, 0 :+ 1] = acc
}}

@grid(cdiv(N, 4), cdiv(M, 2))
kernel ex(X: tensor<f32>[M, K], W: tensor<{format}>[N, K], Y: tensor<f32>[M, N]) {{
  let m0 = program_id(1) * 2
  let n0 = program_id(0) * 4
  var acc: tile<f32>[2, 4] = 0.0
  for k in range(0, K, {block}) {{
    acc += dot_t(X[m0 :+ 2, k :+ {block}], dequant(W[n0 :+ 4, k :+ {block}]))
  }}
  Y[m0 :+ 2, n0 :+ 4] = acc
}}

@grid(cdiv(N, 16), cdiv(M, 32))
kernel pm(X: tensor<f32>[M, K], W: tensor<{format}>[N, K], Y: tensor<f32>[M, N]) {{
  let m0 = program_id(1) * 32
  let n0 = program_id(0) * 16
  var acc: tile<f32>[32, 16] = 0.0
  for k in range(0, K, {block}) {{
    acc += dot_t(X[m0 :+ 32, k :+ {block}], W[n0 :+ 16, k :+ {block}])
  }}
  Y[m0 :+ 32, n0 :+ 16] = acc
}}

@grid(cdiv(N, 8), cdiv(M, 16))
kernel pw(W: tensor<{format}>[N, K], X: tensor<f16>[M, K], Y: tensor<f32>[N, M]) {{
  let m0 = program_id(1) * 16
  let n0 = program_id(0) * 8
  var acc: tile<f32>[8, 16] = 0.0
  for k in range(0, K, {block}) {{
    acc += dot_t(W[n0 :+ 8, k :+ {block}], X[m0 :+ 16, k :+ {block}])
  }}
  Y[n0 :+ 8, m0 :+ 16] = acc
}}

@grid(cdiv(N, {block}))
kernel fr(X: tensor<f32>[M, K], W: tensor<{format}>[K, N], Y: tensor<f32>[M, N]) {{
  let n0 = program_id(0) * {block}
  var acc: tile<f32>[2, {block}] = 0.0
  for k in range(0, K, 4) {{
    acc += dot(X[0 :+ 2, k :+ 4], W[k :+ 4, n0 :+ {block}])
  }}
  Y[0 :+ 2, n0 :+ {block}] = acc
}}
"
    )
}

fn check(src: &str) -> Vec<ir::Kernel> {
    check_source(&Source::file("quant.ph", src))
        .unwrap_or_else(|e| panic!("front end rejected:\n{src}\n{e:?}"))
        .kernels
}

#[test]
fn every_lowered_format_compiles_and_assembles_for_every_chip() {
    let ptxas_path = ptxas();
    for (format, block) in LOWERED {
        for kernel in check(&kernels_for(format, block)) {
            let config = kernel.default_config();
            for chip in ["sm_75", "sm_80", "sm_90"] {
                for index_bits in [32, 64] {
                    let what = format!("{format}_{}_{index_bits}", kernel.name);
                    let variant = mlir::compile_ptx(&kernel, &config, chip, index_bits)
                        .unwrap_or_else(|e| panic!("{what} {chip}: {e}"));
                    assert!(variant.ptx.contains(&format!(".entry {}", kernel.name)));
                    assert!(!variant.ptx.contains("__nv_"), "libdevice call in {what}");
                    // §14: every float step rounds on its own.
                    assert!(
                        !variant.ptx.contains("fma."),
                        "{what} {chip} fuses a multiply-add"
                    );
                    // ggml's form sums level products four at a time
                    // (sm_61+), or, for tiles of 16 partner rows and 8
                    // weight rows on sm_80+, a scale group at a time on the
                    // int8 tensor cores (k16 for the 16-element groups of
                    // Q2_K, Q3_K and Q6_K); dequant and the exact forms have
                    // neither, nor IQ4_XS, whose contractions the GPU runs
                    // exact.
                    let ggml_form =
                        matches!(kernel.name.as_str(), "mm" | "mt" | "mv" | "pm" | "pw")
                            && format != "iq4_xs";
                    let tensor_cores =
                        ggml_form && matches!(kernel.name.as_str(), "pm" | "pw") && chip != "sm_75";
                    assert_eq!(
                        variant.ptx.contains("dp4a.s32.s32"),
                        ggml_form && !tensor_cores,
                        "{what} {chip}: dp4a in the PTX"
                    );
                    let k = if matches!(format, "q2_k" | "q3_k" | "q6_k") {
                        16
                    } else {
                        32
                    };
                    let mma = format!("mma.sync.aligned.m16n8k{k}.row.col.s32.s8.s8.s32");
                    assert_eq!(
                        variant.ptx.contains(&mma),
                        tensor_cores,
                        "{what} {chip}: {mma} in the PTX"
                    );
                    assert!(
                        tensor_cores || !variant.ptx.contains("mma.sync"),
                        "{what} {chip}: mma.sync where none belongs"
                    );
                    if let Some(p) = &ptxas_path {
                        assemble(p, &variant.ptx, chip, &what);
                    }
                }
            }
        }
    }
}

#[test]
fn a_format_without_a_lowering_fails_to_build_naming_it() {
    let src = "
@grid(1)
kernel t(W: tensor<iq2_xxs>[N, 256], Y: tensor<f32>[N, 256]) {
  Y[0 :+ 4, 0 :+ 256] = dequant(W[0 :+ 4, 0 :+ 256])
}
";
    let kernel = check(src).remove(0);
    let err = mlir::compile_ptx(&kernel, &kernel.default_config(), "sm_80", 32).unwrap_err();
    assert!(err.to_string().contains("iq2_xxs"), "{err}");
    assert!(err.to_string().contains("`W`"), "{err}");
}

/// The language-level pieces of §14 on the GPU: a store that quantizes into
/// a `tensor<q8_0>`, and ggml's contraction written with `qlevels` and
/// `qscales` (tests/quant_reference.rs runs the same kernels on the host).
const LANGUAGE_KERNELS: &str = "
@grid(M, cdiv(K, 64))
kernel quantize_q8_0(X: tensor<f32>[M, K], XQ: tensor<q8_0>[M, K]) {
  let m = program_id(0)
  let k = program_id(1) * 64
  XQ[m :+ 1, k :+ 64] = X[m :+ 1, k :+ 64]
}

@grid(M, N)
kernel reference(XQ: tensor<q8_0>[M, K], W: tensor<q5_0>[N, K], Y: tensor<f32>[M, N]) {
  let m = program_id(0)
  let n = program_id(1)
  var acc: tile<f32>[1, 1] = 0.0
  for k in range(0, K, 32) {
    let x = XQ[m :+ 1, k :+ 32]
    let w = W[n :+ 1, k :+ 32]
    acc += f32(dot_t(qlevels(x), qlevels(w))) * (qscales(w) * qscales(x))
  }
  Y[m :+ 1, n :+ 1] = acc
}
";

#[test]
fn quantizing_stores_and_block_access_assemble_for_every_chip() {
    let ptxas_path = ptxas();
    for kernel in check(LANGUAGE_KERNELS) {
        let config = kernel.default_config();
        for chip in ["sm_75", "sm_80", "sm_90"] {
            let what = format!("language_{}", kernel.name);
            let variant = mlir::compile_ptx(&kernel, &config, chip, 32)
                .unwrap_or_else(|e| panic!("{what} {chip}: {e}"));
            assert!(
                !variant.ptx.contains("fma."),
                "{what} {chip} fuses a multiply-add"
            );
            if kernel.name == "quantize_q8_0" {
                // Bytes are written one at a time into the blocks.
                assert!(
                    variant.ptx.contains("st.global.u8") || variant.ptx.contains("st.global.b8"),
                    "{}",
                    variant.ptx
                );
            }
            if let Some(p) = &ptxas_path {
                assemble(p, &variant.ptx, chip, &what);
            }
        }
    }
}
