//! AVX-512 VNNI kernels for Q4_0, Q5_0, Q8_0 and IQ4_NL (partner Q8_0),
//! bit-exact with `portable.rs`.
//!
//! A 512-bit register holds one 32-element block of two weight rows (row
//! `2p` in the low 256 bits, row `2p + 1` in the high), so each half keeps
//! the eight lanes of its own (row, activation row) pair and the per-block
//! FMA stays one FMA per lane, as ggml's. Weights are unpacked to offset
//! binary (`level + 2^s`, an unsigned byte, which is what `vpdpbusd` wants)
//! instead of ggml's sign trick; the dot is seeded with `-2^s` times the
//! activation's lane sums (precomputed once per launch in `QActivations`),
//! so every lane is the same exact integer as the signed sum.

use std::arch::x86_64::*;

use phobos_quant::GgmlType;

use crate::host::qmatmul::activations::Q8_0_BYTES;
use crate::host::qmatmul::portable::{KVALUES_IQ4NL, iq4nl_add_tail};

const Q4_0: u32 = GgmlType::Q4_0 as u32;
const Q5_0: u32 = GgmlType::Q5_0 as u32;
const Q8_0: u32 = GgmlType::Q8_0 as u32;
const IQ4_NL: u32 = GgmlType::IQ4_NL as u32;

/// Whether format `F` has a kernel here.
pub(in crate::host::qmatmul) const fn has_q32_512(ty: GgmlType) -> bool {
    matches!(
        ty,
        GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q8_0 | GgmlType::IQ4_NL
    )
}

pub(in crate::host::qmatmul) const fn block_bytes(f: u32) -> usize {
    match f {
        Q4_0 | IQ4_NL => 18,
        Q5_0 => 22,
        _ => 34,
    }
}

/// 16 packed bytes of two blocks to 64 nibbles: per block, low nibbles
/// (elements 0..16) then high ones (16..32).
#[inline(always)]
unsafe fn nibbles_pair(q0: __m128i, q1: __m128i) -> __m512i {
    // SAFETY: the caller's target features include AVX-512 F/BW.
    unsafe {
        let both = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_set_m128i(q0, q0)),
            _mm256_set_m128i(q1, q1),
            1,
        );
        // 16-bit shift counts: 0 for the low nibbles' 128-bit lanes, 4 for
        // the high ones'.
        let fours = 0x0004_0004_0004_0004i64;
        let counts = _mm512_set_epi64(fours, fours, 0, 0, fours, fours, 0, 0);
        _mm512_and_si512(_mm512_srlv_epi16(both, counts), _mm512_set1_epi8(0x0F))
    }
}

/// Blocks at `w0` and `w1` (one per weight row) as offset-binary bytes,
/// and their f32 scales, each repeated over its half.
///
/// # Safety
/// Both pointers start a whole block of `F`; AVX-512 F/BW and F16C.
#[inline(always)]
unsafe fn unpack_pair<const F: u32>(w0: *const u8, w1: *const u8) -> (__m512i, __m512) {
    // SAFETY: the caller's contract: readable blocks, the CPU features.
    unsafe {
        let load16 = |p: *const u8| _mm_loadu_si128(p.cast());
        let levels = match F {
            Q8_0 => {
                let both = _mm512_inserti64x4(
                    _mm512_castsi256_si512(_mm256_loadu_si256(w0.add(2).cast())),
                    _mm256_loadu_si256(w1.add(2).cast()),
                    1,
                );
                _mm512_xor_si512(both, _mm512_set1_epi8(0x80u8 as i8))
            }
            Q5_0 => {
                let nibbles = nibbles_pair(load16(w0.add(6)), load16(w1.add(6)));
                let fifth0 = std::ptr::read_unaligned(w0.add(2).cast::<u32>());
                let fifth1 = std::ptr::read_unaligned(w1.add(2).cast::<u32>());
                let fifth =
                    u64::from(u32::from_le(fifth0)) | (u64::from(u32::from_le(fifth1)) << 32);
                _mm512_mask_add_epi8(nibbles, fifth, nibbles, _mm512_set1_epi8(16))
            }
            IQ4_NL => {
                let nibbles = nibbles_pair(load16(w0.add(2)), load16(w1.add(2)));
                let table = load16(KVALUES_IQ4NL_OFFSET.as_ptr());
                _mm512_shuffle_epi8(_mm512_broadcast_i32x4(table), nibbles)
            }
            // Q4_0: the stored nibble is already level + 8.
            _ => nibbles_pair(load16(w0.add(2)), load16(w1.add(2))),
        };
        let d0 = u32::from(u16::from_le(std::ptr::read_unaligned(w0.cast::<u16>())));
        let d1 = u32::from(u16::from_le(std::ptr::read_unaligned(w1.cast::<u16>())));
        let two = _mm_cvtph_ps(_mm_cvtsi32_si128((d0 | (d1 << 16)) as i32));
        let index = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
        let scales = _mm512_permutexvar_ps(index, _mm512_castps128_ps512(two));
        (levels, scales)
    }
}

