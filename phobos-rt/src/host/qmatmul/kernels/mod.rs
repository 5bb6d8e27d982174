//! Kernel selection and the tile loop: weight rows `n_range` times
//! activation rows `m_range`. The tiles themselves live by format family:
//! `q32.rs` (32-element formats) and `kquant.rs` (256-element ones).

use std::ops::Range;
use std::sync::OnceLock;

use phobos_quant::GgmlType;

use super::{QActivations, float_weights, portable};

mod kbatch;
mod kquant;
mod q32;

#[cfg(target_arch = "x86_64")]
use kquant::{k_512_tile, k_avx2_tile};
#[cfg(target_arch = "x86_64")]
use q32::{amx_tile, iq4nl_single_group, iq4nl_single_group_avx2, q32_512_tile, q32_avx2_tile};

/// Which micro-kernels run. All levels give bit-identical results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum KernelLevel {
    /// Plain Rust (the statement of the numerics).
    Portable,
    /// AVX2 + FMA + F16C.
    Avx2,
    /// AVX-512 (F, BW, VL, VNNI): 512-bit kernels for Q4_0, Q5_0, Q8_0,
    /// IQ4_NL, Q4_K, Q5_K and Q6_K, `vpdpbusd` on 256 bits for Q4_1/Q5_1,
    /// AVX2 for the other formats.
    Avx512Vnni,
    /// [`KernelLevel::Avx512Vnni`] plus AMX-INT8 tiles for Q4_0, Q5_0, Q8_0
    /// and IQ4_NL when a tile has at least [`AMX_MIN_ROWS`] activation
    /// rows (fewer: the AVX-512 kernel).
    Amx,
}

impl KernelLevel {
    /// Whether this level runs the AVX-512 kernels.
    fn has_512(self) -> bool {
        matches!(self, KernelLevel::Avx512Vnni | KernelLevel::Amx)
    }

    /// The `PHOBOS_QMATMUL_LEVEL` spelling.
    pub(super) fn parse(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "portable" => Some(KernelLevel::Portable),
            "avx2" => Some(KernelLevel::Avx2),
            "avx512" | "avx512vnni" => Some(KernelLevel::Avx512Vnni),
            "amx" => Some(KernelLevel::Amx),
            _ => None,
        }
    }
}

/// Fewest activation rows in a tile for the AMX kernel: below it (decode of
/// one to a few sequences) the AVX-512 kernel is far faster (a tile pass
/// costs the same for 1 or 16 rows).
pub const AMX_MIN_ROWS: usize = 4;

/// The level to run, detected once: the best this CPU supports up to
/// [`KernelLevel::Avx512Vnni`], or the level `PHOBOS_QMATMUL_LEVEL` names
/// (`portable`, `avx2`, `avx512`, `amx`), capped at what the CPU supports.
/// AMX is opt-in: on the Sapphire Rapids machine it was measured on, the
/// lane-exact AMX kernel is slower than the AVX-512 one (BENCHMARKS.md).
pub fn kernel_level() -> KernelLevel {
    static LEVEL: OnceLock<KernelLevel> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        let best = best_level();
        let Ok(name) = std::env::var("PHOBOS_QMATMUL_LEVEL") else {
            return best;
        };
        match KernelLevel::parse(&name) {
            Some(KernelLevel::Amx) if level_supported(KernelLevel::Amx) => KernelLevel::Amx,
            Some(requested) => {
                if requested > best {
                    tracing::warn!(
                        ?requested, running = ?best,
                        "PHOBOS_QMATMUL_LEVEL asks for a level this CPU (or kernel) lacks"
                    );
                }
                requested.min(best)
            }
            None => {
                tracing::warn!(
                    value = %name, running = ?best,
                    "PHOBOS_QMATMUL_LEVEL is not one of portable, avx2, avx512, amx; ignored"
                );
                best
            }
        }
    })
}

/// The best level this CPU supports, AMX aside (opt-in).
fn best_level() -> KernelLevel {
    #[cfg(target_arch = "x86_64")]
    if super::x86::has_vnni() {
        return KernelLevel::Avx512Vnni;
    }
    #[cfg(target_arch = "x86_64")]
    if super::x86::has_avx2() {
        return KernelLevel::Avx2;
    }
    KernelLevel::Portable
}

