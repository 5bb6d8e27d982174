//! Dequantize for the i-quants. Each follows gguf-py's arithmetic order:
//! the group scale first (e.g. `d * (0.5 + ls) * 0.25`), then times the
//! grid value, then the sign.

use super::bytes::{f16_at, u16_at, u32_at};
use super::iq_grids::{
    IQ1S_DELTA, IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID,
    KSIGNS_IQ2XS, KVALUES_IQ4NL,
};

fn signed(value: f32, signs: u8, bit: usize) -> f32 {
    if (signs >> bit) & 1 == 1 {
        -value
    } else {
        value
    }
}

pub(super) fn dequantize_iq2_xxs(block: &[u8], out: &mut [f32]) {
    let d = f16_at(block, 0);
    for (ib32, chunk) in out.chunks_exact_mut(32).enumerate() {
        let grid_indices = &block[2 + 8 * ib32..2 + 8 * ib32 + 4];
        let aux = u32_at(block, 2 + 8 * ib32 + 4);
        let db = d * (0.5 + (aux >> 28) as f32) * 0.25;
        for (l, group) in chunk.chunks_exact_mut(8).enumerate() {
            let grid = &IQ2XXS_GRID[usize::from(grid_indices[l])];
            let signs = KSIGNS_IQ2XS[((aux >> (7 * l)) & 127) as usize];
            for (j, o) in group.iter_mut().enumerate() {
                *o = signed(db * f32::from(grid[j]), signs, j);
            }
        }
    }
}

/// Sixteen 4-bit scales, two per byte, each covering 16 elements.
fn nibble_scale(scales: &[u8], i: usize) -> u8 {
    (scales[i / 2] >> (4 * (i % 2))) & 0x0F
}

pub(super) fn dequantize_iq2_xs(block: &[u8], out: &mut [f32]) {
    let d = f16_at(block, 0);
    let scales = &block[66..74];
    for (g, group) in out.chunks_exact_mut(8).enumerate() {
        let packed = u16_at(block, 2 + 2 * g);
        let grid = &IQ2XS_GRID[usize::from(packed & 511)];
        let signs = KSIGNS_IQ2XS[usize::from(packed >> 9)];
        let db = d * (0.5 + f32::from(nibble_scale(scales, g / 2))) * 0.25;
        for (j, o) in group.iter_mut().enumerate() {
            *o = signed(db * f32::from(grid[j]), signs, j);
        }
    }
}

pub(super) fn dequantize_iq2_s(block: &[u8], out: &mut [f32]) {
    let d = f16_at(block, 0);
    let (qs, signs, qh, scales) = (
        &block[2..34],
        &block[34..66],
        &block[66..74],
        &block[74..82],
    );
    for (g, group) in out.chunks_exact_mut(8).enumerate() {
        let high = u16::from((qh[g / 4] >> (2 * (g % 4))) & 3);
        let grid = &IQ2S_GRID[usize::from(u16::from(qs[g]) | (high << 8))];
        let db = d * (0.5 + f32::from(nibble_scale(scales, g / 2))) * 0.25;
        for (j, o) in group.iter_mut().enumerate() {
            *o = signed(db * f32::from(grid[j]), signs[g], j);
        }
    }
}

pub(super) fn dequantize_iq3_xxs(block: &[u8], out: &mut [f32]) {
    let d = f16_at(block, 0);
    let qs = &block[2..66];
    for (ib32, chunk) in out.chunks_exact_mut(32).enumerate() {
        let aux = u32_at(block, 66 + 4 * ib32);
        let db = d * (0.5 + (aux >> 28) as f32) * 0.5;
        for (l, group) in chunk.chunks_exact_mut(8).enumerate() {
            let signs = KSIGNS_IQ2XS[((aux >> (7 * l)) & 127) as usize];
            for (j, o) in group.iter_mut().enumerate() {
                let grid = &IQ3XXS_GRID[usize::from(qs[8 * ib32 + 2 * l + j / 4])];
                *o = signed(db * f32::from(grid[j % 4]), signs, j);
            }
        }
    }
}

