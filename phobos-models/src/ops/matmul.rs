//! Quantized matrix times activations: `out[m*rows + n] = sum_k x[m*cols + k] * W[n, k]`.
//!
//! This is the engine's one entry point for every weight product, prompt
//! batches and decode rows alike. A quantized weight goes through its
//! format's kernel (`matmul/qmatmul.ph`, one per format, launched through
//! its typed handle by [`kernels::launch`]). On the host that handle runs
//! the hand-written `phobos_rt::host::qmatmul` (`@host_impl`): the
//! activations quantized to the format's partner type, ggml's integer
//! kernels, SIMD picked at run time, the host pool's threads. Its sums are
//! bit-exact with llama.cpp's `vec_dot` (and llamafile's sgemm) for every
//! row count, so a prompt gives the same logits whether it runs as one
//! batch, split, or a token at a time, and the same as llama.cpp run with
//! `--no-repack` (see ARCHITECTURE.md, "Engine numerics"). The generated
//! body of each kernel is tested against it in `matmul/tests.rs`.
//!
//! Not kernels yet: F32/F16/BF16 weights (they would need a device tensor,
//! i.e. a copy of the mapped weight; they run `host::qmatmul` directly) and
//! the formats the PTX back end cannot lower yet (`iq1_s iq1_m iq2_xxs
//! iq2_xs iq2_s iq3_xxs iq3_s tq1_0 tq2_0`), which fall back to
//! [`matmul_exact`]: each weight row dequantized to f32 and dotted in f32
//! with every activation row.

use rayon::prelude::*;

#[cfg(test)]
mod kernel_tests;
pub mod kernels;

use crate::quant::{self, GgmlType, QuantError};

/// A quantized weight matrix in ggml layout: `rows` output features, each a
/// run of `cols / block_len` blocks of type `ty`, row-major.
#[derive(Debug, Clone, Copy)]
pub struct QMatrixRef<'a> {
    pub ty: GgmlType,
    pub rows: usize,
    pub cols: usize,
    pub data: &'a [u8],
}

#[derive(Debug, thiserror::Error)]
pub enum QMatmulError {
    #[error(
        "matmul shapes: weight {rows}x{cols} ({ty:?}, {data_len} bytes), activations {x_len} for {m_rows} rows, output {out_len}"
    )]
    Shape {
        ty: GgmlType,
        rows: usize,
        cols: usize,
        data_len: usize,
        m_rows: usize,
        x_len: usize,
        out_len: usize,
    },
    #[error("matmul: {0}")]
    Quant(#[from] QuantError),
    #[error("matmul: {0}")]
    Kernel(#[from] phobos_rt::host::qmatmul::QMatmulError),
    #[error("matmul kernel: {0}")]
    Launch(#[from] phobos::Error),
}

impl QMatrixRef<'_> {
    /// Bytes of one weight row, or `None` when `cols` is not whole blocks.
    pub fn row_bytes(&self) -> Option<usize> {
        let info = self.ty.info();
        if info.block_len == 0 || !self.cols.is_multiple_of(info.block_len) {
            return None;
        }
        Some(self.cols / info.block_len * info.block_bytes)
    }

    fn kernel_ref(&self) -> phobos_rt::host::qmatmul::QMatrixRef<'_> {
        phobos_rt::host::qmatmul::QMatrixRef {
            ty: self.ty,
            rows: self.rows,
            cols: self.cols,
            data: self.data,
        }
    }
}

/// Output rows handled per task: enough to amortise the scratch row, few
/// enough to spread a small matrix over the threads.
const ROWS_PER_TASK: usize = 16;

/// `out[m*rows + n] = sum_k x[m*cols + k] * W[n, k]` with ggml's numerics.
pub fn matmul(
    w: &QMatrixRef<'_>,
    x: &[f32],
    m_rows: usize,
    out: &mut [f32],
) -> Result<(), QMatmulError> {
    use phobos_rt::host::qmatmul as fast;
    check_shapes(w, x, m_rows, out)?;
    if m_rows == 0 || w.rows == 0 {
        return Ok(());
    }
    if kernels::launch(w, x, m_rows, out, kernels::Body::Launch)? {
        return Ok(());
    }
    match fast::matmul_threaded(&w.kernel_ref(), x, m_rows, out) {
        Err(fast::QMatmulError::UnsupportedWeight { .. }) => matmul_exact(w, x, m_rows, out),
        result => Ok(result?),
    }
}

/// The exact f32 form: every weight row dequantized, dotted in f32.
pub fn matmul_exact(
    w: &QMatrixRef<'_>,
    x: &[f32],
    m_rows: usize,
    out: &mut [f32],
) -> Result<(), QMatmulError> {
    let row_bytes = check_shapes(w, x, m_rows, out)?;
    if m_rows == 0 || w.rows == 0 {
        return Ok(());
    }
    // Computed transposed ([rows][m]) so each task owns a contiguous run.
    let mut out_t = vec![0f32; w.rows * m_rows];
    out_t
        .par_chunks_mut(ROWS_PER_TASK * m_rows)
        .enumerate()
        .try_for_each(|(task, chunk)| -> Result<(), QMatmulError> {
            let mut row = vec![0f32; w.cols];
            for (i, out_row) in chunk.chunks_mut(m_rows).enumerate() {
                let n = task * ROWS_PER_TASK + i;
                let bytes = &w.data[n * row_bytes..(n + 1) * row_bytes];
                quant::dequantize(w.ty, bytes, &mut row)?;
                for (m, o) in out_row.iter_mut().enumerate() {
                    *o = dot_f32(&row, &x[m * w.cols..(m + 1) * w.cols]);
                }
            }
            Ok(())
        })?;
    for (n, col) in out_t.chunks(m_rows).enumerate() {
        for (m, &v) in col.iter().enumerate() {
            out[m * w.rows + n] = v;
        }
    }
    Ok(())
}

