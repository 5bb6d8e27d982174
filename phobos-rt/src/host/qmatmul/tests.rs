//! The bar for the quantized matmul: a plainly written reference (q8
//! quantizers + integer sums, element by element) equals every kernel level
//! bit for bit; the result is within a derived f32 bound of dequantize +
//! f64 matmul; decoding agrees with phobos-quant's dequantizer.

// The reference indexes lanes by number on purpose.
#![allow(clippy::needless_range_loop)]

use phobos_quant::{GgmlType, QK_K, dequantize, quantize};
use proptest::prelude::*;

use super::kernels::KernelLevel;
use super::portable::{
    KVALUES_IQ4NL, f16_at, f32_at, hsum4, hsum8, k4_scale_min, levels_32, unpack_k,
};
use super::schedule::run;
use super::*;

/// Every weight format with a kernel.
const FORMATS: [GgmlType; 15] = [
    GgmlType::Q8_0,
    GgmlType::Q5_0,
    GgmlType::Q4_K,
    GgmlType::Q6_K,
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_1,
    GgmlType::Q2_K,
    GgmlType::Q3_K,
    GgmlType::Q5_K,
    GgmlType::IQ4_NL,
    GgmlType::IQ4_XS,
    GgmlType::F32,
    GgmlType::F16,
    GgmlType::BF16,
];

/// Deterministic pseudo-random floats with a spread of magnitudes.
pub(super) fn floats(seed: u64, len: usize) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|i| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let unit = (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
            let scale = [0.02f32, 0.3, 1.0, 4.0][(i / 37) % 4];
            unit * scale
        })
        .collect()
}

pub(super) fn weight_bytes(ty: GgmlType, values: &[f32]) -> Vec<u8> {
    let mut bytes = Vec::new();
    quantize(ty, values, &mut bytes).unwrap();
    bytes
}

/// Activations quantized with phobos-quant's reference quantizers (Q8_0 and
/// Q8_1 there are ggml's reference C ones; the kernels take any valid q8).
pub(super) fn reference_acts(
    weight_ty: GgmlType,
    x: &[f32],
    m_rows: usize,
    cols: usize,
) -> QActivations {
    let ty = vec_dot_type(weight_ty).unwrap();
    if ty == GgmlType::F32 {
        return quantize_activations(weight_ty, x, m_rows, cols).unwrap();
    }
    let mut blocks = Vec::new();
    quantize(ty, x, &mut blocks).unwrap();
    QActivations::from_blocks(ty, m_rows, cols, blocks).unwrap()
}

/// Element `e` of a block as (level, 16-element scale index value) for the
/// plain reference: what ggml's AVX2 kernels multiply.
fn element_terms(ty: GgmlType, w: &[u8]) -> (Vec<i32>, Vec<i32>) {
    if ty.info().block_len == 32 {
        let levels = levels_32(ty, w).iter().map(|&l| i32::from(l)).collect();
        return (levels, vec![1; 32]);
    }
    let kb = unpack_k(ty, w);
    let levels = kb.levels.iter().map(|&l| i32::from(l)).collect();
    let scales = (0..QK_K).map(|e| kb.scales16[e / 16]).collect();
    (levels, scales)
}

