//! Masked slicing: loads and stores of tiles from tensor slices.
//!
//! A slice gives one [`Slice`] per tensor dim. Coordinates outside
//! `0..extent` (negative ones included) are masked: loads read `other`
//! there and stores skip them. A `Point` outside the tensor masks the whole
//! tile. Tensor strides are honoured.

use super::broadcast::broadcast_to;
use super::loaded::LoadedTile;
use super::tile::{Tile, TileShape};
use super::view::{RawView, Readable, TensorWrite};
use crate::{Element, Error, Num, Result};

/// The most dims a sliced tensor can have.
pub const MAX_SLICE_RANK: usize = 8;

/// One subscript of a tensor slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slice {
    /// `A[i]`: a single coordinate; the dim drops out of the tile shape.
    Point(i64),
    /// `A[start :+ len]` (and `A[a : b]` as `start: a, len: b - a`).
    Span { start: i64, len: usize },
    /// `A[:]`: the whole dim.
    Full,
}

/// A resolved slice: per dim its first coordinate, length, extent and stride.
/// A rank-0 tensor is planned as one virtual dim of extent 1.
struct Plan {
    rank: usize,
    start: [i64; MAX_SLICE_RANK],
    len: [usize; MAX_SLICE_RANK],
    extent: [usize; MAX_SLICE_RANK],
    stride: [usize; MAX_SLICE_RANK],
    offset: usize,
    tile: TileShape,
}

/// A slice that is one contiguous, unmasked, non-empty run of the
/// tensor's memory in row-major tile order: the common case of a row-wise
/// kernel's loads and stores, planned in one pass without a [`Plan`].
pub(super) struct Block {
    pub(super) tile: TileShape,
    /// Tensor element (from the allocation base) of the tile's first.
    pub(super) first_elem: usize,
}

impl Block {
    /// The block `slices` select, or `None` when they do not select one
    /// (a masked coordinate, a stride that skips, no element, or slices
    /// that do not fit the tensor: the caller then plans in full, which
    /// reports the error).
    #[inline(always)]
    pub(super) fn of(
        shape: &[usize],
        strides: &[usize],
        offset: usize,
        slices: &[Slice],
    ) -> Option<Block> {
        let rank = shape.len();
        if slices.len() != rank || rank > MAX_SLICE_RANK || strides.len() != rank {
            return None;
        }
        let mut dims = [0usize; MAX_SLICE_RANK];
        let mut tile_rank = 0;
        let mut lens = [1usize; MAX_SLICE_RANK];
        let mut first_elem = offset;
        // Row-major contiguity: walking out from the last dim, every dim
        // longer than 1 strides over exactly the elements inside it.
        let mut inner_len = 1usize;
        for d in (0..rank).rev() {
            let (start, len, kept) = match slices[d] {
                Slice::Point(i) => (i, 1, false),
                Slice::Span { start, len } => (start, len, true),
                Slice::Full => (0, shape[d], true),
            };
            let start = usize::try_from(start).ok()?;
            if len == 0 || start.checked_add(len)? > shape[d] {
                return None;
            }
            if len > 1 && strides[d] != inner_len {
                return None;
            }
            inner_len = inner_len.checked_mul(len)?;
            first_elem += start * strides[d];
            lens[d] = len;
            if kept {
                dims[tile_rank] = len;
                tile_rank += 1;
            }
        }
        dims[..tile_rank].reverse();
        let tile = TileShape::new(&dims[..tile_rank]).ok()?;
        Some(Block { tile, first_elem })
    }
}

/// The in-bounds part of a row along the last dim.
#[derive(Clone, Copy)]
struct Row {
    /// Index in the tile of the row's first element.
    tile_start: usize,
    /// Tile-row positions `lo..hi` are in bounds.
    lo: usize,
    hi: usize,
    /// Tensor element (from the allocation base) of row position `lo`.
    first_elem: usize,
    /// Last-dim stride.
    stride: usize,
}

