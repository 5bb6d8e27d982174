//! The portable kernels: the executable statement of the numerics (module
//! docs of `qmatmul`). Every SIMD kernel must equal these bit for bit.
//!
//! One weight row times one activation row: per block, integer lane sums
//! (see [`lanes_32`] and [`k_lanes`]), then the format's FMAs into the
//! accumulators of [`RowAcc`], then the format's final reduction.

use half::f16;
use phobos_quant::{GgmlType, QK_K};

/// ggml's non-linear 4-bit levels of IQ4_NL / IQ4_XS (a format constant).
pub(super) const KVALUES_IQ4NL: [i8; 16] = [
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
];

pub(super) fn f16_at(bytes: &[u8], offset: usize) -> f32 {
    f16::from_bits(u16::from_le_bytes([bytes[offset], bytes[offset + 1]])).to_f32()
}

pub(super) fn f32_at(bytes: &[u8], offset: usize) -> f32 {
    f32::from_le_bytes([
        bytes[offset],
        bytes[offset + 1],
        bytes[offset + 2],
        bytes[offset + 3],
    ])
}

fn i16_at(bytes: &[u8], offset: usize) -> i32 {
    i32::from(i16::from_le_bytes([bytes[offset], bytes[offset + 1]]))
}

/// Q8_K block: the 16 sums of 16 levels.
pub(super) fn q8k_bsums(block: &[u8]) -> [i32; 16] {
    std::array::from_fn(|i| i16_at(block, 4 + QK_K + 2 * i))
}

/// The accumulators of one row dot: eight lanes (and a second set for
/// IQ4_NL's two-accumulator order), four min lanes (Q4_K), one scalar
/// (Q4_1, Q5_1, Q5_K).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct RowAcc {
    pub lanes: [f32; 8],
    pub lanes_odd: [f32; 8],
    pub mins: [f32; 4],
    pub scalar: f32,
}

/// AVX's horizontal sum of eight floats: high half onto low half, then
/// pairs.
pub(super) fn hsum8(a: [f32; 8]) -> f32 {
    ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]))
}

pub(super) fn hsum4(a: [f32; 4]) -> f32 {
    (a[0] + a[2]) + (a[1] + a[3])
}

pub(super) fn fma_lanes(acc: &mut [f32; 8], d: f32, lanes: [i32; 8]) {
    for (a, &l) in acc.iter_mut().zip(&lanes) {
        *a = d.mul_add(l as f32, *a);
    }
}

/// Lane `l` = the products at positions `4l..4l+4` of a 32-element block.
pub(super) fn lanes_32(w: &[i8; 32], a: &[u8]) -> [i32; 8] {
    std::array::from_fn(|l| {
        (4 * l..4 * l + 4)
            .map(|b| i32::from(w[b]) * i32::from(a[b] as i8))
            .sum()
    })
}

/// Lane `l` over a 256-element block: for every 32-element chunk `c`, the
/// products at `32c + 4l..32c+4l+4`, times the 16-element sub-block scale
/// `scales16[2c + l/4]` they lie in.
pub(super) fn k_lanes(levels: &[i8; QK_K], scales16: &[i32; 16], a: &[u8]) -> [i32; 8] {
    std::array::from_fn(|l| {
        (0..8)
            .map(|c| {
                let part: i32 = (32 * c + 4 * l..32 * c + 4 * l + 4)
                    .map(|e| i32::from(levels[e]) * i32::from(a[e] as i8))
                    .sum();
                scales16[2 * c + l / 4] * part
            })
            .sum()
    })
}

/// The nibble of element `j` of 16 packed bytes: low nibbles hold 0..16.
fn nibble(qs: &[u8], j: usize) -> u8 {
    if j < 16 {
        qs[j] & 0x0F
    } else {
        qs[j - 16] >> 4
    }
}

fn fifth_bit(qh: u32, j: usize) -> u8 {
    (((qh >> j) & 1) as u8) << 4
}

