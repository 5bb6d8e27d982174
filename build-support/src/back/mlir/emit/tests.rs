//! What the emitter refuses, prunes and decides, on small kernels.

use crate::{
    Source,
    back::mlir::{MlirError, emit_mlir},
    check_source, ir,
};

use super::plan::{TileHome, plan};

fn kernel(src: &str) -> ir::Kernel {
    let module = check_source(&Source::file("test.ph", src))
        .unwrap_or_else(|e| panic!("front end rejected the test kernel: {e:?}"));
    module.kernels.into_iter().next().unwrap()
}

fn emit_err(src: &str) -> MlirError {
    let k = kernel(src);
    emit_mlir(&k, &k.default_config(), "sm_80", 32).unwrap_err()
}

const GEMM: &str = "
@autotune(TM in [32, 64], TN in [32, 64], TK in [8, 16])
@grid(cdiv(M, TM), cdiv(N, TN))
kernel g(A: tensor<f32>[M, K], B: tensor<f32>[K, N], C: tensor<f32>[M, N]) {
  var acc: tile<f32>[TM, TN] = 0.0
  for kt in range(0, K, TK) {
    let a = A[program_id(0) * TM :+ TM, kt :+ TK]
    let b = B[kt :+ TK, program_id(1) * TN :+ TN]
    acc += dot(a, b)
  }
  C[program_id(0) * TM :+ TM, program_id(1) * TN :+ TN] = acc
}
";

#[test]
fn dot_operands_go_to_shared_memory_and_the_accumulator_stays_in_registers() {
    let k = kernel(GEMM);
    let p = plan(&k, &k.default_config()).unwrap();
    let home = |name: &str| {
        let id = k.locals.iter().position(|l| l.name == name).unwrap();
        p.homes[&ir::LocalId(id as u32)]
    };
    assert_eq!(home("acc"), TileHome::Private);
    assert_eq!(home("a"), TileHome::Shared);
    assert_eq!(home("b"), TileHome::Shared);
    assert_eq!(p.max_tile_elements, 32 * 32);
}

#[test]
fn gemm_declares_exactly_its_operand_tiles_in_shared_memory() {
    let k = kernel(GEMM);
    let e = emit_mlir(&k, &k.default_config(), "sm_80", 32).unwrap();
    // a: 32x8 f32 and b: 8x32 f32.
    assert_eq!(e.shared_bytes, 2 * 32 * 8 * 4);
    assert_eq!(e.threads, 256);
    assert!(e.mlir.contains("gpu.func @g("), "{}", e.mlir);
    assert!(e.mlir.contains("private(%pr0 : memref<4xf32"), "{}", e.mlir);
}

#[test]
fn kernel_abi_is_params_then_dims_then_strides() {
    let k = kernel(GEMM);
    let e = emit_mlir(&k, &k.default_config(), "sm_80", 64).unwrap();
    let header = e.mlir.lines().find(|l| l.contains("gpu.func")).unwrap();
    let expected = "gpu.func @g(%p_A: !llvm.ptr<1>, %p_B: !llvm.ptr<1>, %p_C: !llvm.ptr<1>, \
                    %d_M: i32, %d_K: i32, %d_N: i32, %s_A_0: i64, %s_A_1: i64, %s_B_0: i64, \
                    %s_B_1: i64, %s_C_0: i64, %s_C_1: i64)";
    assert!(header.trim_start().starts_with(expected), "{header}");
}

#[test]
fn configs_over_the_static_shared_memory_limit_are_pruned_with_the_size() {
    let src = "
@autotune(T in [64, 128])
@grid(1)
kernel t(X: tensor<f32>[N, N], Y: tensor<f32>[N, N]) {
  let x = X[0 :+ T, 0 :+ T]
  Y[0 :+ T, 0 :+ T] = transpose(x)
}
";
    let k = kernel(src);
    let small = k
        .configs()
        .into_iter()
        .find(|c| c.get("T") == Some(64))
        .unwrap();
    let big = k
        .configs()
        .into_iter()
        .find(|c| c.get("T") == Some(128))
        .unwrap();
    assert!(emit_mlir(&k, &small, "sm_80", 32).is_ok());
    let err = emit_mlir(&k, &big, "sm_80", 32).unwrap_err();
    match err {
        MlirError::DoesNotFit(why) => assert!(why.contains("65536 bytes"), "{why}"),
        other => panic!("expected DoesNotFit, got {other}"),
    }
}

