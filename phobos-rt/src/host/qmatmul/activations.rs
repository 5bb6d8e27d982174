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
    /// Q8_0 / Q8_1: each block's f16 scale as f32 (what the kernels
    /// multiply), so a tile reads it without converting per weight row.
    scales: Vec<f32>,
    /// Q8_0: per block, eight i32 lanes, lane `l` minus the sum of levels
    /// `4l..4l+4`. The VNNI kernels multiply offset-binary weights
    /// (`level + 2^s`, unsigned) and add `lane_sums << s` to get back the
    /// signed lane sums exactly.
    neg_lane_sums: Vec<i32>,
}

/// The per-block data the fast kernels read besides the levels.
fn block_extras(ty: GgmlType, blocks: &[u8]) -> (Vec<f32>, Vec<i32>) {
    let (bytes, levels_at) = match ty {
        GgmlType::Q8_0 => (Q8_0_BYTES, 2),
        GgmlType::Q8_1 => (Q8_1_BYTES, 4),
        _ => return (Vec::new(), Vec::new()),
    };
    let count = blocks.len() / bytes;
    let mut scales = Vec::with_capacity(count);
    let mut sums = Vec::with_capacity(if ty == GgmlType::Q8_0 { 8 * count } else { 0 });
    for block in blocks.chunks_exact(bytes) {
        scales.push(f16::from_bits(u16::from_le_bytes([block[0], block[1]])).to_f32());
        if ty == GgmlType::Q8_0 {
            for four in block[levels_at..levels_at + 32].chunks_exact(4) {
                sums.push(-four.iter().map(|&q| i32::from(q as i8)).sum::<i32>());
            }
        }
    }
    (scales, sums)
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
        let (scales, neg_lane_sums) = block_extras(ty, &blocks);
        Ok(Self {
            ty,
            m_rows,
            cols,
            blocks,
            floats: Vec::new(),
            scales,
            neg_lane_sums,
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

    /// Blocks per row.
    pub(super) fn row_block_count(&self) -> usize {
        self.cols / self.ty.info().block_len
    }

    /// Q8_0 / Q8_1: the f32 scales of row `m`'s blocks.
    pub(super) fn row_scales(&self, m: usize) -> &[f32] {
        let len = self.row_block_count();
        &self.scales[m * len..(m + 1) * len]
    }

    /// Q8_0: the negated lane sums of row `m`'s blocks, eight per block.
    pub(super) fn row_neg_lane_sums(&self, m: usize) -> &[i32] {
        let len = 8 * self.row_block_count();
        &self.neg_lane_sums[m * len..(m + 1) * len]
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
    quantize_activations_on(weight_ty, x, m_rows, cols, false)
}

/// [`quantize_activations`], with prompt-sized batches split over the host
/// pool when `threaded`.
pub fn quantize_activations_threaded(
    weight_ty: GgmlType,
    x: &[f32],
    m_rows: usize,
    cols: usize,
) -> Result<QActivations, QMatmulError> {
    quantize_activations_on(weight_ty, x, m_rows, cols, true)
}

fn quantize_activations_on(
    weight_ty: GgmlType,
    x: &[f32],
    m_rows: usize,
    cols: usize,
    threaded: bool,
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
    if ty == GgmlType::F32 {
        return Ok(QActivations {
            ty,
            m_rows,
            cols,
            blocks: Vec::new(),
            floats: x.to_vec(),
            scales: Vec::new(),
            neg_lane_sums: Vec::new(),
        });
    }
    let n_blocks = x.len() / block_len;
    let mut blocks = vec![0u8; n_blocks * ty.info().block_bytes];
    let (mut scales, mut neg_lane_sums) = match ty {
        GgmlType::Q8_0 => (vec![0.0; n_blocks], vec![0; 8 * n_blocks]),
        GgmlType::Q8_1 => (vec![0.0; n_blocks], Vec::new()),
        _ => (Vec::new(), Vec::new()),
    };
    let part = Part {
        blocks: &mut blocks,
        scales: &mut scales,
        neg_lane_sums: &mut neg_lane_sums,
    };
    if threaded && m_rows >= PARALLEL_MIN_ROWS {
        quantize_rows_threaded(ty, x, m_rows, cols, part)?;
    } else {
        quantize_part(ty, x, part)?;
    }
    Ok(QActivations {
        ty,
        m_rows,
        cols,
        blocks,
        floats: Vec::new(),
        scales,
        neg_lane_sums,
    })
}

/// Fewest activation rows worth quantizing on the pool.
const PARALLEL_MIN_ROWS: usize = 16;

/// Where a run of whole blocks goes: their bytes and, for Q8_0 / Q8_1, the
/// per-block extras the kernels read (`QActivations`' fields; empty where
/// the type has none).
struct Part<'a> {
    blocks: &'a mut [u8],
    scales: &'a mut [f32],
    neg_lane_sums: &'a mut [i32],
}

/// Quantizes `x` (whole blocks of partner type `ty`) into `part`, sized for
/// exactly those blocks. The extras are filled in the same pass: computed
/// afterwards on one thread they were a serial tenth of a prompt matmul.
fn quantize_part(ty: GgmlType, x: &[f32], part: Part<'_>) -> Result<(), QMatmulError> {
    match ty {
        GgmlType::Q8_0 => {
            let per_block = part
                .blocks
                .chunks_exact_mut(Q8_0_BYTES)
                .zip(part.scales.iter_mut())
                .zip(part.neg_lane_sums.chunks_exact_mut(8));
            for (chunk, ((block, scale), sums)) in x.chunks_exact(32).zip(per_block) {
                let d = f16::from_f32(levels_q8_with_sums(chunk, &mut block[2..], sums));
                block[..2].copy_from_slice(&d.to_bits().to_le_bytes());
                *scale = d.to_f32();
            }
        }
        GgmlType::Q8_1 => {
            let per_block = part
                .blocks
                .chunks_exact_mut(Q8_1_BYTES)
                .zip(part.scales.iter_mut());
            for (chunk, (block, scale)) in x.chunks_exact(32).zip(per_block) {
                let (levels, d) = levels_q8(chunk);
                let sum: i32 = levels.iter().map(|&q| i32::from(q)).sum();
                let d16 = f16::from_f32(d);
                block[..2].copy_from_slice(&d16.to_bits().to_le_bytes());
                block[2..4].copy_from_slice(&f16::from_f32(d * sum as f32).to_bits().to_le_bytes());
                block[4..].copy_from_slice(&levels.map(|q| q as u8));
                *scale = d16.to_f32();
            }
        }
        _ => {
            // Q8_K, the K-quants' partner.
            if q8_k_simd(x, part.blocks) {
                return Ok(());
            }
            let mut blocks = Vec::with_capacity(part.blocks.len());
            phobos_quant::quantize(GgmlType::Q8_K, x, &mut blocks)?;
            if blocks.len() != part.blocks.len() {
                return Err(QMatmulError::ActivationBytes {
                    expected: part.blocks.len(),
                    found: blocks.len(),
                });
            }
            part.blocks.copy_from_slice(&blocks);
        }
    }
    Ok(())
}

/// [`quantize_part`] of `m_rows` rows split over the host pool, each part
/// writing its own rows of the output in place.
fn quantize_rows_threaded(
    ty: GgmlType,
    x: &[f32],
    m_rows: usize,
    cols: usize,
    out: Part<'_>,
) -> Result<(), QMatmulError> {
    let pool = crate::pool::global();
    let parts = (4 * pool.threads()).min(m_rows);
    let rows_per_part = m_rows.div_ceil(parts);
    let parts = m_rows.div_ceil(rows_per_part);
    // Each buffer holds the same number of elements per row.
    let per_part = |len: usize| len / m_rows * rows_per_part;
    let (blocks_len, scales_len, sums_len) =
        (out.blocks.len(), out.scales.len(), out.neg_lane_sums.len());
    let blocks = split_parts(out.blocks, per_part(blocks_len), parts);
    let scales = split_parts(out.scales, per_part(scales_len), parts);
    let sums = split_parts(out.neg_lane_sums, per_part(sums_len), parts);
    let slots: Vec<std::sync::Mutex<Option<Part<'_>>>> = blocks
        .into_iter()
        .zip(scales)
        .zip(sums)
        .map(|((blocks, scales), neg_lane_sums)| {
            std::sync::Mutex::new(Some(Part {
                blocks,
                scales,
                neg_lane_sums,
            }))
        })
        .collect();
    let errors: std::sync::Mutex<Option<QMatmulError>> = std::sync::Mutex::new(None);
    let task = |index: usize| -> crate::Result<()> {
        let rows = index * rows_per_part..((index + 1) * rows_per_part).min(m_rows);
        let part = slots[index]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(part) = part
            && let Err(err) = quantize_part(ty, &x[rows.start * cols..rows.end * cols], part)
        {
            *errors.lock().unwrap_or_else(|p| p.into_inner()) = Some(err);
        }
        Ok(())
    };
    pool.run(parts, &task)
        .map_err(|err| QMatmulError::Parallel(err.to_string()))?;
    match errors.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(err) => Err(err),
        None => Ok(()),
    }
}

/// `slice` cut into `parts` consecutive pieces of `per_part` elements (the
/// last ones shorter or empty where it runs out).
fn split_parts<T>(mut slice: &mut [T], per_part: usize, parts: usize) -> Vec<&mut [T]> {
    (0..parts)
        .map(|_| {
            let at = per_part.min(slice.len());
            let (head, tail) = std::mem::take(&mut slice).split_at_mut(at);
            slice = tail;
            head
        })
        .collect()
}

/// Quantizes `x` to Q8_K `blocks` on AVX2 where the CPU has it, the same
/// bytes as phobos-quant's quantizer (tested); false, writing nothing,
/// where it does not.
fn q8_k_simd(x: &[f32], blocks: &mut [u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if super::kernels::kernel_level() != super::KernelLevel::Portable {
        for (chunk, block) in x
            .chunks_exact(QK_K)
            .zip(blocks.chunks_exact_mut(Q8_K_BYTES))
        {
            // SAFETY: every SIMD kernel level includes AVX2.
            unsafe { super::x86::quantize_q8_k_avx2(chunk, block) };
        }
        return true;
    }
    let _ = (x, blocks);
    false
}

/// [`levels_x86`] on AVX2 where the CPU has it (same bytes, tested).
fn levels_q8(x: &[f32]) -> ([i8; 32], f32) {
    #[cfg(target_arch = "x86_64")]
    if super::kernels::kernel_level() != super::KernelLevel::Portable {
        // SAFETY: every SIMD kernel level includes AVX2.
        return unsafe { super::x86::levels_q8_avx2(x) };
    }
    levels_x86(x)
}

/// [`levels_q8`] into `levels` (32 bytes) and the negated sums of each
/// four levels into `neg_sums` (`QActivations`' `neg_lane_sums` for the
/// block); returns the f32 scale.
fn levels_q8_with_sums(x: &[f32], levels: &mut [u8], neg_sums: &mut [i32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if super::kernels::kernel_level() != super::KernelLevel::Portable {
        // SAFETY: every SIMD kernel level includes AVX2.
        return unsafe { super::x86::levels_q8_sums_avx2(x, levels, neg_sums) };
    }
    let (plain, d) = levels_x86(x);
    for (out, &q) in levels.iter_mut().zip(&plain) {
        *out = q as u8;
    }
    for (sum, four) in neg_sums.iter_mut().zip(plain.chunks_exact(4)) {
        *sum = -four.iter().map(|&q| i32::from(q)).sum::<i32>();
    }
    d
}

/// ggml's AVX quantizer's levels and f32 scale for one 32-value block: the
/// multiplier is `127 / amax` (not `1 / d`) and rounding is half to even.
pub(super) fn levels_x86(x: &[f32]) -> ([i8; 32], f32) {
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
