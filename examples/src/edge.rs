//! Inputs and expected results for the edge-case kernels of
//! `kernels/edge/edge_cases.ph` (SPEC.md §10's edge cases). The expected
//! values are Rust's own semantics as SPEC.md states them, written here
//! independently of `phobos-rt`'s element traits: `tests/edge_cases.rs`
//! checks the host back end against them, and the device dump uses the
//! host's results as the GPU's oracle.

use phobos::{bf16, f16};

/// An integer element type of the table: its bounds, and exact conversion
/// through `i128` (every value of every type fits).
pub trait EdgeInt: Copy + PartialEq + std::fmt::Debug {
    const BITS: u32;
    const SIGNED: bool;
    fn to_i128(self) -> i128;
    /// The low `BITS` bits of `v` (two's complement wrap, Rust `as`).
    fn wrap(v: i128) -> Self;
}

macro_rules! edge_int {
    ($($t:ty),*) => {$(
        impl EdgeInt for $t {
            const BITS: u32 = <$t>::BITS;
            const SIGNED: bool = <$t>::MIN != 0;
            fn to_i128(self) -> i128 { self as i128 }
            fn wrap(v: i128) -> Self { v as $t }
        }
    )*};
}

edge_int!(i8, u8, i16, u16, i32, u32, i64);

fn int_min<T: EdgeInt>() -> i128 {
    if T::SIGNED {
        -(1i128 << (T::BITS - 1))
    } else {
        0
    }
}

fn int_max<T: EdgeInt>() -> i128 {
    if T::SIGNED {
        (1i128 << (T::BITS - 1)) - 1
    } else {
        (1i128 << T::BITS) - 1
    }
}

/// Operand values that hit every case: zero, ±1, small values of both
/// signs, shift amounts around the bit width, MIN/MAX and their
/// neighbours, a bit pattern. Negative values wrap for unsigned types.
pub fn int_values<T: EdgeInt>() -> Vec<T> {
    let bits = i128::from(T::BITS);
    let (min, max) = (int_min::<T>(), int_max::<T>());
    let raw = [
        0,
        1,
        -1,
        2,
        -2,
        3,
        7,
        -7,
        bits - 1,
        bits,
        bits + 1,
        -bits,
        min,
        min + 1,
        max,
        max - 1,
        0x55,
    ];
    let mut values: Vec<T> = Vec::new();
    for v in raw.map(T::wrap) {
        if !values.contains(&v) {
            values.push(v);
        }
    }
    values
}

/// Every ordered pair of [`int_values`]: `(a, b)`.
pub fn int_pairs<T: EdgeInt>() -> (Vec<T>, Vec<T>) {
    let values = int_values::<T>();
    let a = values
        .iter()
        .flat_map(|&x| values.iter().map(move |_| x))
        .collect();
    let b = values.iter().flat_map(|_| values.iter().copied()).collect();
    (a, b)
}

/// SPEC's `a / b`: truncating, 0 for a zero divisor, wrapping for
/// `MIN / -1`.
pub fn int_div<T: EdgeInt>(a: T, b: T) -> T {
    match b.to_i128() {
        0 => T::wrap(0),
        d => T::wrap(a.to_i128() / d),
    }
}

/// SPEC's `a % b`: the dividend's sign, 0 for a zero divisor.
pub fn int_rem<T: EdgeInt>(a: T, b: T) -> T {
    match b.to_i128() {
        0 => T::wrap(0),
        d => T::wrap(a.to_i128() % d),
    }
}

/// SPEC's `a << b`: 0 when `b` is negative or at least the bit width.
pub fn int_shl<T: EdgeInt>(a: T, b: T) -> T {
    let s = b.to_i128();
    if (0..i128::from(T::BITS)).contains(&s) {
        T::wrap(a.to_i128() << s)
    } else {
        T::wrap(0)
    }
}

