use proptest::prelude::*;

use super::super::tests::values;
use super::*;

/// The sequence in up to three launches through the state, with `body`:
/// the outputs and the final state.
fn launched(
    x: &[f32],
    weights: &[f32],
    kernel: usize,
    channels: usize,
    cuts: [usize; 4],
    body: Body,
) -> (Vec<f32>, Vec<f32>) {
    let mut state = values(99, conv_state_len(channels, kernel));
    let mut out = vec![f32::NAN; x.len()];
    for w in cuts.windows(2) {
        let (lo, hi) = (w[0] * channels, w[1] * channels);
        causal_conv1d_launch(
            &mut state,
            &x[lo..hi],
            weights,
            kernel,
            &mut out[lo..hi],
            body,
        )
        .expect("valid buffers");
    }
    (out, state)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The generated body equals the hand-written one bit for bit (outputs
    /// and state), over any split of the sequence, from a non-zero state,
    /// with channel counts that are not whole blocks and pieces shorter
    /// than the state.
    #[test]
    fn generated_body_equals_the_hand_written_one_bit_for_bit(
        kernel in 1usize..6,
        channels in prop::sample::select(vec![1usize, 7, 64, 65, 300]),
        n_tokens in 1usize..12,
        cut_a in 0usize..12,
        cut_b in 0usize..12,
        seed in 0u64..10_000,
    ) {
        let x = values(seed, n_tokens * channels);
        let weights = values(seed + 1, channels * kernel);
        let (a, b) = (cut_a.min(n_tokens), cut_b.min(n_tokens));
        let cuts = [0, a.min(b), a.max(b), n_tokens];
        let hand = launched(&x, &weights, kernel, channels, cuts, Body::Launch);
        let generated = launched(&x, &weights, kernel, channels, cuts, Body::Generated);
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        prop_assert_eq!(bits(&generated.0), bits(&hand.0));
        prop_assert_eq!(bits(&generated.1), bits(&hand.1));
        // And the handle's launch is the plain op.
        let mut state = values(99, conv_state_len(channels, kernel));
        let mut out = vec![0f32; x.len()];
        for w in cuts.windows(2) {
            let (lo, hi) = (w[0] * channels, w[1] * channels);
            causal_conv1d(&mut state, &x[lo..hi], &weights, kernel, &mut out[lo..hi]);
        }
        prop_assert_eq!(bits(&out), bits(&hand.0));
        prop_assert_eq!(bits(&state), bits(&hand.1));
    }
}

#[test]
fn a_buffer_of_the_wrong_length_is_an_error_naming_it() {
    let mut state = vec![0f32; 4];
    let mut out = vec![0f32; 6];
    let err = causal_conv1d_launch(
        &mut state,
        &[0.0; 6],
        &[0.0; 6],
        3,
        &mut out[1..],
        Body::Launch,
    )
    .unwrap_err();
    assert_eq!(err.op, "causal_conv1d (out)", "{err}");
    let err = causal_conv1d_launch(
        &mut state[1..],
        &[0.0; 6],
        &[0.0; 6],
        3,
        &mut out,
        Body::Launch,
    )
    .unwrap_err();
    assert_eq!(err.op, "causal_conv1d (state)", "{err}");
}
