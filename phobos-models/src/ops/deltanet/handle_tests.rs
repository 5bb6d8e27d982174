use proptest::prelude::*;

use super::super::l2_norm_rows;
use super::super::tests::{reference, values};
use super::*;

struct Case {
    shape: DeltaNetShape,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    g: Vec<f32>,
    beta: Vec<f32>,
}

fn case(n_k: usize, group: usize, d: usize, n_tokens: usize, seed: u64) -> Case {
    let shape = DeltaNetShape {
        n_k_heads: n_k,
        n_v_heads: n_k * group,
        head_dim: d,
    };
    let n_v = shape.n_v_heads;
    let mut q = values(seed, n_tokens * n_k * d, -1.0, 1.0);
    let mut k = values(seed + 1, n_tokens * n_k * d, -1.0, 1.0);
    l2_norm_rows(&mut q, d, 1e-6);
    l2_norm_rows(&mut k, d, 1e-6);
    Case {
        shape,
        q,
        k,
        v: values(seed + 2, n_tokens * n_v * d, -2.0, 2.0),
        g: values(seed + 3, n_tokens * n_v, -3.0, 0.0),
        beta: values(seed + 4, n_tokens * n_v, 0.0, 1.0),
    }
}

/// The tokens in two launches (`cut` tokens, then the rest), through the
/// state, with `body`.
fn launched(c: &Case, cut: usize, body: Body) -> Vec<f32> {
    let (d, n_k, n_v) = (c.shape.head_dim, c.shape.n_k_heads, c.shape.n_v_heads);
    let (kd, vd) = (n_k * d, n_v * d);
    let mut state = vec![0f32; c.shape.state_len()];
    let mut out = vec![f32::NAN; c.v.len()];
    let (out_a, out_b) = out.split_at_mut(cut * vd);
    for (range_k, range_v, range_g, piece) in [
        (0..cut * kd, 0..cut * vd, 0..cut * n_v, out_a),
        (
            cut * kd..c.q.len(),
            cut * vd..c.v.len(),
            cut * n_v..c.g.len(),
            out_b,
        ),
    ] {
        gated_delta_rule_launch(
            &c.shape,
            &c.q[range_k.clone()],
            &c.k[range_k],
            &c.v[range_v],
            &c.g[range_g.clone()],
            &c.beta[range_g],
            &mut state,
            piece,
            body,
        )
        .expect("valid buffers");
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Both bodies behind the handle equal the f64 recurrence within f32's
    /// bound, run whole or in two pieces through the state: head widths
    /// that are not whole blocks of rows or keys, and key heads tiled
    /// over value heads.
    #[test]
    fn generated_and_hand_written_bodies_match_the_definition(
        n_k in 1usize..3,
        group in 1usize..3,
        d in prop::sample::select(vec![1usize, 5, 16, 33, 70, 128, 130]),
        n_tokens in 1usize..7,
        cut in 0usize..7,
        seed in 0u64..10_000,
    ) {
        let c = case(n_k, group, d, n_tokens, seed);
        let want = reference(&c.shape, &c.q, &c.k, &c.v, &c.g, &c.beta, n_tokens);
        let cut = cut.min(n_tokens);
        // Unit keys keep the state bounded by the values (|v| <= 2, d
        // terms per sum): f32 rounding over a few steps.
        let tol = 1e-5 * (1.0 + d as f64);
        for body in [Body::Generated, Body::Launch] {
            let got = launched(&c, cut, body);
            for (i, (gv, r)) in got.iter().zip(&want).enumerate() {
                prop_assert!((f64::from(*gv) - r).abs() <= tol, "{body:?} output {i}: {gv} vs {r}");
            }
        }
    }
}

#[test]
fn a_buffer_of_the_wrong_length_is_an_error_naming_it() {
    let c = case(1, 2, 4, 3, 1);
    let mut state = vec![0f32; c.shape.state_len()];
    let mut out = vec![0f32; c.v.len()];
    let err = gated_delta_rule_launch(
        &c.shape,
        &c.q,
        &c.k,
        &c.v,
        &c.g[1..],
        &c.beta,
        &mut state,
        &mut out,
        Body::Launch,
    )
    .unwrap_err();
    assert_eq!(err.op, "gated_delta_rule (g)", "{err}");
    let err = gated_delta_rule_launch(
        &c.shape,
        &c.q,
        &c.k,
        &c.v,
        &c.g,
        &c.beta,
        &mut state[1..],
        &mut out,
        Body::Launch,
    )
    .unwrap_err();
    assert_eq!(err.op, "gated_delta_rule (state)", "{err}");
}