/// Blocks at `w0` and `w1` as signed levels (row `w0` in the low 256 bits),
/// for the AMX kernel's weight tiles.
///
/// # Safety
/// As [`unpack_pair`].
#[inline(always)]
pub(in crate::host::qmatmul) unsafe fn signed_pair<const F: u32>(
    w0: *const u8,
    w1: *const u8,
) -> __m512i {
    // SAFETY: the caller's contract is `unpack_pair`'s.
    unsafe {
        let (levels, _) = unpack_pair::<F>(w0, w1);
        let offset = match F {
            Q4_0 => 8,
            Q5_0 => 16,
            _ => 0x80u8 as i8,
        };
        _mm512_sub_epi8(levels, _mm512_set1_epi8(offset))
    }
}

/// IQ4_NL's levels plus 128 (offset binary).
const KVALUES_IQ4NL_OFFSET: [u8; 16] = {
    let mut table = [0u8; 16];
    let mut i = 0;
    while i < 16 {
        table[i] = (KVALUES_IQ4NL[i] as i16 + 128) as u8;
        i += 1;
    }
    table
};

/// `s` of format `F`'s offset `2^s` (the stored level minus the signed one).
pub(in crate::host::qmatmul) const fn seed_shift(f: u32) -> u32 {
    match f {
        Q4_0 => 3,
        Q5_0 => 4,
        _ => 7,
    }
}

/// The lane sums of one activation block times `-2^s`, in both halves.
///
/// # Safety
/// `neg_sums` points at eight readable i32; AVX-512 F.
#[inline(always)]
unsafe fn offset_seed<const F: u32>(neg_sums: *const i32) -> __m512i {
    // SAFETY: the caller's contract.
    unsafe {
        let both = _mm512_broadcast_i64x4(_mm256_loadu_si256(neg_sums.cast()));
        match F {
            Q4_0 => _mm512_slli_epi32::<{ seed_shift(Q4_0) }>(both),
            Q5_0 => _mm512_slli_epi32::<{ seed_shift(Q5_0) }>(both),
            _ => _mm512_slli_epi32::<{ seed_shift(Q8_0) }>(both),
        }
    }
}

/// One activation row as the kernel reads it: Q8_0 blocks, their f32
/// scales and negated lane sums (`QActivations`).
#[derive(Clone, Copy)]
pub(in crate::host::qmatmul) struct ActRow<'a> {
    pub blocks: &'a [u8],
    pub scales: &'a [f32],
    pub neg_sums: &'a [i32],
}

