//! Reductions: over the last dim (`rowsum rowmax rowmin`) and over the whole
//! tile (`sum max min`). Sums of `f16`/`bf16` accumulate in `f32` and round
//! once at the end. An empty reduction gives the identity (0, `LOWEST` for
//! max, `HIGHEST` for min).
//!
//! Every reduction runs [`LANES`] partial results side by side (element `i`
//! goes into partial `i % LANES`), then combines them as a tree: the
//! partials are independent, so the loop vectorizes instead of waiting on
//! one accumulator. Integer sums wrap and max/min are order-free, so those
//! are exact; a float sum is the same sum rounded in another order
//! (SPEC.md §10: the error bound of any order, `(n - 1) u sum |x|`, holds).

use super::loaded::TileData;
use super::tile::{Tile, TileShape};
use crate::{Element, Error, Num, Result};

/// Partial results a reduction keeps side by side.
pub const LANES: usize = 8;

mod chunks;
pub use chunks::{SUM_CHUNK, SumChunks};

/// `step` folded over `values` in [`LANES`] interleaved partials from
/// `init`, then the partials combined pairwise (`0+4, 1+5, ..`, then
/// `0+2, 1+3`, then `0+1`), also with `step`.
#[inline(always)]
fn fold_lanes<A: Copy>(values: &[A], init: A, step: impl Fn(A, A) -> A) -> A {
    let mut partials = [init; LANES];
    let (chunks, rest) = values.as_chunks::<LANES>();
    for chunk in chunks {
        for (p, &x) in partials.iter_mut().zip(chunk) {
            *p = step(*p, x);
        }
    }
    for (p, &x) in partials.iter_mut().zip(rest) {
        *p = step(*p, x);
    }
    let mut width = LANES / 2;
    while width > 0 {
        for i in 0..width {
            partials[i] = step(partials[i], partials[i + width]);
        }
        width /= 2;
    }
    partials[0]
}

/// Sum in the accumulator type `T::Sum` (see [`fold_lanes`]); a long
/// slice in [`WIDE_LANES`] partials instead ([`sum_wide`]).
#[inline(always)]
fn sum_slice<T: Num>(values: &[T]) -> T::Sum {
    if values.len() >= 4 * WIDE_LANES {
        return sum_wide(values);
    }
    let mut partials = [T::Sum::ZERO; LANES];
    let (chunks, rest) = values.as_chunks::<LANES>();
    for chunk in chunks {
        for (p, &x) in partials.iter_mut().zip(chunk) {
            *p = Num::add(*p, x.to_sum());
        }
    }
    for (p, &x) in partials.iter_mut().zip(rest) {
        *p = Num::add(*p, x.to_sum());
    }
    fold_lanes(&partials, T::Sum::ZERO, Num::add)
}

/// One reduction over the last dim. The ops are types, not function
/// values, so `reduce_rows::<Op>` calls `Op::reduce` directly and its loop
/// is inlined into the generated launch body (compiled for that body's
/// SIMD level). Passed as a function value, `max_slice` ran behind an
/// out-of-line `Fn::call` shim compiled for the baseline instead: SSE2
/// with no AVX2, a fifth of softmax's time on a Zen 2 CPU.
trait RowOp<T> {
    const NAME: &'static str;
    /// The result of an empty row.
    fn empty() -> T;
    fn reduce(row: &[T]) -> T;
}

struct RowSum;
struct RowMax;
struct RowMin;

impl<T: Num> RowOp<T> for RowSum {
    const NAME: &'static str = "rowsum";
    #[inline(always)]
    fn empty() -> T {
        T::from_sum(T::Sum::ZERO)
    }
    #[inline(always)]
    fn reduce(row: &[T]) -> T {
        T::from_sum(sum_slice(row))
    }
}

impl<T: Element> RowOp<T> for RowMax {
    const NAME: &'static str = "rowmax";
    #[inline(always)]
    fn empty() -> T {
        T::LOWEST
    }
    #[inline(always)]
    fn reduce(row: &[T]) -> T {
        max_slice(row)
    }
}

