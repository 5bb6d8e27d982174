//! The 256-element formats (Q2_K..Q6_K, IQ4_XS; partner Q8_K).

use std::arch::x86_64::*;

use phobos_quant::{GgmlType, QK_K};

use super::f16_at;
use super::{hsum4, hsum8, iq4_lookup, load16, load32, nibbles};
use crate::host::qmatmul::portable::f32_at;

/// One weight block unpacked for reuse across activation rows.
struct Unpacked {
    /// Levels of the eight 32-element chunks.
    levels: [__m256i; 8],
    /// Per chunk, the i16 scales of its two 16-element halves.
    scales: [__m256i; 8],
    /// Q2_K: 16 mins; Q4_K/Q5_K: 8 mins (low half); Q6_K: the 16 scales.
    extra: __m256i,
    d: f32,
    dmin: f32,
}

/// Per 32-element chunk `c`, the i16 scales of its two 16-element halves
/// (`words[2c]` in the low 128 bits, `words[2c + 1]` in the high ones),
/// by byte shuffles with constant masks instead of scalar broadcasts.
#[inline(always)]
unsafe fn half_scales(words: __m256i) -> [__m256i; 8] {
    // SAFETY: the caller runs with AVX2 (`unpack`'s contract).
    unsafe {
        let low = _mm256_broadcastsi128_si256(_mm256_castsi256_si128(words));
        let high = _mm256_broadcastsi128_si256(_mm256_extracti128_si256(words, 1));
        std::array::from_fn(|c| {
            let src = if c < 4 { low } else { high };
            _mm256_shuffle_epi8(
                src,
                _mm256_set_m128i(word_mask((2 * c + 1) % 8), word_mask((2 * c) % 8)),
            )
        })
    }
}

/// Per chunk `c`, `words[c]` in every i16 lane (formats with one scale per
/// 32 elements).
#[inline(always)]
unsafe fn chunk_scales(words: __m128i) -> [__m256i; 8] {
    // SAFETY: the caller runs with AVX2 (`unpack`'s contract).
    unsafe {
        let src = _mm256_broadcastsi128_si256(words);
        std::array::from_fn(|c| {
            let mask = word_mask(c);
            _mm256_shuffle_epi8(src, _mm256_set_m128i(mask, mask))
        })
    }
}

/// The `pshufb` mask that copies i16 word `w` into every word of a lane.
#[inline(always)]
unsafe fn word_mask(w: usize) -> __m128i {
    let pair = (((2 * w + 1) << 8) | (2 * w)) as i16;
    // SAFETY: SSE2 is part of x86_64.
    unsafe { _mm_set1_epi16(pair) }
}

/// Inlined into the kernel (a call would pass the 17 vectors through
/// memory, and `ty` would not fold).
///
/// # Safety
/// The CPU supports AVX2 and F16C.
#[inline(always)]
unsafe fn unpack(ty: GgmlType, w: &[u8]) -> Unpacked {
    // SAFETY: the caller guarantees the CPU features the intrinsics need.
    unsafe { unpack_body(ty, w) }
}

