//! Q4_K, Q5_K and Q6_K times one Q8_K activation row on AVX-512 VNNI in
//! the batch order (`portable::batch_row_dot`), four weight rows per pass.
//!
//! The batch order needs only each block's two integer totals, so nothing
//! here keeps ggml's eight lanes: a 512-bit register holds two chunks as
//! stored (the low nibbles of 64 bytes are chunks `4j` and `4j + 2`, the
//! high nibbles `4j + 1` and `4j + 3`), the activation is loaded to match,
//! and `vpdpwssd` applies each chunk's scale while it sums. The four rows'
//! totals are reduced together and folded as one vector, lane per row, the
//! same three roundings as the scalar fold. The AVX2 tile and the AVX-512
//! row kernel both unpack a block's chunks one 32-byte half at a time and
//! reduce each (row, block) alone. Q6_K keeps the row kernel's unpacking
//! (`k_512.rs`: its chunks are whole bytes, no nibble pairs to split) and
//! shares the four-row reduction and fold.

use std::arch::x86_64::*;

use phobos_quant::{GgmlType, QK_K};

use super::{PrefetchAhead, load32, load64};
use crate::host::qmatmul::activations::Q8_K_BYTES;
use crate::host::qmatmul::portable::f32_at;

const Q4_K: u32 = GgmlType::Q4_K as u32;
const Q5_K: u32 = GgmlType::Q5_K as u32;

/// Bytes of one block of `F`: d, dmin (f16), 12 bytes of 6-bit scales and
/// mins, Q5_K's 32 bytes of fifth bits, 128 bytes of nibbles.
const fn block_bytes(f: u32) -> usize {
    if f == Q5_K { 176 } else { 144 }
}

/// Chunks `(low 256 bits, high 256 bits)` of level register `k`.
const CHUNKS: [(u8, u8); 4] = [(0, 2), (1, 3), (4, 6), (5, 7)];

/// Rows per pass.
pub(in crate::host::qmatmul) const DECODE_ROWS_PER_PASS: usize = 4;

/// `vpshufb` indices that spread chunk scales over the 16 words of each
/// chunk: for register `k`, byte `first[k]` (as a word: the byte, then
/// zero) in the low 256 bits and byte `first[k] + 2` in the high 256 bits.
const fn scale_index(first: u8) -> [u8; 64] {
    let mut index = [0x80u8; 64];
    let mut byte = 0;
    while byte < 64 {
        if byte % 2 == 0 {
            index[byte] = if byte < 32 { first } else { first + 2 };
        }
        byte += 1;
    }
    index
}

const SCALE_INDEX: [[u8; 64]; 4] = [
    scale_index(0),
    scale_index(1),
    scale_index(4),
    scale_index(5),
];

/// Two 32-byte chunks as one register (`low` in the low 256 bits).
#[inline(always)]
unsafe fn join(low: __m256i, high: __m256i) -> __m512i {
    // SAFETY: AVX-512 F is enabled by the caller.
    unsafe { _mm512_inserti64x4::<1>(_mm512_castsi256_si512(low), high) }
}

/// Whole blocks of `w_bytes` every weight row of a pass and the Q8_K
/// activation row hold.
fn block_count(w_rows: &[&[u8]], w_bytes: usize, a_row: &[u8]) -> usize {
    w_rows
        .iter()
        .map(|row| row.len() / w_bytes)
        .min()
        .unwrap_or(0)
        .min(a_row.len() / Q8_K_BYTES)
}

/// Prefetches a pass's weights ahead of block `b` (`prefetch`): decode
/// reads each matrix from memory once, and the rows of a pass lie back to
/// back, as in a tensor.
#[inline(always)]
fn prefetch_ahead(prefetch: PrefetchAhead, first_row: &[u8], b: usize, w_bytes: usize) {
    let pass_bytes = DECODE_ROWS_PER_PASS * w_bytes;
    prefetch.lines(first_row.as_ptr().wrapping_add(b * pass_bytes), pass_bytes);
}

/// The f16 field at `offset` as raw bits.
#[inline(always)]
fn f16_bits(block: &[u8], offset: usize) -> i16 {
    i16::from_le_bytes([block[offset], block[offset + 1]])
}

