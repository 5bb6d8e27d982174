//! The AVX-512 VNNI tile of the batch order (`portable::batch_row_dot`)
//! for Q4_K, Q5_K and Q6_K: 16 weight rows (one per i32 lane) times up to
//! eight activation rows.
//!
//! The batch order sums each block's products across all its lanes, so a
//! lane can be a weight row rather than a position in the block: a panel
//! of 16 weight rows is unpacked once into levels four bytes per row per
//! vector (`vpdpbusd`'s unsigned operand), and each activation row's four
//! bytes are broadcast from its Q8_K block as they are stored. Per
//! (activation row, 32 or 16 elements) that is eight or four `vpdpbusd`
//! into a fresh sum, one `vpmulld` by the 16 rows' sub-block scales and one
//! add: `vec_dot`'s lanes need the scales per four elements instead
//! (`k_512_tile.rs`: six multiply-class operations per 256 products where
//! this takes four and a quarter). Q6_K's offset of 32 and the Q4_K/Q5_K
//! mins are `vpdpwssd`s of per-row coefficients with the activation's
//! block sums. Integer sums are exact, so the float epilogue, ggml's, is
//! all that orders the result.

use std::arch::x86_64::*;
use std::ops::Range;

use phobos_quant::{GgmlType, QK_K};

use super::kquants::{Block, block_bytes};
use crate::host::qmatmul::activations::Q8_K_BYTES;
use crate::host::qmatmul::portable::{f16_at, k4_scale_min};

const Q6_K: u32 = GgmlType::Q6_K as u32;

/// Weight rows in a panel: one per i32 lane.
const PANEL_ROWS: usize = 16;
/// Activation rows per pass (registers: eight sums, eight block sums,
/// eight float accumulators).
const PASS_ROWS: usize = 8;

/// A packed block's vectors: 64 of levels (dword `r` of vector `q` = row
/// `r`'s levels `4q..4q + 4`), 16 of the 16-element groups' scales, 8 of
/// i16 coefficient pairs for the block sums (Q4_K/Q5_K: the mins; Q6_K:
/// `-32` times the scales), `d` and `dmin`.
const LEVELS: usize = 0;
const SCALES: usize = 64;
const COEFS: usize = 80;
const D: usize = 88;
const DMIN: usize = 89;
const BLOCK_VECTORS: usize = 90;

/// Whether format `ty` has this tile.
pub(in crate::host::qmatmul) const fn has_k_batch_512(ty: GgmlType) -> bool {
    matches!(ty, GgmlType::Q4_K | GgmlType::Q5_K | GgmlType::Q6_K)
}