#[inline(always)]
unsafe fn unpack_body(ty: GgmlType, w: &[u8]) -> Unpacked {
    // SAFETY: `unpack`'s contract.
    unsafe {
        let zero = _mm256_setzero_si256();
        let mut u = Unpacked {
            levels: [zero; 8],
            scales: [zero; 8],
            extra: zero,
            d: 0.0,
            dmin: 0.0,
        };
        let low2 = _mm256_set1_epi8(3);
        let low4 = _mm256_set1_epi8(0x0F);
        match ty {
            GgmlType::Q2_K => {
                for half in 0..2 {
                    let bits = load32(&w[16 + 32 * half..]);
                    for s in 0..4 {
                        let shifted = _mm256_srl_epi16(bits, _mm_cvtsi32_si128(2 * s));
                        u.levels[4 * half + s as usize] = _mm256_and_si256(shifted, low2);
                    }
                }
                let packed = load16(w);
                let sc = _mm256_cvtepu8_epi16(_mm_and_si128(packed, _mm_set1_epi8(0x0F)));
                u.scales = half_scales(sc);
                let mins = _mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0F));
                u.extra = _mm256_cvtepu8_epi16(mins);
                (u.d, u.dmin) = (f16_at(w, 80), f16_at(w, 82));
            }
            GgmlType::Q3_K => {
                let hmask = load32(w);
                for half in 0..2 {
                    let bits = load32(&w[32 + 32 * half..]);
                    for s in 0..4 {
                        let chunk = 4 * half + s as usize;
                        let shifted = _mm256_srl_epi16(bits, _mm_cvtsi32_si128(2 * s));
                        let low = _mm256_and_si256(shifted, low2);
                        let bit = _mm256_set1_epi8(1 << chunk);
                        let set = _mm256_cmpeq_epi8(_mm256_and_si256(hmask, bit), bit);
                        let minus4 = _mm256_andnot_si256(set, _mm256_set1_epi8(4));
                        u.levels[chunk] = _mm256_sub_epi8(low, minus4);
                    }
                }
                let scales = &w[96..108];
                let sc: [i16; 16] = std::array::from_fn(|i| {
                    let low = (scales[i % 8] >> (4 * (i / 8))) & 0x0F;
                    let high = (scales[8 + i % 4] >> (2 * (i / 4))) & 0x03;
                    i16::from(low | (high << 4)) - 32
                });
                // SAFETY: `sc` is 32 readable bytes; the load is unaligned.
                u.scales = half_scales(_mm256_loadu_si256(sc.as_ptr().cast()));
                u.d = f16_at(w, 108);
            }
            GgmlType::Q4_K | GgmlType::Q5_K => {
                let q5 = ty == GgmlType::Q5_K;
                let qs = if q5 { &w[48..176] } else { &w[16..144] };
                let hbits = if q5 { load32(&w[16..48]) } else { zero };
                for pair in 0..4 {
                    let bits = load32(&qs[32 * pair..]);
                    for hi in 0..2 {
                        let chunk = 2 * pair + hi;
                        let shifted = if hi == 0 {
                            bits
                        } else {
                            _mm256_srli_epi16(bits, 4)
                        };
                        let mut level = _mm256_and_si256(shifted, low4);
                        if q5 {
                            let bit = _mm256_set1_epi8(1 << chunk);
                            let set = _mm256_cmpeq_epi8(_mm256_and_si256(hbits, bit), bit);
                            level =
                                _mm256_or_si256(level, _mm256_and_si256(set, _mm256_set1_epi8(16)));
                        }
                        u.levels[chunk] = level;
                    }
                }
                // The 6-bit scales and mins (`k4_scale_min`), four per u32.
                let word = |at: usize| u32::from_le_bytes([w[at], w[at + 1], w[at + 2], w[at + 3]]);
                let (a, b, c) = (word(4), word(8), word(12));
                let low6 = 0x3F3F_3F3F;
                let (low4, top2) = (0x0F0F_0F0F, 0x3030_3030);
                let scales_03 = a & low6;
                let scales_47 = (c & low4) | ((a >> 2) & top2);
                let mins_03 = b & low6;
                let mins_47 = ((c >> 4) & low4) | ((b >> 2) & top2);
                let packed = _mm_set_epi32(
                    mins_47 as i32,
                    mins_03 as i32,
                    scales_47 as i32,
                    scales_03 as i32,
                );
                let words = _mm256_cvtepu8_epi16(packed);
                u.scales = chunk_scales(_mm256_castsi256_si128(words));
                u.extra = _mm256_castsi128_si256(_mm256_extracti128_si256(words, 1));
                (u.d, u.dmin) = (f16_at(w, 0), f16_at(w, 2));
            }
            GgmlType::Q6_K => {
                for half in 0..2 {
                    let ql1 = load32(&w[64 * half..]);
                    let ql2 = load32(&w[64 * half + 32..]);
                    let qh = load32(&w[128 + 32 * half..]);
                    let lows = [
                        ql1,
                        ql2,
                        _mm256_srli_epi16(ql1, 4),
                        _mm256_srli_epi16(ql2, 4),
                    ];
                    let highs = [
                        qh,
                        _mm256_srli_epi16(qh, 2),
                        _mm256_srli_epi16(qh, 4),
                        _mm256_srli_epi16(qh, 6),
                    ];
                    for s in 0..4 {
                        let low = _mm256_and_si256(lows[s], low4);
                        let high = _mm256_slli_epi16(_mm256_and_si256(highs[s], low2), 4);
                        u.levels[4 * half + s] = _mm256_or_si256(low, high);
                    }
                }
                u.extra = _mm256_cvtepi8_epi16(load16(&w[192..]));
                u.scales = half_scales(u.extra);
                u.d = f16_at(w, 208);
            }
            _ => {
                // IQ4_XS
                let scales_h = u32::from(u16::from_le_bytes([w[2], w[3]]));
                let mut sc = [0i16; 8];
                for ib in 0..8 {
                    u.levels[ib] = iq4_lookup(nibbles(&w[8 + 16 * ib..]));
                    let low = (w[4 + ib / 2] >> (4 * (ib % 2))) & 0x0F;
                    let high = ((scales_h >> (2 * ib)) & 3) as u8;
                    sc[ib] = i16::from(low | (high << 4)) - 32;
                }
                // SAFETY: `sc` is 16 readable bytes; the load is unaligned.
                u.scales = chunk_scales(_mm_loadu_si128(sc.as_ptr().cast()));
                u.d = f16_at(w, 0);
            }
        }
        u
    }
}

