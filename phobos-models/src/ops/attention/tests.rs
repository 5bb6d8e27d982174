use std::sync::OnceLock;

use half::f16;
use proptest::prelude::*;

use super::kernel::{Isa, Lanes};
use super::*;

/// Every ISA this CPU runs, the portable one always.
fn isas() -> Vec<Isa> {
    let mut all = vec![Isa::Portable];
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("f16c")
        {
            all.push(Isa::Avx2);
        }
        if Isa::detect() == Isa::Avx512 {
            all.push(Isa::Avx512);
        }
    }
    all
}

/// A pool of its own with workers, so tasks really run on several threads.
fn pool() -> &'static phobos_rt::pool::ThreadPool {
    static POOL: OnceLock<phobos_rt::pool::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| phobos_rt::pool::ThreadPool::new(3, &[]))
}

/// Straight from the definition, in f64: every visible key scored, one
/// softmax, the weighted sum of values.
pub(super) fn reference(
    s: &AttentionShape,
    q: &[f32],
    pos0: usize,
    k: &[f16],
    v: &[f16],
) -> Vec<f64> {
    let (dk, dv) = (s.head_dim_k, s.head_dim_v);
    let n_tokens = q.len() / (s.n_head * dk);
    let mut out = vec![0f64; n_tokens * s.n_head * dv];
    let group = s.n_head / s.n_head_kv;
    for t in 0..n_tokens {
        let pos = pos0 + t;
        for h in 0..s.n_head {
            let kh = h / group;
            let mut scores = Vec::new();
            for j in 0..=pos {
                if s.window.is_some_and(|w| pos - j >= w) {
                    continue;
                }
                let mut acc = 0f64;
                for d in 0..dk {
                    acc += f64::from(q[(t * s.n_head + h) * dk + d])
                        * f64::from(k[(j * s.n_head_kv + kh) * dk + d].to_f32());
                }
                if let Some(cap) = s.softcap {
                    acc = f64::from(cap) * (acc / f64::from(cap)).tanh();
                }
                scores.push((j, acc));
            }
            let max = scores.iter().map(|x| x.1).fold(f64::NEG_INFINITY, f64::max);
            let denom: f64 = scores.iter().map(|x| (x.1 - max).exp()).sum();
            for &(j, score) in &scores {
                let p = (score - max).exp() / denom;
                for d in 0..dv {
                    out[(t * s.n_head + h) * dv + d] +=
                        p * f64::from(v[(j * s.n_head_kv + kh) * dv + d].to_f32());
                }
            }
        }
    }
    out
}

pub(super) struct Case {
    pub(super) shape: AttentionShape,
    pub(super) pos0: usize,
    pub(super) q: Vec<f32>,
    pub(super) k: Vec<f16>,
    pub(super) v: Vec<f16>,
}

/// Values in [-2, 2] from a seeded LCG.
pub(super) fn case(shape: AttentionShape, pos0: usize, n_tokens: usize, seed: u64) -> Case {
    let mut state = seed * 2 + 1;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 33) % 2001) as f32 / 500.0 - 2.0
    };
    let n_pos = pos0 + n_tokens;
    let q = (0..n_tokens * shape.n_head * shape.head_dim_k)
        .map(|_| next())
        .collect();
    let k = (0..n_pos * shape.n_head_kv * shape.head_dim_k)
        .map(|_| f16::from_f32(next()))
        .collect();
    let v = (0..n_pos * shape.n_head_kv * shape.head_dim_v)
        .map(|_| f16::from_f32(next()))
        .collect();
    Case {
        shape,
        pos0,
        q,
        k,
        v,
    }
}

fn run(c: &Case, plan: Plan) -> Vec<f32> {
    let n_tokens = c.q.len() / (c.shape.n_head * c.shape.head_dim_k);
    let mut out = vec![f32::NAN; n_tokens * c.shape.n_head * c.shape.head_dim_v];
    attention_with(&c.shape, &c.q, c.pos0, &c.k, &c.v, &mut out, plan, pool())
        .expect("valid shapes");
    out
}

/// How far an f32 output may sit from the f64 definition: scores up to
/// |q||k| ~ 4 * head_dim summed in f32, values <= 2.
fn tolerance(head_dim_k: usize) -> f64 {
    1e-4 * (1.0 + head_dim_k as f64)
}

pub(super) fn assert_close(got: &[f32], want: &[f64], head_dim_k: usize, what: &str) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let tol = tolerance(head_dim_k);
        assert!(
            (f64::from(*g) - w).abs() <= tol,
            "{what}: output {i} is {g}, reference {w}"
        );
    }
}

