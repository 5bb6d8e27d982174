//! One attention task: `L` query vectors of one KV head against the keys
//! they can see, as a flash-style loop over blocks of keys.
//!
//! Query vectors sit in SIMD lanes: `Q` is transposed once per task into
//! `[head_dim][L]`, so every step is elementwise across lanes and
//! vectorizes as it stands, without horizontal sums:
//!
//! - scores `S[j][l] = sum_d K[j][d] * Qt[d][l]` (a key element broadcast,
//!   `L` lanes of queries multiplied and added),
//! - softcap, causal / window mask, and the online softmax (running max
//!   `m[l]`, running sum `z[l]`, the accumulator rescaled when the max
//!   grows), each per lane,
//! - `Ot[d][l] += sum_j V[j][d] * P[j][l]`.
//!
//! Keys and values are converted from the f16 cache a block of rows at a
//! time (F16C / AVX-512 conversions where the CPU has them), so the inner
//! loops read f32 from L1/L2. The body is one generic function compiled
//! three times: for AVX-512, for AVX2 + FMA + F16C, and portably; the
//! caller picks one at run time.

use std::cell::RefCell;

use half::f16;
use phobos_rt::host::math::{exp_f32, tanh_f32};

use super::AttentionShape;

/// Keys per block of the online softmax: the converted K and V blocks
/// (64 x head_dim f32 each) and the scores stay in L2 while a block is used.
pub(super) const KEY_BLOCK: usize = 64;

/// Keys (for scores) or value columns (for the weighted sum) handled
/// together by one register tile, each `L` lanes wide.
const TILE_ROWS: usize = 4;

/// Everything tasks share: the queries, the cache and where the new
/// tokens start.
pub(super) struct Problem<'a> {
    pub shape: AttentionShape,
    pub group: usize,
    pub q: &'a [f32],
    pub pos0: usize,
    pub k_cache: &'a [f16],
    pub v_cache: &'a [f16],
}

/// Query vectors `first_vector..first_vector + n_vectors` of KV head
/// `kv_head`, numbered token-major (`token * group + head_in_group`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Task {
    pub kv_head: usize,
    pub first_vector: usize,
    pub n_vectors: usize,
}

/// Lane counts a task can be compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lanes {
    L4,
    L8,
    L16,
    L32,
}

impl Lanes {
    pub fn count(self) -> usize {
        match self {
            Lanes::L4 => 4,
            Lanes::L8 => 8,
            Lanes::L16 => 16,
            Lanes::L32 => 32,
        }
    }
}

/// The instruction sets the body is compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Isa {
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    Portable,
}

impl Isa {
    pub fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512vl")
                && std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
                && std::arch::is_x86_feature_detected!("f16c")
            {
                return Isa::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
                && std::arch::is_x86_feature_detected!("f16c")
            {
                return Isa::Avx2;
            }
        }
        Isa::Portable
    }
}

