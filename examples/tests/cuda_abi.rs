//! The CUDA runtime against the example kernels without a GPU: launch
//! arguments packed against every kernel's declared ABI (every variant, or
//! a 32-bit stand-in variant in a host-only build), mismatches refused, and
//! `PHOBOS_BACKEND=cuda` failing clearly from a real binary where there is
//! no driver.

use phobos::artifact::{AbiParamKind, KernelArtifact, PtxVariant};
use phobos::cuda::args::{Slot, pack};
use phobos::cuda::{KernelArg, ScalarArg, TensorArg};
use phobos::{DType, bf16, f16};
use phobos_examples::kernels;

fn artifacts() -> Vec<&'static KernelArtifact> {
    vec![
        &kernels::saxpy::ARTIFACT,
        &kernels::gemm_f32::ARTIFACT,
        &kernels::gemm_f16::ARTIFACT,
        &kernels::gemm_f16_tc::ARTIFACT,
        &kernels::gemm_f16_tc_pipe::ARTIFACT,
        &kernels::gemm_f32_pipe::ARTIFACT,
        &kernels::gemm_f16_pipe::ARTIFACT,
        &kernels::softmax::ARTIFACT,
        &kernels::layernorm::ARTIFACT,
        &kernels::rmsnorm::ARTIFACT,
        &kernels::flash_attn_f32::ARTIFACT,
        &kernels::flash_attn_f16::ARTIFACT,
        &kernels::flash_attn_f16_tc::ARTIFACT,
        &kernels::gla_chunk::ARTIFACT,
        &kernels::edge_int_i8::ARTIFACT,
        &kernels::edge_int_u8::ARTIFACT,
        &kernels::edge_int_i16::ARTIFACT,
        &kernels::edge_int_u16::ARTIFACT,
        &kernels::edge_int_i32::ARTIFACT,
        &kernels::edge_int_u32::ARTIFACT,
        &kernels::edge_int_i64::ARTIFACT,
        &kernels::edge_float_f16::ARTIFACT,
        &kernels::edge_float_bf16::ARTIFACT,
        &kernels::edge_float_f32::ARTIFACT,
        &kernels::edge_float_f64::ARTIFACT,
        &kernels::edge_loop_i32::ARTIFACT,
        &kernels::edge_loop_u8::ARTIFACT,
    ]
}

const STAND_IN: PtxVariant = PtxVariant {
    config: &[],
    chip: "sm_90",
    index_bits: 32,
    ptx_lz4: &[],
    ptx_len_bytes: 0,
    threads: 128,
    shared_bytes: 0,
    registers: None,
    spill_bytes: None,
};

/// Every symbolic dim's extent in these tests (ragged: no tile divides it).
const EXTENT: usize = 37;

fn scalar_one(dtype: &str) -> ScalarArg {
    match dtype {
        "f32" => ScalarArg::of(1.0f32),
        "f64" => ScalarArg::of(1.0f64),
        "f16" => ScalarArg::of(f16::ONE),
        "bf16" => ScalarArg::of(bf16::ONE),
        "i32" => ScalarArg::of(1i32),
        "u32" => ScalarArg::of(1u32),
        "i64" => ScalarArg::of(1i64),
        "i16" => ScalarArg::of(1i16),
        "u16" => ScalarArg::of(1u16),
        "i8" => ScalarArg::of(1i8),
        "u8" => ScalarArg::of(1u8),
        "bool" => ScalarArg::of(true),
        other => panic!("no test scalar for {other}"),
    }
}

/// Arguments matching the ABI, tensors at distinct stand-in addresses.
fn matching_args(artifact: &KernelArtifact) -> Vec<KernelArg> {
    artifact
        .params
        .iter()
        .enumerate()
        .map(|(i, param)| match param.kind {
            AbiParamKind::Pointer { elem, dims, .. } => {
                let shape: Vec<usize> = dims.iter().map(|d| d.parse().unwrap_or(EXTENT)).collect();
                let mut strides = vec![1; shape.len()];
                for axis in (0..shape.len().saturating_sub(1)).rev() {
                    strides[axis] = strides[axis + 1] * shape[axis + 1];
                }
                KernelArg::Tensor(TensorArg {
                    elem: DType::from_name(elem).unwrap(),
                    device_ptr: 0x7f00_0000_0000 + 0x100_0000 * i as u64,
                    shape,
                    strides,
                    writable: true,
                })
            }
            AbiParamKind::Value { dtype } => KernelArg::Scalar(scalar_one(dtype)),
        })
        .collect()
}

