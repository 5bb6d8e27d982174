//! What `kernel!` embeds per kernel for the GPU back end: the compiled PTX
//! variants (lz4-compressed), the configs pruned with the reason, the grid
//! rule, the parameter ABI, a fingerprint of what produced it, and the
//! autotune table.
//!
//! The macro writes one `pub static ARTIFACT: KernelArtifact` into every
//! kernel module. With the `ptx` feature off it is still there, with no
//! variants ([`KernelArtifact::ptx_built`] is `false`), so code reading it
//! compiles either way. The CUDA runtime loads variants from here.

pub mod abi;

pub use abi::{AbiParam, AbiParamKind};

/// Tune parameter values of one config, in the kernel's `Config` field order.
pub type ConfigValues = &'static [(&'static str, i64)];

/// One compiled variant: a (config, chip, index width) of a kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PtxVariant {
    pub config: ConfigValues,
    /// `sm_XY`; the PTX targets exactly this chip.
    pub chip: &'static str,
    /// Width of tensor offsets (and stride arguments) inside the kernel.
    pub index_bits: u32,
    /// The PTX assembly, lz4 block format with its length prepended.
    pub ptx_lz4: &'static [u8],
    /// Length of the PTX once decompressed.
    pub ptx_len_bytes: usize,
    /// Threads per CTA: launch with block `(threads, 1, 1)`.
    pub threads: u32,
    /// Static shared memory the kernel declares.
    pub shared_bytes: u64,
    /// Registers per thread, as `ptxas -v` reported at build time; `None`
    /// when the build had no ptxas (and so could not prune by registers).
    pub registers: Option<u32>,
    /// Bytes of spill stores plus spill loads in the code (`ptxas -v`);
    /// `None` without ptxas.
    pub spill_bytes: Option<u64>,
}

impl PtxVariant {
    /// The PTX assembly text; the entry point is named after the kernel.
    pub fn ptx(&self) -> Result<String, ArtifactError> {
        let bytes = lz4_flex::block::decompress_size_prepended(self.ptx_lz4)
            .map_err(|e| ArtifactError::Corrupt(format!("lz4: {e}")))?;
        if bytes.len() != self.ptx_len_bytes {
            return Err(ArtifactError::Corrupt(format!(
                "PTX is {} bytes once decompressed, the artifact says {}",
                bytes.len(),
                self.ptx_len_bytes
            )));
        }
        String::from_utf8(bytes).map_err(|_| ArtifactError::Corrupt("PTX is not UTF-8".into()))
    }

    /// The value of tune parameter `name` in this variant's config.
    pub fn config_value(&self, name: &str) -> Option<i64> {
        self.config
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }
}

/// A config that was not compiled for a chip, and why (for example: more
/// shared memory than the chip allows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrunedConfig {
    pub config: ConfigValues,
    pub chip: &'static str,
    pub reason: &'static str,
}

/// What produced an artifact; a runtime cache keyed by it misses whenever
/// the kernel source or the compiler changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint {
    /// FNV-1a of the kernel source text (as `KERNEL.source_hash`).
    pub source_hash: u64,
    /// phobos-build's package version.
    pub compiler_version: &'static str,
    /// FNV-1a over the MLIR back end's own source files.
    pub backend_hash: u64,
    /// Major version of the LLVM/MLIR the PTX was produced with (0: none).
    pub mlir_version: u32,
}

/// The variant to launch by default on a chip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutotuneEntry {
    pub chip: &'static str,
    /// Index into [`KernelArtifact::variants`].
    pub variant: usize,
}

/// Everything the GPU runtime needs about one kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelArtifact {
    /// The kernel's name, also the PTX entry point.
    pub name: &'static str,
    /// Whether the crate was built with PTX (feature `ptx`).
    pub ptx_built: bool,
    pub variants: &'static [PtxVariant],
    pub pruned: &'static [PrunedConfig],
    /// The `@grid` rule, one expression per grid axis.
    pub grid: &'static [&'static str],
    /// Kernel parameters in declaration order (see [`abi`]).
    pub params: &'static [AbiParam],
    /// Symbolic dims, passed as `i32` after the parameters, in this order.
    pub dims: &'static [&'static str],
    pub fingerprint: Fingerprint,
    /// The default variant per chip: the first config of the tune space
    /// that survived pruning there. Runtime autotuning refines this.
    pub autotune: &'static [AutotuneEntry],
}

impl KernelArtifact {
    /// Every variant compiled for `chip`.
    pub fn variants_for<'a>(&'a self, chip: &'a str) -> impl Iterator<Item = &'a PtxVariant> + 'a {
        self.variants.iter().filter(move |v| v.chip == chip)
    }

    /// The autotune table's variant for `chip`, if the kernel was built for it.
    pub fn default_variant(&self, chip: &str) -> Option<&PtxVariant> {
        self.autotune
            .iter()
            .find(|entry| entry.chip == chip)
            .and_then(|entry| self.variants.get(entry.variant))
    }

    /// The chips variants were built for, in build order, without repeats.
    pub fn chips(&self) -> Vec<&'static str> {
        let mut chips: Vec<&'static str> = Vec::new();
        for variant in self.variants {
            if !chips.contains(&variant.chip) {
                chips.push(variant.chip);
            }
        }
        chips
    }
}

/// An embedded artifact that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArtifactError {
    #[error("embedded PTX is corrupt: {0}")]
    Corrupt(String),
}

#[cfg(test)]
mod tests;
