//! A whole contraction loop in one call: what the host back end emits for
//!
//! ```text
//! for kt in range(start, end, TK) {
//!   acc += dot(A[rows :+ TM, kt :+ TK], B[kt :+ TK, cols :+ TN])
//! }
//! ```
//!
//! Lowered step by step, every `kt` copies an A and a B tile out of the
//! tensors and sweeps the whole `TM x TN` accumulator through memory.
//! Here the loop is blocked over `k` instead ([`KC`] at a time): B's block
//! is packed once into zero-padded panels (and the packing kept for the
//! thread's next program on the same columns, `packed_b`), A is read in
//! place (or from a zero-padded copy of the strip where rows are masked,
//! the tensor cannot be read plainly, or, for the AVX2 kernel, its rows
//! are a multiple of 4 KiB apart), and each micro-tile of the accumulator
//! stays in registers for the whole block.
//!
//! The result is the same bits as the loop's: every element is one fused
//! multiply-add chain (or, on the portable kernel, multiply then add) over
//! the loop's `k` in increasing order, starting from the accumulator's old
//! value, and masked coordinates read as 0 in both. A `k` outside the
//! tensors masks both operands, so each such step is `acc + 0 * 0`, which
//! is `acc` except that `-0.0` becomes `+0.0`; repeating it changes
//! nothing more, so one `+ 0.0` over the accumulator stands for all the
//! steps before `k = 0` and one for all those past `K`.

use super::{MR, MR_512, Micro, NR, NR_512};
use crate::Result;
use crate::host::slice::Slice;
use crate::host::tile::{Tile, TileShape};
use crate::host::view::{RawView, Readable};

/// Depth of one `k` block: a 16-wide B panel of it is 16 KiB (half of a
/// Zen 2 or Skylake L1D) and 256 columns of B's block 256 KiB (L2).
pub(crate) const KC: usize = 256;

/// The loop `for kt in range(start, end, step) { acc += dot(A[a_slices],
/// B[b_slices]) }`, where `a_slices` and `b_slices` are the slices of the
/// first iteration (`kt = start`): A's are `[rows, start :+ step]`, B's
/// `[start :+ step, cols]`.
///
/// Returns `Ok(false)` without touching `acc` when the call does not have
/// that shape (ranks, a non-positive step, a `k` span that is not the
/// loop's, an accumulator of another shape, operands with different `K`
/// extents, an empty or oversized tile, or no iteration): the caller then
/// runs the loop step by step, which reports any error as it would have.
pub fn dot_acc_k_loop<VA: Readable<f32>, VB: Readable<f32>>(
    acc: &mut Tile<f32>,
    (a, a_slices): (&VA, &[Slice]),
    (b, b_slices): (&VB, &[Slice]),
    (start, end, step): (i64, i64, i64),
) -> Result<bool> {
    let (a_view, b_view) = (a.read_view(), b.read_view());
    let (a_raw, b_raw) = (a_view.raw(), b_view.raw());
    let Some(shape) = LoopShape::of(&a_raw, a_slices, &b_raw, b_slices, (start, end, step)) else {
        return Ok(false);
    };
    if acc.shape() != [shape.tm, shape.tn] {
        return Ok(false);
    }
    let values = acc.as_mut_slice();
    if shape.lead_pad {
        add_zero(values);
    }
    if shape.k_hi > shape.k_lo {
        run_blocked(values, &a_raw, &b_raw, &shape);
    }
    if shape.trail_pad {
        add_zero(values);
    }
    Ok(true)
}

/// `x + 0.0` for every element: what a multiply-add of two masked zeros
/// does to it (`-0.0` becomes `+0.0`, everything else stays).
fn add_zero(values: &mut [f32]) {
    for v in values {
        *v += 0.0;
    }
}

/// The loop resolved against the tensors.
struct LoopShape {
    /// First tensor row of A's tile (may be masked) and the tile's height.
    row0: i64,
    tm: usize,
    /// First tensor column of B's tile (may be masked) and the tile's width.
    col0: i64,
    tn: usize,
    /// The `k` range where both operands are in bounds, `k_lo <= k_hi`.
    k_lo: usize,
    k_hi: usize,
    /// The loop covers `k` before 0 / from `K` on.
    lead_pad: bool,
    trail_pad: bool,
}

