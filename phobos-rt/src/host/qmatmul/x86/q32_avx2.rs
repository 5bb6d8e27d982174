//! AVX2 tile for the Q8_0-partner formats Q4_0, Q5_0, Q8_0 and IQ4_NL:
//! `W` weight rows times `R` activation rows per pass, the same integers and
//! float operations as `portable::row_dot` (multi-row order).
//!
//! What makes it faster than `legacy::q32_rows_avx2` on AVX2-only CPUs:
//! - Q4_0 and Q5_0 multiply offset-binary weights (`level + 2^s`, the raw
//!   nibbles plus the fifth bit, so no sign trick) and add the activation's
//!   precomputed `-2^s` lane sums (`QActivations`): the lanes are the same
//!   exact integers with one `vpsignb` fewer per product and per block.
//! - The activation scales are the f32 ones `QActivations` converted once;
//!   the `W` weight rows' f16 scales are converted, and multiplied by the
//!   activation scale, as one vector per block.
//! - Four weight rows per pass for a single activation row, so the
//!   activation block and its scale are loaded once per four rows.

use std::arch::x86_64::*;

use phobos_quant::GgmlType;

use super::q32_512::ActRow;
use super::{bits_to_bytes, hsum8, iq4_lookup, load32, nibbles};

const Q4_0: u32 = GgmlType::Q4_0 as u32;
const Q5_0: u32 = GgmlType::Q5_0 as u32;
const IQ4_NL: u32 = GgmlType::IQ4_NL as u32;

/// How far ahead of each weight row's current block a streamed pass
/// prefetches: 64 blocks (about 2 KiB of Q8_0). On the Zen 2 of session 8
/// the 262144x640 Q8_0 output projection at M = 1 ran 31.1 ms with 8
/// blocks, 27.2 with 24, 25.6 with 64 and no better with 128 or 256 (one
/// thread; 15.6 -> 12.6 ms on two): 8 blocks ahead is less than one
/// memory latency of the stream.
const PREFETCH_BLOCKS: usize = 64;

/// Block bytes of format `F`.
const fn block_bytes(f: u32) -> usize {
    match f {
        Q4_0 | IQ4_NL => 18,
        Q5_0 => 22,
        _ => 34,
    }
}

/// Whether `F` runs as offset binary (`Some(s)`: weights are `level + 2^s`).
const fn offset_shift(f: u32) -> Option<i32> {
    match f {
        Q4_0 => Some(3),
        Q5_0 => Some(4),
        _ => None,
    }
}

/// One weight block: the unsigned `maddubs` operand and, for the sign
/// trick (Q8_0, IQ4_NL), the signed levels whose signs move onto the
/// activations.
#[inline(always)]
unsafe fn unpack<const F: u32>(w: &[u8]) -> (__m256i, __m256i) {
    // SAFETY: the caller runs with AVX2 (`q32_tile_avx2`'s contract).
    unsafe {
        match F {
            Q4_0 => (nibbles(&w[2..18]), _mm256_setzero_si256()),
            Q5_0 => {
                let high = bits_to_bytes(u32::from_le_bytes([w[2], w[3], w[4], w[5]]));
                let fifth = _mm256_and_si256(high, _mm256_set1_epi8(0x10));
                (
                    _mm256_or_si256(nibbles(&w[6..22]), fifth),
                    _mm256_setzero_si256(),
                )
            }
            IQ4_NL => {
                let levels = iq4_lookup(nibbles(&w[2..18]));
                (_mm256_sign_epi8(levels, levels), levels)
            }
            _ => {
                let levels = load32(&w[2..34]);
                (_mm256_sign_epi8(levels, levels), levels)
            }
        }
    }
}

/// `W` weight rows of format `F` times `R` activation rows; returns
/// `[w][r]`, bit-identical to `portable::row_dot` (multi-row order).
/// `PREFETCH`: software-prefetch the weight rows [`PREFETCH_BLOCKS`] ahead.
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C. `F` is Q4_0, Q5_0, Q8_0 or
/// IQ4_NL and `W <= 4`; the weight rows hold whole blocks of `F`, and each activation
/// row holds Q8_0 blocks (levels in -127..=127) with their scales and
/// negated lane sums (`QActivations`), at least as many as a weight row.
#[target_feature(enable = "avx2,fma,f16c")]
pub(in crate::host::qmatmul) fn q32_tile_avx2<
    const F: u32,
    const W: usize,
    const R: usize,
    const PREFETCH: bool,
