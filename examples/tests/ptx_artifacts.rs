//! Every embedded PTX variant of every example kernel assembles with
//! NVIDIA's `ptxas -arch=<its chip>`, and each artifact accounts for its
//! whole tune space (every config x chip is a variant or pruned with a
//! reason).
//!
//! `ptxas` is `$PHOBOS_PTXAS`, else `ptxas` on PATH, else the one inside the
//! Python package `nvidia-cuda-nvcc-cu12` (`make test` installs it and sets
//! `PHOBOS_PTXAS`). Without it, or in a host-only build, the checks are
//! skipped with a note, unless `PHOBOS_REQUIRE_PTXAS=1`, which makes each
//! of those a failure.
//!
//! A build that saw `PHOBOS_PTXAS` ran `ptxas -v` on every variant, so each
//! embedded variant carries its register count and fits the register file.

use std::path::{Path, PathBuf};
use std::process::Command;

use phobos::artifact::KernelArtifact;
use phobos_build::back::mlir::ptxas;
use phobos_examples::kernels;

/// `(artifact, number of configs in the tune space)` per example kernel.
fn artifacts() -> Vec<(&'static KernelArtifact, usize)> {
    vec![
        (&kernels::saxpy::ARTIFACT, kernels::saxpy::CONFIGS.len()),
        (
            &kernels::gemm_f32::ARTIFACT,
            kernels::gemm_f32::CONFIGS.len(),
        ),
        (
            &kernels::gemm_f16::ARTIFACT,
            kernels::gemm_f16::CONFIGS.len(),
        ),
        (
            &kernels::gemm_f16_tc::ARTIFACT,
            kernels::gemm_f16_tc::CONFIGS.len(),
        ),
        (
            &kernels::gemm_f16_tc_pipe::ARTIFACT,
            kernels::gemm_f16_tc_pipe::CONFIGS.len(),
        ),
        (
            &kernels::gemm_f32_pipe::ARTIFACT,
            kernels::gemm_f32_pipe::CONFIGS.len(),
        ),
        (
            &kernels::gemm_f16_pipe::ARTIFACT,
            kernels::gemm_f16_pipe::CONFIGS.len(),
        ),
        (&kernels::softmax::ARTIFACT, kernels::softmax::CONFIGS.len()),
        (
            &kernels::layernorm::ARTIFACT,
            kernels::layernorm::CONFIGS.len(),
        ),
        (&kernels::rmsnorm::ARTIFACT, kernels::rmsnorm::CONFIGS.len()),
        (
            &kernels::flash_attn_f32::ARTIFACT,
            kernels::flash_attn_f32::CONFIGS.len(),
        ),
        (
            &kernels::flash_attn_f16::ARTIFACT,
            kernels::flash_attn_f16::CONFIGS.len(),
        ),
        (
            &kernels::flash_attn_f16_tc::ARTIFACT,
            kernels::flash_attn_f16_tc::CONFIGS.len(),
        ),
        (
            &kernels::gla_chunk::ARTIFACT,
            kernels::gla_chunk::CONFIGS.len(),
        ),
    ]
}

#[test]
fn artifacts_carry_the_abi_grid_and_fingerprint() {
    for (artifact, _) in artifacts() {
        assert!(!artifact.grid.is_empty(), "{}", artifact.name);
        assert!(!artifact.params.is_empty(), "{}", artifact.name);
        assert_eq!(
            artifact.fingerprint.compiler_version,
            env!("CARGO_PKG_VERSION")
        );
        assert_ne!(artifact.fingerprint.source_hash, 0);
    }
    assert_eq!(
        kernels::saxpy::ARTIFACT.fingerprint.source_hash,
        kernels::saxpy::KERNEL.source_hash
    );
    assert_eq!(kernels::gemm_f32::ARTIFACT.dims, ["M", "K", "N"]);
}

/// Whether this build embedded PTX (the facade's feature `ptx`, which may be
/// on through any crate of the build, so it is read from the artifacts). A
/// host-only build skips the PTX checks with a note, except under
/// `PHOBOS_REQUIRE_PTXAS=1`, where it is a failure: nothing skips there.
fn ptx_built() -> bool {
    let built = kernels::saxpy::ARTIFACT.ptx_built;
    if !built {
        assert!(
            !ptxas::required(),
            "PHOBOS_REQUIRE_PTXAS=1 but the examples were built without feature `ptx`, \
             so there is no PTX to assemble: build with default features"
        );
        eprintln!("note: built without feature `ptx`; no PTX to check");
    }
    built
}

#[test]
fn host_only_builds_embed_no_ptx_and_ptx_builds_embed_some() {
    let built = ptx_built();
    for (artifact, _) in artifacts() {
        assert_eq!(artifact.ptx_built, built, "{}", artifact.name);
        assert_eq!(!artifact.variants.is_empty(), built, "{}", artifact.name);
        let mlir_version = if built { 22 } else { 0 };
        assert_eq!(artifact.fingerprint.mlir_version, mlir_version);
    }
}

#[test]
fn every_config_and_chip_is_a_variant_or_pruned_with_a_reason() {
    if !ptx_built() {
        return;
    }
    for (artifact, configs) in artifacts() {
        let chips = artifact.chips();
        assert!(!chips.is_empty(), "{} has no variants", artifact.name);
        for chip in &chips {
            let built = artifact.variants_for(chip).count();
            let pruned = artifact.pruned.iter().filter(|p| p.chip == *chip).count();
            assert_eq!(built + pruned, configs, "{} on {chip}", artifact.name);
            let default = artifact.default_variant(chip).unwrap();
            assert_eq!(default.chip, *chip);
        }
        for pruned in artifact.pruned {
            assert!(!pruned.reason.is_empty(), "{pruned:?}");
        }
    }
    print_sizes();
}