impl LoopShape {
    fn of(
        a: &RawView<'_, f32>,
        a_slices: &[Slice],
        b: &RawView<'_, f32>,
        b_slices: &[Slice],
        (start, end, step): (i64, i64, i64),
    ) -> Option<LoopShape> {
        if a.shape.len() != 2 || b.shape.len() != 2 || step <= 0 || start >= end {
            return None;
        }
        let k_extent = a.shape[1];
        if b.shape[0] != k_extent {
            return None;
        }
        let tk = usize::try_from(step).ok()?;
        let (row0, tm) = span(a_slices.first()?, a.shape[0])?;
        let (col0, tn) = span(b_slices.get(1)?, b.shape[1])?;
        let k_span = |s: Option<&Slice>| matches!(s, Some(&Slice::Span { start: s, len }) if s == start && len == tk);
        if a_slices.len() != 2 || b_slices.len() != 2 {
            return None;
        }
        if !k_span(a_slices.get(1)) || !k_span(b_slices.first()) {
            return None;
        }
        // The loop's tiles must be ones the step-by-step path could load.
        TileShape::new(&[tm, tk]).ok()?;
        TileShape::new(&[tk, tn]).ok()?;
        if tm == 0 || tn == 0 {
            return None;
        }
        // `kt` takes `start + i * step` while below `end`; it never
        // overflows before the last of those, which is below `end`.
        let span_len = i128::from(end) - i128::from(start);
        let steps = (span_len + i128::from(step) - 1) / i128::from(step);
        let cover_end = i128::from(start) + steps * i128::from(step);
        let k_lo = i128::from(start).clamp(0, k_extent as i128);
        let k_hi = cover_end.clamp(k_lo, k_extent as i128);
        Some(LoopShape {
            row0,
            tm,
            col0,
            tn,
            k_lo: usize::try_from(k_lo).ok()?,
            k_hi: usize::try_from(k_hi).ok()?,
            lead_pad: start < 0,
            trail_pad: cover_end > k_extent as i128,
        })
    }
}

/// First coordinate and length of a span or whole-dim slice.
fn span(slice: &Slice, extent: usize) -> Option<(i64, usize)> {
    match *slice {
        Slice::Span { start, len } => Some((start, len)),
        Slice::Full => Some((0, extent)),
        Slice::Point(_) => None,
    }
}

/// Whether `index` (possibly negative) lies in `0..extent`.
fn in_bounds(index: i128, extent: usize) -> Option<usize> {
    usize::try_from(index).ok().filter(|&i| i < extent)
}

