//! The 32-element formats: Q4_0 Q5_0 Q8_0 IQ4_NL (partner Q8_0) and Q4_1
//! Q5_1 (partner Q8_1).

use std::arch::x86_64::*;

use phobos_quant::GgmlType;

use super::f16_at;
use super::{bits_to_bytes, hsum8, iq4_lookup, load32, nibbles};

/// The levels of one weight block as AVX2 bytes (signed, or unsigned for
/// Q4_1/Q5_1) and its scale.
#[inline]
#[target_feature(enable = "avx2,f16c")]
fn unpack<const F: u32>(w: &[u8]) -> __m256i {
    const Q4_0: u32 = GgmlType::Q4_0 as u32;
    const Q4_1: u32 = GgmlType::Q4_1 as u32;
    const Q5_0: u32 = GgmlType::Q5_0 as u32;
    const Q5_1: u32 = GgmlType::Q5_1 as u32;
    const IQ4_NL: u32 = GgmlType::IQ4_NL as u32;
    match F {
        Q4_0 => _mm256_sub_epi8(nibbles(&w[2..18]), _mm256_set1_epi8(8)),
        Q4_1 => nibbles(&w[4..20]),
        Q5_0 => {
            let high = bits_to_bytes(u32::from_le_bytes([w[2], w[3], w[4], w[5]]));
            // A clear fifth bit means level - 16: set the high nibble.
            let offset = _mm256_andnot_si256(high, _mm256_set1_epi8(0xF0u8 as i8));
            _mm256_or_si256(nibbles(&w[6..22]), offset)
        }
        Q5_1 => {
            let high = bits_to_bytes(u32::from_le_bytes([w[4], w[5], w[6], w[7]]));
            let fifth = _mm256_and_si256(high, _mm256_set1_epi8(0x10));
            _mm256_or_si256(nibbles(&w[8..24]), fifth)
        }
        IQ4_NL => iq4_lookup(nibbles(&w[2..18])),
        _ => load32(&w[2..34]),
    }
}

/// `W` weight rows of a 32-element format times `R` activation rows, the
/// order of `portable::row_dot` with `single_row == false` (IQ4_NL's
/// single-row order is [`iq4nl_single_avx2`]). Returns `[w][r]`.
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C. `F` is the id of a 32-element
/// format; the weight rows have equal length and each activation row holds
/// as many partner blocks (levels in -127..=127) as a weight row has blocks.
#[target_feature(enable = "avx2,fma,f16c")]
pub(in crate::host::qmatmul) fn q32_rows_avx2<const F: u32, const W: usize, const R: usize>(
    w_rows: [&[u8]; W],
    a_rows: [&[u8]; R],
) -> [[f32; R]; W] {
    // SAFETY: this function's features are the body's requirements.
    unsafe { q32_body::<F, W, R, false>(w_rows, a_rows) }
}

/// [`q32_rows_avx2`] with AVX-512 VNNI's `vpdpbusd` (u8 x i8 into i32
/// lanes of four products: the same grouping, so the same integers) in
/// place of `maddubs` + `madd`, and 32 vector registers.
///
/// # Safety
/// As [`q32_rows_avx2`], plus AVX-512 VNNI and VL.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512vnni")]
pub(in crate::host::qmatmul) fn q32_rows_vnni<const F: u32, const W: usize, const R: usize>(
    w_rows: [&[u8]; W],
    a_rows: [&[u8]; R],
) -> [[f32; R]; W] {
    // SAFETY: this function's features are the body's requirements.
    unsafe { q32_body::<F, W, R, true>(w_rows, a_rows) }
}

