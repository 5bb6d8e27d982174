//! Dequantize for the 256-element k-quants (Q2_K..Q6_K, Q8_K) and the Q8_K
//! activation quantizer. Arithmetic order follows gguf-py: the sub-block
//! scale `d * sc` is formed first, then multiplied by the level, then the
//! sub-block min `dmin * m` is subtracted.

use super::bytes::{f16_at, f32_at};
use super::types::QK_K;

pub(super) fn dequantize_q2_k(block: &[u8], out: &mut [f32]) {
    let (scales, qs) = (&block[..16], &block[16..80]);
    let (d, dmin) = (f16_at(block, 80), f16_at(block, 82));
    for (e, o) in out.iter_mut().enumerate() {
        let (half, shift, l) = (e / 128, (e / 32) % 4, e % 32);
        let q = (qs[half * 32 + l] >> (2 * shift)) & 3;
        let sc = scales[e / 16];
        let dl = d * f32::from(sc & 0x0F);
        let ml = dmin * f32::from(sc >> 4);
        *o = dl * f32::from(q) - ml;
    }
}

/// Q3_K's sixteen 6-bit scales: low nibbles in bytes 0..8, high 2-bit
/// pairs in bytes 8..12.
pub(super) fn q3_k_scale(scales: &[u8], i: usize) -> i8 {
    let low = (scales[i % 8] >> (4 * (i / 8))) & 0x0F;
    let high = (scales[8 + i % 4] >> (2 * (i / 4))) & 0x03;
    (low | (high << 4)) as i8 - 32
}

pub(super) fn dequantize_q3_k(block: &[u8], out: &mut [f32]) {
    let (hmask, qs, scales) = (&block[..32], &block[32..96], &block[96..108]);
    let d = f16_at(block, 108);
    for (e, o) in out.iter_mut().enumerate() {
        let (half, shift, l) = (e / 128, (e / 32) % 4, e % 32);
        let low = ((qs[half * 32 + l] >> (2 * shift)) & 3) as i8;
        // A set high bit means no offset; a clear one subtracts 4.
        let high = ((hmask[l] >> (e / 32)) & 1) ^ 1;
        let q = low - ((high << 2) as i8);
        let dl = d * f32::from(q3_k_scale(scales, e / 16));
        *o = dl * f32::from(q);
    }
}

/// Q4_K / Q5_K: 6-bit scale and min of sub-block `j` (0..8) from the
/// 12 packed bytes.
pub(super) fn k4_scale_min(scales: &[u8], j: usize) -> (u8, u8) {
    if j < 4 {
        (scales[j] & 63, scales[j + 4] & 63)
    } else {
        let sc = (scales[j + 4] & 0x0F) | ((scales[j - 4] >> 2) & 0x30);
        let m = (scales[j + 4] >> 4) | ((scales[j] >> 2) & 0x30);
        (sc, m)
    }
}

pub(super) fn dequantize_q4_k(block: &[u8], out: &mut [f32]) {
    let (d, dmin) = (f16_at(block, 0), f16_at(block, 2));
    let (scales, qs) = (&block[4..16], &block[16..144]);
    for (e, o) in out.iter_mut().enumerate() {
        let (chunk, hi, l) = (e / 64, (e / 32) % 2, e % 32);
        let q = (qs[chunk * 32 + l] >> (4 * hi)) & 0x0F;
        let (sc, m) = k4_scale_min(scales, e / 32);
        *o = d * f32::from(sc) * f32::from(q) - dmin * f32::from(m);
    }
}

pub(super) fn dequantize_q5_k(block: &[u8], out: &mut [f32]) {
    let (d, dmin) = (f16_at(block, 0), f16_at(block, 2));
    let (scales, qh, qs) = (&block[4..16], &block[16..48], &block[48..176]);
    for (e, o) in out.iter_mut().enumerate() {
        let (chunk, hi, l) = (e / 64, (e / 32) % 2, e % 32);
        let low = (qs[chunk * 32 + l] >> (4 * hi)) & 0x0F;
        let high = (qh[l] >> (e / 32)) & 1;
        let q = low | (high << 4);
        let (sc, m) = k4_scale_min(scales, e / 32);
        *o = d * f32::from(sc) * f32::from(q) - dmin * f32::from(m);
    }
}

pub(super) fn dequantize_q6_k(block: &[u8], out: &mut [f32]) {
    let (ql, qh, scales) = (&block[..128], &block[128..192], &block[192..208]);
    let d = f16_at(block, 208);
    for (e, o) in out.iter_mut().enumerate() {
        let (half, within) = (e / 128, e % 128);
        let low = (ql[half * 64 + within % 64] >> (4 * (within / 64))) & 0x0F;
        let high = (qh[half * 32 + within % 32] >> (2 * (within / 32))) & 3;
        let q = (low | (high << 4)) as i8 - 32;
        *o = d * f32::from(scales[e / 16] as i8) * f32::from(q);
    }
}

pub(super) fn dequantize_q8_k(block: &[u8], out: &mut [f32]) {
    let d = f32_at(block, 0);
    for (o, &q) in out.iter_mut().zip(&block[4..4 + QK_K]) {
        *o = d * f32::from(q as i8);
    }
}

/// ggml's `nearest_int`: adding 1.5 * 2^23 makes the FPU round to an
/// integer (half to even) and the low mantissa bits hold the result.
/// Valid for |v| < 2^22, which every caller guarantees by construction.
pub(super) fn nearest_int(v: f32) -> i32 {
    let bits = (v + 12_582_912.0).to_bits() as i32;
    (bits & 0x007f_ffff) - 0x0040_0000
}

/// ggml's `quantize_row_q8_K_ref`: scale from the signed max so that
/// element maps to -127 exactly, levels rounded half to even, plus the
/// sums of each 16 levels for the k-quant dot products.
pub(super) fn quantize_q8_k(x: &[f32], out: &mut Vec<u8>) {
    let mut amax = 0.0f32;
    let mut max = 0.0f32;
    for &v in x {
        if v.abs() > amax {
            amax = v.abs();
            max = v;
        }
    }
    if amax == 0.0 {
        out.extend_from_slice(&0f32.to_le_bytes());
        out.extend(std::iter::repeat_n(0u8, QK_K + QK_K / 16 * 2));
        return;
    }
    let iscale = -127.0 / max;
    let levels: Vec<i8> = x
        .iter()
        .map(|&v| nearest_int(iscale * v).min(127) as i8)
        .collect();
    out.extend_from_slice(&(1.0 / iscale).to_le_bytes());
    out.extend(levels.iter().map(|&q| q as u8));
    for group in levels.chunks_exact(16) {
        let sum: i16 = group.iter().map(|&q| i16::from(q)).sum();
        out.extend_from_slice(&sum.to_le_bytes());
    }
}
