//! Expressions, mirroring the host back end (build-support/src/back/host):
//! a rank-0 expression is computed with the element traits on plain values,
//! anything else with the host tile library op the generated code calls, so
//! both give the same bits.

use phobos_build::ir::{BinOp, Builtin, Expr, ExprKind, ShapeExpr, ShapeOp, Slice, UnOp};
use phobos_rt::host::{self, Tile};
use phobos_rt::{Bits, DType, Element, Float, Int, Num};

use super::value::{Val, dispatch1, dispatch2, with_val};
use super::views::{ValElement, scalar_of, tile_of, with_view};
use super::{Frame, InterpError, Program};

/// A float function of one scalar through its `Float` trait method.
macro_rules! float_scalar {
    ($a:expr, $m:ident) => {
        dispatch1!(
            $a,
            [F16, Bf16, F32, F64],
            |t| Float::$m(t.item()?),
            "a float function"
        )
    };
}

impl Program<'_> {
    /// The value of `e`: a rank-0 tile for scalars.
    pub(super) fn eval(&self, f: &Frame<'_>, e: &Expr) -> Result<Val, InterpError> {
        if e.is_scalar() {
            self.scalar(f, e)
        } else {
            self.tile(f, e)
        }
    }

    fn dtype_of(e: &Expr) -> Result<DType, InterpError> {
        e.elem.scalar().ok_or_else(|| InterpError::Unsupported {
            what: format!("quantized values ({})", e.elem),
        })
    }

    fn scalar(&self, f: &Frame<'_>, e: &Expr) -> Result<Val, InterpError> {
        let dtype = Self::dtype_of(e)?;
        Ok(match &e.kind {
            ExprKind::Int(v) => Val::int_scalar(dtype, *v),
            ExprKind::Float(v) => Val::float_scalar(dtype, *v),
            ExprKind::Bool(v) => Val::from(*v),
            ExprKind::Local(id) => f.local(*id)?.clone(),
            ExprKind::Param(name) => self.scalar_param(name)?.clone(),
            ExprKind::Dim(name) => Val::from(self.dim(name)?),
            ExprKind::Tune(name) => Val::from(self.tune(name)?),
            ExprKind::Load {
                tensor,
                index,
                other,
            } => {
                let points = index
                    .iter()
                    .map(|s| match s {
                        Slice::Point(i) => self.index(f, i),
                        _ => Err(InterpError::Unsupported {
                            what: "a rank-0 load with a span".into(),
                        }),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let points = self.shift_points(tensor, points);
                let other = self.other(f, dtype, other.as_deref())?;
                let view = self.view(tensor)?;
                with_view!(view, |a| Val::from(
                    a.load_point(&points, scalar_of(&other, "load")?)?
                ))
            }
            ExprKind::Slice { base, index } => item(self.tile_slice(f, base, index)?)?,
            ExprKind::Unary { op, arg } => {
                let a = self.scalar(f, arg)?;
                match op {
                    UnOp::Neg => dispatch1!(
                        &a,
                        [I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
                        |t| Num::neg(t.item()?),
                        "-"
                    ),
                    UnOp::Not => Val::from(!a.as_bool().ok_or(InterpError::Type {
                        op: "!",
                        found: a.dtype().name().into(),
                    })?),
                    UnOp::BitNot => dispatch1!(
                        &a,
                        [Bool, I8, U8, I16, U16, I32, U32, I64],
                        |t| Bits::bitnot(t.item()?),
                        "~"
                    ),
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let (a, b) = (self.scalar(f, lhs)?, self.scalar(f, rhs)?);
                scalar_binary(*op, &a, &b)?
            }
            ExprKind::Cast(arg) => {
                let a = self.scalar(f, arg)?;
                cast_val(&a, dtype)
            }
            ExprKind::Broadcast(arg) => self.scalar(f, arg)?,
            ExprKind::Call { func, args } => self.scalar_call(f, *func, args, e)?,
        })
    }

    fn arg(args: &[Expr], i: usize, func: Builtin) -> Result<&Expr, InterpError> {
        args.get(i).ok_or_else(|| InterpError::Unsupported {
            what: format!("`{}` without argument {}", func.name(), i + 1),
        })
    }

    fn scalar_call(
        &self,
        f: &Frame<'_>,
        func: Builtin,
        args: &[Expr],
        e: &Expr,
    ) -> Result<Val, InterpError> {
        let arg =
            |i: usize| -> Result<Val, InterpError> { self.scalar(f, Self::arg(args, i, func)?) };
        Ok(match func {
            Builtin::ProgramId => Val::from(f.pid[axis(args)?]),
            Builtin::NumPrograms => Val::from(self.num_programs[axis(args)?]),
            Builtin::Cdiv => {
                let (a, b) = (arg(0)?, arg(1)?);
                dispatch2!(
                    &a,
                    &b,
                    [I8, U8, I16, U16, I32, U32, I64],
                    |x, y| host::cdiv_scalar(x.item()?, y.item()?),
                    "cdiv"
                )
            }
            Builtin::Exp => float_scalar!(&arg(0)?, exp),
            Builtin::Log => float_scalar!(&arg(0)?, log),
            Builtin::Sqrt => float_scalar!(&arg(0)?, sqrt),
            Builtin::Rsqrt => float_scalar!(&arg(0)?, rsqrt),
            Builtin::Tanh => float_scalar!(&arg(0)?, tanh),
            Builtin::Sigmoid => float_scalar!(&arg(0)?, sigmoid),
            Builtin::Silu => float_scalar!(&arg(0)?, silu),
            Builtin::Gelu => float_scalar!(&arg(0)?, gelu),
            Builtin::Floor => float_scalar!(&arg(0)?, floor),
            Builtin::Round => float_scalar!(&arg(0)?, round),
            Builtin::Sin | Builtin::Cos => {
                let a = arg(0)?;
                let t = trig(&a, func == Builtin::Sin)?;
                item(t)?
            }
            Builtin::Abs => {
                let a = arg(0)?;
                dispatch1!(
                    &a,
                    [I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
                    |t| Num::abs(t.item()?),
                    "abs"
                )
            }
            Builtin::Min | Builtin::Max => {
                let (a, b) = (arg(0)?, arg(1)?);
                let max = func == Builtin::Max;
                dispatch2!(
                    &a,
                    &b,
                    [Bool, I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
                    |x, y| if max {
                        Element::maximum(x.item()?, y.item()?)
                    } else {
                        Element::minimum(x.item()?, y.item()?)
                    },
                    "min/max"
                )
            }
            Builtin::Where => {
                let c = arg(0)?.as_bool().ok_or(InterpError::Type {
                    op: "where",
                    found: "a non-bool condition".into(),
                })?;
                if c { arg(1)? } else { arg(2)? }
            }
            Builtin::ReduceSum | Builtin::ReduceMax | Builtin::ReduceMin => {
                let t = self.eval(f, Self::arg(args, 0, func)?)?;
                reduce_all(func, &t)?
            }
            _ => item(self.tile_call(f, func, args, e)?)?,
        })
    }

    fn other(&self, f: &Frame<'_>, dtype: DType, other: Option<&Expr>) -> Result<Val, InterpError> {
        match other {
            Some(o) => self.scalar(f, o),
            None => Ok(Val::zero(dtype)),
        }
    }

    fn tile(&self, f: &Frame<'_>, e: &Expr) -> Result<Val, InterpError> {
        let dtype = Self::dtype_of(e)?;
        Ok(match &e.kind {
            ExprKind::Local(id) => f.local(*id)?.clone(),
            ExprKind::Load {
                tensor,
                index,
                other,
            } => {
                let slices = self.tensor_slices(f, tensor, index)?;
                let other = self.other(f, dtype, other.as_deref())?;
                let view = self.view(tensor)?;
                with_view!(view, |a| Val::from(
                    a.load(&slices, scalar_of(&other, "load")?)?
                ))
            }
            ExprKind::Slice { base, index } => self.tile_slice(f, base, index)?,
            ExprKind::Unary { op, arg } => {
                let a = self.eval(f, arg)?;
                match op {
                    UnOp::Neg => dispatch1!(
                        &a,
                        [I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
                        |t| host::neg(t),
                        "-"
                    ),
                    UnOp::Not => Val::from(host::not(tile_of::<bool>(&a, "!")?)),
                    UnOp::BitNot => dispatch1!(
                        &a,
                        [Bool, I8, U8, I16, U16, I32, U32, I64],
                        |t| host::bitnot(t),
                        "~"
                    ),
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let (a, b) = (self.eval(f, lhs)?, self.eval(f, rhs)?);
                tile_binary(*op, &a, &b)?
            }
            ExprKind::Cast(arg) => cast_val(&self.eval(f, arg)?, dtype),
            ExprKind::Broadcast(arg) => {
                let shape = self.shape(&e.shape.0);
                let a = self.eval(f, arg)?;
                if arg.is_scalar() {
                    with_val!(&a, |t| Val::from(host::full(&shape, t.item()?)?))
                } else {
                    with_val!(&a, |t| Val::from(host::broadcast_to(t, &shape)?))
                }
            }
            ExprKind::Call { func, args } => self.tile_call(f, *func, args, e)?,
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Bool(_)
            | ExprKind::Param(_)
            | ExprKind::Dim(_)
            | ExprKind::Tune(_) => {
                let value = self.scalar(
                    f,
                    &Expr {
                        shape: phobos_build::ir::Shape::scalar(),
                        ..e.clone()
                    },
                )?;
                let shape = self.shape(&e.shape.0);
                with_val!(&value, |t| Val::from(host::full(&shape, t.item()?)?))
            }
        })
    }

    pub(super) fn tile_call(
        &self,
        f: &Frame<'_>,
        func: Builtin,
        args: &[Expr],
        e: &Expr,
    ) -> Result<Val, InterpError> {
        let arg =
            |i: usize| -> Result<Val, InterpError> { self.eval(f, Self::arg(args, i, func)?) };
        const FLOATS: &str = "a float function";
        Ok(match func {
            Builtin::Arange => {
                let n = self.shape(&e.shape.0).first().copied().unwrap_or(1);
                Val::from(host::arange(n)?)
            }
            Builtin::Dot | Builtin::DotT => {
                let (a, b) = (arg(0)?, arg(1)?);
                let t = func == Builtin::DotT;
                dispatch2!(
                    &a,
                    &b,
                    [I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
                    |x, y| if t {
                        host::dot_t(x, y)?
                    } else {
                        host::dot(x, y)?
                    },
                    "dot"
                )
            }
            Builtin::Exp => dispatch1!(&arg(0)?, [F16, Bf16, F32, F64], |t| host::exp(t), FLOATS),
            Builtin::Log => dispatch1!(&arg(0)?, [F16, Bf16, F32, F64], |t| host::log(t), FLOATS),
            Builtin::Sqrt => dispatch1!(&arg(0)?, [F16, Bf16, F32, F64], |t| host::sqrt(t), FLOATS),
            Builtin::Rsqrt => {
                dispatch1!(&arg(0)?, [F16, Bf16, F32, F64], |t| host::rsqrt(t), FLOATS)
            }
            Builtin::Tanh => dispatch1!(&arg(0)?, [F16, Bf16, F32, F64], |t| host::tanh(t), FLOATS),
            Builtin::Sigmoid => dispatch1!(
                &arg(0)?,
                [F16, Bf16, F32, F64],
                |t| host::sigmoid(t),
                FLOATS
            ),
            Builtin::Silu => dispatch1!(&arg(0)?, [F16, Bf16, F32, F64], |t| host::silu(t), FLOATS),
            Builtin::Gelu => dispatch1!(&arg(0)?, [F16, Bf16, F32, F64], |t| host::gelu(t), FLOATS),
            Builtin::Floor => {
                dispatch1!(&arg(0)?, [F16, Bf16, F32, F64], |t| host::floor(t), FLOATS)
            }
            Builtin::Round => {
                dispatch1!(&arg(0)?, [F16, Bf16, F32, F64], |t| host::round(t), FLOATS)
            }
            Builtin::Abs => dispatch1!(
                &arg(0)?,
                [I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
                |t| host::abs(t),
                "abs"
            ),
            Builtin::Sin | Builtin::Cos => trig(&arg(0)?, func == Builtin::Sin)?,
            Builtin::Min | Builtin::Max => {
                let (a, b) = (arg(0)?, arg(1)?);
                let max = func == Builtin::Max;
                dispatch2!(
                    &a,
                    &b,
                    [Bool, I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
                    |x, y| if max {
                        host::maximum(x, y)?
                    } else {
                        host::minimum(x, y)?
                    },
                    "min/max"
                )
            }
            Builtin::Where => {
                let (c, a, b) = (arg(0)?, arg(1)?, arg(2)?);
                let c = tile_of::<bool>(&c, "where")?;
                dispatch2!(
                    &a,
                    &b,
                    [Bool, I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
                    |x, y| host::select(c, x, y)?,
                    "where"
                )
            }
            Builtin::RowSum => dispatch1!(
                &arg(0)?,
                [I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
                |t| host::rowsum(t)?,
                "rowsum"
            ),
            Builtin::Cumsum => dispatch1!(
                &arg(0)?,
                [I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
                |t| host::cumsum(t)?,
                "cumsum"
            ),
            Builtin::RowMax => with_val!(&arg(0)?, |t| Val::from(host::rowmax(t)?)),
            Builtin::RowMin => with_val!(&arg(0)?, |t| Val::from(host::rowmin(t)?)),
            Builtin::Transpose => with_val!(&arg(0)?, |t| Val::from(host::transpose(t)?)),
            Builtin::Tril => with_val!(&arg(0)?, |t| Val::from(host::tril(t)?)),
            Builtin::Reshape => {
                let shape = self.shape(&e.shape.0);
                with_val!(&arg(0)?, |t| Val::from(host::reshape(t, &shape)?))
            }
            Builtin::ReduceSum | Builtin::ReduceMax | Builtin::ReduceMin => {
                let value = self.scalar_call(f, func, args, e)?;
                let shape = self.shape(&e.shape.0);
                with_val!(&value, |t| Val::from(host::full(&shape, t.item()?)?))
            }
            Builtin::Cdiv => {
                let (a, b) = (arg(0)?, arg(1)?);
                dispatch2!(
                    &a,
                    &b,
                    [I8, U8, I16, U16, I32, U32, I64],
                    |x, y| host::cdiv(x, y)?,
                    "cdiv"
                )
            }
            Builtin::ProgramId | Builtin::NumPrograms => {
                return Err(InterpError::Unsupported {
                    what: format!("`{}` as a tile", func.name()),
                });
            }
            Builtin::Dequant | Builtin::QLevels | Builtin::QScales => {
                return Err(InterpError::Unsupported {
                    what: format!("`{}` (quantized tensors)", func.name()),
                });
            }
        })
    }

    /// `base[index]` on a local tile; positions outside read as zero.
    fn tile_slice(&self, f: &Frame<'_>, base: &Expr, index: &[Slice]) -> Result<Val, InterpError> {
        let base = self.eval(f, base)?;
        let slices = self.slices(f, index)?;
        Ok(with_val!(&base, |t| Val::from(slice_tile(t, &slices)?)))
    }

    /// An index scalar as `i64` (the generated `(i) as i64`).
    pub(super) fn index(&self, f: &Frame<'_>, e: &Expr) -> Result<i64, InterpError> {
        let v = self.scalar(f, e)?;
        v.as_i64().ok_or(InterpError::Type {
            op: "index",
            found: v.dtype().name().into(),
        })
    }

    pub(super) fn slices(
        &self,
        f: &Frame<'_>,
        index: &[Slice],
    ) -> Result<Vec<host::Slice>, InterpError> {
        index
            .iter()
            .map(|s| {
                Ok(match s {
                    Slice::Point(i) => host::Slice::Point(self.index(f, i)?),
                    Slice::Span { start, len } => host::Slice::Span {
                        start: self.index(f, start)?,
                        len: self.shape_dim(len),
                    },
                    Slice::Full => host::Slice::Full,
                })
            })
            .collect()
    }

    /// Slices of a tensor, relative to the region the program holds of it.
    pub(super) fn tensor_slices(
        &self,
        f: &Frame<'_>,
        tensor: &str,
        index: &[Slice],
    ) -> Result<Vec<host::Slice>, InterpError> {
        let mut slices = self.slices(f, index)?;
        if let Some(origin) = self.origins.get(tensor) {
            for (s, &o) in slices.iter_mut().zip(origin) {
                match s {
                    host::Slice::Point(i) => *i = i.wrapping_sub(o),
                    host::Slice::Span { start, .. } => *start = start.wrapping_sub(o),
                    host::Slice::Full => {}
                }
            }
        }
        Ok(slices)
    }

    fn shift_points(&self, tensor: &str, mut points: Vec<i64>) -> Vec<i64> {
        if let Some(origin) = self.origins.get(tensor) {
            for (p, &o) in points.iter_mut().zip(origin) {
                *p = p.wrapping_sub(o);
            }
        }
        points
    }

    pub(super) fn shape(&self, dims: &[ShapeExpr]) -> Vec<usize> {
        dims.iter().map(|d| self.shape_dim(d)).collect()
    }

    /// One extent, with the generated code's non-panicking arithmetic.
    fn shape_dim(&self, dim: &ShapeExpr) -> usize {
        match dim {
            ShapeExpr::Lit(v) => (*v).max(0) as usize,
            ShapeExpr::Tune(name) => self.tune(name).unwrap_or(0) as usize,
            ShapeExpr::Bin(op, a, b) => {
                let (a, b) = (self.shape_dim(a), self.shape_dim(b));
                match op {
                    ShapeOp::Add => a.wrapping_add(b),
                    ShapeOp::Sub => a.saturating_sub(b),
                    ShapeOp::Mul => a.wrapping_mul(b),
                    ShapeOp::Div => a.checked_div(b).unwrap_or(0),
                    ShapeOp::Rem => a.checked_rem(b).unwrap_or(0),
                    ShapeOp::Cdiv => a.checked_div(b).map_or(0, |_| a.div_ceil(b)),
                    ShapeOp::Min => a.min(b),
                    ShapeOp::Max => a.max(b),
                }
            }
        }
    }
}

fn axis(args: &[Expr]) -> Result<usize, InterpError> {
    match args.first().map(|a| &a.kind) {
        Some(ExprKind::Int(axis @ 0..=2)) => Ok(*axis as usize),
        _ => Err(InterpError::Unsupported {
            what: "a grid axis other than the literal 0, 1 or 2".into(),
        }),
    }
}

/// The only element of a one-element tile, as a rank-0 value.
fn item(v: Val) -> Result<Val, InterpError> {
    Ok(with_val!(&v, |t| Val::from(t.item()?)))
}

fn trig(a: &Val, sin: bool) -> Result<Val, InterpError> {
    fn apply<T: Element + phobos_rt::CastTo<f64>>(
        t: &Tile<T>,
        sin: bool,
    ) -> Result<Tile<T>, InterpError>
    where
        f64: phobos_rt::CastTo<T>,
    {
        let data = t
            .as_slice()
            .iter()
            .map(|&x| {
                let x = phobos_rt::cast::<T, f64>(x);
                phobos_rt::cast::<f64, T>(if sin { x.sin() } else { x.cos() })
            })
            .collect();
        Ok(Tile::from_vec(t.shape(), data)?)
    }
    Ok(dispatch1!(
        a,
        [F16, Bf16, F32, F64],
        |t| apply(t, sin)?,
        "sin/cos"
    ))
}

fn reduce_all(func: Builtin, t: &Val) -> Result<Val, InterpError> {
    Ok(match func {
        Builtin::ReduceSum => dispatch1!(
            t,
            [I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
            |x| host::sum(x),
            "sum"
        ),
        Builtin::ReduceMax => with_val!(t, |x| Val::from(host::max(x))),
        _ => with_val!(t, |x| Val::from(host::min(x))),
    })
}

fn scalar_binary(op: BinOp, a: &Val, b: &Val) -> Result<Val, InterpError> {
    const NUMS: &str = "arithmetic";
    Ok(match op {
        BinOp::Add => dispatch2!(
            a,
            b,
            [I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
            |x, y| Num::add(x.item()?, y.item()?),
            NUMS
        ),
        BinOp::Sub => dispatch2!(
            a,
            b,
            [I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
            |x, y| Num::sub(x.item()?, y.item()?),
            NUMS
        ),
        BinOp::Mul => dispatch2!(
            a,
            b,
            [I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
            |x, y| Num::mul(x.item()?, y.item()?),
            NUMS
        ),
        BinOp::Div => dispatch2!(
            a,
            b,
            [I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
            |x, y| Num::div(x.item()?, y.item()?),
            NUMS
        ),
        BinOp::Rem => dispatch2!(
            a,
            b,
            [I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
            |x, y| Num::rem(x.item()?, y.item()?),
            NUMS
        ),
        BinOp::Shl => dispatch2!(
            a,
            b,
            [I8, U8, I16, U16, I32, U32, I64],
            |x, y| Int::shl(x.item()?, y.item()?),
            "<<"
        ),
        BinOp::Shr => dispatch2!(
            a,
            b,
            [I8, U8, I16, U16, I32, U32, I64],
            |x, y| Int::shr(x.item()?, y.item()?),
            ">>"
        ),
        BinOp::BitAnd => dispatch2!(
            a,
            b,
            [Bool, I8, U8, I16, U16, I32, U32, I64],
            |x, y| Bits::bitand(x.item()?, y.item()?),
            "&"
        ),
        BinOp::BitOr => dispatch2!(
            a,
            b,
            [Bool, I8, U8, I16, U16, I32, U32, I64],
            |x, y| Bits::bitor(x.item()?, y.item()?),
            "|"
        ),
        BinOp::BitXor => dispatch2!(
            a,
            b,
            [Bool, I8, U8, I16, U16, I32, U32, I64],
            |x, y| Bits::bitxor(x.item()?, y.item()?),
            "^"
        ),
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => cmp(op, a, b)?,
        BinOp::And | BinOp::Or => {
            let (x, y) = (
                a.as_bool().ok_or(InterpError::Type {
                    op: "&&/||",
                    found: a.dtype().name().into(),
                })?,
                b.as_bool().ok_or(InterpError::Type {
                    op: "&&/||",
                    found: b.dtype().name().into(),
                })?,
            );
            Val::from(if op == BinOp::And { x && y } else { x || y })
        }
    })
}

/// A scalar comparison with Rust's operators (false for NaN but `!=`).
fn cmp(op: BinOp, a: &Val, b: &Val) -> Result<Val, InterpError> {
    fn go<T: Element>(op: BinOp, x: &Tile<T>, y: &Tile<T>) -> Result<bool, InterpError> {
        let (x, y) = (x.item()?, y.item()?);
        Ok(match op {
            BinOp::Eq => x == y,
            BinOp::Ne => x != y,
            BinOp::Lt => x < y,
            BinOp::Le => x <= y,
            BinOp::Gt => x > y,
            _ => x >= y,
        })
    }
    Ok(dispatch2!(
        a,
        b,
        [Bool, I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
        |x, y| go(op, x, y)?,
        "comparison"
    ))
}

fn tile_binary(op: BinOp, a: &Val, b: &Val) -> Result<Val, InterpError> {
    const NUMS: &str = "arithmetic";
    const ALL: &str = "comparison";
    Ok(match op {
        BinOp::Add => dispatch2!(
            a,
            b,
            [I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
            |x, y| host::add(x, y)?,
            NUMS
        ),
        BinOp::Sub => dispatch2!(
            a,
            b,
            [I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
            |x, y| host::sub(x, y)?,
            NUMS
        ),
        BinOp::Mul => dispatch2!(
            a,
            b,
            [I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
            |x, y| host::mul(x, y)?,
            NUMS
        ),
        BinOp::Div => dispatch2!(
            a,
            b,
            [I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
            |x, y| host::div(x, y)?,
            NUMS
        ),
        BinOp::Rem => dispatch2!(
            a,
            b,
            [I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
            |x, y| host::rem(x, y)?,
            NUMS
        ),
        BinOp::Shl => dispatch2!(
            a,
            b,
            [I8, U8, I16, U16, I32, U32, I64],
            |x, y| host::shl(x, y)?,
            "<<"
        ),
        BinOp::Shr => dispatch2!(
            a,
            b,
            [I8, U8, I16, U16, I32, U32, I64],
            |x, y| host::shr(x, y)?,
            ">>"
        ),
        BinOp::BitAnd => dispatch2!(
            a,
            b,
            [Bool, I8, U8, I16, U16, I32, U32, I64],
            |x, y| host::bitand(x, y)?,
            "&"
        ),
        BinOp::BitOr => dispatch2!(
            a,
            b,
            [Bool, I8, U8, I16, U16, I32, U32, I64],
            |x, y| host::bitor(x, y)?,
            "|"
        ),
        BinOp::BitXor => dispatch2!(
            a,
            b,
            [Bool, I8, U8, I16, U16, I32, U32, I64],
            |x, y| host::bitxor(x, y)?,
            "^"
        ),
        BinOp::Eq => dispatch2!(
            a,
            b,
            [Bool, I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
            |x, y| host::eq(x, y)?,
            ALL
        ),
        BinOp::Ne => dispatch2!(
            a,
            b,
            [Bool, I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
            |x, y| host::ne(x, y)?,
            ALL
        ),
        BinOp::Lt => dispatch2!(
            a,
            b,
            [Bool, I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
            |x, y| host::lt(x, y)?,
            ALL
        ),
        BinOp::Le => dispatch2!(
            a,
            b,
            [Bool, I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
            |x, y| host::le(x, y)?,
            ALL
        ),
        BinOp::Gt => dispatch2!(
            a,
            b,
            [Bool, I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
            |x, y| host::gt(x, y)?,
            ALL
        ),
        BinOp::Ge => dispatch2!(
            a,
            b,
            [Bool, I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64],
            |x, y| host::ge(x, y)?,
            ALL
        ),
        BinOp::And => Val::from(host::and(
            tile_of::<bool>(a, "&&")?,
            tile_of::<bool>(b, "&&")?,
        )?),
        BinOp::Or => Val::from(host::or(
            tile_of::<bool>(a, "||")?,
            tile_of::<bool>(b, "||")?,
        )?),
    })
}

/// Converts a value of any dtype to `to` with the kernel cast rules.
pub(super) fn cast_val(a: &Val, to: DType) -> Val {
    fn go<T>(t: &Tile<T>, to: DType) -> Val
    where
        T: Element
            + phobos_rt::CastTo<bool>
            + phobos_rt::CastTo<i8>
            + phobos_rt::CastTo<u8>
            + phobos_rt::CastTo<i16>
            + phobos_rt::CastTo<u16>
            + phobos_rt::CastTo<i32>
            + phobos_rt::CastTo<u32>
            + phobos_rt::CastTo<i64>
            + phobos_rt::CastTo<half::f16>
            + phobos_rt::CastTo<half::bf16>
            + phobos_rt::CastTo<f32>
            + phobos_rt::CastTo<f64>,
    {
        crate::with_dtype!(to, U => Val::from(host::cast::<T, U>(t)))
    }
    with_val!(a, |t| go(t, to))
}

/// `base[slices]` with positions outside the base reading as zero (the
/// generated `__slice_tile` helper).
fn slice_tile<T: ValElement>(
    base: &Tile<T>,
    slices: &[host::Slice],
) -> Result<Tile<T>, InterpError> {
    let base_shape = base.shape();
    if slices.len() != base_shape.len() {
        return Err(phobos_rt::Error::SliceRank {
            tensor_rank: base_shape.len(),
            slices: slices.len(),
        }
        .into());
    }
    let mut out_shape = Vec::new();
    for (slice, &extent) in slices.iter().zip(base_shape) {
        match slice {
            host::Slice::Point(_) => {}
            host::Slice::Span { len, .. } => out_shape.push(*len),
            host::Slice::Full => out_shape.push(extent),
        }
    }
    let total: usize = out_shape.iter().product();
    let mut data = Vec::with_capacity(total);
    let mut out_index = vec![0usize; out_shape.len()];
    let mut base_index = vec![0usize; base_shape.len()];
    for _ in 0..total {
        let mut next_out_dim = 0;
        let mut inside = true;
        for (dim, slice) in slices.iter().enumerate() {
            let position: i64 = match slice {
                host::Slice::Point(i) => *i,
                host::Slice::Span { start, .. } => {
                    next_out_dim += 1;
                    start.wrapping_add(out_index[next_out_dim - 1] as i64)
                }
                host::Slice::Full => {
                    next_out_dim += 1;
                    out_index[next_out_dim - 1] as i64
                }
            };
            if position < 0 || position as u64 >= base_shape[dim] as u64 {
                inside = false;
                break;
            }
            base_index[dim] = position as usize;
        }
        data.push(if inside {
            base.get(&base_index).unwrap_or(T::ZERO)
        } else {
            T::ZERO
        });
        for dim in (0..out_index.len()).rev() {
            out_index[dim] += 1;
            if out_index[dim] < out_shape[dim] {
                break;
            }
            out_index[dim] = 0;
        }
    }
    Ok(Tile::from_vec(&out_shape, data)?)
}
