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
//! - Decode ([`q32_decode_avx2`]): four weight rows per pass for a single
//!   activation row, so the activation block and its scale are loaded once
//!   per four rows, each row decoded right before its products (one row
//!   per pass for matrices streamed from memory, one sequential stream,
//!   on the CPUs `single_stream_decode` names).
//! - Prompt batches ([`q32_tile_avx2`], [`q32_tile_unpacked_avx2`]): two
//!   weight rows times four activation rows, reading the activations packed
//!   once per group ([`PackedActs`]) through one pointer.
//! - No accumulator spills: the unpack constants are memory operands and
//!   the per-block scale products one stored vector (see the kernels).

use std::arch::x86_64::*;

use phobos_quant::GgmlType;

use super::q32_512::ActRow;
use super::{PrefetchAhead, hsum8, load32, opaque};

const Q4_0: u32 = GgmlType::Q4_0 as u32;
const Q5_0: u32 = GgmlType::Q5_0 as u32;
const IQ4_NL: u32 = GgmlType::IQ4_NL as u32;

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

/// The constants of [`unpack`] and the pair sums, read from memory
/// through a pointer the optimizer cannot see through (`opaque`) so each
/// use is a memory operand. Hoisted into
/// registers, as LLVM otherwise does, they pushed the 2 x 4 tile's
/// accumulators out to the stack (a store and reload per product).
#[repr(C, align(32))]
struct Consts {
    /// Byte `i` of the shuffle picks byte `i / 8` of the broadcast bits.
    spread: [u8; 32],
    /// Byte `i` is bit `i % 8`.
    select: [u8; 32],
    low_nibble: [u8; 32],
    fifth_bit: [u8; 32],
    ones_i16: [i16; 16],
    /// IQ4_NL's levels, in both 128-bit halves.
    iq4nl: [i8; 32],
}

static CONSTS: Consts = Consts {
    spread: {
        let mut bytes = [0u8; 32];
        let mut i = 0;
        while i < 32 {
            bytes[i] = (i / 8) as u8;
            i += 1;
        }
        bytes
    },
    select: {
        let mut bytes = [0u8; 32];
        let mut i = 0;
        while i < 32 {
            bytes[i] = 1 << (i % 8);
            i += 1;
        }
        bytes
    },
    low_nibble: [0x0F; 32],
    fifth_bit: [0x10; 32],
    ones_i16: [1; 16],
    iq4nl: {
        let table = super::super::portable::KVALUES_IQ4NL;
        let mut both = [0i8; 32];
        let mut i = 0;
        while i < 32 {
            both[i] = table[i % 16];
            i += 1;
        }
        both
    },
};

/// Loads 32 bytes of a constant (a memory operand once folded).
#[inline(always)]
unsafe fn constant<T>(value: &T) -> __m256i {
    const { assert!(std::mem::size_of::<T>() == 32) };
    // SAFETY: `value` is 32 readable bytes on a 32-byte boundary (`Consts`).
    unsafe { _mm256_load_si256((value as *const T).cast()) }
}

/// 16 packed bytes to 32 nibbles: low nibbles first, then high ones.
#[inline(always)]
unsafe fn nibbles_with(c: &Consts, qs: *const u8) -> __m256i {
    // SAFETY: the caller passes 16 readable bytes and runs with AVX2.
    unsafe {
        let packed = _mm_loadu_si128(qs.cast());
        let both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
        _mm256_and_si256(both, constant(&c.low_nibble))
    }
}

/// One weight block: the unsigned `maddubs` operand and, for the sign
/// trick (Q8_0, IQ4_NL), the signed levels whose signs move onto the
/// activations.
///
/// # Safety
/// AVX2; `w` points at one whole block of `F`.
#[inline(always)]
unsafe fn unpack<const F: u32>(c: &Consts, w: *const u8) -> (__m256i, __m256i) {
    // SAFETY: the caller runs with AVX2 and passes a whole block.
    unsafe {
        match F {
            Q4_0 => (nibbles_with(c, w.add(2)), _mm256_setzero_si256()),
            Q5_0 => {
                let bits = w.add(2).cast::<u32>().read_unaligned();
                let spread =
                    _mm256_shuffle_epi8(_mm256_set1_epi32(bits as i32), constant(&c.spread));
                let select = constant(&c.select);
                let high = _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select);
                let fifth = _mm256_and_si256(high, constant(&c.fifth_bit));
                (
                    _mm256_or_si256(nibbles_with(c, w.add(6)), fifth),
                    _mm256_setzero_si256(),
                )
            }
            IQ4_NL => {
                let levels = _mm256_shuffle_epi8(constant(&c.iq4nl), nibbles_with(c, w.add(2)));
                (_mm256_sign_epi8(levels, levels), levels)
            }
            _ => {
                let levels = _mm256_loadu_si256(w.add(2).cast());
                (_mm256_sign_epi8(levels, levels), levels)
            }
        }
    }
}