/// The real (unmasked-in-`k`) part of the loop with the widest kernel the
/// CPU runs, as `dot_acc` picks it.
fn run_blocked(c: &mut [f32], a: &RawView<'_, f32>, b: &RawView<'_, f32>, shape: &LoopShape) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") && shape.tn >= NR_512 {
            // SAFETY: the CPU supports the features the function is compiled for.
            unsafe { run_avx512(c, a, b, shape) };
            return;
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: as above.
            unsafe { run_avx2_fma(c, a, b, shape) };
            return;
        }
    }
    blocked::<MR, NR>(c, a, b, shape, super::micro::<false, MR, NR>);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn run_avx2_fma(c: &mut [f32], a: &RawView<'_, f32>, b: &RawView<'_, f32>, shape: &LoopShape) {
    blocked::<MR, NR>(c, a, b, shape, |c, ldc, a_rows, panel, stride, k| {
        // SAFETY: only reached from `run_blocked` after AVX2 and FMA detection.
        unsafe { super::x86::micro_6x16(c, ldc, a_rows, panel, stride, k) }
    });
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
fn run_avx512(c: &mut [f32], a: &RawView<'_, f32>, b: &RawView<'_, f32>, shape: &LoopShape) {
    blocked::<MR_512, NR_512>(c, a, b, shape, |c, ldc, a_rows, panel, stride, k| {
        // SAFETY: only reached from `run_blocked` after AVX-512F detection.
        unsafe { super::x86::micro_8x32(c, ldc, a_rows, panel, stride, k) }
    });
}

/// Reads `len` elements of row `row` of a rank-2 view from column `col`
/// into `out` (all in bounds).
fn copy_row(raw: &RawView<'_, f32>, (row, col): (usize, usize), out: &mut [f32]) {
    let first = raw.offset + row * raw.strides[0] + col * raw.strides[1];
    let len = out.len();
    // SAFETY: the caller passes in-bounds coordinates, and a plain slice
    // is only handed out for a view that may read plainly.
    if raw.strides[1] == 1
        && let Some(values) = unsafe { raw.plain_row(first, len) }
    {
        out.copy_from_slice(values);
        return;
    }
    for (j, v) in out.iter_mut().enumerate() {
        // SAFETY: in bounds (the caller).
        *v = unsafe { raw.load_at(first + j * raw.strides[1]) };
    }
}

/// The blocked loop: for every `KC` block of `k`, B's block packed into
/// `NR`-wide panels (masked columns zero), then every `MR`-row strip of the
/// accumulator against every panel. The packing of all of B's blocks is
/// kept for the thread's next program on the same columns when B has a
/// plain-read id (`packed_b`).
#[inline(always)]
fn blocked<const MR: usize, const NR: usize>(
    c: &mut [f32],
    a: &RawView<'_, f32>,
    b: &RawView<'_, f32>,
    shape: &LoopShape,
    micro: Micro<MR, NR>,
) {
    let panels = shape.tn.div_ceil(NR);
    let (k_lo, k_hi) = (shape.k_lo, shape.k_hi);
    let kc_max = KC.min(k_hi - k_lo);
    let cols = (shape.col0, shape.tn, b.shape[1]);
    let mut strip = AStrip::new(a, kc_max, NR != NR_512);
    let key = packed_b::Key::of(b, (shape.col0, shape.tn), (k_lo, k_hi), NR);
    let kept = key.and_then(|key| Some((key, packed_b::take(&key, panels * NR * (k_hi - k_lo))?)));
    if let Some((key, (mut whole, packed))) = kept {
        let (panel_rows, _) = whole.as_chunks_mut::<NR>();
        for k0 in (k_lo..k_hi).step_by(KC) {
            let kc = KC.min(k_hi - k0);
            // Block `k0` lies at `(k0 - k_lo) * panels` rows, `kc` per panel.
            let block = &mut panel_rows[(k0 - k_lo) * panels..][..panels * kc];
            if !packed {
                pack_b(b, (k0, kc), cols, block);
            }
            strips(c, (a, &mut strip), shape, micro, (k0, kc), block);
        }
        packed_b::put(key, whole);
    } else {
        // One block's panels at a time, packed again for every block.
        let mut block = crate::host::arena::filled(panels * kc_max, [0.0f32; NR]);
        for k0 in (k_lo..k_hi).step_by(KC) {
            let kc = KC.min(k_hi - k0);
            let block = &mut block[..panels * kc];
            pack_b(b, (k0, kc), cols, block);
            strips(c, (a, &mut strip), shape, micro, (k0, kc), block);
        }
        crate::host::arena::give(block);
    }
    crate::host::arena::give(strip.copy);
}

/// How the micro-kernels read A's rows.
struct AStrip {
    /// Rows of A that cannot be read in place, `kc_max` apart: masked ones
    /// stay zero, others are copied in per block.
    copy: Vec<f32>,
    kc_max: usize,
    in_place: bool,
}

impl AStrip {
    /// `copy_aliasing`: copy rows a multiple of 4 KiB apart. Such rows
    /// (K = 1024, 2048, ...) fall on the same L1 sets, all of a strip's at
    /// once; with the AVX2 kernel (6 rows, each row's cache line lasting
    /// 16 steps of 12 ymm FMAs) copying them was faster on Zen 2 (2048^3,
    /// BENCHMARKS.md session 11), while the AVX-512 kernel (a line lasts 16
    /// steps of 16 zmm FMAs) reads them in place faster on Zen 4 (+6-7% at
    /// 1024^3 and 2048^3, the copies gone).
    fn new(a: &RawView<'_, f32>, kc_max: usize, copy_aliasing: bool) -> AStrip {
        // In place needs plain reads and contiguous rows.
        let aliasing_rows = (a.strides[0] * size_of::<f32>()).is_multiple_of(4096);
        AStrip {
            copy: crate::host::arena::filled(MR_512.max(MR) * kc_max, 0.0f32),
            kc_max,
            in_place: a.plain && a.strides[1] == 1 && !(copy_aliasing && aliasing_rows),
        }
    }
}

/// One `k` block `k0 .. k0 + kc`: every `MR`-row strip of the accumulator
/// against every panel of B's packed block (panel `jp` at rows `jp * kc`).
#[inline(always)]
fn strips<const MR: usize, const NR: usize>(
    c: &mut [f32],
    (a, strip): (&RawView<'_, f32>, &mut AStrip),
    shape: &LoopShape,
    micro: Micro<MR, NR>,
    (k0, kc): (usize, usize),
    b_block: &[[f32; NR]],
) {
    let LoopShape { tm, tn, .. } = *shape;
    let m_extent = a.shape[0];
    let panels = tn.div_ceil(NR);
    let (kc_max, a_in_place) = (strip.kc_max, strip.in_place);
    let a_copy = &mut strip.copy;
    for i0 in (0..tm).step_by(MR) {
        let rows = MR.min(tm - i0);
        let tensor_row = |r: usize| in_bounds(i128::from(shape.row0) + (i0 + r) as i128, m_extent);
        // Rows copied for this strip (masked ones zeroed).
        for r in 0..rows {
            let dst = &mut a_copy[r * kc_max..][..kc];
            match tensor_row(r) {
                Some(row) if !a_in_place => copy_row(a, (row, k0), dst),
                Some(_) => {}
                None => dst.fill(0.0),
            }
        }
        // Tile rows past `tm` repeat the strip's last row; their
        // results are dropped.
        let a_rows: [&[f32]; MR] = std::array::from_fn(|r| {
            let r = r.min(rows - 1);
            match tensor_row(r) {
                // SAFETY: row `row` and columns `k0..k0 + kc` are in
                // bounds (`k_hi <= K`), the last stride is 1 and the
                // view reads plainly (`a_in_place`).
                Some(row) if a_in_place => unsafe {
                    a.plain_block(a.offset + row * a.strides[0] + k0, kc)
                },
                _ => &a_copy[r * kc_max..][..kc],
            }
        });
        for jp in 0..panels {
            let j0 = jp * NR;
            let cols = NR.min(tn - j0);
            let panel = &b_block[jp * kc..][..kc];
            if rows == MR && cols == NR {
                micro(&mut c[i0 * tn + j0..], tn, &a_rows, panel, 1, kc);
                continue;
            }
            let mut block = [[0.0f32; NR]; MR];
            for (r, block_row) in block.iter_mut().enumerate().take(rows) {
                block_row[..cols].copy_from_slice(&c[(i0 + r) * tn + j0..][..cols]);
            }
            micro(block.as_flattened_mut(), NR, &a_rows, panel, 1, kc);
            for (r, block_row) in block.iter().enumerate().take(rows) {
                c[(i0 + r) * tn + j0..][..cols].copy_from_slice(&block_row[..cols]);
            }
        }
    }
}

/// Packs `B[k0 .. k0 + kc, col0 .. col0 + tn]` into panels of `NR`
/// columns, panel `jp` at `packed[jp * kc_max ..]`, one `[f32; NR]` per
/// `k`; masked columns (and the padding of the last panel) are zero.
#[inline(always)]
fn pack_b<const NR: usize>(
    b: &RawView<'_, f32>,
    (k0, kc): (usize, usize),
    (col0, tn, n_extent): (i64, usize, usize),
    packed: &mut [[f32; NR]],
) {
    let panels = tn.div_ceil(NR);
    let kc_max = packed.len() / panels;
    // The tile's columns that are in bounds: `lo..hi` of `0..tn`.
    let col0 = i128::from(col0);
    let lo = (-col0).clamp(0, tn as i128) as usize;
    let hi = (n_extent as i128 - col0).clamp(lo as i128, tn as i128) as usize;
    if lo > 0 || hi < panels * NR {
        // Masked columns and the last panel's padding read as zero.
        for panel in packed.chunks_mut(kc_max) {
            panel[..kc].fill([0.0; NR]);
        }
    }
    if lo == hi {
        return;
    }
    // Tensor column of tile column `lo`.
    let first_col = (col0 + lo as i128) as usize;
    if b.plain && lo == 0 && hi == panels * NR && b.strides[1] == 1 {
        // Whole panels of a plain view: each row of B is cut into
        // `NR`-wide chunks with no per-chunk bounds work (that work was a
        // measured share of the time).
        for p in 0..kc {
            let first = b.offset + (k0 + p) * b.strides[0] + first_col;
            // SAFETY: row `k0 + p` and columns `first_col..first_col + tn`
            // are in bounds (`hi == tn`); `plain_row` gives a slice only
            // for a view that reads plainly, which `b.plain` says it does.
            let row = unsafe { b.plain_row(first, tn) }.unwrap_or_default();
            let (chunks, _) = row.as_chunks::<NR>();
            for (jp, chunk) in chunks.iter().enumerate() {
                packed[jp * kc_max + p] = *chunk;
            }
        }
        return;
    }
    // Row by row of B (contiguous reads), each row spread over the panels.
    for p in 0..kc {
        let mut j = lo;
        while j < hi {
            let jp = j / NR;
            let end = hi.min(jp * NR + NR);
            let out = &mut packed[jp * kc_max + p][j - jp * NR..end - jp * NR];
            copy_row(b, (k0 + p, first_col + (j - lo)), out);
            j = end;
        }
    }
}

mod packed_b;
#[cfg(test)]
mod tests;