/// SPEC's `a >> b`: arithmetic for signed types; out of range, every bit
/// shifts out (the sign fill for signed types).
pub fn int_shr<T: EdgeInt>(a: T, b: T) -> T {
    let s = b.to_i128();
    let s = if (0..i128::from(T::BITS)).contains(&s) {
        s
    } else {
        i128::from(T::BITS)
    };
    // `a` is exact in i128, so `>>` there is the arithmetic (signed) or
    // logical (unsigned, non-negative) shift of the type.
    T::wrap(a.to_i128() >> s)
}

/// SPEC's `cdiv(a, b)`: the quotient rounded up (for operands of the same
/// sign), 0 for a zero divisor, wrapping like `/`.
pub fn int_cdiv<T: EdgeInt>(a: T, b: T) -> T {
    let (a, b) = (a.to_i128(), b.to_i128());
    if b == 0 {
        return T::wrap(0);
    }
    let q = a / b;
    let bump = a % b != 0 && (a < 0) == (b < 0);
    T::wrap(q + i128::from(bump))
}

/// A float element type of the table, through `f64` (exact for all four).
pub trait EdgeFloat: Copy + std::fmt::Debug {
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
}

impl EdgeFloat for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl EdgeFloat for f64 {
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
}

impl EdgeFloat for f16 {
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
}

impl EdgeFloat for bf16 {
    fn from_f64(v: f64) -> Self {
        bf16::from_f64(v)
    }
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
}

/// Float operands (rounded to the type): signed zeros, small and large
/// values, the casts' boundaries, the largest finite value, the smallest
/// subnormals of f16/f32/f64 (0 in narrower types), infinities and NaN.
pub fn float_values<F: EdgeFloat>() -> Vec<F> {
    let raw = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        1.5,
        -2.5,
        7.75,
        -7.75,
        0.1,
        3.0,
        -0.75,
        127.5,
        128.0,
        -129.0,
        255.5,
        256.0,
        -32769.0,
        65535.0,
        65536.0,
        2147483647.0,
        -2147483904.0,
        4294967296.0,
        9.3e18,
        -9.3e18,
        1e30,
        -3.0e38,
        1.7e308,
        f64::from(f32::from_bits(1)),
        f64::from_bits(1),
        f16::from_bits(1).to_f64(),
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    raw.map(F::from_f64).to_vec()
}

/// Every ordered pair of [`float_values`].
pub fn float_pairs<F: EdgeFloat>() -> (Vec<F>, Vec<F>) {
    let values = float_values::<F>();
    let a = values
        .iter()
        .flat_map(|&x| values.iter().map(move |_| x))
        .collect();
    let b = values.iter().flat_map(|_| values.iter().copied()).collect();
    (a, b)
}

/// SPEC's float `%`: C `fmod`. The remainder of two values of any of the
/// four types is exact in `f64` and representable in the type, so it is
/// computed there.
pub fn float_rem<F: EdgeFloat>(a: F, b: F) -> F {
    F::from_f64(a.to_f64() % b.to_f64())
}

/// SPEC's `min`: a NaN loses to a number; of two equal values, the first.
pub fn float_min<F: EdgeFloat>(a: F, b: F) -> F {
    let (x, y) = (a.to_f64(), b.to_f64());
    if x.is_nan() || y < x { b } else { a }
}

/// SPEC's `max`: a NaN loses to a number; of two equal values, the first.
pub fn float_max<F: EdgeFloat>(a: F, b: F) -> F {
    let (x, y) = (a.to_f64(), b.to_f64());
    if x.is_nan() || y > x { b } else { a }
}

/// SPEC's float-to-integer cast: toward zero, saturating, NaN to 0.
pub fn float_to_int<F: EdgeFloat, T: EdgeInt>(a: F) -> T {
    let x = a.to_f64();
    if x.is_nan() {
        return T::wrap(0);
    }
    let t = x.trunc();
    let (min, max) = (int_min::<T>(), int_max::<T>());
    // Every bound is a power of two (minus one); compare in f64 against
    // the powers, which are exact.
    if t <= min as f64 {
        T::wrap(min)
    } else if t >= (max + 1) as f64 {
        T::wrap(max)
    } else {
        T::wrap(t as i128)
    }
}

