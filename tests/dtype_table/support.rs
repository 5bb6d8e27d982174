//! Hand-written support for the generated dtype table (every other file in
//! this folder is generated): the input samples of every dtype, the plain
//! Rust computation of every operator and built-in (SPEC.md semantics,
//! written without the host tile library), and the comparison.

use phobos::{Device, Element, Tensor, bf16, f16};

/// A value of any dtype, for conversions that follow SPEC.md's casts
/// (Rust's `as`: ints wrap, float -> int saturates with NaN -> 0).
#[derive(Clone, Copy, Debug)]
pub enum Value {
    B(bool),
    I(i128),
    F(f64),
}

/// The plain Rust side of every dtype.
pub trait Plain: Element {
    fn value(self) -> Value;
    fn from_value(v: Value) -> Self;
    /// `x`: 4 samples; `y`: 4 more (a zero divisor, a negative shift).
    fn x() -> [Self; 4];
    fn y() -> [Self; 4];
    /// `[4, 4]` tiles `p` and `q`, row-major.
    fn p() -> [Self; 16];
    fn q() -> [Self; 16];
    /// Equal, or for floats both NaN or within `ulps` units in the last
    /// place of the larger magnitude.
    fn close(self, other: Self, ulps: f64) -> bool;
}

/// `R(a)` by SPEC.md's cast rules.
pub fn conv<A: Plain, R: Plain>(a: A) -> R {
    R::from_value(a.value())
}

/// `ulps` units of `eps` relative to the larger magnitude, or absolute below
/// 1 (functions such as `gelu(-3)` cancel, so a tiny result carries the
/// error of its terms).
fn float_close(a: f64, b: f64, ulps: f64, eps: f64) -> bool {
    let scale = a.abs().max(b.abs()).max(1.0);
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= ulps * eps * scale
}

macro_rules! int_plain {
    ($($t:ty: $x:expr, $y:expr, $p:expr, $q:expr;)*) => {$(
        impl Plain for $t {
            fn value(self) -> Value { Value::I(self as i128) }
            fn from_value(v: Value) -> $t {
                match v {
                    Value::B(b) => <$t>::from(b),
                    Value::I(i) => i as $t,
                    Value::F(f) => f as $t,
                }
            }
            fn x() -> [$t; 4] { $x }
            fn y() -> [$t; 4] { $y }
            fn p() -> [$t; 16] { std::array::from_fn(|i| ($p)(i as i64) as $t) }
            fn q() -> [$t; 16] { std::array::from_fn(|i| ($q)(i as i64) as $t) }
            fn close(self, other: $t, _: f64) -> bool { self == other }
        }
    )*};
}

int_plain! {
    i8: [7, -3, 0, 5], [2, 5, -3, 0], |i| i % 7 - 3, |i| i % 5 - 2;
    i16: [7, -3, 0, 5], [2, 5, -3, 0], |i| i % 7 - 3, |i| i % 5 - 2;
    i32: [7, -3, 0, 5], [2, 5, -3, 0], |i| i % 7 - 3, |i| i % 5 - 2;
    i64: [7, -3, 0, 5], [2, 5, -3, 0], |i| i % 7 - 3, |i| i % 5 - 2;
    u8: [7, 3, 0, 250], [2, 5, 9, 0], |i| i % 5, |i| i % 3 + 1;
    u16: [7, 3, 0, 65530], [2, 5, 17, 0], |i| i % 5, |i| i % 3 + 1;
    u32: [7, 3, 0, 4_000_000_000], [2, 5, 33, 0], |i| i % 5, |i| i % 3 + 1;
}

fn float_x() -> [f64; 4] {
    [1.5, -2.25, 0.5, 3.0]
}

fn float_y() -> [f64; 4] {
    [0.25, 2.0, -1.5, 0.0]
}

macro_rules! float_plain {
    ($($t:ty: $eps:expr, $from:expr, $to:expr;)*) => {$(
        impl Plain for $t {
            fn value(self) -> Value { Value::F(($to)(self)) }
            fn from_value(v: Value) -> $t {
                match v {
                    Value::B(b) => ($from)(f64::from(u8::from(b))),
                    Value::I(i) => ($from)(i as f64),
                    Value::F(f) => ($from)(f),
                }
            }
            fn x() -> [$t; 4] { float_x().map($from) }
            fn y() -> [$t; 4] { float_y().map($from) }
            fn p() -> [$t; 16] { std::array::from_fn(|i| ($from)(((i % 7) as f64 - 3.0) * 0.5)) }
            fn q() -> [$t; 16] { std::array::from_fn(|i| ($from)(((i % 5) as f64 - 2.0) * 0.25)) }
            fn close(self, other: $t, ulps: f64) -> bool {
                float_close(($to)(self), ($to)(other), ulps, $eps)
            }
        }
    )*};
}

