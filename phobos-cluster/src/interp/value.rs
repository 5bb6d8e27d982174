//! Run-time typed values: a [`Val`] is a `Tile<T>` of one of the 12 element
//! types (rank 0 for scalars), and the macros that dispatch a generic
//! host-library call over the variants.

use half::{bf16, f16};
use phobos_rt::DType;
use phobos_rt::host::Tile;

/// A value of the interpreted program. Scalars are rank-0 tiles.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    Bool(Tile<bool>),
    I8(Tile<i8>),
    U8(Tile<u8>),
    I16(Tile<i16>),
    U16(Tile<u16>),
    I32(Tile<i32>),
    U32(Tile<u32>),
    I64(Tile<i64>),
    F16(Tile<f16>),
    Bf16(Tile<bf16>),
    F32(Tile<f32>),
    F64(Tile<f64>),
}

macro_rules! val_from {
    ($($t:ty => $v:ident),*) => {$(
        impl From<Tile<$t>> for Val {
            fn from(t: Tile<$t>) -> Val { Val::$v(t) }
        }
        impl From<$t> for Val {
            fn from(x: $t) -> Val { Val::$v(Tile::scalar(x)) }
        }
    )*};
}
val_from!(bool => Bool, i8 => I8, u8 => U8, i16 => I16, u16 => U16, i32 => I32, u32 => U32,
    i64 => I64, f16 => F16, bf16 => Bf16, f32 => F32, f64 => F64);

/// Dispatches one value over the listed variants:
/// `dispatch1!(v, [F32, F64], |t| expr, "op")` evaluates `Val::from(expr)`
/// with `t: &Tile<T>`; any other variant is a type error.
macro_rules! dispatch1 {
    ($a:expr, [$($v:ident),*], |$x:ident| $body:expr, $op:expr) => {
        match $a {
            $( $crate::interp::value::Val::$v($x) => $crate::interp::value::Val::from($body), )*
            #[allow(unreachable_patterns)]
            other => return Err($crate::interp::InterpError::Type {
                op: $op,
                found: format!("{}", other.dtype().name()),
            }),
        }
    };
}

/// Dispatches two values of one element type over the listed variants.
macro_rules! dispatch2 {
    ($a:expr, $b:expr, [$($v:ident),*], |$x:ident, $y:ident| $body:expr, $op:expr) => {
        match ($a, $b) {
            $( ($crate::interp::value::Val::$v($x), $crate::interp::value::Val::$v($y)) => {
                $crate::interp::value::Val::from($body)
            } )*
            #[allow(unreachable_patterns)]
            (a, b) => return Err($crate::interp::InterpError::Type {
                op: $op,
                found: format!("{} and {}", a.dtype().name(), b.dtype().name()),
            }),
        }
    };
}

pub(crate) use {dispatch1, dispatch2};

/// `$body` with `$x: &Tile<T>` for any variant, producing a non-`Val` result.
macro_rules! with_val {
    ($a:expr, |$x:ident| $body:expr) => {
        match $a {
            $crate::interp::value::Val::Bool($x) => $body,
            $crate::interp::value::Val::I8($x) => $body,
            $crate::interp::value::Val::U8($x) => $body,
            $crate::interp::value::Val::I16($x) => $body,
            $crate::interp::value::Val::U16($x) => $body,
            $crate::interp::value::Val::I32($x) => $body,
            $crate::interp::value::Val::U32($x) => $body,
            $crate::interp::value::Val::I64($x) => $body,
            $crate::interp::value::Val::F16($x) => $body,
            $crate::interp::value::Val::Bf16($x) => $body,
            $crate::interp::value::Val::F32($x) => $body,
            $crate::interp::value::Val::F64($x) => $body,
        }
    };
}
pub(crate) use with_val;

impl Val {
    pub fn dtype(&self) -> DType {
        match self {
            Val::Bool(_) => DType::Bool,
            Val::I8(_) => DType::I8,
            Val::U8(_) => DType::U8,
            Val::I16(_) => DType::I16,
            Val::U16(_) => DType::U16,
            Val::I32(_) => DType::I32,
            Val::U32(_) => DType::U32,
            Val::I64(_) => DType::I64,
            Val::F16(_) => DType::F16,
            Val::Bf16(_) => DType::Bf16,
            Val::F32(_) => DType::F32,
            Val::F64(_) => DType::F64,
        }
    }

    pub fn shape(&self) -> &[usize] {
        with_val!(self, |t| t.shape())
    }

    /// The value as an `i64` (integers and bools), for indices, loop
    /// bounds and grid extents.
    pub fn as_i64(&self) -> Option<i64> {
        Some(match self {
            Val::Bool(t) => i64::from(t.item().ok()?),
            Val::I8(t) => i64::from(t.item().ok()?),
            Val::U8(t) => i64::from(t.item().ok()?),
            Val::I16(t) => i64::from(t.item().ok()?),
            Val::U16(t) => i64::from(t.item().ok()?),
            Val::I32(t) => i64::from(t.item().ok()?),
            Val::U32(t) => i64::from(t.item().ok()?),
            Val::I64(t) => t.item().ok()?,
            _ => return None,
        })
    }

    /// The value of a `bool` scalar.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Val::Bool(t) => t.item().ok(),
            _ => None,
        }
    }

    /// A scalar of `dtype` from an `i64` (Rust `as` semantics, as the
    /// generated code's `(v as T)` literals; floats from `f64`).
    pub fn int_scalar(dtype: DType, v: i64) -> Val {
        match dtype {
            DType::Bool => Val::from(v != 0),
            DType::I8 => Val::from(v as i8),
            DType::U8 => Val::from(v as u8),
            DType::I16 => Val::from(v as i16),
            DType::U16 => Val::from(v as u16),
            DType::I32 => Val::from(v as i32),
            DType::U32 => Val::from(v as u32),
            DType::I64 => Val::from(v),
            _ => Val::float_scalar(dtype, v as f64),
        }
    }

    /// A scalar of `dtype` from an `f64` literal, rounded as the generated
    /// code rounds literals: `f32` directly from the f64, `f16`/`bf16`
    /// through the kernel cast, ints by truncation.
    pub fn float_scalar(dtype: DType, v: f64) -> Val {
        match dtype {
            DType::F64 => Val::from(v),
            DType::F32 => Val::from(v as f32),
            DType::F16 => Val::from(phobos_rt::cast::<f64, f16>(v)),
            DType::Bf16 => Val::from(phobos_rt::cast::<f64, bf16>(v)),
            _ => Val::int_scalar(dtype, v as i64),
        }
    }

    /// A zero scalar of `dtype`.
    pub fn zero(dtype: DType) -> Val {
        Val::int_scalar(dtype, 0)
    }
}
