//! ggml's quantized dot product, one weight block at a time (SPEC.md,
//! "Quantized contractions"): the float operand was quantized to the
//! format's partner type; the products of the integer levels are summed
//! exactly in `i32`, and each block costs one or two float multiplies.
//!
//! Every function takes exactly one weight block `w` and the partner
//! block(s) `x` covering the same elements, and returns the block's term as
//! `f32`. Each float operation is rounded on its own (no fused
//! multiply-add), in the order written, so the result is reproducible
//! bit for bit.

use half::f16;
use phobos_quant::GgmlType;

/// The type ggml quantizes the float operand to before a dot product with
/// `ty` (its `vec_dot_type`), for the formats whose integer form Phobos
/// implements; `None` means the contraction uses the exact f32 form.
pub fn ggml_partner(ty: GgmlType) -> Option<GgmlType> {
    use GgmlType::*;
    match ty {
        Q4_0 | Q5_0 | Q8_0 | IQ4_NL => Some(Q8_0),
        Q4_1 | Q5_1 => Some(Q8_1),
        Q2_K | Q3_K | Q4_K | Q5_K | Q6_K => Some(Q8_K),
        _ => None,
    }
}

/// The term of one weight block of `ty` against its partner block(s).
/// The caller guarantees `ggml_partner(ty)` is `Some` and both slices hold
/// exactly one block.
pub(crate) fn block_dot(ty: GgmlType, w: &[u8], x: &[u8]) -> f32 {
    use GgmlType::*;
    match ty {
        Q4_0 => legacy_signed(w, x, |j| i32::from(nibble(&w[2..], j)) - 8),
        Q5_0 => {
            let qh = u32_at(w, 2);
            legacy_signed(w, x, |j| i32::from(five_bit(qh, &w[6..], j)) - 16)
        }
        Q8_0 => legacy_signed(w, x, |j| i32::from(w[2 + j] as i8)),
        IQ4_NL => legacy_signed(w, x, |j| {
            i32::from(IQ4NL_LEVELS[usize::from(nibble(&w[2..], j))])
        }),
        Q4_1 => legacy_offset(w, x, |j| i32::from(nibble(&w[4..], j))),
        Q5_1 => {
            let qh = u32_at(w, 4);
            legacy_offset(w, x, |j| i32::from(five_bit(qh, &w[8..], j)))
        }
        Q2_K => q2_k(w, x),
        Q3_K => q3_k(w, x),
        Q4_K => q45_k(w, x, false),
        Q5_K => q45_k(w, x, true),
        Q6_K => q6_k(w, x),
        // Unreachable by the caller's contract; a zero term keeps this total.
        _ => 0.0,
    }
}

/// IQ4_NL's level table (part of the format).
const IQ4NL_LEVELS: [i8; 16] = [
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
];

fn f16_at(b: &[u8], at: usize) -> f32 {
    f16::from_le_bytes([b[at], b[at + 1]]).to_f32()
}

fn f32_at(b: &[u8], at: usize) -> f32 {
    f32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Element `j` (0..32) of a 32-element nibble block: low nibbles hold
/// elements 0..16, high nibbles 16..32.
fn nibble(qs: &[u8], j: usize) -> u8 {
    if j < 16 {
        qs[j] & 0x0F
    } else {
        qs[j - 16] >> 4
    }
}

fn five_bit(qh: u32, qs: &[u8], j: usize) -> u8 {
    nibble(qs, j) | ((((qh >> j) & 1) as u8) << 4)
}

/// Q4_0, Q5_0, Q8_0, IQ4_NL against Q8_0: `f32(sumi) * (d_w * d_x)`.
fn legacy_signed(w: &[u8], x: &[u8], level: impl Fn(usize) -> i32) -> f32 {
    let sumi: i32 = (0..32).map(|j| level(j) * i32::from(x[2 + j] as i8)).sum();
    sumi as f32 * (f16_at(w, 0) * f16_at(x, 0))
}

/// Q4_1, Q5_1 against Q8_1: `(d_w * d_x) * f32(sumi) + m_w * s_x`, where
/// `s_x` is the Q8_1 block's stored `d_x * sum(levels)`.
fn legacy_offset(w: &[u8], x: &[u8], level: impl Fn(usize) -> i32) -> f32 {
    let sumi: i32 = (0..32).map(|j| level(j) * i32::from(x[4 + j] as i8)).sum();
    let scaled = (f16_at(w, 0) * f16_at(x, 0)) * sumi as f32;
    let offset = f16_at(w, 2) * f16_at(x, 2);
    scaled + offset
}

/// Q8_K partner block fields: `d` (f32), 256 levels, 16 sums of 16 levels.
struct Q8K<'a> {
    d: f32,
    levels: &'a [u8],
    bsums: &'a [u8],
}

impl<'a> Q8K<'a> {
    fn new(x: &'a [u8]) -> Self {
        Q8K {
            d: f32_at(x, 0),
            levels: &x[4..260],
            bsums: &x[260..292],
        }
    }
    fn level(&self, e: usize) -> i32 {
        i32::from(self.levels[e] as i8)
    }
    fn bsum(&self, g: usize) -> i32 {
        i32::from(i16::from_le_bytes([
            self.bsums[2 * g],
            self.bsums[2 * g + 1],
        ]))
    }
}

