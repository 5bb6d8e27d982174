//! The batch order's tiles (the 256-element formats): ggml's
//! `ggml-cpu/tiled` numerics, one exact integer sum per (weight row,
//! activation row, block) and one float term.

use std::ops::Range;

use super::{KernelLevel, Weights};
use crate::host::qmatmul::{QActivations, portable};

/// Fewest activation rows for the AVX-512 panel tile: it unpacks 16
/// weight rows per panel, which a few rows (decode) do not repay; those
/// run the AVX2 tile, which reads the weights as stored and prefetches
/// them for a lone row.
const PANEL_MIN_ROWS: usize = 8;

/// Weight rows `n_range` times activation rows `m_range` in the batch
/// order: the AVX-512 VNNI tile where the format has one and the tile has
/// [`PANEL_MIN_ROWS`], the AVX2 tile (the lane kernels' integer sums,
/// summed across lanes) at the SIMD levels otherwise, the portable
/// statement at the portable level.
pub(super) fn batch_tile(
    level: KernelLevel,
    w: &Weights<'_>,
    acts: &QActivations,
    n_range: Range<usize>,
    m_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    #[cfg(target_arch = "x86_64")]
    if level.has_512()
        && m_range.len() >= PANEL_MIN_ROWS
        && crate::host::qmatmul::x86::has_k_batch_512(w.ty)
    {
        use crate::host::qmatmul::x86::k_batch_512;
        use phobos_quant::GgmlType::*;
        let a_rows: Vec<&[u8]> = m_range.clone().map(|m| acts.row_blocks(m)).collect();
        let (data, row_bytes, m0) = (w.data, w.row_bytes, m_range.start);
        // SAFETY: the AVX-512 levels run only where the CPU supports them
        // (the entry points check); the entry points checked the
        // activation rows against the weight rows' blocks, and activation
        // levels are in -127..=127 (`QActivations`).
        unsafe {
            match w.ty {
                Q4_K => {
                    k_batch_512::<{ Q4_K as u32 }>(data, row_bytes, n_range, &a_rows, m0, store)
                }
                Q5_K => {
                    k_batch_512::<{ Q5_K as u32 }>(data, row_bytes, n_range, &a_rows, m0, store)
                }
                _ => k_batch_512::<{ Q6_K as u32 }>(data, row_bytes, n_range, &a_rows, m0, store),
            }
        }
        return;
    }
    // Q4_K, Q5_K and Q6_K decode: four weight rows per pass with only the block
    // totals (`x86/k_decode_512.rs`; Zen 4, 640x2048, M = 1: BENCHMARKS.md,
    // session 22).
    #[cfg(target_arch = "x86_64")]
    if level.has_512()
        && m_range.len() == 1
        && matches!(
            w.ty,
            phobos_quant::GgmlType::Q4_K
                | phobos_quant::GgmlType::Q5_K
                | phobos_quant::GgmlType::Q6_K
        )
    {
        use crate::host::qmatmul::x86::{
            DECODE_ROWS_PER_PASS, PrefetchAhead, k_min_decode_512, q6k_decode_512,
        };
        use phobos_quant::GgmlType::{Q4_K, Q5_K};
        let m = m_range.start;
        let a_row = acts.row_blocks(m);
        let prefetch = PrefetchAhead::within(w.data, super::PREFETCH_AHEAD_BYTES);
        let mut n = n_range.start;
        while n < n_range.end {
            // A ragged end repeats its last row; the copies are dropped.
            let rows: [usize; DECODE_ROWS_PER_PASS] =
                std::array::from_fn(|i| (n + i).min(n_range.end - 1));
            let rows = rows.map(|row| w.row(row));
            // SAFETY: the AVX-512 levels run only where the CPU supports
            // them (the entry points check); activation levels are i8.
            let out = unsafe {
                match w.ty {
                    Q4_K => k_min_decode_512::<{ Q4_K as u32 }>(rows, a_row, prefetch),
                    Q5_K => k_min_decode_512::<{ Q5_K as u32 }>(rows, a_row, prefetch),
                    _ => q6k_decode_512(rows, a_row, prefetch),
                }
            };
            for (i, &value) in out.iter().enumerate().take(n_range.end - n) {
                store(m, n + i, value);
            }
            n += DECODE_ROWS_PER_PASS;
        }
        return;
    }
    // Other few-row cases of Q5_K/Q6_K: the AVX-512 row kernel with the batch
    // epilogue (Zen 4, 640x2048 Q6_K, M = 1: the AVX2 tile ran 0.81x ggml).
    // Q4_K with two to seven rows stays on AVX2.
    #[cfg(target_arch = "x86_64")]
    if level.has_512()
        && matches!(
            w.ty,
            phobos_quant::GgmlType::Q5_K | phobos_quant::GgmlType::Q6_K
        )
    {
        super::for_groups(m_range, |m0, group| match group {
            4 => super::kquant::k_512_group::<4, true>(w, acts, m0, n_range.clone(), store),
            3 => super::kquant::k_512_group::<3, true>(w, acts, m0, n_range.clone(), store),
            2 => super::kquant::k_512_group::<2, true>(w, acts, m0, n_range.clone(), store),
            _ => super::kquant::k_512_group::<1, true>(w, acts, m0, n_range.clone(), store),
        });
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if level != KernelLevel::Portable {
        super::kquant::k_avx2_tile::<true>(w, acts, n_range, m_range, store);
        return;
    }
    let _ = level;
    for m in m_range {
        for n in n_range.clone() {
            store(
                m,
                n,
                portable::batch_row_dot(w.ty, w.row(n), acts.row_blocks(m)),
            );
        }
    }
}
