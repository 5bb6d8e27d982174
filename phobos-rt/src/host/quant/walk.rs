//! The blocks a slice of a quantized tensor covers, shared by loads
//! ([`super::load_quant`]) and stores ([`super::store_quant`]).

use super::super::Slice;
use super::super::slice::MAX_SLICE_RANK;
use crate::quant::GgmlType;
use crate::{Error, Result};

/// A slice of a quantized tensor resolved to blocks.
pub(super) struct BlockWalk {
    /// The tile's extents in elements (point subscripts dropped).
    pub tile_dims: Vec<usize>,
    /// Tile rows (product of the tile's outer extents).
    pub rows: usize,
    /// Blocks per tile row.
    pub tile_row_blocks: usize,
    outer: Vec<(i64, usize, usize)>,
    col_block_start: i64,
    row_blocks: usize,
}

impl BlockWalk {
    /// Resolves `slices` of a tensor of `shape` whose last dim is blocked
    /// in `ty`'s blocks. The last subscript must be a block-aligned span
    /// (or `Full`); the compiler proves that, and this re-checks it.
    pub fn new(
        ty: GgmlType,
        name: &'static str,
        shape: &[usize],
        slices: &[Slice],
    ) -> Result<Self> {
        let info = ty.info();
        let bad = |reason: String| Error::QuantShape {
            format: name,
            shape: shape.to_vec(),
            reason,
        };
        if slices.len() != shape.len() || shape.is_empty() || shape.len() > MAX_SLICE_RANK {
            return Err(Error::SliceRank {
                tensor_rank: shape.len(),
                slices: slices.len(),
            });
        }
        let last = shape.len() - 1;
        let (col_start, col_len) = match slices[last] {
            Slice::Span { start, len } => (start, len),
            Slice::Full => (0, shape[last]),
            Slice::Point(_) => {
                return Err(bad(
                    "the blocked last dim must be sliced with a span".to_string()
                ));
            }
        };
        let block_len = info.block_len as i64;
        if col_start.rem_euclid(block_len) != 0 || col_len % info.block_len != 0 {
            return Err(bad(format!(
                "the slice {col_start} :+ {col_len} of the blocked dim is not aligned to blocks of {block_len}"
            )));
        }
        // Outer dims: per dim (start, len, extent); points drop out of the tile.
        let mut tile_dims = Vec::with_capacity(shape.len());
        let mut outer = Vec::with_capacity(last);
        for (slice, &extent) in slices[..last].iter().zip(shape) {
            let (start, len) = match *slice {
                Slice::Point(i) => (i, None),
                Slice::Span { start, len } => (start, Some(len)),
                Slice::Full => (0, Some(extent)),
            };
            if let Some(len) = len {
                tile_dims.push(len);
            }
            outer.push((start, len.unwrap_or(1), extent));
        }
        tile_dims.push(col_len);
        Ok(BlockWalk {
            tile_dims,
            rows: outer.iter().map(|&(_, len, _)| len).product(),
            tile_row_blocks: col_len / info.block_len,
            outer,
            col_block_start: col_start / block_len,
            row_blocks: shape[last] / info.block_len,
        })
    }

    /// Calls `each(tile_block, tensor_block)` for every block of the tile,
    /// in row-major order: `tensor_block` is the block's index in the
    /// tensor, or `None` when it lies outside (absent).
    pub fn for_each(&self, mut each: impl FnMut(usize, Option<usize>) -> Result<()>) -> Result<()> {
        let mut index = vec![0usize; self.outer.len()];
        for row in 0..self.rows {
            // The tensor row (over the outer dims, row-major), if in bounds.
            let mut tensor_row = Some(0usize);
            for (d, &(start, _, extent)) in self.outer.iter().enumerate() {
                let coord = i128::from(start) + index[d] as i128;
                let inside = coord >= 0 && coord < extent as i128;
                tensor_row = tensor_row
                    .filter(|_| inside)
                    .map(|r| r * extent + coord as usize);
            }
            for b in 0..self.tile_row_blocks {
                let col_block = self.col_block_start + b as i64;
                let present = tensor_row
                    .filter(|_| col_block >= 0 && col_block < self.row_blocks as i64)
                    .map(|r| r * self.row_blocks + col_block as usize);
                each(row * self.tile_row_blocks + b, present)?;
            }
            for d in (0..self.outer.len()).rev() {
                index[d] += 1;
                if index[d] < self.outer[d].1 {
                    break;
                }
                index[d] = 0;
            }
        }
        Ok(())
    }
}
