//! PTX from the MLIR back end must assemble with NVIDIA's `ptxas`.
//!
//! `ptxas` comes from PyPI (`pip install nvidia-cuda-nvcc-cu12`; see
//! shared/VERIFY.md). It is looked up as `$PHOBOS_PTXAS`, then `ptxas` on
//! PATH, then inside the Python `nvidia.cuda_nvcc` package. Without it the
//! assembly checks are skipped with a note, unless `PHOBOS_REQUIRE_PTXAS=1`
//! (set in CI), which turns the skip into a failure.
//!
//! Needs phobos-build's feature `ptx`, on by default, so `cargo test -p
//! phobos-build` runs it; `make test` fails if it ever reports 0 tests
//! (scripts/check_test_counts.py).
#![cfg(feature = "ptx")]

mod support;

use std::path::Path;

use support::{assemble, ptxas};

use phobos_build::{
    Source,
    back::mlir::{self, MlirError, Target, pipeline},
    check_source, ir,
};

/// A kernel written directly in MLIR: proves the pipeline (and its
/// serialization to PTX without a CUDA toolkit) independently of the
/// emitter.
const HAND_SAXPY: &str = r#"
module attributes {gpu.container_module} {
  gpu.module @hand {
    gpu.func @saxpy(%x: !llvm.ptr<1>, %y: !llvm.ptr<1>, %a: f32, %n: i32) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %i32 = arith.index_cast %i : index to i32
      %inside = arith.cmpi slt, %i32, %n : i32
      scf.if %inside {
        %px = llvm.getelementptr %x[%i32] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
        %py = llvm.getelementptr %y[%i32] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
        %xv = llvm.load %px : !llvm.ptr<1> -> f32
        %yv = llvm.load %py : !llvm.ptr<1> -> f32
        %ax = arith.mulf %a, %xv : f32
        %r = arith.addf %ax, %yv : f32
        llvm.store %r, %py : f32, !llvm.ptr<1>
      }
      gpu.return
    }
  }
}
"#;

#[test]
fn hand_written_saxpy_lowers_to_ptx_for_every_default_chip() {
    let ptxas = ptxas();
    for chip in mlir::DEFAULT_CHIPS {
        let target = Target::new(chip, 32).unwrap();
        let ptx = pipeline::mlir_to_ptx(HAND_SAXPY, &target).unwrap();
        assert!(ptx.contains(&format!(".target {chip}")), "{ptx}");
        assert!(ptx.contains(".entry saxpy"), "{ptx}");
        // Nothing may call into libdevice: it is not linked.
        assert!(!ptx.contains("__nv_"), "{ptx}");
        if let Some(p) = &ptxas {
            assemble(p, &ptx, chip, "hand_saxpy");
        }
    }
}

/// `@pipeline` copies with `cp.async` where the chip has it (sm_80+) and
/// prefetches through registers where it does not (sm_75); every config
/// that fits assembles, and its staged buffers are 16-byte aligned (a
/// 4-byte `cp.async` into an `.align 2` f16 buffer may fault).
#[test]
fn pipelined_gemms_use_cp_async_from_sm_80_on() {
    let ptxas = ptxas();
    for kernel in example_kernels().into_iter().filter(|k| k.pipeline) {
        for (config, chip) in kernel
            .configs()
            .into_iter()
            .flat_map(|c| ["sm_75", "sm_80", "sm_90"].map(|chip| (c.clone(), chip)))
        {
            let variant = match mlir::compile_ptx(&kernel, &config, chip, 32) {
                Ok(v) => v,
                Err(MlirError::DoesNotFit(_)) => continue,
                Err(e) => panic!("{} [{config}] {chip}: {e}", kernel.name),
            };
            for shared in variant.ptx.lines().filter(|l| l.contains(".shared .align")) {
                assert!(
                    shared.contains(".align 16"),
                    "{} {chip}: {shared}",
                    kernel.name
                );
            }
            let has_async = variant.ptx.contains("cp.async.ca.shared.global");
            assert_eq!(has_async, chip != "sm_75", "{} {chip}", kernel.name);
            if has_async {
                assert!(variant.ptx.contains("cp.async.commit_group"));
                // Rows of whole 16-byte runs copy 16 bytes at a time.
                assert!(
                    variant.ptx.contains("cp.async.cg.shared.global"),
                    "{} [{config}] {chip}",
                    kernel.name
                );
                assert!(variant.ptx.contains("cp.async.wait_group"));
            }
            if let Some(p) = &ptxas {
                assemble(p, &variant.ptx, chip, &format!("{}_{config}", kernel.name));
            }
        }
    }
}

