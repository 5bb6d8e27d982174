//! The scalar element types of the Phobos kernel language, and the typing
//! rules that the compiler's checker and the runtime's host tile library
//! must agree on.
//!
//! This crate is the single definition of [`DType`]. `phobos-build` (the
//! compiler) types kernels with it; `phobos-rt` (the runtime) tags tensors
//! with it and checks at compile time that its contraction and reduction
//! types follow [`DType::dot_result`] and [`DType::sum_result`], so the Rust
//! code the host back end generates always type-checks. It depends on
//! nothing, so neither side learns about the other through it.

#![no_std]

use core::fmt;

/// A scalar element type (SPEC.md §3). `bool` is a one-byte truth value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    F16,
    Bf16,
    F32,
    F64,
}

impl DType {
    /// Every scalar dtype, in the order of SPEC.md.
    pub const ALL: [DType; 12] = [
        DType::Bool,
        DType::I8,
        DType::U8,
        DType::I16,
        DType::U16,
        DType::I32,
        DType::U32,
        DType::I64,
        DType::F16,
        DType::Bf16,
        DType::F32,
        DType::F64,
    ];

    /// The source-language spelling (`f32`, `bf16`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::I16 => "i16",
            DType::U16 => "u16",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::I64 => "i64",
            DType::F16 => "f16",
            DType::Bf16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }

    /// Parses a source-language spelling.
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }

    /// `f16 bf16 f32 f64`.
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::Bf16 | DType::F32 | DType::F64)
    }

    /// Signed or unsigned integer (not `bool`).
    pub const fn is_int(self) -> bool {
        self.is_signed_int() || self.is_unsigned_int()
    }

    pub const fn is_signed_int(self) -> bool {
        matches!(self, DType::I8 | DType::I16 | DType::I32 | DType::I64)
    }

    pub const fn is_unsigned_int(self) -> bool {
        matches!(self, DType::U8 | DType::U16 | DType::U32)
    }

    /// Width in bits (`bool` counts as 8: it is stored in a byte).
    pub const fn bits(self) -> u32 {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 8,
            DType::I16 | DType::U16 | DType::F16 | DType::Bf16 => 16,
            DType::I32 | DType::U32 | DType::F32 => 32,
            DType::I64 | DType::F64 => 64,
        }
    }

    /// Bytes per element.
    pub const fn size_bytes(self) -> usize {
        (self.bits() / 8) as usize
    }

    /// The result (and accumulator) type of `dot`/`dot_t` whose operands
    /// were promoted to `self` (SPEC.md §10): `f16 bf16 f32 -> f32`,
    /// `f64 -> f64`, 8- and 16-bit integers -> `i32`, and the 32- and 64-bit
    /// integers keep their type (`u32` stays `u32`: `i32` cannot hold its
    /// values). `None` for `bool`, which `dot` refuses.
    pub const fn dot_result(self) -> Option<DType> {
        match self {
            DType::Bool => None,
            DType::F16 | DType::Bf16 | DType::F32 => Some(DType::F32),
            DType::I8 | DType::U8 | DType::I16 | DType::U16 => Some(DType::I32),
            DType::I32 | DType::U32 | DType::I64 | DType::F64 => Some(self),
        }
    }

    /// The type both operands of `dot`/`dot_t` meet at when their types
    /// are `self` and `other` and neither is a weak literal, when that is
    /// not their ordinary promotion: `u8` with `i8` (either order) is the
    /// mixed-sign dot of x86's VNNI (`vpdpbusd`) and the GPU's `dp4a`, and
    /// meets at `i32`, where every product `u8 * i8` and the wrapping `i32`
    /// sum are exact, instead of promoting to `u8` (which would reinterpret
    /// negative `i8` values). `None`: the ordinary promotion applies.
    pub const fn dot_mixed_sign(self, other: DType) -> Option<DType> {
        match (self, other) {
            (DType::U8, DType::I8) | (DType::I8, DType::U8) => Some(DType::I32),
            _ => None,
        }
    }

    /// The element type `sum`, `rowsum` and `cumsum` produce (SPEC.md §10):
    /// `bool` and 8- and 16-bit integers accumulate in `i32`; every other
    /// type keeps its type (`f16`/`bf16` may accumulate wider internally
    /// but round back).
    pub const fn sum_result(self) -> DType {
        match self {
            DType::Bool | DType::I8 | DType::U8 | DType::I16 | DType::U16 => DType::I32,
            other => other,
        }
    }

    /// `self == other`, usable in `const` assertions.
    pub const fn same(self, other: DType) -> bool {
        self as u8 == other as u8
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    #[test]
    fn names_round_trip() {
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
        }
        assert_eq!(DType::from_name("q4_0"), None);
    }

    #[test]
    fn every_dtype_is_exactly_one_kind() {
        for d in DType::ALL {
            let kinds = [
                d == DType::Bool,
                d.is_signed_int(),
                d.is_unsigned_int(),
                d.is_float(),
            ];
            assert_eq!(kinds.iter().filter(|&&k| k).count(), 1, "{d}");
            assert_eq!(d.size_bytes() * 8, d.bits() as usize);
        }
    }

    #[test]
    fn contraction_results_hold_their_operands() {
        // Every operand value is representable in the result type: the
        // result is the operand's kind (float/int) and at least as wide, and
        // an unsigned operand only meets a wider signed result.
        for d in DType::ALL {
            let Some(r) = d.dot_result() else {
                assert_eq!(d, DType::Bool);
                continue;
            };
            assert_eq!(r.is_float(), d.is_float(), "{d} -> {r}");
            assert!(r.bits() >= d.bits(), "{d} -> {r}");
            if d.is_unsigned_int() && r.is_signed_int() {
                assert!(r.bits() > d.bits(), "{d} -> {r}");
            }
        }
        assert_eq!(DType::U32.dot_result(), Some(DType::U32));
    }
}