/// `R` activation rows packed block by block for [`q32_tile_avx2`], so the
/// tile reads one contiguous stream through one pointer (no per-row bounds
/// checks, no per-row pointers competing for registers). Per block: the
/// `R` rows' 32 levels; for Q4_0/Q5_0 the `R` rows' negated lane sums,
/// already shifted by the format's offset; then one vector of scales whose
/// lane `k` is row `k % R`'s (see [`q32_tile_avx2`]). Packed once per group
/// of activation rows and reused by every weight-row pass over it.
pub(in crate::host::qmatmul) struct PackedActs<const R: usize> {
    vecs: Vec<__m256i>,
    n_blocks: usize,
}

impl<const R: usize> PackedActs<R> {
    /// Vectors per packed block for format `F`.
    const fn per_block(f: u32) -> usize {
        match offset_shift(f) {
            Some(_) => 2 * R + 1,
            None => R + 1,
        }
    }

    /// Packs the first `n_blocks` blocks of `a_rows` for weight format `F`
    /// (fewer if a row is shorter).
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(in crate::host::qmatmul) fn pack<const F: u32>(
        a_rows: [ActRow<'_>; R],
        n_blocks: usize,
    ) -> Self {
        Self::pack_into::<F>(Vec::new(), a_rows, n_blocks)
    }

    /// [`PackedActs::pack`] into `vecs`' allocation (cleared first): decode
    /// packs one row per tile, hundreds of tiles per token, so the buffer is
    /// reused ([`PackedActs::into_vecs`]) rather than allocated each time.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(in crate::host::qmatmul) fn pack_into<const F: u32>(
        mut vecs: Vec<__m256i>,
        a_rows: [ActRow<'_>; R],
        n_blocks: usize,
    ) -> Self {
        const A_BYTES: usize = crate::host::qmatmul::activations::Q8_0_BYTES;
        const { assert!(R >= 1 && R <= 8, "the scales of a block share one vector") };
        let n_blocks = a_rows.iter().fold(n_blocks, |n, a| {
            n.min(a.blocks.len() / A_BYTES)
                .min(a.scales.len())
                .min(a.neg_sums.len() / 8)
        });
        vecs.clear();
        vecs.reserve(n_blocks * Self::per_block(F));
        for b in 0..n_blocks {
            for a in &a_rows {
                vecs.push(load32(&a.blocks[b * A_BYTES + 2..(b + 1) * A_BYTES]));
            }
            if let Some(shift) = offset_shift(F) {
                for a in &a_rows {
                    let sums = &a.neg_sums[8 * b..8 * b + 8];
                    // SAFETY: `sums` is eight readable i32; unaligned load.
                    let sums = unsafe { _mm256_loadu_si256(sums.as_ptr().cast()) };
                    vecs.push(_mm256_sll_epi32(sums, _mm_cvtsi32_si128(shift)));
                }
            }
            let scales: [f32; 8] = std::array::from_fn(|k| a_rows[k % R].scales[b]);
            // SAFETY: eight readable f32; unaligned load.
            vecs.push(_mm256_castps_si256(unsafe {
                _mm256_loadu_ps(scales.as_ptr())
            }));
        }
        Self { vecs, n_blocks }
    }

    /// The buffer back, for the next [`PackedActs::pack_into`].
    pub(in crate::host::qmatmul) fn into_vecs(self) -> Vec<__m256i> {
        self.vecs
    }
}

/// Eight f32 lanes on a 32-byte boundary (the per-block scale products,
/// read back one lane at a time with `vbroadcastss`).
#[repr(C, align(32))]
struct Lanes([f32; 8]);

/// One block of a `W x R` tile, shared by [`q32_tile_avx2`] (weights
/// decoded in the loop) and [`q32_tile_unpacked_avx2`] (weights decoded
/// once): adds the block's `W x R` products to `acc`, bit for bit
/// `portable::row_dot` (multi-row order). `unsigned` and `sign` are the
/// `W` weight rows' [`unpack`] operands (`sign` unused by the offset
/// formats); lane `i` of `w_scales` is row `i`'s f32 scale; `a_block` is
/// the block of a [`PackedActs`] packed for `F`.
///
/// Per block the `W x R` scale products `d_w * d_x` are one vector
/// multiply (lane `i * R + r`), stored and broadcast per product: the
/// products are the same f32 operations as one multiply each, and no
/// accumulator spills to make room for broadcast scales.
///
/// # Safety
/// AVX2 and FMA (the caller's features; inlined into it); `a_block`
/// points at one whole packed block (`PackedActs::<R>::per_block(F)`
/// vectors, the scales last).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn block_products<const F: u32, const W: usize, const R: usize>(
    c: &Consts,
    unsigned: [__m256i; W],
    sign: [__m256i; W],
    w_scales: __m256,
    w_lane: __m256i,
    a_block: *const __m256i,
    d: &mut Lanes,
    acc: &mut [[__m256; R]; W],
) {
    // SAFETY (the whole body): the caller's features and block, as above.
    unsafe {
        let wd = if R > 1 {
            _mm256_permutevar8x32_ps(w_scales, w_lane)
        } else {
            w_scales
        };
        let a_per_block = PackedActs::<R>::per_block(F);
        let ad = _mm256_castsi256_ps(a_block.add(a_per_block - 1).read());
        // ggml's d_w * d_x: one f32 product each, the same in either order.
        _mm256_store_ps(d.0.as_mut_ptr(), _mm256_mul_ps(wd, ad));
        // Left to itself LLVM keeps the products in a register and
        // extracts lanes with shuffles, costing a register (an accumulator
        // spills) and a shuffle per product; through memory each is one
        // `vbroadcastss` load.
        let d = opaque(d);
        #[allow(clippy::needless_range_loop)] // `r` picks the packed vectors too
        for r in 0..R {
            // Levels are the block's first `R` vectors, the shifted sums
            // (offset formats) the next `R`.
            let aq = a_block.add(r).read();
            let offset = offset_shift(F).map(|_| a_block.add(R + r).read());
            for i in 0..W {
                let pairs = match offset {
                    Some(_) => _mm256_maddubs_epi16(unsigned[i], aq),
                    None => _mm256_maddubs_epi16(unsigned[i], _mm256_sign_epi8(aq, sign[i])),
                };
                let mut lanes = _mm256_madd_epi16(pairs, constant(&c.ones_i16));
                if let Some(offset) = offset {
                    lanes = _mm256_add_epi32(lanes, offset);
                }
                let scale = _mm256_broadcast_ss(&d.0[i * R + r]);
                acc[i][r] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(lanes), acc[i][r]);
            }
        }
    }
}

