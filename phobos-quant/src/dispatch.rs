//! Type-dispatched dequantize and quantize over whole blocks.

use super::types::{GgmlType, type_info};
use super::{
    QuantError, float, fp4_ternary as fp, iq_quantize as iqq, iquants as iq, kquants as k,
    kquants_quantize as kq, legacy,
};

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
    // An overflowing product cannot equal any real output length.
    let expected = n_blocks.checked_mul(info.block_len);
    if expected != Some(out.len()) {
        return Err(QuantError::OutputLength {
            ty,
            n_blocks,
            expected: expected.unwrap_or(usize::MAX),
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
            let per_block = block_dequantizer(ty).ok_or(QuantError::Unsupported {
                ty,
                op: "dequantize",
            })?;
            for (block, chunk) in bytes
                .chunks_exact(info.block_bytes)
                .zip(out.chunks_exact_mut(info.block_len))
            {
                per_block(block, chunk);
            }
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
        _ => {
            let per_block =
                block_quantizer(ty).ok_or(QuantError::Unsupported { ty, op: "quantize" })?;
            for block in src.chunks_exact(info.block_len) {
                per_block(block, out);
            }
        }
    }
    Ok(())
}

type BlockDequantizer = fn(&[u8], &mut [f32]);
type BlockQuantizer = fn(&[f32], &mut Vec<u8>);

/// Per-block dequantizer of a blocked type; the slices passed in are
/// exactly one block and its elements.
fn block_dequantizer(ty: GgmlType) -> Option<BlockDequantizer> {
    Some(match ty {
        GgmlType::Q4_0 => legacy::dequantize_q4_0,
        GgmlType::Q4_1 => legacy::dequantize_q4_1,
        GgmlType::Q5_0 => legacy::dequantize_q5_0,
        GgmlType::Q5_1 => legacy::dequantize_q5_1,
        GgmlType::Q8_0 => legacy::dequantize_q8_0,
        GgmlType::Q8_1 => legacy::dequantize_q8_1,
        GgmlType::Q2_K => k::dequantize_q2_k,
        GgmlType::Q3_K => k::dequantize_q3_k,
        GgmlType::Q4_K => k::dequantize_q4_k,
        GgmlType::Q5_K => k::dequantize_q5_k,
        GgmlType::Q6_K => k::dequantize_q6_k,
        GgmlType::Q8_K => k::dequantize_q8_k,
        GgmlType::IQ2_XXS => iq::dequantize_iq2_xxs,
        GgmlType::IQ2_XS => iq::dequantize_iq2_xs,
        GgmlType::IQ2_S => iq::dequantize_iq2_s,
        GgmlType::IQ3_XXS => iq::dequantize_iq3_xxs,
        GgmlType::IQ3_S => iq::dequantize_iq3_s,
        GgmlType::IQ1_S => iq::dequantize_iq1_s,
        GgmlType::IQ1_M => iq::dequantize_iq1_m,
        GgmlType::IQ4_NL => iq::dequantize_iq4_nl,
        GgmlType::IQ4_XS => iq::dequantize_iq4_xs,
        GgmlType::TQ1_0 => fp::dequantize_tq1_0,
        GgmlType::TQ2_0 => fp::dequantize_tq2_0,
        GgmlType::MXFP4 => fp::dequantize_mxfp4,
        GgmlType::NVFP4 => fp::dequantize_nvfp4,
        GgmlType::Q1_0 => fp::dequantize_q1_0,
        _ => return None,
    })
}

/// Per-block quantizer; appends exactly one block's bytes.
fn block_quantizer(ty: GgmlType) -> Option<BlockQuantizer> {
    Some(match ty {
        GgmlType::Q4_0 => legacy::quantize_q4_0,
        GgmlType::Q4_1 => legacy::quantize_q4_1,
        GgmlType::Q5_0 => legacy::quantize_q5_0,
        GgmlType::Q5_1 => legacy::quantize_q5_1,
        GgmlType::Q8_0 => legacy::quantize_q8_0,
        GgmlType::Q8_1 => legacy::quantize_q8_1,
        GgmlType::Q8_K => k::quantize_q8_k,
        GgmlType::Q2_K => kq::quantize_q2_k,
        GgmlType::Q3_K => kq::quantize_q3_k,
        GgmlType::Q4_K => kq::quantize_q4_k,
        GgmlType::Q5_K => kq::quantize_q5_k,
        GgmlType::Q6_K => kq::quantize_q6_k,
        GgmlType::IQ2_XXS => iqq::quantize_iq2_xxs,
        GgmlType::IQ2_XS => iqq::quantize_iq2_xs,
        GgmlType::IQ2_S => iqq::quantize_iq2_s,
        GgmlType::IQ3_XXS => iqq::quantize_iq3_xxs,
        GgmlType::IQ3_S => iqq::quantize_iq3_s,
        GgmlType::IQ1_S => iqq::quantize_iq1_s,
        GgmlType::IQ1_M => iqq::quantize_iq1_m,
        GgmlType::IQ4_NL => iqq::quantize_iq4_nl,
        GgmlType::IQ4_XS => iqq::quantize_iq4_xs,
        GgmlType::TQ1_0 => fp::quantize_tq1_0,
        GgmlType::TQ2_0 => fp::quantize_tq2_0,
        GgmlType::MXFP4 => fp::quantize_mxfp4,
        GgmlType::Q1_0 => fp::quantize_q1_0,
        _ => return None,
    })
}

/// Whether [`quantize`] supports `ty`.
pub fn can_quantize(ty: GgmlType) -> bool {
    matches!(ty, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16) || block_quantizer(ty).is_some()
}

/// Whether [`dequantize`] supports `ty`.
pub fn can_dequantize(ty: GgmlType) -> bool {
    use GgmlType::*;
    matches!(ty, F32 | F16 | BF16 | F64 | I8 | I16 | I32 | I64) || block_dequantizer(ty).is_some()
}
