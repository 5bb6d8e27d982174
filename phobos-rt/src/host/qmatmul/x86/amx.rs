//! AMX-INT8 kernel for Q4_0, Q5_0, Q8_0 and IQ4_NL weights (partner Q8_0),
//! bit-exact with `portable.rs`.
//!
//! The numerics need every 4-element lane sum of every block on its own
//! (each lane is converted and folded into its own f32 accumulator, block by
//! block), so one `tdpbssd` cannot sum a whole block. Instead the
//! activation tile (B) is block-diagonal: for a pair of activation rows,
//! column `8m + l` holds only lane `l` of row `m`'s block, so the i32 tile
//! C[n][8m + l] is exactly the lane `l` sum of (weight row n, activation row
//! m) — the same layout the AVX-512 kernel keeps in one register (row pair
//! halves of eight lanes). A is 16 weight rows x one block of signed
//! levels: Q8_0 loads straight from the GGUF bytes (stride = row bytes);
//! the other formats, and a ragged last group, are unpacked into a small
//! per-group buffer. After each block the C tile is stored, and AVX-512
//! does ggml's per-lane `fma(d_w * d_a, lane, acc)` and, at the end, the
//! AVX horizontal sum of each half.
//!
//! Stable Rust has no AMX intrinsics: the tile instructions are inline
//! assembly with fixed registers (nothing else in the process uses tmm):
//! tmm0/tmm1 A, tmm2/tmm3 B, tmm4/tmm5 C, even/odd blocks alternating so a
//! block's tile work overlaps the previous block's float work.

use std::arch::asm;
use std::arch::x86_64::*;
use std::cell::RefCell;
use std::ops::Range;
use std::sync::OnceLock;

use phobos_quant::GgmlType;

use super::q32_512::{block_bytes, high_half, signed_pair};
use crate::host::qmatmul::QActivations;
use crate::host::qmatmul::activations::Q8_0_BYTES;

const Q8_0: u32 = GgmlType::Q8_0 as u32;

/// Weight rows per A tile (and columns of nothing: C is 16 rows x 16 lanes).
const GROUP_ROWS: usize = 16;
/// Activation rows per B tile: two rows of eight lanes.
const PAIR_ROWS: usize = 2;
/// Activation pairs whose B tiles are built before the weight groups pass
/// over them (so a group's weights are unpacked once per eight rows).
const CHUNK_PAIRS: usize = 4;
/// C tiles (tmm4..tmm7) in flight: a block's tile work is issued `AHEAD`
/// blocks before its float work, so the tile unit's latency (and the
/// stored C tile's trip through L1) overlaps earlier blocks' FMAs.
const C_SLOTS: usize = 4;
const AHEAD: usize = 3;
/// Bytes of one B tile: 8 rows (one per 4-byte lane of K = 32) x 64 bytes.
const B_TILE_BYTES: usize = 8 * 64;
/// Bytes of one unpacked A tile: 16 weight rows x 32 levels.
const A_TILE_BYTES: usize = GROUP_ROWS * 32;

/// `arch_prctl` request for permission to use a dynamic XSAVE feature, and
/// AMX's tile data feature number (Linux `asm/prctl.h`, x86 XSAVE).
const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
const XFEATURE_XTILEDATA: libc::c_long = 18;

/// Whether the AMX kernel can run: the CPU has AMX-TILE and AMX-INT8 and
/// Linux granted this process the tile state (asked once).
pub(in crate::host::qmatmul) fn has_amx() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        // CPUID leaf 7 (sub-leaf 0) EDX: bit 24 AMX-TILE, bit 25 AMX-INT8.
        let max_leaf = __get_cpuid_max(0).0;
        if max_leaf < 7 {
            return false;
        }
        let edx = __cpuid_count(7, 0).edx;
        if edx & (1 << 24) == 0 || edx & (1 << 25) == 0 {
            return false;
        }
        // SAFETY: arch_prctl with an integer request and feature number
        // touches no memory of ours; failure (old kernel, refused) is -1.
        let result = unsafe {
            libc::syscall(
                libc::SYS_arch_prctl,
                ARCH_REQ_XCOMP_PERM,
                XFEATURE_XTILEDATA,
            )
        };
        if result != 0 {
            tracing::debug!(
                error = %std::io::Error::last_os_error(),
                "the CPU has AMX but Linux refused the tile state; qmatmul stays on AVX-512"
            );
        }
        result == 0
    })
}

