//! Conversions between any two element types (the kernel casts
//! `f16(x) i32(x) ...`).
//!
//! - float -> int rounds toward zero and saturates at the target's range;
//!   NaN becomes 0 (Rust `as` semantics; PTX `cvt.rzi.sat` agrees).
//! - int/float -> float rounds to nearest even. `i64 -> bf16` rounds via
//!   `f64`, which can double-round for magnitudes above 2^53.
//! - int -> int keeps the low bits (two's complement wrap, Rust `as`).
//! - anything -> `bool` is `x != 0` (NaN is true); `bool` -> number is 0/1.

use super::Element;
use half::{bf16, f16};

/// Converts `Self` to `U` with the kernel language's cast rules.
pub trait CastTo<U>: Element {
    /// The converted value.
    fn cast(self) -> U;
}

/// `cast::<T, U>(x)`: the kernel cast `U(x)`.
#[inline(always)]
pub fn cast<T: CastTo<U>, U>(x: T) -> U {
    x.cast()
}

macro_rules! prim_from {
    ($src:ty => $($dst:ty),*) => {$(
        impl CastTo<$dst> for $src {
            #[inline(always)]
            fn cast(self) -> $dst { self as $dst }
        }
    )*};
}

macro_rules! prim_casts {
    ($($src:ty),*) => {$(
        prim_from!($src => i8, u8, i16, u16, i32, u32, i64, f32, f64);
        impl CastTo<f16> for $src {
            #[inline(always)]
            fn cast(self) -> f16 { f16::from_f64(self as f64) }
        }
        impl CastTo<bf16> for $src {
            #[inline(always)]
            fn cast(self) -> bf16 { bf16::from_f64(self as f64) }
        }
        impl CastTo<bool> for $src {
            #[inline(always)]
            #[allow(clippy::float_cmp)]
            fn cast(self) -> bool { self != (0 as $src) }
        }
    )*};
}

prim_casts!(i8, u8, i16, u16, i32, u32, i64, f32, f64);

macro_rules! half_casts {
    ($($src:ty),*) => {$(
        impl CastTo<f16> for $src {
            #[inline(always)]
            fn cast(self) -> f16 { f16::from_f32(self.to_f32()) }
        }
        impl CastTo<bf16> for $src {
            #[inline(always)]
            fn cast(self) -> bf16 { bf16::from_f32(self.to_f32()) }
        }
        impl CastTo<bool> for $src {
            #[inline(always)]
            fn cast(self) -> bool { self.to_f32() != 0.0 }
        }
        half_to_prim!($src => i8, u8, i16, u16, i32, u32, i64, f32, f64);
    )*};
}

macro_rules! half_to_prim {
    ($src:ty => $($dst:ty),*) => {$(
        impl CastTo<$dst> for $src {
            #[inline(always)]
            fn cast(self) -> $dst { self.to_f32() as $dst }
        }
    )*};
}

half_casts!(f16, bf16);

macro_rules! bool_to {
    ($($dst:ty),*) => {$(
        impl CastTo<$dst> for bool {
            #[inline(always)]
            fn cast(self) -> $dst { u8::from(self).cast() }
        }
    )*};
}

bool_to!(i8, u8, i16, u16, i32, u32, i64, f32, f64, f16, bf16);

impl CastTo<bool> for bool {
    #[inline(always)]
    fn cast(self) -> bool {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_to_int_truncates_and_saturates() {
        assert_eq!(cast::<f32, i32>(-2.9), -2);
        assert_eq!(cast::<f32, i32>(2.9), 2);
        assert_eq!(cast::<f32, u8>(300.0), 255);
        assert_eq!(cast::<f32, u8>(-1.0), 0);
        assert_eq!(cast::<f64, i8>(f64::NAN), 0);
        assert_eq!(cast::<f16, i32>(f16::from_f32(-7.75)), -7);
        assert_eq!(cast::<bf16, i64>(bf16::from_f32(1e30)), i64::MAX);
    }

    #[test]
    fn to_half_rounds_once_to_nearest() {
        // 1 + 2^-11 is exactly halfway between two f16 values: ties to even.
        assert_eq!(cast::<f64, f16>(1.0 + 2f64.powi(-11)), f16::ONE);
        assert_eq!(cast::<i32, f16>(70000), f16::INFINITY);
        assert_eq!(cast::<f16, bf16>(f16::from_f32(3.0)), bf16::from_f32(3.0));
        assert_eq!(cast::<i8, bf16>(-3), bf16::from_f32(-3.0));
    }

    #[test]
    fn bool_conversions() {
        assert!(cast::<f32, bool>(f32::NAN));
        assert!(!cast::<f32, bool>(-0.0));
        assert!(cast::<i64, bool>(-5));
        assert!(!cast::<f16, bool>(f16::ZERO));
        assert_eq!(cast::<bool, f32>(true), 1.0);
        assert_eq!(cast::<bool, bf16>(true), bf16::ONE);
        assert_eq!(cast::<bool, i64>(false), 0);
    }

    #[test]
    fn int_to_int_wraps_like_as() {
        assert_eq!(cast::<i32, u8>(-1), 255);
        assert_eq!(cast::<u32, i32>(u32::MAX), -1);
        assert_eq!(cast::<i8, i64>(-5), -5);
    }
}
