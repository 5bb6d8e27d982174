//! Each mixer kernel's generated body against its hand-written host body
//! (the `@host_impl` contract, SPEC.md §11), over ragged shapes.
//!
//! The bounds below are in units of `EPS = 2^-23` relative to the larger
//! result, and `ulp(y) <= EPS |y|`. The host bodies use libm's `exp`
//! (within 1 ulp) and `ln`; the generated ones the host back end's `exp`
//! (2 ulp), `sigmoid` and `silu` (4 ulp of the correctly rounded value,
//! `phobos_rt::host::math`) and the same `ln`.

use proptest::prelude::*;

use super::*;
use crate::ops::test_data::{close, values};

const EPS: f32 = f32::EPSILON;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Both bodies sum the f32 squares in f64 (in different orders, each
    /// far inside half an f32 ulp of the exact sum), so the f32 means are
    /// equal or one ulp apart; the rest is the same f32 arithmetic, so each
    /// output is at most a couple of ulp away.
    #[test]
    fn l2_norm_generated_matches_the_host_body(
        rows in 1usize..5, width in 1usize..700, seed in any::<u64>(),
    ) {
        let x = values(seed, rows * width, 4.0);
        let (mut hand, mut generated) = (x.clone(), x.clone());
        l2_norm_with(&mut hand, width, 1e-6, Body::Launch).unwrap();
        l2_norm_with(&mut generated, width, 1e-6, Body::Generated).unwrap();
        let mut want = x.clone();
        l2_norm_rows(&mut want, width, 1e-6);
        prop_assert_eq!(&hand, &want, "the launch runs the engine's op");
        for (i, (&h, &g)) in hand.iter().zip(&generated).enumerate() {
            prop_assert!(close(h, g, 4.0, 0.0), "{}: {} vs {}", i, h, g);
        }
    }

    /// silu: the host's `x / (1 + e^-x)` is within 2 EPS of exact (exp's
    /// ulp, then two roundings, the first damped by `e / (1 + e) < 1`), the
    /// body's within 4.5; mul_silu adds one rounding on each side: 7.5 < 8.
    #[test]
    fn silus_generated_match_the_host_bodies(len in 1usize..3000, seed in any::<u64>()) {
        let x = values(seed, len, 30.0);
        let z = values(seed ^ 5, len, 30.0);
        let (mut hand, mut generated) = (x.clone(), x.clone());
        silu_in_place_with(&mut hand, Body::Launch).unwrap();
        silu_in_place_with(&mut generated, Body::Generated).unwrap();
        let want: Vec<f32> = x.iter().map(|&v| silu(v)).collect();
        prop_assert_eq!(&hand, &want, "the launch runs the engine's op");
        for (i, (&h, &g)) in hand.iter().zip(&generated).enumerate() {
            prop_assert!(close(h, g, 8.0, 0.0), "silu {}: {} vs {}", i, h, g);
        }
        let (mut hand, mut generated) = (x.clone(), x.clone());
        mul_silu_with(&mut hand, &z, Body::Launch).unwrap();
        mul_silu_with(&mut generated, &z, Body::Generated).unwrap();
        let want: Vec<f32> = x.iter().zip(&z).map(|(&o, &zv)| o * silu(zv)).collect();
        prop_assert_eq!(&hand, &want, "the launch runs the engine's op");
        for (i, (&h, &g)) in hand.iter().zip(&generated).enumerate() {
            prop_assert!(close(h, g, 8.0, 0.0), "mul_silu {}: {} vs {}", i, h, g);
        }
    }

    /// beta: sigmoid, as silu (host 2 EPS, body 4.5) within 8. g: the two
    /// `1 + e^x` are within 4.5 EPS of each other relatively (exp's 1 + 2.5
    /// damped by `e / (1 + e)`, and a rounding each), which `ln` turns into
    /// 4.5 EPS absolute; then `ln` (libm's within half an ulp, the generated
    /// body's `host::math::log_f32` within 1) and the product by `a` (a
    /// rounding per side) add at most 2.5 ulp of the result:
    /// `|a| EPS (4.5 + 3 |softplus|)`. Above 20 both are `x * a`, bit for
    /// bit.
    #[test]
    fn gates_generated_match_the_host_body(
        tokens in 1usize..6, heads in 1usize..300, seed in any::<u64>(),
    ) {
        let beta = values(seed, tokens * heads, 30.0);
        let alpha = values(seed ^ 3, tokens * heads, 25.0);
        let dt_bias = values(seed ^ 7, heads, 4.0);
        let a: Vec<f32> = values(seed ^ 11, heads, 8.0).iter().map(|v| -v.abs()).collect();
        let (mut beta_hand, mut g_hand) = (beta.clone(), alpha.clone());
        deltanet_gates_with(&mut beta_hand, &mut g_hand, &dt_bias, &a, Body::Launch).unwrap();
        let (mut beta_gen, mut g_gen) = (beta.clone(), alpha.clone());
        deltanet_gates_with(&mut beta_gen, &mut g_gen, &dt_bias, &a, Body::Generated).unwrap();
        let want_beta: Vec<f32> = beta.iter().map(|&b| sigmoid(b)).collect();
        prop_assert_eq!(&beta_hand, &want_beta, "the launch runs the engine's op");
        for (i, (&h, &g)) in beta_hand.iter().zip(&beta_gen).enumerate() {
            prop_assert!(close(h, g, 8.0, 0.0), "beta {}: {} vs {}", i, h, g);
        }
        for (i, ((&h, &g), &x)) in g_hand.iter().zip(&g_gen).zip(&alpha).enumerate() {
            let head = i % heads;
            let arg = x + dt_bias[head];
            let sp = softplus(arg);
            prop_assert_eq!(h.to_bits(), (sp * a[head]).to_bits(), "the launch runs the engine's op");
            if arg > 20.0 {
                prop_assert_eq!(h.to_bits(), g.to_bits(), "g {} (identity)", i);
            } else {
                let bound = a[head].abs() * EPS * (4.5 + 3.0 * sp.abs());
                prop_assert!((h - g).abs() <= bound, "g {}: {} vs {} (bound {})", i, h, g, bound);
            }
        }
    }
}

#[test]
fn softplus_switches_to_the_identity_above_20_in_both_bodies() {
    let alpha = [20.0f32, 20.5, 100.0, -100.0];
    for body in [Body::Launch, Body::Generated] {
        let (mut beta, mut g) = ([0.0f32; 4], alpha);
        deltanet_gates_with(&mut beta, &mut g, &[0.0], &[-2.0], body).unwrap();
        assert_eq!(beta, [0.5; 4], "{body:?}");
        // At 20 exactly the log form, which rounds to 20 in f32.
        assert_eq!(g, [-40.0, -41.0, -200.0, 0.0], "{body:?}");
    }
}

#[test]
fn a_short_buffer_is_an_error_naming_the_op_and_buffer() {
    let mut beta = vec![0.0f32; 6];
    let mut alpha = vec![0.0f32; 5];
    let err = deltanet_gates(&mut beta, &mut alpha, &[0.0; 3], &[1.0; 3]).unwrap_err();
    assert_eq!(err.op, "deltanet_gates (alpha)");
    let err = l2_norm(&mut beta, 4, 1e-6).unwrap_err();
    assert_eq!(err.op, "l2_norm");
    let err = mul_silu(&mut beta, &[1.0; 4]).unwrap_err();
    assert_eq!(err.op, "mul_silu");
}
