//! Seeded random inputs (SplitMix64), so examples need no RNG dependency and
//! every run of a test sees the same data for the same seed.

/// A small deterministic generator; not for cryptography.
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[low, high)`.
    pub fn uniform(&mut self, low: f32, high: f32) -> f32 {
        // 24 random mantissa bits give an exactly representable f32 in [0, 1).
        let unit = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        low + (high - low) * unit
    }

    /// `len` values uniform in `[low, high)`.
    pub fn vec(&mut self, len: usize, low: f32, high: f32) -> Vec<f32> {
        (0..len).map(|_| self.uniform(low, high)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::SplitMix64;

    #[test]
    fn same_seed_same_values_and_in_range() {
        let a = SplitMix64::new(7).vec(100, -2.0, 3.0);
        let b = SplitMix64::new(7).vec(100, -2.0, 3.0);
        assert_eq!(a, b);
        assert!(a.iter().all(|&v| (-2.0..3.0).contains(&v)));
        assert_ne!(a[0], a[1]);
    }
}
