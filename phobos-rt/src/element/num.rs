//! Arithmetic traits: [`Num`], [`Bits`], [`Int`] and [`DotElement`].

use super::Element;
use half::{bf16, f16};
use std::sync::atomic::{
    AtomicI8, AtomicI16, AtomicI32, AtomicI64, AtomicU8, AtomicU16, AtomicU32, AtomicU64,
    Ordering::Relaxed,
};

/// Numeric element types (every [`Element`] but `bool`).
///
/// Call these as `Num::add(a, b)`; the names mirror the kernel operators.
pub trait Num: Element {
    /// The type sums of this type accumulate in (`f32` for `f16`/`bf16`,
    /// the type itself otherwise).
    type Sum: Num;

    /// `a + b` (wrapping for integers).
    fn add(self, rhs: Self) -> Self;
    /// `a - b` (wrapping for integers).
    fn sub(self, rhs: Self) -> Self;
    /// `a * b` (wrapping for integers).
    fn mul(self, rhs: Self) -> Self;
    /// `a / b`; integers truncate toward zero, and `x / 0 == 0`.
    fn div(self, rhs: Self) -> Self;
    /// `a % b` with the sign of `a`; integers give `x % 0 == 0`.
    fn rem(self, rhs: Self) -> Self;
    /// `-a` (wrapping for integers, so unsigned `-a` is `0 - a`).
    fn neg(self) -> Self;
    /// `|a|` (wrapping: `abs(i32::MIN) == i32::MIN`).
    fn abs(self) -> Self;
    /// Widens to the accumulation type.
    fn to_sum(self) -> Self::Sum;
    /// Rounds an accumulated value back.
    fn from_sum(sum: Self::Sum) -> Self;

    /// Atomically adds `value` to `*ptr` (relaxed), returning the old value.
    /// Floats use a compare-and-swap loop on the bit pattern.
    ///
    /// # Safety
    /// As [`Element::store_relaxed`].
    #[doc(hidden)]
    unsafe fn atomic_add(ptr: *mut Self, value: Self) -> Self;
}

/// Bitwise operators: integers and `bool`.
pub trait Bits: Element {
    /// `a & b`.
    fn bitand(self, rhs: Self) -> Self;
    /// `a | b`.
    fn bitor(self, rhs: Self) -> Self;
    /// `a ^ b`.
    fn bitxor(self, rhs: Self) -> Self;
    /// `~a` (logical not for `bool`).
    fn bitnot(self) -> Self;
}

/// Integer element types: shifts.
///
/// A shift amount outside `0..bits` (negative or too large) shifts every bit
/// out, as PTX `shl`/`shr` clamp: `shl` gives 0, `shr` gives 0 for unsigned
/// and the sign fill (0 or -1) for signed types.
pub trait Int: Num + Bits {
    /// `a << b`.
    fn shl(self, rhs: Self) -> Self;
    /// `a >> b` (arithmetic for signed types).
    fn shr(self, rhs: Self) -> Self;
}

/// Element types `dot`/`dot_t` accept, with the type they accumulate in:
/// `f16 bf16 f32 -> f32`, `f64 -> f64`, `i8 u8 i16 u16 i32 -> i32`,
/// `u32 -> u32`, `i64 -> i64`: `DType::dot_result`, asserted per impl at
/// compile time.
pub trait DotElement: Num {
    /// The accumulator (and result) type of a contraction.
    type Acc: Num + crate::host::Accumulator;
    /// Widens one input element to the accumulator type.
    fn widen(self) -> Self::Acc;
    /// The slice itself when `Self` is its own accumulator type (no copy).
    #[doc(hidden)]
    fn as_acc(values: &[Self]) -> Option<&[Self::Acc]>;
    /// Appends `values` widened to `out`; `f16`/`bf16` use the CPU's
    /// conversion instructions when it has them (F16C, AVX-512 BF16 shifts).
    #[doc(hidden)]
    fn widen_extend(values: &[Self], out: &mut Vec<Self::Acc>) {
        out.extend(values.iter().map(|&v| v.widen()));
    }
    /// The bytes of an 8-bit integer slice and whether they are signed, for
    /// the byte-level contraction kernels; `None` for every other type.
    #[doc(hidden)]
    fn as_bytes(_values: &[Self]) -> Option<(&[u8], bool)> {
        None
    }
}

