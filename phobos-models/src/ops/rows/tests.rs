//! Each row kernel's generated body against its hand-written host body
//! (the `@host_impl` contract, SPEC.md §11), over ragged shapes.

use super::*;
use crate::ops::test_data::{close, values};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The body sums squares in f32 tiles, the host in f64 in order (ggml):
    /// each output is a few roundings of the same value.
    #[test]
    fn rms_norm_generated_matches_the_host_body(
        rows in 1usize..5, width in 1usize..700, seed in any::<u64>(),
    ) {
        let x = values(seed, rows * width, 4.0);
        let w = values(seed ^ 7, width, 2.0);
        let (mut hand, mut generated) = (x.clone(), x.clone());
        rms_norm_with(&mut hand, &w, 1e-6, Body::Launch).unwrap();
        rms_norm_with(&mut generated, &w, 1e-6, Body::Generated).unwrap();
        let mut want = x.clone();
        rms_norm_rows(&mut want, &w, 1e-6);
        prop_assert_eq!(&hand, &want, "the launch runs the engine's op");
        for (i, (&h, &g)) in hand.iter().zip(&generated).enumerate() {
            prop_assert!(close(h, g, 16.0, 1e-30), "{}: {} vs {}", i, h, g);
        }
    }

    /// Both round the GELU's argument and result to f16; the body's tanh
    /// is the host polynomial (within 4 ulp), so a result may land one f16
    /// step away where the exact value is near a rounding boundary.
    #[test]
    fn gated_generated_match_the_host_bodies(len in 1usize..3000, seed in any::<u64>()) {
        let gate = values(seed, len, 12.0);
        let up = values(seed ^ 3, len, 3.0);
        for (act, ulps) in [(Gate::Gelu, 2.0 * 2f32.powi(13)), (Gate::Silu, 16.0)] {
            let (mut hand, mut generated) = (gate.clone(), gate.clone());
            gated_with(&mut hand, &up, act, Body::Launch).unwrap();
            gated_with(&mut generated, &up, act, Body::Generated).unwrap();
            let mut want = gate.clone();
            match act {
                Gate::Gelu => geglu_in_place(&mut want, &up),
                Gate::Silu => swiglu_in_place(&mut want, &up),
            }
            prop_assert_eq!(&hand, &want, "the launch runs the engine's op");
            for (i, (&h, &g)) in hand.iter().zip(&generated).enumerate() {
                // ulps of f32 epsilon; GELU's f16 step is 2^13 of them.
                prop_assert!(close(h, g, ulps, 1e-6), "{:?} {}: {} vs {}", act, i, h, g);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// One rounding per element on both sides: bit-identical.
    #[test]
    fn adds_generated_equal_the_host_bodies(rows in 1usize..5, width in 1usize..700, seed in any::<u64>()) {
        let x = values(seed, rows * width, 5.0);
        let y = values(seed ^ 9, rows * width, 5.0);
        let bias = values(seed ^ 11, width, 5.0);
        let (mut hand, mut generated) = (x.clone(), x.clone());
        add_with(&mut hand, &y, Body::Launch).unwrap();
        add_with(&mut generated, &y, Body::Generated).unwrap();
        let want: Vec<f32> = x.iter().zip(&y).map(|(a, b)| a + b).collect();
        prop_assert_eq!(&hand, &want);
        prop_assert_eq!(&generated, &want);
        let (mut hand, mut generated) = (x.clone(), x.clone());
        add_bias_with(&mut hand, &bias, Body::Launch).unwrap();
        add_bias_with(&mut generated, &bias, Body::Generated).unwrap();
        let want: Vec<f32> = x.iter().enumerate().map(|(i, a)| a + bias[i % width]).collect();
        prop_assert_eq!(&hand, &want);
        prop_assert_eq!(&generated, &want);
    }
}

#[test]
fn ggml_edges_of_geglu_hold_in_the_generated_body() {
    let gate = [-10.0f32, -11.0, 10.0, 12.5, f32::NAN, 0.0];
    let up = [f32::NAN, -2.0, 3.0, -1.0, 1.0, 5.0];
    let mut generated = gate;
    gated_with(&mut generated, &up, Gate::Gelu, Body::Generated).unwrap();
    let mut hand = gate;
    geglu_in_place(&mut hand, &up);
    for (g, h) in generated.iter().zip(&hand) {
        assert!(
            g.to_bits() == h.to_bits() || (g.is_nan() && h.is_nan()),
            "{g} vs {h}"
        );
    }
}

#[test]
fn a_buffer_of_partial_rows_is_an_error_naming_the_op() {
    let mut x = vec![1.0f32; 10];
    let err = rms_norm(&mut x, &[1.0; 4], 1e-6).unwrap_err();
    assert_eq!(err.op, "rms_norm");
    let mut gate = vec![1.0f32; 5];
    let err = swiglu(&mut gate, &[1.0; 4]).unwrap_err();
    assert_eq!(err.op, "swiglu");
    let err = softmax(&mut gate, 4).unwrap_err();
    assert_eq!(err.op, "softmax");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The body's exp is the host polynomial (within 2 ulp of libm's) and
    /// its sum runs in another order (both in f64): each probability is a
    /// few roundings of the same value. Masked experts (-inf), including
    /// whole rows of them, stay bit for bit.
    #[test]
    fn softmax_generated_matches_the_host_body(
        rows in 1usize..6, width in 1usize..700, masked_every in 0usize..5, seed in any::<u64>(),
    ) {
        let mut x = values(seed, rows * width, 30.0);
        for (i, v) in x.iter_mut().enumerate() {
            // Row 0 entirely masked when masking is on; others every few.
            if masked_every > 0 && (i < width || i % (masked_every + 1) == 0) {
                *v = f32::NEG_INFINITY;
            }
        }
        let (mut hand, mut generated) = (x.clone(), x.clone());
        softmax_with(&mut hand, width, Body::Launch).unwrap();
        softmax_with(&mut generated, width, Body::Generated).unwrap();
        let mut want = x.clone();
        want.chunks_mut(width).for_each(softmax_in_place);
        prop_assert_eq!(&hand, &want, "the launch runs the engine's op");
        for (i, (&h, &g)) in hand.iter().zip(&generated).enumerate() {
            if h == f32::NEG_INFINITY || h == 0.0 {
                prop_assert_eq!(h.to_bits(), g.to_bits(), "{}", i);
            } else {
                prop_assert!(close(h, g, 16.0, 0.0), "{}: {} vs {}", i, h, g);
            }
        }
    }
}

#[test]
fn softmax_leaves_an_all_masked_row_masked_in_both_bodies() {
    let x = [f32::NEG_INFINITY; 5];
    for body in [Body::Launch, Body::Generated] {
        let mut got = x;
        softmax_with(&mut got, 5, body).unwrap();
        assert!(
            got.iter().all(|v| *v == f32::NEG_INFINITY),
            "{body:?}: {got:?}"
        );
    }
}

fn q8_0_of(rows: &[f32], width: usize) -> Vec<u8> {
    let q = QTensor::<Q8_0>::quantize(rows, [rows.len() / width, width]).unwrap();
    q.bytes().to_vec()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// The fused kernel against its unfused composition, bit for bit: each
    /// body's RMSNorm, then the q8_0 quantizer.
    #[test]
    fn rms_norm_q8_0_equals_norm_then_quantize(
        rows in 1usize..5, blocks in 1usize..24, seed in any::<u64>(),
    ) {
        let width = 32 * blocks;
        let x = values(seed, rows * width, 4.0);
        let w = values(seed ^ 5, width, 2.0);
        for body in [Body::Launch, Body::Generated] {
            let fused = rms_norm_q8_0_with(&x, &w, 1e-6, body).unwrap();
            let mut normed = x.clone();
            rms_norm_with(&mut normed, &w, 1e-6, body).unwrap();
            prop_assert_eq!(fused.bytes(), &q8_0_of(&normed, width)[..], "{:?}", body);
        }
    }
}

#[test]
fn rms_norm_q8_0_needs_whole_blocks_and_names_the_op() {
    let err = rms_norm_q8_0_with(&[1.0; 40], &[1.0; 20], 1e-6, Body::Launch).unwrap_err();
    assert_eq!(err.op, "rms_norm_q8_0");
}
