//! The 256-element formats (Q2_K..Q6_K, IQ4_XS; partner Q8_K) on AVX2:
//! `W` weight rows times `R` activation rows per pass, bit-exact with
//! `portable::row_dot`.
//!
//! The eight 32-element chunks of a block are walked one at a time with the
//! chunk index a literal (`for_chunks!`), so every shift and shuffle mask
//! is an immediate: a chunk's levels and scales are built where the
//! activation rows use them and stay in registers. Unpacking all eight
//! first (the previous kernel) held 16 vectors per block, which went
//! through the stack (16 stores per block on Zen 2's single store port);
//! a non-unrolled chunk loop made the shifts variable (1.5x slower).
//!
//! Integer lane sums are exact in any order, so only the float part
//! matters for bit-exactness: one FMA per lane and block (after the min
//! or offset terms of the format), in block order, then the horizontal sum
//! of `portable::row_dot`.

use std::arch::x86_64::*;
use std::ops::Range;

use phobos_quant::{GgmlType, QK_K};

use super::f16_at;
use super::{PrefetchAhead, hsum8, iq4_lookup, k_row_total, load16, load32, nibbles};
use crate::host::qmatmul::activations::Q8_K_BYTES;
use crate::host::qmatmul::portable::f32_at;

const Q2_K: u32 = GgmlType::Q2_K as u32;
const Q3_K: u32 = GgmlType::Q3_K as u32;
const Q4_K: u32 = GgmlType::Q4_K as u32;
const Q5_K: u32 = GgmlType::Q5_K as u32;
const Q6_K: u32 = GgmlType::Q6_K as u32;

/// Block bytes of format `F` (also the AVX-512 kernels').
pub(super) const fn block_bytes(f: u32) -> usize {
    match f {
        Q2_K => 84,
        Q3_K => 110,
        Q4_K => 144,
        Q5_K => 176,
        Q6_K => 210,
        _ => 136,
    }
}

/// Whether `F` multiplies signed levels (the sign moves onto the
/// activations, as in ggml).
const fn signed(f: u32) -> bool {
    !matches!(f, Q2_K | Q4_K | Q5_K | Q6_K)
}

/// Whether `F` has one scale per 32-element chunk (Q4_K, Q5_K, IQ4_XS;
/// the others one per 16 elements).
const fn chunk_scaled(f: u32) -> bool {
    !matches!(f, Q2_K | Q3_K | Q6_K)
}

/// Runs `$body` eight times with `$c` bound to the literal chunk index
/// 0..8, so everything derived from it folds to immediates.
macro_rules! for_chunks {
    ($c:ident => $body:block) => {
        for_chunks!(@each $c $body 0 1 2 3 4 5 6 7)
    };
    (@each $c:ident $body:block $($n:literal)*) => {
        $({
            const $c: usize = $n;
            $body
        })*
    };
}

/// `x >> n` per u16 lane, `n` folded to an immediate by the caller.
#[inline(always)]
unsafe fn srli16(x: __m256i, n: usize) -> __m256i {
    // SAFETY: the caller runs with AVX2.
    unsafe {
        match n {
            0 => x,
            2 => _mm256_srli_epi16::<2>(x),
            4 => _mm256_srli_epi16::<4>(x),
            _ => _mm256_srli_epi16::<6>(x),
        }
    }
}

/// The `pshufb` mask that copies i16 word `w` into every word of a lane.
#[inline(always)]
unsafe fn word_mask(w: usize) -> __m128i {
    let pair = (((2 * w + 1) << 8) | (2 * w)) as i16;
    // SAFETY: SSE2 is part of x86_64.
    unsafe { _mm_set1_epi16(pair) }
}