/// The registers of the kernel's variants, as `min..max`, or `-` when the
/// build had no ptxas.
fn register_range(artifact: &KernelArtifact) -> String {
    let registers: Vec<u32> = artifact
        .variants
        .iter()
        .filter_map(|v| v.registers)
        .collect();
    match (registers.iter().min(), registers.iter().max()) {
        (Some(min), Some(max)) => format!("{min}..{max}"),
        _ => "-".into(),
    }
}

/// Variants, pruned pairs and embedded bytes per kernel (BENCHMARKS.md
/// quotes this; run with `--nocapture`).
fn print_sizes() {
    let (mut total_raw, mut total_lz4, mut total_variants) = (0, 0, 0);
    eprintln!(
        "kernel | configs | variants | pruned (by registers) | registers | PTX bytes | embedded (lz4) bytes"
    );
    for (artifact, configs) in artifacts() {
        let raw: usize = artifact.variants.iter().map(|v| v.ptx_len_bytes).sum();
        let lz4: usize = artifact.variants.iter().map(|v| v.ptx_lz4.len()).sum();
        let by_registers = artifact
            .pruned
            .iter()
            .filter(|p| p.reason.contains("registers per thread"))
            .count();
        eprintln!(
            "{} | {configs} | {} | {} ({by_registers}) | {} | {raw} | {lz4}",
            artifact.name,
            artifact.variants.len(),
            artifact.pruned.len(),
            register_range(artifact)
        );
        total_raw += raw;
        total_lz4 += lz4;
        total_variants += artifact.variants.len();
    }
    eprintln!("total | | {total_variants} | | {total_raw} | {total_lz4}");
}

/// Registers are recorded when the build ran with `PHOBOS_PTXAS` (the
/// variable is read at run time, so run the test as the crate was built:
/// `make test` sets it for both; the kernels' expansion tracks it, so a
/// change rebuilds them). Under `PHOBOS_REQUIRE_PTXAS=1` an unset
/// `PHOBOS_PTXAS` is a failure: which ptxas the build saw is unknown then.
#[test]
fn with_phobos_ptxas_every_variant_records_registers_that_fit() {
    if !ptx_built() {
        return;
    }
    if std::env::var_os(ptxas::PTXAS_ENV).is_none_or(|p| p.is_empty()) {
        assert!(
            !ptxas::required(),
            "PHOBOS_REQUIRE_PTXAS=1 needs PHOBOS_PTXAS set for the build and the test \
             (make test sets both: PHOBOS_PTXAS=\"$(scripts/setup_ptxas.sh)\")"
        );
        eprintln!("note: PHOBOS_PTXAS not set; registers not checked");
        return;
    }
    for (artifact, _) in artifacts() {
        for variant in artifact.variants {
            let what = format!("{} {} {:?}", artifact.name, variant.chip, variant.config);
            let registers = variant
                .registers
                .unwrap_or_else(|| panic!("{what}: no registers recorded"));
            assert!((1..=255).contains(&registers), "{what}: {registers}");
            assert!(variant.spill_bytes.is_some(), "{what}");
            assert!(
                ptxas::register_file_overflow(registers, variant.threads).is_none(),
                "{what}: {registers} registers x {} threads",
                variant.threads
            );
            // The plain product, as a cross-check of the warp rule.
            assert!(registers * variant.threads <= 65536, "{what}");
        }
        for pruned in artifact.pruned {
            assert!(!pruned.reason.is_empty(), "{pruned:?}");
        }
    }
}

#[test]
fn every_embedded_variant_assembles_with_ptxas() {
    if !ptx_built() {
        return;
    }
    let Some(ptxas) = ptxas() else { return };
    let dir = std::env::temp_dir().join(format!("phobos-embedded-ptx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut jobs = Vec::new();
    for (artifact, _) in artifacts() {
        for (index, variant) in artifact.variants.iter().enumerate() {
            let ptx = variant.ptx().unwrap();
            assert!(ptx.contains(&format!(".entry {}", artifact.name)));
            assert!(ptx.contains(&format!(".target {}", variant.chip)));
            let stem = format!("{}_{}_{index}", artifact.name, variant.chip);
            let path = dir.join(format!("{stem}.ptx"));
            std::fs::write(&path, ptx).unwrap();
            jobs.push((
                path,
                variant.chip,
                format!("{} {:?}", artifact.name, variant.config),
            ));
        }
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let failures: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .chunks(jobs.len().div_ceil(threads).max(1))
            .map(|chunk| {
                let ptxas = &ptxas;
                scope.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|(path, chip, what)| assemble(ptxas, path, chip, what).err())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!("{} embedded variants assembled", jobs.len());
    let _ = std::fs::remove_dir_all(&dir);
}

fn assemble(ptxas: &Path, ptx: &Path, chip: &str, what: &str) -> Result<(), String> {
    let out = Command::new(ptxas)
        .arg(format!("-arch={chip}"))
        .arg(ptx)
        .arg("-o")
        .arg(ptx.with_extension("cubin"))
        .output()
        .map_err(|e| format!("running {}: {e}", ptxas.display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ptxas -arch={chip} rejected {what} ({}):\n{}",
            ptx.display(),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The ptxas to use, or `None` (after saying so) when it may be skipped.
fn ptxas() -> Option<PathBuf> {
    let found = ptxas::find();
    if found.is_none() {
        assert!(!ptxas::required(), "{}", ptxas::MISSING_BUT_REQUIRED);
        eprintln!("note: ptxas not found; embedded PTX is not assembled");
    }
    found
}