/// `W` weight rows of format `F` times the `R` packed activation rows;
/// returns `[w][r]`, bit-identical to `portable::row_dot` (multi-row order).
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C. `F` is Q4_0, Q5_0, Q8_0 or
/// IQ4_NL, `W * R <= 8` and `W <= 4`; `acts` was packed for `F`; the weight
/// rows hold whole blocks of `F` (the tile runs over the blocks both sides have).
#[target_feature(enable = "avx2,fma,f16c")]
pub(in crate::host::qmatmul) fn q32_tile_avx2<const F: u32, const W: usize, const R: usize>(
    w_rows: [&[u8]; W],
    acts: &PackedActs<R>,
) -> [[f32; R]; W] {
    const {
        assert!(
            W <= 4 && W * R <= 8,
            "the weight scales share one u64, the products one vector"
        )
    };
    let w_bytes = block_bytes(F);
    let per_block = PackedActs::<R>::per_block(F);
    let n_blocks = w_rows
        .iter()
        .fold(acts.n_blocks, |n, row| n.min(row.len() / w_bytes));
    let w_ptrs: [*const u8; W] = std::array::from_fn(|i| w_rows[i].as_ptr());
    let packed = acts.vecs.as_ptr();
    // Lane `k` of the weight scales is row `k / R`'s (rows past `W` repeat
    // the last: their products are never read).
    let w_lane: [i32; 8] = std::array::from_fn(|k| (k / R).min(W - 1) as i32);
    // SAFETY: eight readable i32; unaligned load.
    let w_lane = unsafe { _mm256_loadu_si256(w_lane.as_ptr().cast()) };
    let mut acc = [[_mm256_setzero_ps(); R]; W];
    let mut d = Lanes([0.0; 8]);
    for b in 0..n_blocks {
        let mut unsigned = [_mm256_setzero_si256(); W];
        let mut sign = [_mm256_setzero_si256(); W];
        // The weight rows' f16 scales side by side: one conversion for all.
        let mut scale_bits = 0u64;
        let c = opaque(&CONSTS);
        for i in 0..W {
            // SAFETY: `b < n_blocks` and row `i` holds `n_blocks` blocks.
            let w = unsafe { w_ptrs[i].add(b * w_bytes) };
            // SAFETY: this function's features cover `unpack`'s; `w` is a
            // whole block.
            (unsigned[i], sign[i]) = unsafe { unpack::<F>(c, w) };
            // SAFETY: the block's first two bytes are its f16 scale.
            let bits = unsafe { w.cast::<u16>().read_unaligned() };
            scale_bits |= u64::from(bits) << (16 * i);
        }
        let wd = _mm256_castps128_ps256(_mm_cvtph_ps(_mm_cvtsi64_si128(scale_bits as i64)));
        // SAFETY: this function's features cover `block_products`'; block
        // `b < n_blocks` of the packing holds `per_block` vectors.
        unsafe {
            let block = packed.add(b * per_block);
            block_products::<F, W, R>(c, unsigned, sign, wd, w_lane, block, &mut d, &mut acc);
        }
    }
    std::array::from_fn(|i| std::array::from_fn(|r| hsum8(acc[i][r])))
}