pub(super) fn dequantize_iq3_s(block: &[u8], out: &mut [f32]) {
    let d = f16_at(block, 0);
    let (qs, qh, signs, scales) = (
        &block[2..66],
        &block[66..74],
        &block[74..106],
        &block[106..110],
    );
    for (e, o) in out.iter_mut().enumerate() {
        let g = e / 4;
        let high = u16::from((qh[g / 8] >> (g % 8)) & 1);
        let grid = &IQ3S_GRID[usize::from(u16::from(qs[g]) | (high << 8))];
        let db = d * f32::from(1 + 2 * nibble_scale(scales, e / 32));
        *o = signed(db * f32::from(grid[e % 4]), signs[e / 8], e % 8);
    }
}

pub(super) fn dequantize_iq1_s(block: &[u8], out: &mut [f32]) {
    let d = f16_at(block, 0);
    let qs = &block[2..34];
    for (ib, chunk) in out.chunks_exact_mut(32).enumerate() {
        let qh = u16_at(block, 34 + 2 * ib);
        let dl = d * f32::from(2 * ((qh >> 12) & 7) + 1);
        let delta = if qh & 0x8000 == 0 {
            IQ1S_DELTA
        } else {
            -IQ1S_DELTA
        };
        for (k, group) in chunk.chunks_exact_mut(8).enumerate() {
            let index = u16::from(qs[4 * ib + k]) | (((qh >> (3 * k)) & 7) << 8);
            let grid = &IQ1S_GRID[usize::from(index)];
            for (o, &v) in group.iter_mut().zip(grid) {
                *o = dl * (f32::from(v) + delta);
            }
        }
    }
}

/// IQ1_M keeps its f16 super-scale in the top nibbles of the four scale
/// words.
pub(super) fn iq1_m_scale(scales: &[u8]) -> f32 {
    let word = |i: usize| u16_at(scales, 2 * i);
    let bits = (word(0) >> 12)
        | ((word(1) >> 8) & 0x00F0)
        | ((word(2) >> 4) & 0x0F00)
        | (word(3) & 0xF000);
    half::f16::from_bits(bits).to_f32()
}

pub(super) fn dequantize_iq1_m(block: &[u8], out: &mut [f32]) {
    let (qs, qh, scales) = (&block[..32], &block[32..48], &block[48..56]);
    let d = iq1_m_scale(scales);
    for (g, group) in out.chunks_exact_mut(8).enumerate() {
        // Sixteen 3-bit scales, one per 16 elements.
        let s = g / 2;
        let sc = (u16_at(scales, 2 * (s / 4)) >> (3 * (s % 4))) & 7;
        let dl = d * f32::from(2 * sc + 1);
        let nib = (qh[g / 2] >> (4 * (g % 2))) & 0x0F;
        let index = u16::from(qs[g]) | (u16::from(nib & 7) << 8);
        let delta = if nib & 8 == 0 {
            IQ1S_DELTA
        } else {
            -IQ1S_DELTA
        };
        for (o, &v) in group.iter_mut().zip(&IQ1S_GRID[usize::from(index)]) {
            *o = dl * (f32::from(v) + delta);
        }
    }
}

pub(super) fn dequantize_iq4_nl(block: &[u8], out: &mut [f32]) {
    let d = f16_at(block, 0);
    let qs = &block[2..18];
    for (j, o) in out.iter_mut().enumerate() {
        let level = if j < 16 {
            qs[j] & 0x0F
        } else {
            qs[j - 16] >> 4
        };
        *o = d * f32::from(KVALUES_IQ4NL[usize::from(level)]);
    }
}

pub(super) fn iq4_xs_scale(block: &[u8], ib: usize) -> i8 {
    let scales_h = u16_at(block, 2);
    let low = (block[4 + ib / 2] >> (4 * (ib % 2))) & 0x0F;
    let high = ((scales_h >> (2 * ib)) & 3) as u8;
    (low | (high << 4)) as i8 - 32
}

pub(super) fn dequantize_iq4_xs(block: &[u8], out: &mut [f32]) {
    let d = f16_at(block, 0);
    let qs = &block[8..136];
    for (ib, chunk) in out.chunks_exact_mut(32).enumerate() {
        let dl = d * f32::from(iq4_xs_scale(block, ib));
        for (j, o) in chunk.iter_mut().enumerate() {
            let byte = qs[16 * ib + j % 16];
            let level = if j < 16 { byte & 0x0F } else { byte >> 4 };
            *o = dl * f32::from(KVALUES_IQ4NL[usize::from(level)]);
        }
    }
}
