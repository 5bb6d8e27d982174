//! Layout ops and tile construction.

use super::loaded::TileData;
use super::tile::{Tile, TileShape};
use crate::{Element, Error, Num, Result};

/// A tile of `shape` filled with `value` (`var x: tile<T>[..] = value`).
pub fn full<T: Element>(shape: &[usize], value: T) -> Result<Tile<T>> {
    Tile::full(shape, value)
}

/// `Ok` when `t` has exactly `shape`, else `ShapeMismatch`: the operands
/// of a fused elementwise loop (generated code) all have the result's shape.
#[inline]
pub fn expect_shape<T: Element, S: TileData<T> + ?Sized>(t: &S, shape: &[usize]) -> Result<()> {
    // An element loop, not `==` on the slices: that is a `memcmp` call per
    // fused op, which showed in row kernels' profiles.
    let own = t.shape();
    if own.len() == shape.len() && own.iter().zip(shape).all(|(a, b)| a == b) {
        Ok(())
    } else {
        Err(shape_mismatch(own, shape))
    }
}

#[cold]
fn shape_mismatch(lhs: &[usize], rhs: &[usize]) -> Error {
    Error::ShapeMismatch {
        op: "elementwise",
        lhs: lhs.to_vec(),
        rhs: rhs.to_vec(),
        expected: "every operand of a fused elementwise op to have the result's shape",
    }
}

/// A tile of zeros.
pub fn zeros<T: Element>(shape: &[usize]) -> Result<Tile<T>> {
    Tile::zeros(shape)
}

/// `arange(n)`: the `[n]` i32 tile `0, 1, .., n-1`.
pub fn arange(n: usize) -> Result<Tile<i32>> {
    let end = i32::try_from(n).map_err(|_| Error::BadShape {
        op: "arange",
        shape: vec![n],
        expected: "n <= i32::MAX",
    })?;
    let mut data = super::arena::take(n);
    data.extend(0..end);
    Ok(Tile::from_parts(TileShape::new(&[n])?, data))
}

fn require_rank2<T: Element>(op: &'static str, t: &Tile<T>) -> Result<(usize, usize)> {
    match *t.shape() {
        [rows, cols] => Ok((rows, cols)),
        _ => Err(Error::BadShape {
            op,
            shape: t.shape().to_vec(),
            expected: "a rank-2 tile",
        }),
    }
}

/// `[R, C] -> [C, R]`.
pub fn transpose<T: Element>(t: &Tile<T>) -> Result<Tile<T>> {
    let (rows, cols) = require_rank2("transpose", t)?;
    let src = t.as_slice();
    let mut data = super::arena::take(src.len());
    for c in 0..cols {
        data.extend((0..rows).map(|r| src[r * cols + c]));
    }
    Ok(Tile::from_parts(TileShape::new(&[cols, rows])?, data))
}

/// The same elements in row-major order with another shape of the same
/// element count.
pub fn reshape<T: Element>(t: &Tile<T>, shape: &[usize]) -> Result<Tile<T>> {
    let to = TileShape::new(shape)?;
    if to.len() != t.len() {
        return Err(Error::ReshapeLen {
            from: t.shape().to_vec(),
            from_len: t.len(),
            to: shape.to_vec(),
            to_len: to.len(),
        });
    }
    let mut data = super::arena::take(t.len());
    data.extend_from_slice(t.as_slice());
    Ok(Tile::from_parts(to, data))
}

/// Inclusive prefix sum down the first dim: `out[i, ..] = sum(t[0..=i, ..])`.
/// `f16`/`bf16` accumulate in `f32`; each output is rounded once.
pub fn cumsum<T: Num>(t: &Tile<T>) -> Result<Tile<T>> {
    let Some(&rows) = t.shape().first() else {
        return Err(Error::BadShape {
            op: "cumsum",
            shape: Vec::new(),
            expected: "a tile of rank >= 1",
        });
    };
    let src = t.as_slice();
    let inner = src.len().checked_div(rows).unwrap_or(0);
    let mut running = vec![T::Sum::ZERO; inner];
    let mut data = super::arena::take(src.len());
    for row in src.chunks_exact(inner.max(1)).take(rows) {
        for (acc, &x) in running.iter_mut().zip(row) {
            *acc = Num::add(*acc, x.to_sum());
            data.push(T::from_sum(*acc));
        }
    }
    Ok(Tile::from_parts(t.tile_shape(), data))
}

