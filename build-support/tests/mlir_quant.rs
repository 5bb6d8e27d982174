//! Quantized operands through the whole MLIR pipeline: for every format the
//! PTX back end lowers, a dequant kernel and the contractions in ggml's form
//! (quantized operand on either side) and in the exact form (spelled with
//! `dequant`, and over the free dim) compile to PTX for sm_75, sm_80 and
//! sm_90, and ptxas assembles each (skipped with a note when ptxas is
//! missing, unless `PHOBOS_REQUIRE_PTXAS=1`). Their numerics were checked
//! on the host (`back::mlir::emit::quant` unit tests); running them is the
//! device check's job.
#![cfg(feature = "ptx")]

use std::{path::Path, process::Command};

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

fn assemble(ptxas: &Path, ptx: &str, chip: &str, what: &str) {
    let dir = std::env::temp_dir().join(format!("phobos-mlir-quant-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ptx_path = dir.join(format!("{what}_{chip}.ptx"));
    std::fs::write(&ptx_path, ptx).unwrap();
    let out = Command::new(ptxas)
        .arg(format!("-arch={chip}"))
        .arg(&ptx_path)
        .arg("-o")
        .arg(dir.join(format!("{what}_{chip}.cubin")))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ptxas -arch={chip} rejected {what}:\n{}\n(PTX kept at {})",
        String::from_utf8_lossy(&out.stderr),
        ptx_path.display()
    );
}

#[test]
fn every_lowered_format_compiles_and_assembles_for_every_chip() {
    use phobos_build::back::mlir::ptxas;
    let ptxas_path = ptxas::find();
    if ptxas_path.is_none() {
        assert!(!ptxas::required(), "{}", ptxas::MISSING_BUT_REQUIRED);
        eprintln!("note: ptxas not found; PTX is produced but not assembled");
    }
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
                    assert!(!variant.ptx.contains("fma."), "{what} {chip} fuses a multiply-add");
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
