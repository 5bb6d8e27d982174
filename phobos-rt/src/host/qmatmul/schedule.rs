//! Entry points and the parallel split (the one place that decides it):
//! tiles of output rows (weight rows, N) times activation rows (M), run on
//! the host device's persistent pool (`crate::pool`).

use std::ops::Range;

use super::activations::quantize_activations_threaded;
use super::kernels::{KernelLevel, RowOrder, Weights, kernel_level, level_supported, run_tile};
use super::shares::Shares;
use super::{QActivations, QMatmulError, QMatrixRef, quantize_activations, vec_dot_type};

/// Activation rows per tile: 64 quantized rows of a 2048-wide matrix stay
/// in L2 while the tile's weight rows stream past them.
const M_TILE: usize = 64;
/// Weight bytes per tile for prompt batches, so a tile's weights stay in L2
/// while its activation rows pass over them.
const TILE_WEIGHT_BYTES: usize = 256 * 1024;

/// `out[m*rows + n] = sum_k x[m*cols + k] * W[n, k]` for `m < m_rows`, with
/// ggml's numerics (module docs), on the calling thread.
pub fn matmul(
    w: &QMatrixRef<'_>,
    x: &[f32],
    m_rows: usize,
    out: &mut [f32],
) -> Result<(), QMatmulError> {
    let acts = quantize_activations(w.ty, x, m_rows, w.cols)?;
    matmul_quantized(w, &acts, out)
}

/// [`matmul`] on the host pool (`crate::pool`), activations quantized on it too.
pub fn matmul_threaded(
    w: &QMatrixRef<'_>,
    x: &[f32],
    m_rows: usize,
    out: &mut [f32],
) -> Result<(), QMatmulError> {
    let acts = quantize_activations_threaded(w.ty, x, m_rows, w.cols)?;
    matmul_quantized_threaded(w, &acts, out)
}

/// [`matmul`] with activations quantized once by [`quantize_activations`]
/// (reusable across weights of the same partner type and width).
pub fn matmul_quantized(
    w: &QMatrixRef<'_>,
    acts: &QActivations,
    out: &mut [f32],
) -> Result<(), QMatmulError> {
    run(w, acts, out, false, kernel_level())
}

/// [`matmul_quantized`] on the host pool (`crate::pool`).
pub fn matmul_quantized_threaded(
    w: &QMatrixRef<'_>,
    acts: &QActivations,
    out: &mut [f32],
) -> Result<(), QMatmulError> {
    run(w, acts, out, true, kernel_level())
}

/// [`matmul_quantized`] at an explicit kernel level on the calling thread
/// (benchmarks compare levels; all give the same bits). A level this CPU
/// lacks runs the portable kernels.
pub fn matmul_quantized_at(
    level: KernelLevel,
    w: &QMatrixRef<'_>,
    acts: &QActivations,
    out: &mut [f32],
) -> Result<(), QMatmulError> {
    run(w, acts, out, false, level)
}

/// The entry point at an explicit kernel level (tests compare levels).
pub(super) fn run(
    w: &QMatrixRef<'_>,
    acts: &QActivations,
    out: &mut [f32],
    threaded: bool,
    level: KernelLevel,
) -> Result<(), QMatmulError> {
    let row_bytes = check(w, acts, out)?;
    let level = if level_supported(level) {
        level
    } else {
        KernelLevel::Portable
    };
    let weights = Weights {
        ty: w.ty,
        data: w.data,
        row_bytes,
    };
    let (rows, m_rows) = (w.rows, acts.m_rows());
    let order = RowOrder::of(w.ty, m_rows);
    let decode = m_rows <= DECODE_MAX_ROWS;
    let tiles_for = |threads: usize| {
        if decode {
            // One thread runs a decode matrix as one tile (one prefetch
            // stream); threads share it out through `Shares` below.
            vec![(0..rows, 0..m_rows)]
        } else if order == RowOrder::Batch {
            batch_split(rows, m_rows, threads)
        } else {
            split(rows, m_rows, row_bytes, threads)
        }
    };
    if !threaded {
        // The same cache-sized tiles, one after another: as one tile, a
        // prompt batch streamed the whole weight once per activation group
        // (262144x640 Q8_0 at M = 512 ran 0.56x ggml on one thread).
        let mut store = |m: usize, n: usize, v: f32| out[m * rows + n] = v;
        for (n_range, m_range) in tiles_for(1) {
            run_tile(level, &weights, acts, n_range, m_range, order, &mut store);
        }
        return Ok(());
    }
    let pool = crate::pool::global();
    let out_ptr = OutPtr(out.as_mut_ptr());
    let run_rows = |n_range: Range<usize>, m_range: Range<usize>| {
        let out_ptr = &out_ptr;
        let mut store = |m: usize, n: usize, v: f32| {
            // SAFETY: `check` sized `out` to m_rows * rows, `m < m_rows` and
            // `n < rows`; the tiles (or the shares' claims, each row once)
            // partition the (m, n) pairs, so no two threads write the same
            // element and nobody reads `out` until the launch ends.
            unsafe { *out_ptr.0.add(m * rows + n) = v };
        };
        run_tile(level, &weights, acts, n_range, m_range, order, &mut store);
    };
    let outcome = if decode {
        let shares = Shares::new(rows, pool.threads());
        let task = |own: usize| -> crate::Result<()> {
            shares.work(own, |n_range| run_rows(n_range, 0..m_rows));
            Ok(())
        };
        pool.run(shares.len(), &task)
    } else {
        let tiles = tiles_for(pool.threads());
        let task = |index: usize| -> crate::Result<()> {
            let (n_range, m_range) = tiles[index].clone();
            run_rows(n_range, m_range);
            Ok(())
        };
        pool.run(tiles.len(), &task)
    };
    outcome.map_err(|err| QMatmulError::Parallel(err.to_string()))
}