macro_rules! int_num {
    ($($t:ty => $atomic:ty, $abs:expr, $sign_fill:expr);* $(;)?) => {$(
        impl Num for $t {
            type Sum = $t;
            #[inline(always)]
            fn add(self, rhs: Self) -> Self { self.wrapping_add(rhs) }
            #[inline(always)]
            fn sub(self, rhs: Self) -> Self { self.wrapping_sub(rhs) }
            #[inline(always)]
            fn mul(self, rhs: Self) -> Self { self.wrapping_mul(rhs) }
            #[inline(always)]
            fn div(self, rhs: Self) -> Self { if rhs == 0 { 0 } else { self.wrapping_div(rhs) } }
            #[inline(always)]
            fn rem(self, rhs: Self) -> Self { if rhs == 0 { 0 } else { self.wrapping_rem(rhs) } }
            #[inline(always)]
            fn neg(self) -> Self { self.wrapping_neg() }
            #[inline(always)]
            fn abs(self) -> Self { ($abs)(self) }
            #[inline(always)]
            fn to_sum(self) -> Self { self }
            #[inline(always)]
            fn from_sum(sum: Self) -> Self { sum }
            #[inline(always)]
            unsafe fn atomic_add(ptr: *mut Self, value: Self) -> Self {
                // SAFETY: the caller guarantees validity, alignment and
                // atomic-only concurrent access; the atomic has the same size.
                unsafe { <$atomic>::from_ptr(ptr).fetch_add(value, Relaxed) }
            }
        }
        impl Bits for $t {
            #[inline(always)]
            fn bitand(self, rhs: Self) -> Self { self & rhs }
            #[inline(always)]
            fn bitor(self, rhs: Self) -> Self { self | rhs }
            #[inline(always)]
            fn bitxor(self, rhs: Self) -> Self { self ^ rhs }
            #[inline(always)]
            fn bitnot(self) -> Self { !self }
        }
        impl Int for $t {
            #[inline(always)]
            fn shl(self, rhs: Self) -> Self {
                u32::try_from(rhs).ok().and_then(|s| self.checked_shl(s)).unwrap_or(0)
            }
            #[inline(always)]
            fn shr(self, rhs: Self) -> Self {
                u32::try_from(rhs)
                    .ok()
                    .and_then(|s| self.checked_shr(s))
                    .unwrap_or_else(|| ($sign_fill)(self))
            }
        }
    )*};
}

int_num! {
    i8 => AtomicI8, i8::wrapping_abs, |x: i8| x >> 7;
    u8 => AtomicU8, |x: u8| x, |_| 0;
    i16 => AtomicI16, i16::wrapping_abs, |x: i16| x >> 15;
    u16 => AtomicU16, |x: u16| x, |_| 0;
    i32 => AtomicI32, i32::wrapping_abs, |x: i32| x >> 31;
    u32 => AtomicU32, |x: u32| x, |_| 0;
    i64 => AtomicI64, i64::wrapping_abs, |x: i64| x >> 63;
}

macro_rules! prim_float_num {
    ($($t:ty => $atomic:ty);* $(;)?) => {$(
        impl Num for $t {
            type Sum = $t;
            #[inline(always)]
            fn add(self, rhs: Self) -> Self { self + rhs }
            #[inline(always)]
            fn sub(self, rhs: Self) -> Self { self - rhs }
            #[inline(always)]
            fn mul(self, rhs: Self) -> Self { self * rhs }
            #[inline(always)]
            fn div(self, rhs: Self) -> Self { self / rhs }
            #[inline(always)]
            fn rem(self, rhs: Self) -> Self { self % rhs }
            #[inline(always)]
            fn neg(self) -> Self { -self }
            #[inline(always)]
            fn abs(self) -> Self { <$t>::abs(self) }
            #[inline(always)]
            fn to_sum(self) -> Self { self }
            #[inline(always)]
            fn from_sum(sum: Self) -> Self { sum }
            #[inline(always)]
            unsafe fn atomic_add(ptr: *mut Self, value: Self) -> Self {
                // SAFETY: the caller guarantees validity, alignment and
                // atomic-only concurrent access; the atomic has the same size.
                let slot = unsafe { <$atomic>::from_ptr(ptr.cast()) };
                let mut old = slot.load(Relaxed);
                loop {
                    let new = (<$t>::from_bits(old) + value).to_bits();
                    match slot.compare_exchange_weak(old, new, Relaxed, Relaxed) {
                        Ok(_) => return <$t>::from_bits(old),
                        Err(seen) => old = seen,
                    }
                }
            }
        }
    )*};
}