/// Sum over the 16-element groups `g` of `scale(g) * sum(level_w * level_x)`.
fn grouped_sum(
    x: &Q8K<'_>,
    groups: usize,
    scale: impl Fn(usize) -> i32,
    level: impl Fn(usize) -> i32,
) -> i32 {
    let per_group = 256 / groups;
    (0..groups)
        .map(|g| {
            let dot: i32 = (g * per_group..(g + 1) * per_group)
                .map(|e| level(e) * x.level(e))
                .sum();
            scale(g) * dot
        })
        .sum()
}

/// Q2_K: `(d_w * d_x) * f32(sum sc * dot) - (dmin_w * d_x) * f32(sum m * bsum)`.
fn q2_k(w: &[u8], x: &[u8]) -> f32 {
    let x = Q8K::new(x);
    let (scales, qs) = (&w[..16], &w[16..80]);
    let (d, dmin) = (f16_at(w, 80), f16_at(w, 82));
    let level = |e: usize| {
        let (half, shift, l) = (e / 128, (e / 32) % 4, e % 32);
        i32::from((qs[half * 32 + l] >> (2 * shift)) & 3)
    };
    let sumi = grouped_sum(&x, 16, |g| i32::from(scales[g] & 0x0F), level);
    let mins: i32 = (0..16).map(|g| x.bsum(g) * i32::from(scales[g] >> 4)).sum();
    (d * x.d) * sumi as f32 - (dmin * x.d) * mins as f32
}

/// Q3_K: `(d_w * d_x) * f32(sum sc * dot)` with signed 6-bit scales and
/// levels in -4..=3.
fn q3_k(w: &[u8], x: &[u8]) -> f32 {
    let x = Q8K::new(x);
    let (hmask, qs, scales) = (&w[..32], &w[32..96], &w[96..108]);
    let d = f16_at(w, 108);
    let scale = |i: usize| {
        let low = (scales[i % 8] >> (4 * (i / 8))) & 0x0F;
        let high = (scales[8 + i % 4] >> (2 * (i / 4))) & 0x03;
        i32::from(low | (high << 4)) - 32
    };
    let level = |e: usize| {
        let (half, shift, l) = (e / 128, (e / 32) % 4, e % 32);
        let low = i32::from((qs[half * 32 + l] >> (2 * shift)) & 3);
        let high_clear = ((hmask[l] >> (e / 32)) & 1) == 0;
        if high_clear { low - 4 } else { low }
    };
    let sumi = grouped_sum(&x, 16, scale, level);
    (d * x.d) * sumi as f32
}

/// Q4_K / Q5_K: 6-bit scale and min of sub-block `j` (0..8).
fn k4_scale_min(scales: &[u8], j: usize) -> (i32, i32) {
    let (sc, m) = if j < 4 {
        (scales[j] & 63, scales[j + 4] & 63)
    } else {
        (
            (scales[j + 4] & 0x0F) | ((scales[j - 4] >> 2) & 0x30),
            (scales[j + 4] >> 4) | ((scales[j] >> 2) & 0x30),
        )
    };
    (i32::from(sc), i32::from(m))
}

/// Q4_K / Q5_K: `(d_w * d_x) * f32(sum sc * dot) - (dmin_w * d_x) *
/// f32(sum m * bsum)` over eight 32-element sub-blocks.
fn q45_k(w: &[u8], x: &[u8], five: bool) -> f32 {
    let x = Q8K::new(x);
    let (d, dmin) = (f16_at(w, 0), f16_at(w, 2));
    let scales = &w[4..16];
    let (qh, qs) = if five {
        (&w[16..48], &w[48..176])
    } else {
        (&w[16..16], &w[16..144])
    };
    let level = |e: usize| {
        let (chunk, hi, l) = (e / 64, (e / 32) % 2, e % 32);
        let low = (qs[chunk * 32 + l] >> (4 * hi)) & 0x0F;
        let high = if five { (qh[l] >> (e / 32)) & 1 } else { 0 };
        i32::from(low | (high << 4))
    };
    let sumi = grouped_sum(&x, 8, |j| k4_scale_min(scales, j).0, level);
    let mins: i32 = (0..16)
        .map(|g| x.bsum(g) * k4_scale_min(scales, g / 2).1)
        .sum();
    (d * x.d) * sumi as f32 - (dmin * x.d) * mins as f32
}

/// Q6_K: `(d_w * d_x) * f32(sum sc * dot)` with i8 scales of 16 elements
/// and levels in -32..=31.
fn q6_k(w: &[u8], x: &[u8]) -> f32 {
    let x = Q8K::new(x);
    let (ql, qh, scales) = (&w[..128], &w[128..192], &w[192..208]);
    let d = f16_at(w, 208);
    let level = |e: usize| {
        let (half, within) = (e / 128, e % 128);
        let low = (ql[half * 64 + within % 64] >> (4 * (within / 64))) & 0x0F;
        let high = (qh[half * 32 + within % 32] >> (2 * (within / 32))) & 3;
        i32::from(low | (high << 4)) - 32
    };
    let sumi = grouped_sum(&x, 16, |g| i32::from(scales[g] as i8), level);
    (d * x.d) * sumi as f32
}