/// Weight rows `w_rows` of `F` (Q4_K or Q5_K) times one Q8_K activation
/// row; returns one result per row, each bit-equal to
/// `portable::batch_row_dot`.
///
/// # Safety
/// The CPU must support AVX2, FMA, F16C and AVX-512 F, BW, VL and VNNI.
/// The activation levels are in -128..=127 (any `i8`).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
// `_mm512_dpwssd_epi32` is stable since Rust 1.89; the workspace declares
// 1.88 (the lead bumps rust-version at merge).
#[allow(clippy::incompatible_msrv)]
pub(in crate::host::qmatmul) fn k_min_decode_512<const F: u32>(
    w_rows: [&[u8]; DECODE_ROWS_PER_PASS],
    a_row: &[u8],
    prefetch: PrefetchAhead,
) -> [f32; DECODE_ROWS_PER_PASS] {
    const { assert!(F == Q4_K || F == Q5_K) };
    let w_bytes = block_bytes(F);
    let qs_start = w_bytes - 128;
    let n_blocks = block_count(&w_rows, w_bytes, a_row);
    let low4 = _mm512_set1_epi8(0x0F);
    // SAFETY: each index table is 64 readable bytes.
    let scale_index: [__m512i; 4] =
        std::array::from_fn(|k| unsafe { _mm512_loadu_si512(SCALE_INDEX[k].as_ptr().cast()) });
    // Q5_K: per level register, the qh bit of each byte's chunk.
    let fifth_bits: [__m512i; 4] = std::array::from_fn(|k| {
        let (low, high) = CHUNKS[k];
        _mm512_inserti64x4::<1>(_mm512_set1_epi8(1 << low), _mm256_set1_epi8(1 << high))
    });
    let mut acc = _mm_setzero_ps();
    for b in 0..n_blocks {
        prefetch_ahead(prefetch, w_rows[0], b, w_bytes);
        let a = &a_row[b * Q8_K_BYTES..(b + 1) * Q8_K_BYTES];
        let chunk = |c: usize| load32(&a[4 + 32 * c..]);
        // SAFETY (this and the blocks below): this function's features
        // cover the helpers'; every slice is a whole block.
        let (a_levels, chunk_sums) = unsafe {
            let a_levels = [
                join(chunk(0), chunk(2)),
                join(chunk(1), chunk(3)),
                join(chunk(4), chunk(6)),
                join(chunk(5), chunk(7)),
            ];
            let bsums = load32(&a[4 + QK_K..]);
            let chunk_sums = _mm_hadd_epi16(
                _mm256_castsi256_si128(bsums),
                _mm256_extracti128_si256::<1>(bsums),
            );
            (a_levels, chunk_sums)
        };
        let mut totals = [_mm256_setzero_si256(); DECODE_ROWS_PER_PASS];
        let mut min_parts = [_mm_setzero_si128(); DECODE_ROWS_PER_PASS];
        let mut halves = [0i16; 2 * DECODE_ROWS_PER_PASS];
        for (i, row) in w_rows.iter().enumerate() {
            let block = &row[b * w_bytes..(b + 1) * w_bytes];
            halves[i] = f16_bits(block, 0);
            halves[DECODE_ROWS_PER_PASS + i] = f16_bits(block, 2);
            {
                let (q0, q1) = (load64(&block[qs_start..]), load64(&block[qs_start + 64..]));
                let mut levels = [
                    _mm512_and_si512(q0, low4),
                    _mm512_and_si512(_mm512_srli_epi16::<4>(q0), low4),
                    _mm512_and_si512(q1, low4),
                    _mm512_and_si512(_mm512_srli_epi16::<4>(q1), low4),
                ];
                if F == Q5_K {
                    // Bit `c` of qh byte `l`: the fifth bit of element `l`
                    // of chunk `c`; both halves read the same 32 bytes.
                    let qh = _mm512_broadcast_i64x4(load32(&block[16..]));
                    for (level, &bits) in levels.iter_mut().zip(&fifth_bits) {
                        let set = _mm512_test_epi8_mask(qh, bits);
                        *level = _mm512_mask_add_epi8(*level, set, *level, _mm512_set1_epi8(16));
                    }
                }
                let packed = super::k_512::scales_and_mins(block);
                let spread = _mm512_broadcast_i32x4(packed);
                let mut wide = _mm512_setzero_si512();
                for k in 0..4 {
                    let products = _mm512_maddubs_epi16(levels[k], a_levels[k]);
                    let scales = _mm512_shuffle_epi8(spread, scale_index[k]);
                    wide = _mm512_dpwssd_epi32(wide, scales, products);
                }
                totals[i] = _mm256_add_epi32(
                    _mm512_castsi512_si256(wide),
                    _mm512_extracti64x4_epi64::<1>(wide),
                );
                let mins = _mm_cvtepu8_epi16(_mm_srli_si128::<8>(packed));
                min_parts[i] = _mm_madd_epi16(mins, chunk_sums);
            }
        }
        // SAFETY: as above.
        unsafe {
            let s1 = super::kquants::hsum4(totals);
            let s2 = _mm_hadd_epi32(
                _mm_hadd_epi32(min_parts[0], min_parts[1]),
                _mm_hadd_epi32(min_parts[2], min_parts[3]),
            );
            let scales = _mm256_cvtph_ps(_mm_loadu_si128(halves.as_ptr().cast()));
            let d = _mm256_castps256_ps128(scales);
            let dmin = _mm256_extractf128_ps::<1>(scales);
            let term = _mm_mul_ps(d, _mm_cvtepi32_ps(s1));
            let term = _mm_fnmadd_ps(dmin, _mm_cvtepi32_ps(s2), term);
            acc = _mm_fmadd_ps(term, _mm_set1_ps(f32_at(a, 0)), acc);
        }
    }
    let mut out = [0.0f32; DECODE_ROWS_PER_PASS];
    // SAFETY: `out` holds four f32.
    unsafe { _mm_storeu_ps(out.as_mut_ptr(), acc) };
    out
}

