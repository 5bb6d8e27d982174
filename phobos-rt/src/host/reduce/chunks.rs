//! A whole-tile `sum` fed chunk by chunk: generated code for `sum(tree)`
//! of an elementwise tree computes [`SUM_CHUNK`] elements at a time into a
//! fixed array (kept in vector registers once the loop is unrolled) and
//! adds them here, so the tree's tile is never written to memory. On Zen 1
//! that store was the bound of a layernorm's variance pass (one 256-bit
//! store is two cycles there).
//!
//! The result has the bits [`super::sum`] gives for the same elements in
//! the same order: the same partials (element `i` into partial
//! `i % WIDE_LANES` for a long tile, `i % LANES` for a short one), added in
//! the same order and folded the same way, so fusing `sum(a * b)` changes
//! no result.

use super::{LANES, WIDE_LANES, add_wide_rest, fold_lanes, sum_wide_partials};
use crate::{Element, Num};

/// Elements per full chunk of [`SumChunks::add_chunk`].
pub const SUM_CHUNK: usize = WIDE_LANES;

/// The partials of a sum of `len` elements, fed in order: full chunks of
/// [`SUM_CHUNK`] with [`SumChunks::add_chunk`], then the rest (shorter than
/// a chunk) with [`SumChunks::add_rest`].
pub struct SumChunks<T: Num> {
    /// `sum_slice` takes `sum_wide` from this length on.
    wide: bool,
    partials: [T::Sum; WIDE_LANES],
    narrow: [T::Sum; LANES],
}

impl<T: Num> SumChunks<T> {
    /// For a sum of `len` elements in all.
    #[inline(always)]
    pub fn new(len: usize) -> Self {
        SumChunks {
            wide: len >= 4 * WIDE_LANES,
            partials: [T::Sum::ZERO; WIDE_LANES],
            narrow: [T::Sum::ZERO; LANES],
        }
    }

    /// The next [`SUM_CHUNK`] elements.
    #[inline(always)]
    pub fn add_chunk(&mut self, values: &[T; SUM_CHUNK]) {
        if self.wide {
            // A new array per chunk, as in `sum_wide` (in place, the
            // partials went through the stack).
            let partials = self.partials;
            self.partials = std::array::from_fn(|i| Num::add(partials[i], values[i].to_sum()));
        } else {
            for part in values.as_chunks::<LANES>().0 {
                let narrow = self.narrow;
                self.narrow = std::array::from_fn(|i| Num::add(narrow[i], part[i].to_sum()));
            }
        }
    }

    /// The last elements, fewer than [`SUM_CHUNK`], after every full chunk.
    #[inline(always)]
    pub fn add_rest(&mut self, values: &[T]) {
        if self.wide {
            self.partials = add_wide_rest(self.partials, values);
        } else {
            // Element `i` of the whole sum goes to partial `i % LANES`, and
            // the rest starts at a multiple of `SUM_CHUNK`.
            for (i, &x) in values.iter().enumerate() {
                let p = &mut self.narrow[i % LANES];
                *p = Num::add(*p, x.to_sum());
            }
        }
    }

    /// The sum, rounded to `T` as [`super::sum`] rounds it.
    #[inline(always)]
    pub fn finish(self) -> T {
        let sum = if self.wide {
            sum_wide_partials(&self.partials)
        } else {
            fold_lanes(&self.narrow, T::Sum::ZERO, Num::add)
        };
        T::from_sum(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{Tile, sum};
    use half::f16;
    use proptest::prelude::*;

    fn chunked<T: Num>(values: &[T]) -> T {
        let mut s = SumChunks::<T>::new(values.len());
        let (full, rest) = values.as_chunks::<SUM_CHUNK>();
        for chunk in full {
            s.add_chunk(chunk);
        }
        s.add_rest(rest);
        s.finish()
    }

    fn whole<T: Num>(values: &[T]) -> T {
        let tile = Tile::from_vec(&[values.len()], values.to_vec()).expect("a 1-d tile");
        sum(&tile)
    }

    /// Values whose sums round differently in different orders, with both
    /// zeros (`0 + -0` is `+0`, so the first add matters) and infinities.
    fn float() -> impl Strategy<Value = f32> {
        prop_oneof![
            Just(0.0f32),
            Just(-0.0f32),
            Just(f32::INFINITY),
            (-30i32..30).prop_map(|e| 2f32.powi(e)),
            -1e6f32..1e6,
            any::<f32>().prop_filter("finite", |v| v.is_finite()),
        ]
    }

    proptest! {
        // Lengths around both thresholds: one chunk, and `sum_wide`'s 256.
        #[test]
        fn f32_sums_have_sum_bits(values in prop::collection::vec(float(), 0..700)) {
            prop_assert_eq!(chunked(&values).to_bits(), whole(&values).to_bits());
        }

        #[test]
        fn f16_sums_round_once_as_sum_does(values in prop::collection::vec(-300f32..300.0, 0..400)) {
            let values: Vec<f16> = values.into_iter().map(f16::from_f32).collect();
            prop_assert_eq!(chunked(&values).to_bits(), whole(&values).to_bits());
        }

        #[test]
        fn integer_sums_wrap_as_sum_does(values in prop::collection::vec(any::<i32>(), 0..400)) {
            prop_assert_eq!(chunked(&values), whole(&values));
        }
    }

    #[test]
    fn every_length_up_to_three_wide_chunks_matches() {
        // Terms of very different sizes, so a changed order shows in the bits.
        let values: Vec<f32> = (0..3 * 4 * SUM_CHUNK)
            .map(|i| (1.0 + i as f32 * 0.37).powi(3) * if i % 3 == 0 { -1.0 } else { 1.0 })
            .collect();
        for len in 0..values.len() {
            let part = &values[..len];
            assert_eq!(
                chunked(part).to_bits(),
                whole(part).to_bits(),
                "length {len}"
            );
        }
    }
}
