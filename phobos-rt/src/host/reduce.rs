//! Reductions: over the last dim (`rowsum rowmax rowmin`) and over the whole
//! tile (`sum max min`). Sums of `f16`/`bf16` accumulate in `f32` and round
//! once at the end. An empty reduction gives the identity (0, `LOWEST` for
//! max, `HIGHEST` for min).

use super::tile::{Tile, TileShape};
use crate::{Element, Error, Num, Result};

/// Reduces the last dim with `f`, keeping it as extent 1.
fn reduce_rows<T: Element, A: Copy>(
    op: &'static str,
    t: &Tile<T>,
    init: A,
    step: impl Fn(A, T) -> A,
    finish: impl Fn(A) -> T,
) -> Result<Tile<T>> {
    let Some((&row_len, outer)) = t.shape().split_last() else {
        return Err(Error::BadShape {
            op,
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
        vec![finish(init); rows]
    } else {
        t.as_slice()
            .chunks_exact(row_len)
            .map(|row| finish(row.iter().fold(init, |a, &x| step(a, x))))
            .collect()
    };
    Ok(Tile::from_parts(shape, data))
}

/// Sum over the last dim: `[.., N] -> [.., 1]`.
pub fn rowsum<T: Num>(t: &Tile<T>) -> Result<Tile<T>> {
    reduce_rows(
        "rowsum",
        t,
        T::Sum::ZERO,
        |a, x| Num::add(a, x.to_sum()),
        T::from_sum,
    )
}

/// Max over the last dim: `[.., N] -> [.., 1]`.
pub fn rowmax<T: Element>(t: &Tile<T>) -> Result<Tile<T>> {
    reduce_rows("rowmax", t, T::LOWEST, Element::maximum, |a| a)
}

/// Min over the last dim: `[.., N] -> [.., 1]`.
pub fn rowmin<T: Element>(t: &Tile<T>) -> Result<Tile<T>> {
    reduce_rows("rowmin", t, T::HIGHEST, Element::minimum, |a| a)
}

/// Sum of every element.
pub fn sum<T: Num>(t: &Tile<T>) -> T {
    T::from_sum(
        t.as_slice()
            .iter()
            .fold(T::Sum::ZERO, |a, &x| Num::add(a, x.to_sum())),
    )
}

/// Max of every element (`LOWEST` when empty).
pub fn max<T: Element>(t: &Tile<T>) -> T {
    t.as_slice().iter().fold(T::LOWEST, |a, &x| a.maximum(x))
}

/// Min of every element (`HIGHEST` when empty).
pub fn min<T: Element>(t: &Tile<T>) -> T {
    t.as_slice().iter().fold(T::HIGHEST, |a, &x| a.minimum(x))
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

    proptest! {
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
}
