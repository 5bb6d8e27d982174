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
    /// The first of the tensor's rows this matrix is (non-zero for a part
    /// of a fused tensor such as `attn_qkv`).
    first_row: usize,
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
            first_row: 0,
        })
    }

    /// The fused matrix `name` (ggml dims `[cols, sum(widths)]`) as one
    /// matrix per part, each a row range of it in order; `None` when the
    /// file has no tensor `name`.
    pub fn load_split<const N: usize>(
        gguf: &Gguf,
        name: &str,
        cols: usize,
        widths: [usize; N],
    ) -> Result<Option<[Linear; N]>> {
        let Some(whole) = Linear::load_optional(gguf, name, cols, widths.iter().sum())? else {
            return Ok(None);
        };
        let mut first_row = 0;
        Ok(Some(widths.map(|rows| {
            let part = Linear {
                rows,
                first_row,
                ..whole.clone()
            };
            first_row += rows;
            part
        })))
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
        let data = gguf.tensor_data(&self.info);
        let shape = QMatrixRef {
            ty: self.info.ty,
            rows: self.rows,
            cols: self.cols,
            data: &[],
        };
        // Load checked the row size and the tensor's extent; a short map
        // gives an empty view, which the matmul reports as a shape error.
        let part = shape.row_bytes().and_then(|row_bytes| {
            data.get(self.first_row * row_bytes..)?
                .get(..self.rows * row_bytes)
        });
        QMatrixRef {
            data: part.unwrap_or(&[]),
            ..shape
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

    /// Bytes of this matrix (its rows only, for a part of a fused tensor).
    pub fn n_bytes(&self) -> u64 {
        let shape = QMatrixRef {
            ty: self.info.ty,
            rows: self.rows,
            cols: self.cols,
            data: &[],
        };
        shape.row_bytes().map_or(self.info.n_bytes, |row_bytes| {
            (row_bytes * self.rows) as u64
        })
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

/// Layer `il`'s Q, K and V projections of `[n_embd]` rows into `widths`:
/// the fused `attn_qkv` split by rows when the file has it (what
/// `convert_hf_to_gguf.py --fuse-qkv` writes; llama.cpp loads both forms),
/// else `attn_q`, `attn_k` and `attn_v`.
pub fn load_qkv(gguf: &Gguf, il: usize, n_embd: usize, widths: [usize; 3]) -> Result<[Linear; 3]> {
    let name = |t: &str| format!("blk.{il}.{t}.weight");
    if let Some(parts) = Linear::load_split(gguf, &name("attn_qkv"), n_embd, widths)? {
        return Ok(parts);
    }
    let [q, k, v] = widths;
    Ok([
        Linear::load(gguf, &name("attn_q"), n_embd, q)?,
        Linear::load(gguf, &name("attn_k"), n_embd, k)?,
        Linear::load(gguf, &name("attn_v"), n_embd, v)?,
    ])
}

/// Layer `il`'s optional Q, K and V biases: the fused `attn_qkv.bias` split
/// when present, else each of `attn_{q,k,v}.bias` that exists (a fused
/// weight may come with separate biases, as llama.cpp allows).
pub fn load_qkv_biases(
    gguf: &Gguf,
    il: usize,
    widths: [usize; 3],
) -> Result<[Option<Vec<f32>>; 3]> {
    let name = |t: &str| format!("blk.{il}.{t}.bias");
    if let Some(fused) = load_vector_optional(gguf, &name("attn_qkv"), widths.iter().sum())? {
        let mut rest = fused.as_slice();
        return Ok(widths.map(|len| {
            let (part, tail) = rest.split_at(len);
            rest = tail;
            Some(part.to_vec())
        }));
    }
    let [q, k, v] = widths;
    Ok([
        load_vector_optional(gguf, &name("attn_q"), q)?,
        load_vector_optional(gguf, &name("attn_k"), k)?,
        load_vector_optional(gguf, &name("attn_v"), v)?,
    ])
}
