//! The MLIR back end: typed tile IR -> MLIR (gpu, scf, arith, memref, llvm
//! dialects) -> NVVM -> PTX, one variant per (config, chip, index width).
//!
//! [`emit`] writes the MLIR text (no LLVM needed for that step, so it is
//! built without feature `ptx` too); `pipeline` (feature `ptx`) parses it
//! with melior and lowers it:
//!
//! ```text
//! nvvm-attach-target{chip=sm_XY features=+ptxNN O=3}
//! gpu.module(convert-scf-to-cf, convert-gpu-to-nvvm{index-bitwidth=B},
//!            canonicalize, cse, reconcile-unrealized-casts)
//! gpu-module-to-binary{format=isa}
//! ```
//!
//! A module with `nvgpu` ops (`@tensorcore`, and `@pipeline` on sm_80+)
//! lowers its `gpu.module` with `convert-scf-to-cf, convert-nvgpu-to-nvvm,
//! convert-gpu-to-nvvm{index-bitwidth=64}, convert-vector-to-llvm,
//! canonicalize, cse, reconcile-unrealized-casts` instead: the nvgpu
//! conversion only knows a 64-bit `index`, and `index` only addresses
//! shared and private buffers (tensor offsets keep the variant's width).
//!
//! The last pass serializes with LLVM's NVPTX back end inside libMLIR, so no
//! CUDA toolkit is involved. `PHOBOS_PRINT_PHASES=1` prints the IR after
//! each phase to stderr. What is lowered, and the kernel ABI, are in
//! [`emit`]'s module doc; anything else is an [`MlirError::Unsupported`]
//! naming the construct.

pub mod emit;
mod error;
#[cfg(feature = "ptx")]
pub mod pipeline;
pub mod ptxas;
pub mod target;

pub use emit::{EmittedKernel, emit_kernel};
pub use error::MlirError;
pub use target::{CHIPS_ENV, DEFAULT_CHIPS, Target, chips_from_env};

use crate::ir::{Config, Kernel};

/// One compiled variant of a kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxVariant {
    pub kernel: String,
    pub config: Config,
    pub chip: String,
    pub index_bits: u32,
    /// PTX assembly; the entry point is named after the kernel.
    pub ptx: String,
    /// Threads per CTA: launch with block `(threads, 1, 1)`.
    pub threads: u32,
    /// Static shared memory the kernel declares.
    pub shared_bytes: u64,
}

/// The MLIR of one variant, before any pass (what the snapshots show).
pub fn emit_mlir(
    kernel: &Kernel,
    config: &Config,
    chip: &str,
    index_bits: u32,
) -> Result<EmittedKernel, MlirError> {
    let target = Target::new(chip, index_bits)?;
    emit_kernel(kernel, config, &target)
}

#[cfg(feature = "ptx")]
/// Compiles one variant of `kernel` to PTX for `chip` (`sm_XY`) with
/// tensor offsets of `index_bits` (32 or 64).
pub fn compile_ptx(
    kernel: &Kernel,
    config: &Config,
    chip: &str,
    index_bits: u32,
) -> Result<PtxVariant, MlirError> {
    let target = Target::new(chip, index_bits)?;
    let emitted = emit_kernel(kernel, config, &target)?;
    let ptx = pipeline::mlir_to_ptx(&emitted.mlir, &target)?;
    tracing::debug!(
        kernel = %kernel.name,
        config = %config,
        chip,
        ptx_len_bytes = ptx.len(),
        "compiled PTX variant"
    );
    Ok(PtxVariant {
        kernel: kernel.name.clone(),
        config: config.clone(),
        chip: chip.to_string(),
        index_bits,
        ptx,
        threads: emitted.threads,
        shared_bytes: emitted.shared_bytes,
    })
}
