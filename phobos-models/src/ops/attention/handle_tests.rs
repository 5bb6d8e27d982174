use proptest::prelude::*;

use super::super::tests::{Case, assert_close, case, reference};
use super::*;

fn launched(c: &Case, body: Body) -> Vec<f32> {
    let n_tokens = c.q.len() / (c.shape.n_head * c.shape.head_dim_k);
    let mut out = vec![f32::NAN; n_tokens * c.shape.n_head * c.shape.head_dim_v];
    attention_launch_with(&c.shape, &c.q, c.pos0, &c.k, &c.v, &mut out, body)
        .expect("valid shapes");
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The kernel's generated body and the hand-written body behind the
    /// same handle both equal the f64 definition within f32's bound: head
    /// dims that are not whole 64-wide chunks, value heads wider than one
    /// block of value columns (the grid's third axis), GQA, windows,
    /// softcaps, prompts and decode steps at any position.
    #[test]
    fn generated_and_hand_written_bodies_match_the_definition(
        n_head_kv in 1usize..3,
        group in 1usize..4,
        head_dim_k in prop::sample::select(vec![8usize, 40, 64, 72, 128]),
        head_dim_v in prop::sample::select(vec![8usize, 40, 64, 136, 300]),
        n_tokens in 1usize..5,
        pos0 in 0usize..90,
        window in prop::option::of(1usize..40),
        softcap in prop::option::of(5f32..50.0),
        seed in 0u64..1000,
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
        assert_close(&launched(&c, Body::Generated), &want, head_dim_k, "generated body");
        assert_close(&launched(&c, Body::Launch), &want, head_dim_k, "hand-written body");
    }
}

#[test]
fn gemma3_decode_and_prompt_shapes_match_the_definition() {
    // Gemma 3 270M: 4 query heads over 1 KV head of 256, a 512 window on
    // local layers, no softcap.
    for (pos0, n_tokens, window) in [(0, 7, None), (600, 1, Some(512)), (530, 3, Some(512))] {
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
        assert_close(&launched(&c, Body::Generated), &want, 256, "generated body");
    }
}

#[test]
fn bad_buffers_are_typed_errors_naming_the_part() {
    let shape = AttentionShape {
        n_head: 3,
        n_head_kv: 2,
        head_dim_k: 4,
        head_dim_v: 4,
        window: None,
        softcap: None,
    };
    let q = [0f32; 12];
    let kv = [f16::ZERO; 8];
    let mut out = [0f32; 12];
    let err = attention_launch(&shape, &q, 0, &kv, &kv, &mut out).unwrap_err();
    assert!(matches!(err, AttentionError::Heads { .. }), "{err}");

    let shape = AttentionShape {
        n_head: 2,
        n_head_kv: 1,
        ..shape
    };
    let q = [0f32; 8];
    let mut out = [0f32; 8];
    // One token at position 2 needs 3 cache rows; the cache holds 2.
    let err = attention_launch(&shape, &q, 2, &kv, &kv, &mut out).unwrap_err();
    assert!(err.to_string().contains("KV cache"), "{err}");
    let mut short = [0f32; 7];
    let err = attention_launch(&shape, &q, 0, &kv, &kv, &mut short).unwrap_err();
    assert!(err.to_string().contains("out"), "{err}");
}