/// The plain reference for one row pair: integer lane sums element by
/// element (lane = position within 32 / 4), the format's extra terms, one
/// FMA per block and lane, the AVX horizontal sum.
fn reference_row(ty: GgmlType, w_row: &[u8], a_row: &[u8], single_row: bool) -> f32 {
    let info = ty.info();
    let (a_bytes, a_levels) = match vec_dot_type(ty).unwrap() {
        GgmlType::Q8_0 => (34, 2),
        GgmlType::Q8_1 => (36, 4),
        _ => (4 + QK_K + 32, 4),
    };
    let mut acc = [0.0f32; 8];
    let mut acc_odd = [0.0f32; 8];
    let mut acc_mins = [0.0f32; 4];
    let mut scalar = 0.0f32;
    let n_blocks = w_row.len() / info.block_bytes;
    for b in 0..n_blocks {
        let w = &w_row[b * info.block_bytes..(b + 1) * info.block_bytes];
        let a = &a_row[b * a_bytes..(b + 1) * a_bytes];
        let (levels, scales) = element_terms(ty, w);
        let mut lanes = [0i32; 8];
        for e in 0..info.block_len {
            let x = i32::from(a[a_levels + e] as i8);
            lanes[(e % 32) / 4] += scales[e] * levels[e] * x;
        }
        if info.block_len == 32 {
            let (wd, ad) = (f16_at(w, 0), f16_at(a, 0));
            if ty == GgmlType::IQ4_NL && single_row && b == n_blocks - 1 && n_blocks % 2 == 1 {
                let both: [f32; 8] = std::array::from_fn(|l| acc[l] + acc_odd[l]);
                let total: i32 = lanes.iter().sum();
                return (ad * wd).mul_add(total as f32, hsum8(both));
            }
            let target = if ty == GgmlType::IQ4_NL && single_row && b % 2 == 1 {
                &mut acc_odd
            } else {
                &mut acc
            };
            for l in 0..8 {
                target[l] = (wd * ad).mul_add(lanes[l] as f32, target[l]);
            }
            if matches!(ty, GgmlType::Q4_1 | GgmlType::Q5_1) {
                scalar = f16_at(w, 2).mul_add(f16_at(a, 2), scalar);
            }
            continue;
        }
        let yd = f32_at(a, 0);
        let bsum = |g: usize| i32::from(i16::from_le_bytes([a[260 + 2 * g], a[261 + 2 * g]]));
        let kb = unpack_k(ty, w);
        match ty {
            GgmlType::Q2_K => {
                for l in 0..8 {
                    let mins = kb.mins[2 * l] * bsum(2 * l) + kb.mins[2 * l + 1] * bsum(2 * l + 1);
                    acc[l] = (-yd * kb.dmin).mul_add(mins as f32, acc[l]);
                }
            }
            GgmlType::Q4_K => {
                for (t, slot) in acc_mins.iter_mut().enumerate() {
                    let (_, m0) = k4_scale_min(&w[4..16], 2 * t);
                    let (_, m1) = k4_scale_min(&w[4..16], 2 * t + 1);
                    let prod = m0 * (bsum(4 * t) + bsum(4 * t + 1))
                        + m1 * (bsum(4 * t + 2) + bsum(4 * t + 3));
                    *slot = (-yd * kb.dmin).mul_add(prod as f32, *slot);
                }
            }
            GgmlType::Q5_K => {
                let total: i32 = (0..8)
                    .map(|j| k4_scale_min(&w[4..16], j).1 * (bsum(2 * j) + bsum(2 * j + 1)))
                    .sum();
                scalar = (-yd * kb.dmin).mul_add(total as f32, scalar);
            }
            GgmlType::Q6_K => {
                for (l, lane) in lanes.iter_mut().enumerate() {
                    let sc = |g: usize| i32::from(w[192 + g] as i8);
                    *lane -= 32 * (sc(2 * l) * bsum(2 * l) + sc(2 * l + 1) * bsum(2 * l + 1));
                }
            }
            _ => {}
        }
        for l in 0..8 {
            acc[l] = (yd * kb.d).mul_add(lanes[l] as f32, acc[l]);
        }
    }
    match ty {
        GgmlType::Q4_K => hsum8(acc) + hsum4(acc_mins),
        GgmlType::Q4_1 | GgmlType::Q5_1 | GgmlType::Q5_K => hsum8(acc) + scalar,
        _ if ty == GgmlType::IQ4_NL && single_row => {
            hsum8(std::array::from_fn(|l| acc[l] + acc_odd[l]))
        }
        _ => hsum8(acc),
    }
}

/// The reference for one row pair of a call with `m_rows` activation rows:
/// the batch order for the 256-element formats (ggml's `tiled` kernels),
/// `vec_dot`'s lanes otherwise.
pub(super) fn reference_any_row(ty: GgmlType, w_row: &[u8], a_row: &[u8], m_rows: usize) -> f32 {
    if ty.info().block_len == QK_K {
        reference_batch_row(ty, w_row, a_row)
    } else {
        reference_row(ty, w_row, a_row, m_rows == 1)
    }
}