/// Loops with a runtime step: `(start, end, step)`, with steps of both
/// signs, empty ranges and counters that would wrap past the type's
/// bounds (the loop ends there). No step is 0: that is an error.
pub fn loop_cases<T: EdgeInt>() -> Vec<(T, T, T)> {
    let (min, max) = (int_min::<T>(), int_max::<T>());
    let raw: [(i128, i128, i128); 10] = [
        (0, 10, 1),
        (0, 10, 3),
        (10, 0, 1),
        (10, 0, -3),
        (5, 5, 2),
        (max - 5, max, 4),
        (max - 9, max, 2),
        (min + 5, min, -4),
        (0, 100, 7),
        (min, max, (max - min) / 3 + 1),
    ];
    raw.iter()
        .filter(|(s, e, st)| [*s, *e, *st].iter().all(|v| (min..=max).contains(v)) && *st != 0)
        .map(|&(s, e, st)| (T::wrap(s), T::wrap(e), T::wrap(st)))
        .collect()
}

/// What `for i in range(start, end, step) { n += 1; last = i }` leaves:
/// the iteration count and the last `i` (0 when none ran).
pub fn loop_result<T: EdgeInt>(start: T, end: T, step: T) -> (i32, T) {
    let (mut i, end, step) = (start.to_i128(), end.to_i128(), step.to_i128());
    let (min, max) = (int_min::<T>(), int_max::<T>());
    let (mut n, mut last) = (0, 0);
    while (step > 0 && i < end) || (step < 0 && i > end) {
        n += 1;
        last = i;
        i += step;
        if !(min..=max).contains(&i) {
            break;
        }
    }
    (n, T::wrap(last))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_follow_spec() {
        assert_eq!(int_div(i8::MIN, -1), i8::MIN);
        assert_eq!(int_rem(i8::MIN, -1), 0);
        assert_eq!(int_div(7u16, 0), 0);
        assert_eq!(int_shl(1i32, 32), 0);
        assert_eq!(int_shl(1i32, -1), 0);
        assert_eq!(int_shr(-8i16, 16), -1);
        assert_eq!(int_shr(0x80u8, 7), 1);
        assert_eq!(int_cdiv(7i32, 2), 4);
        assert_eq!(int_cdiv(-7i32, 2), -3);
        assert_eq!(int_cdiv(7u8, 0), 0);
        assert_eq!(float_to_int::<f32, u8>(300.0), 255u8);
        assert_eq!(float_to_int::<f64, i64>(1e300), i64::MAX);
        assert_eq!(float_to_int::<f32, i32>(-2.9), -2);
        assert_eq!(float_to_int::<f32, i8>(f32::NAN), 0);
        assert_eq!(float_rem(-7.5f32, 2.0), -1.5);
        assert!(float_rem(-4.0f32, 2.0).is_sign_negative());
        assert_eq!(float_min(f32::NAN, 1.0), 1.0);
        assert_eq!(float_max(2.0f32, f32::NAN), 2.0);
        assert_eq!(loop_result(i8::MAX - 5, i8::MAX, 4), (2, i8::MAX - 1));
        assert_eq!(loop_result(10i32, 0, -3), (4, 1));
        assert_eq!(loop_result(10i32, 0, 1), (0, 0));
    }

    #[test]
    fn tables_are_large_and_distinct() {
        assert_eq!(int_values::<i32>().len(), 17);
        assert!(int_values::<u8>().len() >= 12);
        let (a, b) = int_pairs::<i64>();
        assert_eq!(a.len(), 17 * 17);
        assert_eq!(b.len(), a.len());
        assert_eq!(float_pairs::<f16>().0.len(), 33 * 33);
        assert!(loop_cases::<u8>().len() >= 6);
    }
}
