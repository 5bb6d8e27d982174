//! The reference for ggml's quantized contraction (SPEC.md, "Quantized
//! contractions"), written apart from the runtime's implementation and
//! following the structure of ggml's scalar `vec_dot` loops: the float
//! operand is quantized with phobos-quant's ggml-exact q8 quantizers, the
//! weight levels are unpacked block by block, the level products are summed
//! in integers, and each block's term is formed with the float operations
//! SPEC.md lists, then the terms are added in block order from 0.0.
//! Shared by phobos-rt's and phobos-models' tests (`#[path]`).

#![allow(dead_code)]

use half::f16;
use phobos_quant::GgmlType;

/// The partner (ggml `vec_dot_type`) of each format with an integer form,
/// as ggml's CPU type traits list them.
pub fn partner(ty: GgmlType) -> Option<GgmlType> {
    use GgmlType::*;
    Some(match ty {
        Q4_0 | Q5_0 | Q8_0 | IQ4_NL => Q8_0,
        Q4_1 | Q5_1 => Q8_1,
        Q2_K | Q3_K | Q4_K | Q5_K | Q6_K => Q8_K,
        _ => return None,
    })
}

fn h(b: &[u8], at: usize) -> f32 {
    f16::from_bits(u16::from_le_bytes([b[at], b[at + 1]])).to_f32()
}