/// Four f32 lanes on a 16-byte boundary (decode's per-block scale
/// products, read back one lane at a time with `vbroadcastss`).
#[repr(C, align(16))]
struct Lanes4([f32; 4]);

/// Decode's pass: `W` weight rows of format `F` times one packed
/// activation row; bit for bit `portable::row_dot` (single-row order), as
/// `avx2_q32_tile_equals_portable` checks: per block and row the same
/// integer lanes as [`block_products`], one f32 product `d_w * d_x` and
/// one FMA per lane. `PREFETCH`: prefetch the rows ahead (`prefetch`).
///
/// Each row is decoded right before its products and the unpack
/// constants are re-read per row (memory operands), so only the `W`
/// accumulators, the activation block and a few temporaries are live:
/// the tile form decodes all `W` rows first, which on AVX2's sixteen
/// registers spilled three accumulators and a decoded row per block.
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C. `F` is Q4_0, Q5_0, Q8_0 or
/// IQ4_NL, `W <= 4`; `acts` was packed for `F`; the weight rows hold whole
/// blocks of `F` (the pass runs over the blocks both sides have).
#[target_feature(enable = "avx2,fma,f16c")]
pub(in crate::host::qmatmul) fn q32_decode_avx2<
    const F: u32,
    const W: usize,
    const PREFETCH: bool,
