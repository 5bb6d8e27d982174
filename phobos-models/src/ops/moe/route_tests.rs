use proptest::prelude::*;

use super::*;
use crate::ops::softmax::softmax_in_place;

/// Probability rows with ties: logits drawn from a few levels, softmaxed.
fn probs(rows: usize, n_expert: usize, levels: u32, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut logits: Vec<f32> = (0..rows * n_expert)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % u64::from(levels.max(1))) as f32 * 0.75 - 3.0
        })
        .collect();
    for row in logits.chunks_mut(n_expert) {
        softmax_in_place(row);
    }
    logits
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The generated body equals the engine's routing bit for bit (ids
    /// and weights), with ties among probabilities, expert counts that are
    /// not whole blocks, every k up to all experts, with and without
    /// renormalising and scaling.
    #[test]
    fn generated_body_equals_the_engine_routing(
        rows in 1usize..5,
        n_expert in prop::sample::select(vec![1usize, 3, 8, 60, 64, 65, 128, 300]),
        k in 1usize..10,
        levels in 1u32..40,
        normalize: bool,
        scale in prop::sample::select(vec![1.0f32, 2.5, 0.125]),
        seed in 0u64..10_000,
    ) {
        let p = probs(rows, n_expert, levels, seed);
        let routing = Routing { n_expert_used: k, normalize, scale };
        let want: Vec<Vec<(usize, f32)>> =
            p.chunks(n_expert).map(|row| route_probs(row, &routing)).collect();
        let bits = |rows: &[Vec<(usize, f32)>]| -> Vec<(usize, u32)> {
            rows.iter().flatten().map(|&(e, w)| (e, w.to_bits())).collect()
        };
        for body in [Body::Launch, Body::Generated] {
            let got = route_rows(&p, n_expert, &routing, body).expect("valid rows");
            prop_assert_eq!(bits(&got), bits(&want), "{:?}", body);
        }
    }
}

#[test]
fn a_partial_row_is_an_error_naming_the_op() {
    let routing = Routing {
        n_expert_used: 2,
        normalize: true,
        scale: 1.0,
    };
    let err = route_rows(&[0.5; 7], 4, &routing, Body::Launch).unwrap_err();
    assert_eq!(err.op, "route", "{err}");
}