const TC_GEMM: &str = "
@tensorcore
@launch(threads = 128)
@autotune(TM in [64, 24, 128], TN in [64], TK in [8, 32])
@grid(cdiv(M, TM), cdiv(N, TN))
kernel g(A: tensor<f16>[M, K], B: tensor<f16>[K, N], C: tensor<f32>[M, N]) {
  var acc: tile<f32>[TM, TN] = 0.0
  for kt in range(0, K, TK) {
    let a = A[program_id(0) * TM :+ TM, kt :+ TK]
    let b = B[kt :+ TK, program_id(1) * TN :+ TN]
    acc += dot(a, b)
  }
  C[program_id(0) * TM :+ TM, program_id(1) * TN :+ TN] = acc
}
";

fn config(k: &ir::Kernel, tm: i64, tk: i64) -> ir::Config {
    k.configs()
        .into_iter()
        .find(|c| c.get("TM") == Some(tm) && c.get("TK") == Some(tk))
        .unwrap()
}

#[test]
fn tensorcore_gemm_runs_on_mma_sync_fed_by_ldmatrix() {
    let k = kernel(TC_GEMM);
    let c = config(&k, 64, 32);
    let sm80 = emit_mlir(&k, &c, "sm_80", 32).unwrap();
    assert!(sm80.mlir.contains("nvgpu.mma.sync"), "{}", sm80.mlir);
    assert!(sm80.mlir.contains("mmaShape = [16, 8, 16]"));
    // A untransposed (x4), B of `dot` is [K, N] and needs `.trans` (x2).
    assert!(
        sm80.mlir
            .contains("{numTiles = 4 : i32, transpose = false}")
    );
    assert!(sm80.mlir.contains("{numTiles = 2 : i32, transpose = true}"));
    // ldmatrix rows must be 16-byte aligned.
    assert!(sm80.mlir.contains("{llvm.align = 16 : i64}"));
    // The accumulator never goes through shared memory: only a and b do.
    assert_eq!(sm80.shared_bytes, 2 * 64 * 32 * 2);
    let sm75 = emit_mlir(&k, &c, "sm_75", 32).unwrap();
    assert!(sm75.mlir.contains("mmaShape = [16, 8, 8]"), "{}", sm75.mlir);
    assert!(sm75.mlir.contains("{numTiles = 1 : i32, transpose = true}"));
}

#[test]
fn tensorcore_dot_t_loads_b_untransposed() {
    let src = "
@tensorcore
@launch(threads = 64)
@grid(1)
kernel t(A: tensor<f16>[32, 32], B: tensor<f16>[16, 32], C: tensor<f32>[32, 16]) {
  C[0 :+ 32, 0 :+ 16] = dot_t(A[0 :+ 32, 0 :+ 32], B[0 :+ 16, 0 :+ 32])
}
";
    let k = kernel(src);
    let e = emit_mlir(&k, &k.default_config(), "sm_90", 64).unwrap();
    assert!(e.mlir.contains("nvgpu.mma.sync"), "{}", e.mlir);
    assert!(e.mlir.contains("{numTiles = 2 : i32, transpose = false}"));
    assert!(!e.mlir.contains("transpose = true"));
}

#[test]
fn tensorcore_configs_that_do_not_tile_are_pruned_with_the_rule() {
    let k = kernel(TC_GEMM);
    let why = |tm, tk, chip| match emit_mlir(&k, &config(&k, tm, tk), chip, 32) {
        Err(MlirError::DoesNotFit(why)) => why,
        other => panic!("expected DoesNotFit, got {other:?}"),
    };
    assert!(why(24, 32, "sm_80").contains("M % 16 == 0"));
    // K = 8 is one m16n8k8 step on sm_75 but not a m16n8k16 step.
    assert!(why(64, 8, "sm_80").contains("K % 16 == 0"));
    assert!(emit_mlir(&k, &config(&k, 64, 8), "sm_75", 32).is_ok());
    assert!(why(64, 32, "sm_70").contains("sm_75"));
}

