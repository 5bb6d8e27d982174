//! Contractions with one quantized operand.

use super::block_dot::{block_dot, ggml_partner};
use super::{QTile, dequant};
use crate::host::tile::Tile;
use crate::host::{dot, dot_t, transpose};
use crate::{CastTo, Error, Result};

fn rank2(op: &'static str, shape: &[usize]) -> Result<[usize; 2]> {
    match *shape {
        [r, c] => Ok([r, c]),
        _ => Err(Error::BadShape {
            op,
            shape: shape.to_vec(),
            expected: "a rank-2 tile",
        }),
    }
}

fn to_f32<T: CastTo<f32>>(x: &Tile<T>) -> Result<Tile<f32>> {
    Tile::from_vec(x.shape(), x.as_slice().iter().map(|&v| v.cast()).collect())
}

fn inner_mismatch(op: &'static str, lhs: &[usize], rhs: &[usize]) -> Error {
    Error::ShapeMismatch {
        op,
        lhs: lhs.to_vec(),
        rhs: rhs.to_vec(),
        expected: "equal contraction dims",
    }
}

/// ggml's contraction of quantized rows `q [R, K]` with float rows
/// `x [C, K]` (row-major, `C = x.len() / K`): `out[r * C + c]` is the sum,
/// in block order from `0.0`, of `block_dot` of row `r`'s present blocks
/// against row `c` quantized to the partner type. `None` when the format
/// has no partner type.
pub fn ggml_rows(q: &QTile, x: &[f32]) -> Result<Option<Vec<f32>>> {
    let Some(partner) = ggml_partner(q.ty) else {
        return Ok(None);
    };
    let [rows, k] = rank2("dot (quantized)", q.shape())?;
    if k == 0 || !x.len().is_multiple_of(k) {
        return Err(Error::LenMismatch {
            shape: vec![x.len() / k.max(1), k],
            expected: k,
            actual: x.len(),
        });
    }
    let cols = x.len() / k;
    let blocks_per_row = q.blocks_per_row();
    let mut quantized = Vec::new();
    phobos_quant::quantize(partner, x, &mut quantized).map_err(|source| Error::Quant {
        format: q.name,
        message: source.to_string(),
    })?;
    // Partner bytes covering one weight block (one Q8_K block, or one
    // Q8_0/Q8_1 block for the 32-element formats).
    let partner_bytes = partner.info().block_bytes * (q.block_len() / partner.info().block_len);
    let x_row_bytes = blocks_per_row * partner_bytes;
    let mut out = vec![0f32; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            let x_row = &quantized[c * x_row_bytes..(c + 1) * x_row_bytes];
            let mut sum = 0f32;
            for b in 0..blocks_per_row {
                if let Some(w) = q.block(r, b) {
                    sum += block_dot(q.ty, w, &x_row[b * partner_bytes..(b + 1) * partner_bytes]);
                }
            }
            out[r * cols + c] = sum;
        }
    }
    Ok(Some(out))
}

/// `dot(q [M,K], x [K,N]) -> f32 [M,N]`.
pub fn dot_quant_lhs<T: CastTo<f32>>(q: &QTile, x: &Tile<T>) -> Result<Tile<f32>> {
    let [m, k] = rank2("dot", q.shape())?;
    let [kx, n] = rank2("dot", x.shape())?;
    if k != kx {
        return Err(inner_mismatch("dot", q.shape(), x.shape()));
    }
    let x = to_f32(x)?;
    let rows = transpose(&x)?;
    match ggml_rows(q, rows.as_slice())? {
        Some(out) => Tile::from_vec(&[m, n], out),
        None => dot(&dequant(q)?, &x),
    }
}

/// `dot_t(q [M,K], x [N,K]) -> f32 [M,N]`.
pub fn dot_t_quant_lhs<T: CastTo<f32>>(q: &QTile, x: &Tile<T>) -> Result<Tile<f32>> {
    let [m, k] = rank2("dot_t", q.shape())?;
    let [n, kx] = rank2("dot_t", x.shape())?;
    if k != kx {
        return Err(inner_mismatch("dot_t", q.shape(), x.shape()));
    }
    let x = to_f32(x)?;
    match ggml_rows(q, x.as_slice())? {
        Some(out) => Tile::from_vec(&[m, n], out),
        None => dot_t(&dequant(q)?, &x),
    }
}

/// `dot_t(x [M,K], q [N,K]) -> f32 [M,N]`: the matmul of an activation with
/// a GGUF weight.
pub fn dot_t_quant_rhs<T: CastTo<f32>>(x: &Tile<T>, q: &QTile) -> Result<Tile<f32>> {
    let [n, k] = rank2("dot_t", q.shape())?;
    let [m, kx] = rank2("dot_t", x.shape())?;
    if k != kx {
        return Err(inner_mismatch("dot_t", x.shape(), q.shape()));
    }
    let x = to_f32(x)?;
    match ggml_rows(q, x.as_slice())? {
        Some(out) => transpose(&Tile::from_vec(&[n, m], out)?),
        None => dot_t(&x, &dequant(q)?),
    }
}

/// `dot(x [M,K], q [K,N]) -> f32 [M,N]`: the blocks run along N, not the
/// contracted dim, so this is always the exact form.
pub fn dot_quant_rhs<T: CastTo<f32>>(x: &Tile<T>, q: &QTile) -> Result<Tile<f32>> {
    let [k, _] = rank2("dot", q.shape())?;
    let [_, kx] = rank2("dot", x.shape())?;
    if k != kx {
        return Err(inner_mismatch("dot", x.shape(), q.shape()));
    }
    dot(&to_f32(x)?, &dequant(q)?)
}
