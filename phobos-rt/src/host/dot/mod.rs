//! Contractions: `dot(a [M,K], b [K,N]) -> [M,N]`, `dot_t(a [M,K], b [N,K])`,
//! and the fused accumulating forms for `acc += dot(a, b)`.
//!
//! Inputs are widened to the accumulator type ([`DotElement::Acc`]: `f32`
//! for `f16`/`bf16`, `i32` for 8- and 16-bit integers) and multiplied there;
//! integer accumulation wraps. `f32` uses a packed, register-blocked kernel
//! (AVX2+FMA when the CPU has it, which fuses each multiply-add as the GPU
//! does; plain multiply then add otherwise).

mod int8;
mod kernel;

pub use kernel::dot_acc_k_loop;

use super::tile::{Tile, TileShape};
use crate::{DotElement, Element, Error, Num, Result};

/// Accumulator types of contractions, with their matrix-multiply kernel.
pub trait Accumulator: Num {
    /// `c[M,N] += a[M,K] * b[K,N]`, all row-major and contiguous, with
    /// `c.len() == m*n`, `a.len() == m*k`, `b.len() == k*n`.
    #[doc(hidden)]
    fn gemm_acc(c: &mut [Self], a: &[Self], b: &[Self], m: usize, k: usize, n: usize);
    /// The slice as `i32`s when `Self` is `i32` (the 8-bit kernels' output).
    #[doc(hidden)]
    fn as_i32_mut(_values: &mut [Self]) -> Option<&mut [i32]> {
        None
    }
}

impl Accumulator for f32 {
    fn gemm_acc(c: &mut [f32], a: &[f32], b: &[f32], m: usize, k: usize, n: usize) {
        kernel::gemm_f32(c, a, b, m, k, n);
    }
}

macro_rules! generic_accumulator {
    ($($t:ty),*) => {$(
        impl Accumulator for $t {
            fn gemm_acc(c: &mut [$t], a: &[$t], b: &[$t], m: usize, k: usize, n: usize) {
                kernel::gemm_generic(c, a, b, m, k, n);
            }
        }
    )*};
}

generic_accumulator!(f64, u32, i64);

impl Accumulator for i32 {
    fn gemm_acc(c: &mut [i32], a: &[i32], b: &[i32], m: usize, k: usize, n: usize) {
        kernel::gemm_generic(c, a, b, m, k, n);
    }
    fn as_i32_mut(values: &mut [i32]) -> Option<&mut [i32]> {
        Some(values)
    }
}

/// `acc += a @ b` (or `a @ b^T`) through the 8-bit kernels when both
/// operands are 8-bit integers and the CPU has them; false otherwise.
fn gemm_bytes<T: DotElement>(
    acc: &mut Tile<T::Acc>,
    a: &Tile<T>,
    b: &Tile<T>,
    layout: int8::BLayout,
    mkn: (usize, usize, usize),
) -> bool {
    let (Some((a8, signed)), Some((b8, _))) =
        (T::as_bytes(a.as_slice()), T::as_bytes(b.as_slice()))
    else {
        return false;
    };
    let Some(c) = T::Acc::as_i32_mut(acc.as_mut_slice()) else {
        return false;
    };
    let bytes = if signed {
        int8::Bytes::Signed
    } else {
        int8::Bytes::Unsigned
    };
    int8::gemm_bytes(c, a8, b8, (bytes, layout), mkn)
}

fn rank2<T: Element>(op: &'static str, t: &Tile<T>) -> Result<[usize; 2]> {
    match *t.shape() {
        [r, c] => Ok([r, c]),
        _ => Err(Error::BadShape {
            op,
            shape: t.shape().to_vec(),
            expected: "a rank-2 tile",
        }),
    }
}

/// An operand in the accumulator type: the input itself, or a widened copy
/// on this thread's arena (handed back on drop, so a contraction of narrow
/// types allocates nothing once warm).
enum Widened<'a, A: Copy> {
    Same(&'a [A]),
    Copy(Vec<A>),
}

impl<A: Copy> std::ops::Deref for Widened<'_, A> {
    type Target = [A];
    fn deref(&self) -> &[A] {
        match self {
            Widened::Same(values) => values,
            Widened::Copy(values) => values,
        }
    }
}

