//! Every embedded PTX variant of every example kernel assembles with
//! NVIDIA's `ptxas -arch=<its chip>`, and each artifact accounts for its
//! whole tune space (every config x chip is a variant or pruned with a
//! reason).
//!
//! `ptxas` is `$PHOBOS_PTXAS`, else `ptxas` on PATH, else the one inside the
//! Python package `nvidia-cuda-nvcc-cu12` (`make test` installs it and sets
//! `PHOBOS_PTXAS`). Without it the assembly is skipped with a note, unless
//! `PHOBOS_REQUIRE_PTXAS=1`, which makes that a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use phobos::artifact::KernelArtifact;
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
/// on through any crate of the build, so it is read from the artifacts).
fn ptx_built() -> bool {
    let built = kernels::saxpy::ARTIFACT.ptx_built;
    if !built {
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

/// Variants, pruned pairs and embedded bytes per kernel (BENCHMARKS.md
/// quotes this; run with `--nocapture`).
fn print_sizes() {
    let (mut total_raw, mut total_lz4, mut total_variants) = (0, 0, 0);
    eprintln!("kernel | configs | variants | pruned | PTX bytes | embedded (lz4) bytes");
    for (artifact, configs) in artifacts() {
        let raw: usize = artifact.variants.iter().map(|v| v.ptx_len_bytes).sum();
        let lz4: usize = artifact.variants.iter().map(|v| v.ptx_lz4.len()).sum();
        eprintln!(
            "{} | {configs} | {} | {} | {raw} | {lz4}",
            artifact.name,
            artifact.variants.len(),
            artifact.pruned.len()
        );
        total_raw += raw;
        total_lz4 += lz4;
        total_variants += artifact.variants.len();
    }
    eprintln!("total | | {total_variants} | | {total_raw} | {total_lz4}");
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
    let found = phobos_build::back::mlir::ptxas::find();
    if found.is_none() {
        assert!(
            std::env::var("PHOBOS_REQUIRE_PTXAS").as_deref() != Ok("1"),
            "PHOBOS_REQUIRE_PTXAS=1 but no ptxas: pip install nvidia-cuda-nvcc-cu12 or set PHOBOS_PTXAS"
        );
        eprintln!("note: ptxas not found; embedded PTX is not assembled");
    }
    found
}
