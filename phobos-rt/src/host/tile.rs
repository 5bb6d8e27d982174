//! `Tile<T>`: a program-local, row-major value with runtime dims.

use crate::{Element, Error, Result};

/// The most dims a tile can have.
pub const MAX_TILE_RANK: usize = 4;

/// The most elements a tile can hold (2^28).
pub const MAX_TILE_LEN: usize = 1 << 28;

/// A tile's dims, stored inline (no heap). Rank 0 is a scalar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TileShape {
    dims: [usize; MAX_TILE_RANK],
    /// A word, not a byte: shapes are copied around in every tile op, and
    /// a byte written and then read back within a wider copy defeats the
    /// CPU's store forwarding (a stall per copy in row kernels' profiles).
    rank: usize,
}

impl TileShape {
    /// The shape of a scalar (rank 0, one element).
    pub const SCALAR: TileShape = TileShape {
        dims: [1; MAX_TILE_RANK],
        rank: 0,
    };

    /// A shape from its dims; errors past [`MAX_TILE_RANK`] dims or when the
    /// element count overflows.
    #[inline]
    pub fn new(dims: &[usize]) -> Result<TileShape> {
        if dims.len() > MAX_TILE_RANK {
            return Err(Error::TileRank {
                rank: dims.len(),
                max: MAX_TILE_RANK,
            });
        }
        let mut shape = TileShape::SCALAR;
        // An element loop, not `copy_from_slice`: at most 4 dims, and a
        // `memcpy` call per tile op showed in profiles.
        for (slot, &d) in shape.dims.iter_mut().zip(dims) {
            *slot = d;
        }
        shape.rank = dims.len();
        match dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d)) {
            None => Err(Error::ShapeOverflow {
                shape: dims.to_vec(),
            }),
            // A tile lives in one program's registers or cache on the GPU; a
            // huge one is a bug in the kernel (or a bad span length), and
            // allocating it would abort the process instead of erroring.
            Some(len) if len > MAX_TILE_LEN => Err(Error::BadShape {
                op: "tile",
                shape: dims.to_vec(),
                expected: "at most 2^28 elements in one tile",
            }),
            Some(_) => Ok(shape),
        }
    }

    /// The dims, outermost first. The accessors are always inlined: a
    /// row kernel asks for a tile's length several times per tile, and
    /// out of line (a call into phobos-rt) that showed in its profile.
    #[inline(always)]
    pub fn dims(&self) -> &[usize] {
        &self.dims[..self.rank]
    }

    /// Number of dims.
    #[inline(always)]
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Number of elements (checked not to overflow at construction).
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.dims().iter().product()
    }

    /// True when some dim is 0.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The dims right-aligned into 4 slots, leading slots 1.
    pub(crate) fn padded(&self) -> [usize; MAX_TILE_RANK] {
        let mut out = [1; MAX_TILE_RANK];
        out[MAX_TILE_RANK - self.rank()..].copy_from_slice(self.dims());
        out
    }
}

/// An owned row-major tile of rank 0..=4, local to one program. Its
/// storage comes from and goes back to the thread's free list
/// ([`super::arena`]), so tiles made and dropped in a loop reuse buffers.
#[derive(Debug, PartialEq)]
pub struct Tile<T> {
    shape: TileShape,
    data: Vec<T>,
}

impl<T> Drop for Tile<T> {
    fn drop(&mut self) {
        super::arena::give(std::mem::take(&mut self.data));
    }
}

impl<T: Copy> Clone for Tile<T> {
    fn clone(&self) -> Tile<T> {
        let mut data = super::arena::take(self.data.len());
        data.extend_from_slice(&self.data);
        Tile {
            shape: self.shape,
            data,
        }
    }
}

impl<T: Element> Tile<T> {
    /// A rank-0 tile holding `value`.
    #[inline]
    pub fn scalar(value: T) -> Tile<T> {
        Tile {
            shape: TileShape::SCALAR,
            data: super::arena::filled(1, value),
        }
    }

    /// A tile of `shape` with every element `value`.
    #[inline]
    pub fn full(shape: &[usize], value: T) -> Result<Tile<T>> {
        let shape = TileShape::new(shape)?;
        Ok(Tile {
            shape,
            data: super::arena::filled(shape.len(), value),
        })
    }

