//! Type-dispatched dequantize and quantize over whole blocks.

use super::types::{GgmlType, type_info};
use super::{QuantError, float};

/// Dequantizes `bytes` (whole blocks of `ty`) into `out`, which must hold
/// exactly the blocks' element count.
pub fn dequantize(ty: GgmlType, bytes: &[u8], out: &mut [f32]) -> Result<(), QuantError> {
    let info = type_info(ty);
    if !bytes.len().is_multiple_of(info.block_bytes) {
        return Err(QuantError::NotBlockMultiple {
            ty,
            len: bytes.len(),
            per_block: info.block_bytes,
            unit: "bytes",
        });
    }
    let n_blocks = bytes.len() / info.block_bytes;
    let expected = n_blocks * info.block_len;
    if out.len() != expected {
        return Err(QuantError::OutputLength {
            ty,
            n_blocks,
            expected,
            found: out.len(),
        });
    }
    match ty {
        GgmlType::F32 => float::dequantize_f32(bytes, out),
        GgmlType::F16 => float::dequantize_f16(bytes, out),
        GgmlType::BF16 => float::dequantize_bf16(bytes, out),
        GgmlType::F64 => float::dequantize_f64(bytes, out),
        GgmlType::I8 => float::dequantize_i8(bytes, out),
        GgmlType::I16 => float::dequantize_i16(bytes, out),
        GgmlType::I32 => float::dequantize_i32(bytes, out),
        GgmlType::I64 => float::dequantize_i64(bytes, out),
        _ => {
            return Err(QuantError::Unsupported {
                ty,
                op: "dequantize",
            });
        }
    }
    Ok(())
}

/// Quantizes `src` (whole blocks of `ty`) and appends the blocks to `out`.
pub fn quantize(ty: GgmlType, src: &[f32], out: &mut Vec<u8>) -> Result<(), QuantError> {
    let info = type_info(ty);
    if !src.len().is_multiple_of(info.block_len) {
        return Err(QuantError::NotBlockMultiple {
            ty,
            len: src.len(),
            per_block: info.block_len,
            unit: "elements",
        });
    }
    out.reserve(src.len() / info.block_len * info.block_bytes);
    match ty {
        GgmlType::F32 => float::quantize_f32(src, out),
        GgmlType::F16 => float::quantize_f16(src, out),
        GgmlType::BF16 => float::quantize_bf16(src, out),
        _ => return Err(QuantError::Unsupported { ty, op: "quantize" }),
    }
    Ok(())
}