/// The 6-bit scales (low 128 bits) and mins (high) of a Q4_K/Q5_K block as
/// i16 words (`portable::k4_scale_min`). With the packed bytes as u32s
/// `a, b, c` (bytes 4..16), the four dwords are `a & 0x3F..`,
/// `(c & 0x0F..) | ((a >> 2) & 0x30..)`, `b & 0x3F..` and
/// `((c >> 4) & 0x0F..) | ((b >> 2) & 0x30..)`, built in one vector: the
/// scalar form plus four inserts was ~15% of a decode block's operations.
#[inline(always)]
unsafe fn k4_words(w: &[u8]) -> __m256i {
    // SAFETY: the caller runs with AVX2; `w` is a whole block (144 or 176
    // bytes), so bytes 4..20 are readable.
    unsafe {
        let packed = load16(&w[4..]);
        let abab = _mm_shuffle_epi32::<0b01_01_00_00>(packed);
        let cccc = _mm_shuffle_epi32::<0b10_10_10_10>(packed);
        let (low6, top2, low4) = (0x3F3F_3F3F, 0x3030_3030, 0x0F0F_0F0F);
        let own = _mm_and_si128(abab, _mm_set_epi32(0, low6, 0, low6));
        let high = _mm_and_si128(_mm_srli_epi32::<2>(abab), _mm_set_epi32(top2, 0, top2, 0));
        let from_c = _mm_and_si128(
            _mm_srlv_epi32(cccc, _mm_set_epi32(4, 0, 0, 0)),
            _mm_set_epi32(low4, 0, low4, 0),
        );
        let dwords = _mm_or_si128(own, _mm_or_si128(high, from_c));
        _mm256_cvtepu8_epi16(dwords)
    }
}

/// The 16 scales of a Q3_K block as i16 words (`portable::unpack_k`):
/// scale `i` is the nibble `i / 8` of byte `96 + i % 8`, plus bits
/// `2 * (i / 4)..` of byte `104 + i % 4` as bits 4..6, minus 32. Built in
/// one vector: the scalar loop into an array compiled to a 16-step loop
/// with variable shifts and a store-forwarding stall (Q3_K decode ran 2.8x
/// slower than the previous kernel).
#[inline(always)]
unsafe fn k3_words(w: &[u8]) -> __m256i {
    let low_bytes =
        u64::from_le_bytes([w[96], w[97], w[98], w[99], w[100], w[101], w[102], w[103]]);
    let high_bytes = u32::from_le_bytes([w[104], w[105], w[106], w[107]]);
    // SAFETY: the caller runs with AVX2.
    unsafe {
        let low4 = _mm_set1_epi8(0x0F);
        let packed = _mm_cvtsi64_si128(low_bytes as i64);
        let lows = _mm_unpacklo_epi64(
            _mm_and_si128(packed, low4),
            _mm_and_si128(_mm_srli_epi16::<4>(packed), low4),
        );
        // Dword `g` holds bytes 104..108 shifted right by 2g: byte `4g + j`
        // then has bits 2g..2g+2 of byte 104 + j at the bottom.
        let spread = _mm_srlv_epi32(_mm_set1_epi32(high_bytes as i32), _mm_set_epi32(6, 4, 2, 0));
        let highs = _mm_slli_epi16::<4>(_mm_and_si128(spread, _mm_set1_epi8(3)));
        let unsigned = _mm256_cvtepu8_epi16(_mm_or_si128(lows, highs));
        _mm256_sub_epi16(unsigned, _mm256_set1_epi16(32))
    }
}

/// The per-block state of one weight block; the chunks' levels and scales
/// are derived from it (and the block bytes) where they are used.
#[derive(Clone, Copy)]
pub(super) struct Block<'a> {
    w: &'a [u8],
    /// The i16 scales, words 0..8 repeated in both 128-bit lanes.
    scales_low: __m256i,
    /// Words 8..16 repeated (formats with 16 scales).
    scales_high: __m256i,
    /// Q2_K: 16 mins; Q4_K/Q5_K: 8 mins (low half); Q6_K: the 16 scales.
    extra: __m256i,
    d: f32,
    dmin: f32,
}

/// An all-zero activation block (the placeholder `tile` overwrites).
static ZERO_BLOCK: [u8; Q8_K_BYTES] = [0; Q8_K_BYTES];