/// Weight rows `n_range` (rows of `row_bytes`, format `F`) times the Q8_K
/// activation rows `a_rows` (output rows `m0..`): `store(m, n, value)`,
/// bit-identical to `portable::batch_row_dot`.
///
/// # Safety
/// The CPU must support AVX2, FMA, F16C and AVX-512 F/BW/VL/VNNI. `F` is
/// Q4_K, Q5_K or Q6_K; every activation row holds at least as many Q8_K
/// blocks (levels in -127..=127) as a weight row holds blocks.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
pub(in crate::host::qmatmul) fn k_batch_512<const F: u32>(
    w: &[u8],
    row_bytes: usize,
    n_range: Range<usize>,
    a_rows: &[&[u8]],
    m0: usize,
    store: &mut impl FnMut(usize, usize, f32),
) {
    thread_local! {
        static PANEL: std::cell::Cell<Vec<__m512i>> = const { std::cell::Cell::new(Vec::new()) };
    }
    let w_bytes = block_bytes(F);
    let n_blocks = a_rows
        .iter()
        .map(|a| a.len() / Q8_K_BYTES)
        .fold(row_bytes / w_bytes, usize::min);
    let n_end = n_range.end.min(w.len().checked_div(row_bytes).unwrap_or(0));
    if a_rows.is_empty() || n_range.start >= n_end {
        return;
    }
    let mut panel = PANEL.take();
    panel.clear();
    panel.resize(n_blocks * BLOCK_VECTORS, _mm512_setzero_si512());
    for n0 in (n_range.start..n_end).step_by(PANEL_ROWS) {
        let rows = (n_end - n0).min(PANEL_ROWS);
        let w_rows: Vec<&[u8]> = (n0..n0 + rows)
            .map(|n| &w[n * row_bytes..n * row_bytes + n_blocks * w_bytes])
            .collect();
        // SAFETY: this function's features; `panel` holds `n_blocks` blocks.
        unsafe { pack_panel::<F>(&w_rows, n_blocks, &mut panel) };
        for (g, group) in a_rows.chunks(PASS_ROWS).enumerate() {
            // A short last group repeats its last row; its results are dropped.
            let a_ptrs: [*const u8; PASS_ROWS] =
                std::array::from_fn(|r| group[r.min(group.len() - 1)].as_ptr());
            // SAFETY: `panel` holds `n_blocks` packed blocks, each activation
            // row at least `n_blocks` Q8_K blocks (the caller's contract).
            let sums = unsafe { pass::<F>(panel.as_ptr(), n_blocks, a_ptrs) };
            for (r, row_sums) in sums.iter().enumerate().take(group.len()) {
                let mut values = [0.0f32; PANEL_ROWS];
                // SAFETY: `values` is 64 writable bytes; the store is unaligned.
                unsafe { _mm512_storeu_ps(values.as_mut_ptr(), *row_sums) };
                for (i, &value) in values.iter().enumerate().take(rows) {
                    store(m0 + g * PASS_ROWS + r, n0 + i, value);
                }
            }
        }
    }
    PANEL.set(panel);
}

/// Unpacks `w_rows` (at most 16, `n_blocks` blocks each) into `panel`;
/// missing rows are zeros (zero levels, scales and block scales).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn pack_panel<const F: u32>(w_rows: &[&[u8]], n_blocks: usize, panel: &mut [__m512i]) {
    let w_bytes = block_bytes(F);
    for b in 0..n_blocks {
        let vectors = &mut panel[b * BLOCK_VECTORS..(b + 1) * BLOCK_VECTORS];
        // SAFETY: `__m512i` is 16 plain i32 lanes.
        let lanes: &mut [i32] = unsafe {
            std::slice::from_raw_parts_mut(vectors.as_mut_ptr().cast(), BLOCK_VECTORS * 16)
        };
        if w_rows.len() < PANEL_ROWS {
            lanes.fill(0);
        }
        for (r, row) in w_rows.iter().enumerate() {
            let w = &row[b * w_bytes..(b + 1) * w_bytes];
            let mut levels = [0u8; QK_K];
            // SAFETY: `w` is one whole block of `F`; AVX2 and F16C are enabled.
            unsafe {
                let block = Block::new::<F>(w);
                for c in 0..8 {
                    _mm256_storeu_si256(levels[32 * c..].as_mut_ptr().cast(), block.levels::<F>(c));
                }
            }
            for (q, four) in levels.chunks_exact(4).enumerate() {
                lanes[(LEVELS + q) * 16 + r] =
                    i32::from_le_bytes([four[0], four[1], four[2], four[3]]);
            }
            let (scales, coefs, d, dmin) = block_scales::<F>(w);
            for (g, &scale) in scales.iter().enumerate() {
                lanes[(SCALES + g) * 16 + r] = scale;
            }
            for (k, pair) in coefs.chunks_exact(2).enumerate() {
                let packed = (i32::from(pair[1]) << 16) | i32::from(pair[0] as u16);
                lanes[(COEFS + k) * 16 + r] = packed;
            }
            lanes[D * 16 + r] = d.to_bits() as i32;
            lanes[DMIN * 16 + r] = dmin.to_bits() as i32;
        }
    }
}