/// `2P` weight rows (as `P` pairs) of format `F` times `R` activation
/// rows. Returns `[pair][half][r]`.
///
/// # Safety
/// The CPU must support AVX2, FMA, F16C and AVX-512 F, BW, VL and VNNI.
/// Every weight row holds the same number of blocks of `F` (one of Q4_0,
/// Q5_0, Q8_0, IQ4_NL) and each activation row as many Q8_0 blocks.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
// `_mm512_dpbusd_epi32` is stable since Rust 1.89; the workspace declares
// 1.88 (the lead bumps rust-version at merge).
#[allow(clippy::incompatible_msrv)]
pub(in crate::host::qmatmul) fn q32_rows_512<const F: u32, const P: usize, const R: usize>(
    w_rows: [[&[u8]; 2]; P],
    acts: [ActRow<'_>; R],
) -> [[[f32; R]; 2]; P] {
    let w_bytes = block_bytes(F);
    // Every pointer below stays inside the first `n_blocks` blocks of its
    // row, so the reads are in bounds whatever the slices' lengths.
    let mut n_blocks = usize::MAX;
    for pair in &w_rows {
        for row in pair {
            n_blocks = n_blocks.min(row.len() / w_bytes);
        }
    }
    for act in &acts {
        n_blocks = n_blocks
            .min(act.blocks.len() / Q8_0_BYTES)
            .min(act.scales.len())
            .min(act.neg_sums.len() / 8);
    }
    if n_blocks == usize::MAX {
        n_blocks = 0;
    }
    // Decode streams every weight once: fetch the rows after these (the
    // next call's, when rows lie back to back as in a tensor) while these
    // are computed. A prefetch never faults, whatever the address.
    let ahead = 2 * P * w_rows[0][0].len();
    let mut acc = [[_mm512_setzero_ps(); R]; P];
    for b in 0..n_blocks {
        let mut levels = [_mm512_setzero_si512(); P];
        let mut scales = [_mm512_setzero_ps(); P];
        if R == 1 {
            for pair in &w_rows {
                for row in pair {
                    let next = row.as_ptr().wrapping_add(ahead + b * w_bytes);
                    _mm_prefetch::<_MM_HINT_T0>(next.cast());
                }
            }
        }
        for p in 0..P {
            // SAFETY: block `b < n_blocks` of both rows; this function's
            // features cover the helper's.
            (levels[p], scales[p]) = unsafe {
                unpack_pair::<F>(
                    w_rows[p][0].as_ptr().add(b * w_bytes),
                    w_rows[p][1].as_ptr().add(b * w_bytes),
                )
            };
        }
        for r in 0..R {
            // SAFETY: block `b < n_blocks` of the activation row and its
            // extras; the features as above.
            let (a_levels, seed, a_scale) = unsafe {
                let a = acts[r].blocks.as_ptr().add(b * Q8_0_BYTES + 2);
                (
                    _mm512_broadcast_i64x4(_mm256_loadu_si256(a.cast())),
                    offset_seed::<F>(acts[r].neg_sums.as_ptr().add(8 * b)),
                    _mm512_set1_ps(*acts[r].scales.as_ptr().add(b)),
                )
            };
            for p in 0..P {
                let lanes = _mm512_dpbusd_epi32(seed, levels[p], a_levels);
                let d = _mm512_mul_ps(scales[p], a_scale);
                acc[p][r] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(lanes), acc[p][r]);
            }
        }
    }
    reduce_pairs(&acc)
}

/// Bytes per block of [`pack_prompt_group`]'s layout for `R` rows: per
/// row its 32 level bytes twice then its 8 shifted seeds twice (128 bytes,
/// each operand one whole-register load), then the `R` f32 scales in one
/// more 64-byte slot.
pub(in crate::host::qmatmul) const fn packed_block_bytes(r: usize) -> usize {
    128 * r + 64
}