/// The plain reference of the batch order: per block the exact sums
/// element by element (`s1` of scale times signed level times activation,
/// `s2` of min times activation), then ggml's AVX2 + FMA epilogue
/// `acc = fma(fma(-dmin, s2, d * s1), dx, acc)` in block order.
fn reference_batch_row(ty: GgmlType, w_row: &[u8], a_row: &[u8]) -> f32 {
    let info = ty.info();
    let a_bytes = 4 + QK_K + 32;
    let mut acc = 0.0f32;
    for b in 0..w_row.len() / info.block_bytes {
        let w = &w_row[b * info.block_bytes..(b + 1) * info.block_bytes];
        let a = &a_row[b * a_bytes..(b + 1) * a_bytes];
        let (levels, scales) = element_terms(ty, w);
        let kb = unpack_k(ty, w);
        let (mut s1, mut s2) = (0i64, 0i64);
        for e in 0..QK_K {
            let x = i64::from(a[4 + e] as i8);
            let level = i64::from(levels[e]) - if ty == GgmlType::Q6_K { 32 } else { 0 };
            s1 += i64::from(scales[e]) * level * x;
            s2 += x * i64::from(match ty {
                GgmlType::Q2_K => kb.mins[e / 16],
                GgmlType::Q4_K | GgmlType::Q5_K => kb.mins[e / 32],
                _ => 0,
            });
        }
        let (s1, s2) = (i32::try_from(s1).unwrap(), i32::try_from(s2).unwrap());
        let mut term = kb.d * s1 as f32;
        if matches!(ty, GgmlType::Q2_K | GgmlType::Q4_K | GgmlType::Q5_K) {
            term = (-kb.dmin).mul_add(s2 as f32, term);
        }
        acc = term.mul_add(f32_at(a, 0), acc);
    }
    acc
}

/// Float weights: lane k % 8 by FMA, then the horizontal sum.
fn reference_float_row(ty: GgmlType, w_row: &[u8], x: &[f32]) -> f32 {
    let mut w = vec![0.0f32; x.len()];
    dequantize(ty, w_row, &mut w).unwrap();
    let mut acc = [0.0f32; 8];
    for k in 0..x.len() {
        acc[k % 8] = w[k].mul_add(x[k], acc[k % 8]);
    }
    hsum8(acc)
}

pub(super) fn reference_matmul(
    ty: GgmlType,
    w: &[u8],
    rows: usize,
    cols: usize,
    acts: &QActivations,
    x: &[f32],
) -> Vec<f32> {
    let row_bytes = w.len() / rows;
    let m_rows = acts.m_rows();
    let mut out = vec![0.0f32; m_rows * rows];
    for m in 0..m_rows {
        for n in 0..rows {
            let w_row = &w[n * row_bytes..(n + 1) * row_bytes];
            out[m * rows + n] = if acts.ty() == GgmlType::F32 {
                reference_float_row(ty, w_row, &x[m * cols..(m + 1) * cols])
            } else {
                reference_any_row(ty, w_row, acts.row_blocks(m), m_rows)
            };
        }
    }
    out
}

pub(super) fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Runs every level, threaded and not, on weight bytes `w` and checks each
/// against the plain reference bit for bit.
pub(super) fn check_exact_on(
    ty: GgmlType,
    w: &[u8],
    rows: usize,
    cols: usize,
    m_rows: usize,
    seed: u64,
) {
    let x = floats(seed, m_rows * cols);
    let acts = reference_acts(ty, &x, m_rows, cols);
    let expected = reference_matmul(ty, w, rows, cols, &acts, &x);
    let matrix = QMatrixRef {
        ty,
        rows,
        cols,
        data: w,
    };
    for level in [
        KernelLevel::Portable,
        KernelLevel::Avx2,
        KernelLevel::Avx512Vnni,
        KernelLevel::Amx,
    ] {
        for threaded in [false, true] {
            let mut out = vec![f32::NAN; m_rows * rows];
            run(&matrix, &acts, &mut out, threaded, level).unwrap();
            assert_eq!(
                bits(&out),
                bits(&expected),
                "{ty} {rows}x{cols} m={m_rows} {level:?} threaded={threaded}"
            );
        }
    }
}

fn check_exact(ty: GgmlType, rows: usize, cols: usize, m_rows: usize, seed: u64) {
    let w = weight_bytes(ty, &floats(seed, rows * cols));
    check_exact_on(ty, &w, rows, cols, m_rows, seed + 1);
}

