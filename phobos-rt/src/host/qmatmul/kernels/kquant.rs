//! The 256-element formats' tiles: AVX-512 for Q4_K, Q5_K, Q6_K and
//! AVX2 for every K-quant and IQ4_XS.

use std::ops::Range;

use phobos_quant::GgmlType;

use super::{PREFETCH_AHEAD_BYTES, Weights, for_groups, for_groups_of};
use crate::host::qmatmul::QActivations;

/// Most blocks per row for which Q6_K packs 16 activation rows per group;
/// wider rows take 8. A 16-row group packs ~5.6 KiB per block, so past
/// four blocks it overflows Zen 4's 32 KiB L1D: at 640x2048 (8 blocks,
/// M = 64, one thread, min of ~250 calls, alternating builds) 8-row groups
/// ran 2.79-2.83 ns per (block, row) against 3.03-3.07. Q4_K/Q5_K keep 16
/// rows there (3.06-3.12 against 3.20-3.41 with 8): their per-block min
/// terms cost as much per group whatever its size, so halving the group
/// doubles that share.
const Q6_K_WIDE_GROUP_MAX_BLOCKS: usize = 4;

/// The AVX-512 tile for Q4_K/Q5_K/Q6_K: groups of up to
/// [`K_TILE_ROWS`](crate::host::qmatmul::x86::K_TILE_ROWS) activation rows
/// packed once (`x86/k_512_tile.rs`), then every weight row of `n_range`
/// against the group; a lone row (decode) runs `x86/k_512.rs`.
#[cfg(target_arch = "x86_64")]
pub(super) fn k_512_tile(
    w: &Weights<'_>,
    acts: &QActivations,
    n_range: Range<usize>,
    m_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    use crate::host::qmatmul::x86::{K_TILE_ROWS, KPackedActs};
    use GgmlType::*;
    if m_range.len() == 1 {
        k_512_group::<1, false>(w, acts, m_range.start, n_range, store);
        return;
    }
    thread_local! {
        static PACK_BUFFER: std::cell::Cell<Vec<std::arch::x86_64::__m512i>> =
            const { std::cell::Cell::new(Vec::new()) };
    }
    let n_blocks = acts.row_block_count();
    let group_rows = if w.ty == Q6_K && n_blocks > Q6_K_WIDE_GROUP_MAX_BLOCKS {
        K_TILE_ROWS / 2
    } else {
        K_TILE_ROWS
    };
    for_groups_of(group_rows, m_range, |m0, group| {
        let rows: Vec<&[u8]> = (m0..m0 + group).map(|m| acts.row_blocks(m)).collect();
        // SAFETY: `run_tile` takes this path only at the AVX-512 level,
        // which the entry points accept only where the CPU supports it.
        let packed = unsafe { KPackedActs::pack(PACK_BUFFER.take(), &rows, n_blocks) };
        macro_rules! go {
            ($f:expr) => {
                match packed.pairs() {
                    8 => k_tile_group::<{ $f as u32 }, 8>(
                        w,
                        &packed,
                        m0,
                        group,
                        n_range.clone(),
                        store,
                    ),
                    7 => k_tile_group::<{ $f as u32 }, 7>(
                        w,
                        &packed,
                        m0,
                        group,
                        n_range.clone(),
                        store,
                    ),
                    6 => k_tile_group::<{ $f as u32 }, 6>(
                        w,
                        &packed,
                        m0,
                        group,
                        n_range.clone(),
                        store,
                    ),
                    5 => k_tile_group::<{ $f as u32 }, 5>(
                        w,
                        &packed,
                        m0,
                        group,
                        n_range.clone(),
                        store,
                    ),
                    4 => k_tile_group::<{ $f as u32 }, 4>(
                        w,
                        &packed,
                        m0,
                        group,
                        n_range.clone(),
                        store,
                    ),
                    3 => k_tile_group::<{ $f as u32 }, 3>(
                        w,
                        &packed,
                        m0,
                        group,
                        n_range.clone(),
                        store,
                    ),
                    2 => k_tile_group::<{ $f as u32 }, 2>(
                        w,
                        &packed,
                        m0,
                        group,
                        n_range.clone(),
                        store,
                    ),
                    _ => k_tile_group::<{ $f as u32 }, 1>(
                        w,
                        &packed,
                        m0,
                        group,
                        n_range.clone(),
                        store,
                    ),
                }
            };
        }
        match w.ty {
            Q4_K => go!(Q4_K),
            Q5_K => go!(Q5_K),
            _ => go!(Q6_K),
        }
        PACK_BUFFER.set(packed.into_vec());
    });
}

/// Every weight row of `n_range` times the `rows` activation rows from
/// `m0` packed in `packed` (`P` pairs).
#[cfg(target_arch = "x86_64")]
fn k_tile_group<const F: u32, const P: usize>(
    w: &Weights<'_>,
    packed: &crate::host::qmatmul::x86::KPackedActs,
    m0: usize,
    rows: usize,
    n_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    use crate::host::qmatmul::x86::k_tile_512;
    // SAFETY: as in `k_512_group`; `packed` holds `P` pairs of the
    // activation rows' blocks, as many as every weight row has.
    unsafe {
        k_tile_512::<F, P>(w.data, w.row_bytes, n_range, packed, |n, values| {
            for (r, &value) in values.iter().take(rows).enumerate() {
                store(m0 + r, n, value);
            }
        });
    }
}