impl Plan {
    fn new(shape: &[usize], strides: &[usize], offset: usize, slices: &[Slice]) -> Result<Plan> {
        if slices.len() != shape.len() {
            return Err(Error::SliceRank {
                tensor_rank: shape.len(),
                slices: slices.len(),
            });
        }
        if shape.len() > MAX_SLICE_RANK {
            return Err(Error::BadShape {
                op: "slice",
                shape: shape.to_vec(),
                expected: "a tensor of rank at most 8",
            });
        }
        let mut plan = Plan {
            rank: shape.len().max(1),
            start: [0; MAX_SLICE_RANK],
            len: [1; MAX_SLICE_RANK],
            extent: [1; MAX_SLICE_RANK],
            stride: [0; MAX_SLICE_RANK],
            offset,
            tile: TileShape::SCALAR,
        };
        let mut tile_dims = [0usize; MAX_SLICE_RANK];
        let mut tile_rank = 0;
        for (d, (slice, (&extent, &stride))) in
            slices.iter().zip(shape.iter().zip(strides)).enumerate()
        {
            plan.extent[d] = extent;
            plan.stride[d] = stride;
            let (start, len) = match *slice {
                Slice::Point(i) => (i, None),
                Slice::Span { start, len } => (start, Some(len)),
                Slice::Full => (0, Some(extent)),
            };
            plan.start[d] = start;
            plan.len[d] = len.unwrap_or(1);
            if let Some(len) = len {
                tile_dims[tile_rank] = len;
                tile_rank += 1;
            }
        }
        plan.tile = TileShape::new(&tile_dims[..tile_rank])?;
        Ok(plan)
    }

    /// True when no coordinate of the slice is masked.
    fn all_in_bounds(&self) -> bool {
        (0..self.rank).all(|d| {
            let start = i128::from(self.start[d]);
            start >= 0 && start + self.len[d] as i128 <= self.extent[d] as i128
        })
    }

    /// Element distance to the tile a kernel loop most likely loads next, for
    /// prefetching. Loops over a reduction dim step along the tile's shorter
    /// side (`A[m :+ 64, k :+ 32]` along the last dim, `B[k :+ 32, n :+ 64]`
    /// along the first), so this is one span further along the shorter of
    /// the first and last dims (the last on a tie or for rank 1).
    fn likely_next_tile_delta(&self) -> usize {
        let last = self.rank - 1;
        if last > 0 && self.len[0] > 1 && self.len[0] < self.len[last] {
            self.len[0].saturating_mul(self.stride[0])
        } else {
            self.len[last].saturating_mul(self.stride[last])
        }
    }

    /// Calls `f` for every row (along the last dim) whose outer coordinates
    /// are all in bounds.
    fn for_each_row(&self, mut f: impl FnMut(Row)) {
        let last = self.rank - 1;
        let row_len = self.len[last];
        let rows: usize = self.len[..last].iter().product();
        if rows == 0 {
            return;
        }
        // In-bounds row positions: 0 <= start + j < extent.
        let start = i128::from(self.start[last]);
        let lo = (-start).clamp(0, row_len as i128);
        let hi = (self.extent[last] as i128 - start).clamp(lo, row_len as i128);
        let (lo, hi) = (lo as usize, hi as usize);
        // Only meaningful when lo < hi, i.e. start + lo is a valid coordinate.
        let first_coord = (start + lo as i128).max(0) as usize;
        let mut index = [0usize; MAX_SLICE_RANK];
        for row in 0..rows {
            if lo < hi {
                let mut base = Some(self.offset);
                for (d, &i) in index[..last].iter().enumerate() {
                    let coord = i128::from(self.start[d]) + i as i128;
                    let in_bounds = coord >= 0 && coord < self.extent[d] as i128;
                    base = base
                        .filter(|_| in_bounds)
                        .map(|b| b + coord as usize * self.stride[d]);
                }
                if let Some(base) = base {
                    f(Row {
                        tile_start: row * row_len,
                        lo,
                        hi,
                        first_elem: base + first_coord * self.stride[last],
                        stride: self.stride[last],
                    });
                }
            }
            for d in (0..last).rev() {
                index[d] += 1;
                if index[d] < self.len[d] {
                    break;
                }
                index[d] = 0;
            }
        }
    }
}

