//! Kernel selection and the tile loop: weight rows `n_range` times
//! activation rows `m_range`, four activation rows per weight-row pass.

use std::ops::Range;
use std::sync::OnceLock;

use phobos_quant::GgmlType;

use super::{QActivations, float_weights, portable};

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
}

/// Computes `store(m, n, W[n] . x[m])` for every pair of the ranges.
/// `single_row` says the whole call has one activation row (IQ4_NL's order).
pub(super) fn run_tile(
    level: KernelLevel,
    w: &Weights<'_>,
    acts: &QActivations,
    n_range: Range<usize>,
    m_range: Range<usize>,
    single_row: bool,
    store: &mut impl FnMut(usize, usize, f32),
) {
    let float = acts.ty() == GgmlType::F32;
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
    #[cfg(target_arch = "x86_64")]
    if level.has_512() {
        if super::x86::has_q32_512(w.ty) {
            q32_512_tile(w, acts, n_range, m_range, store);
            return;
        }
        if super::x86::has_k_512(w.ty) {
            for_groups(m_range, |m0, group| match group {
                4 => k_512_group::<4>(w, acts, m0, n_range.clone(), store),
                3 => k_512_group::<3>(w, acts, m0, n_range.clone(), store),
                2 => k_512_group::<2>(w, acts, m0, n_range.clone(), store),
                _ => k_512_group::<1>(w, acts, m0, n_range.clone(), store),
            });
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
        k_avx2_tile(w, acts, n_range, m_range, store);
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
fn for_groups(m_range: Range<usize>, body: impl FnMut(usize, usize)) {
    for_groups_of(4, m_range, body);
}

/// Calls `body(m0, group)` for groups of up to `max` activation rows.
fn for_groups_of(max: usize, m_range: Range<usize>, mut body: impl FnMut(usize, usize)) {
    let mut m = m_range.start;
    while m < m_range.end {
        let group = (m_range.end - m).min(max);
        body(m, group);
        m += group;
    }
}

/// The AVX-512 tile for Q4_0/Q5_0/Q8_0/IQ4_NL: four weight rows (two
/// pairs) times up to eight activation rows per pass (16 accumulators).
#[cfg(target_arch = "x86_64")]
fn q32_512_tile(
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
/// weight rows per pass for a single activation row (one, prefetching, for
/// matrices streamed from memory), two weight rows times up to four
/// activation rows otherwise.
#[cfg(target_arch = "x86_64")]
fn q32_avx2_tile(
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
    let large = w.data.len() >= SINGLE_STREAM_MIN_BYTES;
    for_groups(m_range, |m0, group| {
        macro_rules! go {
            ($f:expr) => {
                match (group, large) {
                    (4, _) => q32_avx2_group::<{ $f as u32 }, 2, 4, false>(
                        w,
                        acts,
                        m0,
                        n_range.clone(),
                        store,
                    ),
                    (3, _) => q32_avx2_group::<{ $f as u32 }, 2, 3, false>(
                        w,
                        acts,
                        m0,
                        n_range.clone(),
                        store,
                    ),
                    (2, _) => q32_avx2_group::<{ $f as u32 }, 2, 2, false>(
                        w,
                        acts,
                        m0,
                        n_range.clone(),
                        store,
                    ),
                    (_, true) => q32_avx2_group::<{ $f as u32 }, 1, 1, true>(
                        w,
                        acts,
                        m0,
                        n_range.clone(),
                        store,
                    ),
                    _ => q32_avx2_group::<{ $f as u32 }, 4, 1, true>(
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

/// Weight bytes from which a decode pass takes one weight row at a time
/// (larger than this machine class's L3): on the Zen 2 of session 9 the
/// 262144x640 Q8_0 output projection at M = 1 ran 13-15 ms on one thread
/// that way against 17-18 ms four rows at a time, both prefetching.
const SINGLE_STREAM_MIN_BYTES: usize = 32 << 20;

/// How far ahead of the weights in use a decode pass prefetches. Decode
/// (one activation row) always prefetches: a model's weights are read once
/// per token, far more bytes than the caches hold, so every matrix comes
/// from memory. In `phobos bench` tg128 on Gemma 3 270M (Zen 2, session
/// 9), prefetching every decode matrix ran 1.1-1.2x faster than
/// prefetching only the output projection; cache-warm (a loop over one
/// small matrix, `phobos-kbench qmatmul --pool-mib 0`) it costs up to
/// ~1.3x, which a model never sees.
const PREFETCH_AHEAD_BYTES: usize = 16 << 10;

/// `W` weight rows per pass over `n_range` times activation rows
/// `m0..m0 + R`; the ragged end one weight row per pass.
#[cfg(target_arch = "x86_64")]
fn q32_avx2_group<const F: u32, const W: usize, const R: usize, const PREFETCH: bool>(
    w: &Weights<'_>,
    acts: &QActivations,
    m0: usize,
    n_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    use super::x86::{PackedActs, q32_tile_avx2};
    let a_rows = act_rows::<R>(acts, m0);
    // SAFETY (this and the tile calls): this path runs only at the AVX2
    // level, which the entry points accept only where the CPU has AVX2,
    // FMA and F16C; they checked the activation rows against the weight
    // rows' block count, and `QActivations` holds every block's scale and
    // lane sums. The packing is for `F`.
    thread_local! {
        static PACK_BUFFER: std::cell::Cell<Vec<std::arch::x86_64::__m256i>> =
            const { std::cell::Cell::new(Vec::new()) };
    }
    let buffer = PACK_BUFFER.take();
    let packed = unsafe { PackedActs::<R>::pack_into::<F>(buffer, a_rows, acts.row_block_count()) };
    let ahead = PREFETCH_AHEAD_BYTES;
    let mut n = n_range.start;
    while n + W <= n_range.end {
        let out = unsafe {
            q32_tile_avx2::<F, W, R, PREFETCH>(
                std::array::from_fn(|i| w.row(n + i)),
                &packed,
                ahead,
            )
        };
        store_tile(&out, m0, n, store);
        n += W;
    }
    while n < n_range.end {
        let out = unsafe { q32_tile_avx2::<F, 1, R, PREFETCH>([w.row(n)], &packed, ahead) };
        store_tile(&out, m0, n, store);
        n += 1;
    }
    PACK_BUFFER.set(packed.into_vecs());
}

/// Stores a tile's `[w][r]` results at weight rows `n..` and activation
/// rows `m0..`.
fn store_tile<const W: usize, const R: usize>(
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
fn act_rows<const R: usize>(acts: &QActivations, m0: usize) -> [super::x86::ActRow<'_>; R] {
    std::array::from_fn(|r| super::x86::ActRow {
        blocks: acts.row_blocks(m0 + r),
        scales: acts.row_scales(m0 + r),
        neg_sums: acts.row_neg_lane_sums(m0 + r),
    })
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
    use super::x86::{PackedActs, UnpackedWeights, q32_tile_unpacked_avx2};
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
fn amx_tile(
    w: &Weights<'_>,
    acts: &QActivations,
    n_range: Range<usize>,
    m_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    use super::x86::q32_tile_amx;
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
    use super::x86::q32_rows_512;
    let a_rows = act_rows::<R>(acts, m0);
    let mut n = n_range.start;
    while n < n_range.end {
        let left = n_range.end - n;
        // SAFETY: `run_tile` takes this path only at the AVX-512 level, which
        // the entry points accept only where the CPU supports it; they
        // checked the activation rows against the weight rows' block count.
        // A lone last row is paired with itself and its copy dropped.
        unsafe {
            if left >= 4 {
                let out = q32_rows_512::<F, 2, R>(
                    [[w.row(n), w.row(n + 1)], [w.row(n + 2), w.row(n + 3)]],
                    a_rows,
                );
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
                let [pair] = q32_rows_512::<F, 1, R>([[w.row(n), w.row(second)]], a_rows);
                for (half, values) in pair.iter().enumerate().take(second - n + 1) {
                    for (r, &value) in values.iter().enumerate() {
                        store(m0 + r, n + half, value);
                    }
                }
                n = second + 1;
            }
        }
    }
}

/// IQ4_NL times a single activation row (ggml's two-accumulator order),
/// four weight rows per call.
#[cfg(target_arch = "x86_64")]
fn iq4nl_single_group(
    w: &Weights<'_>,
    acts: &QActivations,
    m: usize,
    n_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    use super::x86::{ActRow, iq4nl_single_512};
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
fn iq4nl_single_group_avx2(
    w: &Weights<'_>,
    a_row: &[u8],
    m: usize,
    n_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    use super::x86::iq4nl_single_avx2;
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

#[cfg(target_arch = "x86_64")]
fn k_512_group<const R: usize>(
    w: &Weights<'_>,
    acts: &QActivations,
    m0: usize,
    n_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    use super::x86::k_rows_512;
    use GgmlType::*;
    let a_rows: [&[u8]; R] = std::array::from_fn(|r| acts.row_blocks(m0 + r));
    for n in n_range {
        // SAFETY: as in `q32_512_group`.
        let values = unsafe {
            match w.ty {
                Q4_K => k_rows_512::<{ Q4_K as u32 }, R>(w.row(n), a_rows),
                Q5_K => k_rows_512::<{ Q5_K as u32 }, R>(w.row(n), a_rows),
                _ => k_rows_512::<{ Q6_K as u32 }, R>(w.row(n), a_rows),
            }
        };
        for (r, value) in values.into_iter().enumerate() {
            store(m0 + r, n, value);
        }
    }
}

/// The AVX2 tile for the 256-element formats (`x86/kquants.rs`): one
/// weight row times up to four activation rows per pass; for a single
/// activation row (decode), two Q4_K weight rows per pass (Zen 2, M = 1:
/// 640x1024 30.1 -> 27.8 us) but one row of the others (Q6_K 640x2048:
/// 49.6 us with one row, 60.8 with two; its levels take more registers).
#[cfg(target_arch = "x86_64")]
fn k_avx2_tile(
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
                    4 => k_avx2_group::<{ $f as u32 }, 1, 4>(w, acts, m0, n_range.clone(), store),
                    3 => k_avx2_group::<{ $f as u32 }, 1, 3>(w, acts, m0, n_range.clone(), store),
                    2 => k_avx2_group::<{ $f as u32 }, 1, 2>(w, acts, m0, n_range.clone(), store),
                    _ if $f == Q4_K => {
                        k_avx2_group::<{ $f as u32 }, 2, 1>(w, acts, m0, n_range.clone(), store)
                    }
                    _ => k_avx2_group::<{ $f as u32 }, 1, 1>(w, acts, m0, n_range.clone(), store),
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
fn k_avx2_group<const F: u32, const W: usize, const R: usize>(
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
        super::x86::k_rows_avx2::<F, W, R>(
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