    /// A tile of zeros.
    pub fn zeros(shape: &[usize]) -> Result<Tile<T>> {
        Tile::full(shape, T::ZERO)
    }

    /// A tile from row-major data; `LenMismatch` when the length is wrong.
    #[inline]
    pub fn from_vec(shape: &[usize], data: Vec<T>) -> Result<Tile<T>> {
        let tile_shape = TileShape::new(shape)?;
        if data.len() != tile_shape.len() {
            return Err(Error::LenMismatch {
                shape: shape.to_vec(),
                expected: tile_shape.len(),
                actual: data.len(),
            });
        }
        Ok(Tile {
            shape: tile_shape,
            data,
        })
    }

    /// Internal constructor; `data.len()` must equal `shape.len()`.
    pub(crate) fn from_parts(shape: TileShape, data: Vec<T>) -> Tile<T> {
        debug_assert_eq!(shape.len(), data.len());
        Tile { shape, data }
    }

    /// The dims.
    #[inline]
    pub fn shape(&self) -> &[usize] {
        self.shape.dims()
    }

    /// The dims as a [`TileShape`].
    pub fn tile_shape(&self) -> TileShape {
        self.shape
    }

    /// Number of dims.
    pub fn rank(&self) -> usize {
        self.shape.rank()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True when the tile has no elements.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The elements in row-major order.
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }

    /// The elements in row-major order, mutably.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// The elements, consuming the tile.
    pub fn into_vec(mut self) -> Vec<T> {
        std::mem::take(&mut self.data)
    }

    /// A tile of `shape` from the elements `values` yields, on reused
    /// storage (what fused elementwise loops collect into);
    /// `LenMismatch` when the count is wrong.
    #[inline]
    pub fn collect(shape: &[usize], values: impl Iterator<Item = T>) -> Result<Tile<T>> {
        let tile_shape = TileShape::new(shape)?;
        let mut data = super::arena::take(tile_shape.len());
        data.extend(values);
        Tile::from_vec(shape, data)
    }

    /// An empty buffer with room for a tile of `shape`, on reused storage,
    /// for a loop that fills it row by row before [`Tile::from_vec`].
    #[inline]
    pub fn storage(shape: &[usize]) -> Result<Vec<T>> {
        Ok(super::arena::take(TileShape::new(shape)?.len()))
    }

    /// The only element of a one-element tile (any rank); `BadShape` otherwise.
    #[inline]
    pub fn item(&self) -> Result<T> {
        match self.data.as_slice() {
            [only] => Ok(*only),
            _ => Err(Error::BadShape {
                op: "item",
                shape: self.shape().to_vec(),
                expected: "a tile with exactly one element",
            }),
        }
    }

    /// The element at a multi-index, or `None` when it is out of range or
    /// has the wrong rank.
    pub fn get(&self, index: &[usize]) -> Option<T> {
        if index.len() != self.rank() {
            return None;
        }
        let mut flat = 0usize;
        for (&i, &d) in index.iter().zip(self.shape()) {
            if i >= d {
                return None;
            }
            flat = flat * d + i;
        }
        self.data.get(flat).copied()
    }

    /// Sets every element to `value`.
    pub fn fill(&mut self, value: T) {
        self.data.fill(value);
    }
}

/// Storage for a tile whose every element is written once before the tile
/// is read: the output of a fused elementwise loop. [`Tile::full`] would
/// first fill the buffer with a value the loop then overwrites; on a row
/// kernel that fill was a whole extra pass over each 16 KiB tile (a memset
/// per fused op per row). The elements are handed out as `MaybeUninit`
/// slots, and [`TileSlots::assume_init`] turns them into the tile.
///
/// Dropped without `assume_init` (an error or a panic inside the loop), the
/// buffer is freed with length 0: nothing uninitialized is ever read.
#[derive(Debug)]
pub struct TileSlots<T> {
    shape: TileShape,
    /// Length 0, capacity at least `shape.len()`.
    data: Vec<T>,
}

impl<T: Element> TileSlots<T> {
    /// Slots for a tile of `shape`, on reused storage.
    #[inline]
    pub fn new(shape: &[usize]) -> Result<TileSlots<T>> {
        let shape = TileShape::new(shape)?;
        let mut data = super::arena::take(shape.len());
        // `take` already gives this much; `assume_init`'s `set_len` relies
        // on it, so it is made certain here rather than assumed.
        data.reserve(shape.len());
        Ok(TileSlots { shape, data })
    }

