//! AVX-512 VNNI kernels for Q4_K, Q5_K and Q6_K (partner Q8_K), bit-exact
//! with `portable.rs`.
//!
//! A 512-bit register holds two 32-element chunks of a block (chunk `2j`
//! low, `2j + 1` high), so the `maddubs` + scale step runs on two chunks at
//! once (`vpdpwssd` fuses the scale multiply and the add). The eight i32
//! lanes of ggml's order are the two halves added at the end: integer
//! sums, exact in any order. The float part (one FMA per lane and block,
//! the min terms) is the AVX2 kernel's.

use std::arch::x86_64::*;

use phobos_quant::{GgmlType, QK_K};

use super::kquants::{block_bytes, hsum_i32, hsum_i32_128};
use super::{PrefetchAhead, f16_at, k_row_total, load64};
use crate::host::qmatmul::activations::Q8_K_BYTES;
use crate::host::qmatmul::portable::{batch_fold, f32_at, u32_at};

const Q4_K: u32 = GgmlType::Q4_K as u32;
const Q5_K: u32 = GgmlType::Q5_K as u32;

/// Whether format `ty` has a kernel here.
pub(in crate::host::qmatmul) const fn has_k_512(ty: GgmlType) -> bool {
    matches!(ty, GgmlType::Q4_K | GgmlType::Q5_K | GgmlType::Q6_K)
}

/// One weight block unpacked for reuse across activation rows.
pub(super) struct Unpacked {
    /// Levels (unsigned) of chunk pairs (0, 1), (2, 3), (4, 5), (6, 7).
    pub(super) levels: [__m512i; 4],
    /// Per chunk pair, the i16 scale of each 16-element group.
    pub(super) scales: [__m512i; 4],
    /// Q4_K/Q5_K: the 8 mins (i16, low 128 bits); Q6_K: the 16 scales.
    pub(super) extra: __m256i,
    pub(super) d: f32,
    pub(super) dmin: f32,
}

/// The 6-bit scales and mins of a Q4_K/Q5_K block's eight sub-blocks, as
/// bytes: scales 0..8 then mins 8..16 (`w` holds the block from its start).
#[inline(always)]
pub(super) fn scales_and_mins(w: &[u8]) -> __m128i {
    let (s0, s1, s2) = (u32_at(w, 4), u32_at(w, 8), u32_at(w, 12));
    let (m6, m4, m2) = (0x3F3F_3F3Fu32, 0x0F0F_0F0Fu32, 0x0303_0303u32);
    let scales_low = s0 & m6;
    let scales_high = (s2 & m4) | (((s0 >> 6) & m2) << 4);
    let mins_low = s1 & m6;
    let mins_high = ((s2 >> 4) & m4) | (((s1 >> 6) & m2) << 4);
    // SAFETY: SSE2 (every x86-64).
    unsafe {
        _mm_set_epi32(
            mins_high as i32,
            mins_low as i32,
            scales_high as i32,
            scales_low as i32,
        )
    }
}

#[inline(always)]
unsafe fn broadcast32(bytes: &[u8]) -> __m512i {
    // SAFETY: AVX-512 F is enabled by the caller.
    unsafe { _mm512_broadcast_i64x4(super::load32(bytes)) }
}

/// Word `w` of the scale register of chunk pair `pair` is the scale of
/// 16-element group `4 * pair + w / 8` (16 i16 scales in `scales16`).
#[inline(always)]
unsafe fn pair_scales(scales16: __m256i, pair: i16) -> [__m512i; 4] {
    // SAFETY: AVX-512 BW is enabled by the caller.
    unsafe {
        let all = _mm512_castsi256_si512(scales16);
        std::array::from_fn(|pair_index| {
            let base = 4 * (pair + pair_index as i16);
            let index = _mm512_set_epi64(
                i64::from(base + 3) * 0x0001_0001_0001_0001,
                i64::from(base + 3) * 0x0001_0001_0001_0001,
                i64::from(base + 2) * 0x0001_0001_0001_0001,
                i64::from(base + 2) * 0x0001_0001_0001_0001,
                i64::from(base + 1) * 0x0001_0001_0001_0001,
                i64::from(base + 1) * 0x0001_0001_0001_0001,
                i64::from(base) * 0x0001_0001_0001_0001,
                i64::from(base) * 0x0001_0001_0001_0001,
            );
            _mm512_permutexvar_epi16(index, all)
        })
    }
}

