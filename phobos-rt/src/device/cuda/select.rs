//! Which embedded PTX variant a device runs, and whether its driver can JIT
//! it. Pure functions over the artifact, so they are tested without a GPU.

use crate::artifact::{KernelArtifact, PtxVariant};
use crate::{Error, Result};

/// Compute capability as `major * 10 + minor` (`sm_90` -> 90).
pub fn chip_number(chip: &str) -> Option<u32> {
    let digits = chip.strip_prefix("sm_")?;
    // `sm_90a`-style suffixes name the same base chip.
    let digits = digits.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    digits.parse().ok().filter(|&n| n >= 10)
}

/// `sm_XY` for compute capability `(X, Y)`.
pub fn chip_name(major: i32, minor: i32) -> String {
    format!("sm_{major}{minor}")
}

/// The chip whose PTX a `device_chip` runs: itself when the binary has it,
/// else the nearest lower one (PTX for an older chip JITs on newer ones),
/// else an error naming the chips the binary has.
pub fn pick_chip(artifact: &KernelArtifact, device_chip: &str) -> Result<&'static str> {
    if !artifact.ptx_built {
        return Err(no_ptx(artifact));
    }
    let device_number = chip_number(device_chip).ok_or_else(|| Error::Backend {
        backend: "cuda",
        message: format!("device reports chip `{device_chip}`, expected `sm_XY`"),
    })?;
    artifact
        .chips()
        .into_iter()
        .filter_map(|chip| chip_number(chip).map(|n| (n, chip)))
        .filter(|&(n, _)| n <= device_number)
        .max_by_key(|&(n, _)| n)
        .map(|(_, chip)| chip)
        .ok_or_else(|| Error::Backend {
            backend: "cuda",
            message: format!(
                "kernel `{}` has no PTX for {device_chip} or any lower chip; this binary has {}; rebuild with PHOBOS_CHIPS including {device_chip}",
                artifact.name,
                chips_text(artifact)
            ),
        })
}

/// The variant with exactly `config` (tune values by name) for the chip
/// [`pick_chip`] picks, as an index into `artifact.variants`.
pub fn select_variant(
    artifact: &KernelArtifact,
    device_chip: &str,
    config: &[(&str, i64)],
) -> Result<usize> {
    let chip = pick_chip(artifact, device_chip)?;
    let same_config = |v: &PtxVariant| {
        v.config.len() == config.len()
            && v.config
                .iter()
                .zip(config)
                .all(|(a, b)| a.0 == b.0 && a.1 == b.1)
    };
    if let Some(index) = artifact
        .variants
        .iter()
        .position(|v| v.chip == chip && same_config(v))
    {
        return Ok(index);
    }
    let reason = artifact
        .pruned
        .iter()
        .find(|p| {
            p.chip == chip
                && p.config.len() == config.len()
                && p.config
                    .iter()
                    .zip(config)
                    .all(|(a, b)| a.0 == b.0 && a.1 == b.1)
        })
        .map_or_else(
            || "it is not in the tune space".to_string(),
            |p| format!("it was pruned: {}", p.reason),
        );
    Err(Error::Backend {
        backend: "cuda",
        message: format!(
            "kernel `{}` has no {chip} variant for config {config:?}: {reason}",
            artifact.name
        ),
    })
}

/// The default variant for the device: the autotune table's entry for the
/// picked chip, else that chip's first variant.
pub fn default_variant(artifact: &KernelArtifact, device_chip: &str) -> Result<usize> {
    let chip = pick_chip(artifact, device_chip)?;
    let from_table = artifact
        .autotune
        .iter()
        .find(|entry| entry.chip == chip)
        .map(|entry| entry.variant)
        .filter(|&i| i < artifact.variants.len());
    from_table
        .or_else(|| artifact.variants.iter().position(|v| v.chip == chip))
        .ok_or_else(|| no_ptx(artifact))
}

/// The `.version X.Y` a PTX module declares.
pub fn ptx_isa_version(ptx: &str) -> Option<(u32, u32)> {
    let line = ptx
        .lines()
        .map(str::trim)
        .find(|line| line.starts_with(".version"))?;
    let (major, minor) = line.strip_prefix(".version")?.trim().split_once('.')?;
    Some((major.trim().parse().ok()?, minor.trim().parse().ok()?))
}

/// The newest PTX ISA a driver of `cuDriverGetVersion` value `driver` (e.g.
/// 12040 for CUDA 12.4) can JIT, from NVIDIA's PTX ISA release notes.
pub fn max_ptx_isa(driver: i32) -> (u32, u32) {
    let (major, minor) = (driver / 1000, (driver % 1000) / 10);
    match (major, minor) {
        (..=10, _) => (6, 5),
        (11, m) => (7, m.clamp(0, 8) as u32),
        (12, m @ 0..=5) => (8, m as u32),
        (12, 6) => (8, 5),
        (12, 7) => (8, 6),
        (12, 8) => (8, 7),
        (12, _) => (8, 8),
        (13, m) => (9, m.clamp(0, 9) as u32),
        _ => (9, 9),
    }
}

/// An error when the driver is too old to JIT `ptx`.
pub fn check_driver_for_ptx(kernel: &str, ptx: &str, driver: i32) -> Result<()> {
    let Some(needed) = ptx_isa_version(ptx) else {
        return Err(Error::Backend {
            backend: "cuda",
            message: format!("kernel `{kernel}`: embedded PTX has no `.version` line"),
        });
    };
    let supported = max_ptx_isa(driver);
    if needed > supported {
        return Err(Error::BackendUnavailable {
            backend: "cuda",
            reason: format!(
                "the CUDA driver is too old for kernel `{kernel}`: its PTX is ISA {}.{}, driver {}.{} JITs up to ISA {}.{}; update the NVIDIA driver",
                needed.0,
                needed.1,
                driver / 1000,
                (driver % 1000) / 10,
                supported.0,
                supported.1
            ),
        });
    }
    Ok(())
}

fn chips_text(artifact: &KernelArtifact) -> String {
    let chips = artifact.chips();
    if chips.is_empty() {
        "no PTX at all".to_string()
    } else {
        chips.join(", ")
    }
}

fn no_ptx(artifact: &KernelArtifact) -> Error {
    Error::Backend {
        backend: "cuda",
        message: format!(
            "kernel `{}` was built without PTX (build with the `ptx` feature, PHOBOS_CHIPS naming the GPU's chip)",
            artifact.name
        ),
    }
}

#[cfg(test)]
mod tests;
