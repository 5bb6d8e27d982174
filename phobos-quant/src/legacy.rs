//! The 32-element block formats: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1.
//!
//! Dequantize follows gguf-py's arithmetic order exactly (scale times
//! level, plus min), so results are bit-identical. The quantizers of
//! Q4_0..Q5_1 and Q8_0 reproduce gguf-py / ggml's reference rounding; Q8_1
//! follows ggml's `quantize_row_q8_1_ref`.

use super::bytes::{f16_at, put_f16, u32_at};

pub(super) const QK: usize = 32;

/// The 4-bit level of element `j` of a block whose 16 packed bytes are `qs`:
/// low nibbles hold elements 0..16, high nibbles 16..32.
fn nibble(qs: &[u8], j: usize) -> u8 {
    if j < 16 {
        qs[j] & 0x0F
    } else {
        qs[j - 16] >> 4
    }
}

pub(super) fn dequantize_q4_0(block: &[u8], out: &mut [f32]) {
    let d = f16_at(block, 0);
    for (j, o) in out.iter_mut().enumerate() {
        *o = d * f32::from(nibble(&block[2..], j) as i8 - 8);
    }
}

pub(super) fn dequantize_q4_1(block: &[u8], out: &mut [f32]) {
    let (d, m) = (f16_at(block, 0), f16_at(block, 2));
    for (j, o) in out.iter_mut().enumerate() {
        *o = d * f32::from(nibble(&block[4..], j)) + m;
    }
}

fn five_bit(qh: u32, qs: &[u8], j: usize) -> u8 {
    nibble(qs, j) | ((((qh >> j) & 1) as u8) << 4)
}

pub(super) fn dequantize_q5_0(block: &[u8], out: &mut [f32]) {
    let (d, qh) = (f16_at(block, 0), u32_at(block, 2));
    for (j, o) in out.iter_mut().enumerate() {
        *o = d * f32::from(five_bit(qh, &block[6..], j) as i8 - 16);
    }
}

pub(super) fn dequantize_q5_1(block: &[u8], out: &mut [f32]) {
    let (d, m, qh) = (f16_at(block, 0), f16_at(block, 2), u32_at(block, 4));
    for (j, o) in out.iter_mut().enumerate() {
        *o = d * f32::from(five_bit(qh, &block[8..], j)) + m;
    }
}

pub(super) fn dequantize_q8_0(block: &[u8], out: &mut [f32]) {
    let d = f16_at(block, 0);
    for (o, &q) in out.iter_mut().zip(&block[2..]) {
        *o = f32::from(q as i8) * d;
    }
}

pub(super) fn dequantize_q8_1(block: &[u8], out: &mut [f32]) {
    let d = f16_at(block, 0);
    for (o, &q) in out.iter_mut().zip(&block[4..]) {
        *o = f32::from(q as i8) * d;
    }
}

/// The element with the largest magnitude, sign kept; the first one wins
/// ties, like numpy's argmax.
fn signed_absmax(x: &[f32]) -> f32 {
    let mut best = 0.0f32;
    for &v in x {
        if v.abs() > best.abs() {
            best = v;
        }
    }
    best
}

fn inverse(d: f32) -> f32 {
    if d == 0.0 { 0.0 } else { 1.0 / d }
}

fn pack_nibbles(levels: &[u8; QK], out: &mut Vec<u8>) {
    for j in 0..16 {
        out.push((levels[j] & 0x0F) | (levels[j + 16] << 4));
    }
}

fn pack_high_bits(levels: &[u8; QK]) -> [u8; 4] {
    let mut qh = 0u32;
    for (j, &q) in levels.iter().enumerate() {
        qh |= u32::from(q >> 4) << j;
    }
    qh.to_le_bytes()
}

/// Symmetric levels: `trunc(x / d + offset + 0.5)` clamped, with
/// d = signed max / -offset, as ggml's reference does.
fn symmetric_levels(x: &[f32], offset: f32, max_level: u8) -> (f32, [u8; QK]) {
    let d = signed_absmax(x) / -offset;
    let id = inverse(d);
    let mut levels = [0u8; QK];
    for (q, &v) in levels.iter_mut().zip(x) {
        // Saturating float-to-int casts match numpy's astype for the
        // in-range values that occur; the clamp bounds the rest.
        *q = ((v * id + (offset + 0.5)).trunc() as i32).clamp(0, max_level.into()) as u8;
    }
    (d, levels)
}

/// Affine levels from the block's min and max.
fn affine_levels(x: &[f32], max_level: u8) -> (f32, f32, [u8; QK]) {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let min = x.iter().copied().fold(f32::INFINITY, f32::min);
    let d = (max - min) / f32::from(max_level);
    let id = inverse(d);
    let mut levels = [0u8; QK];
    for (q, &v) in levels.iter_mut().zip(x) {
        *q = (((v - min) * id + 0.5).trunc() as i32).clamp(0, max_level.into()) as u8;
    }
    (d, min, levels)
}

pub(super) fn quantize_q4_0(x: &[f32], out: &mut Vec<u8>) {
    let (d, levels) = symmetric_levels(x, 8.0, 15);
    put_f16(out, d);
    pack_nibbles(&levels, out);
}

pub(super) fn quantize_q4_1(x: &[f32], out: &mut Vec<u8>) {
    let (d, min, levels) = affine_levels(x, 15);
    put_f16(out, d);
    put_f16(out, min);
    pack_nibbles(&levels, out);
}

pub(super) fn quantize_q5_0(x: &[f32], out: &mut Vec<u8>) {
    let (d, levels) = symmetric_levels(x, 16.0, 31);
    put_f16(out, d);
    out.extend_from_slice(&pack_high_bits(&levels));
    pack_nibbles(&levels, out);
}

pub(super) fn quantize_q5_1(x: &[f32], out: &mut Vec<u8>) {
    let (d, min, levels) = affine_levels(x, 31);
    put_f16(out, d);
    put_f16(out, min);
    out.extend_from_slice(&pack_high_bits(&levels));
    pack_nibbles(&levels, out);
}

/// C's `roundf`: halves away from zero.
pub(super) fn round_half_away(v: f32) -> f32 {
    v.round()
}

fn q8_levels(x: &[f32]) -> (f32, [i8; QK]) {
    let amax = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let d = amax / 127.0;
    let id = inverse(d);
    let mut levels = [0i8; QK];
    for (q, &v) in levels.iter_mut().zip(x) {
        *q = round_half_away(v * id) as i8;
    }
    (d, levels)
}

pub(super) fn quantize_q8_0(x: &[f32], out: &mut Vec<u8>) {
    let (d, levels) = q8_levels(x);
    put_f16(out, d);
    out.extend(levels.iter().map(|&q| q as u8));
}

/// Q8_1 also stores `d * sum(levels)`, which dot products with Q4_1/Q5_1
/// weights use to apply the weights' min.
pub(super) fn quantize_q8_1(x: &[f32], out: &mut Vec<u8>) {
    let (d, levels) = q8_levels(x);
    let sum: i32 = levels.iter().map(|&q| i32::from(q)).sum();
    put_f16(out, d);
    put_f16(out, sum as f32 * d);
    out.extend(levels.iter().map(|&q| q as u8));
}
