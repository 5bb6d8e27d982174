//! `StoreSink`: where a fused loop whose tile is stored whole
//! (`Y[block] = <elementwise tree>`) writes its elements, so the tile is
//! never built and then copied.
//!
//! A stored tile used to be computed into a fresh tile and copied into the
//! tensor by [`store`](super::store): one more pass over it, and for a
//! tensor written with streaming stores a burst of them (a whole tile,
//! 16-32 KiB for a row kernel) after the compute, with no load in flight
//! while the write-combining buffers drained. The generated code instead
//! computes the tile in chunks of [`STORE_CHUNK`] elements per row: each
//! chunk goes straight into the tensor when its stores are plain, or into
//! a small buffer that is streamed out right after (so writes to memory
//! overlap the next chunk's compute). Both write the same bits as the
//! copy did.
//!
//! Only a plainly stored tensor (program-owned, its allocation's only
//! view: [`TensorWrite::allow_plain_stores`]) whose slice is one
//! contiguous, unmasked block of the tile's shape is written in place;
//! for every other store the sink builds the tile whole and
//! [`StoreSink::finish`] copies it with `store`. One sink for both keeps
//! the generated element loop single: it was emitted twice (the dtype
//! table's generated host code was 40.2 MB then, 35.9 MB now).

use super::slice::{Block, Slice, store};
use super::tile::TileSlots;
use super::view::{TensorWrite, stream_copy};
use std::mem::MaybeUninit;

use crate::{Element, Result};

/// Elements a fused store computes before writing them out: 1 KiB of
/// `f32`, small enough to stay in L1 beside the loop's inputs and to be
/// streamed out in a few write-combining bursts.
pub const STORE_CHUNK: usize = 256;

/// The destination of one whole-tile store, written chunk by chunk
/// ([`StoreSink::chunk`], then [`StoreSink::commit`]) and closed by
/// [`StoreSink::finish`]. Every store takes this one path, so the
/// generated code holds the element loop once.
pub struct StoreSink<T> {
    target: Target<T>,
}

enum Target<T> {
    /// The tensor's own contiguous block, written in place.
    InPlace { dst: *mut T, len: usize },
    /// The same, written with streaming stores: each chunk goes through
    /// `buffer` and is streamed out by `commit`.
    Streamed {
        dst: *mut T,
        len: usize,
        buffer: [MaybeUninit<T>; STORE_CHUNK],
    },
    /// Every other store (not plain, a masked, strided or differently
    /// shaped block): the tile is built whole and `finish` hands it to
    /// [`store`].
    Tile(TileSlots<T>),
}

impl<T: Element> StoreSink<T> {
    /// A sink for `view[slices]` holding a tile of `shape`.
    #[inline(always)]
    pub fn new(view: &TensorWrite<'_, T>, slices: &[Slice], shape: &[usize]) -> Result<Self> {
        let raw = view.raw();
        let block = if raw.plain_store {
            Block::of(raw.shape, raw.strides, raw.offset, slices)
                .filter(|block| block.tile.dims() == shape)
        } else {
            None
        };
        let target = match block {
            // In bounds: `Block::of` only returns blocks inside the view.
            Some(block) if raw.stream_store => Target::Streamed {
                dst: raw.base.wrapping_add(block.first_elem),
                len: block.tile.len(),
                buffer: [MaybeUninit::uninit(); STORE_CHUNK],
            },
            Some(block) => Target::InPlace {
                dst: raw.base.wrapping_add(block.first_elem),
                len: block.tile.len(),
            },
            None => Target::Tile(TileSlots::new(shape)?),
        };
        Ok(StoreSink { target })
    }

    /// The `len` slots for the tile's elements `at..at + len` (`len` at
    /// most [`STORE_CHUNK`]), to be written and then passed to
    /// [`StoreSink::commit`]. Empty for a range outside the tile, which
    /// the generated loops never ask for.
    #[inline(always)]
    pub fn chunk(&mut self, at: usize, len: usize) -> &mut [MaybeUninit<T>] {
        let inside = |tile_len: usize| at.checked_add(len).is_some_and(|end| end <= tile_len);
        match &mut self.target {
            Target::InPlace { dst, len: tile_len } if inside(*tile_len) => {
                // SAFETY: `at..at + len` lies inside the block (checked
                // above), which is valid for writes; plain stores mean no
                // other thread accesses it during the launch, and no tile
                // or loaded view borrows a written tensor's memory (loads
                // of it copy), so nothing else aliases these elements.
                // `MaybeUninit<T>` has `T`'s layout.
                unsafe { std::slice::from_raw_parts_mut(dst.add(at).cast(), len) }
            }
            Target::Streamed {
                len: tile_len,
                buffer,
                ..
            } if len <= STORE_CHUNK && inside(*tile_len) => &mut buffer[..len],
            Target::Tile(slots) => at
                .checked_add(len)
                .and_then(|end| slots.slots().get_mut(at..end))
                .unwrap_or_default(),
            _ => &mut [],
        }
    }