#[test]
fn invalid_mlir_is_an_error_not_a_crash() {
    let target = Target::new("sm_80", 32).unwrap();
    let err = pipeline::mlir_to_ptx("module { this is not mlir }", &target).unwrap_err();
    assert!(matches!(err, MlirError::InvalidModule { .. }), "{err}");
}

fn example_kernels() -> Vec<ir::Kernel> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/kernels");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ph"))
        .collect();
    paths.sort();
    let mut kernels = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let module = check_source(&Source::file(path.display().to_string(), text))
            .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        kernels.extend(module.kernels);
    }
    kernels
}

#[test]
fn example_kernels_at_default_config_assemble_for_every_chip() {
    let ptxas = ptxas();
    let chips = mlir::chips_from_env();
    for kernel in example_kernels() {
        let config = kernel.default_config();
        for chip in &chips {
            for index_bits in [32, 64] {
                let variant = mlir::compile_ptx(&kernel, &config, chip, index_bits)
                    .unwrap_or_else(|e| panic!("{} [{config}] {chip}: {e}", kernel.name));
                assert!(variant.ptx.contains(&format!(".entry {}", kernel.name)));
                assert!(
                    !variant.ptx.contains("__nv_"),
                    "libdevice call in {}",
                    kernel.name
                );
                // LLVM merges shared loads into `ld.shared.v4` whatever the
                // buffer's declared alignment; it must be 16.
                for shared in variant.ptx.lines().filter(|l| l.contains(".shared .align")) {
                    assert!(
                        shared.contains(".align 16"),
                        "{} {chip}: {shared}",
                        kernel.name
                    );
                }
                if let Some(p) = &ptxas {
                    let what = format!("{}_i{index_bits}", kernel.name);
                    assemble(p, &variant.ptx, chip, &what);
                }
                if let Ok(dir) = std::env::var("PHOBOS_DUMP_PTX_DIR") {
                    dump_for_device_check(Path::new(&dir), &kernel, &variant);
                }
            }
        }
    }
}

/// Every config either compiles and assembles, or is pruned with a reason
/// (`DoesNotFit`); nothing else is acceptable.
#[test]
fn every_config_of_every_example_compiles_or_is_pruned_on_sm_80() {
    let ptxas = ptxas();
    let mut compiled = 0;
    let mut pruned = 0;
    for kernel in example_kernels() {
        for config in kernel.configs() {
            match mlir::compile_ptx(&kernel, &config, "sm_80", 32) {
                Ok(variant) => {
                    compiled += 1;
                    if let Some(p) = &ptxas {
                        assemble(
                            p,
                            &variant.ptx,
                            "sm_80",
                            &format!("{}_{config}", kernel.name),
                        );
                    }
                }
                Err(MlirError::DoesNotFit(why)) => {
                    pruned += 1;
                    eprintln!("pruned {} [{config}]: {why}", kernel.name);
                }
                Err(e) => panic!("{} [{config}]: {e}", kernel.name),
            }
        }
    }
    eprintln!("{compiled} variants compiled, {pruned} pruned");
    assert!(compiled > 0);
}

