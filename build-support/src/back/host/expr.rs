//! Expressions: rank-0 values become plain Rust scalars, everything else a
//! `Tile<T>` op of the host tile library. Every generated expression yields
//! an owned value; tile operands are passed by reference.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::names;
use super::{GenError, Generator};
use crate::ir::{BinOp, Builtin, DType, Elem, Expr, ExprKind, ShapeExpr, ShapeOp, Slice, UnOp};

/// `::phobos::__private`, the only path generated code names.
pub fn private() -> TokenStream {
    quote!(::phobos::__private)
}

fn host() -> TokenStream {
    quote!(::phobos::__private::host)
}

impl Generator<'_> {
    /// An owned value of the expression: a scalar for rank 0, else a tile.
    pub fn expr(&self, e: &Expr) -> Result<TokenStream, GenError> {
        if e.is_scalar() {
            self.scalar(e)
        } else {
            self.tile(e)
        }
    }

    /// A `&Tile<T>` for the expression; rank-0 values become rank-0 tiles so
    /// they broadcast through the tile ops.
    pub fn tile_ref(&self, e: &Expr) -> Result<TokenStream, GenError> {
        let p = private();
        if let Some(name) = self.in_place_local(e)? {
            return Ok(quote!(#name.tile()?));
        }
        match &e.kind {
            ExprKind::Local(id) if !e.is_scalar() => {
                let name = names::local(&self.local(*id, e)?.name);
                Ok(quote!(&#name))
            }
            _ if e.is_scalar() => {
                let value = self.scalar(e)?;
                Ok(quote!(&#p::host::Tile::scalar(#value)))
            }
            _ => {
                let value = self.tile(e)?;
                Ok(quote!(&(#value)))
            }
        }
    }

    /// The scalar dtype of a node, or an error for quantized values, which
    /// the host back end cannot compute on.
    pub fn dtype_of(&self, e: &Expr) -> Result<DType, GenError> {
        e.elem.scalar().ok_or_else(|| {
            GenError::new(
                e.span,
                format!(
                    "the host back end does not support quantized values ({}) yet",
                    e.elem
                ),
            )
        })
    }

    pub(super) fn scalar(&self, e: &Expr) -> Result<TokenStream, GenError> {
        let p = private();
        let target = e as *const Expr;
        if let Some((_, code)) = self.overrides.borrow().iter().find(|(at, _)| *at == target) {
            return Ok(code.clone());
        }
        let dtype = self.dtype_of(e)?;
        Ok(match &e.kind {
            ExprKind::Int(v) => int_literal(dtype, *v),
            ExprKind::Float(v) => float_literal(dtype, *v),
            ExprKind::Bool(v) => quote!(#v),
            ExprKind::Local(id) => {
                let name = names::local(&self.local(*id, e)?.name);
                quote!(#name)
            }
            ExprKind::Param(name) => {
                let name = names::param(name);
                quote!(#name)
            }
            ExprKind::Dim(name) => {
                let name = names::dim(name);
                quote!(#name)
            }
            ExprKind::Tune(name) => {
                let name = names::tune(name);
                quote!(#name)
            }
            ExprKind::Load {
                tensor,
                index,
                other,
            } => {
                let view = names::param(tensor);
                let points = index
                    .iter()
                    .map(|slice| match slice {
                        Slice::Point(i) => {
                            let i = self.scalar(i)?;
                            Ok(quote!((#i) as i64))
                        }
                        _ => Err(GenError::new(
                            e.span,
                            "a rank-0 load must index every dim by a point",
                        )),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let other = self.other(dtype, other.as_deref())?;
                quote!(#p::host::load_point(&#view, &[#(#points),*], #other)?)
            }
            ExprKind::Slice { base, index } => {
                let tile = self.tile_slice(base, index, e)?;
                quote!(#tile.item()?)
            }
            ExprKind::Unary { op, arg } => {
                let arg = self.scalar(arg)?;
                match op {
                    UnOp::Neg => quote!(#p::Num::neg(#arg)),
                    UnOp::Not => quote!(!(#arg)),
                    UnOp::BitNot => quote!(#p::host::Bits::bitnot(#arg)),
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let (a, b) = (self.scalar(lhs)?, self.scalar(rhs)?);
                scalar_binary(*op, a, b)
            }
            ExprKind::Cast(arg) => {
                let from = names::rust_type(self.dtype_of(arg)?);
                let to = names::rust_type(dtype);
                let arg = self.scalar(arg)?;
                quote!(#p::cast::<#from, #to>(#arg))
            }
            ExprKind::Broadcast(arg) => self.scalar(arg)?,
            ExprKind::Call { func, args } => self.scalar_call(*func, args, e)?,
        })
    }

    fn scalar_call(&self, func: Builtin, args: &[Expr], e: &Expr) -> Result<TokenStream, GenError> {
        let p = private();
        let arg = |i: usize| -> Result<TokenStream, GenError> {
            let a = args.get(i).ok_or_else(|| {
                GenError::new(
                    e.span,
                    format!("`{}` is missing argument {}", func.name(), i + 1),
                )
            })?;
            self.scalar(a)
        };
        Ok(match func {
            Builtin::ProgramId => {
                let axis = self.axis(args, e)?;
                quote!(__pid[#axis])
            }
            Builtin::NumPrograms => {
                let axis = self.axis(args, e)?;
                quote!(__num_programs[#axis])
            }
            Builtin::Cdiv => {
                let (a, b) = (arg(0)?, arg(1)?);
                quote!(#p::host::cdiv_scalar(#a, #b))
            }
            Builtin::Exp => float_unary(quote!(exp), arg(0)?),
            Builtin::Log => float_unary(quote!(log), arg(0)?),
            Builtin::Sqrt => float_unary(quote!(sqrt), arg(0)?),
            Builtin::Rsqrt => float_unary(quote!(rsqrt), arg(0)?),
            Builtin::Tanh => float_unary(quote!(tanh), arg(0)?),
            Builtin::Sigmoid => float_unary(quote!(sigmoid), arg(0)?),
            Builtin::Silu => float_unary(quote!(silu), arg(0)?),
            Builtin::Gelu => float_unary(quote!(gelu), arg(0)?),
            Builtin::Floor => float_unary(quote!(floor), arg(0)?),
            Builtin::Round => float_unary(quote!(round), arg(0)?),
            Builtin::Sin | Builtin::Cos => {
                let ty = names::rust_type(self.dtype_of(e)?);
                let f = if func == Builtin::Sin {
                    quote!(sin)
                } else {
                    quote!(cos)
                };
                let x = arg(0)?;
                // The tile library has no sin/cos: compute in f64, round once.
                quote!(#p::cast::<f64, #ty>(#p::cast::<#ty, f64>(#x).#f()))
            }
            Builtin::Abs => {
                let x = arg(0)?;
                quote!(#p::Num::abs(#x))
            }
            Builtin::Min => {
                let (a, b) = (arg(0)?, arg(1)?);
                quote!(#p::Element::minimum(#a, #b))
            }
            Builtin::Max => {
                let (a, b) = (arg(0)?, arg(1)?);
                quote!(#p::Element::maximum(#a, #b))
            }
            Builtin::Where => {
                let (c, a, b) = (arg(0)?, arg(1)?, arg(2)?);
                quote!(if #c { #a } else { #b })
            }
            Builtin::ReduceSum | Builtin::ReduceMax | Builtin::ReduceMin => {
                let arg = first(args, func, e)?;
                if func == Builtin::ReduceSum
                    && let Some(fused) = self.fused_sum(arg)?
                {
                    return Ok(fused);
                }
                let t = self.data_ref(arg)?;
                match func {
                    Builtin::ReduceSum => quote!(#p::host::sum(#t)),
                    Builtin::ReduceMax => quote!(#p::host::max(#t)),
                    _ => quote!(#p::host::min(#t)),
                }
            }
            // Tile-shaped built-ins that reached rank 0 through a [1]-shaped
            // result are computed as tiles and unwrapped.
            _ => {
                let tile = self.tile_call(func, args, e)?;
                quote!((#tile).item()?)
            }
        })
    }

    fn axis(&self, args: &[Expr], e: &Expr) -> Result<usize, GenError> {
        match args.first().map(|a| &a.kind) {
            Some(ExprKind::Int(axis @ 0..=2)) => Ok(*axis as usize),
            _ => Err(GenError::new(
                e.span,
                "the grid axis must be the literal 0, 1 or 2",
            )),
        }
    }

    fn other(&self, dtype: DType, other: Option<&Expr>) -> Result<TokenStream, GenError> {
        match other {
            Some(o) => self.scalar(o),
            None => {
                let ty = names::rust_type(dtype);
                let p = private();
                Ok(quote!(<#ty as #p::Element>::ZERO))
            }
        }
    }

    fn tile(&self, e: &Expr) -> Result<TokenStream, GenError> {
        if super::fuse::is_elementwise(e) {
            return self.fused_tile(e);
        }
        let p = private();
        if let Elem::Quant(_) = e.elem {
            return self.quant_tile(e);
        }
        let dtype = self.dtype_of(e)?;
        Ok(match &e.kind {
            ExprKind::Local(id) => match self.in_place_local(e)? {
                Some(name) => quote!(#name.tile()?.clone()),
                None => {
                    let name = names::local(&self.local(*id, e)?.name);
                    quote!(#name.clone())
                }
            },
            ExprKind::Load {
                tensor,
                index,
                other,
            } => {
                let view = names::param(tensor);
                let slices = self.slices(index)?;
                let other = self.other(dtype, other.as_deref())?;
                quote!(#p::host::load(&#view, &[#(#slices),*], #other)?)
            }
            ExprKind::Slice { base, index } => self.tile_slice(base, index, e)?,
            ExprKind::Unary { op, arg } => {
                let arg = self.tile_ref(arg)?;
                match op {
                    UnOp::Neg => quote!(#p::host::neg(#arg)),
                    UnOp::Not => quote!(#p::host::not(#arg)),
                    UnOp::BitNot => quote!(#p::host::bitnot(#arg)),
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let (a, b) = (self.tile_ref(lhs)?, self.tile_ref(rhs)?);
                let f = proc_macro2::Ident::new(op.name(), proc_macro2::Span::call_site());
                quote!(#p::host::#f(#a, #b)?)
            }
            ExprKind::Cast(arg) => {
                let from = names::rust_type(self.dtype_of(arg)?);
                let to = names::rust_type(dtype);
                let arg = self.tile_ref(arg)?;
                quote!(#p::host::cast::<#from, #to>(#arg))
            }
            ExprKind::Broadcast(arg) => {
                let shape = self.shape(&e.shape.0);
                if arg.is_scalar() {
                    let value = self.scalar(arg)?;
                    quote!(#p::host::full(&[#(#shape),*], #value)?)
                } else {
                    let arg = self.tile_ref(arg)?;
                    quote!(#p::host::broadcast_to(#arg, &[#(#shape),*])?)
                }
            }
            ExprKind::Call { func, args } => self.tile_call(*func, args, e)?,
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Bool(_)
            | ExprKind::Param(_)
            | ExprKind::Dim(_)
            | ExprKind::Tune(_) => {
                let value = self.scalar(&Expr {
                    shape: crate::ir::Shape::scalar(),
                    ..e.clone()
                })?;
                let shape = self.shape(&e.shape.0);
                quote!(#p::host::full(&[#(#shape),*], #value)?)
            }
        })
    }

    fn tile_call(&self, func: Builtin, args: &[Expr], e: &Expr) -> Result<TokenStream, GenError> {
        let p = private();
        let h = host();
        let arg_ref = |i: usize| -> Result<TokenStream, GenError> {
            let a = args.get(i).ok_or_else(|| {
                GenError::new(
                    e.span,
                    format!("`{}` is missing argument {}", func.name(), i + 1),
                )
            })?;
            self.tile_ref(a)
        };
        Ok(match func {
            Builtin::Arange => {
                let n = self.shape(&e.shape.0);
                let n = n.first().cloned().unwrap_or_else(|| quote!(1usize));
                quote!(#h::arange(#n)?)
            }
            Builtin::Dot | Builtin::DotT => {
                let (a, b) = (arg_ref(0)?, arg_ref(1)?);
                let quant = |i: usize| args.get(i).is_some_and(|a| a.elem.is_quant());
                let f = match (func == Builtin::DotT, quant(0), quant(1)) {
                    (false, false, false) => quote!(dot),
                    (true, false, false) => quote!(dot_t),
                    (false, true, _) => quote!(dot_quant_lhs),
                    (false, false, true) => quote!(dot_quant_rhs),
                    (true, true, _) => quote!(dot_t_quant_lhs),
                    (true, false, true) => quote!(dot_t_quant_rhs),
                };
                quote!(#h::#f(#a, #b)?)
            }
            Builtin::Dequant => {
                let a = arg_ref(0)?;
                quote!(#h::dequant(#a)?)
            }
            Builtin::QLevels | Builtin::QScales => self.block_access(func, arg_ref(0)?),
            Builtin::Exp => {
                let a = arg_ref(0)?;
                quote!(#h::exp(#a))
            }
            Builtin::Log => {
                let a = arg_ref(0)?;
                quote!(#h::log(#a))
            }
            Builtin::Sqrt => {
                let a = arg_ref(0)?;
                quote!(#h::sqrt(#a))
            }
            Builtin::Rsqrt => {
                let a = arg_ref(0)?;
                quote!(#h::rsqrt(#a))
            }
            Builtin::Tanh => {
                let a = arg_ref(0)?;
                quote!(#h::tanh(#a))
            }
            Builtin::Sigmoid => {
                let a = arg_ref(0)?;
                quote!(#h::sigmoid(#a))
            }
            Builtin::Silu => {
                let a = arg_ref(0)?;
                quote!(#h::silu(#a))
            }
            Builtin::Gelu => {
                let a = arg_ref(0)?;
                quote!(#h::gelu(#a))
            }
            Builtin::Floor => {
                let a = arg_ref(0)?;
                quote!(#h::floor(#a))
            }
            Builtin::Round => {
                let a = arg_ref(0)?;
                quote!(#h::round(#a))
            }
            Builtin::Abs => {
                let a = arg_ref(0)?;
                quote!(#h::abs(#a))
            }
            Builtin::Sin | Builtin::Cos => {
                let ty = names::rust_type(self.dtype_of(e)?);
                let f = if func == Builtin::Sin {
                    quote!(sin)
                } else {
                    quote!(cos)
                };
                let a = arg_ref(0)?;
                // The tile library has no sin/cos: compute in f64, round once.
                quote!({
                    let __t: &#h::Tile<#ty> = #a;
                    let __data = __t
                        .as_slice()
                        .iter()
                        .map(|&__x| #p::cast::<f64, #ty>(#p::cast::<#ty, f64>(__x).#f()))
                        .collect();
                    #h::Tile::from_vec(__t.shape(), __data)?
                })
            }
            Builtin::Min => {
                let (a, b) = (arg_ref(0)?, arg_ref(1)?);
                quote!(#h::minimum(#a, #b)?)
            }
            Builtin::Max => {
                let (a, b) = (arg_ref(0)?, arg_ref(1)?);
                quote!(#h::maximum(#a, #b)?)
            }
            Builtin::Where => {
                let (c, a, b) = (arg_ref(0)?, arg_ref(1)?, arg_ref(2)?);
                quote!(#h::select(#c, #a, #b)?)
            }
            // One tile in, one tile out: the host library names these
            // functions as the language does.
            Builtin::RowSum | Builtin::RowMax | Builtin::RowMin => {
                let a = self.data_ref(first(args, func, e)?)?;
                let f = proc_macro2::Ident::new(func.name(), proc_macro2::Span::call_site());
                quote!(#h::#f(#a)?)
            }
            Builtin::Transpose | Builtin::Cumsum | Builtin::Tril => {
                let a = arg_ref(0)?;
                let f = proc_macro2::Ident::new(func.name(), proc_macro2::Span::call_site());
                quote!(#h::#f(#a)?)
            }
            Builtin::Reshape => {
                let a = arg_ref(0)?;
                let shape = self.shape(&e.shape.0);
                quote!(#h::reshape(#a, &[#(#shape),*])?)
            }
            Builtin::ReduceSum | Builtin::ReduceMax | Builtin::ReduceMin => {
                let value = self.scalar_call(func, args, e)?;
                let shape = self.shape(&e.shape.0);
                quote!(#h::full(&[#(#shape),*], #value)?)
            }
            Builtin::Cdiv => {
                let (a, b) = (arg_ref(0)?, arg_ref(1)?);
                quote!(#h::cdiv(#a, #b)?)
            }
            Builtin::ProgramId | Builtin::NumPrograms => {
                return Err(GenError::new(
                    e.span,
                    format!("`{}` produces a scalar, not a tile", func.name()),
                ));
            }
        })
    }

    /// A quantized tile: a slice of a quantized tensor (its blocks) or a
    /// local holding one. Nothing else has a quantized type (IR invariant).
    fn quant_tile(&self, e: &Expr) -> Result<TokenStream, GenError> {
        let p = private();
        match &e.kind {
            ExprKind::Load { tensor, index, .. } => {
                let view = names::param(tensor);
                let slices = self.slices(index)?;
                Ok(quote!(#p::host::load_quant(&#view, &[#(#slices),*])?))
            }
            ExprKind::Local(id) => {
                let name = names::local(&self.local(*id, e)?.name);
                Ok(quote!(#name.clone()))
            }
            _ => Err(GenError::new(
                e.span,
                format!(
                    "internal: a quantized {} value that is neither a tensor slice nor a local",
                    e.elem
                ),
            )),
        }
    }

    /// `base[index]` on a local tile, masked like a tensor load: positions
    /// outside the base read as zero.
    fn tile_slice(&self, base: &Expr, index: &[Slice], e: &Expr) -> Result<TokenStream, GenError> {
        let h = host();
        let p = private();
        let ty = names::rust_type(self.dtype_of(e)?);
        let base = self.tile_ref(base)?;
        let slices = self.slices(index)?;
        self.uses_tile_slice.set(true);
        Ok(quote!({
            let __base: &#h::Tile<#ty> = #base;
            __slice_tile(__base, &[#(#slices),*], <#ty as #p::Element>::ZERO)?
        }))
    }

    pub fn slices(&self, index: &[Slice]) -> Result<Vec<TokenStream>, GenError> {
        let h = host();
        index
            .iter()
            .map(|slice| {
                Ok(match slice {
                    Slice::Point(i) => {
                        let i = self.scalar(i)?;
                        quote!(#h::Slice::Point((#i) as i64))
                    }
                    Slice::Span { start, len } => {
                        let start = self.scalar(start)?;
                        let len = self.shape_dim(len);
                        quote!(#h::Slice::Span { start: (#start) as i64, len: #len })
                    }
                    Slice::Full => quote!(#h::Slice::Full),
                })
            })
            .collect()
    }

    /// Extents of a shape as `usize` expressions over the tune parameters.
    pub fn shape(&self, dims: &[ShapeExpr]) -> Vec<TokenStream> {
        dims.iter().map(|d| self.shape_dim(d)).collect()
    }

    /// One extent. The config was checked against the tune space, where
    /// every shape is positive, so the arithmetic cannot fail; it still
    /// avoids panicking operators.
    pub fn shape_dim(&self, dim: &ShapeExpr) -> TokenStream {
        match dim {
            ShapeExpr::Lit(v) => {
                let v = Literal::usize_suffixed((*v).max(0) as usize);
                quote!(#v)
            }
            ShapeExpr::Tune(name) => {
                let name = names::tune(name);
                quote!((#name as usize))
            }
            ShapeExpr::Bin(op, a, b) => {
                let (a, b) = (self.shape_dim(a), self.shape_dim(b));
                match op {
                    ShapeOp::Add => quote!(#a.wrapping_add(#b)),
                    ShapeOp::Sub => quote!(#a.saturating_sub(#b)),
                    ShapeOp::Mul => quote!(#a.wrapping_mul(#b)),
                    ShapeOp::Div => quote!(#a.checked_div(#b).unwrap_or(0)),
                    ShapeOp::Rem => quote!(#a.checked_rem(#b).unwrap_or(0)),
                    ShapeOp::Cdiv => quote!(#a.checked_div(#b).map_or(0, |_| #a.div_ceil(#b))),
                    ShapeOp::Min => quote!(#a.min(#b)),
                    ShapeOp::Max => quote!(#a.max(#b)),
                }
            }
        }
    }
}

fn first<'a>(args: &'a [Expr], func: Builtin, e: &Expr) -> Result<&'a Expr, GenError> {
    args.first()
        .ok_or_else(|| GenError::new(e.span, format!("`{}` is missing its argument", func.name())))
}

fn float_unary(f: TokenStream, x: TokenStream) -> TokenStream {
    let p = private();
    quote!(#p::Float::#f(#x))
}

fn scalar_binary(op: BinOp, a: TokenStream, b: TokenStream) -> TokenStream {
    let p = private();
    match op {
        BinOp::Add => quote!(#p::Num::add(#a, #b)),
        BinOp::Sub => quote!(#p::Num::sub(#a, #b)),
        BinOp::Mul => quote!(#p::Num::mul(#a, #b)),
        BinOp::Div => quote!(#p::Num::div(#a, #b)),
        BinOp::Rem => quote!(#p::Num::rem(#a, #b)),
        BinOp::Shl => quote!(#p::Int::shl(#a, #b)),
        BinOp::Shr => quote!(#p::Int::shr(#a, #b)),
        BinOp::BitAnd => quote!(#p::host::Bits::bitand(#a, #b)),
        BinOp::BitOr => quote!(#p::host::Bits::bitor(#a, #b)),
        BinOp::BitXor => quote!(#p::host::Bits::bitxor(#a, #b)),
        BinOp::Eq => quote!((#a) == (#b)),
        BinOp::Ne => quote!((#a) != (#b)),
        BinOp::Lt => quote!((#a) < (#b)),
        BinOp::Le => quote!((#a) <= (#b)),
        BinOp::Gt => quote!((#a) > (#b)),
        BinOp::Ge => quote!((#a) >= (#b)),
        BinOp::And => quote!((#a) && (#b)),
        BinOp::Or => quote!((#a) || (#b)),
    }
}

/// A literal of an integer (or bool/float, for literals the checker typed
/// so) dtype.
fn int_literal(dtype: DType, v: i64) -> TokenStream {
    let lit = Literal::i64_suffixed(v);
    match dtype {
        DType::Bool => {
            let b = v != 0;
            quote!(#b)
        }
        DType::F16 | DType::Bf16 | DType::F32 | DType::F64 => float_literal(dtype, v as f64),
        _ => {
            let ty = names::rust_type(dtype);
            quote!((#lit as #ty))
        }
    }
}

fn float_literal(dtype: DType, v: f64) -> TokenStream {
    let p = private();
    let as_f64 = if v.is_finite() {
        let lit = Literal::f64_suffixed(v);
        quote!((#lit))
    } else if v.is_nan() {
        quote!(f64::NAN)
    } else if v > 0.0 {
        quote!(f64::INFINITY)
    } else {
        quote!(f64::NEG_INFINITY)
    };
    match dtype {
        DType::F64 => as_f64,
        DType::F32 if v.is_finite() => {
            let lit = Literal::f32_suffixed(v as f32);
            quote!((#lit))
        }
        DType::F32 => quote!((#as_f64 as f32)),
        DType::F16 | DType::Bf16 => {
            let ty = names::rust_type(dtype);
            quote!(#p::cast::<f64, #ty>(#as_f64))
        }
        _ => int_literal(dtype, v as i64),
    }
}
