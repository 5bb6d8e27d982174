//! Unblocked element types: floats and integers, one element per "block".

use half::{bf16, f16};

pub(super) fn dequantize_f32(bytes: &[u8], out: &mut [f32]) {
    for (chunk, o) in bytes.chunks_exact(4).zip(out) {
        *o = f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
    }
}

pub(super) fn dequantize_f16(bytes: &[u8], out: &mut [f32]) {
    for (chunk, o) in bytes.chunks_exact(2).zip(out) {
        *o = f16::from_le_bytes([chunk[0], chunk[1]]).to_f32();
    }
}

pub(super) fn dequantize_bf16(bytes: &[u8], out: &mut [f32]) {
    for (chunk, o) in bytes.chunks_exact(2).zip(out) {
        *o = bf16::from_le_bytes([chunk[0], chunk[1]]).to_f32();
    }
}

pub(super) fn dequantize_f64(bytes: &[u8], out: &mut [f32]) {
    for (chunk, o) in bytes.chunks_exact(8).zip(out) {
        let mut b = [0u8; 8];
        b.copy_from_slice(chunk);
        *o = f64::from_le_bytes(b) as f32;
    }
}

pub(super) fn dequantize_i8(bytes: &[u8], out: &mut [f32]) {
    for (&b, o) in bytes.iter().zip(out) {
        *o = f32::from(b as i8);
    }
}

pub(super) fn dequantize_i16(bytes: &[u8], out: &mut [f32]) {
    for (chunk, o) in bytes.chunks_exact(2).zip(out) {
        *o = f32::from(i16::from_le_bytes([chunk[0], chunk[1]]));
    }
}

pub(super) fn dequantize_i32(bytes: &[u8], out: &mut [f32]) {
    for (chunk, o) in bytes.chunks_exact(4).zip(out) {
        *o = i32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]) as f32;
    }
}

pub(super) fn dequantize_i64(bytes: &[u8], out: &mut [f32]) {
    for (chunk, o) in bytes.chunks_exact(8).zip(out) {
        let mut b = [0u8; 8];
        b.copy_from_slice(chunk);
        *o = i64::from_le_bytes(b) as f32;
    }
}

pub(super) fn quantize_f32(src: &[f32], out: &mut Vec<u8>) {
    for &x in src {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

/// Round to nearest even, like ggml's F16 conversion.
pub(super) fn quantize_f16(src: &[f32], out: &mut Vec<u8>) {
    for &x in src {
        out.extend_from_slice(&f16::from_f32(x).to_le_bytes());
    }
}

/// ggml's BF16 rounding: round to nearest even on the upper 16 bits, NaN
/// forced quiet (the `half` crate's conversion makes the same choice).
pub(super) fn quantize_bf16(src: &[f32], out: &mut Vec<u8>) {
    for &x in src {
        out.extend_from_slice(&bf16_bits(x).to_le_bytes());
    }
}

pub(super) fn bf16_bits(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() {
        return ((bits >> 16) | 64) as u16;
    }
    ((bits + (0x7fff + ((bits >> 16) & 1))) >> 16) as u16
}