float_plain! {
    f16: 1.0 / 1024.0, f16::from_f64, f16::to_f64;
    bf16: 1.0 / 128.0, bf16::from_f64, bf16::to_f64;
    f32: f32::EPSILON as f64, |f: f64| f as f32, f64::from;
    f64: f64::EPSILON, |f: f64| f, |f: f64| f;
}

impl Plain for bool {
    fn value(self) -> Value {
        Value::B(self)
    }
    fn from_value(v: Value) -> bool {
        match v {
            Value::B(b) => b,
            Value::I(i) => i != 0,
            Value::F(f) => f != 0.0,
        }
    }
    fn x() -> [bool; 4] {
        [true, false, true, false]
    }
    fn y() -> [bool; 4] {
        [true, true, false, false]
    }
    fn p() -> [bool; 16] {
        std::array::from_fn(|i| i % 3 == 0)
    }
    fn q() -> [bool; 16] {
        std::array::from_fn(|i| i % 2 == 0)
    }
    fn close(self, other: bool, _: f64) -> bool {
        self == other
    }
}

/// Arithmetic in one dtype, as SPEC.md §6 and §10 define it: integers wrap,
/// `x / 0` and `x % 0` are 0, shifts outside `0..bits` shift every bit
/// out; `f16`/`bf16` compute in `f32` and round once.
pub trait Num: Plain + PartialOrd {
    fn add(self, b: Self) -> Self;
    fn sub(self, b: Self) -> Self;
    fn mul(self, b: Self) -> Self;
    fn div(self, b: Self) -> Self;
    fn rem(self, b: Self) -> Self;
    fn neg(self) -> Self;
    fn abs(self) -> Self;
    /// NaN-ignoring for floats (C's `fminf`).
    fn min(self, b: Self) -> Self;
    fn max(self, b: Self) -> Self;
    fn zero() -> Self;
}

/// Integer-only operators.
pub trait Int: Num {
    fn shl(self, b: Self) -> Self;
    fn shr(self, b: Self) -> Self;
    fn cdiv(self, b: Self) -> Self;
}

/// Bitwise operators: integers and `bool`.
pub trait Bits: Plain {
    fn and(self, b: Self) -> Self;
    fn or(self, b: Self) -> Self;
    fn xor(self, b: Self) -> Self;
    fn not(self) -> Self;
}

macro_rules! int_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            fn add(self, b: $t) -> $t { self.wrapping_add(b) }
            fn sub(self, b: $t) -> $t { self.wrapping_sub(b) }
            fn mul(self, b: $t) -> $t { self.wrapping_mul(b) }
            fn div(self, b: $t) -> $t { if b == 0 { 0 } else { self.wrapping_div(b) } }
            fn rem(self, b: $t) -> $t { if b == 0 { 0 } else { self.wrapping_rem(b) } }
            fn neg(self) -> $t { (0 as $t).wrapping_sub(self) }
            #[allow(unused_comparisons)]
            fn abs(self) -> $t { if self < 0 { self.neg() } else { self } }
            fn min(self, b: $t) -> $t { Ord::min(self, b) }
            fn max(self, b: $t) -> $t { Ord::max(self, b) }
            fn zero() -> $t { 0 }
        }
        impl Int for $t {
            fn shl(self, b: $t) -> $t {
                match u32::try_from(b) {
                    Ok(s) if s < <$t>::BITS => self << s,
                    _ => 0,
                }
            }
            #[allow(unused_comparisons)]
            fn shr(self, b: $t) -> $t {
                match u32::try_from(b) {
                    Ok(s) if s < <$t>::BITS => self >> s,
                    _ if self < 0 => (0 as $t).wrapping_sub(1),
                    _ => 0,
                }
            }
            #[allow(unused_comparisons)]
            fn cdiv(self, b: $t) -> $t {
                let q = self.div(b);
                if self.rem(b) != 0 && ((self < 0) == (b < 0)) { q.add(1) } else { q }
            }
        }
        impl Bits for $t {
            fn and(self, b: $t) -> $t { self & b }
            fn or(self, b: $t) -> $t { self | b }
            fn xor(self, b: $t) -> $t { self ^ b }
            fn not(self) -> $t { !self }
        }
    )*};
}