/// Whether format `ty` has an AMX kernel.
pub(in crate::host::qmatmul) const fn has_q32_amx(ty: GgmlType) -> bool {
    super::has_q32_512(ty)
}

/// `ldtilecfg`'s 64-byte operand (palette 1).
#[repr(C, align(64))]
struct TileConfig {
    palette: u8,
    start_row: u8,
    reserved: [u8; 14],
    colsb: [u16; 16],
    rows: [u8; 16],
}

const CONFIG: TileConfig = {
    let mut config = TileConfig {
        palette: 1,
        start_row: 0,
        reserved: [0; 14],
        colsb: [0; 16],
        rows: [0; 16],
    };
    // A: 16 weight rows x 32 bytes.
    let mut t = 0;
    while t < 2 {
        config.colsb[t] = 32;
        config.rows[t] = GROUP_ROWS as u8;
        t += 1;
    }
    // B: 8 rows (K/4) x 64 bytes (16 columns of 4 bytes).
    while t < 4 {
        config.colsb[t] = 64;
        config.rows[t] = 8;
        t += 1;
    }
    // C: 16 weight rows x 16 i32 lanes.
    while t < 8 {
        config.colsb[t] = 64;
        config.rows[t] = GROUP_ROWS as u8;
        t += 1;
    }
    config
};

/// One C tile stored to memory: 16 rows of 16 i32.
#[repr(C, align(64))]
struct CTile([[i32; 16]; GROUP_ROWS]);

