//! The element types of tensors and tiles, and the arithmetic the host tile
//! library needs on them.
//!
//! Trait ladder: [`Element`] (all 12 scalar types, including `bool`) <
//! [`Num`] (everything but `bool`: arithmetic, atomic add) < [`Float`]
//! (`f16 bf16 f32 f64`: transcendental math) and [`Int`] (shifts). [`Bits`]
//! covers the bitwise ops of integers and `bool`. [`DotElement`] names the
//! accumulator type of a contraction.
//!
//! Integer arithmetic wraps, as it does on the GPU. Integer division and
//! remainder truncate toward zero; dividing by zero yields 0 (the GPU leaves
//! it unspecified; the host picks a value instead of panicking). `f16`/`bf16`
//! math is computed in `f32` and rounded back once.

mod atomic;
mod cast;
mod float;
mod num;

pub use cast::{CastTo, cast};
pub use float::Float;
pub use num::{Bits, DotElement, Int, Num};

use crate::DType;
use std::fmt::Debug;

mod sealed {
    pub trait Sealed {}
}

/// A scalar type a tensor or tile can hold.
///
/// Sealed: the set matches [`DType`] exactly.
pub trait Element:
    Copy + Send + Sync + Default + PartialEq + PartialOrd + Debug + 'static + sealed::Sealed
{
    /// The runtime tag of this type.
    const DTYPE: DType;
    /// Additive identity (`false` for bool).
    const ZERO: Self;
    /// Multiplicative identity (`true` for bool).
    const ONE: Self;
    /// The smallest value (`-inf` for floats): the identity of `max`.
    const LOWEST: Self;
    /// The largest value (`+inf` for floats): the identity of `min`.
    const HIGHEST: Self;

    /// Elementwise minimum; for floats a NaN operand loses to a number
    /// (IEEE minNum, as CUDA's `fminf`).
    fn minimum(self, other: Self) -> Self;
    /// Elementwise maximum; for floats a NaN operand loses to a number.
    fn maximum(self, other: Self) -> Self;
    /// Widens to `f64` (`bool` -> 0/1); exact except for `i64` beyond 2^53.
    fn to_f64(self) -> f64;

    /// Reads one element with a relaxed atomic load of the element's width.
    ///
    /// # Safety
    /// `ptr` must be valid for reads, aligned to `size_of::<Self>()`, and every
    /// concurrent access to it must be atomic (see `host::view`).
    #[doc(hidden)]
    unsafe fn load_relaxed(ptr: *const Self) -> Self;

    /// Writes one element with a relaxed atomic store of the element's width.
    ///
    /// # Safety
    /// As [`Element::load_relaxed`], and `ptr` must be valid for writes.
    #[doc(hidden)]
    unsafe fn store_relaxed(ptr: *mut Self, value: Self);
}