#[inline(always)]
pub(super) unsafe fn unpack<const F: u32>(w: &[u8]) -> Unpacked {
    // SAFETY: the caller's target features cover every intrinsic here.
    unsafe {
        let low4 = _mm512_set1_epi8(0x0F);
        let mut levels = [_mm512_setzero_si512(); 4];
        match F {
            Q4_K | Q5_K => {
                let q5 = F == Q5_K;
                let qs = if q5 { &w[48..176] } else { &w[16..144] };
                // Low nibbles are chunk 2j, high nibbles chunk 2j + 1.
                let fours = 0x0004_0004_0004_0004i64;
                let counts = _mm512_set_epi64(fours, fours, fours, fours, 0, 0, 0, 0);
                for (j, level) in levels.iter_mut().enumerate() {
                    let bits = broadcast32(&qs[32 * j..]);
                    *level = _mm512_and_si512(_mm512_srlv_epi16(bits, counts), low4);
                    if q5 {
                        // Bit `c` of byte `l` of qh is the fifth bit of
                        // element `l` of chunk `c`.
                        let qh = &w[16..48];
                        let mut fifth = 0u64;
                        for half in 0..2 {
                            let chunk = 2 * j + half;
                            let bit = _mm256_set1_epi8(1 << chunk);
                            let hits =
                                _mm256_cmpeq_epi8(_mm256_and_si256(super::load32(qh), bit), bit);
                            fifth |= u64::from(_mm256_movemask_epi8(hits) as u32) << (32 * half);
                        }
                        *level = _mm512_mask_add_epi8(*level, fifth, *level, _mm512_set1_epi8(16));
                    }
                }
                let packed = scales_and_mins(w);
                let words = _mm256_cvtepu8_epi16(packed);
                // Each sub-block scale covers two 16-element groups.
                let doubled = _mm256_permutexvar_epi16(
                    _mm256_set_epi16(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0),
                    words,
                );
                Unpacked {
                    levels,
                    scales: pair_scales(doubled, 0),
                    extra: _mm256_castsi128_si256(_mm256_extracti128_si256(words, 1)),
                    d: f16_at(w, 0),
                    dmin: f16_at(w, 2),
                }
            }
            _ => {
                // Q6_K: element e of half h, within i = e % 128: low nibble
                // of ql[64h + i % 64] (>> 4 for i >= 64), high bits
                // 2(i / 32)..+2 of qh[32h + i % 32].
                for half in 0..2 {
                    let ql = load64(&w[64 * half..]);
                    let qh = broadcast32(&w[128 + 32 * half..]);
                    for part in 0..2 {
                        let low = if part == 0 {
                            _mm512_and_si512(ql, low4)
                        } else {
                            _mm512_and_si512(_mm512_srli_epi16(ql, 4), low4)
                        };
                        // Chunks 4h + 2part and 4h + 2part + 1: qh >> 4part
                        // and >> 4part + 2, the two bits moved to 4..6.
                        let (a, b) = if part == 0 { (0i64, 2i64) } else { (4, 6) };
                        let counts = _mm512_set_epi64(
                            b * 0x0001_0001_0001_0001,
                            b * 0x0001_0001_0001_0001,
                            b * 0x0001_0001_0001_0001,
                            b * 0x0001_0001_0001_0001,
                            a * 0x0001_0001_0001_0001,
                            a * 0x0001_0001_0001_0001,
                            a * 0x0001_0001_0001_0001,
                            a * 0x0001_0001_0001_0001,
                        );
                        let high = _mm512_and_si512(
                            _mm512_slli_epi16(_mm512_srlv_epi16(qh, counts), 4),
                            _mm512_set1_epi8(0x30),
                        );
                        levels[2 * half + part] = _mm512_or_si512(low, high);
                    }
                }
                let scales16 = _mm256_cvtepi8_epi16(super::load16(&w[192..]));
                Unpacked {
                    levels,
                    scales: pair_scales(scales16, 0),
                    extra: scales16,
                    d: f16_at(w, 208),
                    dmin: 0.0,
                }
            }
        }
    }
}

/// `W` weight rows of Q4_K, Q5_K or Q6_K times `R` Q8_K activation rows,
/// each pair in the order of `portable::row_dot`; returns `[w][r]`. Two
/// weight rows per pass give decode (`R` = 1) two independent chains per
/// block and share each activation load between them.
///
/// # Safety
/// The CPU must support AVX2, FMA, F16C and AVX-512 F, BW, VL and VNNI. `F`
/// is one of the three formats, and each activation row holds as many
/// Q8_K blocks (levels in -127..=127) as every weight row has blocks.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
// `_mm512_dpwssd_epi32` is stable since Rust 1.89; the workspace declares
// 1.88 (the lead bumps rust-version at merge).
#[allow(clippy::incompatible_msrv)]
pub(in crate::host::qmatmul) fn k_rows_512<
    const F: u32,
    const W: usize,
    const R: usize,
    const BATCH: bool,