impl<'a> Block<'a> {
    /// A placeholder, overwritten before use.
    // SAFETY: `__m256i` is plain integer lanes, valid at all-zero bits.
    const EMPTY: Block<'static> = Block {
        w: &[],
        scales_low: unsafe { std::mem::zeroed() },
        scales_high: unsafe { std::mem::zeroed() },
        extra: unsafe { std::mem::zeroed() },
        d: 0.0,
        dmin: 0.0,
    };

    /// # Safety
    /// AVX2 and F16C; `w` is one whole block of `F`.
    #[inline(always)]
    pub(super) unsafe fn new<const F: u32>(w: &'a [u8]) -> Self {
        // SAFETY: the caller's contract.
        unsafe {
            let zero = _mm256_setzero_si256();
            let low4 = _mm_set1_epi8(0x0F);
            let (words, extra, d, dmin) = match F {
                Q2_K => {
                    let packed = load16(w);
                    let sc = _mm256_cvtepu8_epi16(_mm_and_si128(packed, low4));
                    let mins = _mm_and_si128(_mm_srli_epi16(packed, 4), low4);
                    (sc, _mm256_cvtepu8_epi16(mins), f16_at(w, 80), f16_at(w, 82))
                }
                Q3_K => {
                    let words = k3_words(w);
                    (words, zero, f16_at(w, 108), 0.0)
                }
                Q4_K | Q5_K => {
                    let words = k4_words(w);
                    let mins = _mm256_castsi128_si256(_mm256_extracti128_si256(words, 1));
                    (words, mins, f16_at(w, 0), f16_at(w, 2))
                }
                Q6_K => {
                    let sc = _mm256_cvtepi8_epi16(load16(&w[192..]));
                    (sc, sc, f16_at(w, 208), 0.0)
                }
                _ => {
                    // IQ4_XS
                    let scales_h = u32::from(u16::from_le_bytes([w[2], w[3]]));
                    let mut sc = [0i16; 8];
                    for (ib, value) in sc.iter_mut().enumerate() {
                        let low = (w[4 + ib / 2] >> (4 * (ib % 2))) & 0x0F;
                        let high = ((scales_h >> (2 * ib)) & 3) as u8;
                        *value = i16::from(low | (high << 4)) - 32;
                    }
                    // SAFETY: `sc` is 16 readable bytes; the load is unaligned.
                    let words = _mm256_castsi128_si256(_mm_loadu_si128(sc.as_ptr().cast()));
                    (words, zero, f16_at(w, 0), 0.0)
                }
            };
            Block {
                w,
                scales_low: _mm256_broadcastsi128_si256(_mm256_castsi256_si128(words)),
                scales_high: _mm256_broadcastsi128_si256(_mm256_extracti128_si256(words, 1)),
                extra,
                d,
                dmin,
            }
        }
    }

    /// The levels of chunk `c` (a literal): unsigned for the `maddubs`
    /// operand, or signed for `signed` formats.
    #[inline(always)]
    pub(super) unsafe fn levels<const F: u32>(&self, c: usize) -> __m256i {
        let w = self.w;
        // SAFETY: `new`'s contract.
        unsafe {
            let low2 = _mm256_set1_epi8(3);
            let low4 = _mm256_set1_epi8(0x0F);
            match F {
                Q2_K => {
                    let bits = load32(&w[16 + 32 * (c / 4)..]);
                    _mm256_and_si256(srli16(bits, 2 * (c % 4)), low2)
                }
                Q3_K => {
                    let bits = load32(&w[32 + 32 * (c / 4)..]);
                    let low = _mm256_and_si256(srli16(bits, 2 * (c % 4)), low2);
                    let bit = _mm256_set1_epi8((1u8 << c) as i8);
                    let set = _mm256_cmpeq_epi8(_mm256_and_si256(load32(w), bit), bit);
                    let minus4 = _mm256_andnot_si256(set, _mm256_set1_epi8(4));
                    _mm256_sub_epi8(low, minus4)
                }
                Q4_K | Q5_K => {
                    let start = if F == Q5_K { 48 } else { 16 };
                    let bits = load32(&w[start + 32 * (c / 2)..]);
                    let level = _mm256_and_si256(srli16(bits, 4 * (c % 2)), low4);
                    if F == Q5_K {
                        let bit = _mm256_set1_epi8((1u8 << c) as i8);
                        let hbits = load32(&w[16..48]);
                        let set = _mm256_cmpeq_epi8(_mm256_and_si256(hbits, bit), bit);
                        _mm256_or_si256(level, _mm256_and_si256(set, _mm256_set1_epi8(16)))
                    } else {
                        level
                    }
                }
                Q6_K => {
                    let (half, s) = (c / 4, c % 4);
                    let ql = load32(&w[64 * half + 32 * (s % 2)..]);
                    let qh = load32(&w[128 + 32 * half..]);
                    let low = _mm256_and_si256(srli16(ql, 4 * (s / 2)), low4);
                    let high = _mm256_and_si256(srli16(qh, 2 * s), low2);
                    _mm256_or_si256(low, _mm256_slli_epi16::<4>(high))
                }
                _ => iq4_lookup(nibbles(&w[8 + 16 * c..])),
            }
        }
    }

    /// The i16 scale of every element pair of chunk `c` (a literal).
    #[inline(always)]
    unsafe fn scales<const F: u32>(&self, c: usize) -> __m256i {
        // SAFETY: `new`'s contract (AVX2).
        unsafe {
            if chunk_scaled(F) {
                let mask = word_mask(c);
                _mm256_shuffle_epi8(self.scales_low, _mm256_set_m128i(mask, mask))
            } else {
                // The two 16-element halves: words 2c (low lane), 2c + 1.
                let src = if c < 4 {
                    self.scales_low
                } else {
                    self.scales_high
                };
                let mask = _mm256_set_m128i(word_mask((2 * c + 1) % 8), word_mask((2 * c) % 8));
                _mm256_shuffle_epi8(src, mask)
            }
        }
    }
}