/// Writes `<kernel>.<chip>.i<bits>.ptx` and a `.json` beside it with what
/// a launcher needs (the ABI of `back::mlir::emit`): parameters, dim order,
/// config, threads. (The GPU check reads the embedded variants instead:
/// `examples/examples/device_dump`.)
fn dump_for_device_check(dir: &Path, kernel: &ir::Kernel, variant: &mlir::PtxVariant) {
    std::fs::create_dir_all(dir).unwrap();
    let stem = format!("{}.{}.i{}", kernel.name, variant.chip, variant.index_bits);
    std::fs::write(dir.join(format!("{stem}.ptx")), &variant.ptx).unwrap();
    let params = kernel
        .params
        .iter()
        .map(|p| match &p.kind {
            ir::ParamKind::Tensor { elem, dims, .. } => {
                let dims = dims
                    .iter()
                    .map(|d| match d {
                        ir::Dim::Sym(s) => format!("\"{s}\""),
                        ir::Dim::Lit(v) => v.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                format!(
                    "{{\"name\": \"{}\", \"kind\": \"tensor\", \"dtype\": \"{elem}\", \"dims\": [{dims}]}}",
                    p.name
                )
            }
            ir::ParamKind::Scalar { dtype } => format!(
                "{{\"name\": \"{}\", \"kind\": \"scalar\", \"dtype\": \"{dtype}\"}}",
                p.name
            ),
        })
        .collect::<Vec<_>>()
        .join(", ");
    let dims = kernel
        .dims()
        .iter()
        .map(|d| format!("\"{d}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let config = variant
        .config
        .values
        .iter()
        .map(|(k, v)| format!("\"{k}\": {v}"))
        .collect::<Vec<_>>()
        .join(", ");
    let json = format!(
        "{{\"kernel\": \"{}\", \"chip\": \"{}\", \"index_bits\": {}, \"threads\": {}, \
         \"shared_bytes\": {}, \"config\": {{{config}}}, \"dims\": [{dims}], \"params\": [{params}]}}\n",
        kernel.name, variant.chip, variant.index_bits, variant.threads, variant.shared_bytes
    );
    std::fs::write(dir.join(format!("{stem}.json")), json).unwrap();
}

#[test]
fn every_phase_can_be_observed_in_order() {
    let target = Target::new("sm_80", 32).unwrap();
    let mut seen: Vec<(String, String)> = Vec::new();
    pipeline::mlir_to_ptx_observed(HAND_SAXPY, &target, &mut |phase, ir| {
        seen.push((phase.to_string(), ir.to_string()))
    })
    .unwrap();
    let names: Vec<&str> = seen.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        names,
        ["input", "attach-target", "lower-to-nvvm", "serialize-ptx"]
    );
    assert!(seen[1].1.contains("#nvvm.target"), "{}", seen[1].1);
    assert!(seen[2].1.contains("llvm.func"), "{}", seen[2].1);
    assert!(seen[3].1.contains("gpu.binary"), "{}", seen[3].1);
}

/// Every lowered construct (math, integer and bit ops, casts, f16/bf16/bool
/// tensors, compound stores, atomics, while/if/for with a runtime step,
/// tile slices, reshape, int8 dot, CTA reductions) assembles on every chip,
/// for every config.
#[test]
fn every_lowered_construct_assembles_for_every_chip() {
    let ptxas = ptxas();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mlir/constructs.ph");
    let text = std::fs::read_to_string(path).unwrap();
    let module = check_source(&Source::file(path, text)).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(module.kernels.len(), 3);
    for kernel in &module.kernels {
        for config in kernel.configs() {
            for chip in mlir::DEFAULT_CHIPS {
                let variant = mlir::compile_ptx(kernel, &config, chip, 64)
                    .unwrap_or_else(|e| panic!("{} [{config}] {chip}: {e}", kernel.name));
                assert!(
                    !variant.ptx.contains("__nv_"),
                    "libdevice call in {}",
                    kernel.name
                );
                if let Some(p) = &ptxas {
                    assemble(p, &variant.ptx, chip, &format!("{}_{config}", kernel.name));
                }
            }
        }
    }
}

/// Variants may be compiled on many threads at once (one MLIR context
/// each), and the PTX does not depend on which thread or in which order.
#[test]
fn parallel_compilation_is_safe_and_deterministic() {
    let kernels = example_kernels();
    let jobs: Vec<(&ir::Kernel, &str)> = kernels
        .iter()
        .flat_map(|k| mlir::DEFAULT_CHIPS.iter().map(move |c| (k, *c)))
        .collect();
    let sequential: Vec<String> = jobs
        .iter()
        .map(|(k, chip)| {
            mlir::compile_ptx(k, &k.default_config(), chip, 32)
                .unwrap()
                .ptx
        })
        .collect();
    let parallel: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .iter()
            .map(|(k, chip)| {
                s.spawn(move || {
                    mlir::compile_ptx(k, &k.default_config(), chip, 32)
                        .unwrap()
                        .ptx
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(sequential.len(), parallel.len());
    for ((k, chip), (a, b)) in jobs.iter().zip(sequential.iter().zip(&parallel)) {
        assert_eq!(a, b, "{} on {chip} differs between runs", k.name);
    }
}

/// `@tensorcore` reaches the tensor cores on every chip: m16n8k16 where
/// sm_80 has it, m16n8k8 on sm_75, fragments loaded with ldmatrix; with
/// `@pipeline` too (cp.async staging on sm_80+).
#[test]
fn tensorcore_gemm_lowers_to_mma_sync_and_ldmatrix_on_every_chip() {
    let ptxas = ptxas();
    for name in ["gemm_f16_tc", "gemm_f16_tc_pipe"] {
        let kernel = example_kernels()
            .into_iter()
            .find(|k| k.name == name)
            .unwrap();
        let config = kernel.default_config();
        for (chip, shape) in [
            ("sm_75", "m16n8k8"),
            ("sm_80", "m16n8k16"),
            ("sm_90", "m16n8k16"),
        ] {
            for index_bits in [32, 64] {
                let variant = mlir::compile_ptx(&kernel, &config, chip, index_bits)
                    .unwrap_or_else(|e| panic!("{name} {chip}: {e}"));
                let mma = format!("mma.sync.aligned.{shape}.row.col.f32.f16.f16.f32");
                assert!(variant.ptx.contains(&mma), "{name} {chip}: no {mma}");
                assert!(
                    variant.ptx.contains("ldmatrix.sync.aligned.m8n8"),
                    "{name} {chip}"
                );
                assert!(
                    variant.ptx.contains(".trans"),
                    "{name} {chip}: B of dot needs .trans"
                );
                if name.ends_with("_pipe") && chip != "sm_75" {
                    assert!(variant.ptx.contains("cp.async"), "{name} {chip}");
                }
                if let Some(p) = &ptxas {
                    assemble(p, &variant.ptx, chip, &format!("{name}_i{index_bits}"));
                }
            }
        }
    }
}

/// The mma accumulator stays in registers: `acc += dot(a, b)` feeds acc's
/// own slots to mma.sync (no temporary fragment) and every slot index is
/// a constant, so ptxas needs no local-memory stack for any tensor-core
/// gemm config. (sm_75's `@pipeline` register prefetch buffer is indexed
/// by a loop and is not covered here.)
#[test]
fn tensorcore_gemm_accumulators_need_no_stack_frame() {
    let Some(path) = ptxas() else {
        return;
    };
    let ptxas = phobos_build::back::mlir::ptxas::Ptxas::at(path).unwrap();
    for (name, chips) in [
        ("gemm_f16_tc", &["sm_75", "sm_80", "sm_90"][..]),
        ("gemm_f16_tc_pipe", &["sm_80", "sm_90"][..]),
    ] {
        let kernel = example_kernels()
            .into_iter()
            .find(|k| k.name == name)
            .unwrap();
        for config in kernel.configs() {
            for chip in chips {
                let variant = mlir::compile_ptx(&kernel, &config, chip, 32)
                    .unwrap_or_else(|e| panic!("{name} [{config}] {chip}: {e}"));
                let usage = ptxas.measure(&variant.ptx, chip, &variant.kernel).unwrap();
                assert_eq!(
                    (usage.stack_frame_bytes, usage.spill_bytes()),
                    (0, 0),
                    "{name} [{config}] {chip}: {usage:?}"
                );
            }
        }
    }
}