impl<T: Element> RowOp<T> for RowMin {
    const NAME: &'static str = "rowmin";
    #[inline(always)]
    fn empty() -> T {
        T::HIGHEST
    }
    #[inline(always)]
    fn reduce(row: &[T]) -> T {
        min_slice(row)
    }
}

/// Reduces the last dim with `Op`, keeping it as extent 1.
#[inline(always)]
fn reduce_rows<T: Element, Op: RowOp<T>>(t: &(impl TileData<T> + ?Sized)) -> Result<Tile<T>> {
    let Some((&row_len, outer)) = t.shape().split_last() else {
        return Err(Error::BadShape {
            op: Op::NAME,
            shape: Vec::new(),
            expected: "a tile of rank >= 1",
        });
    };
    let mut dims = t.shape().to_vec();
    if let Some(last) = dims.last_mut() {
        *last = 1;
    }
    let shape = TileShape::new(&dims)?;
    let rows: usize = outer.iter().product();
    let data = if row_len == 0 {
        super::arena::filled(rows, Op::empty())
    } else {
        let mut data = super::arena::take(rows);
        // A `for` loop, not `extend(map(..))`: inlined into a generated
        // launch body, the row reduction is then compiled for the body's
        // SIMD level; through std's `fold` (compiled without the target
        // features) it was a call per row at SSE width. (Summing two rows
        // at once, each in its own order, was faster alone but made
        // softmax slower; not kept.)
        for row in t.as_slice().chunks_exact(row_len) {
            data.push(Op::reduce(row));
        }
        data
    };
    Ok(Tile::from_parts(shape, data))
}

/// Sum over the last dim: `[.., N] -> [.., 1]`.
#[inline(always)]
pub fn rowsum<T: Num, S: TileData<T> + ?Sized>(t: &S) -> Result<Tile<T>> {
    reduce_rows::<T, RowSum>(t)
}

/// Max over the last dim: `[.., N] -> [.., 1]`.
#[inline(always)]
pub fn rowmax<T: Element, S: TileData<T> + ?Sized>(t: &S) -> Result<Tile<T>> {
    reduce_rows::<T, RowMax>(t)
}

/// Min over the last dim: `[.., N] -> [.., 1]`.
#[inline(always)]
pub fn rowmin<T: Element, S: TileData<T> + ?Sized>(t: &S) -> Result<Tile<T>> {
    reduce_rows::<T, RowMin>(t)
}

/// `max` of the running partials: `maximum` (a NaN loses to a number)
/// for a left operand that is never NaN, which a partial never is (it
/// starts at `LOWEST` and takes a value only when that value compares
/// greater). `maximum` itself also tests its left operand for NaN, which
/// the compiler cannot drop, and that test cost a compare, an `or` and a
/// blend per vector where this is one `vmaxps` (a tenth of softmax's time
/// on Zen 2 went to this loop).
#[inline(always)]
fn max_step<T: Element>(partial: T, x: T) -> T {
    if x > partial { x } else { partial }
}

/// `minimum` of the running partials, as [`max_step`].
#[inline(always)]
fn min_step<T: Element>(partial: T, x: T) -> T {
    if x < partial { x } else { partial }
}

/// Partials of a long max/min: [`LANES`] of them are one chain of
/// dependent vector max ops, bound by their latency; this many are several
/// independent chains.
const WIDE_LANES: usize = 64;

