//! Gated activations of the feed-forward block: `out = act(gate) * up`.

use std::sync::OnceLock;

use half::f16;
use half::slice::HalfFloatSliceExt;

/// GELU, tanh approximation (ggml's `gelu` and Gemma's `gelu_pytorch_tanh`).
pub fn gelu_tanh(x: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * x * (1.0 + 0.044_715 * x * x)).tanh())
}

pub fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

/// `gate[i] = gelu(gate[i]) * up[i]` with ggml's CPU numerics, which the
/// engine must reproduce: the argument rounded to f16 and looked up in a
/// table of [`gelu_tanh`] rounded to f16, except below -10 (0) and from 10
/// up (the identity). Besides matching llama.cpp's logits, the lookup is
/// several times cheaper than `tanhf` (GeGLU's libm calls were ~6% of
/// Gemma's decode).
pub fn geglu_in_place(gate: &mut [f32], up: &[f32]) {
    const CHUNK: usize = 256;
    let table = gelu_f16_table();
    let mut halves = [f16::ZERO; CHUNK];
    for (gates, ups) in gate.chunks_mut(CHUNK).zip(up.chunks(CHUNK)) {
        let n = gates.len().min(ups.len());
        // F16C (or AVX-512) where the CPU has it; round to nearest even
        // either way, as ggml's conversion does.
        halves[..n].convert_from_f32_slice(&gates[..n]);
        for ((g, &u), h) in gates.iter_mut().zip(ups).zip(&halves) {
            *g = if *g <= -10.0 {
                0.0
            } else if *g >= 10.0 {
                *g * u
            } else {
                table[usize::from(h.to_bits())] * u
            };
        }
    }
}

/// [`gelu_tanh`] of every f16 value, rounded to f16 and widened back.
fn gelu_f16_table() -> &'static [f32] {
    static TABLE: OnceLock<Vec<f32>> = OnceLock::new();
    TABLE.get_or_init(|| {
        (0..=u16::MAX)
            .map(|bits| f16::from_f32(gelu_tanh(f16::from_bits(bits).to_f32())).to_f32())
            .collect()
    })
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
            // Two f16 roundings (argument and value, 2^-11 relative each)
            // and GELU's slope, at most ~1.13 in magnitude: a relative
            // error under 2^-11 * (1 + 1.13) + 2^-11 of |x * u|, plus the
            // f16's subnormal spacing (2^-24, twice) near zero.
            let bound = 3.2 * 2f64.powi(-11) * (x.abs() * f64::from(u).abs())
                + 2f64.powi(-23) * (1.0 + f64::from(u).abs());
            prop_assert!((f64::from(got[0]) - want).abs() <= bound, "got {} want {} bound {}", got[0], want, bound);
        }

        #[test]
        fn geglu_is_the_f16_table_form(g in -20f32..20.0, u in -5f32..5.0, len in 1usize..600) {
            // ggml's statement, one element at a time, with half's scalar
            // conversions: the slice path must round the same way.
            let gates = vec![g; len];
            let mut got = gates.clone();
            geglu_in_place(&mut got, &vec![u; len]);
            let want = if g <= -10.0 {
                0.0
            } else if g >= 10.0 {
                g * u
            } else {
                f16::from_f32(gelu_tanh(f16::from_f32(g).to_f32())).to_f32() * u
            };
            for value in got {
                prop_assert_eq!(value.to_bits(), want.to_bits());
            }
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