/// Per-thread scratch, kept between calls (prompt tiles are many).
#[derive(Default)]
struct Scratch {
    /// Per (pair, block): the B tile.
    b_tiles: Vec<u8>,
    /// Per (pair, block): `[d_a(m0); 8] ++ [d_a(m1); 8]`.
    a_scales: Vec<f32>,
    /// Per block: the group's unpacked A tile (when not read in place).
    a_tiles: Vec<u8>,
    /// Per block: the group's 16 weight scales.
    w_scales: Vec<f32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// One block's tile work: C = A . B into `$c_reg`, then the previous
/// block's C (`$prev_reg`, whose product is done by now) stored to `$prev`
/// — storing a tile right after its own `tdpbssd` would stall the tile
/// unit for the product's latency.
///
/// # Safety
/// The tile configuration is loaded on this thread; `a` points at 16 rows
/// of 32 readable bytes `a_stride` apart, `b` at a B tile, `prev` at a
/// writable `CTile`.
macro_rules! block_step {
    ($a_reg:literal, $b_reg:literal, $c_reg:literal, $prev_reg:literal,
     $a:expr, $a_stride:expr, $b:expr, $prev:expr) => {
        asm!(
            concat!("tilezero ", $c_reg),
            concat!("tileloadd ", $a_reg, ", [{a} + {a_stride}]"),
            concat!("tileloadd ", $b_reg, ", [{b} + {row}]"),
            concat!("tdpbssd ", $c_reg, ", ", $a_reg, ", ", $b_reg),
            concat!("tilestored [{prev} + {row}], ", $prev_reg),
            a = in(reg) $a,
            a_stride = in(reg) $a_stride,
            b = in(reg) $b,
            prev = in(reg) $prev,
            row = in(reg) 64usize,
            options(nostack),
        )
    };
}

/// Stores C register `$c_reg` to `$c` (a writable `CTile`).
macro_rules! store_c {
    ($c_reg:literal, $c:expr) => {
        asm!(
            concat!("tilestored [{c} + {row}], ", $c_reg),
            c = in(reg) $c,
            row = in(reg) 64usize,
            options(nostack),
        )
    };
}

/// Weight rows `n_range` (format `F`, `row_bytes` apart in `w_data`) times
/// activation rows `m_range`: calls `store(m, n, value)` for every pair.
///
/// # Safety
/// [`has_amx`] returned true and the CPU supports AVX2, FMA, F16C and
/// AVX-512 F/BW/VL; `F` is one of Q4_0, Q5_0, Q8_0, IQ4_NL; every row in
/// `n_range` lies in `w_data` and holds as many blocks of `F` as `acts`
/// (Q8_0) has per row; `m_range` lies in `acts`.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
pub(in crate::host::qmatmul) unsafe fn q32_tile_amx<const F: u32>(
    w_data: &[u8],
    row_bytes: usize,
    n_range: Range<usize>,
    acts: &QActivations,
    m_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    let n_blocks = acts.cols() / 32;
    if n_blocks == 0 || n_range.is_empty() || m_range.is_empty() {
        return;
    }
    SCRATCH.with_borrow_mut(|scratch| {
        // SAFETY: AMX is available (the caller's contract), so the
        // configuration only sets this thread's tile registers.
        unsafe { asm!("ldtilecfg [{}]", in(reg) &CONFIG, options(nostack, readonly)) };
        let chunk_rows = CHUNK_PAIRS * PAIR_ROWS;
        let mut m0 = m_range.start;
        while m0 < m_range.end {
            let chunk = m0..(m0 + chunk_rows).min(m_range.end);
            // SAFETY: the caller's contract covers the helpers'.
            unsafe {
                build_b_tiles(scratch, acts, chunk.clone(), n_blocks);
                let mut n0 = n_range.start;
                while n0 < n_range.end {
                    let group = n0..(n0 + GROUP_ROWS).min(n_range.end);
                    group_times_chunk::<F>(
                        scratch,
                        w_data,
                        row_bytes,
                        group.clone(),
                        chunk.clone(),
                        n_blocks,
                        store,
                    );
                    n0 = group.end;
                }
            }
            m0 = chunk.end;
        }
        // SAFETY: tile state is ours; releasing it returns the thread to
        // the small XSAVE state (cheaper context switches).
        unsafe { asm!("tilerelease", options(nostack, nomem)) };
    });
}

/// The B tiles and activation scales of every pair of `chunk`, all blocks.
///
/// # Safety
/// AVX-512 F/BW/VL; `chunk` lies in `acts`, which is Q8_0 with `n_blocks`
/// blocks per row.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
unsafe fn build_b_tiles(
    scratch: &mut Scratch,
    acts: &QActivations,
    chunk: Range<usize>,
    n_blocks: usize,
) {
    let pairs = chunk.len().div_ceil(PAIR_ROWS);
    scratch.b_tiles.resize(pairs * n_blocks * B_TILE_BYTES, 0);
    scratch.a_scales.resize(pairs * n_blocks * 16, 0.0);
    for p in 0..pairs {
        let m = chunk.start + PAIR_ROWS * p;
        let second = (m + 1 < chunk.end).then(|| (acts.row_blocks(m + 1), acts.row_scales(m + 1)));
        let (first_blocks, first_scales) = (acts.row_blocks(m), acts.row_scales(m));
        for b in 0..n_blocks {
            let at = b * Q8_0_BYTES + 2;
            let low = &first_blocks[at..at + 32];
            // SAFETY: `low` and `high` are 32 readable bytes each.
            let both = unsafe {
                let low = _mm256_loadu_si256(low.as_ptr().cast());
                let high = match second {
                    Some((blocks, _)) => _mm256_loadu_si256(blocks[at..at + 32].as_ptr().cast()),
                    None => _mm256_setzero_si256(),
                };
                _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1)
            };
            let tile = (p * n_blocks + b) * B_TILE_BYTES;
            let tile = &mut scratch.b_tiles[tile..tile + B_TILE_BYTES];
            for (lane, row) in tile.chunks_exact_mut(64).enumerate() {
                // Row `lane` keeps lane `lane` of both activation rows, in
                // columns `lane` and `8 + lane`.
                let keep: __mmask16 = (1 << lane) | (1 << (8 + lane));
                // SAFETY: `row` is 64 writable bytes.
                unsafe {
                    _mm512_storeu_si512(row.as_mut_ptr().cast(), _mm512_maskz_mov_epi32(keep, both))
                };
            }
            let scales = &mut scratch.a_scales[(p * n_blocks + b) * 16..][..16];
            scales[..8].fill(first_scales[b]);
            scales[8..].fill(second.map_or(0.0, |(_, s)| s[b]));
        }
    }
}