/// The kernel body, inlined into the wrappers above so it compiles with
/// their features.
///
/// # Safety
/// The CPU supports AVX2, FMA, F16C, and with `VNNI` AVX-512 VNNI + VL.
// `_mm256_dpbusd_epi32` is stable since Rust 1.89; the workspace declares
// 1.88 (the lead bumps rust-version at merge).
#[allow(clippy::incompatible_msrv)]
#[inline(always)]
unsafe fn q32_body<const F: u32, const W: usize, const R: usize, const VNNI: bool>(
    w_rows: [&[u8]; W],
    a_rows: [&[u8]; R],
) -> [[f32; R]; W] {
    // SAFETY: the caller guarantees the CPU features the intrinsics need.
    unsafe {
        let w_bytes = match F {
            2 | 20 => 18,
            3 => 20,
            6 => 22,
            7 => 24,
            _ => 34,
        };
        let with_min = F == GgmlType::Q4_1 as u32 || F == GgmlType::Q5_1 as u32;
        let (a_bytes, a_levels) = if with_min { (36, 4) } else { (34, 2) };
        let mut acc = [[_mm256_setzero_ps(); R]; W];
        let mut summs = [[0.0f32; R]; W];
        let n_blocks = w_rows[0].len() / w_bytes;
        let ones = _mm256_set1_epi16(1);
        for b in 0..n_blocks {
            let mut magnitude = [_mm256_setzero_si256(); W];
            let mut sign = [_mm256_setzero_si256(); W];
            let mut wd = [0.0f32; W];
            let mut wm = [0.0f32; W];
            for i in 0..W {
                let w = &w_rows[i][b * w_bytes..(b + 1) * w_bytes];
                let levels = unpack::<F>(w);
                // Signed levels go through the sign trick: |w| as the unsigned
                // operand of maddubs, w's sign moved onto the activations.
                (magnitude[i], sign[i]) = if with_min {
                    (levels, _mm256_set1_epi8(1))
                } else {
                    (_mm256_sign_epi8(levels, levels), levels)
                };
                wd[i] = f16_at(w, 0);
                if with_min {
                    wm[i] = f16_at(w, 2);
                }
            }
            for r in 0..R {
                let a = &a_rows[r][b * a_bytes..(b + 1) * a_bytes];
                let aq = load32(&a[a_levels..]);
                let ad = f16_at(a, 0);
                for i in 0..W {
                    let signed = _mm256_sign_epi8(aq, sign[i]);
                    let lanes = if VNNI {
                        _mm256_dpbusd_epi32(_mm256_setzero_si256(), magnitude[i], signed)
                    } else {
                        _mm256_madd_epi16(_mm256_maddubs_epi16(magnitude[i], signed), ones)
                    };
                    let d = _mm256_set1_ps(wd[i] * ad);
                    acc[i][r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lanes), acc[i][r]);
                    if with_min {
                        summs[i][r] = wm[i].mul_add(f16_at(a, 2), summs[i][r]);
                    }
                }
            }
        }
        std::array::from_fn(|i| {
            std::array::from_fn(|r| {
                let sum = hsum8(acc[i][r]);
                if with_min { sum + summs[i][r] } else { sum }
            })
        })
    }
}

/// IQ4_NL weight rows times one activation row in ggml's single-row order
/// (`portable::row_dot` with `single_row`): whole block pairs into two
/// accumulators, even blocks and odd blocks, reduced together, and an odd
/// last block added after the reduction. Returns one value per weight row.
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C. The weight rows have equal
/// length, and the activation row holds as many Q8_0 blocks (levels in
/// -127..=127, so `maddubs`'s pair sums cannot saturate).
#[target_feature(enable = "avx2,fma,f16c")]
pub(in crate::host::qmatmul) fn iq4nl_single_avx2<const W: usize>(
    w_rows: [&[u8]; W],
    a_row: &[u8],
) -> [f32; W] {
    const IQ4_NL: u32 = GgmlType::IQ4_NL as u32;
    const W_BYTES: usize = 18;
    let a_bytes = crate::host::qmatmul::activations::Q8_0_BYTES;
    let n_blocks = w_rows
        .iter()
        .map(|row| row.len() / W_BYTES)
        .fold(a_row.len() / a_bytes, usize::min);
    let paired = n_blocks & !1;
    let ones = _mm256_set1_epi16(1);
    let mut acc = [[_mm256_setzero_ps(); 2]; W];
    for b in 0..paired {
        let a = &a_row[b * a_bytes..(b + 1) * a_bytes];
        let aq = load32(&a[2..]);
        let ad = f16_at(a, 0);
        for (i, row) in w_rows.iter().enumerate() {
            let w = &row[b * W_BYTES..(b + 1) * W_BYTES];
            let levels = unpack::<IQ4_NL>(w);
            let magnitude = _mm256_sign_epi8(levels, levels);
            let signed = _mm256_sign_epi8(aq, levels);
            let lanes = _mm256_madd_epi16(_mm256_maddubs_epi16(magnitude, signed), ones);
            let d = _mm256_set1_ps(ad * f16_at(w, 0));
            let slot = &mut acc[i][b & 1];
            *slot = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lanes), *slot);
        }
    }
    std::array::from_fn(|i| {
        let sum = hsum8(_mm256_add_ps(acc[i][0], acc[i][1]));
        if paired < n_blocks {
            let w = &w_rows[i][paired * W_BYTES..];
            crate::host::qmatmul::portable::iq4nl_add_tail(w, &a_row[paired * a_bytes..], sum)
        } else {
            sum
        }
    })
}