#[test]
fn tensorcore_needs_whole_warps_and_refuses_bf16_by_name() {
    let src = "
@tensorcore
@launch(threads = 48)
@grid(1)
kernel t(A: tensor<f16>[16, 16], B: tensor<f16>[16, 16], C: tensor<f32>[16, 16]) {
  C[0 :+ 16, 0 :+ 16] = dot(A[0 :+ 16, 0 :+ 16], B[0 :+ 16, 0 :+ 16])
}
";
    let err = emit_err(src);
    assert!(
        matches!(&err, MlirError::DoesNotFit(w) if w.contains("multiple of 32")),
        "{err}"
    );
    let k = kernel(&src.replace("threads = 48", "threads = 32"));
    assert!(emit_mlir(&k, &k.default_config(), "sm_80", 32).is_ok());
    let err = emit_err(
        &src.replace("f16>", "bf16>")
            .replace("threads = 48", "threads = 32"),
    );
    assert!(
        matches!(&err, MlirError::Unsupported { .. }) && err.to_string().contains("bf16"),
        "{err}"
    );
}

#[test]
fn tensorcore_without_a_usable_contraction_is_a_hard_error() {
    let no_dot = "
@tensorcore
@grid(1)
kernel t(X: tensor<f16>[N], Y: tensor<f16>[N]) {
  Y[0 :+ 32] = X[0 :+ 32]
}
";
    let err = emit_err(no_dot);
    assert!(
        matches!(&err, MlirError::Unsupported { .. })
            && err.to_string().contains("no rank-2 `dot`"),
        "{err}"
    );
    let f32_dot = "
@tensorcore
@grid(1)
kernel t(A: tensor<f32>[16, 16], B: tensor<f32>[16, 16], C: tensor<f32>[16, 16]) {
  C[0 :+ 16, 0 :+ 16] = dot(A[0 :+ 16, 0 :+ 16], B[0 :+ 16, 0 :+ 16])
}
";
    let err = emit_err(f32_dot);
    assert!(
        matches!(&err, MlirError::Unsupported { .. }) && err.to_string().contains("f32 and f32"),
        "{err}"
    );
}

#[test]
fn quantized_formats_without_a_lowering_are_refused_by_name() {
    let src = "
@grid(1)
kernel t(W: tensor<iq3_s>[N, 256], X: tensor<f32>[256, 1], Y: tensor<f32>[N, 1]) {
  Y[0 :+ 16, 0 :+ 1] = dot(W[0 :+ 16, 0 :+ 256], X[0 :+ 256, 0 :+ 1])
}
";
    let err = emit_err(src);
    assert!(err.to_string().contains("iq3_s"), "{err}");
    assert!(err.to_string().contains("parameter `W`"), "{err}");
}

#[test]
fn a_ggml_form_contraction_quantizes_the_activation_once_per_statement() {
    let src = "
@grid(cdiv(N, 4))
kernel t(X: tensor<f32>[2, K], W: tensor<q8_0>[N, K], Y: tensor<f32>[2, N]) {
  var acc: tile<f32>[2, 4] = 0.0
  for k in range(0, K, 32) {
    acc += dot_t(X[0 :+ 2, k :+ 32], W[program_id(0) * 4 :+ 4, k :+ 32])
  }
  Y[0 :+ 2, program_id(0) * 4 :+ 4] = acc
}
";
    let k = kernel(src);
    let e = emit_mlir(&k, &k.default_config(), "sm_80", 32).unwrap();
    // The activation tile (2x32 f32), its q8_0 levels (2x32 i8) and scales
    // (2 f32) in shared memory; the weight blocks are read in place.
    assert_eq!(e.shared_bytes, 2 * 32 * 4 + 2 * 32 + 2 * 4, "{}", e.mlir);
    assert!(
        e.mlir
            .contains("memref<64xi8, #gpu.address_space<workgroup>>"),
        "{}",
        e.mlir
    );
    // The partner scale is rounded through f16 as q8_0 stores it.
    assert!(
        e.mlir.contains("arith.truncf") && e.mlir.contains("f32 to f16"),
        "{}",
        e.mlir
    );
    // Block bytes are addressed as i8 from the weight pointer.
    assert!(e.mlir.contains("llvm.getelementptr %p_W["), "{}", e.mlir);
}

