//! The rotation against an f64 reference, and each RoPE kernel's generated
//! body against its hand-written host body (the `@host_impl` contract,
//! SPEC.md §11) over ragged shapes: both layouts, several heads and
//! tokens, `n_rot` below the head width, whole and partial blocks of pairs.

use super::*;
use crate::ops::test_data::{bits, values};
use proptest::prelude::*;

/// The engine's statement before the kernels: each token's heads rotated
/// pair by pair, then the whole row multiplied by the scale unless it is 1.
fn rotate_then_scale(
    style: RopeStyle,
    x: &mut [f32],
    head_dim: usize,
    cos_sin: &[f32],
    n_tokens: usize,
    scale: f32,
) {
    let half = cos_sin.len() / (2 * n_tokens);
    let width = x.len() / n_tokens;
    for (t, row) in x.chunks_mut(width).enumerate() {
        for head in row.chunks_mut(head_dim) {
            for i in 0..half {
                let (c, s) = (cos_sin[(t * half + i) * 2], cos_sin[(t * half + i) * 2 + 1]);
                let (a, b) = match style {
                    RopeStyle::Normal => (2 * i, 2 * i + 1),
                    RopeStyle::Neox => (i, i + half),
                };
                let (x0, x1) = (head[a], head[b]);
                head[a] = x0 * c - x1 * s;
                head[b] = x0 * s + x1 * c;
            }
        }
        if scale != 1.0 {
            row.iter_mut().for_each(|v| *v *= scale);
        }
    }
}

proptest! {
    #[test]
    fn matches_f64_reference(neox in any::<bool>(), heads in 1usize..4, half in 1usize..32, pos in 0usize..5000, x in proptest::collection::vec(-3f32..3.0, 256)) {
        let head_dim = half * 2;
        let style = if neox { RopeStyle::Neox } else { RopeStyle::Normal };
        let rope = Rope { style, n_rot: head_dim, freq_base: 10000.0, freq_scale: 1.0 };
        let input = &x[..heads * head_dim];
        let mut got = input.to_vec();
        rope.apply(&mut got, head_dim, pos);
        for h in 0..heads {
            for i in 0..half {
                let (a, b) = if neox { (i, i + half) } else { (2 * i, 2 * i + 1) };
                let theta = pos as f64 * 10000f64.powf(-2.0 * i as f64 / head_dim as f64);
                let (x0, x1) = (f64::from(input[h * head_dim + a]), f64::from(input[h * head_dim + b]));
                let want_a = x0 * theta.cos() - x1 * theta.sin();
                let want_b = x0 * theta.sin() + x1 * theta.cos();
                // The angle is accumulated in f32 (as ggml does): its
                // error grows with the position.
                let tol = 1e-5 + 3e-7 * pos as f64 * 6.0;
                prop_assert!((f64::from(got[h * head_dim + a]) - want_a).abs() <= tol);
                prop_assert!((f64::from(got[h * head_dim + b]) - want_b).abs() <= tol);
            }
        }
    }

    /// One product, one difference and one scale per element on every
    /// side, in the same order: bit-identical.
    #[test]
    fn generated_bodies_equal_the_host_body(
        neox in any::<bool>(),
        n_head in 1usize..4,
        half in 0usize..80,
        extra_pairs in 0usize..20,
        odd_tail in any::<bool>(),
        n_tokens in 1usize..4,
        pos0 in 0usize..5000,
        scale_pick in 0usize..3,
        seed in any::<u64>(),
    ) {
        let style = if neox { RopeStyle::Neox } else { RopeStyle::Normal };
        // Neox heads may be odd-width past the rotated dims.
        let head_dim = 2 * (half + extra_pairs) + usize::from(neox && odd_tail);
        prop_assume!(head_dim > 0);
        let rope = Rope { style, n_rot: 2 * half, freq_base: 10000.0, freq_scale: 0.5 };
        let scale = [1.0, 0.125, 0.3][scale_pick];
        let x = values(seed, n_tokens * n_head * head_dim, 4.0);
        let cos_sin = rope.angles_from(pos0, n_tokens);
        prop_assert_eq!(cos_sin.len(), n_tokens * half * 2);

        let mut want = x.clone();
        rotate_then_scale(style, &mut want, head_dim, &cos_sin, n_tokens, scale);
        let (mut hand, mut generated) = (x.clone(), x.clone());
        rope.rotate_with(&mut hand, head_dim, &cos_sin, scale, Body::Launch).unwrap();
        rope.rotate_with(&mut generated, head_dim, &cos_sin, scale, Body::Generated).unwrap();
        prop_assert_eq!(bits(&hand), bits(&want), "the launch runs the engine's statement");
        prop_assert_eq!(bits(&generated), bits(&want));
    }
}