/// Loads the tile `view[slices]`; masked elements read as `other`.
pub fn load<T: Element, V: Readable<T>>(view: &V, slices: &[Slice], other: T) -> Result<Tile<T>> {
    let read = view.read_view();
    let raw = read.raw();
    let plan = Plan::new(raw.shape, raw.strides, raw.offset, slices)?;
    Ok(load_planned(&raw, &plan, other))
}

/// Loads the tile `view[slices]` like [`load`], reading the tensor's memory
/// in place (no copy) when the view may read plainly (a [`PlainRead`]
/// view, see [`super::PlainRead`]) and the tile is one contiguous block
/// with no masked element; otherwise [`load`]'s copy. Either way the
/// tile holds the same values.
///
/// [`PlainRead`]: super::PlainRead
pub fn load_in_place<'v, T: Element, V: Readable<T>>(
    view: &'v V,
    slices: &[Slice],
    other: T,
) -> Result<LoadedTile<'v, T>> {
    let read = view.read_view();
    let raw = read.raw();
    if raw.plain
        && let Some(block) = Block::of(raw.shape, raw.strides, raw.offset, slices)
    {
        let len = block.tile.len();
        // No prefetch of the next tile, unlike `load`: a block read in
        // place is contiguous, which the hardware prefetchers follow, and
        // prefetching a whole tile (16-32 KiB for a row kernel) up front
        // filled the miss queues with lines needed only after this tile's
        // compute, delaying the loads this tile waits on (a row kernel
        // with the prefetch moved 0.48x of a copy's bandwidth where it
        // moved 0.73x without, measured on Zen 4).
        // SAFETY: `Block::of` only returns blocks whose `len` elements
        // are all in bounds, and the view reads plainly, so no one writes
        // them while the launch (the view's lifetime) runs.
        let data = unsafe { raw.plain_block(block.first_elem, len) };
        return Ok(LoadedTile::borrowed(block.tile, data));
    }
    let plan = Plan::new(raw.shape, raw.strides, raw.offset, slices)?;
    Ok(LoadedTile::owned(load_planned(&raw, &plan, other)))
}

/// The in-bounds parts of `slices` of `view` that are contiguous in
/// memory, row by row, as `(first element, element count)`; nothing for
/// slices a load would refuse (a prefetch is only a hint), nor for rows
/// whose elements are strided.
pub(super) fn contiguous_runs<T: Element, V: Readable<T>>(
    view: &V,
    slices: &[Slice],
    mut run: impl FnMut(*const T, usize),
) {
    let read = view.read_view();
    let raw = read.raw();
    let Ok(plan) = Plan::new(raw.shape, raw.strides, raw.offset, slices) else {
        return;
    };
    plan.for_each_row(|row| {
        if row.stride == 1 && row.hi > row.lo {
            run(
                raw.base.wrapping_add(row.first_elem).cast_const(),
                row.hi - row.lo,
            );
        }
    });
}