/// Bytes of one weight row, after checking every length against the shape.
fn check_shapes(
    w: &QMatrixRef<'_>,
    x: &[f32],
    m_rows: usize,
    out: &[f32],
) -> Result<usize, QMatmulError> {
    let shape_err = || QMatmulError::Shape {
        ty: w.ty,
        rows: w.rows,
        cols: w.cols,
        data_len: w.data.len(),
        m_rows,
        x_len: x.len(),
        out_len: out.len(),
    };
    let row_bytes = w.row_bytes().ok_or_else(shape_err)?;
    if w.data.len() != row_bytes * w.rows
        || x.len() != m_rows * w.cols
        || out.len() != m_rows * w.rows
    {
        return Err(shape_err());
    }
    Ok(row_bytes)
}

/// Dot product with eight independent partial sums (vectorises).
pub fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let chunks = a.len() / 8;
    for c in 0..chunks {
        let (pa, pb) = (&a[c * 8..c * 8 + 8], &b[c * 8..c * 8 + 8]);
        for l in 0..8 {
            acc[l] += pa[l] * pb[l];
        }
    }
    let mut tail = 0f32;
    for i in chunks * 8..a.len().min(b.len()) {
        tail += a[i] * b[i];
    }
    acc.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn reference(w: &[f32], rows: usize, cols: usize, x: &[f32], m: usize) -> Vec<f64> {
        let mut out = vec![0f64; m * rows];
        for i in 0..m {
            for n in 0..rows {
                out[i * rows + n] = (0..cols)
                    .map(|k| f64::from(x[i * cols + k]) * f64::from(w[n * cols + k]))
                    .sum();
            }
        }
        out
    }

    proptest! {
        #[test]
        fn matches_f64_reference(rows in 1usize..40, blocks in 1usize..4, m in 1usize..5, seed in 0u64..1000) {
            let cols = blocks * 32;
            let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let mut next = || { state ^= state << 13; state ^= state >> 7; state ^= state << 17; (state % 2001) as f32 / 1000.0 - 1.0 };
            let w_f32: Vec<f32> = (0..rows * cols).map(|_| next()).collect();
            let x: Vec<f32> = (0..m * cols).map(|_| next()).collect();
            let mut bytes = Vec::new();
            quant::quantize(GgmlType::Q8_0, &w_f32, &mut bytes).unwrap();
            let mut w_deq = vec![0f32; rows * cols];
            quant::dequantize(GgmlType::Q8_0, &bytes, &mut w_deq).unwrap();
            let w = QMatrixRef { ty: GgmlType::Q8_0, rows, cols, data: &bytes };
            let mut out = vec![0f32; m * rows];
            matmul_exact(&w, &x, m, &mut out).unwrap();
            let want = reference(&w_deq, rows, cols, &x, m);
            // f32 accumulation of `cols` products of magnitude <= 1.
            let tol = cols as f64 * 1e-6;
            for (g, r) in out.iter().zip(&want) {
                prop_assert!((f64::from(*g) - r).abs() <= tol, "{g} vs {r}");
            }
        }
    }

    proptest! {
        /// Each output row is the same bits whatever the batch it ran in:
        /// what makes a split prompt equal a whole one.
        #[test]
        fn rows_do_not_depend_on_the_batch(rows in 1usize..40, blocks in 1usize..4, m in 2usize..6, seed in 0u64..1000) {
            let cols = blocks * 256;
            let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let mut next = || { state ^= state << 13; state ^= state >> 7; state ^= state << 17; (state % 2001) as f32 / 1000.0 - 1.0 };
            let w_f32: Vec<f32> = (0..rows * cols).map(|_| next()).collect();
            let x: Vec<f32> = (0..m * cols).map(|_| next()).collect();
            for ty in [GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K] {
                let mut bytes = Vec::new();
                quant::quantize(ty, &w_f32, &mut bytes).unwrap();
                let w = QMatrixRef { ty, rows, cols, data: &bytes };
                let mut batched = vec![0f32; m * rows];
                matmul(&w, &x, m, &mut batched).unwrap();
                for i in 0..m {
                    let mut single = vec![0f32; rows];
                    matmul(&w, &x[i * cols..(i + 1) * cols], 1, &mut single).unwrap();
                    let got: Vec<u32> = single.iter().map(|v| v.to_bits()).collect();
                    let want: Vec<u32> = batched[i * rows..(i + 1) * rows].iter().map(|v| v.to_bits()).collect();
                    prop_assert_eq!(got, want, "{:?} row {}", ty, i);
                }
            }
        }
    }

    #[test]
    fn shape_mismatch_is_an_error() {
        let bytes = vec![0u8; 34];
        let w = QMatrixRef {
            ty: GgmlType::Q8_0,
            rows: 1,
            cols: 32,
            data: &bytes,
        };
        let mut out = vec![0f32; 1];
        assert!(matches!(
            matmul(&w, &[0.0; 31], 1, &mut out),
            Err(QMatmulError::Shape { .. })
        ));
    }
}