#[test]
fn angles_of_consecutive_positions_are_each_positions_angles() {
    let rope = Rope {
        style: RopeStyle::Neox,
        n_rot: 6,
        freq_base: 1e6,
        freq_scale: 0.25,
    };
    let all = rope.angles_from(40, 3);
    for t in 0..3 {
        assert_eq!(&all[t * 6..(t + 1) * 6], &rope.angles(40 + t)[..]);
    }
}

#[test]
fn a_shape_the_kernels_cannot_rotate_is_an_error_naming_the_op() {
    let mut x = vec![1.0f32; 12];
    let wide = Rope {
        style: RopeStyle::Neox,
        n_rot: 8,
        freq_base: 10000.0,
        freq_scale: 1.0,
    };
    let cs = wide.angles(3);
    let err = wide.rotate(&mut x, 6, &cs, 1.0).unwrap_err();
    assert_eq!(err.op, "rope_neox");
    let odd = Rope {
        style: RopeStyle::Normal,
        n_rot: 2,
        ..wide
    };
    let err = odd.rotate(&mut x, 3, &odd.angles(3), 1.0).unwrap_err();
    assert_eq!(err.op, "rope_normal");
    // Angles for more tokens than `x` holds whole heads for.
    let cs = odd.angles_from(0, 5);
    let err = odd.rotate(&mut x, 4, &cs, 1.0).unwrap_err();
    assert_eq!(err.op, "rope_normal");
    assert_eq!(x, vec![1.0f32; 12], "nothing written");
}

proptest! {
    /// The angle table's launch runs the host op bit for bit; its generated
    /// body takes the same f32 angle chain, and its cos/sin (f64, rounded
    /// once) differ from libm's f32 ones by at most one rounding.
    #[test]
    fn angle_kernel_matches_the_host_table(
        half in 0usize..70,
        n_tokens in 1usize..5,
        pos0 in prop_oneof![0usize..64, 100_000usize..100_100],
        freq_base in prop_oneof![Just(10_000f32), Just(1_000_000f32), 100f32..1e6],
        freq_scale in prop_oneof![Just(1f32), 0.1f32..1.0],
    ) {
        let rope = Rope { style: RopeStyle::Neox, n_rot: 2 * half, freq_base, freq_scale };
        let host = rope.angles_from(pos0, n_tokens);
        let launched = rope.angles_launch(pos0, n_tokens).unwrap();
        prop_assert_eq!(bits(&launched), bits(&host));
        let generated = rope.angles_with(pos0, n_tokens, Body::Generated).unwrap();
        prop_assert_eq!(generated.len(), host.len());
        for (i, (&g, &h)) in generated.iter().zip(&host).enumerate() {
            let bound = f32::EPSILON * g.abs().max(h.abs());
            prop_assert!((g - h).abs() <= bound, "entry {}: generated {} host {}", i, g, h);
        }
    }
}

#[test]
fn angle_positions_past_i32_are_an_error() {
    let rope = Rope {
        style: RopeStyle::Normal,
        n_rot: 4,
        freq_base: 10_000.0,
        freq_scale: 1.0,
    };
    let err = rope.angles_launch(i32::MAX as usize, 2).unwrap_err();
    assert!(err.to_string().contains("rope_angles"), "{err}");
    assert_eq!(rope.angles_launch(7, 0).unwrap(), Vec::<f32>::new());
}