prim_float_num! {
    f32 => AtomicU32;
    f64 => AtomicU64;
}

macro_rules! half_num {
    ($($t:ty);* $(;)?) => {$(
        impl Num for $t {
            type Sum = f32;
            #[inline(always)]
            fn add(self, rhs: Self) -> Self { <$t>::from_f32(self.to_f32() + rhs.to_f32()) }
            #[inline(always)]
            fn sub(self, rhs: Self) -> Self { <$t>::from_f32(self.to_f32() - rhs.to_f32()) }
            #[inline(always)]
            fn mul(self, rhs: Self) -> Self { <$t>::from_f32(self.to_f32() * rhs.to_f32()) }
            #[inline(always)]
            fn div(self, rhs: Self) -> Self { <$t>::from_f32(self.to_f32() / rhs.to_f32()) }
            #[inline(always)]
            fn rem(self, rhs: Self) -> Self { <$t>::from_f32(self.to_f32() % rhs.to_f32()) }
            #[inline(always)]
            fn neg(self) -> Self { -self }
            #[inline(always)]
            fn abs(self) -> Self { <$t>::from_bits(self.to_bits() & 0x7fff) }
            #[inline(always)]
            fn to_sum(self) -> f32 { self.to_f32() }
            #[inline(always)]
            fn from_sum(sum: f32) -> Self { <$t>::from_f32(sum) }
            #[inline(always)]
            unsafe fn atomic_add(ptr: *mut Self, value: Self) -> Self {
                // SAFETY: the caller guarantees validity, alignment and
                // atomic-only concurrent access; the atomic has the same size.
                let slot = unsafe { AtomicU16::from_ptr(ptr.cast()) };
                let mut old = slot.load(Relaxed);
                loop {
                    let new = Num::add(<$t>::from_bits(old), value).to_bits();
                    match slot.compare_exchange_weak(old, new, Relaxed, Relaxed) {
                        Ok(_) => return <$t>::from_bits(old),
                        Err(seen) => old = seen,
                    }
                }
            }
        }
    )*};
}

half_num! { f16; bf16 }

impl Bits for bool {
    #[inline(always)]
    fn bitand(self, rhs: Self) -> Self {
        self & rhs
    }
    #[inline(always)]
    fn bitor(self, rhs: Self) -> Self {
        self | rhs
    }
    #[inline(always)]
    fn bitxor(self, rhs: Self) -> Self {
        self ^ rhs
    }
    #[inline(always)]
    fn bitnot(self) -> Self {
        !self
    }
}

macro_rules! dot_widened {
    ($($t:ty => $acc:ty, $widen:expr $(, bytes: $bytes:expr)?);* $(;)?) => {$(
        // The accumulator must be the type the compiler's checker gives
        // `dot` (one shared rule), or generated host code would not compile.
        const _: () = assert!(matches!(
            <$t as Element>::DTYPE.dot_result(),
            Some(d) if d.same(<$acc as Element>::DTYPE)
        ));
        impl DotElement for $t {
            type Acc = $acc;
            #[inline(always)]
            fn widen(self) -> $acc { ($widen)(self) }
            fn as_acc(_: &[Self]) -> Option<&[$acc]> { None }
            $(fn as_bytes(values: &[Self]) -> Option<(&[u8], bool)> { Some(($bytes)(values)) })?
        }
    )*};
}

macro_rules! dot_self {
    ($($t:ty),*) => {$(
        const _: () = assert!(matches!(
            <$t as Element>::DTYPE.dot_result(),
            Some(d) if d.same(<$t as Element>::DTYPE)
        ));
        impl DotElement for $t {
            type Acc = $t;
            #[inline(always)]
            fn widen(self) -> $t { self }
            fn as_acc(values: &[Self]) -> Option<&[$t]> { Some(values) }
        }
    )*};
}

/// `i8`s as the bytes the 8-bit contraction kernels read, signed.
fn i8_bytes(values: &[i8]) -> (&[u8], bool) {
    // SAFETY: `i8` and `u8` have the same size, alignment and validity
    // (every bit pattern), so the slice reads as bytes.
    let bytes = unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), values.len()) };
    (bytes, true)
}

