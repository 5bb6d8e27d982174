//! `out = alpha * x + y`.

/// Elementwise `alpha * x + y`; `x` and `y` must have the same length.
pub fn saxpy(alpha: f32, x: &[f32], y: &[f32]) -> Vec<f32> {
    assert_eq!(x.len(), y.len(), "saxpy reference: x and y lengths differ");
    x.iter().zip(y).map(|(&xi, &yi)| alpha * xi + yi).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn small_case_by_hand() {
        assert_eq!(super::saxpy(2.0, &[1.0, -1.0], &[0.5, 3.0]), vec![2.5, 1.0]);
    }
}