/// Weight rows `n_range` of `w` (rows of `row_bytes`, format `F`) times
/// the `R` Q8_K activation rows `a_rows` (output rows `m0..m0 + R`):
/// `store(m, n, value)`, bit-identical to `portable::row_dot`. `W` weight
/// rows per pass, the ragged end one at a time. The pointers and the block
/// count are set up once here, so a pass costs its blocks and its `W * R`
/// horizontal sums only (with K = 1024 a per-row setup was ~18% of the
/// time). `BATCH`: the batch order (`portable::batch_row_dot`) instead of
/// `vec_dot`'s lanes; the integer sums are the same, summed across lanes.
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C. `F` is the id of Q2_K..Q6_K or
/// IQ4_XS, and the activation rows hold Q8_K blocks with levels in
/// -127..=127 (`QActivations`). Short operands shorten the work, never
/// read past it.
#[target_feature(enable = "avx2,fma,f16c")]
pub(in crate::host::qmatmul) fn k_rows_avx2<
    const F: u32,
    const W: usize,
    const R: usize,
    const BATCH: bool,
>(
    w: &[u8],
    row_bytes: usize,
    n_range: Range<usize>,
    a_rows: [&[u8]; R],
    m0: usize,
    prefetch_ahead_bytes: Option<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    let w_bytes = block_bytes(F);
    let n_blocks = a_rows
        .iter()
        .map(|a| a.len() / Q8_K_BYTES)
        .fold(row_bytes / w_bytes, usize::min);
    let n_end = n_range.end.min(w.len().checked_div(row_bytes).unwrap_or(0));
    let mut a_ptrs = [std::ptr::null::<u8>(); R];
    for (ptr, row) in a_ptrs.iter_mut().zip(&a_rows) {
        *ptr = row.as_ptr();
    }
    let prefetch = prefetch_ahead_bytes.map(|ahead| PrefetchAhead::within(w, ahead));
    let mut n = n_range.start;
    while n + W <= n_end {
        let mut w_ptrs = [std::ptr::null::<u8>(); W];
        for (i, ptr) in w_ptrs.iter_mut().enumerate() {
            // SAFETY: `n + i < n_end`, so row `n + i` lies inside `w`.
            *ptr = unsafe { w.as_ptr().add((n + i) * row_bytes) };
        }
        // SAFETY: each weight row holds `row_bytes >= n_blocks * w_bytes`
        // bytes, each activation row at least `n_blocks` Q8_K blocks; this
        // function's features and contract cover `tile`'s.
        let out = unsafe { tile::<F, W, R, BATCH>(w_ptrs, a_ptrs, n_blocks, prefetch) };
        for (i, values) in out.iter().enumerate() {
            for (r, &value) in values.iter().enumerate() {
                store(m0 + r, n + i, value);
            }
        }
        n += W;
    }
    while n < n_end {
        // SAFETY: as above, one row.
        let [values] = unsafe {
            tile::<F, 1, R, BATCH>([w.as_ptr().add(n * row_bytes)], a_ptrs, n_blocks, prefetch)
        };
        for (r, &value) in values.iter().enumerate() {
            store(m0 + r, n, value);
        }
        n += 1;
    }
}

