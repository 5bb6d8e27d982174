//! Inputs and comparisons the ops' tests share: a reproducible value
//! stream (no RNG crate, so a failing seed replays anywhere) and a
//! comparison within a stated number of ulps.

/// `len` values in `[-scale, scale)`, from an xorshift stream seeded by
/// `seed` (24 random bits per value).
pub(crate) fn values(seed: u64, len: usize, scale: f32) -> Vec<f32> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

/// `a` and `b` agree within `ulps` units of `2^-23` relative to the larger
/// magnitude, plus `abs` for results near zero; NaN only matches NaN.
pub(crate) fn close(a: f32, b: f32, ulps: f32, abs: f32) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    (a - b).abs() <= ulps * f32::EPSILON * a.abs().max(b.abs()) + abs
}

/// The bit patterns of `x`, for exact comparisons that print usefully.
pub(crate) fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_reproducible_and_in_range() {
        let a = values(7, 1000, 3.0);
        assert_eq!(a, values(7, 1000, 3.0));
        assert_ne!(a, values(8, 1000, 3.0));
        assert!(a.iter().all(|v| (-3.0..3.0).contains(v)));
        assert!(a.iter().any(|&v| v < -2.5) && a.iter().any(|&v| v > 2.5));
    }

    #[test]
    fn close_counts_ulps_of_the_larger_magnitude() {
        let one_ulp_up = f32::from_bits(1.0f32.to_bits() + 1);
        assert!(close(1.0, one_ulp_up, 1.0, 0.0));
        let two_ulps_up = f32::from_bits(1.0f32.to_bits() + 2);
        assert!(!close(1.0, two_ulps_up, 1.0, 0.0));
        assert!(close(0.0, 1e-9, 0.0, 1e-8));
        assert!(close(f32::NAN, f32::NAN, 0.0, 0.0));
        assert!(!close(f32::NAN, 1.0, 1e9, 1e9));
    }
}
