//! `Element` impls: constants, min/max and element-width atomic access.
//!
//! Every access to a host buffer after its creation goes through these
//! relaxed atomics, so programs that race on an element (the GPU allows it)
//! are well defined. Relaxed loads and stores compile to plain moves.

use super::{Element, sealed::Sealed};
use crate::DType;
use half::{bf16, f16};
use std::sync::atomic::{
    AtomicI8, AtomicI16, AtomicI32, AtomicI64, AtomicU8, AtomicU16, AtomicU32, AtomicU64,
    Ordering::Relaxed,
};

macro_rules! int_element {
    ($($t:ty => $atomic:ty, $dtype:ident);* $(;)?) => {$(
        impl Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$dtype;
            const ZERO: Self = 0;
            const ONE: Self = 1;
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            #[inline(always)]
            fn minimum(self, other: Self) -> Self { Ord::min(self, other) }
            #[inline(always)]
            fn maximum(self, other: Self) -> Self { Ord::max(self, other) }
            #[inline(always)]
            fn to_f64(self) -> f64 { self as f64 }
            #[inline(always)]
            unsafe fn load_relaxed(ptr: *const Self) -> Self {
                // SAFETY: the caller guarantees validity, alignment and that all
                // concurrent accesses are atomic; the atomic has the same size.
                unsafe { <$atomic>::from_ptr(ptr.cast_mut()).load(Relaxed) }
            }
            #[inline(always)]
            unsafe fn store_relaxed(ptr: *mut Self, value: Self) {
                // SAFETY: as in `load_relaxed`.
                unsafe { <$atomic>::from_ptr(ptr).store(value, Relaxed) }
            }
        }
    )*};
}

int_element! {
    i8 => AtomicI8, I8;
    u8 => AtomicU8, U8;
    i16 => AtomicI16, I16;
    u16 => AtomicU16, U16;
    i32 => AtomicI32, I32;
    u32 => AtomicU32, U32;
    i64 => AtomicI64, I64;
}

macro_rules! float_element {
    ($($t:ty => $atomic:ty, $bits:ty, $dtype:ident, $to_f64:expr);* $(;)?) => {$(
        impl Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$dtype;
            const ZERO: Self = <$t>::from_bits(0);
            const ONE: Self = <$t>::ONE_CONST;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
            #[inline(always)]
            fn minimum(self, other: Self) -> Self {
                if self.is_nan() || other < self { other } else { self }
            }
            #[inline(always)]
            fn maximum(self, other: Self) -> Self {
                if self.is_nan() || other > self { other } else { self }
            }
            #[inline(always)]
            fn to_f64(self) -> f64 { ($to_f64)(self) }
            #[inline(always)]
            unsafe fn load_relaxed(ptr: *const Self) -> Self {
                // SAFETY: the caller guarantees validity, alignment and that all
                // concurrent accesses are atomic; the atomic has the same size.
                let bits = unsafe { <$atomic>::from_ptr(ptr.cast_mut().cast::<$bits>()).load(Relaxed) };
                <$t>::from_bits(bits)
            }
            #[inline(always)]
            unsafe fn store_relaxed(ptr: *mut Self, value: Self) {
                // SAFETY: as in `load_relaxed`.
                unsafe { <$atomic>::from_ptr(ptr.cast::<$bits>()).store(value.to_bits(), Relaxed) }
            }
        }
    )*};
}

/// `1.0` as a const for every float type (the half crate's `ONE` is an
/// associated const too, but f32/f64 have none).
trait OneConst {
    const ONE_CONST: Self;
}
impl OneConst for f32 {
    const ONE_CONST: Self = 1.0;
}
impl OneConst for f64 {
    const ONE_CONST: Self = 1.0;
}
impl OneConst for f16 {
    const ONE_CONST: Self = f16::ONE;
}
impl OneConst for bf16 {
    const ONE_CONST: Self = bf16::ONE;
}

float_element! {
    f16 => AtomicU16, u16, F16, f16::to_f64;
    bf16 => AtomicU16, u16, Bf16, bf16::to_f64;
    f32 => AtomicU32, u32, F32, |x: f32| x as f64;
    f64 => AtomicU64, u64, F64, |x: f64| x;
}

impl Sealed for bool {}
impl Element for bool {
    const DTYPE: DType = DType::Bool;
    const ZERO: Self = false;
    const ONE: Self = true;
    const LOWEST: Self = false;
    const HIGHEST: Self = true;
    #[inline(always)]
    fn minimum(self, other: Self) -> Self {
        self & other
    }
    #[inline(always)]
    fn maximum(self, other: Self) -> Self {
        self | other
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f64::from(u8::from(self))
    }
    #[inline(always)]
    unsafe fn load_relaxed(ptr: *const Self) -> Self {
        // SAFETY: the caller guarantees validity, alignment and atomic-only
        // concurrent access; every store writes 0 or 1, so `!= 0` round-trips.
        unsafe { AtomicU8::from_ptr(ptr.cast_mut().cast::<u8>()).load(Relaxed) != 0 }
    }
    #[inline(always)]
    unsafe fn store_relaxed(ptr: *mut Self, value: Self) {
        // SAFETY: as in `load_relaxed`; 0 and 1 are valid `bool` bytes.
        unsafe { AtomicU8::from_ptr(ptr.cast::<u8>()).store(u8::from(value), Relaxed) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_min_max_ignore_nan_like_fminf() {
        assert_eq!(Element::minimum(f32::NAN, 1.0), 1.0);
        assert_eq!(Element::maximum(1.0f32, f32::NAN), 1.0);
        assert_eq!(
            f16::from_f32(-2.0).minimum(f16::from_f32(3.0)),
            f16::from_f32(-2.0)
        );
        assert_eq!(
            bf16::from_f32(-2.0).maximum(bf16::from_f32(3.0)),
            bf16::from_f32(3.0)
        );
        assert!(Element::maximum(f64::NAN, f64::NAN).is_nan());
    }

    #[test]
    fn relaxed_access_round_trips_every_type() {
        fn check<T: Element>(v: T) {
            let mut slot = T::default();
            unsafe { T::store_relaxed(&mut slot, v) };
            assert_eq!(unsafe { T::load_relaxed(&slot) }, v);
        }
        check(true);
        check(-5i8);
        check(200u8);
        check(-300i16);
        check(60000u16);
        check(-7i32);
        check(u32::MAX);
        check(i64::MIN);
        check(f16::from_f32(1.5));
        check(bf16::from_f32(-2.25));
        check(3.5f32);
        check(-1e300f64);
    }

    #[test]
    fn constants_are_identities() {
        assert_eq!(f16::ZERO.to_f64(), 0.0);
        assert_eq!(<bf16 as Element>::ONE.to_f64(), 1.0);
        assert_eq!(<f32 as Element>::LOWEST, f32::NEG_INFINITY);
        assert_eq!(<i8 as Element>::HIGHEST, 127);
        assert_eq!(<bool as Element>::ONE, !<bool as Element>::ZERO);
    }
}
