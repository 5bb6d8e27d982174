//! The 32-element formats' tiles (Q4_0, Q5_0, Q8_0, IQ4_NL): AVX-512,
//! AVX2 and AMX, and IQ4_NL's single-row order.

use std::ops::Range;

use phobos_quant::GgmlType;

use super::{PREFETCH_AHEAD_BYTES, Weights, act_rows, for_groups, for_groups_of, store_tile};
use crate::host::qmatmul::QActivations;

/// The AVX-512 tile for Q4_0/Q5_0/Q8_0/IQ4_NL: four weight rows (two
/// pairs) times up to eight activation rows per pass (16 accumulators).
#[cfg(target_arch = "x86_64")]
pub(super) fn q32_512_tile(
    w: &Weights<'_>,
    acts: &QActivations,
    n_range: Range<usize>,
    m_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    use GgmlType::*;
    for_groups_of(8, m_range, |m0, group| {
        macro_rules! go {
            ($f:expr) => {
                match group {
                    8 => q32_512_group::<{ $f as u32 }, 8>(w, acts, m0, n_range.clone(), store),
                    7 => q32_512_group::<{ $f as u32 }, 7>(w, acts, m0, n_range.clone(), store),
                    6 => q32_512_group::<{ $f as u32 }, 6>(w, acts, m0, n_range.clone(), store),
                    5 => q32_512_group::<{ $f as u32 }, 5>(w, acts, m0, n_range.clone(), store),
                    4 => q32_512_group::<{ $f as u32 }, 4>(w, acts, m0, n_range.clone(), store),
                    3 => q32_512_group::<{ $f as u32 }, 3>(w, acts, m0, n_range.clone(), store),
                    2 => q32_512_group::<{ $f as u32 }, 2>(w, acts, m0, n_range.clone(), store),
                    _ => q32_512_group::<{ $f as u32 }, 1>(w, acts, m0, n_range.clone(), store),
                }
            };
        }
        match w.ty {
            Q4_0 => go!(Q4_0),
            Q5_0 => go!(Q5_0),
            IQ4_NL => go!(IQ4_NL),
            _ => go!(Q8_0),
        }
    });
}

