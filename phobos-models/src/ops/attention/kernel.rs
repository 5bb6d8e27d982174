//! One attention task: `L` query vectors of one KV head against the keys
//! they can see, as a flash-style loop over blocks of keys.
//!
//! Query vectors sit in SIMD lanes: `Q` is transposed once per task into
//! `[head_dim][L]`, so every step is elementwise across lanes and
//! needs no horizontal sums:
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
//! loops read f32 from L1/L2. The two products (`L x dk x keys`
//! multiply-adds each, nearly all the work) are register tiles of
//! `TILE_ROWS x L` lanes over a small [`Vector`] trait (AVX-512, AVX with
//! FMA, or plain four-lane arrays); the body is one generic function
//! compiled three times (AVX-512, AVX2 with FMA and F16C, portable) and
//! picked at run time.

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
/// `kv_head`, numbered token-major (`token * group + head_in_group`),
/// against piece `keys` of the keys they see.
#[derive(Debug, Clone, Copy)]
pub(super) struct Task {
    pub kv_head: usize,
    pub first_vector: usize,
    pub n_vectors: usize,
    pub keys: KeySplit,
}

/// Piece `index` of `count` of the key range a task's vectors see
/// (flash-decoding: a few query vectors over a long context are split
/// along the keys so several threads share them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct KeySplit {
    pub index: usize,
    pub count: usize,
}

impl KeySplit {
    pub const WHOLE: KeySplit = KeySplit { index: 0, count: 1 };

    /// This piece of `lo..hi`: pieces are whole key blocks (the last one
    /// shorter, trailing ones possibly empty), so a split adds no partial
    /// blocks beyond the one at each piece's end.
    pub fn piece(self, lo: usize, hi: usize) -> (usize, usize) {
        let per_piece = (hi - lo)
            .div_ceil(self.count.max(1))
            .next_multiple_of(KEY_BLOCK);
        let start = lo
            .saturating_add(self.index.saturating_mul(per_piece))
            .min(hi);
        (start, start.saturating_add(per_piece).min(hi))
    }
}

