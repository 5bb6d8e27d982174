//! Embedding lookup as Phobos kernels (`embed.ph`): the rows of a quantized
//! token-embedding matrix, dequantized, through the typed handle of its
//! format, with the ids and the output borrowed in place
//! (`with_borrowed`). On the host each handle's body is the engine's row
//! dequantizer (`@host_impl`). Formats the language does not type (floats,
//! the other i-quants) take the host path directly.

use phobos::quant::{Iq4Nl, Iq4Xs, Q2K, Q3K, Q4_0, Q4_1, Q4K, Q5_0, Q5_1, Q5K, Q6K, Q8_0};
use phobos::{Device, QTensor, QuantFormat, Tensor};

use super::QMatrixRef;
use crate::quant::GgmlType;

phobos::kernel_file!("src/ops/embed/embed.ph");

/// Why a lookup failed.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("token id {id} is outside the {rows} embedding rows")]
    Id { id: u32, rows: usize },
    #[error("embedding output holds {len} values, expected {tokens} tokens x {cols}")]
    Output {
        len: usize,
        tokens: usize,
        cols: usize,
    },
    #[error("embedding rows: {0}")]
    Dequantize(#[from] crate::quant::QuantError),
    #[error("embedding lookup: {0}")]
    Launch(#[from] Box<phobos::Error>),
}

/// Which body a launch runs on the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// The handle's `launch`: the hand-written row dequantizer.
    Launch,
    /// `launch_generated`: the kernel's generated body.
    Generated,
}

/// Rows `tokens` of `table` (`[rows][cols]`), dequantized into `out`
/// (`[tokens.len()][cols]`).
pub fn embed_rows(
    table: &QMatrixRef<'_>,
    tokens: &[u32],
    out: &mut [f32],
) -> Result<(), EmbedError> {
    embed_rows_with(table, tokens, out, Body::Launch)
}

/// [`embed_rows`] running `body`.
pub fn embed_rows_with(
    table: &QMatrixRef<'_>,
    tokens: &[u32],
    out: &mut [f32],
    body: Body,
) -> Result<(), EmbedError> {
    let (rows, cols) = (table.rows, table.cols);
    if out.len() != tokens.len() * cols {
        return Err(EmbedError::Output {
            len: out.len(),
            tokens: tokens.len(),
            cols,
        });
    }
    let ids = tokens
        .iter()
        .map(|&id| match i32::try_from(id) {
            Ok(i) if (id as usize) < rows => Ok(i),
            _ => Err(EmbedError::Id { id, rows }),
        })
        .collect::<Result<Vec<i32>, _>>()?;
    if tokens.is_empty() || cols == 0 {
        return Ok(());
    }
    macro_rules! run {
        ($kernel:ident, $format:ty) => {{
            let device = Device::host();
            let table = QTensor::<$format>::borrowed(table.data, [rows, cols]).map_err(Box::new)?;
            device
                .with_borrowed(
                    &ids,
                    [ids.len()],
                    out,
                    [ids.len(), cols],
                    |it, yt| match body {
                        Body::Launch => $kernel::launch(&device, it, &table, yt),
                        Body::Generated => $kernel::launch_generated(
                            &device,
                            &$kernel::Config::default(),
                            it,
                            &table,
                            yt,
                        ),
                    },
                )
                .and_then(|launched| launched)
                .map_err(Box::new)?;
            Ok(())
        }};
    }
    match table.ty {
        GgmlType::Q4_0 => run!(embed_q4_0, Q4_0),
        GgmlType::Q4_1 => run!(embed_q4_1, Q4_1),
        GgmlType::Q5_0 => run!(embed_q5_0, Q5_0),
        GgmlType::Q5_1 => run!(embed_q5_1, Q5_1),
        GgmlType::Q8_0 => run!(embed_q8_0, Q8_0),
        GgmlType::IQ4_NL => run!(embed_iq4_nl, Iq4Nl),
        GgmlType::Q2_K => run!(embed_q2_k, Q2K),
        GgmlType::Q3_K => run!(embed_q3_k, Q3K),
        GgmlType::Q4_K => run!(embed_q4_k, Q4K),
        GgmlType::Q5_K => run!(embed_q5_k, Q5K),
        GgmlType::Q6_K => run!(embed_q6_k, Q6K),
        GgmlType::IQ4_XS => run!(embed_iq4_xs, Iq4Xs),
        _ => dequantize_rows(table, &ids, out),
    }
}

/// The host path: each id's row dequantized with phobos-models' dequantizer.
fn dequantize_rows(table: &QMatrixRef<'_>, ids: &[i32], out: &mut [f32]) -> Result<(), EmbedError> {
    let row_bytes = table.row_bytes().unwrap_or(0);
    for (&id, row) in ids.iter().zip(out.chunks_mut(table.cols.max(1))) {
        let start = id as usize * row_bytes;
        let bytes = table.data.get(start..start + row_bytes).unwrap_or(&[]);
        crate::quant::dequantize(table.ty, bytes, row)?;
    }
    Ok(())
}

/// Every `embed_*` kernel's `@host_impl`: the rows dequantized on the host.
fn embed_host<F: QuantFormat>(
    _device: &Device,
    ids: &Tensor<i32>,
    table: &QTensor<'_, F>,
    out: &mut Tensor<f32>,
) -> phobos::Result<()> {
    let (&[rows, cols], &[_, out_cols]) = (table.shape(), out.shape()) else {
        return Err(phobos::Error::BadShape {
            op: "embed",
            shape: table.shape().to_vec(),
            expected: "a rank-2 table and output",
        });
    };
    let view = QMatrixRef {
        ty: F::GGML,
        rows,
        cols,
        data: table.bytes(),
    };
    let result = phobos::host::with_host_slice(ids, |ids| {
        phobos::host::with_host_slice_mut(out, |out| {
            // Ids the launcher passed but the table lacks read as zeros, as
            // the generated body's masked load does.
            let last = i32::try_from(rows)
                .unwrap_or(i32::MAX)
                .saturating_sub(1)
                .max(0);
            let valid: Vec<i32> = ids.iter().map(|&id| id.clamp(0, last)).collect();
            if rows == 0 {
                out.fill(0.0);
                return Ok(());
            }
            let outcome = dequantize_rows(&view, &valid, out);
            for (&id, row) in ids.iter().zip(out.chunks_mut(out_cols.max(1))) {
                if id < 0 || id as usize >= rows {
                    row.fill(0.0);
                }
            }
            outcome
        })
    })??;
    result.map_err(|e| phobos::Error::BadShape {
        op: "embed",
        shape: vec![rows, cols],
        expected: match e {
            EmbedError::Dequantize(_) => "whole blocks of the table's format",
            _ => "a valid embedding table",
        },
    })
}

#[cfg(test)]
mod tests;
