//! NumPy broadcasting for tiles: shapes align at the right; a dim of extent
//! 1 (or a missing leading dim) stretches to the other operand's extent.

use super::tile::{MAX_TILE_RANK, Tile, TileShape};
use crate::{Element, Error, Result};

/// The broadcast shape of `a` and `b`, or `ShapeMismatch`.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<TileShape> {
    broadcast_shapes_for("broadcast", a, b)
}

pub(crate) fn broadcast_shapes_for(
    op: &'static str,
    a: &[usize],
    b: &[usize],
) -> Result<TileShape> {
    let rank = a.len().max(b.len());
    if rank > MAX_TILE_RANK {
        return Err(Error::TileRank {
            rank,
            max: MAX_TILE_RANK,
        });
    }
    let mut dims = [1usize; MAX_TILE_RANK];
    for (k, dim) in dims[..rank].iter_mut().rev().enumerate() {
        let da = a.len().checked_sub(k + 1).map_or(1, |i| a[i]);
        let db = b.len().checked_sub(k + 1).map_or(1, |i| b[i]);
        *dim = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => {
                return Err(Error::ShapeMismatch {
                    op,
                    lhs: a.to_vec(),
                    rhs: b.to_vec(),
                    expected: "each dim equal or 1 (broadcasting)",
                });
            }
        };
    }
    TileShape::new(&dims[..rank])
}

/// Element strides of `shape` when read as `out` (0 on broadcast dims),
/// right-aligned into 4 slots.
fn broadcast_strides(shape: TileShape, out: TileShape) -> [usize; MAX_TILE_RANK] {
    let dims = shape.padded();
    let out_dims = out.padded();
    let mut strides = [0usize; MAX_TILE_RANK];
    let mut step = 1;
    for k in (0..MAX_TILE_RANK).rev() {
        strides[k] = if dims[k] == 1 && out_dims[k] != 1 {
            0
        } else {
            step
        };
        step *= dims[k];
    }
    strides
}

/// Calls `f(out_flat, [offset per operand])` for every element of `out`.
fn walk<const N: usize>(out: TileShape, operands: [TileShape; N], mut f: impl FnMut([usize; N])) {
    let dims = out.padded();
    let strides = operands.map(|s| broadcast_strides(s, out));
    for i0 in 0..dims[0] {
        for i1 in 0..dims[1] {
            for i2 in 0..dims[2] {
                let base: [usize; N] = std::array::from_fn(|o| {
                    i0 * strides[o][0] + i1 * strides[o][1] + i2 * strides[o][2]
                });
                for i3 in 0..dims[3] {
                    f(std::array::from_fn(|o| base[o] + i3 * strides[o][3]));
                }
            }
        }
    }
}

/// `t` stretched to `shape` (a copy), or `ShapeMismatch` when `t` does not
/// broadcast to exactly `shape`.
pub fn broadcast_to<T: Element>(t: &Tile<T>, shape: &[usize]) -> Result<Tile<T>> {
    let out = broadcast_shapes_for("broadcast_to", t.shape(), shape)?;
    if out.dims() != shape {
        return Err(Error::ShapeMismatch {
            op: "broadcast_to",
            lhs: t.shape().to_vec(),
            rhs: shape.to_vec(),
            expected: "the tile to broadcast to exactly the target shape",
        });
    }
    if t.shape() == shape {
        return Ok(t.clone());
    }
    let src = t.as_slice();
    let mut data = super::arena::take(out.len());
    walk(out, [t.tile_shape()], |[i]| data.push(src[i]));
    Ok(Tile::from_parts(out, data))
}

/// `f` applied to every element.
#[inline]
pub(crate) fn map<A: Element, R: Element>(a: &Tile<A>, f: impl Fn(A) -> R) -> Tile<R> {
    let mut data = super::arena::take(a.len());
    data.extend(a.as_slice().iter().map(|&x| f(x)));
    Tile::from_parts(a.tile_shape(), data)
}

/// `f` applied elementwise after broadcasting `a` and `b`.
#[inline]
pub(crate) fn zip_with<A: Element, B: Element, R: Element>(
    op: &'static str,
    a: &Tile<A>,
    b: &Tile<B>,
    f: impl Fn(A, B) -> R,
) -> Result<Tile<R>> {
    let (xs, ys) = (a.as_slice(), b.as_slice());
    if a.shape() == b.shape() {
        let mut data = super::arena::take(xs.len());
        data.extend(xs.iter().zip(ys).map(|(&x, &y)| f(x, y)));
        return Ok(Tile::from_parts(a.tile_shape(), data));
    }
    let out = broadcast_shapes_for(op, a.shape(), b.shape())?;
    if let ([y], true) = (ys, out == a.tile_shape()) {
        let mut data = super::arena::take(xs.len());
        data.extend(xs.iter().map(|&x| f(x, *y)));
        return Ok(Tile::from_parts(out, data));
    }
    if let ([x], true) = (xs, out == b.tile_shape()) {
        let mut data = super::arena::take(ys.len());
        data.extend(ys.iter().map(|&y| f(*x, y)));
        return Ok(Tile::from_parts(out, data));
    }
    let mut data = super::arena::take(out.len());
    walk(out, [a.tile_shape(), b.tile_shape()], |[i, j]| {
        data.push(f(xs[i], ys[j]))
    });
    Ok(Tile::from_parts(out, data))
}