dot_widened! {
    i8 => i32, i32::from, bytes: i8_bytes;
    u8 => i32, i32::from, bytes: |values| (values, false);
    i16 => i32, i32::from;
    u16 => i32, i32::from;
}

macro_rules! dot_half {
    ($($t:ty),*) => {$(
        const _: () = assert!(matches!(
            <$t as Element>::DTYPE.dot_result(),
            Some(d) if d.same(<f32 as Element>::DTYPE)
        ));
        impl DotElement for $t {
            type Acc = f32;
            #[inline(always)]
            fn widen(self) -> f32 { self.to_f32() }
            fn as_acc(_: &[Self]) -> Option<&[f32]> { None }
            fn widen_extend(values: &[Self], out: &mut Vec<f32>) {
                use half::slice::HalfFloatSliceExt;
                let start = out.len();
                out.resize(start + values.len(), 0.0);
                values.convert_to_f32_slice(&mut out[start..]);
            }
        }
    )*};
}

dot_half!(f16, bf16);

dot_self!(i32, u32, i64, f32, f64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_division_truncates_and_never_panics() {
        assert_eq!(Num::div(-7i32, 2), -3);
        assert_eq!(Num::rem(-7i32, 2), -1);
        assert_eq!(Num::div(7i32, 0), 0);
        assert_eq!(Num::rem(7u8, 0), 0);
        assert_eq!(Num::div(i32::MIN, -1), i32::MIN);
        assert_eq!(Num::add(250u8, 10), 4);
        assert_eq!(Num::neg(1u32), u32::MAX);
        assert_eq!(Num::abs(i8::MIN), i8::MIN);
    }

    #[test]
    fn float_rem_keeps_sign_of_dividend() {
        assert_eq!(Num::rem(-7.5f32, 2.0), -1.5);
        assert_eq!(
            Num::rem(f16::from_f32(7.5), f16::from_f32(-2.0)).to_f32(),
            1.5
        );
        assert_eq!(Num::abs(bf16::from_f32(-3.0)).to_f32(), 3.0);
    }

    #[test]
    fn half_ops_round_once_from_f32() {
        let a = f16::from_f32(1.0);
        let b = f16::from_f32(0.0004);
        assert_eq!(Num::add(a, b), f16::from_f32(a.to_f32() + b.to_f32()));
        let c = bf16::from_f32(3.0);
        assert_eq!(Num::div(bf16::ONE, c), bf16::from_f32(1.0 / 3.0));
    }

    #[test]
    fn shifts_clamp_like_ptx() {
        assert_eq!(Int::shl(1i32, 31), i32::MIN);
        assert_eq!(Int::shl(1i32, 32), 0);
        assert_eq!(Int::shl(1u8, 200), 0);
        assert_eq!(Int::shr(-8i32, 1), -4);
        assert_eq!(Int::shr(-8i32, 40), -1);
        assert_eq!(Int::shr(8i32, -1), 0);
        assert_eq!(Int::shr(0x80u8, 7), 1);
    }

    #[test]
    fn bits_on_ints_and_bools() {
        assert_eq!(Bits::bitand(0b1100u8, 0b1010), 0b1000);
        assert_eq!(Bits::bitor(0b1100u8, 0b1010), 0b1110);
        assert_eq!(Bits::bitxor(0b1100u8, 0b1010), 0b0110);
        assert_eq!(Bits::bitnot(0i16), -1);
        assert!(Bits::bitnot(false));
        assert!(!Bits::bitand(true, false));
    }

    #[test]
    fn atomic_add_every_kind() {
        let mut x = 250u8;
        assert_eq!(unsafe { Num::atomic_add(&mut x, 10) }, 250);
        assert_eq!(x, 4);
        let mut f = 1.5f32;
        unsafe { Num::atomic_add(&mut f, 2.25) };
        assert_eq!(f, 3.75);
        let mut h = f16::from_f32(1.0);
        unsafe { Num::atomic_add(&mut h, f16::from_f32(0.5)) };
        assert_eq!(h.to_f32(), 1.5);
        let mut d = -1.0f64;
        unsafe { Num::atomic_add(&mut d, 0.25) };
        assert_eq!(d, -0.75);
    }

    #[test]
    fn dot_elements_widen() {
        assert_eq!((-128i8).widen(), -128i32);
        assert_eq!(255u8.widen(), 255i32);
        assert_eq!(bf16::from_f32(2.5).widen(), 2.5f32);
    }
}