/// Whether `level` can run on this CPU.
pub(super) fn level_supported(level: KernelLevel) -> bool {
    match level {
        KernelLevel::Portable => true,
        #[cfg(target_arch = "x86_64")]
        KernelLevel::Avx2 => super::x86::has_avx2(),
        #[cfg(target_arch = "x86_64")]
        KernelLevel::Avx512Vnni => super::x86::has_vnni(),
        #[cfg(target_arch = "x86_64")]
        KernelLevel::Amx => super::x86::has_vnni() && super::x86::has_amx(),
        #[cfg(not(target_arch = "x86_64"))]
        KernelLevel::Avx2 | KernelLevel::Avx512Vnni | KernelLevel::Amx => false,
    }
}

/// One weight matrix as the tile loop sees it.
pub(super) struct Weights<'a> {
    pub ty: GgmlType,
    pub data: &'a [u8],
    pub row_bytes: usize,
}

impl Weights<'_> {
    fn row(&self, n: usize) -> &[u8] {
        &self.data[n * self.row_bytes..(n + 1) * self.row_bytes]
    }

    /// Whether a decode pass over these weights takes one unprefetched
    /// row at a time: a matrix of [`SINGLE_STREAM_MIN_BYTES`] or more, on
    /// a CPU where that measured fastest (`x86::single_stream_decode`).
    #[cfg(target_arch = "x86_64")]
    fn single_stream(&self) -> bool {
        self.data.len() >= SINGLE_STREAM_MIN_BYTES && super::x86::single_stream_decode()
    }
}

/// Which of ggml's orders a whole matmul call follows (it depends on the
/// call's activation row count, as in ggml; module docs of `qmatmul`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RowOrder {
    /// One activation row: `vec_dot` (IQ4_NL's two accumulators).
    Single,
    /// `vec_dot`'s lanes (IQ4_NL: llamafile's one accumulator).
    Lanes,
    /// A 256-element format: ggml's tiled batch order
    /// (`portable::batch_row_dot`), whatever the row count.
    Batch,
}

impl RowOrder {
    /// The order of a call of format `ty` with `m_rows` activation rows.
    pub(super) fn of(ty: GgmlType, m_rows: usize) -> Self {
        if portable::batch_order(ty) {
            RowOrder::Batch
        } else if m_rows == 1 {
            RowOrder::Single
        } else {
            RowOrder::Lanes
        }
    }
}