    /// The tile's elements in row-major order, to be written.
    #[inline(always)]
    pub fn slots(&mut self) -> &mut [std::mem::MaybeUninit<T>] {
        let len = self.shape.len();
        // The capacity is at least `len` (`new`), so the range is always
        // there; `get_mut` keeps this free of a panic path.
        self.data
            .spare_capacity_mut()
            .get_mut(..len)
            .unwrap_or_default()
    }

    /// The tile, once every slot is written.
    ///
    /// # Safety
    /// Every element of [`TileSlots::slots`] must have been written.
    #[inline(always)]
    pub unsafe fn assume_init(mut self) -> Tile<T> {
        let len = self.shape.len();
        // SAFETY: the capacity is at least `len` (`new`), and the caller
        // wrote every one of the first `len` elements.
        unsafe { self.data.set_len(len) };
        Tile::from_parts(self.shape, std::mem::take(&mut self.data))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_checked() {
        assert_eq!(TileShape::new(&[2, 3]).unwrap().len(), 6);
        assert_eq!(TileShape::new(&[]).unwrap(), TileShape::SCALAR);
        assert_eq!(TileShape::new(&[2, 3]).unwrap().padded(), [1, 1, 2, 3]);
        assert_eq!(
            TileShape::new(&[1, 1, 1, 1, 1]),
            Err(Error::TileRank { rank: 5, max: 4 })
        );
        assert!(matches!(
            TileShape::new(&[usize::MAX, 3]),
            Err(Error::ShapeOverflow { .. })
        ));
        assert!(TileShape::new(&[1 << 14, 1 << 14]).is_ok());
        assert!(matches!(
            TileShape::new(&[1 << 14, 1 << 15]),
            Err(Error::BadShape { op: "tile", .. })
        ));
    }

    #[test]
    fn slots_become_the_tile_they_were_written_as() {
        let mut slots = TileSlots::<f32>::new(&[2, 3]).unwrap();
        assert_eq!(slots.slots().len(), 6);
        for (i, slot) in slots.slots().iter_mut().enumerate() {
            slot.write(i as f32 * 0.5);
        }
        // SAFETY: every slot was written just above.
        let tile = unsafe { slots.assume_init() };
        assert_eq!(tile.shape(), &[2, 3]);
        assert_eq!(tile.as_slice(), &[0.0, 0.5, 1.0, 1.5, 2.0, 2.5]);
        // Reused storage (this thread's free list) comes out the same way.
        drop(tile);
        let mut again = TileSlots::<f32>::new(&[4]).unwrap();
        for slot in again.slots() {
            slot.write(7.0);
        }
        // SAFETY: as above.
        assert_eq!(unsafe { again.assume_init() }.as_slice(), &[7.0; 4]);
        let mut empty = TileSlots::<i32>::new(&[0, 5]).unwrap();
        assert!(empty.slots().is_empty());
        // SAFETY: there is no slot to write.
        assert!(unsafe { empty.assume_init() }.is_empty());
        assert!(TileSlots::<u8>::new(&[1, 1, 1, 1, 1]).is_err());
        // Dropped unwritten: nothing is read.
        drop(TileSlots::<f64>::new(&[3]).unwrap());
    }

    #[test]
    fn construction_and_access() {
        let t = Tile::from_vec(&[2, 3], vec![0, 1, 2, 3, 4, 5]).unwrap();
        assert_eq!(t.get(&[1, 2]), Some(5));
        assert_eq!(t.get(&[2, 0]), None);
        assert_eq!(t.get(&[0]), None);
        assert_eq!(t.rank(), 2);
        assert!(matches!(
            Tile::from_vec(&[2, 2], vec![1]),
            Err(Error::LenMismatch { .. })
        ));
        assert_eq!(Tile::scalar(3.0f32).item().unwrap(), 3.0);
        assert_eq!(Tile::full(&[1, 1], 7u8).unwrap().item().unwrap(), 7);
        assert!(t.item().is_err());
        let mut z = Tile::<i32>::zeros(&[4]).unwrap();
        z.fill(2);
        assert_eq!(z.as_slice(), &[2; 4]);
        assert!(Tile::<f32>::zeros(&[0, 4]).unwrap().is_empty());
    }
}