int_num!(i8, u8, i16, u16, i32, u32, i64);

impl Bits for bool {
    fn and(self, b: bool) -> bool {
        self & b
    }
    fn or(self, b: bool) -> bool {
        self | b
    }
    fn xor(self, b: bool) -> bool {
        self ^ b
    }
    fn not(self) -> bool {
        !self
    }
}

/// The float math of SPEC.md §10, computed in `f64` for `f64` and in `f32`
/// otherwise (rounded once to the type).
pub trait Float: Num {
    fn math(self, f: &str) -> Self;
}

fn math_f64(x: f64, f: &str) -> f64 {
    let sigmoid = |x: f64| 1.0 / (1.0 + (-x).exp());
    match f {
        "exp" => x.exp(),
        "log" => x.ln(),
        "sqrt" => x.sqrt(),
        "rsqrt" => 1.0 / x.sqrt(),
        "tanh" => x.tanh(),
        "sigmoid" => sigmoid(x),
        "silu" => x * sigmoid(x),
        // The tanh approximation (SPEC.md §10).
        "gelu" => 0.5 * x * (1.0 + (0.797_884_560_802_865_4 * (x + 0.044_715 * x * x * x)).tanh()),
        "sin" => x.sin(),
        "cos" => x.cos(),
        "floor" => x.floor(),
        "round" => x.round(),
        other => panic!("no float function {other}"),
    }
}

macro_rules! float_num {
    ($($t:ty: $wide:ty, $to:expr, $from:expr;)*) => {$(
        impl Num for $t {
            fn add(self, b: $t) -> $t { ($from)(($to)(self) + ($to)(b)) }
            fn sub(self, b: $t) -> $t { ($from)(($to)(self) - ($to)(b)) }
            fn mul(self, b: $t) -> $t { ($from)(($to)(self) * ($to)(b)) }
            fn div(self, b: $t) -> $t { ($from)(($to)(self) / ($to)(b)) }
            fn rem(self, b: $t) -> $t { ($from)(($to)(self) % ($to)(b)) }
            fn neg(self) -> $t { -self }
            fn abs(self) -> $t { ($from)(($to)(self).abs()) }
            fn min(self, b: $t) -> $t { ($from)(($to)(self).min(($to)(b))) }
            fn max(self, b: $t) -> $t { ($from)(($to)(self).max(($to)(b))) }
            fn zero() -> $t { ($from)(0.0) }
        }
        impl Float for $t {
            fn math(self, f: &str) -> $t {
                let x: $wide = ($to)(self);
                // Computed in f64 and rounded to the working type, then to $t.
                ($from)(math_f64(f64::from(x), f) as $wide)
            }
        }
    )*};
}

float_num! {
    f16: f32, f16::to_f32, f16::from_f32;
    bf16: f32, bf16::to_f32, bf16::from_f32;
    f32: f32, |x: f32| x, |x: f32| x;
    f64: f64, |x: f64| x, |x: f64| x;
}

/// The input tensors: `x`, `y` are `[4]`, `p`, `q` are `[4, 4]`.
pub fn x<T: Plain>(d: &Device) -> Tensor<T> {
    d.tensor_from(&T::x(), [4]).expect("x")
}

pub fn y<T: Plain>(d: &Device) -> Tensor<T> {
    d.tensor_from(&T::y(), [4]).expect("y")
}

pub fn p<T: Plain>(d: &Device) -> Tensor<T> {
    d.tensor_from(&T::p(), [4, 4]).expect("p")
}

pub fn q<T: Plain>(d: &Device) -> Tensor<T> {
    d.tensor_from(&T::q(), [4, 4]).expect("q")
}

/// One output per result dtype: row `k` of `[rows, 4, 8]` belongs to case `k`.
pub fn out<T: Plain>(d: &Device, rows: usize) -> Tensor<T> {
    d.zeros([rows, 4, 8]).expect("out")
}

/// The expected contents of one output tensor, cell by cell, with the
/// tolerance of each written cell.
pub struct Want<T> {
    data: Vec<T>,
    ulps: Vec<f64>,
    what: Vec<String>,
}

