//! Reference quantizers for Q2_K..Q6_K.
//!
//! Simpler than ggml's (no iterative scale refinement), with a guarantee
//! instead: scales are rounded *up* so every sub-block's range is covered,
//! then each element takes the nearest level. Affine types (Q2_K, Q4_K,
//! Q5_K) are then within half a sub-block step of the input; symmetric
//! types (Q3_K, Q6_K) map the largest magnitude to the negative end, so an
//! element of the other sign may clamp by up to one step, as in ggml.

use half::f16;

use super::bytes::put_f16;
use super::kquants::nearest_int;
use super::types::QK_K;

/// The smallest f16 not below `v` (v >= 0), as f32.
pub(super) fn f16_ceil(v: f32) -> f32 {
    let h = f16::from_f32(v);
    if h.to_f32() < v {
        f16::from_bits(h.to_bits() + 1).to_f32()
    } else {
        h.to_f32()
    }
}

fn ceil_ratio(num: f32, den: f32, max: u8) -> u8 {
    if den == 0.0 {
        0
    } else {
        ((num / den).ceil().max(0.0) as u32).min(max.into()) as u8
    }
}

/// Affine super-block: per sub-block `x ≈ d*sc*q - dmin*m`, sc and m in
/// 0..=scale_max, q in 0..=q_max.
struct Affine {
    d: f32,
    dmin: f32,
    sc: Vec<u8>,
    m: Vec<u8>,
    q: Vec<u8>,
}

fn affine(x: &[f32], sub_len: usize, q_max: u8, scale_max: u8) -> Affine {
    let subs: Vec<(f32, f32)> = x
        .chunks_exact(sub_len)
        .map(|s| {
            let lo = s.iter().copied().fold(0.0f32, f32::min);
            let hi = s.iter().copied().fold(f32::NEG_INFINITY, f32::max).max(lo);
            (lo, hi)
        })
        .collect();
    let max_min = subs.iter().fold(0.0f32, |a, &(lo, _)| a.max(-lo));
    let dmin = f16_ceil(max_min / f32::from(scale_max));
    let m: Vec<u8> = subs
        .iter()
        .map(|&(lo, _)| ceil_ratio(-lo, dmin, scale_max))
        .collect();
    // The step must cover from the stored (rounded-up) offset to the max.
    let spans: Vec<f32> = subs
        .iter()
        .zip(&m)
        .map(|(&(_, hi), &m)| hi + dmin * f32::from(m))
        .collect();
    let max_step = spans
        .iter()
        .fold(0.0f32, |a, &s| a.max(s / f32::from(q_max)));
    let d = f16_ceil(max_step / f32::from(scale_max));
    let sc: Vec<u8> = spans
        .iter()
        .map(|&s| ceil_ratio(s / f32::from(q_max), d, scale_max))
        .collect();
    let mut q = Vec::with_capacity(x.len());
    for (j, s) in x.chunks_exact(sub_len).enumerate() {
        let (step, offset) = (d * f32::from(sc[j]), dmin * f32::from(m[j]));
        let inv = if step == 0.0 { 0.0 } else { 1.0 / step };
        q.extend(
            s.iter()
                .map(|&v| nearest_int((v + offset) * inv).clamp(0, q_max.into()) as u8),
        );
    }
    Affine { d, dmin, sc, m, q }
}

/// Symmetric super-block: per sub-block `x ≈ d*sc*q`, sc signed in
/// -sc_max..=sc_max, q in q_lo..=q_hi with |q_lo| = q_hi + 1.
fn symmetric(
    x: &[f32],
    sub_len: usize,
    q_lo: i32,
    q_hi: i32,
    sc_max: u8,
) -> (f32, Vec<i8>, Vec<i8>) {
    let scales: Vec<f32> = x
        .chunks_exact(sub_len)
        .map(|s| {
            let mx = s
                .iter()
                .copied()
                .fold(0.0f32, |a, v| if v.abs() > a.abs() { v } else { a });
            mx / q_lo as f32
        })
        .collect();
    let max_scale = scales.iter().fold(0.0f32, |a, s| a.max(s.abs()));
    let d = f16_ceil(max_scale / f32::from(sc_max));
    let sc: Vec<i8> = scales
        .iter()
        .map(|&s| {
            let magnitude = ceil_ratio(s.abs(), d, sc_max) as i8;
            if s < 0.0 { -magnitude } else { magnitude }
        })
        .collect();
    let mut q = Vec::with_capacity(x.len());
    for (j, s) in x.chunks_exact(sub_len).enumerate() {
        let step = d * f32::from(sc[j]);
        let inv = if step == 0.0 { 0.0 } else { 1.0 / step };
        q.extend(
            s.iter()
                .map(|&v| nearest_int(v * inv).clamp(q_lo, q_hi) as i8),
        );
    }
    (d, sc, q)
}

pub(super) fn quantize_q2_k(x: &[f32], out: &mut Vec<u8>) {
    let a = affine(x, 16, 3, 15);
    out.extend(a.sc.iter().zip(&a.m).map(|(&sc, &m)| sc | (m << 4)));
    for half in 0..2 {
        for l in 0..32 {
            out.push((0..4).fold(0u8, |b, s| b | (a.q[half * 128 + s * 32 + l] << (2 * s))));
        }
    }
    put_f16(out, a.d);
    put_f16(out, a.dmin);
}

