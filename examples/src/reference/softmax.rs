//! Row-wise softmax.

/// Softmax over each row of a row-major `[rows, cols]` matrix.
pub fn softmax_rows(rows: usize, cols: usize, x: &[f32]) -> Vec<f32> {
    assert_eq!(
        x.len(),
        rows * cols,
        "softmax reference: x is not rows*cols"
    );
    let mut out = vec![0.0f32; rows * cols];
    for row in 0..rows {
        let line = &x[row * cols..(row + 1) * cols];
        let max = line
            .iter()
            .copied()
            .map(f64::from)
            .fold(f64::NEG_INFINITY, f64::max);
        let denominator: f64 = line.iter().map(|&v| (f64::from(v) - max).exp()).sum();
        for (col, &v) in line.iter().enumerate() {
            out[row * cols + col] = ((f64::from(v) - max).exp() / denominator) as f32;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn uniform_row_is_uniform() {
        let out = super::softmax_rows(1, 4, &[3.0; 4]);
        assert_eq!(out, vec![0.25; 4]);
    }

    #[test]
    fn two_values_by_hand() {
        let out = super::softmax_rows(1, 2, &[0.0, 2.0f32.ln()]);
        assert!((out[0] - 1.0 / 3.0).abs() < 1e-7 && (out[1] - 2.0 / 3.0).abs() < 1e-7);
    }
}