fn f(b: &[u8], at: usize) -> f32 {
    f32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn i8s(b: &[u8]) -> Vec<i32> {
    b.iter().map(|&v| i32::from(v as i8)).collect()
}

const IQ4NL: [i32; 16] = [
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
];

/// The 32 signed levels of a legacy block, in element order.
fn legacy_levels(ty: GgmlType, w: &[u8]) -> Vec<i32> {
    let mut a = vec![0i32; 32];
    match ty {
        GgmlType::Q4_0 | GgmlType::Q4_1 | GgmlType::IQ4_NL => {
            let qs = if ty == GgmlType::Q4_1 {
                &w[4..20]
            } else {
                &w[2..18]
            };
            for j in 0..16 {
                let (lo, hi) = (i32::from(qs[j] & 0x0F), i32::from(qs[j] >> 4));
                (a[j], a[j + 16]) = match ty {
                    GgmlType::Q4_0 => (lo - 8, hi - 8),
                    GgmlType::IQ4_NL => (IQ4NL[lo as usize], IQ4NL[hi as usize]),
                    _ => (lo, hi),
                };
            }
        }
        GgmlType::Q5_0 | GgmlType::Q5_1 => {
            let (qh_at, qs_at) = if ty == GgmlType::Q5_0 { (2, 6) } else { (4, 8) };
            let qh = u32::from_le_bytes(w[qh_at..qh_at + 4].try_into().unwrap());
            let bias = if ty == GgmlType::Q5_0 { 16 } else { 0 };
            for j in 0..16 {
                let xh0 = ((qh >> j) & 1) << 4;
                let xh1 = ((qh >> (j + 16)) & 1) << 4;
                a[j] = ((u32::from(w[qs_at + j] & 0x0F) | xh0) as i32) - bias;
                a[j + 16] = ((u32::from(w[qs_at + j] >> 4) | xh1) as i32) - bias;
            }
        }
        GgmlType::Q8_0 => a = i8s(&w[2..34]),
        _ => unreachable!("not a legacy format: {ty}"),
    }
    a
}

/// The 256 levels of a k-quant block (ggml's `aux8`), and per group of
/// `256 / scales.len()` levels its integer scale; plus the integer min
/// term `sum(bsum * min)` (0 for formats without mins).
fn kquant(ty: GgmlType, w: &[u8], bsums: &[i32]) -> (Vec<i32>, Vec<i32>, i32) {
    let mut a = vec![0i32; 256];
    match ty {
        GgmlType::Q2_K => {
            let (sc, q2) = (&w[..16], &w[16..80]);
            for k in 0..2 {
                for j in 0..4 {
                    for l in 0..32 {
                        a[k * 128 + j * 32 + l] = i32::from((q2[k * 32 + l] >> (2 * j)) & 3);
                    }
                }
            }
            let scales = sc.iter().map(|&s| i32::from(s & 0x0F)).collect();
            let mins = (0..16).map(|j| bsums[j] * i32::from(sc[j] >> 4)).sum();
            (a, scales, mins)
        }
        GgmlType::Q3_K => {
            let (hm, q3, sc) = (&w[..32], &w[32..96], &w[96..108]);
            let mut m = 1u8;
            for half in 0..2 {
                for s in 0..4 {
                    for l in 0..32 {
                        let low = i32::from((q3[half * 32 + l] >> (2 * s)) & 3);
                        a[half * 128 + s * 32 + l] = low - if hm[l] & m != 0 { 0 } else { 4 };
                    }
                    m = m.wrapping_shl(1);
                }
            }
            let aux: [u32; 3] = std::array::from_fn(|i| {
                u32::from_le_bytes(sc[4 * i..4 * i + 4].try_into().unwrap())
            });
            let (k1, k2) = (0x0303_0303u32, 0x0f0f_0f0fu32);
            let words = [
                (aux[0] & k2) | ((aux[2] & k1) << 4),
                (aux[1] & k2) | (((aux[2] >> 2) & k1) << 4),
                ((aux[0] >> 4) & k2) | (((aux[2] >> 4) & k1) << 4),
                ((aux[1] >> 4) & k2) | (((aux[2] >> 6) & k1) << 4),
            ];
            let scales = words
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .map(|b| i32::from(b as i8) - 32)
                .collect();
            (a, scales, 0)
        }
        GgmlType::Q4_K | GgmlType::Q5_K => {
            let five = ty == GgmlType::Q5_K;
            let (qh, q4) = if five {
                (&w[16..48], &w[48..176])
            } else {
                (&w[16..16], &w[16..144])
            };
            let mut m = 1u8;
            for j in 0..4 {
                for l in 0..32 {
                    a[j * 64 + l] = i32::from(q4[j * 32 + l] & 0x0F);
                    a[j * 64 + 32 + l] = i32::from(q4[j * 32 + l] >> 4);
                    if five {
                        a[j * 64 + l] += if qh[l] & m != 0 { 16 } else { 0 };
                        a[j * 64 + 32 + l] += if qh[l] & (m << 1) != 0 { 16 } else { 0 };
                    }
                }
                m = m.wrapping_shl(2);
            }
            let u: [u32; 3] = std::array::from_fn(|i| {
                u32::from_le_bytes(w[4 + 4 * i..8 + 4 * i].try_into().unwrap())
            });
            let (k1, k2, k3) = (0x3f3f_3f3fu32, 0x0f0f_0f0fu32, 0x0303_0303u32);
            let scales_words = [u[0] & k1, (u[2] & k2) | (((u[0] >> 6) & k3) << 4)];
            let mins_words = [u[1] & k1, ((u[2] >> 4) & k2) | (((u[1] >> 6) & k3) << 4)];
            let scales: Vec<i32> = scales_words
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .map(i32::from)
                .collect();
            let mins: Vec<i32> = mins_words
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .map(i32::from)
                .collect();
            let min_term = (0..16).map(|j| bsums[j] * mins[j / 2]).sum();
            (a, scales, min_term)
        }
        GgmlType::Q6_K => {
            let (ql, qh, sc) = (&w[..128], &w[128..192], &w[192..208]);
            for half in 0..2 {
                let (ql, qh) = (&ql[half * 64..], &qh[half * 32..]);
                for l in 0..32 {
                    let base = half * 128;
                    a[base + l] = i32::from((ql[l] & 0x0F) | ((qh[l] & 3) << 4)) - 32;
                    a[base + l + 32] =
                        i32::from((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
                    a[base + l + 64] = i32::from((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                    a[base + l + 96] =
                        i32::from((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                }
            }
            (a, i8s(sc), 0)
        }
        _ => unreachable!("not a k-quant: {ty}"),
    }
}

/// One block's term, per SPEC.md's table.
pub fn block_term(ty: GgmlType, w: &[u8], x: &[u8]) -> f32 {
    use GgmlType::*;
    match ty {
        Q4_0 | Q5_0 | Q8_0 | IQ4_NL => {
            let a = legacy_levels(ty, w);
            let sumi: i32 = a.iter().zip(i8s(&x[2..34])).map(|(p, q)| p * q).sum();
            sumi as f32 * (h(w, 0) * h(x, 0))
        }
        Q4_1 | Q5_1 => {
            let a = legacy_levels(ty, w);
            let sumi: i32 = a.iter().zip(i8s(&x[4..36])).map(|(p, q)| p * q).sum();
            (h(w, 0) * h(x, 0)) * sumi as f32 + h(w, 2) * h(x, 2)
        }
        _ => {
            let (d_x, q8) = (f(x, 0), i8s(&x[4..260]));
            let bsums: Vec<i32> = x[260..292]
                .chunks_exact(2)
                .map(|c| i32::from(i16::from_le_bytes([c[0], c[1]])))
                .collect();
            let (a, scales, min_term) = kquant(ty, w, &bsums);
            let group = 256 / scales.len();
            let sumi: i32 = scales
                .iter()
                .enumerate()
                .map(|(g, s)| {
                    s * (g * group..(g + 1) * group)
                        .map(|e| a[e] * q8[e])
                        .sum::<i32>()
                })
                .sum();
            let (d, dmin) = match ty {
                Q2_K => (h(w, 80), h(w, 82)),
                Q3_K => (h(w, 108), 0.0),
                Q6_K => (h(w, 208), 0.0),
                _ => (h(w, 0), h(w, 2)),
            };
            let main = (d * d_x) * sumi as f32;
            if matches!(ty, Q2_K | Q4_K | Q5_K) {
                main - (dmin * d_x) * min_term as f32
            } else {
                main
            }
        }
    }
}

/// One block's term in f64 (the value of SPEC.md's formula before any f32
/// rounding, up to f64's own, relative 2^-50 at most) and a magnitude that
/// bounds the sum of the absolute values of its parts in any grouping
/// (`|d dx| sum |sc a q|` plus the min or offset part), against which an
/// evaluation order's f32 rounding error is measured.
pub fn block_exact(ty: GgmlType, w: &[u8], x: &[u8]) -> (f64, f64) {
    use GgmlType::*;
    let wide = f64::from;
    match ty {
        Q4_0 | Q5_0 | Q8_0 | IQ4_NL | Q4_1 | Q5_1 => {
            let a = legacy_levels(ty, w);
            let at = if matches!(ty, Q4_1 | Q5_1) { 4 } else { 2 };
            let q = i8s(&x[at..at + 32]);
            let sumi: i64 = a.iter().zip(&q).map(|(p, q)| i64::from(p * q)).sum();
            let abs: i64 = a
                .iter()
                .zip(&q)
                .map(|(p, q)| i64::from((p * q).abs()))
                .sum();
            let scale = wide(h(w, 0)) * wide(h(x, 0));
            let (mut exact, mut magnitude) = (scale * sumi as f64, scale.abs() * abs as f64);
            if matches!(ty, Q4_1 | Q5_1) {
                let offset = wide(h(w, 2)) * wide(h(x, 2));
                exact += offset;
                magnitude += offset.abs();
            }
            (exact, magnitude)
        }
        _ => {
            let (d_x, q8) = (wide(f(x, 0)), i8s(&x[4..260]));
            let bsums: Vec<i32> = x[260..292]
                .chunks_exact(2)
                .map(|c| i32::from(i16::from_le_bytes([c[0], c[1]])))
                .collect();
            let (a, scales, min_term) = kquant(ty, w, &bsums);
            let group = 256 / scales.len();
            let (mut sumi, mut abs) = (0i64, 0i64);
            for (g, s) in scales.iter().enumerate() {
                for e in g * group..(g + 1) * group {
                    sumi += i64::from(s * a[e] * q8[e]);
                    abs += i64::from((s * a[e] * q8[e]).abs());
                }
            }
            let (d, dmin) = match ty {
                Q2_K => (h(w, 80), h(w, 82)),
                Q3_K => (h(w, 108), 0.0),
                Q6_K => (h(w, 208), 0.0),
                _ => (h(w, 0), h(w, 2)),
            };
            let main = wide(d) * d_x;
            let mins = wide(dmin) * d_x;
            let min_abs: f64 = if matches!(ty, Q2_K | Q4_K | Q5_K) {
                // Every min-part product, in absolute value: an upper bound
                // of |min_term| and of any partial sum of it.
                let (_, _, abs_term) =
                    kquant(ty, w, &bsums.iter().map(|b| b.abs()).collect::<Vec<_>>());
                f64::from(abs_term.abs())
            } else {
                0.0
            };
            (
                main * sumi as f64 - mins * f64::from(min_term),
                main.abs() * abs as f64 + mins.abs() * min_abs,
            )
        }
    }
}

/// `out[m][n]` = ggml's contraction of weight row `n` (blocks of `ty`,
/// `k` elements) with float row `m` of `x` (`[rows, k]`).
pub fn contract(ty: GgmlType, weights: &[u8], n_rows: usize, x: &[f32], k: usize) -> Vec<Vec<f32>> {
    let partner = partner(ty).expect("a format with an integer form");
    let info = ty.info();
    let blocks = k / info.block_len;
    let per_block = partner.info().block_bytes * info.block_len / partner.info().block_len;
    x.chunks_exact(k)
        .map(|row| {
            let mut xq = Vec::new();
            phobos_quant::quantize(partner, row, &mut xq).unwrap();
            (0..n_rows)
                .map(|n| {
                    let mut sum = 0f32;
                    for b in 0..blocks {
                        let at = (n * blocks + b) * info.block_bytes;
                        sum += block_term(
                            ty,
                            &weights[at..at + info.block_bytes],
                            &xq[b * per_block..(b + 1) * per_block],
                        );
                    }
                    sum
                })
                .collect()
        })
        .collect()
}