/// Where a task's results go.
pub(super) enum TaskOut<'a> {
    /// The attention outputs, `[n_vectors][head_dim_v]`.
    Final(&'a mut [f32]),
    /// For a merge over key pieces: the weighted sums of values, not yet
    /// divided by the softmax sum (`[n_vectors][head_dim_v]`, relative to
    /// the piece's max score), and per vector its `(max, sum)` pair
    /// (`[n_vectors][2]`; `(-inf, 0)` when the piece hides every key).
    Partial {
        sums: &'a mut [f32],
        stats: &'a mut [f32],
    },
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

/// Runs `task`, writing its vectors' results to `out`.
pub(super) fn run_task(
    problem: &Problem<'_>,
    task: Task,
    lanes: Lanes,
    isa: Isa,
    out: TaskOut<'_>,
) {
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

/// What differs between the compiled copies of the body: the f16 row
/// conversion and which vectors carry `lanes` query lanes.
trait Simd {
    fn f16_to_f32(src: &[f16], dst: &mut [f32]);
    fn scores(lanes: usize, q_t: &[f32], keys: &[f32], dk: usize, scores: &mut [f32]);
    fn values(lanes: usize, weights: &[f32], values: &[f32], dv: usize, out_t: &mut [f32]);
}

struct Portable;

impl Simd for Portable {
    #[inline(always)]
    fn f16_to_f32(src: &[f16], dst: &mut [f32]) {
        use half::slice::HalfFloatSliceExt;
        src.convert_to_f32_slice(dst);
    }
    #[inline(always)]
    fn scores(lanes: usize, q_t: &[f32], keys: &[f32], dk: usize, scores: &mut [f32]) {
        match lanes {
            32 => block_scores::<Plain4, 8>(q_t, keys, dk, scores),
            16 => block_scores::<Plain4, 4>(q_t, keys, dk, scores),
            8 => block_scores::<Plain4, 2>(q_t, keys, dk, scores),
            _ => block_scores::<Plain4, 1>(q_t, keys, dk, scores),
        }
    }
    #[inline(always)]
    fn values(lanes: usize, weights: &[f32], values: &[f32], dv: usize, out_t: &mut [f32]) {
        match lanes {
            32 => accumulate_values::<Plain4, 8>(weights, values, dv, out_t),
            16 => accumulate_values::<Plain4, 4>(weights, values, dv, out_t),
            8 => accumulate_values::<Plain4, 2>(weights, values, dv, out_t),
            _ => accumulate_values::<Plain4, 1>(weights, values, dv, out_t),
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{
        Lanes, Problem, Scratch, Simd, Task, TaskOut, Vector, accumulate_values, block_scores,
        task_body,
    };
    use half::f16;
    use std::arch::x86_64::*;

    pub(super) struct Avx512;
    pub(super) struct Avx2;

    impl Simd for Avx512 {
        #[inline(always)]
        fn f16_to_f32(src: &[f16], dst: &mut [f32]) {
            // SAFETY: this type is only used inside `avx512`, whose caller
            // checked the CPU has AVX-512 F.
            unsafe { convert_avx512(src, dst) }
        }
        #[inline(always)]
        fn scores(lanes: usize, q_t: &[f32], keys: &[f32], dk: usize, scores: &mut [f32]) {
            match lanes {
                32 => block_scores::<Z16, 2>(q_t, keys, dk, scores),
                16 => block_scores::<Z16, 1>(q_t, keys, dk, scores),
                8 => block_scores::<Y8, 1>(q_t, keys, dk, scores),
                _ => block_scores::<X4, 1>(q_t, keys, dk, scores),
            }
        }
        #[inline(always)]
        fn values(lanes: usize, weights: &[f32], values: &[f32], dv: usize, out_t: &mut [f32]) {
            match lanes {
                32 => accumulate_values::<Z16, 2>(weights, values, dv, out_t),
                16 => accumulate_values::<Z16, 1>(weights, values, dv, out_t),
                8 => accumulate_values::<Y8, 1>(weights, values, dv, out_t),
                _ => accumulate_values::<X4, 1>(weights, values, dv, out_t),
            }
        }
    }

    impl Simd for Avx2 {
        #[inline(always)]
        fn f16_to_f32(src: &[f16], dst: &mut [f32]) {
            // SAFETY: only used inside `avx2`, whose caller checked F16C.
            unsafe { convert_f16c(src, dst) }
        }
        #[inline(always)]
        fn scores(lanes: usize, q_t: &[f32], keys: &[f32], dk: usize, scores: &mut [f32]) {
            match lanes {
                32 => block_scores::<Y8, 4>(q_t, keys, dk, scores),
                16 => block_scores::<Y8, 2>(q_t, keys, dk, scores),
                8 => block_scores::<Y8, 1>(q_t, keys, dk, scores),
                _ => block_scores::<X4, 1>(q_t, keys, dk, scores),
            }
        }
        #[inline(always)]
        fn values(lanes: usize, weights: &[f32], values: &[f32], dv: usize, out_t: &mut [f32]) {
            match lanes {
                32 => accumulate_values::<Y8, 4>(weights, values, dv, out_t),
                16 => accumulate_values::<Y8, 2>(weights, values, dv, out_t),
                8 => accumulate_values::<Y8, 1>(weights, values, dv, out_t),
                _ => accumulate_values::<X4, 1>(weights, values, dv, out_t),
            }
        }
    }

    /// 16 lanes; needs AVX-512 F.
    #[derive(Clone, Copy)]
    pub(super) struct Z16(__m512);
    /// 8 lanes; needs AVX and FMA.
    #[derive(Clone, Copy)]
    pub(super) struct Y8(__m256);
    /// 4 lanes; needs FMA.
    #[derive(Clone, Copy)]
    pub(super) struct X4(__m128);

    // SAFETY (every method below): the types are only used inside `avx512`
    // / `avx2`, compiled with (and called after checking) the features
    // each names; pointers are kept in bounds by the callers.
    impl Vector for Z16 {
        const WIDTH: usize = 16;
        #[inline(always)]
        unsafe fn zero() -> Self {
            Z16(unsafe { _mm512_setzero_ps() })
        }
        #[inline(always)]
        unsafe fn splat(x: f32) -> Self {
            Z16(unsafe { _mm512_set1_ps(x) })
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            Z16(unsafe { _mm512_loadu_ps(p) })
        }
        #[inline(always)]
        unsafe fn store(p: *mut f32, v: Self) {
            unsafe { _mm512_storeu_ps(p, v.0) }
        }
        #[inline(always)]
        unsafe fn madd(a: Self, b: Self, c: Self) -> Self {
            Z16(unsafe { _mm512_fmadd_ps(a.0, b.0, c.0) })
        }
    }

    impl Vector for Y8 {
        const WIDTH: usize = 8;
        #[inline(always)]
        unsafe fn zero() -> Self {
            Y8(unsafe { _mm256_setzero_ps() })
        }
        #[inline(always)]
        unsafe fn splat(x: f32) -> Self {
            Y8(unsafe { _mm256_set1_ps(x) })
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            Y8(unsafe { _mm256_loadu_ps(p) })
        }
        #[inline(always)]
        unsafe fn store(p: *mut f32, v: Self) {
            unsafe { _mm256_storeu_ps(p, v.0) }
        }
        #[inline(always)]
        unsafe fn madd(a: Self, b: Self, c: Self) -> Self {
            Y8(unsafe { _mm256_fmadd_ps(a.0, b.0, c.0) })
        }
    }

    impl Vector for X4 {
        const WIDTH: usize = 4;
        #[inline(always)]
        unsafe fn zero() -> Self {
            X4(unsafe { _mm_setzero_ps() })
        }
        #[inline(always)]
        unsafe fn splat(x: f32) -> Self {
            X4(unsafe { _mm_set1_ps(x) })
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            X4(unsafe { _mm_loadu_ps(p) })
        }
        #[inline(always)]
        unsafe fn store(p: *mut f32, v: Self) {
            unsafe { _mm_storeu_ps(p, v.0) }
        }
        #[inline(always)]
        unsafe fn madd(a: Self, b: Self, c: Self) -> Self {
            X4(unsafe { _mm_fmadd_ps(a.0, b.0, c.0) })
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
        out: TaskOut<'_>,
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
        out: TaskOut<'_>,
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
    out: TaskOut<'_>,
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
    let (lo, hi) = task.keys.piece(first[0], pos[L - 1] + 1);
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
        S::scores(L, q_t, &keys[..jn * dk], dk, &mut scores[..jn * L]);
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
        S::values(L, scores, &values[..jn * dv], dv, out_t);
        j0 += jn;
    }

    match out {
        TaskOut::Final(out) => {
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
        TaskOut::Partial { sums, stats } => {
            for (i, (sum_row, stat)) in sums
                .chunks_exact_mut(dv)
                .zip(stats.chunks_exact_mut(2))
                .take(n)
                .enumerate()
            {
                for (d, o) in sum_row.iter_mut().enumerate() {
                    *o = out_t[d * L + i];
                }
                stat[0] = running_max[i];
                stat[1] = running_sum[i];
            }
        }
    }
}

/// `scores[j][l] = sum_d keys[j][d] * q_t[d][l]` for the block's keys,
/// `L` lanes as `C` vectors of `V`.
// Index loops: the tile rows index several parallel arrays at once.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn block_scores<V: Vector, const C: usize>(
    q_t: &[f32],
    keys: &[f32],
    dk: usize,
    scores: &mut [f32],
) {
    let lanes = C * V::WIDTH;
    let n_keys = keys.len() / dk.max(1);
    assert!(q_t.len() >= dk * lanes && scores.len() >= n_keys * lanes);
    let (q_ptr, s_ptr) = (q_t.as_ptr(), scores.as_mut_ptr());
    let mut j = 0;
    while j < n_keys {
        let rows = (n_keys - j).min(TILE_ROWS);
        let key_rows: [&[f32]; TILE_ROWS] =
            std::array::from_fn(|r| &keys[(j + r.min(rows - 1)) * dk..][..dk]);
        // SAFETY: the assert above bounds every lane read of `q_t` (rows
        // `d < dk`) and write of `scores` (rows `j + r < n_keys`); the
        // vector ops need the features the caller compiled for (`Vector`).
        unsafe {
            let mut acc = [[V::zero(); C]; TILE_ROWS];
            for d in 0..dk {
                let q_row = q_ptr.add(d * lanes);
                let q: [V; C] = std::array::from_fn(|c| V::load(q_row.add(c * V::WIDTH)));
                for r in 0..TILE_ROWS {
                    let k = V::splat(key_rows[r][d]);
                    for c in 0..C {
                        acc[r][c] = V::madd(k, q[c], acc[r][c]);
                    }
                }
            }
            for (r, acc_row) in acc.iter().enumerate().take(rows) {
                for (c, v) in acc_row.iter().enumerate() {
                    V::store(s_ptr.add((j + r) * lanes + c * V::WIDTH), *v);
                }
            }
        }
        j += rows;
    }
}

/// `out_t[d][l] += sum_j values[j][d] * weights[j][l]`.
// Index loops: the tile rows index several parallel arrays at once.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn accumulate_values<V: Vector, const C: usize>(
    weights: &[f32],
    values: &[f32],
    dv: usize,
    out_t: &mut [f32],
) {
    let lanes = C * V::WIDTH;
    let n_keys = weights.len() / lanes;
    assert!(values.len() >= n_keys * dv && out_t.len() >= dv * lanes);
    let (w_ptr, o_ptr) = (weights.as_ptr(), out_t.as_mut_ptr());
    let mut d0 = 0;
    while d0 < dv {
        let cols = (dv - d0).min(TILE_ROWS);
        // SAFETY: the assert bounds `weights` rows `j < n_keys`, `out_t`
        // rows `d0 + r < dv` and `values[j * dv + d0 + r]`; features as in
        // `block_scores`.
        unsafe {
            let mut acc = [[V::zero(); C]; TILE_ROWS];
            for (r, acc_row) in acc.iter_mut().enumerate().take(cols) {
                for (c, v) in acc_row.iter_mut().enumerate() {
                    *v = V::load(o_ptr.add((d0 + r) * lanes + c * V::WIDTH));
                }
            }
            for j in 0..n_keys {
                let w_row = w_ptr.add(j * lanes);
                let w: [V; C] = std::array::from_fn(|c| V::load(w_row.add(c * V::WIDTH)));
                let v_row = values.as_ptr().add(j * dv + d0);
                for r in 0..TILE_ROWS {
                    // Columns past `cols` reread the last one; never stored.
                    let v = V::splat(*v_row.add(r.min(cols - 1)));
                    for c in 0..C {
                        acc[r][c] = V::madd(v, w[c], acc[r][c]);
                    }
                }
            }
            for (r, acc_row) in acc.iter().enumerate().take(cols) {
                for (c, v) in acc_row.iter().enumerate() {
                    V::store(o_ptr.add((d0 + r) * lanes + c * V::WIDTH), *v);
                }
            }
        }
        d0 += cols;
    }
}

/// A SIMD register of `WIDTH` f32 lanes. Implementations use instructions
/// the caller must have checked for (each type names its features).
pub(super) trait Vector: Copy {
    const WIDTH: usize;
    unsafe fn zero() -> Self;
    unsafe fn splat(x: f32) -> Self;
    unsafe fn load(p: *const f32) -> Self;
    unsafe fn store(p: *mut f32, v: Self);
    /// `a * b + c`.
    unsafe fn madd(a: Self, b: Self, c: Self) -> Self;
}

/// Four lanes in plain Rust (the portable fallback).
#[derive(Clone, Copy)]
pub(super) struct Plain4([f32; 4]);

impl Vector for Plain4 {
    const WIDTH: usize = 4;
    #[inline(always)]
    unsafe fn zero() -> Self {
        Plain4([0.0; 4])
    }
    #[inline(always)]
    unsafe fn splat(x: f32) -> Self {
        Plain4([x; 4])
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: the caller keeps `p..p + 4` in bounds.
        Plain4(unsafe { p.cast::<[f32; 4]>().read_unaligned() })
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: Self) {
        // SAFETY: as for `load`.
        unsafe { p.cast::<[f32; 4]>().write_unaligned(v.0) }
    }
    #[inline(always)]
    unsafe fn madd(a: Self, b: Self, c: Self) -> Self {
        Plain4(std::array::from_fn(|i| a.0[i] * b.0[i] + c.0[i]))
    }
}