struct OutPtr(*mut f32);
// SAFETY: tiles write disjoint elements (see `run`).
unsafe impl Sync for OutPtr {}

/// The parallel split: `(weight rows, activation rows)` tiles, several per
/// thread so uneven thread speed evens out: prompt batches split M into
/// 64-row tiles first (decode takes `Shares` instead).
fn split(
    rows: usize,
    m_rows: usize,
    row_bytes: usize,
    threads: usize,
) -> Vec<(Range<usize>, Range<usize>)> {
    let threads = threads.max(1);
    // The M tiles already share the work out: split N only as far as
    // balance needs (four tiles per thread), so each tile's packed
    // activation groups (`x86/q32_avx2.rs`) serve as many weight rows as
    // the cache allows. Every N tile of an M tile packs the same rows
    // again: at M = 512 on two threads, 256x640 Q8_0/Q5_0 and 1024x640
    // Q5_0 as one N tile ran 2% faster than as two (eight per thread).
    let n_tiles_wanted = (4 * threads).div_ceil(m_rows.div_ceil(M_TILE));
    let by_balance = rows.div_ceil(n_tiles_wanted).max(16);
    let n_tile = by_balance.min((TILE_WEIGHT_BYTES / row_bytes.max(1)).max(16));
    // Whole groups of 16 weight rows (the AMX kernel's A tile, four of the
    // AVX-512 kernel's passes): only a matrix's last tile is ragged.
    let n_tile = n_tile.next_multiple_of(16);
    let mut tiles = Vec::new();
    for m0 in (0..m_rows).step_by(M_TILE) {
        for n0 in (0..rows).step_by(n_tile) {
            tiles.push((n0..(n0 + n_tile).min(rows), m0..(m0 + M_TILE).min(m_rows)));
        }
    }
    tiles
}

/// Most activation rows run as decode (weight rows shared out only).
const DECODE_MAX_ROWS: usize = 4;

/// Activation rows per tile in the batch order: its tiles pack each
/// 16-row weight panel once per tile and read the activations as stored,
/// so tall tiles pack less (Zen 4, 640x1024 Q4_K, M = 512, two threads:
/// BENCHMARKS.md, session 21).
const BATCH_M_TILE: usize = 256;

/// The batch order's split: up to [`BATCH_M_TILE`] activation rows by
/// whole 16-row weight panels, at least four tiles per thread where the
/// panels allow.
fn batch_split(rows: usize, m_rows: usize, threads: usize) -> Vec<(Range<usize>, Range<usize>)> {
    let m_tiles = m_rows.div_ceil(BATCH_M_TILE).max(1);
    let m_tile = m_rows.div_ceil(m_tiles).max(1);
    let n_tiles_wanted = (4 * threads.max(1)).div_ceil(m_tiles);
    let n_tile = rows.div_ceil(n_tiles_wanted).next_multiple_of(16).max(16);
    let mut tiles = Vec::new();
    for m0 in (0..m_rows).step_by(m_tile) {
        for n0 in (0..rows).step_by(n_tile) {
            tiles.push((n0..(n0 + n_tile).min(rows), m0..(m0 + m_tile).min(m_rows)));
        }
    }
    tiles
}

/// Checks shapes and types; returns the weight's row bytes.
fn check(w: &QMatrixRef<'_>, acts: &QActivations, out: &mut [f32]) -> Result<usize, QMatmulError> {
    let expected_ty = vec_dot_type(w.ty).ok_or(QMatmulError::UnsupportedWeight { ty: w.ty })?;
    let row_bytes = w.row_bytes()?;
    if acts.ty() != expected_ty || acts.cols() != w.cols {
        return Err(QMatmulError::ActivationMismatch {
            weight_ty: w.ty,
            expected_ty,
            expected_cols: w.cols,
            found_ty: acts.ty(),
            found_cols: acts.cols(),
        });
    }
    let expected = acts.m_rows().checked_mul(w.rows);
    if expected != Some(out.len()) {
        return Err(QMatmulError::OutputLen {
            m_rows: acts.m_rows(),
            rows: w.rows,
            expected: expected.unwrap_or(usize::MAX),
            found: out.len(),
        });
    }
    Ok(row_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every (weight row, activation row) pair in exactly one tile; tiles
    /// start on 16-row boundaries.
    fn check_partition(rows: usize, m_rows: usize, tiles: &[(Range<usize>, Range<usize>)]) {
        let mut seen = vec![0u8; rows * m_rows];
        for (n_range, m_range) in tiles {
            assert!(!n_range.is_empty() && !m_range.is_empty(), "{tiles:?}");
            assert_eq!(n_range.start % 16, 0, "{tiles:?}");
            for m in m_range.clone() {
                for n in n_range.clone() {
                    seen[m * rows + n] += 1;
                }
            }
        }
        assert!(seen.iter().all(|&c| c == 1), "{rows}x{m_rows}: {tiles:?}");
    }

    #[test]
    fn split_partitions_every_shape() {
        for rows in [1, 15, 16, 17, 100, 256, 640, 1024, 2048, 5000] {
            for m_rows in [5, 64, 65, 512] {
                for row_bytes in [18, 440, 1152] {
                    for threads in [1, 2, 3, 8] {
                        check_partition(rows, m_rows, &split(rows, m_rows, row_bytes, threads));
                        check_partition(rows, m_rows, &batch_split(rows, m_rows, threads));
                    }
                }
            }
        }
    }
}
