use std::path::PathBuf;

use crate::quant::{GgmlType, QuantError};

use super::value::ValueType;

/// Everything that can be wrong with a GGUF file or a lookup in it. Errors
/// about the file name the field (metadata key or tensor name) and the byte
/// offset where the problem was found.
#[derive(Debug, thiserror::Error)]
pub enum GgufError {
    #[error("cannot open GGUF file {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("not a GGUF file: bytes at offset 0 are {found:02x?}, expected the magic \"GGUF\"")]
    BadMagic { found: Vec<u8> },
    #[error("GGUF version {version} (at offset 4) is not supported: expected 2 or 3{hint}")]
    UnsupportedVersion { version: u32, hint: &'static str },
    #[error(
        "truncated GGUF: {field} at offset {offset} needs {needed} bytes but only {available} remain"
    )]
    Truncated {
        field: String,
        offset: u64,
        needed: u64,
        available: u64,
    },
    #[error(
        "{field} at offset {offset}: {count} {what} cannot fit in the {available} bytes remaining"
    )]
    CountTooLarge {
        field: String,
        offset: u64,
        count: u64,
        what: &'static str,
        available: u64,
    },
    #[error("{field} at offset {offset}: unknown metadata value type id {type_id}")]
    UnknownValueType {
        field: String,
        offset: u64,
        type_id: u32,
    },
    #[error("{field} at offset {offset}: string is not valid UTF-8")]
    InvalidUtf8 { field: String, offset: u64 },
    #[error("{field} at offset {offset}: bool byte is {byte}, expected 0 or 1")]
    InvalidBool {
        field: String,
        offset: u64,
        byte: u8,
    },
    #[error("{field} at offset {offset}: arrays nested deeper than {max_depth} levels")]
    NestingTooDeep {
        field: String,
        offset: u64,
        max_depth: usize,
    },
    #[error("metadata key '{key}' at offset {offset} appears twice")]
    DuplicateKey { key: String, offset: u64 },
    #[error("general.alignment at offset {offset} is {value}: expected a power of two above 0")]
    BadAlignment { offset: u64, value: u64 },
    #[error("general.alignment at offset {offset} has type {found}, expected an unsigned integer")]
    AlignmentType { offset: u64, found: ValueType },
    #[error("tensor '{tensor}' at offset {offset}: {source}")]
    TensorType {
        tensor: String,
        offset: u64,
        source: QuantError,
    },
    #[error("tensor '{tensor}' at offset {offset}: {n_dims} dimensions, at most {max} are allowed")]
    TooManyDims {
        tensor: String,
        offset: u64,
        n_dims: u32,
        max: usize,
    },
    #[error("tensor '{tensor}' at offset {offset}: dims {dims:?} overflow: {reason}")]
    ShapeOverflow {
        tensor: String,
        offset: u64,
        dims: Vec<u64>,
        reason: String,
    },
    #[error(
        "tensor '{tensor}' at offset {offset}: row length {row_len} is not a multiple of the {ty} block length {block_len}"
    )]
    RowNotBlockMultiple {
        tensor: String,
        offset: u64,
        ty: GgmlType,
        row_len: u64,
        block_len: usize,
    },
    #[error("tensor '{tensor}' at offset {offset} appears twice")]
    DuplicateTensor { tensor: String, offset: u64 },
    #[error(
        "tensor '{tensor}': data offset {data_offset} is not a multiple of the alignment {alignment}"
    )]
    MisalignedTensor {
        tensor: String,
        data_offset: u64,
        alignment: u64,
    },
    #[error(
        "tensor '{tensor}': data at file offset {start}..{end} is past the end of the file ({file_len} bytes)"
    )]
    TensorOutOfRange {
        tensor: String,
        start: u64,
        end: u64,
        file_len: u64,
    },
    #[error(
        "tensor '{tensor}': data at file offset {start} overlaps tensor '{other}' which ends at {other_end}"
    )]
    TensorOverlap {
        tensor: String,
        start: u64,
        other: String,
        other_end: u64,
    },
    #[error("metadata key '{key}' is missing")]
    MissingKey { key: String },
    #[error("metadata key '{key}' has type {found}, expected {expected}")]
    WrongType {
        key: String,
        expected: &'static str,
        found: String,
    },
    #[error("metadata key '{key}' holds {value}, which does not fit in {expected}")]
    OutOfRange {
        key: String,
        expected: &'static str,
        value: String,
    },
    #[error("no tensor named '{name}'")]
    NoSuchTensor { name: String },
    #[error("tensor '{tensor}': {source}")]
    Dequantize { tensor: String, source: QuantError },
}

pub type Result<T, E = GgufError> = std::result::Result<T, E>;