/// One block's 16-element-group scales, the block-sum coefficients (see
/// [`COEFS`]), `d` and `dmin`.
fn block_scales<const F: u32>(w: &[u8]) -> ([i32; 16], [i16; 16], f32, f32) {
    let mut scales = [0i32; 16];
    let mut coefs = [0i16; 16];
    if F == Q6_K {
        for g in 0..16 {
            let scale = i32::from(w[192 + g] as i8);
            scales[g] = scale;
            coefs[g] = (-32 * scale) as i16;
        }
        return (scales, coefs, f16_at(w, 208), 0.0);
    }
    for j in 0..8 {
        let (scale, min) = k4_scale_min(&w[4..16], j);
        scales[2 * j] = scale;
        scales[2 * j + 1] = scale;
        coefs[2 * j] = min as i16;
        coefs[2 * j + 1] = min as i16;
    }
    (scales, coefs, f16_at(w, 0), f16_at(w, 2))
}

/// A packed panel times eight activation rows over `n_blocks` blocks: per
/// row, the 16 weight rows' results.
///
/// # Safety
/// `k_batch_512`'s features; `panel` holds `n_blocks` packed blocks and
/// each `a_rows[r]` is readable for `n_blocks` Q8_K blocks.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn pass<const F: u32>(
    panel: *const __m512i,
    n_blocks: usize,
    a_rows: [*const u8; PASS_ROWS],
) -> [__m512; PASS_ROWS] {
    // Elements per scale: Q6_K's 16, the 32 of Q4_K/Q5_K.
    let group = if F == Q6_K { 16 } else { 32 };
    let mut acc = [_mm512_setzero_ps(); PASS_ROWS];
    // SAFETY: the contract bounds every pointer below: block `b <
    // n_blocks` of the panel and of each activation row.
    unsafe {
        let dword = |a: *const u8, offset: usize| -> __m512i {
            _mm512_set1_epi32(a.add(offset).cast::<i32>().read_unaligned())
        };
        for b in 0..n_blocks {
            let vectors = panel.add(b * BLOCK_VECTORS);
            let blocks: [*const u8; PASS_ROWS] =
                std::array::from_fn(|r| a_rows[r].add(b * Q8_K_BYTES));
            let mut s1 = [_mm512_setzero_si512(); PASS_ROWS];
            for g in 0..QK_K / group {
                let mut part = [_mm512_setzero_si512(); PASS_ROWS];
                for q in g * group / 4..(g + 1) * group / 4 {
                    let levels = *vectors.add(LEVELS + q);
                    for r in 0..PASS_ROWS {
                        part[r] = _mm512_dpbusd_epi32(part[r], levels, dword(blocks[r], 4 + 4 * q));
                    }
                }
                let scales = *vectors.add(SCALES + g * group / 16);
                for r in 0..PASS_ROWS {
                    s1[r] = _mm512_add_epi32(s1[r], _mm512_mullo_epi32(part[r], scales));
                }
            }
            // The block sums' pairs: Q6_K's offset into s1, the mins into s2.
            let mut s2 = [_mm512_setzero_si512(); PASS_ROWS];
            for k in 0..8 {
                let coefs = *vectors.add(COEFS + k);
                for r in 0..PASS_ROWS {
                    let pair = dword(blocks[r], 4 + QK_K + 4 * k);
                    if F == Q6_K {
                        s1[r] = _mm512_dpwssd_epi32(s1[r], coefs, pair);
                    } else {
                        s2[r] = _mm512_dpwssd_epi32(s2[r], coefs, pair);
                    }
                }
            }
            let d = _mm512_castsi512_ps(*vectors.add(D));
            let dmin = _mm512_castsi512_ps(*vectors.add(DMIN));
            for r in 0..PASS_ROWS {
                let mut term = _mm512_mul_ps(d, _mm512_cvtepi32_ps(s1[r]));
                if F != Q6_K {
                    term = _mm512_fnmadd_ps(dmin, _mm512_cvtepi32_ps(s2[r]), term);
                }
                let dx = _mm512_set1_ps(blocks[r].cast::<f32>().read_unaligned());
                acc[r] = _mm512_fmadd_ps(term, dx, acc[r]);
            }
        }
    }
    acc
}