impl<T: Plain> Want<T> {
    pub fn new(rows: usize) -> Want<T> {
        let n = rows * 32;
        Want {
            data: vec![T::default(); n],
            ulps: vec![0.0; n],
            what: vec![String::new(); n],
        }
    }

    pub fn set(&mut self, what: &str, ulps: f64, k: usize, r: usize, c: usize, v: T) {
        let i = k * 32 + r * 8 + c;
        self.data[i] = v;
        self.ulps[i] = ulps;
        self.what[i] = what.to_string();
    }

    /// An elementwise result: the tile form in row 0 (`f(i)` at column
    /// `i`), the scalar form of element 1 at row 1, column 0.
    pub fn elementwise(&mut self, what: &str, ulps: f64, k: usize, f: impl Fn(usize) -> T) {
        for i in 0..4 {
            self.set(what, ulps, k, 0, i, f(i));
        }
        self.set(&format!("{what} (scalar)"), ulps, k, 1, 0, f(1));
    }

    /// A `[rows, cols]` result at the top left of row `k`.
    pub fn matrix(&mut self, what: &str, ulps: f64, k: usize, cols: usize, v: &[T]) {
        for (i, &x) in v.iter().enumerate() {
            self.set(what, ulps, k, i / cols, i % cols, x);
        }
    }

    pub fn check(&self, got: &Tensor<T>) {
        let got = got.to_vec().expect("read back");
        assert_eq!(got.len(), self.data.len());
        for (i, (g, w)) in got.iter().zip(&self.data).enumerate() {
            assert!(
                g.close(*w, self.ulps[i]),
                "{} ({} at row {}, [{}, {}]): got {g:?}, want {w:?}",
                self.what[i],
                T::DTYPE,
                i / 32,
                i % 32 / 8,
                i % 8
            );
        }
    }
}

/// Row-major `[4, 4]` helpers for the tile built-ins.
pub fn rowwise<T: Copy, A>(t: &[T; 16], init: A, f: impl Fn(A, T) -> A) -> [A; 4]
where
    A: Copy,
{
    std::array::from_fn(|r| t[r * 4..r * 4 + 4].iter().fold(init, |a, &x| f(a, x)))
}

pub fn transpose<T: Copy>(t: &[T; 16]) -> [T; 16] {
    std::array::from_fn(|i| t[(i % 4) * 4 + i / 4])
}

pub fn tril<T: Copy>(t: &[T; 16], zero: T) -> [T; 16] {
    std::array::from_fn(|i| if i % 4 > i / 4 { zero } else { t[i] })
}

pub fn cumsum<T: Num>(t: &[T; 16]) -> [T; 16] {
    let mut out = *t;
    for i in 4..16 {
        out[i] = out[i - 4].add(t[i]);
    }
    out
}

/// `a @ b` (`transposed`: `a @ bᵀ`), summed in order of `k`.
pub fn contract<T: Num>(a: &[T; 16], b: &[T; 16], transposed: bool) -> [T; 16] {
    std::array::from_fn(|i| {
        let (m, n) = (i / 4, i % 4);
        (0..4).fold(T::zero(), |acc, k| {
            let bv = if transposed {
                b[n * 4 + k]
            } else {
                b[k * 4 + n]
            };
            acc.add(a[m * 4 + k].mul(bv))
        })
    })
}

pub fn map16<A: Copy, R>(t: [A; 16], f: impl Fn(A) -> R) -> [R; 16] {
    t.map(f)
}

pub fn maxv<T: PartialOrd + Copy>(a: T, b: T) -> T {
    if b > a { b } else { a }
}

pub fn minv<T: PartialOrd + Copy>(a: T, b: T) -> T {
    if b < a { b } else { a }
}

/// `f` folded over the whole `[4, 4]` tile (it has no NaN).
pub fn all<T: Copy>(t: &[T; 16], f: impl Fn(T, T) -> T) -> T {
    t[1..].iter().fold(t[0], |a, &x| f(a, x))
}

/// `f` folded over each row of the `[4, 4]` tile.
pub fn rows<T: Copy>(t: &[T; 16], f: impl Fn(T, T) -> T) -> [T; 4] {
    std::array::from_fn(|r| {
        t[r * 4 + 1..r * 4 + 4]
            .iter()
            .fold(t[r * 4], |a, &x| f(a, x))
    })
}