#[test]
fn the_exact_form_stages_the_dequantized_tile() {
    let src = "
@grid(1)
kernel t(X: tensor<f32>[2, 32], W: tensor<q4_0>[4, 32], Y: tensor<f32>[2, 4]) {
  Y[0 :+ 2, 0 :+ 4] = dot_t(X[0 :+ 2, 0 :+ 32], dequant(W[0 :+ 4, 0 :+ 32]))
}
";
    let k = kernel(src);
    let e = emit_mlir(&k, &k.default_config(), "sm_80", 32).unwrap();
    // x (2x32 f32) and dequant(w) (4x32 f32); no partner levels.
    assert_eq!(e.shared_bytes, (2 * 32 + 4 * 32) * 4, "{}", e.mlir);
    assert!(!e.mlir.contains("xi8"), "{}", e.mlir);
}

#[test]
fn float_remainder_is_computed_in_place_without_libdevice() {
    let src = "
@grid(1)
kernel t(X: tensor<f16>[N], Y: tensor<f16>[N]) {
  Y[0 :+ 32] = X[0 :+ 32] % 3.0
}
";
    let k = kernel(src);
    let mlir = emit_mlir(&k, &k.default_config(), "sm_80", 32)
        .unwrap()
        .mlir;
    // In f32, then rounded once; the two loops of the exact reduction.
    assert!(mlir.contains("arith.extf"), "{mlir}");
    assert!(mlir.matches("scf.while").count() >= 2, "{mlir}");
    assert!(mlir.contains("llvm.copysign.f32"), "{mlir}");
    assert!(!mlir.contains("math.") && !mlir.contains("__nv_"), "{mlir}");
}

#[test]
fn f64_transcendentals_are_refused_by_name() {
    let src = "
@grid(1)
kernel t(X: tensor<f64>[N], Y: tensor<f64>[N]) {
  Y[0 :+ 32] = exp(X[0 :+ 32])
}
";
    let err = emit_err(src);
    assert!(err.to_string().contains("`exp` on f64"), "{err}");
}

#[test]
fn bad_targets_are_errors() {
    let k = kernel(GEMM);
    let c = k.default_config();
    assert!(matches!(
        emit_mlir(&k, &c, "gfx90a", 32),
        Err(MlirError::BadChip(_))
    ));
    assert!(matches!(
        emit_mlir(&k, &c, "sm_80", 48),
        Err(MlirError::BadIndexBits(48))
    ));
}

#[test]
fn tensorcore_accumulates_into_the_accumulator_without_a_temporary() {
    let k = kernel(TC_GEMM);
    let c = config(&k, 64, 32);
    let e = emit_mlir(&k, &c, "sm_80", 32).unwrap();
    // 64x64 over 4 warps: 8 blocks of 16x8 per warp, 32 f32 slots. Only
    // `acc` has them: no second fragment buffer for the dot's result.
    let header = e.mlir.lines().find(|l| l.contains("gpu.func")).unwrap();
    assert_eq!(header.matches("memref<32xf32").count(), 1, "{header}");
    // Each block's C operand is built from acc's four slots, not zero.
    assert_eq!(e.mlir.matches("vector.from_elements").count(), 8);
    assert!(
        !e.mlir.contains("dense<0.0> : vector<2x2xf32>"),
        "{}",
        e.mlir
    );
}

#[test]
fn a_tensorcore_dot_not_added_to_its_target_still_gets_a_fragment() {
    let src = "
@tensorcore
@launch(threads = 128)
@grid(1)
kernel t(A: tensor<f16>[64, 32], B: tensor<f16>[32, 64], C: tensor<f32>[64, 64]) {
  var acc: tile<f32>[64, 64] = 1.0
  acc = dot(A[0 :+ 64, 0 :+ 32], B[0 :+ 32, 0 :+ 64]) * 2.0 + acc
  C[0 :+ 64, 0 :+ 64] = acc
}
";
    let k = kernel(src);
    let e = emit_mlir(&k, &k.default_config(), "sm_80", 32).unwrap();
    let header = e.mlir.lines().find(|l| l.contains("gpu.func")).unwrap();
    assert_eq!(header.matches("memref<32xf32").count(), 2, "{header}");
    assert!(
        e.mlir.contains("dense<0.0> : vector<2x2xf32>"),
        "{}",
        e.mlir
    );
}
