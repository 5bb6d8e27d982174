//! The AVX-512 VNNI prompt tile for Q4_K, Q5_K and Q6_K (partner Q8_K):
//! one weight row times up to 16 activation rows, bit-exact with
//! `portable.rs`.
//!
//! The weight block is unpacked once per tile and reused for every
//! activation row. Per (row, block) the integer work is four `vpdpbusd`
//! (unsigned weight levels times signed activation bytes, four products
//! per i32 lane), two `vpackssdw` and two `vpdpwssd` that apply the
//! 16-element scales: the `vpdpbusd` sums fit in i16 (at most 4 * 63 * 128),
//! so two chunks' sums of the same ggml lane share one i32 slot and one
//! `vpdpwssd` scales and adds both. That is six multiply-class operations
//! where `maddubs` + `vpdpwssd` take eight; on Zen 4 every integer multiply
//! and FMA shares one 512-bit-per-cycle unit, so these are the cost.
//!
//! For that pairing each 64-byte operand interleaves two 32-element chunks
//! four bytes at a time (dword `2i` = lane `i` of chunk `2j`, dword `2i + 1`
//! = lane `i` of chunk `2j + 1`), on the weight side when unpacking and on
//! the activation side once per tile group ([`KPackedActs`]). Two rows'
//! eight ggml lanes then share one f32 accumulator (slot `4k + 2h + e` is
//! lane `2k + e` of the pair's row `h`), so the per-block float work (one
//! FMA per lane and block, ggml's order) is vector work across rows, and the
//! per-(row, block) scalars (activation scale, block sums for the min and
//! offset terms) are laid out once per group so that no per-row scalar work
//! remains in the block loop. Integer sums are exact, so only the float
//! order matters, and it is `portable::row_dot`'s lane by lane.

use std::arch::x86_64::*;

use phobos_quant::{GgmlType, QK_K};

use super::kquants::block_bytes;
use super::{f16_at, load64};
use crate::host::qmatmul::activations::Q8_K_BYTES;
use crate::host::qmatmul::portable::f32_at;

const Q4_K: u32 = GgmlType::Q4_K as u32;
const Q5_K: u32 = GgmlType::Q5_K as u32;
const Q6_K: u32 = GgmlType::Q6_K as u32;

/// Most activation rows in one tile (eight pairs: one f32 slot per row in a
/// 512-bit register at the end).
pub(in crate::host::qmatmul) const K_TILE_ROWS: usize = 16;

/// Zmm vectors per block of a group of `pairs` row pairs: the interleaved
/// levels (4 per row), the pairs' scale vectors and Q6_K block-sum vectors,
/// the 16 rows' scales, and the 16 rows' block sums by dword (8).
const fn block_stride(pairs: usize) -> usize {
    8 * pairs + 2 * pairs + 1 + 8
}

/// Dword `2i` from the low 32 bytes' dword `i`, `2i + 1` from the high
/// 32 bytes' dword `i`: two chunks interleaved four bytes at a time.
const INTERLEAVE: [i32; 16] = [0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15];
/// Dwords `2i` and `2i + 1` both from dword `i` (one 32-byte source).
const DUPLICATE: [i32; 16] = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7];

/// Word `w` of the scale vector that follows `vpackssdw(D[2q], D[2q + 1])`:
/// 128-bit lane `k` holds slots `4k..4k + 4` of each source, slot `s` being
/// chunk `2j + s % 2`, lane `s / 2` of source `j`; the lane's 16-element
/// group is `2 * chunk + lane / 4`.
const fn scale_index(q: usize) -> [i16; 32] {
    let mut index = [0i16; 32];
    let mut w = 0;
    while w < 32 {
        let k = w / 8;
        let j = 2 * q + (w % 8) / 4;
        let chunk = 2 * j + w % 2;
        let lane = 2 * k + (w % 4) / 2;
        index[w] = (2 * chunk + lane / 4) as i16;
        w += 1;
    }
    index
}
const SCALE_INDEX: [[i16; 32]; 2] = [scale_index(0), scale_index(1)];

