use phobos_quant::{GgmlType, QuantError};

/// Why a quantized matmul was refused. Every size and type problem is an
/// error, never a panic.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum QMatmulError {
    #[error("quantized matmul does not support weight type {ty}")]
    UnsupportedWeight { ty: GgmlType },
    #[error("{ty}: cols = {cols} is not a multiple of the block length {block_len}")]
    ColsNotBlockMultiple {
        ty: GgmlType,
        cols: usize,
        block_len: usize,
    },
    #[error("{ty} weight of {rows} x {cols} needs {expected} bytes, got {found}")]
    WeightBytes {
        ty: GgmlType,
        rows: usize,
        cols: usize,
        expected: usize,
        found: usize,
    },
    #[error("activations: expected {expected} values ({m_rows} rows x {cols} cols), got {found}")]
    ActivationLen {
        m_rows: usize,
        cols: usize,
        expected: usize,
        found: usize,
    },
    #[error("output: expected {expected} values ({m_rows} rows x {rows} features), got {found}")]
    OutputLen {
        m_rows: usize,
        rows: usize,
        expected: usize,
        found: usize,
    },
    #[error(
        "activations are {found_ty} with {found_cols} cols, the {weight_ty} weight needs {expected_ty} with {expected_cols} cols"
    )]
    ActivationMismatch {
        weight_ty: GgmlType,
        expected_ty: GgmlType,
        expected_cols: usize,
        found_ty: GgmlType,
        found_cols: usize,
    },
    #[error("activation bytes: expected {expected}, got {found}")]
    ActivationBytes { expected: usize, found: usize },
    #[error("activation block {block} holds the level -128; q8 levels must be in -127..=127")]
    ActivationLevel { block: usize },
    #[error("quantizing activations: {0}")]
    Quant(#[from] QuantError),
    /// A worker of the host pool failed (a panic in a tile).
    #[error("quantized matmul: a parallel tile failed: {0}")]
    Parallel(String),
}