impl<A: Copy> Drop for Widened<'_, A> {
    fn drop(&mut self) {
        if let Widened::Copy(values) = self {
            super::arena::give(std::mem::take(values));
        }
    }
}

fn widen<T: DotElement>(values: &[T]) -> Widened<'_, T::Acc> {
    match T::as_acc(values) {
        Some(same) => Widened::Same(same),
        None => {
            let mut out = super::arena::take(values.len());
            T::widen_extend(values, &mut out);
            Widened::Copy(out)
        }
    }
}

/// `acc += a @ b` for `a [M,K]`, `b [K,N]`, `acc [M,N]`.
pub fn dot_acc<T: DotElement>(acc: &mut Tile<T::Acc>, a: &Tile<T>, b: &Tile<T>) -> Result<()> {
    let [m, k] = rank2("dot", a)?;
    let [kb, n] = rank2("dot", b)?;
    if kb != k {
        return Err(Error::ShapeMismatch {
            op: "dot",
            lhs: a.shape().to_vec(),
            rhs: b.shape().to_vec(),
            expected: "[M, K] x [K, N]",
        });
    }
    check_acc("dot", acc, m, n)?;
    if gemm_bytes(acc, a, b, int8::BLayout::KN, (m, k, n)) {
        return Ok(());
    }
    let (a, b) = (widen(a.as_slice()), widen(b.as_slice()));
    T::Acc::gemm_acc(acc.as_mut_slice(), &a, &b, m, k, n);
    Ok(())
}

/// `acc += a @ b^T` for `a [M,K]`, `b [N,K]`, `acc [M,N]`.
pub fn dot_t_acc<T: DotElement>(acc: &mut Tile<T::Acc>, a: &Tile<T>, b: &Tile<T>) -> Result<()> {
    let [m, k] = rank2("dot_t", a)?;
    let [n, kb] = rank2("dot_t", b)?;
    if kb != k {
        return Err(Error::ShapeMismatch {
            op: "dot_t",
            lhs: a.shape().to_vec(),
            rhs: b.shape().to_vec(),
            expected: "[M, K] x [N, K]",
        });
    }
    check_acc("dot_t", acc, m, n)?;
    if gemm_bytes(acc, a, b, int8::BLayout::NK, (m, k, n)) {
        return Ok(());
    }
    let a = widen(a.as_slice());
    // Transposing b costs N*K moves against M*N*K multiply-adds.
    let bs = b.as_slice();
    let mut b_kn = super::arena::take(k * n);
    for p in 0..k {
        b_kn.extend((0..n).map(|j| bs[j * k + p].widen()));
    }
    T::Acc::gemm_acc(acc.as_mut_slice(), &a, &b_kn, m, k, n);
    super::arena::give(b_kn);
    Ok(())
}

fn check_acc<A: Element>(op: &'static str, acc: &Tile<A>, m: usize, n: usize) -> Result<()> {
    if acc.shape() != [m, n] {
        return Err(Error::ShapeMismatch {
            op,
            lhs: acc.shape().to_vec(),
            rhs: vec![m, n],
            expected: "the accumulator to have the product's shape [M, N]",
        });
    }
    Ok(())
}

/// `a @ b`: `[M,K] x [K,N] -> [M,N]` in the accumulator type.
pub fn dot<T: DotElement>(a: &Tile<T>, b: &Tile<T>) -> Result<Tile<T::Acc>> {
    let m = rank2("dot", a)?[0];
    let n = rank2("dot", b)?[1];
    let mut acc = Tile::from_parts(
        TileShape::new(&[m, n])?,
        super::arena::filled(m * n, T::Acc::ZERO),
    );
    dot_acc(&mut acc, a, b)?;
    Ok(acc)
}

/// `a @ b^T`: `[M,K] x [N,K] -> [M,N]` in the accumulator type.
pub fn dot_t<T: DotElement>(a: &Tile<T>, b: &Tile<T>) -> Result<Tile<T::Acc>> {
    let m = rank2("dot_t", a)?[0];
    let n = rank2("dot_t", b)?[0];
    let mut acc = Tile::from_parts(
        TileShape::new(&[m, n])?,
        super::arena::filled(m * n, T::Acc::ZERO),
    );
    dot_t_acc(&mut acc, a, b)?;
    Ok(acc)
}

#[cfg(test)]
mod tests;