#[test]
fn every_format_equals_the_plain_reference() {
    for ty in FORMATS {
        let block = ty.info().block_len.max(32);
        for (rows, blocks, m_rows) in [(5, 3, 1), (6, 4, 1), (7, 2, 6), (33, 4, 9), (3, 1, 1)] {
            check_exact(
                ty,
                rows,
                block * blocks,
                m_rows,
                rows as u64 * 31 + blocks as u64,
            );
        }
    }
}

/// |ggml result - exact| for dequantized operands, derived: each block term
/// is d_w*d_x (one rounding, u) times an exact integer, folded by one FMA
/// (one rounding) into a lane of at most `n_blocks` terms, then three
/// levels of horizontal adds and one final add: gamma_{n_blocks+6} times
/// the sum of |w_k x_k|. The weights are compared after phobos-quant's f32
/// dequantize, which rounds at most three times per element (4u slack on
/// sum |w_k x_k| plus the dmin*m part), and Q4_1/Q5_1's activation sum
/// `s` is stored as f16 (relative 2^-11, plus 2^-24 absolute when
/// subnormal) on every block's m * s term.
#[test]
fn every_format_is_close_to_dequantized_f64() {
    for ty in FORMATS {
        let block = ty.info().block_len.max(32);
        let (rows, cols) = (9, block * 5);
        let w = weight_bytes(ty, &floats(77, rows * cols));
        check_close_on(ty, &w, rows, cols, 3, 78);
    }
}

pub(super) fn check_close_on(
    ty: GgmlType,
    w: &[u8],
    rows: usize,
    cols: usize,
    m_rows: usize,
    seed: u64,
) {
    let u = f64::from(f32::EPSILON) / 2.0;
    let mut w_f32 = vec![0.0f32; rows * cols];
    dequantize(ty, w, &mut w_f32).unwrap();
    let x = floats(seed, m_rows * cols);
    let acts = quantize_activations(ty, &x, m_rows, cols).unwrap();
    let x_deq: Vec<f64> = if acts.ty() == GgmlType::F32 {
        x.iter().map(|&v| f64::from(v)).collect()
    } else {
        dequantize_acts_f64(&acts)
    };
    let mut out = vec![0.0f32; m_rows * rows];
    matmul_threaded(
        &QMatrixRef {
            ty,
            rows,
            cols,
            data: w,
        },
        &x,
        m_rows,
        &mut out,
    )
    .unwrap();
    let n_blocks = (cols / ty.info().block_len) as f64;
    let gamma = (n_blocks + 6.0) * u / (1.0 - (n_blocks + 6.0) * u);
    let row_bytes = w.len() / rows;
    for m in 0..m_rows {
        for n in 0..rows {
            let (mut exact, mut magnitude) = (0.0f64, 0.0f64);
            for k in 0..cols {
                let term = f64::from(w_f32[n * cols + k]) * x_deq[m * cols + k];
                exact += term;
                magnitude += term.abs();
            }
            let min_term = min_part_bound(ty, &w[n * row_bytes..(n + 1) * row_bytes], &acts, m);
            let bound = gamma * magnitude + 4.0 * u * magnitude + min_term;
            let got = f64::from(out[m * rows + n]);
            assert!(
                (got - exact).abs() <= bound,
                "{ty} m={m} n={n}: {got} vs {exact}, bound {bound}"
            );
        }
    }
}