/// The little-endian u32 at `offset` (bounds-checked); the x86 kernels'
/// too.
#[inline(always)]
pub(super) fn u32_at(bytes: &[u8], offset: usize) -> u32 {
    u32::from_le_bytes([
        bytes[offset],
        bytes[offset + 1],
        bytes[offset + 2],
        bytes[offset + 3],
    ])
}

/// Signed levels of a 32-element weight block (Q4_0, Q5_0, Q8_0, IQ4_NL)
/// or unsigned ones (Q4_1, Q5_1, stored in i8 without loss).
pub(super) fn levels_32(ty: GgmlType, w: &[u8]) -> [i8; 32] {
    std::array::from_fn(|j| match ty {
        GgmlType::Q4_0 => nibble(&w[2..], j) as i8 - 8,
        GgmlType::Q4_1 => nibble(&w[4..], j) as i8,
        GgmlType::Q5_0 => (nibble(&w[6..], j) | fifth_bit(u32_at(w, 2), j)) as i8 - 16,
        GgmlType::Q5_1 => (nibble(&w[8..], j) | fifth_bit(u32_at(w, 4), j)) as i8,
        GgmlType::IQ4_NL => KVALUES_IQ4NL[usize::from(nibble(&w[2..], j))],
        _ => w[2 + j] as i8,
    })
}