/// Packs eight 6-bit (scale, min) pairs the way `k4_scale_min` reads them.
fn pack_k4_scales(sc: &[u8], m: &[u8], out: &mut Vec<u8>) {
    let mut packed = [0u8; 12];
    for j in 0..4 {
        packed[j] = (sc[j] & 63) | ((sc[j + 4] >> 4) << 6);
        packed[j + 4] = (m[j] & 63) | ((m[j + 4] >> 4) << 6);
        packed[j + 8] = (sc[j + 4] & 0x0F) | ((m[j + 4] & 0x0F) << 4);
    }
    out.extend_from_slice(&packed);
}

fn pack_low_nibbles(q: &[u8], out: &mut Vec<u8>) {
    for chunk in 0..4 {
        for l in 0..32 {
            let e = chunk * 64 + l;
            out.push((q[e] & 0x0F) | ((q[e + 32] & 0x0F) << 4));
        }
    }
}

pub(super) fn quantize_q4_k(x: &[f32], out: &mut Vec<u8>) {
    let a = affine(x, 32, 15, 63);
    put_f16(out, a.d);
    put_f16(out, a.dmin);
    pack_k4_scales(&a.sc, &a.m, out);
    pack_low_nibbles(&a.q, out);
}

pub(super) fn quantize_q5_k(x: &[f32], out: &mut Vec<u8>) {
    let a = affine(x, 32, 31, 63);
    put_f16(out, a.d);
    put_f16(out, a.dmin);
    pack_k4_scales(&a.sc, &a.m, out);
    for l in 0..32 {
        out.push((0..8).fold(0u8, |b, k| b | ((a.q[k * 32 + l] >> 4) << k)));
    }
    pack_low_nibbles(&a.q, out);
}

pub(super) fn quantize_q3_k(x: &[f32], out: &mut Vec<u8>) {
    let (d, sc, q) = symmetric(x, 16, -4, 3, 31);
    // Stored level q + 4: two low bits in qs, the third in hmask.
    let stored: Vec<u8> = q.iter().map(|&v| (v + 4) as u8).collect();
    for l in 0..32 {
        out.push((0..8).fold(0u8, |b, k| b | ((stored[k * 32 + l] >> 2) << k)));
    }
    for half in 0..2 {
        for l in 0..32 {
            let byte = (0..4).fold(0u8, |b, s| {
                b | ((stored[half * 128 + s * 32 + l] & 3) << (2 * s))
            });
            out.push(byte);
        }
    }
    let mut packed = [0u8; 12];
    for (i, &s) in sc.iter().enumerate() {
        let biased = (s + 32) as u8;
        packed[i % 8] |= (biased & 0x0F) << (4 * (i / 8));
        packed[8 + i % 4] |= ((biased >> 4) & 3) << (2 * (i / 4));
    }
    out.extend_from_slice(&packed);
    put_f16(out, d);
}

pub(super) fn quantize_q6_k(x: &[f32], out: &mut Vec<u8>) {
    let (d, sc, q) = symmetric(x, 16, -32, 31, 127);
    let stored: Vec<u8> = q.iter().map(|&v| (v + 32) as u8).collect();
    let mut ql = [0u8; QK_K / 2];
    let mut qh = [0u8; QK_K / 4];
    for (e, &v) in stored.iter().enumerate() {
        let (half, within) = (e / 128, e % 128);
        ql[half * 64 + within % 64] |= (v & 0x0F) << (4 * (within / 64));
        qh[half * 32 + within % 32] |= (v >> 4) << (2 * (within / 32));
    }
    out.extend_from_slice(&ql);
    out.extend_from_slice(&qh);
    out.extend(sc.iter().map(|&s| s as u8));
    put_f16(out, d);
}

#[cfg(test)]
mod tests {
    use super::super::kquants::{k4_scale_min, nearest_int, q3_k_scale};
    use super::*;

    #[test]
    fn nearest_int_rounds_half_to_even() {
        let cases = [
            (0.5, 0),
            (1.5, 2),
            (2.5, 2),
            (-0.5, 0),
            (-1.5, -2),
            (3.49, 3),
            (-126.6, -127),
        ];
        for (v, want) in cases {
            assert_eq!(nearest_int(v), want, "{v}");
        }
    }

    #[test]
    fn f16_ceil_never_rounds_down() {
        for v in [1e-7f32, 0.1, 0.3333, 1.0, 65000.0, 3.0e-5] {
            let c = f16_ceil(v);
            assert!(c >= v, "{v} -> {c}");
            assert_eq!(f16::from_f32(c).to_f32(), c, "representable");
            let below = f16::from_bits(f16::from_f32(c).to_bits() - 1).to_f32();
            assert!(below < v, "{v}: {c} is not the smallest");
        }
    }

    #[test]
    fn k4_scales_pack_and_unpack_for_every_value() {
        for base in 0u8..64 {
            let sc: Vec<u8> = (0..8).map(|j| (base + 7 * j) % 64).collect();
            let m: Vec<u8> = (0..8).map(|j| (base + 13 * j + 5) % 64).collect();
            let mut packed = Vec::new();
            pack_k4_scales(&sc, &m, &mut packed);
            for j in 0..8 {
                assert_eq!(k4_scale_min(&packed, j), (sc[j], m[j]), "sub-block {j}");
            }
        }
    }

    #[test]
    fn q3_k_scales_pack_and_unpack() {
        let x: Vec<f32> = (0..QK_K)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) * (1 + i / 16) as f32)
            .collect();
        let mut block = Vec::new();
        quantize_q3_k(&x, &mut block);
        let (_, sc, _) = symmetric(&x, 16, -4, 3, 31);
        for (i, &s) in sc.iter().enumerate() {
            assert_eq!(q3_k_scale(&block[96..108], i), s, "scale {i}");
        }
    }
}
