//! Causal attention of a run of new tokens over a KV cache, with grouped
//! query heads, an optional sliding window and optional softcapping.
//!
//! The cache holds keys and values in f16 (llama.cpp's default cache type)
//! for positions `0..pos0 + n_tokens`, one row of `n_head_kv * head_dim`
//! per position; the new tokens sit at positions `pos0..pos0 + n_tokens`.
//! Queries arrive already scaled.
//!
//! The work is split into tasks of up to `L` query vectors (tokens times
//! the query heads of one KV head), run on phobos-rt's host pool; each
//! task is a flash-style pass over blocks of keys ([`kernel`]), so the
//! scores of a long prompt are never held whole. Later tokens see more
//! keys, so tasks are handed out latest tokens first.
//!
//! Decode (a few query vectors per KV head, e.g. one token of Gemma 3's
//! single KV head) would leave all but one thread idle, so when the
//! tasks are fewer than the threads and the context is long enough, each
//! task's keys are also split into pieces run as tasks of their own
//! (flash-decoding), merged by their softmax maxima and sums.

mod handle;
mod kernel;

#[cfg(test)]
mod tests;

use std::sync::Mutex;

use half::f16;

pub use handle::{attention_launch, attention_launch_with};
use kernel::{Isa, KeySplit, Lanes, Problem, Task, TaskOut};

#[derive(Debug, Clone, Copy)]
pub struct AttentionShape {
    pub n_head: usize,
    pub n_head_kv: usize,
    pub head_dim_k: usize,
    pub head_dim_v: usize,
    /// A key at position `j` is hidden from a query at `p` when
    /// `p - j >= window` (llama.cpp's standard sliding window).
    pub window: Option<usize>,
    /// `softcap * tanh(score / softcap)` before the softmax, where the
    /// architecture has it.
    pub softcap: Option<f32>,
}