/// Q4_K / Q5_K: 6-bit scale and min of 32-element sub-block `j`.
pub(super) fn k4_scale_min(scales: &[u8], j: usize) -> (i32, i32) {
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

/// The integer parts of one 256-element weight block: levels as the AVX2
/// kernels multiply them, the 16-element scales, and the block scales.
pub(super) struct KBlock {
    pub levels: [i8; QK_K],
    pub scales16: [i32; 16],
    /// Q2_K: the 16 mins; Q4_K/Q5_K: the 8 mins in 0..8.
    pub mins: [i32; 16],
    pub d: f32,
    pub dmin: f32,
}

pub(super) fn unpack_k(ty: GgmlType, w: &[u8]) -> KBlock {
    let mut levels = [0i8; QK_K];
    let mut scales16 = [0i32; 16];
    let mut mins = [0i32; 16];
    let (d, dmin);
    match ty {
        GgmlType::Q2_K => {
            let (scales, qs) = (&w[..16], &w[16..80]);
            for (e, level) in levels.iter_mut().enumerate() {
                let (half, shift, l) = (e / 128, (e / 32) % 4, e % 32);
                *level = ((qs[half * 32 + l] >> (2 * shift)) & 3) as i8;
            }
            for i in 0..16 {
                scales16[i] = i32::from(scales[i] & 0x0F);
                mins[i] = i32::from(scales[i] >> 4);
            }
            (d, dmin) = (f16_at(w, 80), f16_at(w, 82));
        }
        GgmlType::Q3_K => {
            let (hmask, qs, scales) = (&w[..32], &w[32..96], &w[96..108]);
            for (e, level) in levels.iter_mut().enumerate() {
                let (half, shift, l) = (e / 128, (e / 32) % 4, e % 32);
                let low = ((qs[half * 32 + l] >> (2 * shift)) & 3) as i8;
                let no_high = ((hmask[l] >> (e / 32)) & 1) ^ 1;
                *level = low - ((no_high << 2) as i8);
            }
            for (i, s) in scales16.iter_mut().enumerate() {
                let low = (scales[i % 8] >> (4 * (i / 8))) & 0x0F;
                let high = (scales[8 + i % 4] >> (2 * (i / 4))) & 0x03;
                *s = i32::from(low | (high << 4)) - 32;
            }
            (d, dmin) = (f16_at(w, 108), 0.0);
        }
        GgmlType::Q4_K | GgmlType::Q5_K => {
            let scales = &w[4..16];
            let (qh, qs) = if ty == GgmlType::Q5_K {
                (Some(&w[16..48]), &w[48..176])
            } else {
                (None, &w[16..144])
            };
            for (e, level) in levels.iter_mut().enumerate() {
                let (chunk, hi, l) = (e / 64, (e / 32) % 2, e % 32);
                let low = (qs[chunk * 32 + l] >> (4 * hi)) & 0x0F;
                let high = qh.map_or(0, |qh| ((qh[l] >> (e / 32)) & 1) << 4);
                *level = (low | high) as i8;
            }
            for j in 0..8 {
                let (sc, m) = k4_scale_min(scales, j);
                scales16[2 * j] = sc;
                scales16[2 * j + 1] = sc;
                mins[j] = m;
            }
            (d, dmin) = (f16_at(w, 0), f16_at(w, 2));
        }
        GgmlType::Q6_K => {
            let (ql, qh, scales) = (&w[..128], &w[128..192], &w[192..208]);
            for (e, level) in levels.iter_mut().enumerate() {
                let (half, within) = (e / 128, e % 128);
                let low = (ql[half * 64 + within % 64] >> (4 * (within / 64))) & 0x0F;
                let high = (qh[half * 32 + within % 32] >> (2 * (within / 32))) & 3;
                *level = (low | (high << 4)) as i8;
            }
            for (s, &b) in scales16.iter_mut().zip(scales) {
                *s = i32::from(b as i8);
            }
            (d, dmin) = (f16_at(w, 208), 0.0);
        }
        _ => {
            // IQ4_XS
            let scales_h = u32::from(u16::from_le_bytes([w[2], w[3]]));
            let qs = &w[8..136];
            for (e, level) in levels.iter_mut().enumerate() {
                let (ib, j) = (e / 32, e % 32);
                let byte = qs[16 * ib + j % 16];
                let n = if j < 16 { byte & 0x0F } else { byte >> 4 };
                *level = KVALUES_IQ4NL[usize::from(n)];
            }
            for ib in 0..8 {
                let low = (w[4 + ib / 2] >> (4 * (ib % 2))) & 0x0F;
                let high = ((scales_h >> (2 * ib)) & 3) as u8;
                let ls = i32::from(low | (high << 4)) - 32;
                scales16[2 * ib] = ls;
                scales16[2 * ib + 1] = ls;
            }
            (d, dmin) = (f16_at(w, 0), 0.0);
        }
    }
    KBlock {
        levels,
        scales16,
        mins,
        d,
        dmin,
    }
}

/// Folds one 256-element block into `acc`, ggml's AVX2 order per format.
pub(super) fn k_block(ty: GgmlType, w: &[u8], a: &[u8], acc: &mut RowAcc) {
    let kb = unpack_k(ty, w);
    let yd = f32_at(a, 0);
    let aq = &a[4..4 + QK_K];
    let bsums = q8k_bsums(a);
    let mut main = k_lanes(&kb.levels, &kb.scales16, aq);
    match ty {
        GgmlType::Q2_K => {
            let mins: [i32; 8] = std::array::from_fn(|l| {
                kb.mins[2 * l] * bsums[2 * l] + kb.mins[2 * l + 1] * bsums[2 * l + 1]
            });
            fma_lanes(&mut acc.lanes, -yd * kb.dmin, mins);
            fma_lanes(&mut acc.lanes, yd * kb.d, main);
        }
        GgmlType::Q4_K => {
            for t in 0..4 {
                let prod = kb.mins[2 * t] * (bsums[4 * t] + bsums[4 * t + 1])
                    + kb.mins[2 * t + 1] * (bsums[4 * t + 2] + bsums[4 * t + 3]);
                acc.mins[t] = (-yd * kb.dmin).mul_add(prod as f32, acc.mins[t]);
            }
            fma_lanes(&mut acc.lanes, yd * kb.d, main);
        }
        GgmlType::Q5_K => {
            let total: i32 = (0..8)
                .map(|j| kb.mins[j] * (bsums[2 * j] + bsums[2 * j + 1]))
                .sum();
            acc.scalar = (-yd * kb.dmin).mul_add(total as f32, acc.scalar);
            fma_lanes(&mut acc.lanes, yd * kb.d, main);
        }
        GgmlType::Q6_K => {
            // The -32 offset, subtracted per lane by 32-element chunk.
            for (l, m) in main.iter_mut().enumerate() {
                *m -= 32
                    * (kb.scales16[2 * l] * bsums[2 * l]
                        + kb.scales16[2 * l + 1] * bsums[2 * l + 1]);
            }
            fma_lanes(&mut acc.lanes, yd * kb.d, main);
        }
        // Q3_K, IQ4_XS: the offsets are in the signed levels.
        _ => fma_lanes(&mut acc.lanes, kb.d * yd, main),
    }
}

/// Whether format `ty` follows the batch order ([`batch_row_dot`], ggml's
/// `ggml-cpu/tiled` numerics) rather than `vec_dot`'s lanes
/// ([`row_dot`]): the 256-element formats with an integer form, at every
/// activation row count, so a row's result never depends on its batch.
pub(super) fn batch_order(ty: GgmlType) -> bool {
    matches!(
        ty,
        GgmlType::Q2_K
            | GgmlType::Q3_K
            | GgmlType::Q4_K
            | GgmlType::Q5_K
            | GgmlType::Q6_K
            | GgmlType::IQ4_XS
    )
}

/// Whether the batch order's term has a min part (`dmin * s2`).
pub(super) fn batch_has_min(ty: GgmlType) -> bool {
    matches!(ty, GgmlType::Q2_K | GgmlType::Q4_K | GgmlType::Q5_K)
}

/// One 256-element block's exact integer sums in the batch order: `s1 =
/// sum_g sc_g * sum_{i in g} w_i x_i` over the signed levels (Q6_K's
/// offset of 32 applied through the block sums) and `s2 = sum_g mn_g *
/// bsum_g` (zero for formats without mins).
pub(super) fn batch_block_sums(ty: GgmlType, kb: &KBlock, a: &[u8]) -> (i32, i32) {
    let aq = &a[4..4 + QK_K];
    let bsums = q8k_bsums(a);
    let mut s1: i32 = (0..16)
        .map(|g| {
            let part: i32 = (16 * g..16 * g + 16)
                .map(|e| i32::from(kb.levels[e]) * i32::from(aq[e] as i8))
                .sum();
            kb.scales16[g] * part
        })
        .sum();
    if ty == GgmlType::Q6_K {
        s1 -= 32 * (0..16).map(|g| kb.scales16[g] * bsums[g]).sum::<i32>();
    }
    let s2 = match ty {
        GgmlType::Q2_K => (0..16).map(|g| kb.mins[g] * bsums[g]).sum(),
        GgmlType::Q4_K | GgmlType::Q5_K => (0..8)
            .map(|j| kb.mins[j] * (bsums[2 * j] + bsums[2 * j + 1]))
            .sum(),
        _ => 0,
    };
    (s1, s2)
}

/// Folds one block's batch-order term into `acc` (ggml's AVX2 + FMA
/// tiled epilogue): `t = d * f32(s1)`, `t = fma(-dmin, f32(s2), t)` for
/// formats with mins, `acc = fma(t, dx, acc)`.
#[inline(always)]
pub(super) fn batch_fold(acc: f32, d: f32, dmin: Option<f32>, s1: i32, s2: i32, dx: f32) -> f32 {
    let mut term = d * s1 as f32;
    if let Some(dmin) = dmin {
        term = (-dmin).mul_add(s2 as f32, term);
    }
    term.mul_add(dx, acc)
}

/// One weight row times one Q8_K activation row in the batch order: each
/// block's term (see [`batch_fold`]) added in block order into one f32,
/// starting from zero.
pub(super) fn batch_row_dot(ty: GgmlType, w_row: &[u8], a_row: &[u8]) -> f32 {
    let w_bytes = ty.info().block_bytes;
    let a_blocks = a_row.chunks_exact(super::activations::Q8_K_BYTES);
    let has_min = batch_has_min(ty);
    let mut acc = 0.0f32;
    for (w, a) in w_row.chunks_exact(w_bytes).zip(a_blocks) {
        let kb = unpack_k(ty, w);
        let (s1, s2) = batch_block_sums(ty, &kb, a);
        let dmin = has_min.then_some(kb.dmin);
        acc = batch_fold(acc, kb.d, dmin, s1, s2, f32_at(a, 0));
    }
    acc
}

/// Folds block `index` of a 32-element format into `acc`.
pub(super) fn block_32(
    ty: GgmlType,
    w: &[u8],
    a: &[u8],
    index: usize,
    single_row: bool,
    acc: &mut RowAcc,
) {
    let levels = levels_32(ty, w);
    let (wd, ad) = (f16_at(w, 0), f16_at(a, 0));
    match ty {
        GgmlType::Q4_1 | GgmlType::Q5_1 => {
            let lanes = lanes_32(&levels, &a[4..36]);
            fma_lanes(&mut acc.lanes, wd * ad, lanes);
            acc.scalar = f16_at(w, 2).mul_add(f16_at(a, 2), acc.scalar);
        }
        GgmlType::IQ4_NL if single_row => {
            let lanes = lanes_32(&levels, &a[2..34]);
            let target = if index.is_multiple_of(2) {
                &mut acc.lanes
            } else {
                &mut acc.lanes_odd
            };
            fma_lanes(target, ad * wd, lanes);
        }
        _ => fma_lanes(&mut acc.lanes, wd * ad, lanes_32(&levels, &a[2..34])),
    }
}

/// IQ4_NL's single-row tail: the odd last block `w` (times Q8_0 block `a`)
/// as one integer sum added to the reduced `sum` with one FMA.
pub(super) fn iq4nl_add_tail(w: &[u8], a: &[u8], sum: f32) -> f32 {
    let total: i32 = lanes_32(&levels_32(GgmlType::IQ4_NL, w), &a[2..34])
        .iter()
        .sum();
    (f16_at(a, 0) * f16_at(w, 0)).mul_add(total as f32, sum)
}

/// One weight row (whole blocks of `ty`) times one quantized activation
/// row (whole blocks of the partner type).
pub(super) fn row_dot(ty: GgmlType, w_row: &[u8], a_row: &[u8], single_row: bool) -> f32 {
    let w_bytes = ty.info().block_bytes;
    let mut acc = RowAcc::default();
    if ty.info().block_len == QK_K {
        let a_blocks = a_row.chunks_exact(super::activations::Q8_K_BYTES);
        for (w, a) in w_row.chunks_exact(w_bytes).zip(a_blocks) {
            k_block(ty, w, a, &mut acc);
        }
        return match ty {
            GgmlType::Q4_K => hsum8(acc.lanes) + hsum4(acc.mins),
            GgmlType::Q5_K => hsum8(acc.lanes) + acc.scalar,
            _ => hsum8(acc.lanes),
        };
    }
    let a_bytes = match ty {
        GgmlType::Q4_1 | GgmlType::Q5_1 => super::activations::Q8_1_BYTES,
        _ => super::activations::Q8_0_BYTES,
    };
    let n_blocks = w_row.len() / w_bytes;
    if ty == GgmlType::IQ4_NL && single_row {
        // ggml's vec_dot: block pairs into two accumulators, an odd last
        // block as a scalar tail after the horizontal sum.
        let paired = n_blocks & !1;
        let blocks = w_row.chunks_exact(w_bytes).zip(a_row.chunks_exact(a_bytes));
        for (index, (w, a)) in blocks.take(paired).enumerate() {
            block_32(ty, w, a, index, true, &mut acc);
        }
        let both: [f32; 8] = std::array::from_fn(|l| acc.lanes[l] + acc.lanes_odd[l]);
        let mut sum = hsum8(both);
        if paired < n_blocks {
            sum = iq4nl_add_tail(&w_row[paired * w_bytes..], &a_row[paired * a_bytes..], sum);
        }
        return sum;
    }
    let blocks = w_row.chunks_exact(w_bytes).zip(a_row.chunks_exact(a_bytes));
    for (index, (w, a)) in blocks.enumerate() {
        block_32(ty, w, a, index, single_row, &mut acc);
    }
    match ty {
        GgmlType::Q4_1 | GgmlType::Q5_1 => hsum8(acc.lanes) + acc.scalar,
        _ => hsum8(acc.lanes),
    }
}