/// `f` applied elementwise after broadcasting three tiles.
#[inline]
pub(crate) fn zip3_with<A: Element, B: Element, C: Element, R: Element>(
    op: &'static str,
    a: &Tile<A>,
    b: &Tile<B>,
    c: &Tile<C>,
    f: impl Fn(A, B, C) -> R,
) -> Result<Tile<R>> {
    let ab = broadcast_shapes_for(op, a.shape(), b.shape())?;
    let out = broadcast_shapes_for(op, ab.dims(), c.shape())?;
    let (xs, ys, zs) = (a.as_slice(), b.as_slice(), c.as_slice());
    let mut data = super::arena::take(out.len());
    walk(
        out,
        [a.tile_shape(), b.tile_shape(), c.tile_shape()],
        |[i, j, k]| data.push(f(xs[i], ys[j], zs[k])),
    );
    Ok(Tile::from_parts(out, data))
}

/// `acc[i] = f(acc[i], rhs[i])` with `rhs` broadcast to `acc`'s shape.
#[inline]
pub(crate) fn assign_with<T: Element>(
    op: &'static str,
    acc: &mut Tile<T>,
    rhs: &Tile<T>,
    f: impl Fn(T, T) -> T,
) -> Result<()> {
    let out = broadcast_shapes_for(op, acc.shape(), rhs.shape())?;
    if out != acc.tile_shape() {
        return Err(Error::ShapeMismatch {
            op,
            lhs: acc.shape().to_vec(),
            rhs: rhs.shape().to_vec(),
            expected: "the right side to broadcast to the left side's shape",
        });
    }
    let ys = rhs.as_slice();
    let acc_shape = acc.tile_shape();
    let xs = acc.as_mut_slice();
    if let [y] = ys {
        xs.iter_mut().for_each(|x| *x = f(*x, *y));
    } else if acc_shape == rhs.tile_shape() {
        xs.iter_mut().zip(ys).for_each(|(x, &y)| *x = f(*x, y));
    } else {
        walk(out, [acc_shape, rhs.tile_shape()], |[i, j]| {
            xs[i] = f(xs[i], ys[j])
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_broadcast_like_numpy() {
        assert_eq!(broadcast_shapes(&[4, 1], &[3]).unwrap().dims(), &[4, 3]);
        assert_eq!(broadcast_shapes(&[], &[2, 3]).unwrap().dims(), &[2, 3]);
        assert_eq!(
            broadcast_shapes(&[2, 1, 5], &[3, 1]).unwrap().dims(),
            &[2, 3, 5]
        );
        assert_eq!(broadcast_shapes(&[0, 1], &[1, 7]).unwrap().dims(), &[0, 7]);
        let err = broadcast_shapes(&[4, 2], &[3]).unwrap_err();
        assert!(err.to_string().contains("[4, 2] and [3]"), "{err}");
        assert!(matches!(
            broadcast_shapes(&[1, 1, 1, 1, 1], &[1]),
            Err(Error::TileRank { .. })
        ));
    }

    #[test]
    fn broadcast_to_copies_rows_and_columns() {
        let col = Tile::from_vec(&[2, 1], vec![1, 2]).unwrap();
        let b = broadcast_to(&col, &[2, 3]).unwrap();
        assert_eq!(b.as_slice(), &[1, 1, 1, 2, 2, 2]);
        let row = Tile::from_vec(&[3], vec![1, 2, 3]).unwrap();
        let b = broadcast_to(&row, &[2, 3]).unwrap();
        assert_eq!(b.as_slice(), &[1, 2, 3, 1, 2, 3]);
        assert!(broadcast_to(&row, &[3, 1]).is_err());
        assert!(broadcast_to(&b, &[3]).is_err());
    }

    #[test]
    fn zip_with_matches_index_reference() {
        let a = Tile::from_vec(&[2, 1, 3], (0..6).collect()).unwrap();
        let b = Tile::from_vec(&[4, 1], (0..4).map(|x| x * 10).collect()).unwrap();
        let c = zip_with("t", &a, &b, |x, y| x + y).unwrap();
        assert_eq!(c.shape(), &[2, 4, 3]);
        for i in 0..2 {
            for j in 0..4 {
                for k in 0..3 {
                    let expected = a.get(&[i, 0, k]).unwrap() + b.get(&[j, 0]).unwrap();
                    assert_eq!(c.get(&[i, j, k]), Some(expected));
                }
            }
        }
    }

    #[test]
    fn assign_requires_rhs_to_fit_lhs() {
        let mut acc = Tile::from_vec(&[2, 2], vec![1, 2, 3, 4]).unwrap();
        assign_with(
            "t",
            &mut acc,
            &Tile::from_vec(&[2, 1], vec![10, 20]).unwrap(),
            |x, y| x + y,
        )
        .unwrap();
        assert_eq!(acc.as_slice(), &[11, 12, 23, 24]);
        let mut small = Tile::from_vec(&[2], vec![1, 2]).unwrap();
        let err = assign_with("t", &mut small, &acc, |x, y| x + y).unwrap_err();
        assert!(matches!(err, Error::ShapeMismatch { .. }));
    }
}
