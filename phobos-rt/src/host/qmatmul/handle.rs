//! The quantized matmul as the hand-written host path of a kernel's typed
//! handle: a kernel `Y[M, N] = X[M, K] @ W[N, K]ᵀ` with a quantized `W`
//! names [`qmatmul_host`] in `@host_impl` (SPEC.md §11), and its launch on
//! the host runs this module's kernels instead of the generated tile code.
//!
//! What it guarantees against the kernel's generated body (SPEC.md §14's
//! ggml form): the same integer sums on the same partner-quantized
//! activations, with the float steps of ggml's AVX2 `vec_dot` (eight lanes,
//! one FMA per block and lane, the horizontal sum) instead of one term per
//! block in block order, and ggml's x86 q8_0/q8_1 activation quantizer,
//! which rounds exact ties to even where the reference rounds them away
//! from zero. Each result is within the f32 bound of its own exact value;
//! phobos-models' tests check both paths on every format. Formats without
//! a quantized kernel here are computed in the exact form the generated
//! body uses for them (dequantize, then f32 dots), one weight row at a time.

use phobos_quant::{GgmlType, dequantize};

use super::shared::quantized_activations;
use super::{QMatrixRef, matmul_quantized_threaded};
use crate::host::{with_host_slice, with_host_slice_mut};
use crate::quant::{QTensor, QuantFormat};
use crate::{Device, Error, Result, Tensor};

/// `y[m, n] = sum_k x[m, k] * w[n, k]` on the host: the hand-written body
/// behind `@host_impl(qmatmul_host)` kernels with parameters
/// `(X: tensor<f32>[M, K], W: tensor<FORMAT>[N, K], Y: tensor<f32>[M, N])`.
/// The launcher has checked the shapes; anything else is an error.
pub fn qmatmul_host<F: QuantFormat>(
    _device: &Device,
    x: &Tensor<f32>,
    w: &QTensor<'_, F>,
    y: &mut Tensor<f32>,
) -> Result<()> {
    let (&[m_rows, cols], &[rows, w_cols], &[y_rows, y_cols]) = (x.shape(), w.shape(), y.shape())
    else {
        return Err(shape_error(x, w, y));
    };
    if w_cols != cols || y_rows != m_rows || y_cols != rows {
        return Err(shape_error(x, w, y));
    }
    let weights = QMatrixRef {
        ty: F::GGML,
        rows,
        cols,
        data: w.bytes(),
    };
    // The output's slice is taken first: lent in place only when `y` owns
    // its allocation alone (an owned one, or the caller's `&mut [f32]` under
    // `HostDevice::with_borrowed`), so `x` cannot share it; otherwise it is
    // a copy stored back after `x`'s plain-read guard is gone. Either way
    // the store never waits on this launch's own reader.
    if super::vec_dot_type(F::GGML).is_none() {
        return with_host_slice_mut(y, |y| {
            with_host_slice(x, |x| exact_form(&weights, x, m_rows, y))
        })??;
    }
    // Activations quantized once per scope where the engine shares them
    // (`with_shared_activations`); the numerics are `matmul_threaded`'s.
    Ok(with_host_slice_mut(y, |y| {
        with_host_slice(x, |x| {
            let acts = quantized_activations(F::GGML, x, m_rows, cols)?;
            matmul_quantized_threaded(&weights, &acts, y)
        })
    })???)
}

fn shape_error<F: QuantFormat>(x: &Tensor<f32>, w: &QTensor<'_, F>, y: &Tensor<f32>) -> Error {
    let mut shapes = x.shape().to_vec();
    shapes.extend(y.shape());
    Error::ShapeMismatch {
        op: "qmatmul_host (X then Y dims, W)",
        lhs: shapes,
        rhs: w.shape().to_vec(),
        expected: "X [M, K], W [N, K] and Y [M, N]",
    }
}

/// The exact form for formats without an integer kernel: each weight row
/// dequantized, then an f32 dot with every activation row.
fn exact_form(w: &QMatrixRef<'_>, x: &[f32], m_rows: usize, out: &mut [f32]) -> Result<()> {
    let info = w.ty.info();
    let row_bytes = w.cols / info.block_len.max(1) * info.block_bytes;
    if x.len() != m_rows * w.cols || out.len() != m_rows * w.rows {
        return Err(Error::LenMismatch {
            shape: vec![m_rows, w.rows],
            expected: m_rows * w.rows,
            actual: out.len(),
        });
    }
    let mut row = vec![0f32; w.cols];
    for n in 0..w.rows {
        let bytes = w
            .data
            .get(n * row_bytes..(n + 1) * row_bytes)
            .ok_or(Error::QuantBytes {
                format: w.ty.name(),
                shape: vec![w.rows, w.cols],
                expected: row_bytes * w.rows,
                actual: w.data.len(),
            })?;
        dequantize(w.ty, bytes, &mut row).map_err(|e| Error::Quant {
            format: w.ty.name(),
            message: e.to_string(),
        })?;
        for m in 0..m_rows {
            let xs = &x[m * w.cols..(m + 1) * w.cols];
            out[m * w.rows + n] = row.iter().zip(xs).fold(0f32, |acc, (a, b)| acc + a * b);
        }
    }
    Ok(())
}

/// The formats [`qmatmul_host`] runs integer kernels for (the others take
/// the exact form).
pub fn has_integer_kernel(ty: GgmlType) -> bool {
    !matches!(ty, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16)
        && super::vec_dot_type(ty).is_some()
}
