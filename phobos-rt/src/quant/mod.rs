//! Quantized tensors: GGUF's block formats as kernel operands.
//!
//! A [`QTensor<'a, F>`] is a row-major tensor whose last dim is stored in
//! blocks of format `F` (a marker type such as [`Q4K`], implementing
//! [`QuantFormat`]), so a kernel parameter `tensor<q4_k>[N, K]` takes a
//! `&QTensor<'_, Q4K>` and the format mismatch is a compile error, not a
//! launch error. Shapes are in elements; the last dim must be a whole
//! number of blocks.
//!
//! Storage is the file's bytes as they are: [`QTensor::borrowed`] wraps a
//! `&'a [u8]` (a GGUF tensor inside a memory map) without copying, so the
//! borrow checker keeps the map alive for as long as the tensor is used;
//! [`QTensor::owned`] takes a `Vec<u8>` (`'static`), for quantized data
//! made at run time. [`QTensor::bytes`] is exactly what an upload to a
//! device copies: the blocks in file order, no repacking. A lifetime rather
//! than an `Arc` of the map keeps phobos-rt free of any file type and costs
//! nothing at run time; a caller that must hold tensors next to their file
//! can leak or own the map and use `QTensor<'static, F>`.

mod format;

use std::borrow::Cow;
use std::marker::PhantomData;

pub use format::{
    Iq1M, Iq1S, Iq2S, Iq2Xs, Iq2Xxs, Iq3S, Iq3Xxs, Iq4Nl, Iq4Xs, Q2K, Q3K, Q4_0, Q4_1, Q4K, Q5_0,
    Q5_1, Q5K, Q6K, Q8_0, QuantFormat, Tq1_0, Tq2_0,
};
pub use phobos_quant::{GgmlType, QuantError};

use crate::{Device, Error, Result, Shape};

/// A quantized tensor of format `F` on the host, borrowing its blocks for
/// `'a` (or owning them, `'static`).
#[derive(Clone)]
pub struct QTensor<'a, F: QuantFormat> {
    bytes: Cow<'a, [u8]>,
    shape: Shape,
    len: usize,
    format: PhantomData<F>,
}

impl<'a, F: QuantFormat> QTensor<'a, F> {
    /// Wraps `bytes` (whole blocks of `F`, row-major) as a tensor of
    /// `shape` (in elements) without copying.
    pub fn borrowed(bytes: &'a [u8], shape: impl Into<Shape>) -> Result<Self> {
        Self::new(Cow::Borrowed(bytes), shape.into())
    }

    /// The blocks of the tensor, row-major, exactly as stored in the file.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Extents in elements, row-major (the last dim is blocked).
    pub fn shape(&self) -> &[usize] {
        self.shape.dims()
    }

    /// Number of dims.
    pub fn rank(&self) -> usize {
        self.shape.rank()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ggml type of the blocks.
    pub fn ggml_type(&self) -> GgmlType {
        F::GGML
    }

    /// Where the blocks live (the host for now).
    pub fn device(&self) -> Device {
        Device::host()
    }

    /// A copy that owns its blocks, free of the borrow.
    pub fn into_owned(self) -> QTensor<'static, F> {
        QTensor {
            bytes: Cow::Owned(self.bytes.into_owned()),
            shape: self.shape,
            len: self.len,
            format: PhantomData,
        }
    }

    fn new(bytes: Cow<'a, [u8]>, shape: Shape) -> Result<Self> {
        let dims = shape.dims();
        let info = F::GGML.info();
        let Some(&row_len) = dims.last() else {
            return Err(Error::QuantShape {
                format: F::NAME,
                shape: dims.to_vec(),
                reason: "a quantized tensor needs rank 1 or more (its last dim is blocked)"
                    .to_string(),
            });
        };
        if !row_len.is_multiple_of(info.block_len) {
            return Err(Error::QuantShape {
                format: F::NAME,
                shape: dims.to_vec(),
                reason: format!(
                    "the last dim ({row_len}) must be a multiple of the block length {}",
                    info.block_len
                ),
            });
        }
        let len = shape.elem_count()?;
        let expected = (len / info.block_len).checked_mul(info.block_bytes);
        if expected != Some(bytes.len()) {
            return Err(Error::QuantBytes {
                format: F::NAME,
                shape: dims.to_vec(),
                expected: expected.unwrap_or(usize::MAX),
                actual: bytes.len(),
            });
        }
        Ok(QTensor {
            bytes,
            shape,
            len,
            format: PhantomData,
        })
    }
}

impl<F: QuantFormat> QTensor<'static, F> {
    /// Takes ownership of `bytes` (whole blocks of `F`, row-major).
    pub fn owned(bytes: Vec<u8>, shape: impl Into<Shape>) -> Result<Self> {
        Self::new(Cow::Owned(bytes), shape.into())
    }

    /// Quantizes `values` (row-major, `shape` in elements) with
    /// phobos-quant's quantizer for `F`.
    pub fn quantize(values: &[f32], shape: impl Into<Shape>) -> Result<Self> {
        let shape = shape.into();
        let len = shape.elem_count()?;
        if values.len() != len {
            return Err(Error::LenMismatch {
                shape: shape.dims().to_vec(),
                expected: len,
                actual: values.len(),
            });
        }
        let mut bytes = Vec::new();
        phobos_quant::quantize(F::GGML, values, &mut bytes).map_err(|source| Error::Quant {
            format: F::NAME,
            message: source.to_string(),
        })?;
        Self::new(Cow::Owned(bytes), shape)
    }
}

impl<F: QuantFormat> std::fmt::Debug for QTensor<'_, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QTensor")
            .field("format", &F::NAME)
            .field("shape", &self.shape())
            .field("len_bytes", &self.bytes.len())
            .finish()
    }
}