/// Bytes of one Q6_K block.
const Q6_K_BYTES: usize = 210;

/// [`k_min_decode_512`] for Q6_K: `s1` is the scaled level sum less 32 times
/// the scaled activation sums (the levels are stored plus 32), no min part.
///
/// # Safety
/// As [`k_min_decode_512`].
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
#[allow(clippy::incompatible_msrv)]
pub(in crate::host::qmatmul) fn q6k_decode_512(
    w_rows: [&[u8]; DECODE_ROWS_PER_PASS],
    a_row: &[u8],
    prefetch: PrefetchAhead,
) -> [f32; DECODE_ROWS_PER_PASS] {
    const Q6_K: u32 = GgmlType::Q6_K as u32;
    let n_blocks = block_count(&w_rows, Q6_K_BYTES, a_row);
    let mut acc = _mm_setzero_ps();
    for b in 0..n_blocks {
        prefetch_ahead(prefetch, w_rows[0], b, Q6_K_BYTES);
        let a = &a_row[b * Q8_K_BYTES..(b + 1) * Q8_K_BYTES];
        let a_levels: [__m512i; 4] = [
            load64(&a[4..]),
            load64(&a[68..]),
            load64(&a[132..]),
            load64(&a[196..]),
        ];
        let bsums = load32(&a[4 + QK_K..]);
        let mut totals = [_mm256_setzero_si256(); DECODE_ROWS_PER_PASS];
        let mut offsets = [_mm256_setzero_si256(); DECODE_ROWS_PER_PASS];
        let mut d = [0.0f32; DECODE_ROWS_PER_PASS];
        for (i, row) in w_rows.iter().enumerate() {
            let block = &row[b * Q6_K_BYTES..(b + 1) * Q6_K_BYTES];
            // SAFETY (this and the block below): this function's features
            // cover the helpers'; `block` is a whole block.
            unsafe {
                let u = super::k_512::unpack::<Q6_K>(block);
                let mut wide = _mm512_setzero_si512();
                for ((&levels, &scales), &a_levels) in u.levels.iter().zip(&u.scales).zip(&a_levels)
                {
                    let products = _mm512_maddubs_epi16(levels, a_levels);
                    wide = _mm512_dpwssd_epi32(wide, scales, products);
                }
                totals[i] = _mm256_add_epi32(
                    _mm512_castsi512_si256(wide),
                    _mm512_extracti64x4_epi64::<1>(wide),
                );
                offsets[i] = _mm256_madd_epi16(bsums, u.extra);
                d[i] = u.d;
            }
        }
        // SAFETY: as above.
        unsafe {
            let s1 = _mm_sub_epi32(
                super::kquants::hsum4(totals),
                _mm_slli_epi32::<5>(super::kquants::hsum4(offsets)),
            );
            let term = _mm_mul_ps(_mm_loadu_ps(d.as_ptr()), _mm_cvtepi32_ps(s1));
            acc = _mm_fmadd_ps(term, _mm_set1_ps(f32_at(a, 0)), acc);
        }
    }
    let mut out = [0.0f32; DECODE_ROWS_PER_PASS];
    // SAFETY: `out` holds four f32.
    unsafe { _mm_storeu_ps(out.as_mut_ptr(), acc) };
    out
}