/// The format of kernel instance `F` (a ggml type id), folded at compile time.
const fn k_type(id: u32) -> GgmlType {
    match id {
        10 => GgmlType::Q2_K,
        11 => GgmlType::Q3_K,
        12 => GgmlType::Q4_K,
        13 => GgmlType::Q5_K,
        14 => GgmlType::Q6_K,
        _ => GgmlType::IQ4_XS,
    }
}

/// One weight row of a 256-element format times `R` Q8_K activation rows,
/// in the order of `portable::row_dot`.
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C. `F` is the id of a 256-element format
/// with a kernel, and each activation row holds as many Q8_K blocks (levels
/// in -127..=127) as `w_row` has blocks.
#[target_feature(enable = "avx2,fma,f16c")]
pub(in crate::host::qmatmul) fn k_rows_avx2<const F: u32, const R: usize>(
    w_row: &[u8],
    a_rows: [&[u8]; R],
) -> [f32; R] {
    const A_BYTES: usize = 4 + QK_K + 32;
    let ty = k_type(F);
    let w_bytes = match F {
        10 => 84,
        11 => 110,
        12 => 144,
        13 => 176,
        14 => 210,
        _ => 136,
    };
    let signed = matches!(ty, GgmlType::Q3_K | GgmlType::IQ4_XS);
    let mut acc = [_mm256_setzero_ps(); R];
    let mut acc_mins = [_mm_setzero_ps(); R];
    let mut summs = [0.0f32; R];
    for (b, w) in w_row.chunks_exact(w_bytes).enumerate() {
        // SAFETY: this function's features cover `unpack`'s.
        let u = unsafe { unpack(ty, w) };
        for r in 0..R {
            let a = &a_rows[r][b * A_BYTES..(b + 1) * A_BYTES];
            let yd = f32_at(a, 0);
            let mut sumi = _mm256_setzero_si256();
            for c in 0..8 {
                let aq = load32(&a[4 + 32 * c..]);
                let pairs = if signed {
                    _mm256_maddubs_epi16(
                        _mm256_sign_epi8(u.levels[c], u.levels[c]),
                        _mm256_sign_epi8(aq, u.levels[c]),
                    )
                } else {
                    _mm256_maddubs_epi16(u.levels[c], aq)
                };
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(u.scales[c], pairs));
            }
            let bsums = load32(&a[4 + QK_K..]);
            match ty {
                GgmlType::Q2_K => {
                    let mins = _mm256_cvtepi32_ps(_mm256_madd_epi16(u.extra, bsums));
                    acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(-yd * u.dmin), mins, acc[r]);
                }
                GgmlType::Q4_K | GgmlType::Q5_K => {
                    let pair_sums = _mm_hadd_epi16(
                        _mm256_castsi256_si128(bsums),
                        _mm256_extracti128_si256(bsums, 1),
                    );
                    let prod = _mm_madd_epi16(_mm256_castsi256_si128(u.extra), pair_sums);
                    let dmin = -yd * u.dmin;
                    if ty == GgmlType::Q4_K {
                        acc_mins[r] =
                            _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(prod), acc_mins[r]);
                    } else {
                        let total = _mm_hadd_epi32(_mm_hadd_epi32(prod, prod), prod);
                        let total = _mm_cvtsi128_si32(total);
                        summs[r] = dmin.mul_add(total as f32, summs[r]);
                    }
                }
                GgmlType::Q6_K => {
                    let offset = _mm256_slli_epi32(_mm256_madd_epi16(bsums, u.extra), 5);
                    sumi = _mm256_sub_epi32(sumi, offset);
                }
                _ => {}
            }
            let d = _mm256_set1_ps(yd * u.d);
            acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sumi), acc[r]);
        }
    }
    std::array::from_fn(|r| match ty {
        GgmlType::Q4_K => hsum8(acc[r]) + hsum4(acc_mins[r]),
        GgmlType::Q5_K => hsum8(acc[r]) + summs[r],
        _ => hsum8(acc[r]),
    })
}