/// The parts of the error bound not proportional to sum |w_k x_k|: the
/// sub-block minimum terms and Q4_1/Q5_1's f16 `s`. With `M = |dmin| *
/// max(m) * |dx| * sum |x|` per block: the f32 dequantize rounds the
/// min part at most three times (4u M, as for `w`), and the kernel's
/// roundings that scale with the min part rather than with |w|: in the
/// batch order `f32(s1)` and `d * f32(s1)` carry |d s1 dx| <= |w x| + M
/// (2u M beyond the |w x| share), `f32(s2)` and the fused min step u M
/// each, the fused accumulate u M, and the block sum gamma_n on both
/// parts (2 gamma_n M); `vec_dot`'s separate min lanes take fewer. So
/// (9u + 2 gamma_n) M per block.
fn min_part_bound(ty: GgmlType, w_row: &[u8], acts: &QActivations, m: usize) -> f64 {
    let u = f64::from(f32::EPSILON) / 2.0;
    if acts.ty() == GgmlType::F32 {
        return 0.0;
    }
    let a_row = acts.row_blocks(m);
    let info = ty.info();
    let n_blocks = (w_row.len() / info.block_bytes) as f64;
    let gamma_n = n_blocks * u / (1.0 - n_blocks * u);
    let mut bound = 0.0;
    for (b, w) in w_row.chunks_exact(info.block_bytes).enumerate() {
        match ty {
            GgmlType::Q4_1 | GgmlType::Q5_1 => {
                let a = &a_row[b * 36..(b + 1) * 36];
                let (m_w, s) = (f64::from(f16_at(w, 2)), f64::from(f16_at(a, 2)));
                let x_abs: f64 = a[4..36]
                    .iter()
                    .map(|&q| f64::from((q as i8).unsigned_abs()))
                    .sum();
                let d_x = f64::from(f16_at(a, 0));
                bound +=
                    m_w.abs() * (s.abs() * 2f64.powi(-11) + 2f64.powi(-24) + 4.0 * u * d_x * x_abs);
            }
            GgmlType::Q2_K | GgmlType::Q4_K | GgmlType::Q5_K => {
                let a = &a_row[b * 292..(b + 1) * 292];
                let kb = unpack_k(ty, w);
                let x_abs: f64 = a[4..260]
                    .iter()
                    .map(|&q| f64::from((q as i8).unsigned_abs()))
                    .sum();
                let max_min = kb.mins.iter().copied().max().unwrap_or(0);
                bound += (9.0 * u + 2.0 * gamma_n)
                    * f64::from(kb.dmin).abs()
                    * f64::from(max_min)
                    * f64::from(f32_at(a, 0)).abs()
                    * x_abs;
            }
            _ => {}
        }
    }
    bound
}

fn dequantize_acts_f64(acts: &QActivations) -> Vec<f64> {
    let mut out = Vec::new();
    match acts.ty() {
        GgmlType::Q8_0 | GgmlType::Q8_1 => {
            let (bytes, start) = if acts.ty() == GgmlType::Q8_0 {
                (34, 2)
            } else {
                (36, 4)
            };
            for block in acts.blocks().chunks_exact(bytes) {
                let d = f64::from(f16_at(block, 0));
                out.extend(block[start..].iter().map(|&q| d * f64::from(q as i8)));
            }
        }
        _ => {
            for block in acts.blocks().chunks_exact(292) {
                let d = f64::from(f32_at(block, 0));
                out.extend(block[4..260].iter().map(|&q| d * f64::from(q as i8)));
            }
        }
    }
    out
}

/// The decoding the kernels use recombines to phobos-quant's dequantized
/// values bit for bit (same arithmetic order as its dequantizer).
#[test]
fn decoding_matches_phobos_quant() {
    for ty in FORMATS.into_iter().filter(|t| t.info().block_len > 1) {
        let info = ty.info();
        let w = weight_bytes(ty, &floats(5, info.block_len * 8));
        let mut expected = vec![0.0f32; info.block_len * 8];
        dequantize(ty, &w, &mut expected).unwrap();
        for (b, block) in w.chunks_exact(info.block_bytes).enumerate() {
            let d = f16_at(block, 0);
            for e in 0..info.block_len {
                let want = expected[b * info.block_len + e];
                let got = match ty {
                    GgmlType::Q4_0 | GgmlType::Q5_0 => d * f32::from(levels_32(ty, block)[e]),
                    GgmlType::Q8_0 => f32::from(levels_32(ty, block)[e]) * d,
                    GgmlType::IQ4_NL => d * f32::from(levels_32(ty, block)[e]),
                    GgmlType::Q4_1 | GgmlType::Q5_1 => {
                        d * f32::from(levels_32(ty, block)[e]) + f16_at(block, 2)
                    }
                    _ => {
                        let kb = unpack_k(ty, block);
                        let (q, sc) = (f32::from(kb.levels[e]), kb.scales16[e / 16] as f32);
                        match ty {
                            GgmlType::Q2_K => kb.d * sc * q - kb.dmin * kb.mins[e / 16] as f32,
                            GgmlType::Q4_K | GgmlType::Q5_K => {
                                kb.d * sc * q - kb.dmin * kb.mins[e / 32] as f32
                            }
                            GgmlType::Q6_K => kb.d * sc * (q - 32.0),
                            GgmlType::IQ4_XS => {
                                let level = KVALUES_IQ4NL.iter().position(|&v| f32::from(v) == q);
                                assert!(level.is_some());
                                kb.d * sc * q
                            }
                            _ => kb.d * sc * q,
                        }
                    }
                };
                assert_eq!(
                    got.to_bits(),
                    want.to_bits(),
                    "{ty} block {b} element {e}: {got} vs {want}"
                );
            }
        }
    }
}

