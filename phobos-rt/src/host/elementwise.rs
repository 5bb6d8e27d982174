//! Elementwise tile operators and functions, with NumPy broadcasting.
//! Element semantics (wrapping ints, division by zero, shifts, NaN in
//! min/max, f16 math in f32) are those of the element traits in
//! `crate::element`.

use super::broadcast::{assign_with, map, zip_with};
use super::tile::Tile;
use crate::{Bits, CastTo, Element, Float, Int, Num, Result};

macro_rules! binary {
    ($($(#[$doc:meta])* $name:ident: $bound:ident => $out:ty, $f:expr;)*) => {$(
        $(#[$doc])*
        #[inline]
        pub fn $name<T: $bound>(a: &Tile<T>, b: &Tile<T>) -> Result<Tile<$out>> {
            zip_with(stringify!($name), a, b, $f)
        }
    )*};
}

binary! {
    /// `a + b`.
    add: Num => T, Num::add;
    /// `a - b`.
    sub: Num => T, Num::sub;
    /// `a * b`.
    mul: Num => T, Num::mul;
    /// `a / b` (integers truncate toward zero; `x / 0 == 0`).
    div: Num => T, Num::div;
    /// `a % b` (sign of `a`; integer `x % 0 == 0`).
    rem: Num => T, Num::rem;
    /// `a == b`.
    eq: Element => bool, |x: T, y: T| x == y;
    /// `a != b`.
    ne: Element => bool, |x: T, y: T| x != y;
    /// `a < b`.
    lt: Element => bool, |x: T, y: T| x < y;
    /// `a <= b`.
    le: Element => bool, |x: T, y: T| x <= y;
    /// `a > b`.
    gt: Element => bool, |x: T, y: T| x > y;
    /// `a >= b`.
    ge: Element => bool, |x: T, y: T| x >= y;
    /// `a & b`.
    bitand: Bits => T, Bits::bitand;
    /// `a | b`.
    bitor: Bits => T, Bits::bitor;
    /// `a ^ b`.
    bitxor: Bits => T, Bits::bitxor;
    /// `a << b` (amounts outside `0..bits` give 0).
    shl: Int => T, Int::shl;
    /// `a >> b` (arithmetic for signed; amounts outside `0..bits` give the sign fill).
    shr: Int => T, Int::shr;
    /// Elementwise `min(a, b)`; a NaN loses to a number.
    minimum: Element => T, Element::minimum;
    /// Elementwise `max(a, b)`; a NaN loses to a number.
    maximum: Element => T, Element::maximum;
}

/// `cdiv(a, b)` on integers: the quotient rounded up (`(a + b - 1) / b`
/// for positive operands, in general toward +inf); `cdiv(x, 0) == 0`.
pub fn cdiv_scalar<T: Int>(a: T, b: T) -> T {
    let q = Num::div(a, b);
    if Num::rem(a, b) != T::ZERO && ((a < T::ZERO) == (b < T::ZERO)) {
        Num::add(q, T::ONE)
    } else {
        q
    }
}

/// Elementwise [`cdiv_scalar`].
pub fn cdiv<T: Int>(a: &Tile<T>, b: &Tile<T>) -> Result<Tile<T>> {
    zip_with("cdiv", a, b, cdiv_scalar)
}

/// `a && b` on bool tiles.
pub fn and(a: &Tile<bool>, b: &Tile<bool>) -> Result<Tile<bool>> {
    zip_with("and", a, b, |x, y| x && y)
}

/// `a || b` on bool tiles.
pub fn or(a: &Tile<bool>, b: &Tile<bool>) -> Result<Tile<bool>> {
    zip_with("or", a, b, |x, y| x || y)
}

/// `!a` on a bool tile.
pub fn not(a: &Tile<bool>) -> Tile<bool> {
    map(a, |x| !x)
}

macro_rules! unary {
    ($($(#[$doc:meta])* $name:ident: $bound:ident, $f:expr;)*) => {$(
        $(#[$doc])*
        #[inline]
        pub fn $name<T: $bound>(a: &Tile<T>) -> Tile<T> {
            map(a, $f)
        }
    )*};
}

unary! {
    /// `-a` (wrapping for integers).
    neg: Num, Num::neg;
    /// `|a|` (wrapping for signed integers).
    abs: Num, Num::abs;
    /// `~a`.
    bitnot: Bits, Bits::bitnot;
    /// `e^a`.
    exp: Float, Float::exp;
    /// `ln a`.
    log: Float, Float::log;
    /// `sqrt a`.
    sqrt: Float, Float::sqrt;
    /// `1 / sqrt a`.
    rsqrt: Float, Float::rsqrt;
    /// `tanh a`.
    tanh: Float, Float::tanh;
    /// `1 / (1 + e^-a)`.
    sigmoid: Float, Float::sigmoid;
    /// `a * sigmoid(a)`.
    silu: Float, Float::silu;
    /// GELU, tanh approximation.
    gelu: Float, Float::gelu;
    /// Round toward negative infinity.
    floor: Float, Float::floor;
    /// Round to nearest, ties away from zero.
    round: Float, Float::round;
}

/// `where(cond, a, b)`: `a` where `cond` holds, else `b`; all three broadcast.
#[inline]
pub fn select<T: Element>(cond: &Tile<bool>, a: &Tile<T>, b: &Tile<T>) -> Result<Tile<T>> {
    super::broadcast::zip3_with("where", cond, a, b, |c, x, y| if c { x } else { y })
}

/// Converts every element (`U(t)` in the language; see [`CastTo`]).
pub fn cast<T: CastTo<U>, U: Element>(t: &Tile<T>) -> Tile<U> {
    map(t, CastTo::cast)
}

macro_rules! assign {
    ($($(#[$doc:meta])* $name:ident: $bound:ident, $f:expr;)*) => {$(
        $(#[$doc])*
        #[inline]
        pub fn $name<T: $bound>(acc: &mut Tile<T>, rhs: &Tile<T>) -> Result<()> {
            assign_with(stringify!($name), acc, rhs, $f)
        }
    )*};
}

assign! {
    /// `acc += rhs` in place (`rhs` broadcasts to `acc`'s shape).
    add_assign: Num, Num::add;
    /// `acc -= rhs` in place.
    sub_assign: Num, Num::sub;
    /// `acc *= rhs` in place.
    mul_assign: Num, Num::mul;
    /// `acc /= rhs` in place.
    div_assign: Num, Num::div;
    /// `acc max= rhs` in place.
    max_assign: Element, Element::maximum;
}

#[cfg(test)]
#[path = "elementwise_tests.rs"]
mod tests;