/// Lays out `R` activation rows block by block for [`q32_rows_512_packed`],
/// the seeds already shifted for format `F`, so the kernel reads every
/// operand of a block at a fixed offset from one pointer. With a pointer
/// per row, 3R pointers did not fit the registers and spilled each block;
/// operands stored once per half, not broadcast from 32 bytes, spare a
/// shuffle per load (Zen 4, 256x640 Q8_0, M = 512: 1596 -> 1360 us on one
/// thread, BENCHMARKS.md session 22). Blocks past the shortest row are not
/// packed.
pub(in crate::host::qmatmul) fn pack_prompt_group<const F: u32, const R: usize>(
    rows: &[ActRow<'_>; R],
    out: &mut Vec<u8>,
) {
    let shift = seed_shift(F);
    let n_blocks = rows
        .iter()
        .map(|row| {
            (row.blocks.len() / Q8_0_BYTES)
                .min(row.scales.len())
                .min(row.neg_sums.len() / 8)
        })
        .min()
        .unwrap_or(0);
    let stride = packed_block_bytes(R);
    out.clear();
    out.resize(n_blocks * stride, 0);
    for (b, dst) in out.chunks_exact_mut(stride).enumerate() {
        let (row_slots, scale_slot) = dst.split_at_mut(128 * R);
        for ((row, slot), scale) in rows
            .iter()
            .zip(row_slots.chunks_exact_mut(128))
            .zip(scale_slot.chunks_exact_mut(4))
        {
            let levels = &row.blocks[b * Q8_0_BYTES + 2..(b + 1) * Q8_0_BYTES];
            let (level_slot, seed_slot) = slot.split_at_mut(64);
            for half in level_slot.chunks_exact_mut(32) {
                half.copy_from_slice(levels);
            }
            for (j, seed) in seed_slot.chunks_exact_mut(4).enumerate() {
                let sum = row.neg_sums[8 * b + j % 8];
                seed.copy_from_slice(&sum.wrapping_shl(shift).to_le_bytes());
            }
            scale.copy_from_slice(&row.scales[b].to_le_bytes());
        }
    }
}

/// [`q32_rows_512`] for a prompt group packed by [`pack_prompt_group`]
/// (same bits). Returns `[pair][half][r]`.
///
/// # Safety
/// As [`q32_rows_512`]; `packed` is laid out for `R` rows and `F`.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
#[allow(clippy::incompatible_msrv)]
pub(in crate::host::qmatmul) fn q32_rows_512_packed<
    const F: u32,
    const P: usize,
    const R: usize,
>(
    w_rows: [[&[u8]; 2]; P],
    packed: &[u8],
) -> [[[f32; R]; 2]; P] {
    // The scale slot and `products` hold at most eight rows.
    const { assert!(R <= 8) };
    let w_bytes = block_bytes(F);
    let stride = packed_block_bytes(R);
    // Every pointer below stays inside the first `n_blocks` blocks of its
    // row and of the packing.
    let mut n_blocks = packed.len() / stride;
    for pair in &w_rows {
        for row in pair {
            n_blocks = n_blocks.min(row.len() / w_bytes);
        }
    }
    let mut acc = [[_mm512_setzero_ps(); R]; P];
    for b in 0..n_blocks {
        let mut levels = [_mm512_setzero_si512(); P];
        let mut scales = [_mm512_setzero_ps(); P];
        for p in 0..P {
            // SAFETY: block `b < n_blocks` of both rows; this function's
            // features cover the helper's.
            (levels[p], scales[p]) = unsafe {
                unpack_pair::<F>(
                    w_rows[p][0].as_ptr().add(b * w_bytes),
                    w_rows[p][1].as_ptr().add(b * w_bytes),
                )
            };
        }
        // SAFETY: block `b < n_blocks` of the packing.
        let block = unsafe { packed.as_ptr().add(b * stride) };
        // The products d_w * d_x four activation rows at a time: lanes
        // [w0 r0..r3 | w0 r0..r3 | w1 r0..r3 | w1 r0..r3] for pair (w0, w1),
        // so an in-lane shuffle spreads one row's pair of products over the
        // halves. One multiply per four activation rows instead of one per
        // row: the multiplies share the FMA pipes, the shuffles do not
        // (Zen 4). Each product is the same single rounding as before.
        let mut products = [[_mm512_setzero_ps(); P]; 2];
        for (quad, four_rows) in products.iter_mut().enumerate().take(R.div_ceil(4)) {
            // SAFETY: the scale slot's 16 floats (rows past `R` are zero).
            let a_scales = unsafe {
                _mm512_broadcast_f32x4(_mm_loadu_ps(block.add(128 * R + 16 * quad).cast()))
            };
            for (product, &w_scales) in four_rows.iter_mut().zip(&scales) {
                *product = _mm512_mul_ps(w_scales, a_scales);
            }
        }
        for r in 0..R {
            // SAFETY: row `r < R` of the block.
            let (a_levels, seed) = unsafe {
                (
                    _mm512_loadu_si512(block.add(128 * r).cast()),
                    _mm512_loadu_si512(block.add(128 * r + 64).cast()),
                )
            };
            for p in 0..P {
                let lanes = _mm512_dpbusd_epi32(seed, levels[p], a_levels);
                let four = products[r / 4][p];
                let d = match r % 4 {
                    0 => _mm512_permute_ps::<0x00>(four),
                    1 => _mm512_permute_ps::<0x55>(four),
                    2 => _mm512_permute_ps::<0xAA>(four),
                    _ => _mm512_permute_ps::<0xFF>(four),
                };
                acc[p][r] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(lanes), acc[p][r]);
            }
        }
    }
    reduce_pairs(&acc)
}

