//! Quant formats: one definition per ggml type (layout, dequantize,
//! quantize), shared by host kernels, GPU upload and tests.
//!
//! - [`GgmlType`]: the file-format type ids (`GgmlType::from_id` names
//!   removed ids such as Q4_2); [`type_info`] gives name, elements per block
//!   and bytes per block.
//! - [`dequantize`]`(ty, bytes, out)`: whole blocks to f32, bit-identical to
//!   gguf-py's numpy code for every type it implements (see
//!   tests/quant_golden.rs).
//! - [`quantize`]`(ty, src, out)`: appends whole blocks. Q8_0, Q8_1, Q8_K
//!   reproduce ggml's reference quantizers bit for bit (the activation
//!   types of the dot-product kernels); Q4_0..Q5_1, TQ1_0, TQ2_0, MXFP4,
//!   F16, BF16 reproduce gguf-py's bytes; the k-quants and i-quants use the
//!   simpler documented quantizers in `kquants_quantize` and `iq_quantize`.
//! - [`can_quantize`] / [`can_dequantize`] say what is supported; anything
//!   else is a [`QuantError::Unsupported`] naming the type.

mod bytes;
mod dispatch;
mod float;
mod fp4_ternary;
mod iq_grids;
mod iq_quantize;
mod iquants;
mod kquants;
mod kquants_quantize;
mod legacy;
mod types;

pub use dispatch::{can_dequantize, can_quantize, dequantize, quantize};
pub use types::{ALL_TYPES, GgmlType, QK_K, TypeInfo, type_info};

/// Errors from the quant layer.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum QuantError {
    #[error("unknown ggml type id {id}")]
    UnknownTypeId { id: u32 },
    #[error("ggml type id {id} ({name}) was removed from ggml and is not supported")]
    RemovedType { id: u32, name: &'static str },
    #[error("{op} is not supported for ggml type {ty}")]
    Unsupported { ty: GgmlType, op: &'static str },
    #[error("{ty}: {len} {unit} is not a whole number of blocks ({per_block} {unit} per block)")]
    NotBlockMultiple {
        ty: GgmlType,
        len: usize,
        per_block: usize,
        unit: &'static str,
    },
    #[error("{ty}: {n_blocks} blocks of input need {expected} output floats, got {found}")]
    OutputLength {
        ty: GgmlType,
        n_blocks: usize,
        expected: usize,
        found: usize,
    },
}