#[test]
fn x86_activation_quantizer_agrees_with_reference_off_ties() {
    // ggml's x86 Q8_0 quantizer multiplies by 127/amax and rounds half to
    // even; the reference divides by d and rounds half away. They agree
    // except on exact ties and last-bit differences of the multiplier.
    let x = floats(11, 32 * 64);
    let ours = quantize_activations(GgmlType::Q8_0, &x, 1, x.len()).unwrap();
    let mut reference = Vec::new();
    quantize(GgmlType::Q8_0, &x, &mut reference).unwrap();
    let differing = ours
        .blocks()
        .iter()
        .zip(&reference)
        .filter(|(a, b)| a != b)
        .count();
    assert!(differing <= x.len() / 64, "{differing} bytes differ");
    // Scales are identical: both are f16(amax / 127).
    for (a, b) in ours
        .blocks()
        .chunks_exact(34)
        .zip(reference.chunks_exact(34))
    {
        assert_eq!(a[..2], b[..2]);
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn simd_q8_quantizer_equals_the_plain_one() {
    if kernel_level() == KernelLevel::Portable {
        return;
    }
    let mut blocks: Vec<Vec<f32>> = (0..2000).map(|seed| floats(seed, 32)).collect();
    blocks.push(vec![0.0; 32]);
    // Exact ties after scaling: amax 127 makes the multiplier 1.
    blocks.push(
        (0..32)
            .map(|i| if i == 0 { 127.0 } else { i as f32 - 15.5 })
            .collect(),
    );
    blocks.push((0..32).map(|i| (i as f32 - 16.0) * 1e-30).collect());
    blocks.push((0..32).map(|i| (i as f32 - 16.0) * 2e37).collect());
    for x in &blocks {
        let plain = super::activations::levels_x86(x);
        // SAFETY: the level is not Portable, so the CPU has AVX2.
        let simd = unsafe { super::x86::levels_q8_avx2(x) };
        assert_eq!(plain.0, simd.0, "{x:?}");
        assert_eq!(plain.1.to_bits(), simd.1.to_bits(), "{x:?}");
        // SAFETY: as above.
        let (mut levels, mut neg_sums) = ([0u8; 32], [0i32; 8]);
        let d = unsafe { super::x86::levels_q8_sums_avx2(x, &mut levels, &mut neg_sums) };
        let levels = levels.map(|q| q as i8);
        assert_eq!((levels, d.to_bits()), (simd.0, simd.1.to_bits()), "{x:?}");
        for (l, &neg_sum) in neg_sums.iter().enumerate() {
            let sum: i32 = levels[4 * l..4 * l + 4].iter().map(|&q| i32::from(q)).sum();
            assert_eq!(neg_sum, -sum, "{x:?} lane {l}");
        }
    }
}

/// Rows wide enough that the AVX-512 prompt tile's packed group outgrows
/// L1D and is walked in chunks of blocks by blocks of weight rows
/// (`x86/k_512_tile.rs`): ragged chunks (7 and 14 blocks), a ragged last
/// row block (19 and 9 rows), full and partial 16-row groups.
#[test]
fn wide_k_quant_rows_equal_the_plain_reference() {
    for ty in [GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K] {
        for (rows, blocks, m_rows) in [(19, 7, 17), (9, 11, 16), (3, 14, 5), (10, 13, 33)] {
            check_exact(
                ty,
                rows,
                256 * blocks,
                m_rows,
                rows as u64 + 7 * blocks as u64,
            );
        }
    }
}

#[test]
fn threaded_activation_quantization_equals_serial() {
    for (weight_ty, cols) in [
        (GgmlType::Q5_0, 96),
        (GgmlType::Q8_0, 640),
        (GgmlType::Q4_1, 64),
        (GgmlType::Q4_K, 512),
    ] {
        for m_rows in [1, 15, 16, 17, 67] {
            let x = floats(m_rows as u64 + cols as u64, m_rows * cols);
            let serial = quantize_activations(weight_ty, &x, m_rows, cols).unwrap();
            let threaded = quantize_activations_threaded(weight_ty, &x, m_rows, cols).unwrap();
            assert_eq!(serial, threaded, "{weight_ty} m={m_rows}");
            // The extras filled while quantizing equal those derived from
            // the finished blocks.
            let rewrapped =
                QActivations::from_blocks(threaded.ty(), m_rows, cols, threaded.blocks().to_vec())
                    .unwrap();
            assert_eq!(rewrapped, threaded, "{weight_ty} m={m_rows}");
        }
    }
}

#[test]
fn activation_extras_are_the_block_scales_and_lane_sums() {
    let x = floats(5, 3 * 64);
    let acts = quantize_activations(GgmlType::Q8_0, &x, 3, 64).unwrap();
    for m in 0..3 {
        let blocks = acts.row_blocks(m);
        for b in 0..2 {
            let block = &blocks[34 * b..34 * (b + 1)];
            assert_eq!(acts.row_scales(m)[b].to_bits(), f16_at(block, 0).to_bits());
            for l in 0..8 {
                let sum: i32 = block[2 + 4 * l..6 + 4 * l]
                    .iter()
                    .map(|&q| i32::from(q as i8))
                    .sum();
                assert_eq!(acts.row_neg_lane_sums(m)[8 * b + l], -sum);
            }
        }
    }
}

#[test]
fn bad_sizes_and_types_are_errors() {
    let w = weight_bytes(GgmlType::Q8_0, &floats(1, 64));
    let matrix = QMatrixRef {
        ty: GgmlType::Q8_0,
        rows: 1,
        cols: 64,
        data: &w,
    };
    let mut out = vec![0.0; 1];
    assert!(matches!(
        matmul(&matrix, &[0.0; 63], 1, &mut out),
        Err(QMatmulError::ActivationLen { .. })
    ));
    assert!(matches!(
        matmul(&matrix, &[0.0; 64], 1, &mut [0.0; 2]),
        Err(QMatmulError::OutputLen { .. })
    ));
    let short = QMatrixRef {
        data: &w[..10],
        ..matrix
    };
    assert!(matches!(
        matmul(&short, &[0.0; 64], 1, &mut out),
        Err(QMatmulError::WeightBytes { .. })
    ));
    let ragged = QMatrixRef { cols: 60, ..matrix };
    assert!(matmul(&ragged, &[0.0; 60], 1, &mut out).is_err());
    let iq2 = QMatrixRef {
        ty: GgmlType::IQ2_XXS,
        ..matrix
    };
    assert!(matches!(
        matmul(&iq2, &[0.0; 64], 1, &mut out),
        Err(QMatmulError::UnsupportedWeight { .. })
    ));
    let k_acts = quantize_activations(GgmlType::Q4_K, &[0.0; 256], 1, 256).unwrap();
    assert!(matches!(
        matmul_quantized(&matrix, &k_acts, &mut out),
        Err(QMatmulError::ActivationMismatch { .. })
    ));
    let mut bad = vec![0u8; 34];
    bad[5] = 0x80;
    assert!(matches!(
        QActivations::from_blocks(GgmlType::Q8_0, 1, 32, bad),
        Err(QMatmulError::ActivationLevel { block: 0 })
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Shapes: M = 1, ragged M (not a multiple of the 4-row groups or the
    /// 64-row tiles), K = several blocks, N ragged against the split.
    #[test]
    fn shapes_match_the_reference(
        format in 0usize..FORMATS.len(),
        rows in 1usize..40,
        blocks in 1usize..5,
        m_rows in prop_oneof![Just(1usize), 2usize..11, 63usize..67],
        seed in 0u64..1000,
    ) {
        let ty = FORMATS[format];
        let cols = ty.info().block_len.max(32) * blocks;
        check_exact(ty, rows, cols, m_rows, seed);
    }
}

/// One random `rows x cols` matrix of `ty` times `m_rows` activation rows
/// on the AVX2 level and on the portable one, as result bits.
fn avx2_and_portable(
    ty: GgmlType,
    rows: usize,
    cols: usize,
    m_rows: usize,
    seed: u64,
) -> (Vec<u32>, Vec<u32>) {
    let w = weight_bytes(ty, &floats(seed, rows * cols));
    let x = floats(seed + 1, m_rows * cols);
    let acts = quantize_activations(ty, &x, m_rows, cols).unwrap();
    let matrix = QMatrixRef {
        ty,
        rows,
        cols,
        data: &w,
    };
    let at = |level| {
        let mut out = vec![f32::NAN; m_rows * rows];
        run(&matrix, &acts, &mut out, false, level).unwrap();
        bits(&out)
    };
    (at(KernelLevel::Avx2), at(KernelLevel::Portable))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    /// The AVX2 tile of the Q8_0-partner formats (`x86/q32_avx2.rs`: four
    /// weight rows for one activation row, two times up to four otherwise,
    /// then single rows) equals the portable path on ragged shapes: odd
    /// block counts, weight rows not a multiple of the pass, every
    /// activation group size.
    #[test]
    fn avx2_q32_tile_equals_portable(
        format in 0usize..4,
        rows in 1usize..12,
        blocks in prop_oneof![Just(1usize), Just(3usize), Just(5usize), Just(7usize)],
        m_rows in 1usize..10,
        seed in 0u64..1000,
    ) {
        let ty = [GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q8_0, GgmlType::IQ4_NL][format];
        let (avx2, portable) = avx2_and_portable(ty, rows, 32 * blocks, m_rows, seed);
        prop_assert_eq!(avx2, portable, "{} {}x{} m={}", ty, rows, 32 * blocks, m_rows);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    /// The AVX2 tile of the 256-element formats (`x86/kquants.rs`: two
    /// Q4_K weight rows or one of the others for one activation row, one
    /// times up to four otherwise, chunk by chunk) equals the portable path
    /// on ragged shapes: odd weight-row counts (the single-row end of a
    /// two-row pass), one or several blocks, every activation group size.
    #[test]
    fn avx2_k_tile_equals_portable(
        format in 0usize..6,
        rows in 1usize..12,
        blocks in 1usize..4,
        m_rows in 1usize..10,
        seed in 0u64..1000,
    ) {
        let ty = [
            GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K,
            GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_XS,
        ][format];
        let (avx2, portable) = avx2_and_portable(ty, rows, QK_K * blocks, m_rows, seed);
        prop_assert_eq!(avx2, portable, "{} {}x{} m={}", ty, rows, QK_K * blocks, m_rows);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Q8_0 weights of every byte value, -128 included (a GGUF file may
    /// hold it though ggml's quantizer never writes it): the AVX2 tiles'
    /// sign trick (prompt and decode) equals the portable path, on whole
    /// and ragged activation groups.
    #[test]
    fn avx2_q8_0_any_levels_equal_portable(
        rows in 1usize..8,
        blocks in 1usize..4,
        m_rows in prop_oneof![Just(1usize), 4usize..10],
        levels in proptest::collection::vec(any::<u8>(), 32 * 4 * 8),
        seed in 0u64..1000,
    ) {
        let cols = 32 * blocks;
        let scales = floats(seed, rows * blocks);
        let mut w = Vec::new();
        for (b, scale) in scales.iter().enumerate() {
            w.extend_from_slice(&half::f16::from_f32(scale * 0.01).to_bits().to_le_bytes());
            w.extend_from_slice(&levels[32 * (b % 32)..32 * (b % 32 + 1)]);
        }
        w[2] = 0x80;
        let x = floats(seed + 1, m_rows * cols);
        let acts = quantize_activations(GgmlType::Q8_0, &x, m_rows, cols).unwrap();
        let matrix = QMatrixRef { ty: GgmlType::Q8_0, rows, cols, data: &w };
        let at = |level| {
            let mut out = vec![f32::NAN; m_rows * rows];
            run(&matrix, &acts, &mut out, false, level).unwrap();
            bits(&out)
        };
        prop_assert_eq!(at(KernelLevel::Avx2), at(KernelLevel::Portable));
    }
}