/// `W` weight rows times `R` activation rows over `n_blocks` blocks;
/// returns `[w][r]`. `prefetch`: prefetch the (adjacent) weight rows as one
/// linear stream, `W` blocks' bytes per block.
///
/// # Safety
/// `k_rows_avx2`'s; each `w_rows[i]` is readable for `n_blocks` blocks of
/// `F`, each `a_rows[r]` for `n_blocks` Q8_K blocks.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn tile<const F: u32, const W: usize, const R: usize, const BATCH: bool>(
    w_rows: [*const u8; W],
    a_rows: [*const u8; R],
    n_blocks: usize,
    prefetch: Option<PrefetchAhead>,
) -> [[f32; R]; W] {
    let w_bytes = block_bytes(F);
    let mut acc = [[_mm256_setzero_ps(); R]; W];
    let mut acc_mins = [[_mm_setzero_ps(); R]; W];
    // Q4_K's min lanes of activation rows `2p` and `2p + 1` in one vector
    // (`[2p].t0, .t1, [2p+1].t0, .t1 | [2p].t2, .t3, [2p+1].t2, .t3`), so
    // a pair costs one `madd`, convert and FMA; the odd last row uses
    // `acc_mins`. Lane for lane the same FMAs.
    let mut acc_min_pairs = [[_mm256_setzero_ps(); R]; W];
    let paired_rows = if F == Q4_K && !BATCH { R - R % 2 } else { 0 };
    let mut summs = [[0.0f32; R]; W];
    // The batch order's accumulators, lane `i * R + r` (at most four).
    const { assert!(!BATCH || W * R <= 4) };
    let mut batch_acc = _mm_setzero_ps();
    for b in 0..n_blocks {
        // (Loops, not `array::from_fn`: its closures are not inlined into
        // this `target_feature` function, and vectors would cross calls
        // through memory.)
        let mut blocks = [Block::EMPTY; W];
        for (block, &row) in blocks.iter_mut().zip(&w_rows) {
            // SAFETY: `b < n_blocks` (the contract): block `b` is readable.
            *block = unsafe {
                Block::new::<F>(std::slice::from_raw_parts(row.add(b * w_bytes), w_bytes))
            };
        }
        if let Some(prefetch) = prefetch {
            prefetch.lines(w_rows[0].wrapping_add(b * W * w_bytes), W * w_bytes);
        }
        let mut a = [&ZERO_BLOCK; R];
        for (block, &row) in a.iter_mut().zip(&a_rows) {
            // SAFETY: as above; a byte array has alignment 1.
            *block = unsafe { &*row.add(b * Q8_K_BYTES).cast::<[u8; Q8_K_BYTES]>() };
        }
        let mut sumi = [[_mm256_setzero_si256(); R]; W];
        for_chunks!(C => {
            let mut levels = [_mm256_setzero_si256(); W];
            let mut scales = [_mm256_setzero_si256(); W];
            for i in 0..W {
                // SAFETY: as above; `C` is a chunk index below 8.
                unsafe {
                    levels[i] = blocks[i].levels::<F>(C);
                    scales[i] = blocks[i].scales::<F>(C);
                }
            }
            for r in 0..R {
                let aq = load32(&a[r][4 + 32 * C..]);
                for i in 0..W {
                    let pairs = if signed(F) {
                        let magnitudes = _mm256_sign_epi8(levels[i], levels[i]);
                        _mm256_maddubs_epi16(magnitudes, _mm256_sign_epi8(aq, levels[i]))
                    } else {
                        _mm256_maddubs_epi16(levels[i], aq)
                    };
                    sumi[i][r] = _mm256_add_epi32(sumi[i][r], _mm256_madd_epi16(scales[i], pairs));
                }
            }
            // An opaque step on the sums after each chunk: without it LLVM
            // regroups the work by activation row (all eight chunks of row
            // 0 first), keeping every chunk's levels and scales live, and
            // they spill to the stack again.
            for row in sumi.iter_mut() {
                for sum in row.iter_mut() {
                    // SAFETY: an empty template; it only pins `sum` to a register.
                    unsafe {
                        std::arch::asm!(
                            "/* {0} */",
                            inout(ymm_reg) *sum,
                            options(nomem, nostack, preserves_flags),
                        );
                    }
                }
            }
        });
        if paired_rows > 0 {
            let mut mins = [_mm256_setzero_si256(); W];
            for (pair_mins, block) in mins.iter_mut().zip(&blocks) {
                // [m0..m3, m0..m3 | m4..m7, m4..m7] against the pair sums.
                *pair_mins = _mm256_permute4x64_epi64::<0b01_01_00_00>(block.extra);
            }
            for p in 0..paired_rows / 2 {
                let (a0, a1) = (a[2 * p], a[2 * p + 1]);
                // [row 2p pair sums 0..4, row 2p+1 0..4 | 4..8, 4..8]
                let pair_sums = _mm256_hadd_epi16(load32(&a0[4 + QK_K..]), load32(&a1[4 + QK_K..]));
                let (y0, y1) = (f32_at(a0, 0), f32_at(a1, 0));
                for i in 0..W {
                    let prod = _mm256_cvtepi32_ps(_mm256_madd_epi16(mins[i], pair_sums));
                    let dmin = blocks[i].dmin;
                    let half = _mm_set_ps(-y1 * dmin, -y1 * dmin, -y0 * dmin, -y0 * dmin);
                    let scale = _mm256_set_m128(half, half);
                    acc_min_pairs[i][p] = _mm256_fmadd_ps(scale, prod, acc_min_pairs[i][p]);
                }
            }
        }
        if BATCH {
            // SAFETY: this function's features include AVX2 and FMA.
            batch_acc = unsafe { batch_terms::<F, W, R>(&blocks, &sumi, &a, batch_acc) };
            continue;
        }
        for r in 0..R {
            let yd = f32_at(a[r], 0);
            let bsums = load32(&a[r][4 + QK_K..]);
            for i in 0..W {
                let u = &blocks[i];
                let mut sumi = sumi[i][r];
                match F {
                    Q2_K => {
                        let mins = _mm256_cvtepi32_ps(_mm256_madd_epi16(u.extra, bsums));
                        acc[i][r] = _mm256_fmadd_ps(_mm256_set1_ps(-yd * u.dmin), mins, acc[i][r]);
                    }
                    Q4_K if r < paired_rows => {}
                    Q4_K | Q5_K => {
                        let pair_sums = _mm_hadd_epi16(
                            _mm256_castsi256_si128(bsums),
                            _mm256_extracti128_si256(bsums, 1),
                        );
                        let prod = _mm_madd_epi16(_mm256_castsi256_si128(u.extra), pair_sums);
                        let dmin = -yd * u.dmin;
                        if F == Q4_K {
                            acc_mins[i][r] = _mm_fmadd_ps(
                                _mm_set1_ps(dmin),
                                _mm_cvtepi32_ps(prod),
                                acc_mins[i][r],
                            );
                        } else {
                            let total = _mm_hadd_epi32(_mm_hadd_epi32(prod, prod), prod);
                            let total = _mm_cvtsi128_si32(total);
                            summs[i][r] = dmin.mul_add(total as f32, summs[i][r]);
                        }
                    }
                    Q6_K => {
                        let offset = _mm256_slli_epi32(_mm256_madd_epi16(bsums, u.extra), 5);
                        sumi = _mm256_sub_epi32(sumi, offset);
                    }
                    _ => {}
                }
                let d = _mm256_set1_ps(yd * u.d);
                acc[i][r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sumi), acc[i][r]);
            }
        }
    }
    if BATCH {
        let mut lanes = [0.0f32; 4];
        // SAFETY: `lanes` is 16 writable bytes; the store is unaligned.
        unsafe { _mm_storeu_ps(lanes.as_mut_ptr(), batch_acc) };
        return std::array::from_fn(|i| std::array::from_fn(|r| lanes[i * R + r]));
    }
    let mut out = [[0.0; R]; W];
    for i in 0..W {
        for r in 0..R {
            out[i][r] = match F {
                Q4_K if r < paired_rows => {
                    let mut lanes = [0.0f32; 8];
                    // SAFETY: `lanes` is 32 writable bytes; the store is unaligned.
                    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc_min_pairs[i][r / 2]) };
                    // Row `r`'s min lanes t0..t4, then `portable::hsum4`.
                    let base = 2 * (r % 2);
                    let t = [
                        lanes[base],
                        lanes[base + 1],
                        lanes[base + 4],
                        lanes[base + 5],
                    ];
                    hsum8(acc[i][r]) + ((t[0] + t[2]) + (t[1] + t[3]))
                }
                _ => k_row_total::<F>(acc[i][r], acc_mins[i][r], summs[i][r]),
            };
        }
    }
    out
}

