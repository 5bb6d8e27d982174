//! The tensors a program reads and writes: typed host views behind one
//! run-time enum, and the typed access the interpreter needs from a [`Val`].

use half::{bf16, f16};
use phobos_rt::host::{Slice, TensorRead, TensorWrite, Tile};
use phobos_rt::{DType, Element};

use super::InterpError;
use super::value::Val;
use crate::store::HostTensor;

/// Read-only or writable access to one typed tensor.
pub enum Access<'a, T: Element> {
    Read(TensorRead<'a, T>),
    Write(TensorWrite<'a, T>),
}

impl<T: Element> Access<'_, T> {
    pub fn load(&self, slices: &[Slice], other: T) -> phobos_rt::Result<Tile<T>> {
        match self {
            Access::Read(v) => phobos_rt::host::load(v, slices, other),
            Access::Write(v) => phobos_rt::host::load(v, slices, other),
        }
    }

    pub fn load_point(&self, index: &[i64], other: T) -> phobos_rt::Result<T> {
        match self {
            Access::Read(v) => phobos_rt::host::load_point(v, index, other),
            Access::Write(v) => phobos_rt::host::load_point(v, index, other),
        }
    }

    pub fn shape(&self) -> &[usize] {
        match self {
            Access::Read(v) => v.shape(),
            Access::Write(v) => v.shape(),
        }
    }
}

/// A tensor view of a run-time dtype.
pub enum TensorView<'a> {
    Bool(Access<'a, bool>),
    I8(Access<'a, i8>),
    U8(Access<'a, u8>),
    I16(Access<'a, i16>),
    U16(Access<'a, u16>),
    I32(Access<'a, i32>),
    U32(Access<'a, u32>),
    I64(Access<'a, i64>),
    F16(Access<'a, f16>),
    Bf16(Access<'a, bf16>),
    F32(Access<'a, f32>),
    F64(Access<'a, f64>),
}

macro_rules! view_ctor {
    ($value:expr, $writable:expr, [$($v:ident),*]) => {
        match $value {
            $( HostTensor::$v(t) => {
                if $writable {
                    TensorView::$v(Access::Write(TensorWrite::new(t)?))
                } else {
                    TensorView::$v(Access::Read(TensorRead::new(t)?))
                }
            } )*
        }
    };
}

impl<'a> TensorView<'a> {
    /// A view of `tensor`; writable views need the kernel to write it.
    pub fn new(tensor: &'a mut HostTensor, writable: bool) -> Result<Self, InterpError> {
        Ok(view_ctor!(
            tensor,
            writable,
            [Bool, I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64]
        ))
    }
}

/// `$body` with `$a: &Access<T>` bound for any dtype.
macro_rules! with_view {
    ($view:expr, |$a:ident| $body:expr) => {
        match $view {
            $crate::interp::views::TensorView::Bool($a) => $body,
            $crate::interp::views::TensorView::I8($a) => $body,
            $crate::interp::views::TensorView::U8($a) => $body,
            $crate::interp::views::TensorView::I16($a) => $body,
            $crate::interp::views::TensorView::U16($a) => $body,
            $crate::interp::views::TensorView::I32($a) => $body,
            $crate::interp::views::TensorView::U32($a) => $body,
            $crate::interp::views::TensorView::I64($a) => $body,
            $crate::interp::views::TensorView::F16($a) => $body,
            $crate::interp::views::TensorView::Bf16($a) => $body,
            $crate::interp::views::TensorView::F32($a) => $body,
            $crate::interp::views::TensorView::F64($a) => $body,
        }
    };
}
pub(crate) use with_view;

/// Typed access to a [`Val`]'s tile.
pub trait ValElement: Element {
    fn tile(v: &Val) -> Option<&Tile<Self>>;
    fn tile_mut(v: &mut Val) -> Option<&mut Tile<Self>>;
}

macro_rules! val_element {
    ($($t:ty => $v:ident),*) => {$(
        impl ValElement for $t {
            fn tile(v: &Val) -> Option<&Tile<$t>> {
                match v { Val::$v(t) => Some(t), _ => None }
            }
            fn tile_mut(v: &mut Val) -> Option<&mut Tile<$t>> {
                match v { Val::$v(t) => Some(t), _ => None }
            }
        }
    )*};
}
val_element!(bool => Bool, i8 => I8, u8 => U8, i16 => I16, u16 => U16, i32 => I32, u32 => U32,
    i64 => I64, f16 => F16, bf16 => Bf16, f32 => F32, f64 => F64);

/// The `T` tile inside `v`, or a type error naming `op`.
pub fn tile_of<'v, T: ValElement>(
    v: &'v Val,
    op: &'static str,
) -> Result<&'v Tile<T>, InterpError> {
    T::tile(v).ok_or_else(|| InterpError::Type {
        op,
        found: format!(
            "{} where {} was expected",
            v.dtype().name(),
            T::DTYPE.name()
        ),
    })
}

/// The scalar `T` inside `v`.
pub fn scalar_of<T: ValElement>(v: &Val, op: &'static str) -> Result<T, InterpError> {
    Ok(tile_of::<T>(v, op)?.item()?)
}

/// The dtype of a view.
pub fn view_dtype(view: &TensorView<'_>) -> DType {
    with_view!(view, |a| dtype_of(a))
}

fn dtype_of<T: Element>(_: &Access<'_, T>) -> DType {
    T::DTYPE
}