/// Activation rows packed for the tile: per block, each row's levels with
/// chunk pairs interleaved ([`INTERLEAVE`]), and the per-row scalars in
/// the vector layouts the float part uses. Rows past the real ones (an odd
/// count, a short last group) are zeros: their results are dropped.
pub(in crate::host::qmatmul) struct KPackedActs {
    data: Vec<__m512i>,
    pairs: usize,
    n_blocks: usize,
}

impl KPackedActs {
    /// Packs `rows` (at most [`K_TILE_ROWS`] Q8_K rows of `n_blocks`
    /// blocks each) into `buffer`'s storage.
    ///
    /// # Safety
    /// The CPU must support AVX-512 F and BW.
    #[target_feature(enable = "avx2,avx512f,avx512bw")]
    pub(in crate::host::qmatmul) fn pack(
        buffer: Vec<__m512i>,
        rows: &[&[u8]],
        n_blocks: usize,
    ) -> Self {
        let rows = &rows[..rows.len().min(K_TILE_ROWS)];
        let pairs = rows.len().div_ceil(2).max(1);
        let stride = block_stride(pairs);
        let mut data = buffer;
        data.clear();
        data.resize(stride * n_blocks, _mm512_setzero_si512());
        let interleave = load_i32x16(&INTERLEAVE);
        for b in 0..n_blocks {
            let out = &mut data[b * stride..(b + 1) * stride];
            let mut yd = [0.0f32; 16];
            let mut bsums = [[0i32; 8]; 16];
            for (r, row) in rows.iter().enumerate() {
                let a = &row[b * Q8_K_BYTES..(b + 1) * Q8_K_BYTES];
                yd[r] = f32_at(a, 0);
                for j in 0..4 {
                    let chunks = load64(&a[4 + 64 * j..]);
                    out[4 * r + j] = _mm512_permutexvar_epi32(interleave, chunks);
                }
                for (d, sum) in bsums[r].iter_mut().enumerate() {
                    let at = 4 + QK_K + 4 * d;
                    *sum = i32::from_le_bytes([a[at], a[at + 1], a[at + 2], a[at + 3]]);
                }
            }
            let tail = &mut out[8 * pairs..];
            for p in 0..pairs {
                // Slot 4k + 2h + e belongs to row 2p + h.
                let pattern: [f32; 16] = std::array::from_fn(|s| yd[2 * p + (s % 4) / 2]);
                tail[p] = _mm512_castps_si512(load_f32x16(&pattern));
                // Q6_K's offset: slot 4k + 2h + e holds the block-sum pair
                // (2L, 2L + 1) of lane L = 2k + e, i.e. dword L.
                let sums: [i32; 16] =
                    std::array::from_fn(|s| bsums[2 * p + (s % 4) / 2][2 * (s / 4) + s % 2]);
                tail[pairs + p] = load_i32x16(&sums);
            }
            tail[2 * pairs] = _mm512_castps_si512(load_f32x16(&yd));
            for d in 0..8 {
                let by_row: [i32; 16] = std::array::from_fn(|r| bsums[r][d]);
                tail[2 * pairs + 1 + d] = load_i32x16(&by_row);
            }
        }
        Self {
            data,
            pairs,
            n_blocks,
        }
    }

    /// Row pairs in the group (a tile of `2 * pairs` rows).
    pub(in crate::host::qmatmul) fn pairs(&self) -> usize {
        self.pairs
    }

    /// Gives the storage back for the next group.
    pub(in crate::host::qmatmul) fn into_vec(self) -> Vec<__m512i> {
        self.data
    }
}

#[inline(always)]
fn load_i32x16(values: &[i32; 16]) -> __m512i {
    // SAFETY: 64 readable bytes; the load is unaligned. AVX-512 F is
    // enabled wherever this inlines (every caller enables it).
    unsafe { _mm512_loadu_si512(values.as_ptr().cast()) }
}

#[inline(always)]
fn load_f32x16(values: &[f32; 16]) -> __m512 {
    // SAFETY: as in `load_i32x16`.
    unsafe { _mm512_loadu_ps(values.as_ptr()) }
}