/// Each accumulator's two halves reduced as ggml reduces eight lanes.
#[inline]
#[target_feature(enable = "avx2,avx512f")]
fn reduce_pairs<const P: usize, const R: usize>(acc: &[[__m512; R]; P]) -> [[[f32; R]; 2]; P] {
    let mut out = [[[0.0f32; R]; 2]; P];
    for p in 0..P {
        for r in 0..R {
            out[p][0][r] = super::hsum8(_mm512_castps512_ps256(acc[p][r]));
            out[p][1][r] = super::hsum8(high_half(acc[p][r]));
        }
    }
    out
}

#[inline]
#[target_feature(enable = "avx512f")]
pub(super) fn high_half(x: __m512) -> __m256 {
    _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1))
}

/// IQ4_NL weight rows (as `P` pairs) times one activation row in ggml's
/// single-row order: whole block pairs into two accumulators (even blocks,
/// odd blocks), their lane-wise sum reduced, and an odd last block added
/// after the reduction as one scalar FMA. Returns `[pair][half]`.
///
/// # Safety
/// As [`q32_rows_512`].
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
#[allow(clippy::incompatible_msrv)]
pub(in crate::host::qmatmul) fn iq4nl_single_512<const P: usize>(
    w_rows: [[&[u8]; 2]; P],
    act: ActRow<'_>,
) -> [[f32; 2]; P] {
    let w_bytes = block_bytes(IQ4_NL);
    let mut n_blocks =
        act.blocks.len() / Q8_0_BYTES.min(act.scales.len()).min(act.neg_sums.len() / 8);
    for pair in &w_rows {
        for row in pair {
            n_blocks = n_blocks.min(row.len() / w_bytes);
        }
    }
    let paired = n_blocks & !1;
    // acc[p][parity]
    let mut acc = [[_mm512_setzero_ps(); 2]; P];
    for b in 0..paired {
        // SAFETY: block `b < n_blocks` of every row and of the activation
        // row and its extras; this function's features cover the helpers'.
        let (a_levels, seed, a_scale) = unsafe {
            let a = act.blocks.as_ptr().add(b * Q8_0_BYTES + 2);
            (
                _mm512_broadcast_i64x4(_mm256_loadu_si256(a.cast())),
                offset_seed::<IQ4_NL>(act.neg_sums.as_ptr().add(8 * b)),
                _mm512_set1_ps(*act.scales.as_ptr().add(b)),
            )
        };
        for p in 0..P {
            // SAFETY: as above.
            let (levels, scales) = unsafe {
                unpack_pair::<IQ4_NL>(
                    w_rows[p][0].as_ptr().add(b * w_bytes),
                    w_rows[p][1].as_ptr().add(b * w_bytes),
                )
            };
            let lanes = _mm512_dpbusd_epi32(seed, levels, a_levels);
            let d = _mm512_mul_ps(a_scale, scales);
            let slot = &mut acc[p][b & 1];
            *slot = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(lanes), *slot);
        }
    }
    let mut out = [[0.0f32; 2]; P];
    for p in 0..P {
        let both = _mm512_add_ps(acc[p][0], acc[p][1]);
        out[p] = [
            super::hsum8(_mm512_castps512_ps256(both)),
            super::hsum8(high_half(both)),
        ];
        if paired < n_blocks {
            let a = &act.blocks[paired * Q8_0_BYTES..];
            for (half, row) in w_rows[p].iter().enumerate() {
                out[p][half] = iq4nl_add_tail(&row[paired * w_bytes..], a, out[p][half]);
            }
        }
    }
    out
}