fn variants(artifact: &'static KernelArtifact) -> Vec<&'static PtxVariant> {
    if artifact.variants.is_empty() {
        vec![&STAND_IN]
    } else {
        artifact.variants.iter().collect()
    }
}

#[test]
fn every_kernel_packs_in_its_declared_abi() {
    let mut packed_variants = 0;
    for artifact in artifacts() {
        let dims: Vec<(&str, usize)> = artifact.dims.iter().map(|&d| (d, EXTENT)).collect();
        let args = matching_args(artifact);
        for variant in variants(artifact) {
            let packed = pack(artifact, variant, &dims, &args)
                .unwrap_or_else(|e| panic!("{} {:?}: {e}", artifact.name, variant.config));
            // Expected widths: params, then one i32 per dim, then strides.
            let mut widths: Vec<usize> = artifact
                .params
                .iter()
                .map(|p| match p.kind {
                    AbiParamKind::Pointer { .. } => 8,
                    AbiParamKind::Value { dtype } => DType::from_name(dtype).unwrap().size_bytes(),
                })
                .collect();
            widths.extend(artifact.dims.iter().map(|_| 4));
            let stride_bytes = variant.index_bits as usize / 8;
            widths.extend(
                artifact
                    .params
                    .iter()
                    .flat_map(|p| vec![stride_bytes; p.rank()]),
            );
            let got: Vec<usize> = packed.slots.iter().map(|s: &Slot| s.len_bytes).collect();
            assert_eq!(got, widths, "{}", artifact.name);
            // Pointers are the tensors' addresses, in parameter order.
            for (slot, (arg, param)) in packed.slots.iter().zip(args.iter().zip(artifact.params)) {
                if let KernelArg::Tensor(t) = arg {
                    assert_eq!(
                        slot.le_bytes(),
                        t.device_ptr.to_le_bytes(),
                        "{} {}",
                        artifact.name,
                        param.name
                    );
                }
            }
            packed_variants += 1;
        }
    }
    assert!(packed_variants >= artifacts().len());
}

#[test]
fn every_kernel_refuses_arguments_that_disagree_with_its_abi() {
    for artifact in artifacts() {
        let dims: Vec<(&str, usize)> = artifact.dims.iter().map(|&d| (d, EXTENT)).collect();
        let variant = variants(artifact)[0];
        let args = matching_args(artifact);
        for (i, arg) in args.iter().enumerate() {
            let mut wrong = args.clone();
            wrong[i] = match arg {
                KernelArg::Tensor(t) => {
                    let elem = if t.elem == DType::F64 {
                        DType::I8
                    } else {
                        DType::F64
                    };
                    KernelArg::Tensor(TensorArg { elem, ..t.clone() })
                }
                KernelArg::Scalar(s) => {
                    let other = if s.dtype == DType::I64 {
                        ScalarArg::of(1i8)
                    } else {
                        ScalarArg::of(1i64)
                    };
                    KernelArg::Scalar(other)
                }
                // A scalar where the ABI declares quantized blocks.
                KernelArg::Quant(_) => KernelArg::Scalar(ScalarArg::of(1i64)),
            };
            let err = pack(artifact, variant, &dims, &wrong)
                .unwrap_err()
                .to_string();
            assert!(err.contains("ABI mismatch"), "{}: {err}", artifact.name);
        }
        if let Some((dim, _)) = dims.first() {
            let mut off = dims.clone();
            off[0] = (dim, EXTENT + 1);
            assert!(
                pack(artifact, variant, &off, &args).is_err(),
                "{}: a wrong extent of {dim} packed",
                artifact.name
            );
        }
        assert!(pack(artifact, variant, &dims, &args[..args.len() - 1]).is_err());
    }
}

/// The device check binary: `PHOBOS_BACKEND=cuda` on a machine without the
/// driver exits non-zero naming what is missing; `--dry-run` builds every
/// case on the host and packs every variant against its ABI.
#[test]
fn the_device_check_fails_clearly_without_a_driver_and_dry_runs() {
    let exe = env!("CARGO_BIN_EXE_device_check");
    let out = std::env::temp_dir().join(format!("phobos-device-check-{}", std::process::id()));
    let run = |args: &[&str]| {
        std::process::Command::new(exe)
            .args(args)
            .arg("--out")
            .arg(&out)
            .env("PHOBOS_BACKEND", "cuda")
            .env_remove("RUST_BACKTRACE")
            .output()
            .unwrap()
    };
    // SAFETY: only tries to open the library.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        let forced = run(&[]);
        let stderr = String::from_utf8_lossy(&forced.stderr);
        assert!(!forced.status.success(), "{stderr}");
        assert!(
            stderr.contains("backend `cuda` is not available: no CUDA driver library found"),
            "{stderr}"
        );
        assert!(stderr.contains("libcuda.so"), "{stderr}");
    }
    let dry = run(&["--dry-run", "--chip", "sm_90"]);
    let stdout = String::from_utf8_lossy(&dry.stdout);
    let summary = std::fs::read_to_string(out.join("rust_summary.txt")).unwrap_or_default();
    let check_csv = std::fs::read_to_string(out.join("rust_check.csv")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&out);
    if cfg!(feature = "ptx") {
        assert!(
            dry.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&dry.stderr)
        );
        assert!(summary.contains(" 0 failures (dry run"), "{summary}");
        // One row per sm_90 variant of every kernel, all packed.
        assert!(check_csv.lines().count() > 20, "{check_csv}");
        assert!(!check_csv.contains(",false,"), "{check_csv}");
    } else {
        // Host-only build: no PTX, so every kernel fails, each saying why.
        assert!(!dry.status.success());
        assert!(stdout.contains("built without PTX"), "{stdout}");
    }
}