/// One weight block unpacked for the tile.
struct Unpacked {
    /// Chunk pairs (0, 1), (2, 3), (4, 5), (6, 7), interleaved.
    levels: [__m512i; 4],
    /// The scale vectors after `vpackssdw` of sources (0, 1) and (2, 3).
    scales: [__m512i; 2],
    /// Q6_K: -32 times the 16-element scales, pair `L` in both halves of
    /// 128-bit lane `L / 2` (the accumulator layout). Q4_K/Q5_K: the eight
    /// mins as bytes (low 64 bits).
    extra: __m512i,
    d: f32,
    dmin: f32,
}

#[inline(always)]
unsafe fn unpack<const F: u32>(w: &[u8]) -> Unpacked {
    // SAFETY: every caller enables AVX-512 F, BW and VBMI-free intrinsics
    // only (F, BW); slices are bounds-checked.
    unsafe {
        let duplicate = load_i32x16(&DUPLICATE);
        let low4 = _mm512_set1_epi8(0x0F);
        let mut levels = [_mm512_setzero_si512(); 4];
        let scales16: __m256i;
        let extra;
        let (d, dmin);
        if F == Q4_K || F == Q5_K {
            let q5 = F == Q5_K;
            let qs = if q5 { &w[48..176] } else { &w[16..144] };
            // Chunk 2j is the low nibbles of qs[32j..], 2j + 1 the high.
            let shifts = _mm512_set_epi32(4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0);
            for (j, level) in levels.iter_mut().enumerate() {
                let bits = _mm512_castsi256_si512(super::load32(&qs[32 * j..]));
                let both = _mm512_permutexvar_epi32(duplicate, bits);
                *level = _mm512_and_si512(_mm512_srlv_epi32(both, shifts), low4);
                if q5 {
                    // Bit c of qh[l] is the fifth bit of element l of chunk c.
                    let qh = _mm512_castsi256_si512(super::load32(&w[16..48]));
                    let qh = _mm512_permutexvar_epi32(duplicate, qh);
                    let c = 2 * j as i32;
                    let counts = _mm512_set_epi32(
                        c + 1,
                        c,
                        c + 1,
                        c,
                        c + 1,
                        c,
                        c + 1,
                        c,
                        c + 1,
                        c,
                        c + 1,
                        c,
                        c + 1,
                        c,
                        c + 1,
                        c,
                    );
                    let fifth =
                        _mm512_and_si512(_mm512_srlv_epi32(qh, counts), _mm512_set1_epi8(1));
                    *level = _mm512_or_si512(*level, _mm512_slli_epi32(fifth, 4));
                }
            }
            // The 6-bit scales and mins of the eight sub-blocks, as bytes.
            let packed = super::k_512::scales_and_mins(w);
            let words = _mm256_cvtepu8_epi16(_mm_move_epi64(packed));
            // Each sub-block scale covers two 16-element groups.
            scales16 = _mm256_permutexvar_epi16(
                _mm256_set_epi16(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0),
                words,
            );
            extra = _mm512_castsi128_si512(_mm_srli_si128::<8>(packed));
            (d, dmin) = (f16_at(w, 0), f16_at(w, 2));
        } else {
            // Q6_K: chunk 4h + 2n + x (n, x in 0..2) is nibble n of
            // ql[64h + 32x..] with bits 4n + 2x.. of qh[32h..] above it.
            let interleave = load_i32x16(&INTERLEAVE);
            for (j, level) in levels.iter_mut().enumerate() {
                let (h, n) = (j / 2, (j % 2) as i32);
                let ql = _mm512_permutexvar_epi32(interleave, load64(&w[64 * h..]));
                let low = _mm512_and_si512(_mm512_srlv_epi32(ql, _mm512_set1_epi32(4 * n)), low4);
                let qh = _mm512_castsi256_si512(super::load32(&w[128 + 32 * h..]));
                let qh = _mm512_permutexvar_epi32(duplicate, qh);
                let (a, b) = (4 * n, 4 * n + 2);
                let counts = _mm512_set_epi32(b, a, b, a, b, a, b, a, b, a, b, a, b, a, b, a);
                let high = _mm512_and_si512(_mm512_srlv_epi32(qh, counts), _mm512_set1_epi8(3));
                *level = _mm512_or_si512(low, _mm512_slli_epi32(high, 4));
            }
            scales16 = _mm256_cvtepi8_epi16(super::load16(&w[192..]));
            let offsets = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(scales16, 5));
            extra = _mm512_permutexvar_epi64(
                _mm512_set_epi64(3, 3, 2, 2, 1, 1, 0, 0),
                _mm512_castsi256_si512(offsets),
            );
            (d, dmin) = (f16_at(w, 208), 0.0);
        }
        let all = _mm512_castsi256_si512(scales16);
        let scales = [
            _mm512_permutexvar_epi16(_mm512_loadu_si512(SCALE_INDEX[0].as_ptr().cast()), all),
            _mm512_permutexvar_epi16(_mm512_loadu_si512(SCALE_INDEX[1].as_ptr().cast()), all),
        ];
        Unpacked {
            levels,
            scales,
            extra,
            d,
            dmin,
        }
    }
}