/// Per-thread buffers, kept between calls so a task never allocates (the
/// pool's workers live as long as the process).
#[derive(Default)]
struct Scratch {
    q_t: Vec<f32>,
    keys: Vec<f32>,
    values: Vec<f32>,
    scores: Vec<f32>,
    out_t: Vec<f32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

fn grow(buf: &mut Vec<f32>, len: usize) {
    if buf.len() < len {
        buf.resize(len, 0.0);
    }
}

/// Runs `task`, writing its vectors' outputs to `out` (`[n_vectors][head_dim_v]`).
pub(super) fn run_task(problem: &Problem<'_>, task: Task, lanes: Lanes, isa: Isa, out: &mut [f32]) {
    SCRATCH.with(|cell| {
        let mut scratch = cell.borrow_mut();
        match isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Isa::Avx512` is only made by `detect` after checking
            // every feature `x86::avx512` enables.
            Isa::Avx512 => unsafe { x86::avx512(problem, task, lanes, out, &mut scratch) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above, for `x86::avx2`'s features.
            Isa::Avx2 => unsafe { x86::avx2(problem, task, lanes, out, &mut scratch) },
            Isa::Portable => match lanes {
                Lanes::L4 => task_body::<4, Portable>(problem, task, out, &mut scratch),
                Lanes::L8 => task_body::<8, Portable>(problem, task, out, &mut scratch),
                Lanes::L16 => task_body::<16, Portable>(problem, task, out, &mut scratch),
                Lanes::L32 => task_body::<32, Portable>(problem, task, out, &mut scratch),
            },
        }
    });
}

/// What differs between the compiled copies of the body.
trait Simd {
    /// `a * b + c` rounds once (the target has FMA).
    const FMA: bool;
    fn f16_to_f32(src: &[f16], dst: &mut [f32]);
}

struct Portable;

impl Simd for Portable {
    const FMA: bool = false;
    #[inline(always)]
    fn f16_to_f32(src: &[f16], dst: &mut [f32]) {
        use half::slice::HalfFloatSliceExt;
        src.convert_to_f32_slice(dst);
    }
}

#[inline(always)]
fn madd<S: Simd>(a: f32, b: f32, c: f32) -> f32 {
    if S::FMA { a.mul_add(b, c) } else { a * b + c }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Lanes, Problem, Scratch, Simd, Task, task_body};
    use half::f16;
    use std::arch::x86_64::*;

    pub(super) struct Avx512;
    pub(super) struct Avx2;

    impl Simd for Avx512 {
        const FMA: bool = true;
        #[inline(always)]
        fn f16_to_f32(src: &[f16], dst: &mut [f32]) {
            // SAFETY: this type is only used inside `avx512`, whose caller
            // checked the CPU has AVX-512 F.
            unsafe { convert_avx512(src, dst) }
        }
    }

    impl Simd for Avx2 {
        const FMA: bool = true;
        #[inline(always)]
        fn f16_to_f32(src: &[f16], dst: &mut [f32]) {
            // SAFETY: only used inside `avx2`, whose caller checked F16C.
            unsafe { convert_f16c(src, dst) }
        }
    }

    #[target_feature(enable = "avx512f")]
    #[inline]
    fn convert_avx512(src: &[f16], dst: &mut [f32]) {
        let n = src.len().min(dst.len());
        let (src, dst) = (&src[..n], &mut dst[..n]);
        let mut i = 0;
        while i + 16 <= n {
            // SAFETY: `i + 16 <= n` keeps both 16-element accesses in bounds;
            // unaligned loads and stores are used.
            unsafe {
                let half = _mm256_loadu_si256(src.as_ptr().add(i).cast());
                _mm512_storeu_ps(dst.as_mut_ptr().add(i), _mm512_cvtph_ps(half));
            }
            i += 16;
        }
        for (d, s) in dst[i..].iter_mut().zip(&src[i..]) {
            *d = s.to_f32();
        }
    }

    #[target_feature(enable = "avx,f16c")]
    #[inline]
    fn convert_f16c(src: &[f16], dst: &mut [f32]) {
        let n = src.len().min(dst.len());
        let (src, dst) = (&src[..n], &mut dst[..n]);
        let mut i = 0;
        while i + 8 <= n {
            // SAFETY: `i + 8 <= n` keeps both 8-element accesses in bounds.
            unsafe {
                let half = _mm_loadu_si128(src.as_ptr().add(i).cast());
                _mm256_storeu_ps(dst.as_mut_ptr().add(i), _mm256_cvtph_ps(half));
            }
            i += 8;
        }
        for (d, s) in dst[i..].iter_mut().zip(&src[i..]) {
            *d = s.to_f32();
        }
    }

    #[target_feature(enable = "avx512f,avx512vl,avx2,avx,fma,f16c")]
    pub(super) fn avx512(
        problem: &Problem<'_>,
        task: Task,
        lanes: Lanes,
        out: &mut [f32],
        scratch: &mut Scratch,
    ) {
        match lanes {
            Lanes::L4 => task_body::<4, Avx512>(problem, task, out, scratch),
            Lanes::L8 => task_body::<8, Avx512>(problem, task, out, scratch),
            Lanes::L16 => task_body::<16, Avx512>(problem, task, out, scratch),
            Lanes::L32 => task_body::<32, Avx512>(problem, task, out, scratch),
        }
    }

    #[target_feature(enable = "avx2,avx,fma,f16c")]
    pub(super) fn avx2(
        problem: &Problem<'_>,
        task: Task,
        lanes: Lanes,
        out: &mut [f32],
        scratch: &mut Scratch,
    ) {
        match lanes {
            Lanes::L4 => task_body::<4, Avx2>(problem, task, out, scratch),
            Lanes::L8 => task_body::<8, Avx2>(problem, task, out, scratch),
            Lanes::L16 => task_body::<16, Avx2>(problem, task, out, scratch),
            Lanes::L32 => task_body::<32, Avx2>(problem, task, out, scratch),
        }
    }
}

/// The first key position visible from a query at `pos`.
#[inline(always)]
fn first_visible(window: Option<usize>, pos: usize) -> usize {
    match window {
        Some(w) => (pos + 1).saturating_sub(w),
        None => 0,
    }
}

#[inline(always)]
fn task_body<const L: usize, S: Simd>(
    problem: &Problem<'_>,
    task: Task,
    out: &mut [f32],
    scratch: &mut Scratch,
) {
    let shape = problem.shape;
    let (dk, dv, group) = (shape.head_dim_k, shape.head_dim_v, problem.group);
    let q_width = shape.n_head * dk;
    let k_width = shape.n_head_kv * dk;
    let v_width = shape.n_head_kv * dv;
    let n = task.n_vectors.min(L);
    if n == 0 {
        return;
    }
    grow(&mut scratch.q_t, dk * L);
    grow(&mut scratch.keys, KEY_BLOCK * dk);
    grow(&mut scratch.values, KEY_BLOCK * dv);
    grow(&mut scratch.scores, KEY_BLOCK * L);
    grow(&mut scratch.out_t, dv * L);
    let q_t = &mut scratch.q_t[..dk * L];
    let keys = &mut scratch.keys[..KEY_BLOCK * dk];
    let values = &mut scratch.values[..KEY_BLOCK * dv];
    let scores = &mut scratch.scores[..KEY_BLOCK * L];
    let out_t = &mut scratch.out_t[..dv * L];

    // Lane `i` is query vector `first_vector + i`; lanes past `n` repeat
    // the last real one's positions with a zero query (their output is
    // dropped).
    let mut pos = [0usize; L];
    let mut first = [0usize; L];
    q_t.fill(0.0);
    for i in 0..L {
        let vector = task.first_vector + i.min(n - 1);
        let (token, head) = (vector / group, task.kv_head * group + vector % group);
        pos[i] = problem.pos0 + token;
        first[i] = first_visible(shape.window, pos[i]);
        if i < n {
            let q_row = &problem.q[token * q_width + head * dk..][..dk];
            for (d, &x) in q_row.iter().enumerate() {
                q_t[d * L + i] = x;
            }
        }
    }
    // Vectors are token-major, so positions (and window starts) grow with
    // the lane.
    let (lo, hi) = (first[0], pos[L - 1] + 1);
    let (all_see_from, all_see_to) = (first[L - 1], pos[0]);

    let mut running_max = [f32::NEG_INFINITY; L];
    let mut running_sum = [0f32; L];
    out_t.fill(0.0);
    let mut j0 = lo;
    while j0 < hi {
        let jn = KEY_BLOCK.min(hi - j0);
        for j in 0..jn {
            let row = (j0 + j) * k_width + task.kv_head * dk;
            S::f16_to_f32(
                &problem.k_cache[row..row + dk],
                &mut keys[j * dk..(j + 1) * dk],
            );
        }
        block_scores::<L, S>(q_t, &keys[..jn * dk], dk, &mut scores[..jn * L]);
        let scores = &mut scores[..jn * L];
        if let Some(cap) = shape.softcap {
            let inv = 1.0 / cap;
            for s in scores.iter_mut() {
                *s = cap * tanh_f32(*s * inv);
            }
        }
        if !(j0 >= all_see_from && j0 + jn - 1 <= all_see_to) {
            for (j, row) in scores.chunks_exact_mut(L).enumerate() {
                let key = j0 + j;
                for l in 0..L {
                    if key > pos[l] || key < first[l] {
                        row[l] = f32::NEG_INFINITY;
                    }
                }
            }
        }
        // Online softmax: the block's max, the rescale of what came before.
        let mut block_max = running_max;
        for row in scores.chunks_exact(L) {
            for l in 0..L {
                block_max[l] = block_max[l].max(row[l]);
            }
        }
        // A lane that has seen only masked keys keeps max -inf; shifting by
        // 0 then keeps its weights 0 instead of NaN.
        let mut shift = [0f32; L];
        let mut rescale = [0f32; L];
        for l in 0..L {
            shift[l] = if block_max[l] == f32::NEG_INFINITY {
                0.0
            } else {
                block_max[l]
            };
            rescale[l] = exp_f32(running_max[l] - shift[l]);
            running_max[l] = block_max[l];
        }
        let mut block_sum = [0f32; L];
        for row in scores.chunks_exact_mut(L) {
            for l in 0..L {
                row[l] = exp_f32(row[l] - shift[l]);
                block_sum[l] += row[l];
            }
        }
        for l in 0..L {
            running_sum[l] = running_sum[l] * rescale[l] + block_sum[l];
        }
        for row in out_t.chunks_exact_mut(L) {
            for l in 0..L {
                row[l] *= rescale[l];
            }
        }
        for j in 0..jn {
            let row = (j0 + j) * v_width + task.kv_head * dv;
            S::f16_to_f32(
                &problem.v_cache[row..row + dv],
                &mut values[j * dv..(j + 1) * dv],
            );
        }
        accumulate_values::<L, S>(scores, &values[..jn * dv], dv, out_t);
        j0 += jn;
    }

    for (i, out_row) in out.chunks_exact_mut(dv).take(n).enumerate() {
        let inv = if running_sum[i] > 0.0 {
            1.0 / running_sum[i]
        } else {
            0.0
        };
        for (d, o) in out_row.iter_mut().enumerate() {
            *o = out_t[d * L + i] * inv;
        }
    }
}

/// `scores[j][l] = sum_d keys[j][d] * q_t[d][l]` for the block's keys.
#[inline(always)]
fn block_scores<const L: usize, S: Simd>(q_t: &[f32], keys: &[f32], dk: usize, scores: &mut [f32]) {
    let (q_t, _) = q_t.as_chunks::<L>();
    let (score_rows, _) = scores.as_chunks_mut::<L>();
    let mut key_tiles = keys.chunks_exact(TILE_ROWS * dk);
    let mut out_tiles = score_rows.chunks_exact_mut(TILE_ROWS);
    for (tile, out) in (&mut key_tiles).zip(&mut out_tiles) {
        let mut acc = [[0f32; L]; TILE_ROWS];
        let rows: [&[f32]; TILE_ROWS] = std::array::from_fn(|r| &tile[r * dk..(r + 1) * dk]);
        for (d, q) in q_t.iter().enumerate().take(dk) {
            for r in 0..TILE_ROWS {
                let k = rows[r][d];
                for l in 0..L {
                    acc[r][l] = madd::<S>(k, q[l], acc[r][l]);
                }
            }
        }
        for (o, a) in out.iter_mut().zip(&acc) {
            *o = *a;
        }
    }
    for (row, out) in key_tiles
        .remainder()
        .chunks_exact(dk)
        .zip(out_tiles.into_remainder())
    {
        let mut acc = [0f32; L];
        for (q, &k) in q_t.iter().zip(row) {
            for l in 0..L {
                acc[l] = madd::<S>(k, q[l], acc[l]);
            }
        }
        *out = acc;
    }
}

/// `out_t[d][l] += sum_j values[j][d] * weights[j][l]`.
#[inline(always)]
fn accumulate_values<const L: usize, S: Simd>(
    weights: &[f32],
    values: &[f32],
    dv: usize,
    out_t: &mut [f32],
) {
    let (weights, _) = weights.as_chunks::<L>();
    let (out_rows, _) = out_t.as_chunks_mut::<L>();
    let mut d0 = 0;
    for tile in out_rows.chunks_mut(TILE_ROWS) {
        if tile.len() == TILE_ROWS {
            let mut acc: [[f32; L]; TILE_ROWS] = std::array::from_fn(|r| tile[r]);
            for (j, w) in weights.iter().enumerate() {
                let v = &values[j * dv + d0..j * dv + d0 + TILE_ROWS];
                for r in 0..TILE_ROWS {
                    for l in 0..L {
                        acc[r][l] = madd::<S>(v[r], w[l], acc[r][l]);
                    }
                }
            }
            for (o, a) in tile.iter_mut().zip(&acc) {
                *o = *a;
            }
        } else {
            for (r, o) in tile.iter_mut().enumerate() {
                let mut acc = *o;
                for (j, w) in weights.iter().enumerate() {
                    let v = values[j * dv + d0 + r];
                    for l in 0..L {
                        acc[l] = madd::<S>(v, w[l], acc[l]);
                    }
                }
                *o = acc;
            }
        }
        d0 += TILE_ROWS;
    }
}