/// `step` folded over `values` like [`fold_lanes`], with the same result.
/// A max or min is exact in any order; only which of two equal values
/// wins may differ, and two equal values have different bits only as `+0`
/// and `-0`. So a long row is folded over [`WIDE_LANES`] partials, and
/// folded again in [`fold_lanes`]' order when its result compares equal
/// to zero, keeping the bits (and the sign of a zero) the same as before.
#[inline(always)]
fn fold_wide<T: Element>(values: &[T], init: T, step: impl Fn(T, T) -> T + Copy) -> T {
    if values.len() < 4 * WIDE_LANES {
        return fold_lanes(values, init, step);
    }
    let mut partials = [init; WIDE_LANES];
    let (chunks, rest) = values.as_chunks::<WIDE_LANES>();
    for chunk in chunks {
        // A whole new array per chunk, not `*p = step(*p, x)` in place:
        // inlined into a launch body, the in-place form became a compare
        // and a masked store to partials kept on the stack, a
        // store-forwarding stall per vector (softmax's row max, Zen 4).
        partials = std::array::from_fn(|i| step(partials[i], chunk[i]));
    }
    if !rest.is_empty() {
        // The rest as one more whole chunk, padded with `init`: `step(p,
        // init)` is `p` (an `init` never compares greater, nor less), so
        // the partials come out as if stepped with the rest alone. Stepping
        // them in place (`iter_mut().zip(rest)`) took their address, and
        // LLVM then kept all of them on the stack, a store per vector of
        // every chunk of the row (softmax's row max, Zen 1).
        let mut last = [init; WIDE_LANES];
        last[..rest.len()].copy_from_slice(rest);
        partials = std::array::from_fn(|i| step(partials[i], last[i]));
    }
    let result = fold_lanes(&partials, init, step);
    if result == T::ZERO {
        fold_lanes(values, init, step)
    } else {
        result
    }
}

/// A long sum in [`WIDE_LANES`] interleaved partials (element `i` into
/// partial `i % WIDE_LANES`), then those partials summed as
/// [`sum_slice`] sums a short slice. [`LANES`] partials are one vector
/// register, so each add waits for the one before it: a row of 4,096
/// `f32` took 512 dependent adds, a sixth of softmax's time on Zen 4.
/// A float sum in this order is another order of the same sum, within
/// the same any-order bound (SPEC.md, host numerics).
#[inline(always)]
fn sum_wide<T: Num>(values: &[T]) -> T::Sum {
    let mut partials = [T::Sum::ZERO; WIDE_LANES];
    let (chunks, rest) = values.as_chunks::<WIDE_LANES>();
    for chunk in chunks {
        // A new array per chunk, as in `fold_wide`.
        partials = std::array::from_fn(|i| Num::add(partials[i], chunk[i].to_sum()));
    }
    sum_wide_partials(&add_wide_rest(partials, rest))
}

/// `rest` (shorter than [`WIDE_LANES`]) added into the wide partials,
/// element `i` into partial `i`: the end of [`sum_wide`], and of a fused
/// sum's rest (`SumChunks::add_rest`), which must match it.
///
/// The rest goes in as one more chunk, as in `fold_wide`, padded with `-0`
/// (integers: `0`): `p + -0` is `p` for every `p`, a `+0` and a NaN
/// included, so the partials keep the bits of adding the rest alone. Added
/// in place instead (`partials.iter_mut().zip(rest)`), the partials' address
/// was taken and LLVM kept them on the stack, a store per vector of every
/// chunk of the row.
#[inline(always)]
fn add_wide_rest<T: Num>(partials: [T::Sum; WIDE_LANES], rest: &[T]) -> [T::Sum; WIDE_LANES] {
    if rest.is_empty() {
        return partials;
    }
    let mut last = [Num::neg(T::Sum::ZERO); WIDE_LANES];
    for (slot, &x) in last.iter_mut().zip(rest) {
        *slot = x.to_sum();
    }
    std::array::from_fn(|i| Num::add(partials[i], last[i]))
}

/// The [`WIDE_LANES`] partials of a long sum added into [`LANES`] (chunk by
/// chunk, in order) and those folded as [`fold_lanes`] folds: the end of
/// [`sum_wide`], and of a fused sum (`SumChunks`), which must match it.
#[inline(always)]
fn sum_wide_partials<S: Num>(partials: &[S; WIDE_LANES]) -> S {
    let mut lanes = [S::ZERO; LANES];
    for chunk in partials.as_chunks::<LANES>().0 {
        lanes = std::array::from_fn(|i| Num::add(lanes[i], chunk[i]));
    }
    fold_lanes(&lanes, S::ZERO, Num::add)
}

#[inline(always)]
fn max_slice<T: Element>(values: &[T]) -> T {
    fold_wide(values, T::LOWEST, max_step)
}

