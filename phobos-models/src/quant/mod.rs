//! Quant formats: one definition per ggml type (layout, dequantize,
//! quantize), shared by host kernels, GPU upload and tests.

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
