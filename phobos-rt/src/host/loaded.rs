//! `LoadedTile`: what [`load_in_place`](super::load_in_place) gives, a
//! tile that reads the tensor's memory where it lies when it can.
//!
//! A load whose tile is one contiguous, unmasked block of a tensor the
//! launch reads with plain loads ([`PlainRead`](super::PlainRead): nobody
//! writes the tensor during the launch) borrows that block instead of
//! copying it into a [`Tile`]. Every other load (masked, strided, of a
//! tensor the launch also writes, or refused plain reads) is the copying
//! [`load`](super::load), unchanged. Both read the same bits, so which one
//! a load takes changes no result.
//!
//! Fused elementwise loops read a `LoadedTile` through
//! [`TileData::as_slice`]; an op of the tile library that needs a
//! `&Tile` gets one from [`LoadedTile::tile`], which copies a borrowed
//! block once, on first use.

use std::cell::OnceCell;

use super::tile::{Tile, TileShape};
use crate::{Element, Result};

/// Read access to a tile's shape and row-major elements, shared by
/// [`Tile`] and [`LoadedTile`] (what fused loops and their shape checks
/// read).
pub trait TileData<T> {
    /// The dims, outermost first.
    fn shape(&self) -> &[usize];
    /// The elements in row-major order.
    fn as_slice(&self) -> &[T];
}

impl<T: Element> TileData<T> for Tile<T> {
    #[inline(always)]
    fn shape(&self) -> &[usize] {
        Tile::shape(self)
    }

    #[inline(always)]
    fn as_slice(&self) -> &[T] {
        Tile::as_slice(self)
    }
}

/// A loaded tile: a block of tensor memory read in place, or an owned
/// [`Tile`] when the load had to copy.
#[derive(Debug)]
pub struct LoadedTile<'a, T> {
    shape: TileShape,
    source: Source<'a, T>,
}

#[derive(Debug)]
enum Source<'a, T> {
    /// The tensor's own elements, with the copy [`LoadedTile::tile`] made
    /// (if an op needed a `&Tile`).
    Borrowed {
        data: &'a [T],
        copy: OnceCell<Tile<T>>,
    },
    /// What the copying load produced.
    Owned(Tile<T>),
}

impl<'a, T: Element> LoadedTile<'a, T> {
    /// A tile reading `data` in place; `data.len()` must be `shape.len()`.
    pub(crate) fn borrowed(shape: TileShape, data: &'a [T]) -> LoadedTile<'a, T> {
        debug_assert_eq!(shape.len(), data.len());
        LoadedTile {
            shape,
            source: Source::Borrowed {
                data,
                copy: OnceCell::new(),
            },
        }
    }

    /// A tile holding what a copying load produced.
    pub(crate) fn owned(tile: Tile<T>) -> LoadedTile<'a, T> {
        LoadedTile {
            shape: tile.tile_shape(),
            source: Source::Owned(tile),
        }
    }

    /// The dims, outermost first.
    #[inline(always)]
    pub fn shape(&self) -> &[usize] {
        self.shape.dims()
    }

    /// The elements in row-major order, wherever they lie.
    #[inline(always)]
    pub fn as_slice(&self) -> &[T] {
        match &self.source {
            Source::Borrowed { data, .. } => data,
            Source::Owned(tile) => tile.as_slice(),
        }
    }

    /// Whether the load read the tensor in place (no copy was made).
    pub fn is_borrowed(&self) -> bool {
        matches!(self.source, Source::Borrowed { .. })
    }

    /// The tile as a `&Tile`, for the tile library's ops: a borrowed block
    /// is copied on the first call and the copy reused after.
    pub fn tile(&self) -> Result<&Tile<T>> {
        match &self.source {
            Source::Owned(tile) => Ok(tile),
            Source::Borrowed { data, copy } => {
                if let Some(tile) = copy.get() {
                    return Ok(tile);
                }
                let mut storage = Tile::storage(self.shape.dims())?;
                storage.extend_from_slice(data);
                Ok(copy.get_or_init(|| Tile::from_parts(self.shape, storage)))
            }
        }
    }
}

impl<T: Element> TileData<T> for LoadedTile<'_, T> {
    #[inline(always)]
    fn shape(&self) -> &[usize] {
        LoadedTile::shape(self)
    }

    #[inline(always)]
    fn as_slice(&self) -> &[T] {
        LoadedTile::as_slice(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_borrowed_tile_copies_once_when_an_op_needs_a_tile() {
        let values = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        let shape = TileShape::new(&[2, 3]).unwrap();
        let loaded = LoadedTile::borrowed(shape, &values);
        assert!(loaded.is_borrowed());
        assert_eq!(TileData::shape(&loaded), &[2, 3]);
        assert_eq!(loaded.as_slice().as_ptr(), values.as_ptr(), "read in place");
        let first = loaded.tile().unwrap();
        assert_eq!(first.as_slice(), &values);
        assert_eq!(first.shape(), &[2, 3]);
        let again = loaded.tile().unwrap();
        assert!(std::ptr::eq(first, again), "the copy is made once");
    }

    #[test]
    fn an_owned_tile_is_its_own_tile() {
        let tile = Tile::from_vec(&[3], vec![7i32, 8, 9]).unwrap();
        let loaded = LoadedTile::owned(tile);
        assert!(!loaded.is_borrowed());
        assert_eq!(loaded.as_slice(), &[7, 8, 9]);
        assert_eq!(loaded.tile().unwrap().as_slice(), &[7, 8, 9]);
    }
}
