//! Gated activations of the feed-forward block: `out = act(gate) * up`.

/// GELU, tanh approximation (ggml's `gelu` and Gemma's `gelu_pytorch_tanh`).
pub fn gelu_tanh(x: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * x * (1.0 + 0.044_715 * x * x)).tanh())
}

pub fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

/// `gate[i] = gelu(gate[i]) * up[i]`.
pub fn geglu_in_place(gate: &mut [f32], up: &[f32]) {
    for (g, &u) in gate.iter_mut().zip(up) {
        *g = gelu_tanh(*g) * u;
    }
}

/// `gate[i] = silu(gate[i]) * up[i]`.
pub fn swiglu_in_place(gate: &mut [f32], up: &[f32]) {
    for (g, &u) in gate.iter_mut().zip(up) {
        *g = silu(*g) * u;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn geglu_matches_f64(g in -20f32..20.0, u in -5f32..5.0) {
            let x = f64::from(g);
            let want = 0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x.powi(3))).tanh()) * f64::from(u);
            let mut got = [g];
            geglu_in_place(&mut got, &[u]);
            prop_assert!((f64::from(got[0]) - want).abs() <= 1e-5 * (1.0 + want.abs()));
        }

        #[test]
        fn swiglu_matches_f64(g in -20f32..20.0, u in -5f32..5.0) {
            let x = f64::from(g);
            let want = x / (1.0 + (-x).exp()) * f64::from(u);
            let mut got = [g];
            swiglu_in_place(&mut got, &[u]);
            prop_assert!((f64::from(got[0]) - want).abs() <= 1e-5 * (1.0 + want.abs()));
        }
    }
}
