//! Layer normalisation and RMS normalisation over the last dim.

/// `(x - mean) / sqrt(var + eps) * gamma + beta` per row; `var` is the biased
/// (population) variance, as in PyTorch's `layer_norm`.
pub fn layernorm(
    rows: usize,
    cols: usize,
    x: &[f32],
    gamma: &[f32],
    beta: &[f32],
    eps: f32,
) -> Vec<f32> {
    assert_eq!(
        x.len(),
        rows * cols,
        "layernorm reference: x is not rows*cols"
    );
    assert_eq!(gamma.len(), cols, "layernorm reference: gamma is not cols");
    assert_eq!(beta.len(), cols, "layernorm reference: beta is not cols");
    let mut out = vec![0.0f32; rows * cols];
    for row in 0..rows {
        let line = &x[row * cols..(row + 1) * cols];
        let mean = line.iter().map(|&v| f64::from(v)).sum::<f64>() / cols as f64;
        let variance = line
            .iter()
            .map(|&v| (f64::from(v) - mean).powi(2))
            .sum::<f64>()
            / cols as f64;
        let inv_std = 1.0 / (variance + f64::from(eps)).sqrt();
        for col in 0..cols {
            let normed = (f64::from(line[col]) - mean) * inv_std;
            out[row * cols + col] = (normed * f64::from(gamma[col]) + f64::from(beta[col])) as f32;
        }
    }
    out
}

/// `x / sqrt(mean(x^2) + eps) * weight` per row.
pub fn rmsnorm(rows: usize, cols: usize, x: &[f32], weight: &[f32], eps: f32) -> Vec<f32> {
    assert_eq!(
        x.len(),
        rows * cols,
        "rmsnorm reference: x is not rows*cols"
    );
    assert_eq!(weight.len(), cols, "rmsnorm reference: weight is not cols");
    let mut out = vec![0.0f32; rows * cols];
    for row in 0..rows {
        let line = &x[row * cols..(row + 1) * cols];
        let mean_square = line.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / cols as f64;
        let inv_rms = 1.0 / (mean_square + f64::from(eps)).sqrt();
        for col in 0..cols {
            out[row * cols + col] =
                (f64::from(line[col]) * inv_rms * f64::from(weight[col])) as f32;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn layernorm_by_hand() {
        // mean 2, population variance 2/3 for [1, 2, 3]
        let out = super::layernorm(1, 3, &[1.0, 2.0, 3.0], &[1.0; 3], &[0.0; 3], 0.0);
        let s = (2.0f64 / 3.0).sqrt();
        let expected = [(-1.0 / s) as f32, 0.0, (1.0 / s) as f32];
        for (got, want) in out.iter().zip(expected) {
            assert!((got - want).abs() < 1e-6, "{got} vs {want}");
        }
    }

    #[test]
    fn rmsnorm_by_hand() {
        // mean square of [3, 4] is 12.5
        let out = super::rmsnorm(1, 2, &[3.0, 4.0], &[1.0, 2.0], 0.0);
        let r = 12.5f64.sqrt();
        assert!((out[0] - (3.0 / r) as f32).abs() < 1e-6);
        assert!((out[1] - (8.0 / r) as f32).abs() < 1e-6);
    }
}