/// One block's batch-order terms folded into `acc`, lane `i * R + r`
/// (`portable::batch_fold` lane by lane): `sumi` holds each pair's scaled
/// integer sums in eight lanes; four pairs' sums are reduced together.
#[inline(always)]
unsafe fn batch_terms<const F: u32, const W: usize, const R: usize>(
    blocks: &[Block<'_>; W],
    sumi: &[[__m256i; R]; W],
    a: &[&[u8; Q8_K_BYTES]; R],
    acc: __m128,
) -> __m128 {
    // SAFETY: the caller runs with AVX2 and FMA (`tile`'s contract).
    unsafe {
        let mut s1 = [_mm256_setzero_si256(); 4];
        let mut s2 = [_mm256_setzero_si256(); 4];
        let (mut d, mut dmin, mut yd) = ([0.0f32; 4], [0.0f32; 4], [0.0f32; 4]);
        for i in 0..W {
            for r in 0..R {
                let (c, u) = (i * R + r, &blocks[i]);
                let bsums = load32(&a[r][4 + QK_K..]);
                s1[c] = sumi[i][r];
                match F {
                    Q2_K => s2[c] = _mm256_madd_epi16(u.extra, bsums),
                    Q4_K | Q5_K => {
                        let pair_sums = _mm_hadd_epi16(
                            _mm256_castsi256_si128(bsums),
                            _mm256_extracti128_si256(bsums, 1),
                        );
                        let prod = _mm_madd_epi16(_mm256_castsi256_si128(u.extra), pair_sums);
                        s2[c] = _mm256_zextsi128_si256(prod);
                    }
                    Q6_K => {
                        let offset = _mm256_slli_epi32(_mm256_madd_epi16(bsums, u.extra), 5);
                        s1[c] = _mm256_sub_epi32(s1[c], offset);
                    }
                    _ => {}
                }
                (d[c], dmin[c], yd[c]) = (u.d, u.dmin, f32_at(a[r].as_slice(), 0));
            }
        }
        let has_min = matches!(F, Q2_K | Q4_K | Q5_K);
        // Up to two pairs (decode): one reduction for both sums, the mins
        // in lanes 2 and 3; lanes past the pairs have d = 0 and stay 0.
        let (sums, mins) = if has_min && W * R <= 2 {
            let both = hsum4([s1[0], s1[1], s2[0], s2[1]]);
            (both, _mm_shuffle_epi32::<0b11_10_11_10>(both))
        } else {
            (
                hsum4(s1),
                if has_min {
                    hsum4(s2)
                } else {
                    _mm_setzero_si128()
                },
            )
        };
        let vector = |v: [f32; 4]| _mm_setr_ps(v[0], v[1], v[2], v[3]);
        let mut term = _mm_mul_ps(vector(d), _mm_cvtepi32_ps(sums));
        if has_min {
            term = _mm_fnmadd_ps(vector(dmin), _mm_cvtepi32_ps(mins), term);
        }
        _mm_fmadd_ps(term, vector(yd), acc)
    }
}

/// The wrapping sums of four vectors' eight i32 lanes, one per lane.
#[inline(always)]
pub(super) unsafe fn hsum4(v: [__m256i; 4]) -> __m128i {
    // SAFETY: the caller runs with AVX2.
    unsafe {
        let quads = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
        _mm_add_epi32(
            _mm256_castsi256_si128(quads),
            _mm256_extracti128_si256::<1>(quads),
        )
    }
}

/// The wrapping sum of the eight i32 lanes (exact: the batch sums fit),
/// in registers: a round trip through memory cost decode ~15%.
#[inline(always)]
pub(super) unsafe fn hsum_i32(v: __m256i) -> i32 {
    // SAFETY: the caller runs with AVX2.
    unsafe {
        let half = _mm256_extracti128_si256::<1>(v);
        hsum_i32_128(_mm_add_epi32(_mm256_castsi256_si128(v), half))
    }
}

/// The wrapping sum of the four i32 lanes.
#[inline(always)]
pub(super) unsafe fn hsum_i32_128(v: __m128i) -> i32 {
    // SAFETY: the caller runs with SSE2 (every x86-64).
    unsafe {
        let pairs = _mm_add_epi32(v, _mm_shuffle_epi32::<0b01_00_11_10>(v));
        let total = _mm_add_epi32(pairs, _mm_shuffle_epi32::<0b10_11_00_01>(pairs));
        _mm_cvtsi128_si32(total)
    }
}

/// Whether format `ty` has a kernel here.
pub(in crate::host::qmatmul) const fn has_k_avx2(ty: GgmlType) -> bool {
    matches!(
        ty,
        GgmlType::Q2_K
            | GgmlType::Q3_K
            | GgmlType::Q4_K
            | GgmlType::Q5_K
            | GgmlType::Q6_K
            | GgmlType::IQ4_XS
    )
}