/// Weight rows of `n_range` times the `R` activation rows from `m0`
/// (`x86/k_512.rs`); a lone activation row (decode) takes two weight rows
/// per pass, prefetched (Zen 4, one thread, best of 3 alternated runs:
/// Q4_K 640x1024 23.3 -> 21.9 us, 640x2048 42.0 -> 40.1; Q6_K 640x2048
/// unchanged at 37 us). Q4_K decode now runs the AVX2 kernel (`run_tile`).
#[cfg(target_arch = "x86_64")]
pub(super) fn k_512_group<const R: usize, const BATCH: bool>(
    w: &Weights<'_>,
    acts: &QActivations,
    m0: usize,
    n_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    let a_rows: [&[u8]; R] = std::array::from_fn(|r| acts.row_blocks(m0 + r));
    let mut n = n_range.start;
    if R == 1 {
        while n + 2 <= n_range.end {
            let values = k_512_rows::<2, R, BATCH>(w, [w.row(n), w.row(n + 1)], a_rows);
            for (i, row) in values.iter().enumerate() {
                for (r, &value) in row.iter().enumerate() {
                    store(m0 + r, n + i, value);
                }
            }
            n += 2;
        }
    }
    for n in n..n_range.end {
        let [values] = k_512_rows::<1, R, BATCH>(w, [w.row(n)], a_rows);
        for (r, value) in values.into_iter().enumerate() {
            store(m0 + r, n, value);
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn k_512_rows<const W: usize, const R: usize, const BATCH: bool>(
    w: &Weights<'_>,
    w_rows: [&[u8]; W],
    a_rows: [&[u8]; R],
) -> [[f32; R]; W] {
    use crate::host::qmatmul::x86::{PrefetchAhead, k_rows_512};
    use GgmlType::*;
    // Used by decode passes (`R == 1`) only.
    let prefetch = PrefetchAhead::within(w.data, PREFETCH_AHEAD_BYTES);
    // SAFETY: as in `q32_512_group`.
    unsafe {
        match w.ty {
            Q4_K => k_rows_512::<{ Q4_K as u32 }, W, R, BATCH>(w_rows, a_rows, prefetch),
            Q5_K => k_rows_512::<{ Q5_K as u32 }, W, R, BATCH>(w_rows, a_rows, prefetch),
            _ => k_rows_512::<{ Q6_K as u32 }, W, R, BATCH>(w_rows, a_rows, prefetch),
        }
    }
}

/// The AVX2 tile for the 256-element formats (`x86/kquants.rs`): one
/// weight row times up to four activation rows per pass; for a single
/// activation row (decode), two Q4_K weight rows per pass (Zen 2, M = 1:
/// 640x1024 30.1 -> 27.8 us) but one row of the others (Q6_K 640x2048:
/// 49.6 us with one row, 60.8 with two; its levels take more registers).
/// `BATCH`: the batch order (`portable::batch_row_dot`).
#[cfg(target_arch = "x86_64")]
pub(super) fn k_avx2_tile<const BATCH: bool>(
    w: &Weights<'_>,
    acts: &QActivations,
    n_range: Range<usize>,
    m_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    use GgmlType::*;
    for_groups(m_range, |m0, group| {
        macro_rules! go {
            ($f:expr) => {
                match group {
                    4 => k_avx2_group::<{ $f as u32 }, 1, 4, BATCH>(
                        w,
                        acts,
                        m0,
                        n_range.clone(),
                        store,
                    ),
                    3 => k_avx2_group::<{ $f as u32 }, 1, 3, BATCH>(
                        w,
                        acts,
                        m0,
                        n_range.clone(),
                        store,
                    ),
                    2 => k_avx2_group::<{ $f as u32 }, 1, 2, BATCH>(
                        w,
                        acts,
                        m0,
                        n_range.clone(),
                        store,
                    ),
                    _ if $f == Q4_K => k_avx2_group::<{ $f as u32 }, 2, 1, BATCH>(
                        w,
                        acts,
                        m0,
                        n_range.clone(),
                        store,
                    ),
                    _ => k_avx2_group::<{ $f as u32 }, 1, 1, BATCH>(
                        w,
                        acts,
                        m0,
                        n_range.clone(),
                        store,
                    ),
                }
            };
        }
        match w.ty {
            Q2_K => go!(Q2_K),
            Q3_K => go!(Q3_K),
            Q4_K => go!(Q4_K),
            Q5_K => go!(Q5_K),
            Q6_K => go!(Q6_K),
            _ => go!(IQ4_XS),
        }
    });
}

#[cfg(target_arch = "x86_64")]
fn k_avx2_group<const F: u32, const W: usize, const R: usize, const BATCH: bool>(
    w: &Weights<'_>,
    acts: &QActivations,
    m0: usize,
    n_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    let a_rows: [&[u8]; R] = std::array::from_fn(|r| acts.row_blocks(m0 + r));
    // SAFETY: this path runs only at a SIMD level, which the entry points
    // accept only where the CPU has AVX2, FMA and F16C; activation levels
    // are in -127..=127 (`QActivations`).
    // Decode reads each matrix from memory (`PREFETCH_AHEAD_BYTES`).
    let prefetch = (R == 1).then_some(PREFETCH_AHEAD_BYTES);
    unsafe {
        crate::host::qmatmul::x86::k_rows_avx2::<F, W, R, BATCH>(
            w.data,
            w.row_bytes,
            n_range,
            a_rows,
            m0,
            prefetch,
            store,
        );
    }
}