>(
    w_rows: [&[u8]; W],
    a_rows: [&[u8]; R],
    prefetch: PrefetchAhead,
) -> [[f32; R]; W] {
    let w_bytes = block_bytes(F);
    let n_blocks = w_rows
        .iter()
        .map(|row| row.len() / w_bytes)
        .min()
        .unwrap_or(0);
    let mut acc = [[_mm256_setzero_ps(); R]; W];
    let mut acc_mins = [[_mm_setzero_ps(); R]; W];
    let mut summs = [[0.0f32; R]; W];
    let mut batch_acc = [[0.0f32; R]; W];
    for b in 0..n_blocks {
        // (Loops, not `array::from_fn`: its closure would not inline into
        // this `target_feature` function.)
        if R == 1 {
            // Decode reads each matrix from memory once; the rows of a
            // pass lie back to back, as in a tensor.
            let pass_bytes = W * w_bytes;
            prefetch.lines(w_rows[0].as_ptr().wrapping_add(b * pass_bytes), pass_bytes);
        }
        let mut blocks = [const { None }; W];
        for (block, row) in blocks.iter_mut().zip(&w_rows) {
            // SAFETY: this function's features cover the helper's.
            *block = Some(unsafe { unpack::<F>(&row[b * w_bytes..(b + 1) * w_bytes]) });
        }
        for r in 0..R {
            let a = &a_rows[r][b * Q8_K_BYTES..(b + 1) * Q8_K_BYTES];
            let yd = f32_at(a, 0);
            let aq: [__m512i; 4] = std::array::from_fn(|pair| load64(&a[4 + 64 * pair..]));
            let bsums = super::load32(&a[4 + QK_K..]);
            let pair_sums = _mm_hadd_epi16(
                _mm256_castsi256_si128(bsums),
                _mm256_extracti128_si256(bsums, 1),
            );
            for (i, block) in blocks.iter().enumerate() {
                let Some(u) = block else { continue };
                let mut wide = _mm512_setzero_si512();
                for (pair, &aq) in aq.iter().enumerate() {
                    let products = _mm512_maddubs_epi16(u.levels[pair], aq);
                    wide = _mm512_dpwssd_epi32(wide, u.scales[pair], products);
                }
                let mut sumi = _mm256_add_epi32(
                    _mm512_castsi512_si256(wide),
                    _mm512_extracti64x4_epi64(wide, 1),
                );
                if BATCH {
                    // SAFETY: this function's features include AVX2.
                    let (mut s1, mut s2) = unsafe { (hsum_i32(sumi), 0) };
                    if F == Q4_K || F == Q5_K {
                        let prod = _mm_madd_epi16(_mm256_castsi256_si128(u.extra), pair_sums);
                        // SAFETY: as above.
                        s2 = unsafe { hsum_i32_128(prod) };
                    } else {
                        // SAFETY: as above.
                        s1 -= 32 * unsafe { hsum_i32(_mm256_madd_epi16(bsums, u.extra)) };
                    }
                    let dmin = (F == Q4_K || F == Q5_K).then_some(u.dmin);
                    batch_acc[i][r] = batch_fold(batch_acc[i][r], u.d, dmin, s1, s2, yd);
                    continue;
                }
                if F == Q4_K || F == Q5_K {
                    let prod = _mm_madd_epi16(_mm256_castsi256_si128(u.extra), pair_sums);
                    let dmin = -yd * u.dmin;
                    if F == Q4_K {
                        acc_mins[i][r] =
                            _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(prod), acc_mins[i][r]);
                    } else {
                        let total = _mm_hadd_epi32(_mm_hadd_epi32(prod, prod), prod);
                        let total = _mm_cvtsi128_si32(total);
                        summs[i][r] = dmin.mul_add(total as f32, summs[i][r]);
                    }
                } else {
                    let offset = _mm256_slli_epi32(_mm256_madd_epi16(bsums, u.extra), 5);
                    sumi = _mm256_sub_epi32(sumi, offset);
                }
                let d = _mm256_set1_ps(yd * u.d);
                acc[i][r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sumi), acc[i][r]);
            }
        }
    }
    if BATCH {
        return batch_acc;
    }
    let mut out = [[0.0f32; R]; W];
    for i in 0..W {
        for r in 0..R {
            out[i][r] = k_row_total::<F>(acc[i][r], acc_mins[i][r], summs[i][r]);
        }
    }
    out
}