const ALL_LANES: [Lanes; 4] = [Lanes::L4, Lanes::L8, Lanes::L16, Lanes::L32];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Ragged head sizes, prompt lengths across several lane chunks and key
    /// blocks, GQA ratios up to 8, windows shorter and longer than the
    /// context, softcap on and off: every ISA and lane count agrees with
    /// the f64 definition.
    #[test]
    fn matches_f64_reference(
        n_head_kv in 1usize..4,
        group in prop_oneof![Just(1usize), Just(2), Just(3), Just(4), Just(8)],
        head_dim_k in 1usize..72,
        head_dim_v in 1usize..72,
        pos0 in 0usize..150,
        n_tokens in 1usize..40,
        window in proptest::option::of(1usize..100),
        softcap in proptest::option::of(5f32..50.0),
        seed in 0u64..10_000,
    ) {
        let shape = AttentionShape {
            n_head: n_head_kv * group,
            n_head_kv,
            head_dim_k,
            head_dim_v,
            window,
            softcap,
        };
        let c = case(shape, pos0, n_tokens, seed);
        let want = reference(&c.shape, &c.q, c.pos0, &c.k, &c.v);
        for isa in isas() {
            for lanes in ALL_LANES {
                let got = run(&c, Plan { isa, lanes, key_splits: 1 });
                assert_close(&got, &want, head_dim_k, &format!("{isa:?} {lanes:?}"));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Flash-decoding: a few tokens over a context of several key blocks,
    /// the keys split into 2 to 9 pieces (ragged piece ends, pieces past
    /// the visible keys left empty), windows and softcap on and off: every
    /// ISA agrees with the f64 definition, and with the unsplit path
    /// within twice the tolerance (each is within it of the definition).
    #[test]
    fn split_keys_match_reference_and_unsplit_path(
        n_head_kv in 1usize..3,
        group in prop_oneof![Just(1usize), Just(4), Just(8)],
        head_dim in prop_oneof![Just(8usize), Just(33), Just(64)],
        pos0 in 0usize..700,
        n_tokens in 1usize..4,
        window in proptest::option::of(1usize..600),
        softcap in proptest::option::of(5f32..50.0),
        key_splits in 2usize..10,
        seed in 0u64..10_000,
    ) {
        let shape = AttentionShape {
            n_head: n_head_kv * group,
            n_head_kv,
            head_dim_k: head_dim,
            head_dim_v: head_dim,
            window,
            softcap,
        };
        let c = case(shape, pos0, n_tokens, seed);
        let want = reference(&c.shape, &c.q, c.pos0, &c.k, &c.v);
        for isa in isas() {
            let lanes = Lanes::L4;
            let whole = run(&c, Plan { isa, lanes, key_splits: 1 });
            let split = run(&c, Plan { isa, lanes, key_splits });
            let what = format!("{isa:?} {key_splits} pieces");
            assert_close(&split, &want, head_dim, &what);
            for (i, (a, b)) in split.iter().zip(&whole).enumerate() {
                prop_assert!(
                    f64::from((a - b).abs()) <= 2.0 * tolerance(head_dim),
                    "{what}: output {i} is {a}, unsplit {b}"
                );
            }
        }
    }
}

/// Pieces cover the key range in order, whole blocks each, none twice.
#[test]
fn key_pieces_tile_the_range() {
    for (lo, hi) in [(0, 1), (0, 64), (5, 700), (300, 2048), (10, 10)] {
        for count in 1..12 {
            let mut next = lo;
            for index in 0..count {
                let (start, end) = KeySplit { index, count }.piece(lo, hi);
                assert_eq!(start, next, "{lo}..{hi} piece {index}/{count}");
                assert!(end >= start && end <= hi);
                if end < hi {
                    assert_eq!((end - start) % kernel::KEY_BLOCK, 0);
                }
                next = end;
            }
            assert_eq!(next, hi, "{lo}..{hi} in {count} pieces");
        }
    }
}

/// The planner splits decode's keys over the threads only when there are
/// enough keys, never a prompt's, and never on one thread.
#[test]
fn planner_splits_long_decode_only() {
    let gemma = AttentionShape {
        n_head: 4,
        n_head_kv: 1,
        head_dim_k: 256,
        head_dim_v: 256,
        window: None,
        softcap: None,
    };
    let one_token = 4 * 256;
    let isa = Isa::detect();
    let splits = |shape: &AttentionShape, q_len, pos0, threads| {
        Plan::new(shape, q_len, pos0, threads, isa).key_splits
    };
    assert_eq!(splits(&gemma, one_token, 2047, 2), 2);
    assert_eq!(splits(&gemma, one_token, 2047, 4), 4);
    assert_eq!(splits(&gemma, one_token, 2047, 1), 1);
    assert_eq!(splits(&gemma, one_token, 100, 2), 1, "short context");
    assert_eq!(splits(&gemma, 512 * one_token, 0, 2), 1, "prompt");
    let local = AttentionShape {
        window: Some(512),
        ..gemma
    };
    assert_eq!(
        splits(&local, one_token, 4000, 8),
        4,
        "the window bounds the keys"
    );
    assert_eq!(splits(&local, one_token, 4000, 2), 2);
}

/// A piece that saw no key (max -inf, sum 0) adds nothing, and pieces
/// with different maxima are rescaled to the common one.
#[test]
fn merge_rescales_pieces_and_skips_empty_ones() {
    // Two pieces of one vector with dv = 2: the first saw scores {0, 0}
    // over values (1, 3) and (3, 5); the second saw one score ln 2 over
    // (7, 9); the third saw nothing.
    let sums = [4.0, 8.0, 7.0, 9.0, 0.0, 0.0];
    let stats = [0.0, 2.0, 2f32.ln(), 1.0, f32::NEG_INFINITY, 0.0];
    let mut out = [0f32; 2];
    merge_pieces(&sums, &stats, 3, 2, &mut out);
    // Weights 1, 1, 2 over (1, 3), (3, 5), (7, 9).
    let want = [(1.0 + 3.0 + 14.0) / 4.0, (3.0 + 5.0 + 18.0) / 4.0];
    for (g, w) in out.iter().zip(want) {
        assert!((g - w).abs() <= 1e-6, "{out:?} vs {want:?}");
    }
}

/// Gemma 3 270M's layer shapes (4 query heads over 1 KV head of 256, the
/// 512-token window) at a prompt and at decode, with the planner's choice.
#[test]
fn gemma3_shapes_match_reference() {
    let cases = [
        (Some(512), 0, 70),
        (None, 0, 70),
        (Some(16), 40, 1),
        (Some(512), 1500, 1),
        (None, 1500, 1),
    ];
    for (window, pos0, n_tokens) in cases {
        let shape = AttentionShape {
            n_head: 4,
            n_head_kv: 1,
            head_dim_k: 256,
            head_dim_v: 256,
            window,
            softcap: None,
        };
        let c = case(shape, pos0, n_tokens, 7);
        let want = reference(&c.shape, &c.q, c.pos0, &c.k, &c.v);
        for isa in isas() {
            let plan = Plan::new(&shape, c.q.len(), c.pos0, pool().threads(), isa);
            assert_close(&run(&c, plan), &want, 256, &format!("{plan:?}"));
        }
    }
}

/// A prompt attended whole, and the same tokens one at a time over the
/// growing cache, give the same outputs (only the block boundaries of the
/// running softmax differ).
#[test]
fn whole_prompt_equals_token_by_token() {
    let shape = AttentionShape {
        n_head: 6,
        n_head_kv: 2,
        head_dim_k: 40,
        head_dim_v: 24,
        window: Some(50),
        softcap: Some(30.0),
    };
    let n_tokens = 90;
    let c = case(shape, 0, n_tokens, 3);
    let plan = Plan::new(&shape, c.q.len(), 0, pool().threads(), Isa::detect());
    let whole = run(&c, plan);
    let (q_width, out_width) = (6 * 40, 6 * 24);
    for t in 0..n_tokens {
        let one = Case {
            shape,
            pos0: t,
            q: c.q[t * q_width..(t + 1) * q_width].to_vec(),
            k: c.k[..(t + 1) * 2 * 40].to_vec(),
            v: c.v[..(t + 1) * 2 * 24].to_vec(),
        };
        let plan = Plan::new(&shape, one.q.len(), t, pool().threads(), Isa::detect());
        let got = run(&one, plan);
        for (i, (a, b)) in got.iter().zip(&whole[t * out_width..]).enumerate() {
            assert!((a - b).abs() <= 1e-5, "token {t} output {i}: {a} vs {b}");
        }
    }
}

#[test]
fn bad_shapes_are_errors() {
    let shape = AttentionShape {
        n_head: 3,
        n_head_kv: 2,
        head_dim_k: 4,
        head_dim_v: 4,
        window: None,
        softcap: None,
    };
    let mut out = vec![0f32; 12];
    let k = vec![f16::ZERO; 8];
    let err = attention(&shape, &[0.0; 12], 0, &k, &k, &mut out).unwrap_err();
    assert!(
        matches!(
            err,
            AttentionError::Heads {
                n_head: 3,
                n_head_kv: 2
            }
        ),
        "{err}"
    );

    let shape = AttentionShape {
        n_head: 2,
        n_head_kv: 1,
        ..shape
    };
    let mut out = vec![0f32; 8];
    let err = attention(&shape, &[0.0; 8], 0, &k[..3], &k, &mut out).unwrap_err();
    assert!(
        err.to_string()
            .contains("the key cache holds 3 values, expected at least 4"),
        "{err}"
    );
    let err = attention(&shape, &[0.0; 8], 2, &k, &k, &mut out).unwrap_err();
    assert!(err.to_string().contains("expected at least 12"), "{err}");
    let err = attention(&shape, &[0.0; 7], 0, &k, &k, &mut out).unwrap_err();
    assert!(err.to_string().contains("a multiple of 8"), "{err}");
}