/// The copying load of a planned slice.
fn load_planned<T: Element>(raw: &RawView<'_, T>, plan: &Plan, other: T) -> Tile<T> {
    let next_tile_delta = plan.likely_next_tile_delta();
    // Rows far apart each start a new stream the hardware prefetcher has
    // to find again; fetching the row `ROWS_AHEAD` below keeps a tall
    // tile's rows on the way. Gemm's 256x256 `C` tile (read once per
    // program for `beta * C`) took 7% of the kernel's samples at 1024^3
    // on Zen 4, 3.5-5% with this (perf, two runs each).
    const ROWS_AHEAD: usize = 4;
    let row_ahead = match plan.rank {
        2.. if plan.len[plan.rank - 2] > ROWS_AHEAD => plan.stride[plan.rank - 2] * ROWS_AHEAD,
        _ => 0,
    };
    // Start fetching the rows of the tile a loop will most likely load next;
    // measured ~25% off cold gemm-style loads.
    let prefetch_next = |row: &Row| {
        if row.stride == 1 {
            raw.prefetch(row.first_elem + next_tile_delta, row.hi - row.lo);
            if row_ahead != 0 {
                raw.prefetch(row.first_elem + row_ahead, row.hi - row.lo);
            }
        }
    };
    let data = if plan.all_in_bounds() {
        // Every row is whole and in order: append, no `other` fill first.
        let mut data = super::arena::take(plan.tile.len());
        plan.for_each_row(|row| {
            let len = row.hi - row.lo;
            // SAFETY (both): `for_each_row` only yields in-bounds coordinates.
            match unsafe { contiguous_row(raw, &row, len) } {
                Some(values) => data.extend_from_slice(values),
                None => data.extend(
                    (0..len).map(|j| unsafe { raw.load_at(row.first_elem + j * row.stride) }),
                ),
            }
            prefetch_next(&row);
        });
        data
    } else {
        let mut data = super::arena::filled(plan.tile.len(), other);
        plan.for_each_row(|row| {
            let dst = &mut data[row.tile_start + row.lo..row.tile_start + row.hi];
            // SAFETY (both): `for_each_row` only yields in-bounds coordinates.
            match unsafe { contiguous_row(raw, &row, dst.len()) } {
                Some(values) => dst.copy_from_slice(values),
                None => {
                    for (j, slot) in dst.iter_mut().enumerate() {
                        *slot = unsafe { raw.load_at(row.first_elem + j * row.stride) };
                    }
                }
            }
            prefetch_next(&row);
        });
        data
    };
    Tile::from_parts(plan.tile, data)
}

/// The in-bounds part of `row` as a slice, when the view may read plainly
/// and the row is contiguous.
///
/// # Safety
/// `row` must come from `for_each_row` of a plan over `raw`, and `len` be
/// its `hi - lo`.
#[inline(always)]
unsafe fn contiguous_row<'v, T: Element>(
    raw: &'v RawView<'_, T>,
    row: &Row,
    len: usize,
) -> Option<&'v [T]> {
    if row.stride != 1 {
        return None;
    }
    // SAFETY: the row's `len` elements from `first_elem` are in bounds.
    unsafe { raw.plain_row(row.first_elem, len) }
}

/// Loads the single element `view[index]`, or `other` when out of bounds.
pub fn load_point<T: Element, V: Readable<T>>(view: &V, index: &[i64], other: T) -> Result<T> {
    let read = view.read_view();
    let raw = read.raw();
    match element_offset(&raw, index)? {
        // SAFETY: `element_offset` only returns in-bounds elements.
        Some(elem) => Ok(unsafe { raw.load_at(elem) }),
        None => Ok(other),
    }
}