>(
    w_rows: [&[u8]; W],
    acts: &PackedActs<1>,
    prefetch: PrefetchAhead,
) -> [f32; W] {
    const { assert!(W >= 1 && W <= 4, "the weight scales share one u64") };
    let w_bytes = block_bytes(F);
    let per_block = PackedActs::<1>::per_block(F);
    let n_blocks = w_rows
        .iter()
        .fold(acts.n_blocks, |n, row| n.min(row.len() / w_bytes));
    let w_ptrs: [*const u8; W] = std::array::from_fn(|i| w_rows[i].as_ptr());
    let packed = acts.vecs.as_ptr();
    let mut acc = [_mm256_setzero_ps(); W];
    let mut d = Lanes4([0.0; 4]);
    for b in 0..n_blocks {
        // SAFETY: block `b < n_blocks` of the packing holds `per_block`
        // vectors: the levels, the shifted sums (offset formats), the
        // scales (every lane the row's, `R = 1`).
        let (aq, offset, ad) = unsafe {
            let block = packed.add(b * per_block);
            (
                block.read(),
                offset_shift(F).map(|_| block.add(1).read()),
                _mm256_castps256_ps128(_mm256_castsi256_ps(block.add(per_block - 1).read())),
            )
        };
        let mut scale_bits = 0u64;
        for (i, row) in w_ptrs.iter().enumerate() {
            // SAFETY: `b < n_blocks` and row `i` holds `n_blocks` blocks;
            // the block's first two bytes are its f16 scale.
            let bits = unsafe { row.add(b * w_bytes).cast::<u16>().read_unaligned() };
            scale_bits |= u64::from(bits) << (16 * i);
        }
        if PREFETCH {
            // A matrix larger than the caches streams from memory. The
            // pass's `W` rows are adjacent, so prefetch them as one linear
            // stream, `W` blocks' bytes per step: on Zen 2 that measured
            // faster than one prefetch per row along each row (four
            // interleaved streams).
            prefetch.lines(w_ptrs[0].wrapping_add(b * W * w_bytes), W * w_bytes);
        }
        let wd = _mm_cvtph_ps(_mm_cvtsi64_si128(scale_bits as i64));
        // ggml's d_w * d_x: one f32 product each (exact: two f16 values).
        // SAFETY: `d` is 16 writable bytes on a 16-byte boundary.
        unsafe { _mm_store_ps(d.0.as_mut_ptr(), _mm_mul_ps(wd, ad)) };
        let d = opaque(&d);
        for (i, acc) in acc.iter_mut().enumerate() {
            // A fresh pointer per row: its constants stay memory operands
            // instead of taking registers for the whole block.
            let c = opaque(&CONSTS);
            // SAFETY: this function's features cover `unpack`'s; row `i`
            // holds block `b` whole.
            let (unsigned, sign) = unsafe { unpack::<F>(c, w_ptrs[i].add(b * w_bytes)) };
            let pairs = match offset {
                Some(_) => _mm256_maddubs_epi16(unsigned, aq),
                None => _mm256_maddubs_epi16(unsigned, _mm256_sign_epi8(aq, sign)),
            };
            // SAFETY: `ones_i16` is 32 bytes on a 32-byte boundary.
            let mut lanes = _mm256_madd_epi16(pairs, unsafe { constant(&c.ones_i16) });
            if let Some(offset) = offset {
                lanes = _mm256_add_epi32(lanes, offset);
            }
            let scale = _mm256_broadcast_ss(&d.0[i]);
            *acc = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(lanes), *acc);
        }
    }
    acc.map(|lanes| hsum8(lanes))
}

/// `W` weight rows unpacked once for the prompt tile
/// ([`q32_tile_unpacked_avx2`]), so every activation group of a tile reuses
/// the decode instead of repeating it. Per block: the `W` rows' unsigned
/// `maddubs` operands; for the sign trick (Q8_0, IQ4_NL) the `W` rows'
/// signed levels; then one vector whose lane `i` is row `i`'s f32 scale.
/// One buffer, refilled per pass (no allocation per weight row).
pub(in crate::host::qmatmul) struct UnpackedWeights<const W: usize> {
    vecs: Vec<__m256i>,
    n_blocks: usize,
}

impl<const W: usize> UnpackedWeights<W> {
    pub(in crate::host::qmatmul) fn new() -> Self {
        Self {
            vecs: Vec::new(),
            n_blocks: 0,
        }
    }

    /// Vectors per unpacked block for format `F`.
    const fn per_block(f: u32) -> usize {
        match offset_shift(f) {
            Some(_) => W + 1,
            None => 2 * W + 1,
        }
    }