#[inline(always)]
fn min_slice<T: Element>(values: &[T]) -> T {
    fold_wide(values, T::HIGHEST, min_step)
}

/// Sum of every element.
#[inline(always)]
pub fn sum<T: Num, S: TileData<T> + ?Sized>(t: &S) -> T {
    T::from_sum(sum_slice(t.as_slice()))
}

/// Max of every element (`LOWEST` when empty).
#[inline(always)]
pub fn max<T: Element, S: TileData<T> + ?Sized>(t: &S) -> T {
    max_slice(t.as_slice())
}

/// Min of every element (`HIGHEST` when empty).
#[inline(always)]
pub fn min<T: Element, S: TileData<T> + ?Sized>(t: &S) -> T {
    min_slice(t.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    #[test]
    fn row_reductions_match_loops() {
        let t = Tile::from_vec(&[2, 3], vec![1.0f32, -2.0, 5.0, 0.5, 0.25, -8.0]).unwrap();
        assert_eq!(
            rowsum(&t).unwrap(),
            Tile::from_vec(&[2, 1], vec![4.0, -7.25]).unwrap()
        );
        assert_eq!(rowmax(&t).unwrap().as_slice(), &[5.0, 0.5]);
        assert_eq!(rowmin(&t).unwrap().as_slice(), &[-2.0, -8.0]);
        let v = Tile::from_vec(&[4], vec![3i32, 1, 4, 1]).unwrap();
        assert_eq!(rowsum(&v).unwrap(), Tile::from_vec(&[1], vec![9]).unwrap());
        let cube = Tile::from_vec(&[2, 2, 2], (0..8).collect::<Vec<i64>>()).unwrap();
        assert_eq!(rowmax(&cube).unwrap().shape(), &[2, 2, 1]);
        assert_eq!(rowmax(&cube).unwrap().as_slice(), &[1, 3, 5, 7]);
    }

    #[test]
    fn whole_tile_reductions() {
        let t = Tile::from_vec(&[2, 2], vec![1u8, 200, 100, 7]).unwrap();
        assert_eq!(sum(&t), 52); // wraps mod 256
        assert_eq!(max(&t), 200);
        assert_eq!(min(&t), 1);
        assert_eq!(sum(&Tile::scalar(2.5f64)), 2.5);
    }

    #[test]
    fn empty_reductions_give_identities_and_rank0_is_an_error() {
        let e = Tile::<f32>::zeros(&[3, 0]).unwrap();
        assert_eq!(rowmax(&e).unwrap().as_slice(), &[f32::NEG_INFINITY; 3]);
        assert_eq!(rowsum(&e).unwrap().as_slice(), &[0.0; 3]);
        assert_eq!(min(&Tile::<i32>::zeros(&[0]).unwrap()), i32::MAX);
        assert!(matches!(
            rowsum(&Tile::scalar(1.0f32)),
            Err(Error::BadShape { .. })
        ));
    }

    #[test]
    fn float_sums_stay_within_the_any_order_bound() {
        // 1000 values of mixed sign and magnitude: the lane sum differs from
        // the f64 sum by at most (n - 1) u sum|x|.
        let data: Vec<f32> = (0..1000)
            .map(|i| ((i * 7919) % 1000) as f32 * if i % 3 == 0 { -1e-3 } else { 1e-2 })
            .collect();
        let exact: f64 = data.iter().map(|&x| f64::from(x)).sum();
        let magnitude: f64 = data.iter().map(|&x| f64::from(x).abs()).sum();
        let bound = 999.0 * f64::from(f32::EPSILON) / 2.0 * magnitude;
        let t = Tile::from_vec(&[1, 1000], data).unwrap();
        assert!((f64::from(sum(&t)) - exact).abs() <= bound);
        assert!((f64::from(rowsum(&t).unwrap().as_slice()[0]) - exact).abs() <= bound);
    }

    #[test]
    fn nan_is_ignored_by_max_and_min_in_any_lane() {
        let mut data = vec![f32::NAN; 19];
        data[13] = -4.0;
        data[2] = 5.0;
        let t = Tile::from_vec(&[19], data).unwrap();
        assert_eq!(max(&t), 5.0);
        assert_eq!(min(&t), -4.0);
        // All NaN: the identity, as a left-to-right fold gives.
        let all_nan = Tile::from_vec(&[9], vec![f32::NAN; 9]).unwrap();
        assert_eq!(max(&all_nan), f32::NEG_INFINITY);
    }

    #[test]
    fn f16_sums_accumulate_in_f32() {
        // 2048 + 1 + 1 + ... : each +1 would be lost in f16 (spacing 2 at 2048).
        let mut data = vec![f16::from_f32(2048.0)];
        data.extend(std::iter::repeat_n(f16::ONE, 8));
        let t = Tile::from_vec(&[1, 9], data).unwrap();
        assert_eq!(rowsum(&t).unwrap().as_slice()[0].to_f32(), 2056.0);
        assert_eq!(sum(&t).to_f32(), 2056.0);
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    /// Floats with the values where `maximum` and a plain compare could
    /// part: NaN, both zeros, both infinities, and ties.
    fn awkward_f32() -> impl Strategy<Value = f32> {
        prop_oneof![
            Just(f32::NAN),
            Just(0.0f32),
            Just(-0.0f32),
            Just(f32::INFINITY),
            Just(f32::NEG_INFINITY),
            (-4i32..4).prop_map(|v| v as f32),
            any::<f32>(),
        ]
    }

    proptest! {
        #[test]
        fn float_max_and_min_steps_match_maximum_and_minimum(
            data in prop::collection::vec(awkward_f32(), 0..70),
        ) {
            // The same lanes folded with `maximum` / `minimum` themselves:
            // the cheaper steps must give the same bits (signed zeros
            // included), and a NaN never wins, in any lane.
            let lanes_max = fold_lanes(&data, f32::NEG_INFINITY, <f32 as Element>::maximum);
            let lanes_min = fold_lanes(&data, f32::INFINITY, <f32 as Element>::minimum);
            let t = Tile::from_vec(&[data.len()], data.clone()).unwrap();
            prop_assert_eq!(max(&t).to_bits(), lanes_max.to_bits());
            prop_assert_eq!(min(&t).to_bits(), lanes_min.to_bits());
            let row = Tile::from_vec(&[1, data.len()], data.clone()).unwrap();
            prop_assert_eq!(rowmax(&row).unwrap().as_slice()[0].to_bits(), lanes_max.to_bits());
            prop_assert_eq!(rowmin(&row).unwrap().as_slice()[0].to_bits(), lanes_min.to_bits());
            // And the value of a plain left fold (order-free up to the
            // sign of a zero).
            let fold_max = data.iter().fold(f32::NEG_INFINITY, |a, &b| Element::maximum(a, b));
            let fold_min = data.iter().fold(f32::INFINITY, |a, &b| Element::minimum(a, b));
            prop_assert_eq!(max(&t), fold_max);
            prop_assert_eq!(min(&t), fold_min);
        }

        #[test]
        fn long_rows_keep_the_bits_of_eight_lanes(
            rows in 1usize..7,
            len in 0usize..700,
            seed in any::<u64>(),
            zeros in any::<bool>(),
        ) {
            // Long enough rows for the wide max/min and for rows summed in
            // groups: the bits must be those of the 8-lane folds, signed
            // zeros included (`zeros` makes the max of some rows a zero).
            let mut state = seed;
            let mut next = || {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let v = ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 1e3;
                match (state >> 20) % 16 {
                    0 if zeros => 0.0,
                    1 if zeros => -0.0,
                    2 => f32::NAN,
                    _ if zeros => -v.abs(),
                    _ => v,
                }
            };
            let data: Vec<f32> = (0..rows * len).map(|_| next()).collect();
            let t = Tile::from_vec(&[rows, len], data.clone()).unwrap();
            let (sums, maxes, mins) = (rowsum(&t).unwrap(), rowmax(&t).unwrap(), rowmin(&t).unwrap());
            for r in 0..rows {
                let row = &data[r * len..(r + 1) * len];
                let max = fold_lanes(row, f32::NEG_INFINITY, max_step);
                let min = fold_lanes(row, f32::INFINITY, min_step);
                prop_assert_eq!(sums.as_slice()[r].to_bits(), sum_slice(row).to_bits());
                prop_assert_eq!(maxes.as_slice()[r].to_bits(), max.to_bits());
                prop_assert_eq!(mins.as_slice()[r].to_bits(), min.to_bits());
            }
        }

        #[test]
        fn reductions_match_loops(
            (shape, data) in prop::collection::vec(1usize..5, 1..=4).prop_flat_map(|shape| {
                let len: usize = shape.iter().product();
                (Just(shape), prop::collection::vec(-100i32..100, len))
            })
        ) {
            let t = Tile::from_vec(&shape, data.clone()).unwrap();
            let row_len = *shape.last().unwrap();
            let rows: Vec<&[i32]> = data.chunks(row_len).collect();
            let sums: Vec<i32> = rows.iter().map(|r| r.iter().sum()).collect();
            let maxes: Vec<i32> = rows.iter().map(|r| *r.iter().max().unwrap()).collect();
            let mins: Vec<i32> = rows.iter().map(|r| *r.iter().min().unwrap()).collect();
            let mut out_shape = shape.clone();
            *out_shape.last_mut().unwrap() = 1;
            prop_assert_eq!(rowsum(&t).unwrap(), Tile::from_vec(&out_shape, sums).unwrap());
            prop_assert_eq!(rowmax(&t).unwrap(), Tile::from_vec(&out_shape, maxes).unwrap());
            prop_assert_eq!(rowmin(&t).unwrap(), Tile::from_vec(&out_shape, mins).unwrap());
            prop_assert_eq!(sum(&t), data.iter().sum::<i32>());
            prop_assert_eq!(max(&t), *data.iter().max().unwrap());
            prop_assert_eq!(min(&t), *data.iter().min().unwrap());
        }
    }

    /// The wide sum's order, spelled out: 64 interleaved partials, folded
    /// into 8 by adding partial `8 j + i` to lane `i` for j = 0..8 in
    /// order, then the 8-lane tree. Checked on values whose sum depends
    /// on the order, and against the f64 sum within the any-order bound.
    #[test]
    fn a_long_sum_adds_in_its_documented_order() {
        for len in [256usize, 257, 300, 4096, 4099] {
            let data: Vec<f32> = (0..len)
                .map(|i| {
                    let v = ((i * 2_654_435_761) % 1_000_003) as f32 / 1_000_003.0 - 0.5;
                    if i % 7 == 0 { v * 1e7 } else { v }
                })
                .collect();
            let mut partials = [0.0f32; WIDE_LANES];
            for (i, &x) in data.iter().enumerate() {
                partials[i % WIDE_LANES] += x;
            }
            let mut lanes = [0.0f32; LANES];
            for (j, &p) in partials.iter().enumerate() {
                lanes[j % LANES] += p;
            }
            let want = (lanes[0] + lanes[4])
                + (lanes[2] + lanes[6])
                + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
            let t = Tile::from_vec(&[len], data.clone()).unwrap();
            assert_eq!(sum(&t).to_bits(), want.to_bits(), "len {len}");
            let exact: f64 = data.iter().map(|&x| f64::from(x)).sum();
            let bound: f64 = (len - 1) as f64
                * f64::from(f32::EPSILON / 2.0)
                * data.iter().map(|&x| f64::from(x).abs()).sum::<f64>();
            assert!((f64::from(want) - exact).abs() <= bound, "len {len}");
        }
        // Integers wrap, exactly as a sequential sum.
        let ints: Vec<i32> = (0..1000).map(|i| i32::MAX / 3 + i).collect();
        let t = Tile::from_vec(&[1000], ints.clone()).unwrap();
        assert_eq!(sum(&t), ints.iter().fold(0i32, |a, &b| a.wrapping_add(b)));
    }
}
