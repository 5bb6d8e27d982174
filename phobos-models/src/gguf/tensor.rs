use crate::quant::GgmlType;

/// One tensor directory entry, validated against the file at open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    pub name: String,
    /// Extents in ggml order: `dims[0]` is the contiguous row length.
    pub dims: Vec<u64>,
    pub ty: GgmlType,
    /// Offset of the data relative to the start of the data section.
    pub offset: u64,
    pub n_elements: u64,
    pub n_bytes: u64,
    /// File offset of this directory entry, for error messages.
    pub entry_offset: u64,
}

impl TensorInfo {
    /// Row length (ggml ne[0]); 1 for a zero-dimensional tensor.
    pub fn row_len(&self) -> u64 {
        self.dims.first().copied().unwrap_or(1)
    }

    /// Number of rows: the product of all dims after the first. Exact for
    /// every entry a [`super::Gguf`] hands out (its shape was checked at
    /// open); saturates for a hand-built entry whose dims overflow.
    pub fn n_rows(&self) -> u64 {
        self.dims
            .iter()
            .skip(1)
            .fold(1u64, |acc, &d| acc.saturating_mul(d))
    }
}

/// A tensor's directory entry plus its bytes, borrowed from the file.
#[derive(Debug, Clone, Copy)]
pub struct TensorView<'a> {
    pub info: &'a TensorInfo,
    pub data: &'a [u8],
}

impl<'a> TensorView<'a> {
    pub fn name(&self) -> &'a str {
        &self.info.name
    }
    pub fn ty(&self) -> GgmlType {
        self.info.ty
    }
    pub fn dims(&self) -> &'a [u64] {
        &self.info.dims
    }
    pub fn n_elements(&self) -> u64 {
        self.info.n_elements
    }
}

impl<'a> TensorView<'a> {
    /// The tensor as a quantized kernel operand of format `F`, its blocks
    /// borrowed from the file (no copy). The shape is ggml's dims reversed
    /// (row-major: the contiguous, blocked row length last). An `Err` when
    /// the tensor is stored in another format or its dims do not fit.
    pub fn to_qtensor<F: phobos_rt::QuantFormat>(
        &self,
    ) -> Result<phobos_rt::QTensor<'a, F>, phobos_rt::Error> {
        if self.ty() != F::GGML {
            return Err(phobos_rt::Error::Quant {
                format: F::NAME,
                message: format!("tensor `{}` is stored as {}", self.name(), self.ty()),
            });
        }
        let shape = self
            .dims()
            .iter()
            .rev()
            .map(|&d| usize::try_from(d))
            .collect::<Result<Vec<usize>, _>>()
            .map_err(|_| phobos_rt::Error::Quant {
                format: F::NAME,
                message: format!("tensor `{}` has a dim past usize", self.name()),
            })?;
        phobos_rt::QTensor::borrowed(self.data, shape)
    }
}