/// The AVX2 tile for Q4_0/Q5_0/Q8_0/IQ4_NL (`x86/q32_avx2.rs`): four
/// weight rows per pass for a single activation row (one for matrices
/// streamed from memory on the CPUs where one sequential stream left to the
/// hardware prefetcher is fastest: software prefetch on top cost Zen 4
/// 12.4 against 9.8-10.3 ms on 262144x640 Q8_0, one thread, BENCHMARKS.md
/// session 22; see
/// [`single_stream_decode`](crate::host::qmatmul::x86::single_stream_decode)),
/// two weight rows times up to four activation rows otherwise.
#[cfg(target_arch = "x86_64")]
pub(super) fn q32_avx2_tile(
    w: &Weights<'_>,
    acts: &QActivations,
    n_range: Range<usize>,
    m_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    use GgmlType::*;
    // Prompt batches: whole groups of four activation rows against weight
    // rows unpacked once per pass; the rest (decode, a ragged last group)
    // decodes the weights in the kernel.
    let whole_end = m_range.start + m_range.len() / 4 * 4;
    if whole_end > m_range.start {
        let whole = m_range.start..whole_end;
        match w.ty {
            Q4_0 => q32_avx2_prompt::<{ Q4_0 as u32 }>(w, acts, n_range.clone(), whole, store),
            Q5_0 => q32_avx2_prompt::<{ Q5_0 as u32 }>(w, acts, n_range.clone(), whole, store),
            IQ4_NL => q32_avx2_prompt::<{ IQ4_NL as u32 }>(w, acts, n_range.clone(), whole, store),
            _ => q32_avx2_prompt::<{ Q8_0 as u32 }>(w, acts, n_range.clone(), whole, store),
        }
    }
    let m_range = whole_end..m_range.end;
    let large = w.single_stream();
    for_groups(m_range, |m0, group| {
        macro_rules! go {
            ($f:expr) => {
                match (group, large) {
                    (4, _) => {
                        q32_avx2_group::<{ $f as u32 }, 2, 4>(w, acts, m0, n_range.clone(), store)
                    }
                    (3, _) => {
                        q32_avx2_group::<{ $f as u32 }, 2, 3>(w, acts, m0, n_range.clone(), store)
                    }
                    (2, _) => {
                        q32_avx2_group::<{ $f as u32 }, 2, 2>(w, acts, m0, n_range.clone(), store)
                    }
                    (_, true) => q32_avx2_decode::<{ $f as u32 }, 1, false>(
                        w,
                        acts,
                        m0,
                        n_range.clone(),
                        store,
                    ),
                    _ => q32_avx2_decode::<{ $f as u32 }, 4, true>(
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
            Q4_0 => go!(Q4_0),
            Q5_0 => go!(Q5_0),
            IQ4_NL => go!(IQ4_NL),
            _ => go!(Q8_0),
        }
    });
}

/// `W` weight rows per pass over `n_range` times activation rows
/// `m0..m0 + R`; the ragged end one weight row per pass.
#[cfg(target_arch = "x86_64")]
fn q32_avx2_group<const F: u32, const W: usize, const R: usize>(
    w: &Weights<'_>,
    acts: &QActivations,
    m0: usize,
    n_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    use crate::host::qmatmul::x86::q32_tile_avx2;
    with_packed::<F, R>(acts, m0, |packed| {
        // SAFETY (the tile calls): `with_packed`'s, and the packing is for `F`.
        passes::<W, R>(
            n_range,
            m0,
            store,
            |n| unsafe { q32_tile_avx2::<F, W, R>(std::array::from_fn(|i| w.row(n + i)), packed) },
            |n| unsafe { q32_tile_avx2::<F, 1, R>([w.row(n)], packed) },
        );
    });
}

/// Decode's passes: `W` weight rows over `n_range` times activation row
/// `m0` ([`q32_decode_avx2`](crate::host::qmatmul::x86::q32_decode_avx2)),
/// the ragged end one weight row per pass.
#[cfg(target_arch = "x86_64")]
fn q32_avx2_decode<const F: u32, const W: usize, const PREFETCH: bool>(
    w: &Weights<'_>,
    acts: &QActivations,
    m0: usize,
    n_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    use crate::host::qmatmul::x86::{PrefetchAhead, q32_decode_avx2};
    let ahead = PrefetchAhead::within(w.data, PREFETCH_AHEAD_BYTES);
    with_packed::<F, 1>(acts, m0, |packed| {
        // SAFETY (the pass calls): `with_packed`'s, and the packing is for `F`.
        passes::<W, 1>(
            n_range,
            m0,
            store,
            |n| {
                let rows = std::array::from_fn(|i| w.row(n + i));
                unsafe { q32_decode_avx2::<F, W, PREFETCH>(rows, packed, ahead) }.map(|v| [v])
            },
            |n| {
                unsafe { q32_decode_avx2::<F, 1, PREFETCH>([w.row(n)], packed, ahead) }.map(|v| [v])
            },
        );
    });
}

/// Runs `body` on activation rows `m0..m0 + R` packed for format `F`, in
/// this thread's reused buffer (decode packs hundreds of times per token).
///
/// Safety of the AVX2 calls `body` makes on the packing: this path runs
/// only at the AVX2 level, which the entry points accept only where the
/// CPU has AVX2, FMA and F16C; they checked the activation rows against
/// the weight rows' block count, and `QActivations` holds every block's
/// scale and lane sums.
#[cfg(target_arch = "x86_64")]
fn with_packed<const F: u32, const R: usize>(
    acts: &QActivations,
    m0: usize,
    body: impl FnOnce(&crate::host::qmatmul::x86::PackedActs<R>),
) {
    use crate::host::qmatmul::x86::PackedActs;
    thread_local! {
        static PACK_BUFFER: std::cell::Cell<Vec<std::arch::x86_64::__m256i>> =
            const { std::cell::Cell::new(Vec::new()) };
    }
    let buffer = PACK_BUFFER.take();
    // SAFETY: as in the doc above (AVX2 is present on this path).
    let packed = unsafe {
        PackedActs::<R>::pack_into::<F>(buffer, act_rows::<R>(acts, m0), acts.row_block_count())
    };
    body(&packed);
    PACK_BUFFER.set(packed.into_vecs());
}

/// Weight rows `n_range` in passes of `W` (`pass(n)` for rows `n..n + W`),
/// the ragged end one row at a time (`single(n)`), each result stored at
/// activation rows `m0..m0 + R`.
#[cfg(target_arch = "x86_64")]
fn passes<const W: usize, const R: usize>(
    n_range: Range<usize>,
    m0: usize,
    store: &mut impl FnMut(usize, usize, f32),
    mut pass: impl FnMut(usize) -> [[f32; R]; W],
    mut single: impl FnMut(usize) -> [[f32; R]; 1],
) {
    let mut n = n_range.start;
    while n + W <= n_range.end {
        store_tile(&pass(n), m0, n, store);
        n += W;
    }
    while n < n_range.end {
        store_tile(&single(n), m0, n, store);
        n += 1;
    }
}

/// Weight rows `n_range` times activation rows `m_range` (whole groups of
/// four) for prompts: every group packed once, then two weight rows at a
/// time unpacked once and run against each group, so a tile decodes each
/// weight row once instead of once per group.
#[cfg(target_arch = "x86_64")]
fn q32_avx2_prompt<const F: u32>(
    w: &Weights<'_>,
    acts: &QActivations,
    n_range: Range<usize>,
    m_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    use crate::host::qmatmul::x86::{PackedActs, UnpackedWeights, q32_tile_unpacked_avx2};
    let n_blocks = acts.row_block_count();
    // SAFETY (the packing, the unpacking and the tile calls): this path
    // runs only at the AVX2 level, which the entry points accept only where
    // the CPU has AVX2, FMA and F16C; they checked the activation rows
    // against the weight rows' block count, and `QActivations` holds every
    // block's scale and lane sums. Both sides are prepared for `F`.
    let groups: Vec<(usize, PackedActs<4>)> = m_range
        .step_by(4)
        .map(|m0| {
            (m0, unsafe {
                PackedActs::<4>::pack::<F>(act_rows::<4>(acts, m0), n_blocks)
            })
        })
        .collect();
    let mut pair = UnpackedWeights::<2>::new();
    let mut n = n_range.start;
    while n + 2 <= n_range.end {
        unsafe { pair.unpack::<F>([w.row(n), w.row(n + 1)], n_blocks) };
        for (m0, group) in &groups {
            let out = unsafe { q32_tile_unpacked_avx2::<F, 2, 4>(&pair, group) };
            store_tile(&out, *m0, n, store);
        }
        n += 2;
    }
    if n < n_range.end {
        let mut single = UnpackedWeights::<1>::new();
        unsafe { single.unpack::<F>([w.row(n)], n_blocks) };
        for (m0, group) in &groups {
            let out = unsafe { q32_tile_unpacked_avx2::<F, 1, 4>(&single, group) };
            store_tile(&out, *m0, n, store);
        }
    }
}

/// The AMX tile for Q4_0/Q5_0/Q8_0/IQ4_NL (`x86/amx.rs`).
#[cfg(target_arch = "x86_64")]
pub(super) fn amx_tile(
    w: &Weights<'_>,
    acts: &QActivations,
    n_range: Range<usize>,
    m_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    use crate::host::qmatmul::x86::q32_tile_amx;
    use GgmlType::*;
    // A ragged last group costs a whole group's tile work: a short one
    // (under half a group) runs faster on the AVX-512 kernel.
    let tail = n_range.len() % 16;
    let amx_end = if tail < 8 {
        n_range.end - tail
    } else {
        n_range.end
    };
    if amx_end < n_range.end {
        q32_512_tile(w, acts, amx_end..n_range.end, m_range.clone(), store);
    }
    let n_range = n_range.start..amx_end;
    let (data, row_bytes) = (w.data, w.row_bytes);
    // SAFETY: `run_tile` takes this path only at the AMX level, which the
    // entry points accept only where `level_supported` (AVX-512 and a
    // granted AMX); they checked every weight row against the activation
    // rows' block count and the ranges against both operands.
    unsafe {
        match w.ty {
            Q4_0 => q32_tile_amx::<{ Q4_0 as u32 }>(data, row_bytes, n_range, acts, m_range, store),
            Q5_0 => q32_tile_amx::<{ Q5_0 as u32 }>(data, row_bytes, n_range, acts, m_range, store),
            IQ4_NL => {
                q32_tile_amx::<{ IQ4_NL as u32 }>(data, row_bytes, n_range, acts, m_range, store)
            }
            _ => q32_tile_amx::<{ Q8_0 as u32 }>(data, row_bytes, n_range, acts, m_range, store),
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn q32_512_group<const F: u32, const R: usize>(
    w: &Weights<'_>,
    acts: &QActivations,
    m0: usize,
    n_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    use crate::host::qmatmul::x86::{pack_prompt_group, q32_rows_512, q32_rows_512_packed};
    thread_local! {
        static PACKED: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
    }
    let a_rows = act_rows::<R>(acts, m0);
    // Prompt groups: packed once per tile (seeds shifted, one pointer per
    // block), then run against every weight row of the tile.
    let mut packed = PACKED.take();
    if R > 1 {
        pack_prompt_group::<F, R>(&a_rows, &mut packed);
    }
    let mut n = n_range.start;
    while n < n_range.end {
        let left = n_range.end - n;
        // SAFETY: `run_tile` takes this path only at the AVX-512 level, which
        // the entry points accept only where the CPU supports it; they
        // checked the activation rows against the weight rows' block count,
        // and the packing is for `F` and `R`.
        // A lone last row is paired with itself and its copy dropped.
        unsafe {
            if left >= 4 {
                let quad = [[w.row(n), w.row(n + 1)], [w.row(n + 2), w.row(n + 3)]];
                let out = if R > 1 {
                    q32_rows_512_packed::<F, 2, R>(quad, &packed)
                } else {
                    q32_rows_512::<F, 2, R>(quad, a_rows)
                };
                for (i, pair) in out.iter().enumerate() {
                    for (half, values) in pair.iter().enumerate() {
                        for (r, &value) in values.iter().enumerate() {
                            store(m0 + r, n + 2 * i + half, value);
                        }
                    }
                }
                n += 4;
            } else {
                let second = if left >= 2 { n + 1 } else { n };
                let rows = [[w.row(n), w.row(second)]];
                let [pair] = if R > 1 {
                    q32_rows_512_packed::<F, 1, R>(rows, &packed)
                } else {
                    q32_rows_512::<F, 1, R>(rows, a_rows)
                };
                for (half, values) in pair.iter().enumerate().take(second - n + 1) {
                    for (r, &value) in values.iter().enumerate() {
                        store(m0 + r, n + half, value);
                    }
                }
                n = second + 1;
            }
        }
    }
    PACKED.set(packed);
}

/// IQ4_NL times a single activation row (ggml's two-accumulator order),
/// four weight rows per call.
#[cfg(target_arch = "x86_64")]
pub(super) fn iq4nl_single_group(
    w: &Weights<'_>,
    acts: &QActivations,
    m: usize,
    n_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    use crate::host::qmatmul::x86::{ActRow, iq4nl_single_512};
    let act = ActRow {
        blocks: acts.row_blocks(m),
        scales: acts.row_scales(m),
        neg_sums: acts.row_neg_lane_sums(m),
    };
    let mut n = n_range.start;
    while n < n_range.end {
        let left = n_range.end - n;
        // SAFETY: as in `q32_512_group` (this path needs the AVX-512 VNNI
        // level, which the entry points accept only where the CPU has it).
        unsafe {
            if left >= 4 {
                let out = iq4nl_single_512::<2>(
                    [[w.row(n), w.row(n + 1)], [w.row(n + 2), w.row(n + 3)]],
                    act,
                );
                for (i, pair) in out.iter().enumerate() {
                    store(m, n + 2 * i, pair[0]);
                    store(m, n + 2 * i + 1, pair[1]);
                }
                n += 4;
            } else {
                let second = if left >= 2 { n + 1 } else { n };
                let [pair] = iq4nl_single_512::<1>([[w.row(n), w.row(second)]], act);
                for (half, &value) in pair.iter().enumerate().take(second - n + 1) {
                    store(m, n + half, value);
                }
                n = second + 1;
            }
        }
    }
}

/// IQ4_NL times a single activation row on AVX2, two weight rows per call.
#[cfg(target_arch = "x86_64")]
pub(super) fn iq4nl_single_group_avx2(
    w: &Weights<'_>,
    a_row: &[u8],
    m: usize,
    n_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    use crate::host::qmatmul::x86::iq4nl_single_avx2;
    let mut n = n_range.start;
    while n < n_range.end {
        // SAFETY: this path runs only at the AVX2 level, which the entry
        // points accept only where the CPU has AVX2, FMA and F16C; they
        // checked the activation row against the weight rows' blocks.
        unsafe {
            if n + 1 < n_range.end {
                let [first, second] = iq4nl_single_avx2([w.row(n), w.row(n + 1)], a_row);
                store(m, n, first);
                store(m, n + 1, second);
                n += 2;
            } else {
                let [value] = iq4nl_single_avx2([w.row(n)], a_row);
                store(m, n, value);
                n += 1;
            }
        }
    }
}
