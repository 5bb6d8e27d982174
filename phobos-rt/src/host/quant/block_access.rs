//! Block-level access to quantized tiles (SPEC.md §14, "Block access"),
//! and stores that quantize (writable `q8_0` tensors).
//!
//! - [`qlevels`]: each element's integer level, the `w_i` of §14's ggml
//!   terms, as `i8` (absent blocks: 0).
//! - [`qscales`]: each block's scale `d` as `f32` (absent blocks: 0).
//! - [`store_quant`]: quantizes a float tile into the blocks of a writable
//!   quantized tensor with phobos-quant's quantizer (ggml's reference
//!   rounding), skipping blocks outside the tensor.
//!
//! Block access covers the 32-element formats with an integer form:
//! `q4_0 q4_1 q5_0 q5_1 q8_0 iq4_nl` (the checker refuses the others).

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU8, Ordering};

use super::block_dot::{IQ4NL_LEVELS, f16_at, five_bit, nibble, u32_at};
use super::walk::BlockWalk;
use super::{QTile, Slice};
use crate::host::tile::Tile;
use crate::quant::{GgmlType, QTensor, QuantFormat};
use crate::{Error, Result};

fn unsupported(q: &QTile, what: &str) -> Error {
    Error::Quant {
        format: q.name,
        message: format!("{what} supports q4_0 q4_1 q5_0 q5_1 q8_0 iq4_nl"),
    }
}

/// The integer level of element `j` of block `w` of `ty`, or `None` for a
/// format without block access.
fn level(ty: GgmlType, w: &[u8], j: usize) -> Option<i8> {
    use GgmlType::*;
    Some(match ty {
        Q4_0 => nibble(&w[2..], j) as i8 - 8,
        Q5_0 => five_bit(u32_at(w, 2), &w[6..], j) as i8 - 16,
        Q8_0 => w[2 + j] as i8,
        IQ4_NL => IQ4NL_LEVELS[usize::from(nibble(&w[2..], j))],
        Q4_1 => nibble(&w[4..], j) as i8,
        Q5_1 => five_bit(u32_at(w, 4), &w[8..], j) as i8,
        _ => return None,
    })
}

fn has_block_access(ty: GgmlType) -> bool {
    use GgmlType::*;
    matches!(ty, Q4_0 | Q4_1 | Q5_0 | Q5_1 | Q8_0 | IQ4_NL)
}

/// `qlevels(q)`: the integer levels, same shape as `q`.
pub fn qlevels(q: &QTile) -> Result<Tile<i8>> {
    if !has_block_access(q.ty) {
        return Err(unsupported(q, "`qlevels`"));
    }
    let (len, bytes) = (q.block_len(), q.block_bytes());
    let mut out = vec![0i8; q.shape.len()];
    for (i, chunk) in out.chunks_exact_mut(len).enumerate() {
        if q.present[i] {
            let w = &q.blocks[i * bytes..(i + 1) * bytes];
            for (j, o) in chunk.iter_mut().enumerate() {
                *o = level(q.ty, w, j).unwrap_or(0);
            }
        }
    }
    Tile::from_vec(q.shape.dims(), out)
}

/// `qscales(q)`: each block's `d`, shape `q`'s with the last dim divided by
/// the block length.
pub fn qscales(q: &QTile) -> Result<Tile<f32>> {
    if !has_block_access(q.ty) {
        return Err(unsupported(q, "`qscales`"));
    }
    let bytes = q.block_bytes();
    let scales = (0..q.present.len())
        .map(|i| {
            if q.present[i] {
                f16_at(&q.blocks[i * bytes..], 0)
            } else {
                0.0
            }
        })
        .collect();
    let mut dims = q.shape().to_vec();
    if let Some(last) = dims.last_mut() {
        *last /= q.block_len();
    }
    Tile::from_vec(&dims, scales)
}

/// Write access to a quantized tensor from inside tile programs: programs
/// run in parallel, so bytes are stored with relaxed atomics (as tensor
/// elements are); programs that write the same block race, as they would
/// on a float tensor.
#[derive(Debug, Clone, Copy)]
pub struct QuantWrite<'a> {
    ty: GgmlType,
    name: &'static str,
    base: *mut u8,
    len_bytes: usize,
    shape: &'a [usize],
    borrow: PhantomData<&'a mut [u8]>,
}

// SAFETY: the bytes are only touched through atomic byte stores; the
// exclusive borrow of the tensor keeps them alive and unaliased by
// non-atomic code for 'a.
unsafe impl Send for QuantWrite<'_> {}
// SAFETY: as above.
unsafe impl Sync for QuantWrite<'_> {}

impl<'a> QuantWrite<'a> {
    /// A writable view of `tensor`'s blocks (a borrowed tensor gets its own
    /// copy of the bytes first: a file's mapping is never written).
    pub fn new<F: QuantFormat>(tensor: &'a mut QTensor<'_, F>) -> Result<Self> {
        let ty = F::GGML;
        let name = F::NAME;
        let shape: *const [usize] = tensor.shape();
        let bytes = tensor.bytes_mut();
        Ok(QuantWrite {
            ty,
            name,
            base: bytes.as_mut_ptr(),
            len_bytes: bytes.len(),
            // SAFETY: the shape lives in the tensor, borrowed for 'a; only
            // the bytes are written through this view.
            shape: unsafe { &*shape },
            borrow: PhantomData,
        })
    }

    fn store(&self, at: usize, data: &[u8]) {
        debug_assert!(at + data.len() <= self.len_bytes);
        for (i, &b) in data.iter().enumerate() {
            // SAFETY: `at + i` is inside the tensor's bytes (the walk only
            // yields blocks inside it); AtomicU8 has u8's layout.
            unsafe { (*self.base.add(at + i).cast::<AtomicU8>()).store(b, Ordering::Relaxed) };
        }
    }
}

/// `view[slices] = values`: quantizes each block of `values` (f32, the
/// slice's shape) and writes the blocks that lie inside the tensor.
pub fn store_quant(view: &QuantWrite<'_>, slices: &[Slice], values: &Tile<f32>) -> Result<()> {
    let info = view.ty.info();
    let walk = BlockWalk::new(view.ty, view.name, view.shape, slices)?;
    if values.shape() != walk.tile_dims.as_slice() {
        return Err(Error::ShapeMismatch {
            op: "store (quantized)",
            lhs: walk.tile_dims.clone(),
            rhs: values.shape().to_vec(),
            expected: "a value of the slice's shape",
        });
    }
    let mut block = Vec::with_capacity(info.block_bytes);
    let values = values.as_slice();
    walk.for_each(|src, dst| {
        if let Some(dst) = dst {
            block.clear();
            let chunk = &values[src * info.block_len..(src + 1) * info.block_len];
            phobos_quant::quantize(view.ty, chunk, &mut block).map_err(|source| Error::Quant {
                format: view.name,
                message: source.to_string(),
            })?;
            view.store(dst * info.block_bytes, &block);
        }
        Ok(())
    })
}