    /// Unpacks the first `n_blocks` blocks of `w_rows` (fewer if a row is
    /// shorter), format `F` (Q4_0, Q5_0, Q8_0 or IQ4_NL).
    ///
    /// # Safety
    /// The CPU must support AVX2 and F16C.
    #[target_feature(enable = "avx2,f16c")]
    pub(in crate::host::qmatmul) fn unpack<const F: u32>(
        &mut self,
        w_rows: [&[u8]; W],
        n_blocks: usize,
    ) {
        const { assert!(W >= 1 && W <= 4, "the scales share one u64") };
        let w_bytes = block_bytes(F);
        let n_blocks = w_rows
            .iter()
            .fold(n_blocks, |n, row| n.min(row.len() / w_bytes));
        self.vecs.clear();
        self.vecs.reserve(n_blocks * Self::per_block(F));
        self.n_blocks = n_blocks;
        let sign_trick = offset_shift(F).is_none();
        for b in 0..n_blocks {
            let mut signs = [_mm256_setzero_si256(); W];
            let mut scale_bits = 0u64;
            for (i, row) in w_rows.iter().enumerate() {
                let block = &row[b * w_bytes..(b + 1) * w_bytes];
                // SAFETY: AVX2 (this function's features); `block` is one
                // whole block of `F`.
                let (unsigned, sign) = unsafe { unpack::<F>(&CONSTS, block.as_ptr()) };
                self.vecs.push(unsigned);
                signs[i] = sign;
                scale_bits |= u64::from(u16::from_le_bytes([block[0], block[1]])) << (16 * i);
            }
            if sign_trick {
                self.vecs.extend_from_slice(&signs);
            }
            let scales = _mm_cvtph_ps(_mm_cvtsi64_si128(scale_bits as i64));
            self.vecs
                .push(_mm256_castps_si256(_mm256_castps128_ps256(scales)));
        }
    }
}

/// [`q32_tile_avx2`] on weights unpacked once ([`UnpackedWeights`]): the
/// same integers and float operations per block, bit for bit, without the
/// decode, which a prompt tile would otherwise repeat for every group of
/// activation rows. The weight vectors go in registers and the packed
/// activations serve as memory operands, so a block of `W x R` products is
/// about half the instructions of the decoding kernel.
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C. `W * R <= 8`; `weights` and
/// `acts` were unpacked and packed for `F`.
#[target_feature(enable = "avx2,fma,f16c")]
pub(in crate::host::qmatmul) fn q32_tile_unpacked_avx2<
    const F: u32,
    const W: usize,
    const R: usize,
>(
    weights: &UnpackedWeights<W>,
    acts: &PackedActs<R>,
) -> [[f32; R]; W] {
    const { assert!(W <= 4 && W * R <= 8, "the products share one vector") };
    let n_blocks = weights.n_blocks.min(acts.n_blocks);
    let w_per_block = UnpackedWeights::<W>::per_block(F);
    let a_per_block = PackedActs::<R>::per_block(F);
    let w_packed = weights.vecs.as_ptr();
    let a_packed = acts.vecs.as_ptr();
    let w_lane: [i32; 8] = std::array::from_fn(|k| (k / R).min(W - 1) as i32);
    // SAFETY: eight readable i32; unaligned load.
    let w_lane = unsafe { _mm256_loadu_si256(w_lane.as_ptr().cast()) };
    let mut acc = [[_mm256_setzero_ps(); R]; W];
    let mut d = Lanes([0.0; 8]);
    for b in 0..n_blocks {
        // SAFETY: block `b < n_blocks` of both packings holds its
        // `per_block` vectors, the scales last; the weight block's first
        // `W` vectors are the unsigned operands, the signed levels (sign
        // trick) the next `W`.
        unsafe {
            let (w_block, a_block) = (w_packed.add(b * w_per_block), a_packed.add(b * a_per_block));
            let wd = _mm256_castsi256_ps(w_block.add(w_per_block - 1).read());
            let unsigned: [__m256i; W] = std::array::from_fn(|i| w_block.add(i).read());
            let sign: [__m256i; W] = match offset_shift(F) {
                Some(_) => [_mm256_setzero_si256(); W],
                None => std::array::from_fn(|i| w_block.add(W + i).read()),
            };
            let c = opaque(&CONSTS);
            block_products::<F, W, R>(c, unsigned, sign, wd, w_lane, a_block, &mut d, &mut acc);
        }
    }
    std::array::from_fn(|i| std::array::from_fn(|r| hsum8(acc[i][r])))
}
