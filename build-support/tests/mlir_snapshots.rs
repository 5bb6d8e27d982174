//! Snapshots of the MLIR the back end emits for the example kernels, at
//! each kernel's default config, for sm_80 with 32-bit indexing. Emission
//! needs no LLVM, so these run without feature `ptx`; `mlir_ptx.rs` checks
//! that the same text lowers to PTX that ptxas accepts.

use phobos_build::{Source, back::mlir, check_source};

fn emit_example(file: &str) -> String {
    emit_file(&format!(
        "{}/../examples/kernels/{file}",
        env!("CARGO_MANIFEST_DIR")
    ))
}

fn emit_file(path: &str) -> String {
    let path = path.to_string();
    let text = std::fs::read_to_string(&path).unwrap();
    let module = check_source(&Source::file(path.clone(), text)).unwrap();
    module
        .kernels
        .iter()
        .map(|k| {
            mlir::emit_mlir(k, &k.default_config(), "sm_80", 32)
                .unwrap_or_else(|e| panic!("{path}: {e}"))
                .mlir
        })
        .collect::<Vec<_>>()
        .join("\n")
}

macro_rules! snapshot_example {
    ($test:ident, $file:literal) => {
        #[test]
        fn $test() {
            insta::assert_snapshot!(emit_example($file));
        }
    };
}

snapshot_example!(saxpy, "saxpy.ph");
snapshot_example!(softmax, "softmax.ph");
snapshot_example!(rmsnorm, "rmsnorm.ph");
snapshot_example!(layernorm, "layernorm.ph");
snapshot_example!(gemm_f32, "gemm_f32.ph");
snapshot_example!(gemm_f16, "gemm_f16.ph");
snapshot_example!(gemm_f16_tc, "gemm_f16_tc.ph");
snapshot_example!(gemm_f16_tc_pipe, "gemm_f16_tc_pipe.ph");
snapshot_example!(gemm_f16_pipe, "gemm_f16_pipe.ph");
snapshot_example!(flash_attn_f32, "flash_attn_f32.ph");
snapshot_example!(flash_attn_f16, "flash_attn_f16.ph");
snapshot_example!(gla_chunk, "gla_chunk.ph");

#[test]
fn constructs() {
    insta::assert_snapshot!(emit_file(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/mlir/constructs.ph"
    )));
}

#[test]
fn quantized_operands() {
    insta::assert_snapshot!(emit_file(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/mlir/quant.ph"
    )));
}
