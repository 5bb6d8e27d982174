//! Activation rows quantized to a weight format's partner type.

use half::f16;
use phobos_quant::{GgmlType, QK_K};

use super::QMatmulError;

/// Bytes of one Q8_0 block: f16 scale, 32 levels.
pub(super) const Q8_0_BYTES: usize = 34;
/// Bytes of one Q8_1 block: f16 scale, f16 `d * sum`, 32 levels.
pub(super) const Q8_1_BYTES: usize = 36;
/// Bytes of one Q8_K block: f32 scale, 256 levels, 16 i16 sums of 16 levels.
pub(super) const Q8_K_BYTES: usize = 4 + QK_K + 32;

/// The type the float operand is quantized to for weight type `ty`
/// (ggml's `vec_dot_type`), or F32 for float weights. `None`: no kernel.
pub fn vec_dot_type(ty: GgmlType) -> Option<GgmlType> {
    use GgmlType::*;
    match ty {
        Q4_0 | Q5_0 | Q8_0 | IQ4_NL => Some(Q8_0),
        Q4_1 | Q5_1 => Some(Q8_1),
        Q2_K | Q3_K | Q4_K | Q5_K | Q6_K | IQ4_XS => Some(Q8_K),
        F32 | F16 | BF16 => Some(F32),
        _ => None,
    }
}

/// `m_rows` activation rows of `cols` values, quantized once to `ty` (Q8_0,
/// Q8_1 or Q8_K in ggml's block layout, rows back to back) or kept as f32
/// (`ty == F32`, for float weights).
#[derive(Debug, Clone, PartialEq)]
pub struct QActivations {
    ty: GgmlType,
    m_rows: usize,
    cols: usize,
    blocks: Vec<u8>,
    floats: Vec<f32>,
}

impl QActivations {
    /// Wraps already-quantized rows (e.g. from `phobos_quant::quantize`),
    /// checking the byte count.
    pub fn from_blocks(
        ty: GgmlType,
        m_rows: usize,
        cols: usize,
        blocks: Vec<u8>,
    ) -> Result<Self, QMatmulError> {
        if !matches!(ty, GgmlType::Q8_0 | GgmlType::Q8_1 | GgmlType::Q8_K) {
            return Err(QMatmulError::UnsupportedWeight { ty });
        }
        let info = ty.info();
        if !cols.is_multiple_of(info.block_len) {
            return Err(QMatmulError::ColsNotBlockMultiple {
                ty,
                cols,
                block_len: info.block_len,
            });
        }
        let expected = (cols / info.block_len * info.block_bytes).saturating_mul(m_rows);
        if blocks.len() != expected {
            return Err(QMatmulError::ActivationBytes {
                expected,
                found: blocks.len(),
            });
        }
        // The kernels' sign trick needs levels in -127..=127, which every
        // q8 quantizer produces; -128 would be multiplied wrongly.
        let (level_start, level_len) = match ty {
            GgmlType::Q8_0 => (2, 32),
            GgmlType::Q8_1 => (4, 32),
            _ => (4, QK_K),
        };
        for (index, block) in blocks.chunks_exact(info.block_bytes).enumerate() {
            if block[level_start..level_start + level_len].contains(&0x80) {
                return Err(QMatmulError::ActivationLevel { block: index });
            }
        }
        Ok(Self {
            ty,
            m_rows,
            cols,
            blocks,
            floats: Vec::new(),
        })
    }

    pub fn ty(&self) -> GgmlType {
        self.ty
    }
    pub fn m_rows(&self) -> usize {
        self.m_rows
    }
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// The quantized blocks (empty for F32 activations).
    pub fn blocks(&self) -> &[u8] {
        &self.blocks
    }

    /// Bytes of one quantized row.
    pub(super) fn row_bytes(&self) -> usize {
        let info = self.ty.info();
        self.cols / info.block_len * info.block_bytes
    }

    pub(super) fn row_blocks(&self, m: usize) -> &[u8] {
        let len = self.row_bytes();
        &self.blocks[m * len..(m + 1) * len]
    }

    pub(super) fn row_floats(&self, m: usize) -> &[f32] {
        &self.floats[m * self.cols..(m + 1) * self.cols]
    }
}

/// Quantizes `m_rows` rows of `x` (`cols` each) to the partner type of
/// weight type `weight_ty`, with ggml's x86 quantizers.
pub fn quantize_activations(
    weight_ty: GgmlType,
    x: &[f32],
    m_rows: usize,
    cols: usize,
) -> Result<QActivations, QMatmulError> {
    let ty = vec_dot_type(weight_ty).ok_or(QMatmulError::UnsupportedWeight { ty: weight_ty })?;
    let expected = m_rows.checked_mul(cols);
    if expected != Some(x.len()) {
        return Err(QMatmulError::ActivationLen {
            m_rows,
            cols,
            expected: expected.unwrap_or(usize::MAX),
            found: x.len(),
        });
    }
    let block_len = ty.info().block_len;
    if !cols.is_multiple_of(block_len) {
        return Err(QMatmulError::ColsNotBlockMultiple {
            ty: weight_ty,
            cols,
            block_len,
        });
    }
    let mut blocks = Vec::new();
    let mut floats = Vec::new();
    match ty {
        GgmlType::F32 => floats.extend_from_slice(x),
        GgmlType::Q8_0 => {
            blocks.reserve(x.len() / 32 * Q8_0_BYTES);
            for chunk in x.chunks_exact(32) {
                quantize_block_q8_0_x86(chunk, &mut blocks);
            }
        }
        GgmlType::Q8_1 => {
            blocks.reserve(x.len() / 32 * Q8_1_BYTES);
            for chunk in x.chunks_exact(32) {
                quantize_block_q8_1_x86(chunk, &mut blocks);
            }
        }
        _ => {
            blocks.reserve(x.len() / QK_K * Q8_K_BYTES);
            phobos_quant::quantize(GgmlType::Q8_K, x, &mut blocks)?;
        }
    }
    Ok(QActivations {
        ty,
        m_rows,
        cols,
        blocks,
        floats,
    })
}

/// ggml's AVX quantizer's levels and f32 scale for one 32-value block: the
/// multiplier is `127 / amax` (not `1 / d`) and rounding is half to even.
fn levels_x86(x: &[f32]) -> ([i8; 32], f32) {
    let amax = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let d = amax / 127.0;
    let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
    let mut levels = [0i8; 32];
    for (level, &v) in levels.iter_mut().zip(x) {
        // Saturating like `packs`; |v * id| <= 127 up to rounding anyway.
        *level = (v * id).round_ties_even().clamp(-128.0, 127.0) as i8;
    }
    (levels, d)
}

fn quantize_block_q8_0_x86(x: &[f32], out: &mut Vec<u8>) {
    let (levels, d) = levels_x86(x);
    out.extend_from_slice(&f16::from_f32(d).to_bits().to_le_bytes());
    out.extend(levels.iter().map(|&q| q as u8));
}

fn quantize_block_q8_1_x86(x: &[f32], out: &mut Vec<u8>) {
    let (levels, d) = levels_x86(x);
    let sum: i32 = levels.iter().map(|&q| i32::from(q)).sum();
    out.extend_from_slice(&f16::from_f32(d).to_bits().to_le_bytes());
    out.extend_from_slice(&f16::from_f32(d * sum as f32).to_bits().to_le_bytes());
    out.extend(levels.iter().map(|&q| q as u8));
}