#[derive(Debug, thiserror::Error)]
pub enum AttentionError {
    #[error("attention: {n_head} query heads cannot be grouped over {n_head_kv} KV heads")]
    Heads { n_head: usize, n_head_kv: usize },
    #[error("attention: {what} holds {len} values, expected {expected}")]
    Length {
        what: &'static str,
        len: usize,
        expected: String,
    },
    #[error("attention: {0}")]
    Pool(#[from] phobos_rt::Error),
}

/// `q` is `[n_tokens][n_head * head_dim_k]`, `out` is
/// `[n_tokens][n_head * head_dim_v]`; the caches hold at least
/// `pos0 + n_tokens` rows.
pub fn attention(
    shape: &AttentionShape,
    q: &[f32],
    pos0: usize,
    k_cache: &[f16],
    v_cache: &[f16],
    out: &mut [f32],
) -> Result<(), AttentionError> {
    let pool = phobos_rt::pool::global();
    let isa = Isa::detect();
    let plan = Plan::new(shape, q.len(), pos0, pool.threads(), isa);
    attention_with(shape, q, pos0, k_cache, v_cache, out, plan, pool)
}

/// Fewest keys a piece of a split decode attention covers: below that
/// one more pool task (a wake-up and a barrier, a few microseconds) costs
/// about what it saves (4 query vectors x 128 keys x 256 dims is ~10 us
/// on one core).
const MIN_KEYS_PER_SPLIT: usize = 128;

/// How a call is split and compiled.
#[derive(Debug, Clone, Copy)]
struct Plan {
    isa: Isa,
    lanes: Lanes,
    /// Pieces the keys of each task are split into (1: not split).
    key_splits: usize,
}

impl Plan {
    /// The widest lane count the ISA keeps in registers that the vectors
    /// fill, narrowed until every thread has work. When even the narrowest
    /// leaves threads idle (decode: a few query vectors per KV head), the
    /// keys are split among them too, if there are enough to pay.
    fn new(shape: &AttentionShape, q_len: usize, pos0: usize, threads: usize, isa: Isa) -> Plan {
        let q_width = (shape.n_head * shape.head_dim_k).max(1);
        let n_tokens = q_len / q_width;
        let group = shape.n_head / shape.n_head_kv.max(1);
        let vectors = n_tokens * group;
        let widest = match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => Lanes::L32,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => Lanes::L16,
            Isa::Portable => Lanes::L8,
        };
        let order = [Lanes::L4, Lanes::L8, Lanes::L16, Lanes::L32];
        let mut lanes = order
            .iter()
            .copied()
            .find(|l| l.count() >= vectors || *l == widest)
            .unwrap_or(Lanes::L4);
        let n_tasks = |l: Lanes| shape.n_head_kv * vectors.div_ceil(l.count());
        while lanes != Lanes::L4 && n_tasks(lanes) < 2 * threads {
            lanes = match lanes {
                Lanes::L32 => Lanes::L16,
                Lanes::L16 => Lanes::L8,
                _ => Lanes::L4,
            };
        }
        // The keys the last token sees; earlier ones see no more.
        let n_pos = pos0 + n_tokens;
        let span = shape.window.map_or(n_pos, |w| w.min(n_pos));
        let tasks = n_tasks(lanes).max(1);
        let key_splits = if tasks < threads {
            threads
                .div_ceil(tasks)
                .min(span / MIN_KEYS_PER_SPLIT)
                .max(1)
        } else {
            1
        };
        Plan {
            isa,
            lanes,
            key_splits,
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn attention_with(
    shape: &AttentionShape,
    q: &[f32],
    pos0: usize,
    k_cache: &[f16],
    v_cache: &[f16],
    out: &mut [f32],
    plan: Plan,
    pool: &phobos_rt::pool::ThreadPool,
) -> Result<(), AttentionError> {
    let s = *shape;
    if s.n_head_kv == 0 || s.n_head == 0 || !s.n_head.is_multiple_of(s.n_head_kv) {
        return Err(AttentionError::Heads {
            n_head: s.n_head,
            n_head_kv: s.n_head_kv,
        });
    }
    let q_width = s.n_head * s.head_dim_k;
    let out_width = s.n_head * s.head_dim_v;
    if q_width == 0 || !q.len().is_multiple_of(q_width) {
        return Err(AttentionError::Length {
            what: "the query rows",
            len: q.len(),
            expected: format!("a multiple of {q_width} (n_head * head_dim_k)"),
        });
    }
    let n_tokens = q.len() / q_width;
    let n_pos = pos0 + n_tokens;
    let checks = [
        ("the output", out.len(), n_tokens * out_width),
        (
            "the key cache",
            k_cache.len(),
            n_pos * s.n_head_kv * s.head_dim_k,
        ),
        (
            "the value cache",
            v_cache.len(),
            n_pos * s.n_head_kv * s.head_dim_v,
        ),
    ];
    for (i, (what, len, expected)) in checks.into_iter().enumerate() {
        let short = if i == 0 {
            len != expected
        } else {
            len < expected
        };
        if short {
            return Err(AttentionError::Length {
                what,
                len,
                expected: if i == 0 {
                    expected.to_string()
                } else {
                    format!("at least {expected}")
                },
            });
        }
    }
    if n_tokens == 0 {
        return Ok(());
    }

    let group = s.n_head / s.n_head_kv;
    let vectors = n_tokens * group;
    // With one KV head the vectors' order is `out`'s; otherwise each KV
    // head's vectors are gathered in a buffer and scattered afterwards.
    let mut staging = Vec::new();
    let direct = s.n_head_kv == 1;
    let target: &mut [f32] = if direct {
        out
    } else {
        staging.resize(s.n_head_kv * vectors * s.head_dim_v, 0.0);
        &mut staging
    };
    let problem = Problem {
        shape: s,
        group,
        q,
        pos0,
        k_cache,
        v_cache,
    };
    if plan.key_splits > 1 {
        run_split(&problem, vectors, plan, pool, target)?;
    } else {
        run_whole(&problem, vectors, plan, pool, target)?;
    }

    if !direct {
        let dv = s.head_dim_v;
        for (kv_head, head_part) in staging.chunks_exact(vectors * dv).enumerate() {
            for (vector, src) in head_part.chunks_exact(dv).enumerate() {
                let (token, head) = (vector / group, kv_head * group + vector % group);
                out[token * out_width + head * dv..][..dv].copy_from_slice(src);
            }
        }
    }
    Ok(())
}

/// One task per `lanes` query vectors of a KV head, each over every key
/// its vectors see; `target` is `[n_head_kv][vectors][head_dim_v]`.
fn run_whole(
    problem: &Problem<'_>,
    vectors: usize,
    plan: Plan,
    pool: &phobos_rt::pool::ThreadPool,
    target: &mut [f32],
) -> Result<(), AttentionError> {
    let s = problem.shape;
    let lanes = plan.lanes.count();
    let chunks_per_head = vectors.div_ceil(lanes);
    let mut slots: Vec<Mutex<&mut [f32]>> = Vec::with_capacity(s.n_head_kv * chunks_per_head);
    for head_part in target.chunks_mut(vectors * s.head_dim_v) {
        slots.extend(head_part.chunks_mut(lanes * s.head_dim_v).map(Mutex::new));
    }
    let run = |index: usize| -> phobos_rt::Result<()> {
        let kv_head = index % s.n_head_kv;
        let chunk = chunks_per_head - 1 - index / s.n_head_kv;
        let first_vector = chunk * lanes;
        let task = Task {
            kv_head,
            first_vector,
            n_vectors: lanes.min(vectors - first_vector),
            keys: KeySplit::WHOLE,
        };
        let slot = &slots[kv_head * chunks_per_head + chunk];
        let mut dest = slot.lock().unwrap_or_else(|p| p.into_inner());
        kernel::run_task(
            problem,
            task,
            plan.lanes,
            plan.isa,
            TaskOut::Final(&mut dest),
        );
        Ok(())
    };
    pool.run(slots.len(), &run)?;
    Ok(())
}

/// Flash-decoding: every task of [`run_whole`] split into
/// `plan.key_splits` pieces along the keys, each leaving its softmax
/// max, sum and unnormalized weighted values, merged afterwards.
fn run_split(
    problem: &Problem<'_>,
    vectors: usize,
    plan: Plan,
    pool: &phobos_rt::pool::ThreadPool,
    target: &mut [f32],
) -> Result<(), AttentionError> {
    let s = problem.shape;
    let (dv, splits) = (s.head_dim_v, plan.key_splits);
    let lanes = plan.lanes.count();
    let chunks_per_head = vectors.div_ceil(lanes);
    let piece_vectors = s.n_head_kv * vectors;
    // Piece `p` of every vector: `sums[p][kv_head][vector][dv]` and
    // `stats[p][kv_head][vector][2]`.
    let mut sums = vec![0f32; splits * piece_vectors * dv];
    let mut stats = vec![0f32; splits * piece_vectors * 2];
    type Slot<'a> = Mutex<(&'a mut [f32], &'a mut [f32])>;
    let mut slots: Vec<Slot<'_>> = Vec::with_capacity(splits * s.n_head_kv * chunks_per_head);
    for (sum_head, stat_head) in sums
        .chunks_mut(vectors * dv)
        .zip(stats.chunks_mut(vectors * 2))
    {
        slots.extend(
            sum_head
                .chunks_mut(lanes * dv)
                .zip(stat_head.chunks_mut(lanes * 2))
                .map(Mutex::new),
        );
    }
    let per_split = s.n_head_kv * chunks_per_head;
    let run = |index: usize| -> phobos_rt::Result<()> {
        let (split, rest) = (index % splits, index / splits);
        let kv_head = rest % s.n_head_kv;
        let chunk = chunks_per_head - 1 - rest / s.n_head_kv;
        let first_vector = chunk * lanes;
        let task = Task {
            kv_head,
            first_vector,
            n_vectors: lanes.min(vectors - first_vector),
            keys: KeySplit {
                index: split,
                count: splits,
            },
        };
        let slot = &slots[split * per_split + kv_head * chunks_per_head + chunk];
        let mut dest = slot.lock().unwrap_or_else(|p| p.into_inner());
        let (sums, stats) = &mut *dest;
        let out = TaskOut::Partial { sums, stats };
        kernel::run_task(problem, task, plan.lanes, plan.isa, out);
        Ok(())
    };
    pool.run(slots.len(), &run)?;
    drop(slots);
    merge_pieces(&sums, &stats, splits, dv, target);
    Ok(())
}

/// Combines per-piece softmax results into the outputs: with piece `p`'s
/// max `m_p`, sum `z_p` and weighted values `a_p` (relative to `m_p`), and
/// `M = max m_p`, the output is `sum_p e^(m_p - M) a_p / sum_p e^(m_p - M) z_p`.
/// `target` is `[vectors][dv]`, `sums` `[splits][vectors][dv]`, `stats`
/// `[splits][vectors][2]`.
fn merge_pieces(sums: &[f32], stats: &[f32], splits: usize, dv: usize, target: &mut [f32]) {
    let n_vectors = target.len() / dv.max(1);
    for (v, out) in target.chunks_exact_mut(dv).enumerate() {
        let stat = |p: usize| {
            (
                stats[(p * n_vectors + v) * 2],
                stats[(p * n_vectors + v) * 2 + 1],
            )
        };
        let max = (0..splits)
            .map(|p| stat(p).0)
            .fold(f32::NEG_INFINITY, f32::max);
        out.fill(0.0);
        let mut total = 0f32;
        for p in 0..splits {
            let (piece_max, piece_sum) = stat(p);
            // A piece that hid every key holds zeros; skipping it also
            // keeps `-inf - -inf` out of the exponent.
            if piece_max == f32::NEG_INFINITY {
                continue;
            }
            let weight = (piece_max - max).exp();
            total += weight * piece_sum;
            let piece = &sums[(p * n_vectors + v) * dv..][..dv];
            for (o, x) in out.iter_mut().zip(piece) {
                *o += weight * x;
            }
        }
        let inv = if total > 0.0 { 1.0 / total } else { 0.0 };
        out.iter_mut().for_each(|o| *o *= inv);
    }
}