/// Lower triangle of a rank-2 tile: keeps `[i, j]` with `j <= i`, zeros the rest.
pub fn tril<T: Element>(t: &Tile<T>) -> Result<Tile<T>> {
    let (_, cols) = require_rank2("tril", t)?;
    let mut out = t.clone();
    for (i, row) in out.as_mut_slice().chunks_exact_mut(cols.max(1)).enumerate() {
        row.iter_mut().skip(i + 1).for_each(|x| *x = T::ZERO);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::bf16;

    #[test]
    fn expect_shape_accepts_only_the_exact_shape() {
        let t = Tile::<f32>::zeros(&[2, 3]).unwrap();
        assert!(expect_shape(&t, &[2, 3]).is_ok());
        for other in [&[3, 2][..], &[2, 3, 1], &[6], &[]] {
            let err = expect_shape(&t, other).unwrap_err();
            assert!(
                matches!(&err, Error::ShapeMismatch { lhs, rhs, .. } if lhs == &[2, 3] && rhs == other),
                "{other:?}: {err:?}"
            );
        }
    }

    #[test]
    fn arange_and_full() {
        assert_eq!(arange(4).unwrap().as_slice(), &[0, 1, 2, 3]);
        assert!(arange(0).unwrap().is_empty());
        assert!(arange(usize::MAX).is_err());
        assert_eq!(full(&[2], 1.5f32).unwrap().as_slice(), &[1.5, 1.5]);
        assert_eq!(zeros::<u8>(&[1, 2]).unwrap().as_slice(), &[0, 0]);
    }

    #[test]
    fn transpose_matches_indexing() {
        let t = Tile::from_vec(&[2, 3], (0..6).collect::<Vec<i32>>()).unwrap();
        let tt = transpose(&t).unwrap();
        assert_eq!(tt.shape(), &[3, 2]);
        for i in 0..2 {
            for j in 0..3 {
                assert_eq!(tt.get(&[j, i]), t.get(&[i, j]));
            }
        }
        assert!(transpose(&Tile::scalar(1i32)).is_err());
    }

    #[test]
    fn reshape_keeps_order_and_checks_count() {
        let t = Tile::from_vec(&[2, 3], (0..6).collect::<Vec<i32>>()).unwrap();
        let r = reshape(&t, &[3, 1, 2]).unwrap();
        assert_eq!(r.shape(), &[3, 1, 2]);
        assert_eq!(r.as_slice(), t.as_slice());
        let err = reshape(&t, &[4, 2]).unwrap_err();
        assert!(err.to_string().contains("6 elements") && err.to_string().contains("8 elements"));
    }

    #[test]
    fn cumsum_runs_down_the_first_dim() {
        let t = Tile::from_vec(&[3, 2], vec![1, 10, 2, 20, 3, 30]).unwrap();
        assert_eq!(cumsum(&t).unwrap().as_slice(), &[1, 10, 3, 30, 6, 60]);
        let v = Tile::from_vec(&[3], vec![0.5f32, 0.25, 1.0]).unwrap();
        assert_eq!(cumsum(&v).unwrap().as_slice(), &[0.5, 0.75, 1.75]);
        // bf16 has 8 significant bits: 256 + 1 + 1 is exact only with f32 accumulation.
        let b = Tile::from_vec(&[3], vec![bf16::from_f32(256.0), bf16::ONE, bf16::ONE]).unwrap();
        assert_eq!(cumsum(&b).unwrap().as_slice()[2].to_f32(), 258.0);
        assert!(
            cumsum(&Tile::<f32>::zeros(&[0, 3]).unwrap())
                .unwrap()
                .is_empty()
        );
        assert!(cumsum(&Tile::scalar(1)).is_err());
    }

    #[test]
    fn tril_keeps_lower_triangle() {
        let t = Tile::from_vec(&[3, 4], (1..=12).collect::<Vec<i32>>()).unwrap();
        let l = tril(&t).unwrap();
        for i in 0..3 {
            for j in 0..4 {
                let expected = if j <= i { t.get(&[i, j]).unwrap() } else { 0 };
                assert_eq!(l.get(&[i, j]), Some(expected));
            }
        }
        assert!(tril(&Tile::from_vec(&[2], vec![1, 2]).unwrap()).is_err());
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    fn tile() -> impl Strategy<Value = Tile<i64>> {
        (1usize..6, 1usize..6).prop_flat_map(|(r, c)| {
            prop::collection::vec(-50i64..50, r * c)
                .prop_map(move |data| Tile::from_vec(&[r, c], data).unwrap())
        })
    }

    proptest! {
        #[test]
        fn layout_ops_match_index_reference(t in tile()) {
            let (r, c) = (t.shape()[0], t.shape()[1]);
            let tt = transpose(&t).unwrap();
            let cs = cumsum(&t).unwrap();
            let tl = tril(&t).unwrap();
            for i in 0..r {
                for j in 0..c {
                    let v = t.get(&[i, j]).unwrap();
                    prop_assert_eq!(tt.get(&[j, i]), Some(v));
                    let prefix: i64 = (0..=i).map(|x| t.get(&[x, j]).unwrap()).sum();
                    prop_assert_eq!(cs.get(&[i, j]), Some(prefix));
                    prop_assert_eq!(tl.get(&[i, j]), Some(if j <= i { v } else { 0 }));
                }
            }
            prop_assert_eq!(transpose(&tt).unwrap(), t.clone());
            let flat = reshape(&t, &[r * c]).unwrap();
            prop_assert_eq!(reshape(&flat, &[r, c]).unwrap(), t);
        }
    }
}
