//! Quantized operands of host kernels (SPEC.md, "Quantized tensors").
//!
//! - [`QuantRead`]: a program's view of a [`QTensor`] (its blocks, shape
//!   and ggml type; the format marker is erased here, the launcher's
//!   signature already checked it).
//! - [`load_quant`]: a slice of a quantized tensor as a [`QTile`], the
//!   blocks copied as they are. The last (blocked) dim must be sliced with
//!   a block-aligned span; whole blocks past the tensor and rows outside it
//!   are absent (they dequantize to zero and contribute nothing to a dot).
//! - [`dequant`]: a `QTile` to `f32`, bit-identical to
//!   `phobos_quant::dequantize`.
//! - Contractions with one quantized operand: [`dot_quant_lhs`]
//!   (`dot(q, x)`), [`dot_quant_rhs`] (`dot(x, q)`), [`dot_t_quant_lhs`]
//!   (`dot_t(q, x)`) and [`dot_t_quant_rhs`] (`dot_t(x, q)`). When the
//!   quantized operand's blocks run along the contracted dim and the format
//!   has a partner type ([`ggml_partner`]), they follow ggml's numerics
//!   ([`block_dot`]); otherwise they are the exact form
//!   `dot(dequant(q), f32(x))`.

mod block_dot;
mod contract;

pub use block_dot::ggml_partner;
pub use contract::{dot_quant_lhs, dot_quant_rhs, dot_t_quant_lhs, dot_t_quant_rhs, ggml_rows};

use super::Slice;
use super::slice::MAX_SLICE_RANK;
use super::tile::{Tile, TileShape};
use crate::quant::{GgmlType, QTensor, QuantFormat};
use crate::{Error, Result};

/// Read access to a quantized tensor from inside tile programs.
#[derive(Debug, Clone, Copy)]
pub struct QuantRead<'a> {
    ty: GgmlType,
    name: &'static str,
    bytes: &'a [u8],
    shape: &'a [usize],
}

impl<'a> QuantRead<'a> {
    /// A view of `tensor`'s blocks.
    pub fn new<F: QuantFormat>(tensor: &'a QTensor<'_, F>) -> Result<Self> {
        Ok(QuantRead {
            ty: F::GGML,
            name: F::NAME,
            bytes: tensor.bytes(),
            shape: tensor.shape(),
        })
    }

    /// Extents in elements.
    pub fn shape(&self) -> &'a [usize] {
        self.shape
    }

    /// The ggml type of the blocks.
    pub fn ggml_type(&self) -> GgmlType {
        self.ty
    }
}

/// A tile of a quantized tensor: its blocks, row-major, with the blocks
/// that lie outside the tensor marked absent (and zero-filled).
#[derive(Debug, Clone, PartialEq)]
pub struct QTile {
    ty: GgmlType,
    name: &'static str,
    shape: TileShape,
    blocks: Vec<u8>,
    present: Vec<bool>,
}

impl QTile {
    /// Builds a tile from whole blocks (`shape` in elements, last dim
    /// blocked); `present[i]` says whether block `i` is inside the tensor.
    pub fn from_blocks(
        ty: GgmlType,
        shape: &[usize],
        blocks: Vec<u8>,
        present: Vec<bool>,
    ) -> Result<QTile> {
        let info = ty.info();
        let tile = TileShape::new(shape)?;
        let n_blocks = match shape.last() {
            Some(&last) if last % info.block_len == 0 => tile.len() / info.block_len,
            _ => {
                return Err(Error::QuantShape {
                    format: info.name,
                    shape: shape.to_vec(),
                    reason: format!(
                        "a quantized tile's last dim must be a multiple of the block length {}",
                        info.block_len
                    ),
                });
            }
        };
        if present.len() != n_blocks || blocks.len() != n_blocks * info.block_bytes {
            return Err(Error::QuantBytes {
                format: info.name,
                shape: shape.to_vec(),
                expected: n_blocks * info.block_bytes,
                actual: blocks.len(),
            });
        }
        Ok(QTile {
            ty,
            name: info.name,
            shape: tile,
            blocks,
            present,
        })
    }