/// Stores `tile` into `view[slices]`, skipping masked elements. The tile
/// broadcasts (NumPy rules) to the slice's shape.
pub fn store<T: Element>(
    view: &TensorWrite<'_, T>,
    slices: &[Slice],
    tile: &Tile<T>,
) -> Result<()> {
    let raw = view.raw();
    // A whole contiguous block stored plainly: one copy, no plan.
    if raw.plain_store
        && let Some(block) = Block::of(raw.shape, raw.strides, raw.offset, slices)
        && block.tile.dims() == tile.shape()
        // SAFETY: the block's elements are in bounds and contiguous.
        && unsafe { raw.store_row(block.first_elem, tile.as_slice()) }
    {
        return Ok(());
    }
    let plan = Plan::new(raw.shape, raw.strides, raw.offset, slices)?;
    let broadcast;
    let src = if tile.shape() == plan.tile.dims() {
        tile.as_slice()
    } else {
        broadcast = broadcast_to(tile, plan.tile.dims())?;
        broadcast.as_slice()
    };
    plan.for_each_row(|row| {
        let values = &src[row.tile_start + row.lo..row.tile_start + row.hi];
        // SAFETY: `for_each_row` only yields in-bounds coordinates (and
        // `store_row` needs the row contiguous).
        if row.stride == 1 && unsafe { raw.store_row(row.first_elem, values) } {
            return;
        }
        for (j, &v) in values.iter().enumerate() {
            // SAFETY: as above.
            unsafe { raw.store_at(row.first_elem + j * row.stride, v) };
        }
    });
    Ok(())
}

/// Stores `value` into every in-bounds element of `view[slices]`.
pub fn store_scalar<T: Element>(
    view: &TensorWrite<'_, T>,
    slices: &[Slice],
    value: T,
) -> Result<()> {
    let raw = view.raw();
    let plan = Plan::new(raw.shape, raw.strides, raw.offset, slices)?;
    plan.for_each_row(|row| {
        for j in 0..row.hi - row.lo {
            // SAFETY: `for_each_row` only yields in-bounds coordinates.
            unsafe { raw.store_at(row.first_elem + j * row.stride, value) };
        }
    });
    Ok(())
}

/// Atomically adds `tile` (broadcast to the slice's shape) into
/// `view[slices]`, skipping masked elements. Each element is one atomic
/// read-modify-write (a compare-and-swap loop for floats).
pub fn atomic_add<T: Num>(
    view: &TensorWrite<'_, T>,
    slices: &[Slice],
    tile: &Tile<T>,
) -> Result<()> {
    let raw = view.raw();
    let plan = Plan::new(raw.shape, raw.strides, raw.offset, slices)?;
    let broadcast;
    let src = if tile.shape() == plan.tile.dims() {
        tile.as_slice()
    } else {
        broadcast = broadcast_to(tile, plan.tile.dims())?;
        broadcast.as_slice()
    };
    plan.for_each_row(|row| {
        let values = &src[row.tile_start + row.lo..row.tile_start + row.hi];
        for (j, &v) in values.iter().enumerate() {
            // SAFETY: `for_each_row` only yields in-bounds coordinates.
            unsafe { T::atomic_add(raw.ptr_at(row.first_elem + j * row.stride), v) };
        }
    });
    Ok(())
}

/// Atomically adds `value` to every in-bounds element of `view[slices]`.
pub fn atomic_add_scalar<T: Num>(
    view: &TensorWrite<'_, T>,
    slices: &[Slice],
    value: T,
) -> Result<()> {
    let raw = view.raw();
    let plan = Plan::new(raw.shape, raw.strides, raw.offset, slices)?;
    plan.for_each_row(|row| {
        for j in 0..row.hi - row.lo {
            // SAFETY: `for_each_row` only yields in-bounds coordinates.
            unsafe { T::atomic_add(raw.ptr_at(row.first_elem + j * row.stride), value) };
        }
    });
    Ok(())
}

/// The element offset of `index`, `None` when it is out of bounds.
fn element_offset<T>(raw: &RawView<'_, T>, index: &[i64]) -> Result<Option<usize>> {
    if index.len() != raw.shape.len() {
        return Err(Error::SliceRank {
            tensor_rank: raw.shape.len(),
            slices: index.len(),
        });
    }
    let mut elem = raw.offset;
    for ((&i, &extent), &stride) in index.iter().zip(raw.shape).zip(raw.strides) {
        match usize::try_from(i) {
            Ok(i) if i < extent => elem += i * stride,
            _ => return Ok(None),
        }
    }
    Ok(Some(elem))
}

#[cfg(test)]
#[path = "slice_tests.rs"]
mod tests;
