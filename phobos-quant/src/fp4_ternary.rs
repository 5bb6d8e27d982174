//! The ternary formats (TQ1_0, TQ2_0) and the 4-bit float formats (MXFP4,
//! NVFP4).

use super::bytes::{f16_at, put_f16};
use super::iq_grids::KVALUES_MXFP4;
use super::legacy::round_half_away;

const POW3: [u8; 5] = [1, 3, 9, 27, 81];

/// A base-3 digit stored as a fixed-point fraction: multiplying by 3^k
/// (wrapping) shifts digit k to the top, and `* 3 >> 8` reads it.
fn ternary_digit(byte: u8, k: usize) -> i8 {
    let shifted = byte.wrapping_mul(POW3[k]);
    ((u16::from(shifted) * 3) >> 8) as i8 - 1
}

pub(super) fn dequantize_tq1_0(block: &[u8], out: &mut [f32]) {
    let (qs, qh) = (&block[..48], &block[48..52]);
    let d = f16_at(block, 52);
    for (e, o) in out.iter_mut().enumerate() {
        let q = match e {
            0..160 => ternary_digit(qs[e % 32], e / 32),
            160..240 => ternary_digit(qs[32 + (e - 160) % 16], (e - 160) / 16),
            _ => ternary_digit(qh[(e - 240) % 4], (e - 240) / 4),
        };
        *o = d * f32::from(q);
    }
}

pub(super) fn dequantize_tq2_0(block: &[u8], out: &mut [f32]) {
    let qs = &block[..64];
    let d = f16_at(block, 64);
    for (e, o) in out.iter_mut().enumerate() {
        let (half, shift, l) = (e / 128, (e / 32) % 4, e % 32);
        let q = ((qs[half * 32 + l] >> (2 * shift)) & 3) as i8 - 1;
        *o = d * f32::from(q);
    }
}

/// Ternary levels -1, 0, 1 as 0, 1, 2, with d = max |x|.
fn ternary_levels(x: &[f32]) -> (f32, Vec<u8>) {
    let d = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let id = if d == 0.0 { 0.0 } else { 1.0 / d };
    (
        d,
        x.iter()
            .map(|&v| (round_half_away(v * id) as i8 + 1) as u8)
            .collect(),
    )
}

/// Packs five (or four) ternary digits into one byte as a fraction of
/// 3^5 rounded up, so `ternary_digit` reads them back.
fn pack_ternary(digits: impl Iterator<Item = u8>, weights: &[u8]) -> u8 {
    let value: u16 = digits
        .zip(weights)
        .map(|(q, &w)| u16::from(q) * u16::from(w))
        .sum();
    (value * 256).div_ceil(243) as u8
}

pub(super) fn quantize_tq1_0(x: &[f32], out: &mut Vec<u8>) {
    const W5: [u8; 5] = [81, 27, 9, 3, 1];
    const W4: [u8; 4] = [81, 27, 9, 3];
    let (d, q) = ternary_levels(x);
    for l in 0..32 {
        out.push(pack_ternary((0..5).map(|k| q[k * 32 + l]), &W5));
    }
    for l in 0..16 {
        out.push(pack_ternary((0..5).map(|k| q[160 + k * 16 + l]), &W5));
    }
    for l in 0..4 {
        out.push(pack_ternary((0..4).map(|k| q[240 + k * 4 + l]), &W4));
    }
    put_f16(out, d);
}

pub(super) fn quantize_tq2_0(x: &[f32], out: &mut Vec<u8>) {
    let (d, q) = ternary_levels(x);
    for half in 0..2 {
        for l in 0..32 {
            let byte = (0..4).fold(0u8, |b, s| b | (q[half * 128 + s * 32 + l] << (2 * s)));
            out.push(byte);
        }
    }
    put_f16(out, d);
}

/// E8M0 exponent byte to the block scale, halved because the e2m1 levels
/// are stored doubled.
pub(super) fn e8m0_to_f32_half(e: u8) -> f32 {
    let bits = if e < 2 {
        0x0020_0000u32 << e
    } else {
        u32::from(e - 1) << 23
    };
    f32::from_bits(bits)
}

fn fp4_level(qs: &[u8], j: usize) -> f32 {
    let nib = if j < qs.len() {
        qs[j] & 0x0F
    } else {
        qs[j - qs.len()] >> 4
    };
    f32::from(KVALUES_MXFP4[usize::from(nib)])
}

pub(super) fn dequantize_mxfp4(block: &[u8], out: &mut [f32]) {
    let d = e8m0_to_f32_half(block[0]);
    for (j, o) in out.iter_mut().enumerate() {
        *o = d * fp4_level(&block[1..17], j);
    }
}