    /// Extents in elements.
    pub fn shape(&self) -> &[usize] {
        self.shape.dims()
    }

    /// The ggml type of the blocks.
    pub fn ggml_type(&self) -> GgmlType {
        self.ty
    }

    /// All blocks, row-major (absent ones zero-filled).
    pub fn blocks(&self) -> &[u8] {
        &self.blocks
    }

    /// Whether each block lies inside the tensor.
    pub fn present(&self) -> &[bool] {
        &self.present
    }

    fn block_len(&self) -> usize {
        self.ty.info().block_len
    }

    fn block_bytes(&self) -> usize {
        self.ty.info().block_bytes
    }

    /// Blocks per row (along the last dim).
    fn blocks_per_row(&self) -> usize {
        self.shape.dims().last().copied().unwrap_or(0) / self.block_len()
    }

    /// Block `b` of row `r`, or `None` when it lies outside the tensor.
    fn block(&self, r: usize, b: usize) -> Option<&[u8]> {
        let index = r * self.blocks_per_row() + b;
        let bytes = self.block_bytes();
        self.present[index].then(|| &self.blocks[index * bytes..(index + 1) * bytes])
    }
}

/// Loads `view[slices]` as a quantized tile. The last subscript must be a
/// span (or `Full`) whose start and length are multiples of the block
/// length; the compiler proves that, and this re-checks it.
pub fn load_quant(view: &QuantRead<'_>, slices: &[Slice]) -> Result<QTile> {
    let shape = view.shape;
    let info = view.ty.info();
    let bad = |reason: String| Error::QuantShape {
        format: view.name,
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
    let row_blocks = shape[last] / info.block_len;
    let tile_row_blocks = col_len / info.block_len;
    let rows: usize = outer.iter().map(|&(_, len, _)| len).product();
    let n_blocks = rows * tile_row_blocks;
    let mut blocks = vec![0u8; n_blocks * info.block_bytes];
    let mut present = vec![false; n_blocks];
    let mut index = vec![0usize; last];
    for row in 0..rows {
        // The tensor row (over the outer dims, row-major), if in bounds.
        let mut tensor_row = Some(0usize);
        for (d, &(start, _, extent)) in outer.iter().enumerate() {
            let coord = i128::from(start) + index[d] as i128;
            let inside = coord >= 0 && coord < extent as i128;
            tensor_row = tensor_row
                .filter(|_| inside)
                .map(|r| r * extent + coord as usize);
        }
        if let Some(tensor_row) = tensor_row {
            for b in 0..tile_row_blocks {
                let col_block = col_start / block_len + b as i64;
                if col_block < 0 || col_block >= row_blocks as i64 {
                    continue;
                }
                let src = (tensor_row * row_blocks + col_block as usize) * info.block_bytes;
                let dst = row * tile_row_blocks + b;
                blocks[dst * info.block_bytes..(dst + 1) * info.block_bytes]
                    .copy_from_slice(&view.bytes[src..src + info.block_bytes]);
                present[dst] = true;
            }
        }
        for d in (0..last).rev() {
            index[d] += 1;
            if index[d] < outer[d].1 {
                break;
            }
            index[d] = 0;
        }
    }
    QTile::from_blocks(view.ty, &tile_dims, blocks, present)
}

/// `dequant(q)`: every present block through `phobos_quant::dequantize`,
/// absent blocks as zeros.
pub fn dequant(q: &QTile) -> Result<Tile<f32>> {
    let (len, bytes) = (q.block_len(), q.block_bytes());
    let mut out = vec![0f32; q.shape.len()];
    for (i, chunk) in out.chunks_exact_mut(len).enumerate() {
        if q.present[i] {
            phobos_quant::dequantize(q.ty, &q.blocks[i * bytes..(i + 1) * bytes], chunk).map_err(
                |source| Error::Quant {
                    format: q.name,
                    message: source.to_string(),
                },
            )?;
        }
    }
    Tile::from_vec(q.shape.dims(), out)
}