/// Computes `store(m, n, W[n] . x[m])` for every pair of the ranges, in
/// the call's `order`.
pub(super) fn run_tile(
    level: KernelLevel,
    w: &Weights<'_>,
    acts: &QActivations,
    n_range: Range<usize>,
    m_range: Range<usize>,
    order: RowOrder,
    store: &mut impl FnMut(usize, usize, f32),
) {
    let float = acts.ty() == GgmlType::F32;
    if order == RowOrder::Batch && !float {
        kbatch::batch_tile(level, w, acts, n_range, m_range, store);
        return;
    }
    let single_row = order == RowOrder::Single;
    let iq4nl_single = w.ty == GgmlType::IQ4_NL && single_row;
    #[cfg(target_arch = "x86_64")]
    if iq4nl_single && !float && level >= KernelLevel::Avx512Vnni {
        for m in m_range {
            iq4nl_single_group(w, acts, m, n_range.clone(), store);
        }
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if iq4nl_single && !float && level == KernelLevel::Avx2 {
        for m in m_range {
            iq4nl_single_group_avx2(w, acts.row_blocks(m), m, n_range.clone(), store);
        }
        return;
    }
    let simd = level != KernelLevel::Portable && !iq4nl_single;
    // The row loop below runs one weight row against up to four activation
    // rows; one row at a time for decode.
    if float || !simd {
        for m in m_range {
            for n in n_range.clone() {
                let value = if float {
                    float_row(level, w.ty, w.row(n), acts.row_floats(m))
                } else {
                    portable::row_dot(w.ty, w.row(n), acts.row_blocks(m), single_row)
                };
                store(m, n, value);
            }
        }
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if level == KernelLevel::Amx && m_range.len() >= AMX_MIN_ROWS && super::x86::has_q32_amx(w.ty) {
        amx_tile(w, acts, n_range, m_range, store);
        return;
    }
    // On Zen 2 and later, a 32-element-format matrix streamed from memory
    // decodes on the AVX2 kernel at the AVX-512 level too (same bits), one
    // row at a time (Zen 4, 262144x640 Q8_0, M = 1, two threads: 7.4 ms
    // against 11.9 for the AVX-512 kernel's row pairs; BENCHMARKS.md,
    // sessions 17 and 22). Intel runs the prefetched row pairs (twice as
    // fast there; `single_stream_decode`). The K-quants never get here:
    // they take the batch order above.
    #[cfg(target_arch = "x86_64")]
    let avx2_decode = m_range.len() == 1 && super::x86::has_q32_512(w.ty) && w.single_stream();
    #[cfg(target_arch = "x86_64")]
    if level.has_512() && !avx2_decode {
        if super::x86::has_q32_512(w.ty) {
            q32_512_tile(w, acts, n_range, m_range, store);
            return;
        }
        if super::x86::has_k_512(w.ty) {
            k_512_tile(w, acts, n_range, m_range, store);
            return;
        }
    }
    #[cfg(target_arch = "x86_64")]
    if matches!(
        w.ty,
        GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q8_0 | GgmlType::IQ4_NL
    ) {
        q32_avx2_tile(w, acts, n_range, m_range, store);
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if super::x86::has_k_avx2(w.ty) {
        k_avx2_tile::<false>(w, acts, n_range, m_range, store);
        return;
    }
    for_groups(m_range, |m0, group| match group {
        4 => simd_group::<4>(level, w, acts, m0, n_range.clone(), store),
        3 => simd_group::<3>(level, w, acts, m0, n_range.clone(), store),
        2 => simd_group::<2>(level, w, acts, m0, n_range.clone(), store),
        _ => simd_group::<1>(level, w, acts, m0, n_range.clone(), store),
    });
}

/// Calls `body(m0, group)` for groups of up to four activation rows.
pub(super) fn for_groups(m_range: Range<usize>, body: impl FnMut(usize, usize)) {
    for_groups_of(4, m_range, body);
}

/// Calls `body(m0, group)` for groups of up to `max` activation rows.
pub(super) fn for_groups_of(max: usize, m_range: Range<usize>, mut body: impl FnMut(usize, usize)) {
    let mut m = m_range.start;
    while m < m_range.end {
        let group = (m_range.end - m).min(max);
        body(m, group);
        m += group;
    }
}

/// Weight bytes from which a decode pass takes one weight row at a time
/// where `x86::single_stream_decode` says so (larger than this machine
/// class's L3): on the Zen 2 of session 9 the
/// 262144x640 Q8_0 output projection at M = 1 ran 13-15 ms on one thread
/// that way against 17-18 ms four rows at a time, both prefetching.
pub(super) const SINGLE_STREAM_MIN_BYTES: usize = 32 << 20;

/// How far ahead of the weights in use a decode pass prefetches. Decode
/// (one activation row) prefetches, except the single-stream pass over a
/// matrix of [`SINGLE_STREAM_MIN_BYTES`] and more (`q32_avx2_tile`, not
/// on Zen 1): a model's weights are read once per token, far more bytes
/// than the caches hold, so every matrix comes from memory. In `phobos
/// bench` tg128 on Gemma 3 270M (Zen 2, session 9), prefetching every
/// decode matrix ran 1.1-1.2x faster than prefetching only the output
/// projection; cache-warm (a loop over one small matrix, `phobos-kbench
/// qmatmul --pool-mib 0`) it costs up to ~1.3x, which a model never sees.
pub(super) const PREFETCH_AHEAD_BYTES: usize = 16 << 10;

/// Stores a tile's `[w][r]` results at weight rows `n..` and activation
/// rows `m0..`.
pub(super) fn store_tile<const W: usize, const R: usize>(
    out: &[[f32; R]; W],
    m0: usize,
    n: usize,
    store: &mut impl FnMut(usize, usize, f32),
) {
    for (i, values) in out.iter().enumerate() {
        for (r, &value) in values.iter().enumerate() {
            store(m0 + r, n + i, value);
        }
    }
}

/// Activation rows `m0..m0 + R` as the AVX2 and AVX-512 tiles read them.
#[cfg(target_arch = "x86_64")]
pub(super) fn act_rows<const R: usize>(
    acts: &QActivations,
    m0: usize,
) -> [super::x86::ActRow<'_>; R] {
    std::array::from_fn(|r| super::x86::ActRow {
        blocks: acts.row_blocks(m0 + r),
        scales: acts.row_scales(m0 + r),
        neg_sums: acts.row_neg_lane_sums(m0 + r),
    })
}

fn float_row(level: KernelLevel, ty: GgmlType, w_row: &[u8], x: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if level != KernelLevel::Portable {
        // SAFETY: the caller picked a SIMD level only where `level_supported`; the
        // row holds `x.len()` weights (checked by the entry points).
        return unsafe { super::x86::row_dot_float_avx2(ty, w_row, x) };
    }
    let _ = level;
    float_weights::row_dot_float(ty, w_row, x)
}

fn simd_group<const R: usize>(
    level: KernelLevel,
    w: &Weights<'_>,
    acts: &QActivations,
    m0: usize,
    n_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    let a_rows: [&[u8]; R] = std::array::from_fn(|r| acts.row_blocks(m0 + r));
    let pairs = w.ty.info().block_len == 32;
    let mut n = n_range.start;
    while n < n_range.end {
        if pairs && n + 1 < n_range.end {
            let values = simd_rows::<2, R>(level, w.ty, [w.row(n), w.row(n + 1)], a_rows);
            for (i, row) in values.into_iter().enumerate() {
                for (r, value) in row.into_iter().enumerate() {
                    store(m0 + r, n + i, value);
                }
            }
            n += 2;
        } else {
            let [values] = simd_rows::<1, R>(level, w.ty, [w.row(n)], a_rows);
            for (r, value) in values.into_iter().enumerate() {
                store(m0 + r, n, value);
            }
            n += 1;
        }
    }
}

/// `W` weight rows times `R` activation rows on the AVX2 kernels of the
/// 32-element formats (the 256-element ones run `k_avx2_tile`).
#[cfg(target_arch = "x86_64")]
fn simd_rows<const W: usize, const R: usize>(
    level: KernelLevel,
    ty: GgmlType,
    w_rows: [&[u8]; W],
    a_rows: [&[u8]; R],
) -> [[f32; R]; W] {
    // SAFETY: `run_tile` takes this path only at a SIMD level, which the
    // entry points accept only where the CPU supports it; the entry points
    // checked the activation rows against the weight rows' block count,
    // and activation levels are in -127..=127 (`QActivations`).
    unsafe {
        use super::x86::{q32_rows_avx2, q32_rows_vnni};
        use GgmlType::*;
        macro_rules! q {
            ($f:expr) => {
                if level.has_512() {
                    q32_rows_vnni::<{ $f as u32 }, W, R>(w_rows, a_rows)
                } else {
                    q32_rows_avx2::<{ $f as u32 }, W, R>(w_rows, a_rows)
                }
            };
        }
        match ty {
            Q4_0 => q!(Q4_0),
            Q4_1 => q!(Q4_1),
            Q5_0 => q!(Q5_0),
            Q5_1 => q!(Q5_1),
            Q8_0 => q!(Q8_0),
            IQ4_NL => q!(IQ4_NL),
            _ => std::array::from_fn(|i| {
                std::array::from_fn(|r| portable::row_dot(ty, w_rows[i], a_rows[r], false))
            }),
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn simd_rows<const W: usize, const R: usize>(
    level: KernelLevel,
    ty: GgmlType,
    w_rows: [&[u8]; W],
    a_rows: [&[u8]; R],
) -> [[f32; R]; W] {
    std::array::from_fn(|i| {
        std::array::from_fn(|r| portable::row_dot(ty, w_rows[i], a_rows[r], false))
    })
}
