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

mod block_access;
mod block_dot;
mod contract;
mod walk;

pub use block_access::{QuantWrite, qlevels, qscales, store_quant};
pub use block_dot::ggml_partner;
pub use contract::{dot_quant_lhs, dot_quant_rhs, dot_t_quant_lhs, dot_t_quant_rhs, ggml_rows};

use self::walk::BlockWalk;
use super::Slice;
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
    let info = view.ty.info();
    let walk = BlockWalk::new(view.ty, view.name, view.shape, slices)?;
    let n_blocks = walk.rows * walk.tile_row_blocks;
    let mut blocks = vec![0u8; n_blocks * info.block_bytes];
    let mut present = vec![false; n_blocks];
    walk.for_each(|dst, src| {
        if let Some(src) = src {
            let bytes = info.block_bytes;
            blocks[dst * bytes..(dst + 1) * bytes]
                .copy_from_slice(&view.bytes[src * bytes..(src + 1) * bytes]);
            present[dst] = true;
        }
        Ok(())
    })?;
    QTile::from_blocks(view.ty, &walk.tile_dims, blocks, present)
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