    /// Writes out the chunk [`StoreSink::chunk`] gave for `at..at + len`:
    /// streams it from the buffer, or nothing when it was the tensor's own
    /// or the tile's.
    ///
    /// # Safety
    /// Every slot of that chunk must have been written.
    #[inline(always)]
    pub unsafe fn commit(&mut self, at: usize, len: usize) {
        if let Target::Streamed {
            dst,
            len: tile_len,
            buffer,
        } = &mut self.target
            && len <= STORE_CHUNK
            && at.checked_add(len).is_some_and(|end| end <= *tile_len)
        {
            // SAFETY: the caller wrote the chunk's `len` slots, and
            // `MaybeUninit<T>` has `T`'s layout.
            let values = unsafe { std::slice::from_raw_parts(buffer.as_ptr().cast::<T>(), len) };
            // SAFETY: `at..at + len` lies inside the block (checked
            // above), which only this launch's program writes (plain
            // stores); the buffer does not overlap the tensor. The pool
            // fences streamed stores before the launch returns
            // (`stream_copy`).
            unsafe { stream_copy(values, dst.wrapping_add(at)) };
        }
    }

    /// Completes the store: a tile built whole is stored into
    /// `view[slices]` (the `view` and `slices` given to
    /// [`StoreSink::new`]); the tensor's own block is already written.
    ///
    /// # Safety
    /// Every element of the tile must have been written through
    /// [`StoreSink::chunk`].
    #[inline(always)]
    pub unsafe fn finish(self, view: &TensorWrite<'_, T>, slices: &[Slice]) -> Result<()> {
        match self.target {
            Target::Tile(slots) => {
                // SAFETY: the caller wrote every slot.
                let tile = unsafe { slots.assume_init() };
                store(view, slices, &tile)
            }
            Target::InPlace { .. } | Target::Streamed { .. } => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Device;

    /// Writes `view[slices]` (a tile of `shape`, 2-D) through a sink in
    /// chunks, as the generated loops do, element `i` of the tile getting
    /// `i`; returns which target the sink took.
    fn write_through_sink(
        view: &TensorWrite<'_, f32>,
        slices: &[Slice],
        shape: [usize; 2],
    ) -> &'static str {
        let mut sink = StoreSink::new(view, slices, &shape).unwrap();
        let kind = match sink.target {
            Target::InPlace { .. } => "in place",
            Target::Streamed { .. } => "streamed",
            Target::Tile(_) => "tile",
        };
        let [rows, cols] = shape;
        for row in 0..rows {
            for c in (0..cols).step_by(STORE_CHUNK) {
                let at = row * cols + c;
                let len = STORE_CHUNK.min(cols - c);
                let chunk = sink.chunk(at, len);
                assert_eq!(chunk.len(), len);
                for (j, slot) in chunk.iter_mut().enumerate() {
                    slot.write((at + j) as f32);
                }
                // SAFETY: every slot of the chunk was written.
                unsafe { sink.commit(at, len) };
            }
        }
        assert!(sink.chunk(rows * cols, 1).is_empty(), "outside the tile");
        assert!(sink.chunk(usize::MAX, 2).is_empty(), "overflowing range");
        // SAFETY: every element of the tile was written.
        unsafe { sink.finish(view, slices) }.unwrap();
        kind
    }

    /// Rows 1 and 2 of a `[rows, cols]` tensor through a sink; the
    /// tensor's elements and the sink's target.
    fn fill_rows(rows: usize, cols: usize, plain: bool, width: usize) -> (Vec<f32>, &'static str) {
        let dev = Device::host();
        let mut y = dev.zeros::<f32>([rows, cols]).unwrap();
        let kind;
        {
            let mut view = TensorWrite::new(&mut y).unwrap();
            if plain {
                // SAFETY: one thread, and this view is the tensor's only one.
                assert!(unsafe { view.allow_plain_stores() });
            }
            let slices = [
                Slice::Span { start: 1, len: 2 },
                Slice::Span {
                    start: 0,
                    len: width,
                },
            ];
            kind = write_through_sink(&view, &slices, [2, width]);
        }
        (y.to_vec().unwrap(), kind)
    }

    fn expect_rows(values: &[f32], cols: usize, width: usize) {
        for (i, &v) in values.iter().enumerate() {
            let (row, col) = (i / cols, i % cols);
            let expected = if (1..3).contains(&row) && col < width {
                ((row - 1) * width + col) as f32
            } else {
                0.0
            };
            assert_eq!(v, expected, "element {i}");
        }
    }

    #[test]
    fn every_target_writes_what_a_store_would() {
        // 600 columns: chunks that do not divide a row. The larger tensor
        // is written with streaming stores; a view without plain stores,
        // or a block narrower than the rows (strided), builds the tile.
        for (rows, cols, plain, width, target) in [
            (4, 600, true, 600, "in place"),
            (8192, 1030, true, 1030, "streamed"),
            (4, 600, false, 600, "tile"),
            (4, 600, true, 300, "tile"),
        ] {
            let (values, kind) = fill_rows(rows, cols, plain, width);
            assert_eq!(kind, target, "{rows}x{cols}, plain {plain}, width {width}");
            expect_rows(&values, cols, width);
        }
    }

    #[test]
    fn a_masked_block_is_stored_by_the_tile_path() {
        // Rows 3 and 4 of a 4-row tensor: row 4 is masked off.
        let dev = Device::host();
        let mut y = dev.zeros::<f32>([4, 8]).unwrap();
        {
            let mut view = TensorWrite::new(&mut y).unwrap();
            // SAFETY: one thread, and this view is the tensor's only one.
            assert!(unsafe { view.allow_plain_stores() });
            let slices = [Slice::Span { start: 3, len: 2 }, Slice::Full];
            assert_eq!(write_through_sink(&view, &slices, [2, 8]), "tile");
        }
        let values = y.to_vec().unwrap();
        for (i, &v) in values.iter().enumerate() {
            let expected = if i >= 24 { (i - 24) as f32 } else { 0.0 };
            assert_eq!(v, expected, "element {i}");
        }
    }
}