>(
    w_rows: [&[u8]; W],
    a_rows: [ActRow<'_>; R],
) -> [[f32; R]; W] {
    const A_BYTES: usize = crate::host::qmatmul::activations::Q8_0_BYTES;
    let w_bytes = block_bytes(F);
    let n_blocks = w_rows
        .iter()
        .map(|row| row.len() / w_bytes)
        .chain(a_rows.iter().map(|a| {
            (a.blocks.len() / A_BYTES)
                .min(a.scales.len())
                .min(a.neg_sums.len() / 8)
        }))
        .min()
        .unwrap_or(0);
    // Exact-length views: `view[b]` for `b < n_blocks` needs no check.
    let w_blocks: [&[u8]; W] = std::array::from_fn(|i| &w_rows[i][..n_blocks * w_bytes]);
    let a_blocks: [&[[u8; A_BYTES]]; R] =
        std::array::from_fn(|r| &a_rows[r].blocks.as_chunks::<A_BYTES>().0[..n_blocks]);
    let a_scales: [&[f32]; R] = std::array::from_fn(|r| &a_rows[r].scales[..n_blocks]);
    let a_sums: [&[[i32; 8]]; R] =
        std::array::from_fn(|r| &a_rows[r].neg_sums.as_chunks::<8>().0[..n_blocks]);
    let ones = _mm256_set1_epi16(1);
    let mut acc = [[_mm256_setzero_ps(); R]; W];
    const { assert!(W <= 4, "the weight scales share one u64") };
    // Lane `i` of the permute picks weight row `i`'s `d_w * d_x`.
    let lane: [__m256i; W] = std::array::from_fn(|i| _mm256_set1_epi32(i as i32));
    for b in 0..n_blocks {
        let mut unsigned = [_mm256_setzero_si256(); W];
        let mut sign = [_mm256_setzero_si256(); W];
        // The weight rows' f16 scales side by side: one conversion for all
        // `W` rows, and for one activation row one multiply.
        let mut scale_bits = 0u64;
        for i in 0..W {
            // SAFETY: `b < n_blocks` and the row is `n_blocks` blocks long.
            let w = unsafe { w_blocks[i].get_unchecked(b * w_bytes..(b + 1) * w_bytes) };
            // SAFETY: this function's features cover `unpack`'s.
            (unsigned[i], sign[i]) = unsafe { unpack::<F>(w) };
            if PREFETCH {
                // A matrix larger than the caches streams from memory
                // (the 262144-row output projection): the hardware
                // prefetcher alone left decode well below ggml's bandwidth.
                let ahead = w_blocks[i]
                    .as_ptr()
                    .wrapping_add((b + PREFETCH_BLOCKS) * w_bytes);
                _mm_prefetch::<_MM_HINT_T0>(ahead.cast());
            }
            scale_bits |= u64::from(u16::from_le_bytes([w[0], w[1]])) << (16 * i);
        }
        let wd = _mm256_castps128_ps256(_mm_cvtph_ps(_mm_cvtsi64_si128(scale_bits as i64)));
        // Several activation rows: each weight row's scale broadcast once
        // per block measured faster than a permute per product.
        let wd_rows: [__m256; W] = std::array::from_fn(|i| {
            if R > 1 {
                _mm256_permutevar8x32_ps(wd, lane[i])
            } else {
                wd
            }
        });
        for r in 0..R {
            let a = &a_blocks[r][b];
            let aq = load32(&a[2..]);
            // ggml's d_w * d_x: one f32 product each, the same in either order.
            let ad = _mm256_set1_ps(a_scales[r][b]);
            let d_all = _mm256_mul_ps(wd, ad);
            let offset = offset_shift(F).map(|shift| {
                // SAFETY: the array is 32 readable bytes; unaligned load.
                let sums = unsafe { _mm256_loadu_si256(a_sums[r][b].as_ptr().cast()) };
                _mm256_sll_epi32(sums, _mm_cvtsi32_si128(shift))
            });
            for i in 0..W {
                let pairs = match offset {
                    Some(_) => _mm256_maddubs_epi16(unsigned[i], aq),
                    None => _mm256_maddubs_epi16(unsigned[i], _mm256_sign_epi8(aq, sign[i])),
                };
                let mut lanes = _mm256_madd_epi16(pairs, ones);
                if let Some(offset) = offset {
                    lanes = _mm256_add_epi32(lanes, offset);
                }
                let d = if R > 1 {
                    _mm256_mul_ps(wd_rows[i], ad)
                } else {
                    _mm256_permutevar8x32_ps(d_all, lane[i])
                };
                acc[i][r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lanes), acc[i][r]);
            }
        }
    }
    std::array::from_fn(|i| std::array::from_fn(|r| hsum8(acc[i][r])))
}
