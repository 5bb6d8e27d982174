//! RMSNorm over rows: `y = x / sqrt(mean(x^2) + eps) * w`.
//!
//! Gemma's `(1 + w)` is already folded into the weights by llama.cpp's
//! converter, so every architecture uses this one form.

/// Normalises each `w.len()`-wide row of `x` in place.
pub fn rms_norm_rows(x: &mut [f32], w: &[f32], eps: f32) {
    let width = w.len();
    if width == 0 {
        return;
    }
    for row in x.chunks_mut(width) {
        // ggml's rms_norm, operation for operation: each square rounded to
        // f32, summed in order in f64 (ggml_float), the mean narrowed to f32.
        let sum_sq: f64 = row.iter().map(|&v| f64::from(v * v)).sum();
        let mean = (sum_sq / width as f64) as f32;
        let scale = 1.0 / (mean + eps).sqrt();
        for (v, &g) in row.iter_mut().zip(w) {
            *v = *v * scale * g;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// ggml's statement of rms_norm followed by its `mul`, written out:
        /// f32 squares summed in order in f64, the mean narrowed to f32.
        #[test]
        fn is_ggml_bit_for_bit(width in 1usize..300, x in proptest::collection::vec(-10f32..10.0, 300), w in proptest::collection::vec(-2f32..2.0, 300)) {
            let (x, w) = (&x[..width], &w[..width]);
            let mut sum = 0f64;
            for &v in x {
                sum += f64::from(v * v);
            }
            let mean = (sum / width as f64) as f32;
            let scale = 1.0f32 / (mean + 1e-6).sqrt();
            let mut got = x.to_vec();
            rms_norm_rows(&mut got, w, 1e-6);
            for c in 0..width {
                prop_assert_eq!(got[c].to_bits(), (x[c] * scale * w[c]).to_bits());
            }
        }

        #[test]
        fn matches_f64_reference(width in 1usize..300, rows in 1usize..4, x in proptest::collection::vec(-10f32..10.0, 1200), w in proptest::collection::vec(-2f32..2.0, 300)) {
            let w = &w[..width];
            let mut got = x[..width * rows].to_vec();
            rms_norm_rows(&mut got, w, 1e-6);
            for r in 0..rows {
                let row = &x[r * width..(r + 1) * width];
                let ms = row.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / width as f64;
                let s = 1.0 / (ms + 1e-6).sqrt();
                for c in 0..width {
                    let want = f64::from(row[c]) * s * f64::from(w[c]);
                    let g = f64::from(got[r * width + c]);
                    // A few f32 roundings of a value of this magnitude.
                    prop_assert!((g - want).abs() <= 1e-5 * (1.0 + want.abs()), "{g} vs {want}");
                }
            }
        }
    }
}
