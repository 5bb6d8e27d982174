//! Comparing a kernel's output with a reference under a stated bound.

/// The unit roundoff of f32 (half an ulp of 1.0): the relative error of one
/// correctly rounded f32 operation.
pub const F32_UNIT_ROUNDOFF: f64 = 1.0 / (1u64 << 24) as f64;

/// The unit roundoff of f16.
pub const F16_UNIT_ROUNDOFF: f64 = 1.0 / (1u64 << 11) as f64;

/// The first element where `|got - want| > tolerance(i)`, described, or
/// `None` when every element is within its bound. Non-finite outputs fail.
pub fn first_mismatch(
    got: &[f64],
    want: &[f64],
    tolerance: impl Fn(usize) -> f64,
) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!(
            "length {} but the reference has {}",
            got.len(),
            want.len()
        ));
    }
    got.iter().zip(want).enumerate().find_map(|(i, (&g, &w))| {
        let bound = tolerance(i);
        let error = (g - w).abs();
        (!g.is_finite() || error > bound)
            .then(|| format!("element {i}: got {g}, want {w}, error {error:e} > bound {bound:e}"))
    })
}

/// Widens any element the examples use to f64 for comparison.
pub fn to_f64<T: Copy + Into<f64>>(values: &[T]) -> Vec<f64> {
    values.iter().map(|&v| v.into()).collect()
}

/// The largest `|got - want|`, comparing in f64.
pub fn max_abs_error(got: &[f32], want: &[f32]) -> f64 {
    got.iter()
        .zip(want)
        .map(|(&g, &w)| (f64::from(g) - f64::from(w)).abs())
        .fold(0.0, f64::max)
}

/// The largest `|got - want| / |want|` (elements where `want` is 0 count
/// their absolute error).
pub fn max_relative_error(got: &[f32], want: &[f32]) -> f64 {
    got.iter()
        .zip(want)
        .map(|(&g, &w)| {
            let error = (f64::from(g) - f64::from(w)).abs();
            if w == 0.0 {
                error
            } else {
                error / f64::from(w).abs()
            }
        })
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::first_mismatch;

    #[test]
    fn reports_the_first_element_over_its_bound() {
        assert_eq!(first_mismatch(&[1.0, 2.0], &[1.0, 2.0], |_| 0.0), None);
        let message = first_mismatch(&[1.0, 2.5], &[1.0, 2.0], |_| 0.1).unwrap();
        assert!(message.starts_with("element 1"), "{message}");
        assert!(first_mismatch(&[f64::NAN], &[0.0], |_| 1.0).is_some());
        assert!(first_mismatch(&[1.0], &[1.0, 2.0], |_| 1.0).is_some());
    }
}