/// Unsigned E4M3 sub-block scale (bias 7), halved like MXFP4's; 0x7F is
/// NaN in E4M3 and ggml maps it to zero.
pub(super) fn ue4m3_to_f32_half(x: u8) -> f32 {
    if x == 0 || x == 0x7F {
        return 0.0;
    }
    let exp = i32::from((x >> 3) & 0x0F);
    let man = f32::from(x & 7);
    let raw = if exp == 0 {
        man * (2.0f32).powi(-9)
    } else {
        (1.0 + man / 8.0) * (2.0f32).powi(exp - 7)
    };
    raw * 0.5
}

pub(super) fn dequantize_nvfp4(block: &[u8], out: &mut [f32]) {
    for (s, chunk) in out.chunks_exact_mut(16).enumerate() {
        let d = ue4m3_to_f32_half(block[s]);
        let qs = &block[4 + 8 * s..12 + 8 * s];
        for (j, o) in chunk.iter_mut().enumerate() {
            *o = d * fp4_level(qs, j);
        }
    }
}

/// gguf-py's MXFP4 reference: shared exponent floor(log2(max|x|)) - 2,
/// then each element takes the nearest of the 16 levels (first on ties).
pub(super) fn quantize_mxfp4(x: &[f32], out: &mut Vec<u8>) {
    let amax = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let e = if amax > 0.0 {
        (amax.log2().floor() - 2.0 + 127.0) as i32
    } else {
        0
    };
    let e = e.clamp(0, 255) as u8;
    let d = e8m0_to_f32_half(e);
    let nearest = |v: f32| {
        let mut best = (0usize, f32::INFINITY);
        for (i, &k) in KVALUES_MXFP4.iter().enumerate() {
            let err = (d * f32::from(k) - v).abs();
            if err < best.1 {
                best = (i, err);
            }
        }
        best.0 as u8
    };
    out.push(e);
    for j in 0..16 {
        out.push(nearest(x[j]) | (nearest(x[j + 16]) << 4));
    }
}

/// Q1_0: 128 signs sharing one f16 magnitude (set bit = +d).
pub(super) fn dequantize_q1_0(block: &[u8], out: &mut [f32]) {
    let d = f16_at(block, 0);
    for (j, o) in out.iter_mut().enumerate() {
        *o = if (block[2 + j / 8] >> (j % 8)) & 1 == 1 {
            d
        } else {
            -d
        };
    }
}

/// The magnitude that minimises squared error for fixed signs: mean |x|.
pub(super) fn quantize_q1_0(x: &[f32], out: &mut Vec<u8>) {
    let mean_abs = x.iter().map(|v| v.abs()).sum::<f32>() / x.len() as f32;
    put_f16(out, mean_abs);
    for byte in x.chunks_exact(8) {
        out.push(
            byte.iter()
                .enumerate()
                .fold(0u8, |b, (i, &v)| b | (u8::from(v >= 0.0) << i)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ternary_packing_reads_back_every_digit_combination() {
        const W5: [u8; 5] = [81, 27, 9, 3, 1];
        for value in 0..243u16 {
            let digits: Vec<u8> = (0..5)
                .map(|k| ((value / u16::from(W5[k])) % 3) as u8)
                .collect();
            let byte = pack_ternary(digits.iter().copied(), &W5);
            for (k, &dgt) in digits.iter().enumerate() {
                assert_eq!(
                    ternary_digit(byte, k),
                    dgt as i8 - 1,
                    "value {value} digit {k}"
                );
            }
        }
    }

    #[test]
    fn e8m0_half_scales_are_powers_of_two() {
        assert_eq!(e8m0_to_f32_half(127), 0.5);
        assert_eq!(e8m0_to_f32_half(128), 1.0);
        // 2^-127 and 2^-128 are subnormal: mantissa bits 22 and 21.
        assert_eq!(e8m0_to_f32_half(1), f32::from_bits(1 << 22));
        assert_eq!(e8m0_to_f32_half(0), f32::from_bits(1 << 21));
    }

    #[test]
    fn ue4m3_decodes_normals_subnormals_and_nan_as_zero() {
        assert_eq!(ue4m3_to_f32_half(0x38), 0.5); // exp 7, man 0 -> 1.0, halved
        assert_eq!(ue4m3_to_f32_half(0x01), 2f32.powi(-10));
        assert_eq!(ue4m3_to_f32_half(0x7F), 0.0);
        assert_eq!(ue4m3_to_f32_half(0x7E), 448.0 / 2.0);
    }
}