/// One group of up to 16 weight rows times the chunk's activation pairs.
///
/// # Safety
/// As [`q32_tile_amx`], with the tile configuration loaded and the
/// chunk's B tiles built.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
unsafe fn group_times_chunk<const F: u32>(
    scratch: &mut Scratch,
    w_data: &[u8],
    row_bytes: usize,
    group: Range<usize>,
    chunk: Range<usize>,
    n_blocks: usize,
    store: &mut impl FnMut(usize, usize, f32),
) {
    let w_bytes = block_bytes(F);
    let rows: [&[u8]; GROUP_ROWS] = std::array::from_fn(|r| {
        let n = (group.start + r).min(group.end - 1);
        &w_data[n * row_bytes..(n + 1) * row_bytes]
    });
    scratch.w_scales.resize(n_blocks * GROUP_ROWS, 0.0);
    for b in 0..n_blocks {
        for (r, row) in rows.iter().enumerate() {
            scratch.w_scales[b * GROUP_ROWS + r] = if r < group.len() {
                super::f16_at(row, b * w_bytes)
            } else {
                0.0
            };
        }
    }
    // A in place (Q8_0, a whole group): block b of row r at
    // `start + r * row_bytes + b * 34 + 2`. Otherwise unpacked.
    let in_place = F == Q8_0 && group.len() == GROUP_ROWS;
    let (a_base, a_stride, a_block_step) = if in_place {
        (rows[0][2..].as_ptr(), row_bytes, w_bytes)
    } else {
        scratch.a_tiles.resize(n_blocks * A_TILE_BYTES, 0);
        for b in 0..n_blocks {
            let tile = &mut scratch.a_tiles[b * A_TILE_BYTES..][..A_TILE_BYTES];
            for (p, pair_bytes) in tile.chunks_exact_mut(64).enumerate() {
                let (r0, r1) = (2 * p, 2 * p + 1);
                // SAFETY: block `b` of both rows is readable (the clamped
                // rows repeat the last valid one); `pair_bytes` is 64 bytes.
                unsafe {
                    let levels = signed_pair::<F>(
                        rows[r0].as_ptr().add(b * w_bytes),
                        rows[r1].as_ptr().add(b * w_bytes),
                    );
                    // Rows past the group are zero (their outputs are
                    // dropped; zeros keep the tile's integers small).
                    let keep: __mmask8 = match (r0 < group.len(), r1 < group.len()) {
                        (true, true) => 0xFF,
                        (true, false) => 0x0F,
                        _ => 0,
                    };
                    _mm512_storeu_si512(
                        pair_bytes.as_mut_ptr().cast(),
                        _mm512_maskz_mov_epi64(keep, levels),
                    );
                }
            }
        }
        (scratch.a_tiles.as_ptr(), 32, A_TILE_BYTES)
    };
    let pairs = chunk.len().div_ceil(PAIR_ROWS);
    let mut c_tiles: [CTile; C_SLOTS] = std::array::from_fn(|_| CTile([[0; 16]; GROUP_ROWS]));
    for p in 0..pairs {
        let b_tiles = scratch.b_tiles[p * n_blocks * B_TILE_BYTES..].as_ptr();
        let a_scales = &scratch.a_scales[p * n_blocks * 16..][..n_blocks * 16];
        // Issues block `k`'s tile work and stores block `k - 1`'s C (and
        // `k`'s own when it is the last), so after `issue(k)` every C
        // before `k` is in `c_tiles`.
        let issue = |k: usize, c_tiles: &mut [CTile; C_SLOTS]| {
            // SAFETY: block `k < n_blocks`: A's 16 rows are in `w_data` or
            // `a_tiles`, B's tile in `b_tiles`; the configuration is loaded;
            // the C pointers are `c_tiles` entries.
            unsafe {
                let a = a_base.add(k * a_block_step);
                let b_tile = b_tiles.add(k * B_TILE_BYTES);
                let prev = c_tiles[(k + C_SLOTS - 1) % C_SLOTS].0.as_mut_ptr();
                if k == 0 {
                    asm!(
                        "tilezero tmm4",
                        "tileloadd tmm0, [{a} + {a_stride}]",
                        "tileloadd tmm2, [{b} + {row}]",
                        "tdpbssd tmm4, tmm0, tmm2",
                        a = in(reg) a,
                        a_stride = in(reg) a_stride,
                        b = in(reg) b_tile,
                        row = in(reg) 64usize,
                        options(nostack),
                    );
                } else {
                    match k % C_SLOTS {
                        0 => block_step!("tmm0", "tmm2", "tmm4", "tmm7", a, a_stride, b_tile, prev),
                        1 => block_step!("tmm1", "tmm3", "tmm5", "tmm4", a, a_stride, b_tile, prev),
                        2 => block_step!("tmm0", "tmm2", "tmm6", "tmm5", a, a_stride, b_tile, prev),
                        _ => block_step!("tmm1", "tmm3", "tmm7", "tmm6", a, a_stride, b_tile, prev),
                    }
                }
                if k + 1 == n_blocks {
                    let c = c_tiles[k % C_SLOTS].0.as_mut_ptr();
                    match k % C_SLOTS {
                        0 => store_c!("tmm4", c),
                        1 => store_c!("tmm5", c),
                        2 => store_c!("tmm6", c),
                        _ => store_c!("tmm7", c),
                    }
                }
            }
        };
        let mut acc = [_mm512_setzero_ps(); GROUP_ROWS];
        for k in 0..AHEAD.min(n_blocks) {
            issue(k, &mut c_tiles);
        }
        for b in 0..n_blocks {
            if b + AHEAD < n_blocks {
                issue(b + AHEAD, &mut c_tiles);
            }
            let lanes = &c_tiles[b % C_SLOTS].0;
            // SAFETY: 16 readable f32.
            let d_a = unsafe { _mm512_loadu_ps(a_scales[b * 16..][..16].as_ptr()) };
            let d_w = &scratch.w_scales[b * GROUP_ROWS..][..GROUP_ROWS];
            for r in 0..GROUP_ROWS {
                // SAFETY: a 64-byte row of the stored C tile.
                let lane = unsafe { _mm512_loadu_si512(lanes[r].as_ptr().cast()) };
                let d = _mm512_mul_ps(_mm512_set1_ps(d_w[r]), d_a);
                acc[r] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(lane), acc[r]);
            }
        }
        let m = chunk.start + PAIR_ROWS * p;
        for (r, acc) in acc.iter().enumerate().take(group.len()) {
            store(
                m,
                group.start + r,
                super::hsum8(_mm512_castps512_ps256(*acc)),
            );
            if m + 1 < chunk.end {
                store(m + 1, group.start + r, super::hsum8(high_half(*acc)));
            }
        }
    }
}
