//! Weights as borrowed views of the memory-mapped file: a [`Linear`] keeps
//! only where its bytes are; small vectors (norms, biases) are read to f32.

use crate::engine::{EngineError, Result};
use crate::gguf::{Gguf, TensorInfo};
use phobos_rt::host::qmatmul::with_shared_activations;

use crate::ops::{QMatrixRef, matmul};

/// A weight matrix of `rows` output features by `cols` inputs.
#[derive(Debug, Clone)]
pub struct Linear {
    pub rows: usize,
    pub cols: usize,
    info: TensorInfo,
}

fn shape_error(info: &TensorInfo, expected: &[u64]) -> EngineError {
    EngineError::TensorShape {
        name: info.name.clone(),
        expected: expected.to_vec(),
        found: info.dims.clone(),
        ty: info.ty.name(),
    }
}

fn find<'g>(gguf: &'g Gguf, name: &str) -> Result<&'g TensorInfo> {
    gguf.tensor_info(name)
        .ok_or_else(|| EngineError::MissingTensor {
            name: name.to_owned(),
        })
}

impl Linear {
    /// The matrix `name` with ggml dims `[cols, rows]`.
    pub fn load(gguf: &Gguf, name: &str, cols: usize, rows: usize) -> Result<Linear> {
        let info = find(gguf, name)?;
        let expected = [cols as u64, rows as u64];
        if info.dims != expected {
            return Err(shape_error(info, &expected));
        }
        let probe = QMatrixRef {
            ty: info.ty,
            rows,
            cols,
            data: &[],
        };
        if probe.row_bytes().is_none() || !crate::quant::can_dequantize(info.ty) {
            return Err(shape_error(info, &expected));
        }
        Ok(Linear {
            rows,
            cols,
            info: info.clone(),
        })
    }

    pub fn load_optional(
        gguf: &Gguf,
        name: &str,
        cols: usize,
        rows: usize,
    ) -> Result<Option<Linear>> {
        if gguf.tensor_info(name).is_none() {
            return Ok(None);
        }
        Linear::load(gguf, name, cols, rows).map(Some)
    }

    pub fn view<'g>(&self, gguf: &'g Gguf) -> QMatrixRef<'g> {
        QMatrixRef {
            ty: self.info.ty,
            rows: self.rows,
            cols: self.cols,
            data: gguf.tensor_data(&self.info),
        }
    }

    /// `x` is `[m][cols]`; returns `[m][rows]`.
    pub fn apply(&self, gguf: &Gguf, x: &[f32], m: usize) -> Result<Vec<f32>> {
        let mut out = vec![0f32; m * self.rows];
        matmul(&self.view(gguf), x, m, &mut out)?;
        Ok(out)
    }

    /// Several weights over the same activations (q/k/v, gate/up), each
    /// through its kernel ([`matmul`]), with `x` quantized once per partner
    /// type for all of them (`with_shared_activations`); the results are
    /// the bits [`Linear::apply`] gives for each.
    pub fn apply_all<const N: usize>(
        linears: [&Linear; N],
        gguf: &Gguf,
        x: &[f32],
        m: usize,
    ) -> Result<[Vec<f32>; N]> {
        with_shared_activations(x, || {
            let mut outs: [Vec<f32>; N] = std::array::from_fn(|_| Vec::new());
            for (linear, slot) in linears.into_iter().zip(outs.iter_mut()) {
                *slot = linear.apply(gguf, x, m)?;
            }
            Ok(outs)
        })
    }

    /// Dequantizes row `row` (an embedding lookup) into `out`.
    pub fn row_into(&self, gguf: &Gguf, row: usize, out: &mut [f32]) -> Result<()> {
        let view = self.view(gguf);
        let row_bytes = view.row_bytes().unwrap_or(0);
        let bytes = view
            .data
            .get(row * row_bytes..(row + 1) * row_bytes)
            .unwrap_or(&[]);
        crate::quant::dequantize(view.ty, bytes, out).map_err(|source| {
            EngineError::Gguf(crate::gguf::GgufError::Dequantize {
                tensor: self.info.name.clone(),
                source,
            })
        })
    }

    pub fn n_bytes(&self) -> u64 {
        self.info.n_bytes
    }
}

/// A 1-D f32 vector (norm weight, bias) of length `len`, read to memory.
pub fn load_vector(gguf: &Gguf, name: &str, len: usize) -> Result<Vec<f32>> {
    let info = find(gguf, name)?;
    if info.dims != [len as u64] {
        return Err(shape_error(info, &[len as u64]));
    }
    Ok(gguf.dequantize_tensor(name)?)
}

pub fn load_vector_optional(gguf: &Gguf, name: &str, len: usize) -> Result<Option<Vec<f32>>> {
    if gguf.tensor_info(name).is_none() {
        return Ok(None);
    }
    load_vector(gguf, name, len).map(Some)
}