/// `acc + a . b` over i16 pairs, as one `vpdpwssd`: LLVM otherwise splits
/// the intrinsic into `vpmaddwd` + `vpaddd`, a second operation on the
/// multiply unit's neighbours.
#[inline]
#[target_feature(enable = "avx512f,avx512vnni")]
fn dpwssd(acc: __m512i, a: __m512i, b: __m512i) -> __m512i {
    let mut out = acc;
    // SAFETY: register-only instruction; every caller enables AVX-512 VNNI.
    unsafe {
        std::arch::asm!(
            "vpdpwssd {acc}, {a}, {b}",
            acc = inout(zmm_reg) out,
            a = in(zmm_reg) a,
            b = in(zmm_reg) b,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    out
}

/// A packed group larger than this (the smallest L1D of the AVX-512 CPUs
/// measured, Zen 4's) is walked in chunks of blocks ([`k_tile_512`]).
const L1D_BYTES: usize = 32 * 1024;

/// Bytes of packed activations in one chunk: at Q4_K 640x2048, M = 512, one
/// thread (Zen 4, best of 4 alternated runs) 12 KiB chunks (two blocks)
/// ran 8.09 ms against 8.54 unchunked; a group that fits L1D ran the same
/// or slower chunked (640x1024: 3.94 ms either way at 12 KiB, slower at
/// 8 KiB), and Q6_K's 16-row group chunked did not beat its 8-row group.
const CHUNK_BUDGET_BYTES: usize = 12 * 1024;

/// Weight rows that walk a chunk of blocks together, their running sums
/// kept on the stack between chunks (13 vectors a row at `P` = 8).
const ROW_BLOCK: usize = 8;

/// Weight rows `rows` (each `row_bytes` of `w`) of Q4_K, Q5_K or Q6_K
/// times the `2 * P` activation rows of `acts`: `out(n, values)` gets
/// weight row `n`'s products, element `r` for activation row `r` of the
/// group (the rest zeros), in the order of `portable::row_dot`. The row
/// loop is in here so that per-row set-up and the horizontal sums inline
/// with the kernel and overlap the next row's blocks.
///
/// A group larger than [`L1D_BYTES`] is walked in chunks of blocks
/// by [`ROW_BLOCK`] weight rows at a time: every row of the block runs the
/// chunk, its sums stored and reloaded between chunks, so each chunk is read
/// from L2 once per row block instead of once per row. A lane's sums still
/// take its blocks in order, so the result has the same bits.
///
/// # Safety
/// The CPU must support AVX2, FMA, F16C and AVX-512 F, BW, VL and VNNI. `F`
/// is one of the three formats, `acts` was packed with `P` pairs, and each
/// weight row holds `acts`'s block count of blocks.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
pub(in crate::host::qmatmul) fn k_tile_512<const F: u32, const P: usize>(
    w: &[u8],
    row_bytes: usize,
    rows: std::ops::Range<usize>,
    acts: &KPackedActs,
    mut out: impl FnMut(usize, &[f32; 16]),
) {
    if acts.pairs != P {
        return;
    }
    let stride = block_stride(P);
    let w_bytes = block_bytes(F);
    let n_blocks = acts.n_blocks.min(acts.data.len() / stride);
    let chunk_blocks = (CHUNK_BUDGET_BYTES / (stride * 64)).max(1);
    let row_of = |n: usize| w.get(n * row_bytes..(n + 1) * row_bytes);
    if n_blocks <= chunk_blocks || n_blocks * stride * 64 <= L1D_BYTES {
        for n in rows {
            let Some(w_row) = row_of(n) else {
                return;
            };
            let mut sums = RowSums::<P>::new();
            // SAFETY: as this function's.
            unsafe { sums.add_blocks::<F>(w_row, &acts.data[..stride * n_blocks], stride) };
            // SAFETY: as this function's.
            out(n, &unsafe { sums.finish::<F>() });
        }
        return;
    }
    let mut start = rows.start;
    while start < rows.end {
        let end = rows.end.min(start + ROW_BLOCK);
        let mut block_sums = [RowSums::<P>::new(); ROW_BLOCK];
        for b0 in (0..n_blocks).step_by(chunk_blocks) {
            let b1 = n_blocks.min(b0 + chunk_blocks);
            let data = &acts.data[b0 * stride..b1 * stride];
            for (n, sums) in (start..end).zip(block_sums.iter_mut()) {
                let Some(w_row) = row_of(n) else {
                    return;
                };
                let Some(w_chunk) = w_row.get(b0 * w_bytes..b1 * w_bytes) else {
                    return;
                };
                // SAFETY: as this function's.
                unsafe { sums.add_blocks::<F>(w_chunk, data, stride) };
            }
        }
        for (n, sums) in (start..end).zip(block_sums.iter()) {
            // SAFETY: as this function's.
            out(n, &unsafe { sums.finish::<F>() });
        }
        start = end;
    }
}

/// One weight row's running sums against a group: per pair the float
/// accumulator, and the min terms (Q4_K: four, Q5_K: one).
#[derive(Clone, Copy)]
struct RowSums<const P: usize> {
    acc: [__m512; P],
    mins: [__m512; 4],
    summs: __m512,
}

impl<const P: usize> RowSums<P> {
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn new() -> Self {
        Self {
            acc: [_mm512_setzero_ps(); P],
            mins: [_mm512_setzero_ps(); 4],
            summs: _mm512_setzero_ps(),
        }
    }

    /// Adds the blocks of `w_row` (whole blocks of format `F`) times the
    /// same blocks of the group, `data` starting at the first of them.
    ///
    /// # Safety
    /// As [`k_tile_512`]; inlined into it (always, so the sums stay in
    /// registers and a row's horizontal sums overlap the next row's blocks).
    #[inline(always)]
    unsafe fn add_blocks<const F: u32>(&mut self, w_row: &[u8], data: &[__m512i], stride: usize) {
        // SAFETY: this function's features cover every intrinsic and helper
        // here; slices are bounds-checked.
        unsafe {
            let w_bytes = block_bytes(F);
            let mut acc = self.acc;
            let mut mins = self.mins;
            let mut summs = self.summs;
            for (w, a) in w_row.chunks_exact(w_bytes).zip(data.chunks_exact(stride)) {
                let u = unpack::<F>(w);
                let wd = _mm512_set1_ps(u.d);
                let (levels, tail) = a.split_at(8 * P);
                // Closures would not inherit this function's target features (and
                // LLVM does not always inline them), so the row and pair bodies
                // are macros; pairs are written out because as a loop LLVM left
                // some instances rolled with the accumulators on the stack.
                macro_rules! row {
                    ($at:expr) => {{
                        let q = &levels[$at..$at + 4];
                        let zero = _mm512_setzero_si512();
                        let d0 = _mm512_dpbusd_epi32(zero, u.levels[0], q[0]);
                        let d1 = _mm512_dpbusd_epi32(zero, u.levels[1], q[1]);
                        let d2 = _mm512_dpbusd_epi32(zero, u.levels[2], q[2]);
                        let d3 = _mm512_dpbusd_epi32(zero, u.levels[3], q[3]);
                        let low = _mm512_madd_epi16(_mm512_packs_epi32(d0, d1), u.scales[0]);
                        dpwssd(low, _mm512_packs_epi32(d2, d3), u.scales[1])
                    }};
                }
                macro_rules! pair {
                    ($p:expr) => {
                        if $p < P {
                            let (first, second) = (row!(8 * $p), row!(8 * $p + 4));
                            let mut sums = _mm512_add_epi32(
                                _mm512_unpacklo_epi64(first, second),
                                _mm512_unpackhi_epi64(first, second),
                            );
                            if F == Q6_K {
                                sums = dpwssd(sums, tail[P + $p], u.extra);
                            }
                            let d = _mm512_mul_ps(_mm512_castsi512_ps(tail[$p]), wd);
                            acc[$p] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sums), acc[$p]);
                        }
                    };
                }
                pair!(0);
                pair!(1);
                pair!(2);
                pair!(3);
                pair!(4);
                pair!(5);
                pair!(6);
                pair!(7);
                if F == Q4_K || F == Q5_K {
                    let yd = _mm512_castsi512_ps(tail[2 * P]);
                    let dm = _mm512_mul_ps(yd, _mm512_set1_ps(-u.dmin));
                    let by_dword = &tail[2 * P + 1..2 * P + 9];
                    // Sub-block j's min times the sums of groups 2j and 2j + 1
                    // (block-sum dword j), exact in i32 for any block sums.
                    let mins_bytes = _mm_cvtsi128_si64(_mm512_castsi512_si128(u.extra)) as u64;
                    let mut min_pairs = [0i32; 8];
                    for (j, m) in min_pairs.iter_mut().enumerate() {
                        *m = ((mins_bytes >> (8 * j)) & 0xFF) as i32 * 0x0001_0001;
                    }
                    if F == Q4_K {
                        for (t, lane) in mins.iter_mut().enumerate() {
                            let low = _mm512_set1_epi32(min_pairs[2 * t]);
                            let high = _mm512_set1_epi32(min_pairs[2 * t + 1]);
                            let prod = _mm512_madd_epi16(by_dword[2 * t], low);
                            let prod = dpwssd(prod, by_dword[2 * t + 1], high);
                            *lane = _mm512_fmadd_ps(dm, _mm512_cvtepi32_ps(prod), *lane);
                        }
                    } else {
                        let mut total =
                            _mm512_madd_epi16(by_dword[0], _mm512_set1_epi32(min_pairs[0]));
                        for (sums, &m) in by_dword[1..].iter().zip(&min_pairs[1..]) {
                            total = dpwssd(total, *sums, _mm512_set1_epi32(m));
                        }
                        summs = _mm512_fmadd_ps(dm, _mm512_cvtepi32_ps(total), summs);
                    }
                }
            }
            self.acc = acc;
            self.mins = mins;
            self.summs = summs;
        }
    }

    /// The group's products: element `r` for activation row `r`.
    ///
    /// # Safety
    /// As [`add_blocks`](Self::add_blocks).
    #[inline(always)]
    unsafe fn finish<const F: u32>(&self) -> [f32; 16] {
        let (acc, mins, summs) = (&self.acc, &self.mins, self.summs);
        // SAFETY: this function's features cover every intrinsic here; the
        // one store writes a local array.
        unsafe {
            // ggml's horizontal sum per row, in registers: lane L of the pair's
            // row h is slot 4 (L / 2) + 2h + L % 2, so 128-bit lanes k and k ^ 2
            // hold lanes (L, L + 4), then k and k ^ 1 the pairs of those, then the
            // two neighbouring slots the last pair; row h ends at slot 2h and is
            // moved to slot 2p + h of `main`.
            let mut main = _mm512_setzero_ps();
            let place = _mm512_set_epi32(2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0);
            for (p, &v) in acc.iter().enumerate() {
                let x = _mm512_add_ps(v, _mm512_shuffle_f32x4::<0b01_00_11_10>(v, v));
                let y = _mm512_add_ps(x, _mm512_shuffle_f32x4::<0b10_11_00_01>(x, x));
                let z = _mm512_add_ps(y, _mm512_permute_ps::<0b10_11_00_01>(y));
                main = _mm512_mask_permutexvar_ps(main, 0b11 << (2 * p), place, z);
            }
            let total = match F {
                Q4_K => _mm512_add_ps(
                    main,
                    _mm512_add_ps(
                        _mm512_add_ps(mins[0], mins[2]),
                        _mm512_add_ps(mins[1], mins[3]),
                    ),
                ),
                Q5_K => _mm512_add_ps(main, summs),
                _ => main,
            };
            let mut out = [0.0f32; 16];
            _mm512_storeu_ps(out.as_mut_ptr(), total);
            out
        }
    }
}
