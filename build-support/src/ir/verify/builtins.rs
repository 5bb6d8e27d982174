//! Verification of built-in calls (invariant 17 of the module doc).

use super::{VResult, Verifier, fail};
use crate::ir::{Builtin, DType, Elem, Expr, ExprKind, Shape, ShapeExpr};

impl Verifier<'_> {
    pub(super) fn call(&self, func: Builtin, args: &[Expr], e: &Expr) -> VResult {
        let span = e.span;
        let bad = |why: &str| fail(span, format!("{}: {why}", func.name()));
        let arity = |n: usize| -> VResult {
            if args.len() == n {
                Ok(())
            } else {
                fail(
                    span,
                    format!("{} takes {n} args, has {}", func.name(), args.len()),
                )
            }
        };
        if !matches!(
            func,
            Builtin::Dot | Builtin::DotT | Builtin::Dequant | Builtin::QLevels | Builtin::QScales
        ) {
            for a in args {
                self.no_quant(a)?;
            }
        }
        let out = e.elem;
        match func {
            Builtin::ProgramId | Builtin::NumPrograms => {
                arity(1)?;
                let ok = matches!(args[0].kind, ExprKind::Int(0..=2))
                    && out == Elem::Scalar(DType::I32)
                    && e.shape.is_scalar();
                if !ok {
                    return bad("needs a literal axis 0..=2 and gives an i32 scalar");
                }
            }
            Builtin::Arange => {
                arity(0)?;
                if out != Elem::Scalar(DType::I32) || e.shape.rank() != 1 {
                    return bad("gives an i32 rank-1 tile");
                }
            }
            Builtin::Cdiv | Builtin::Min | Builtin::Max => {
                arity(2)?;
                let same = args[0].elem == args[1].elem && args[0].elem == out;
                let ints = func != Builtin::Cdiv || e.dtype().is_int();
                if !same
                    || !ints
                    || e.dtype() == DType::Bool
                    || !self.broadcast_ok(&args[0].shape, &args[1].shape, &e.shape)
                {
                    return bad("operands and result share one numeric elem and broadcast");
                }
            }
            Builtin::Where => {
                arity(3)?;
                let ab = args[1].elem == args[2].elem && args[1].elem == out;
                let rank = args.iter().map(|a| a.shape.rank()).max().unwrap_or(0);
                let shapes_ok = rank == e.shape.rank()
                    && args
                        .iter()
                        .all(|a| self.broadcast_ok(&a.shape, &e.shape, &e.shape));
                if args[0].elem != Elem::Scalar(DType::Bool) || !ab || !shapes_ok {
                    return bad(
                        "takes a bool condition and two operands of the result elem, all broadcasting to the result",
                    );
                }
            }
            Builtin::Dot | Builtin::DotT => {
                arity(2)?;
                let (a, b) = (&args[0], &args[1]);
                if a.shape.rank() != 2 || b.shape.rank() != 2 || e.shape.rank() != 2 {
                    return bad("takes and gives rank-2 tiles");
                }
                let (ka, kb, n) = if func == Builtin::Dot {
                    (&a.shape.0[1], &b.shape.0[0], &b.shape.0[1])
                } else {
                    (&a.shape.0[1], &b.shape.0[1], &b.shape.0[0])
                };
                let dims_ok = self.same_shape(&Shape(vec![ka.clone()]), &Shape(vec![kb.clone()]))
                    && self.same_shape(&e.shape, &Shape(vec![a.shape.0[0].clone(), n.clone()]));
                if !dims_ok {
                    return bad("contraction dims disagree");
                }
                let quant = matches!(a.elem, Elem::Quant(_)) || matches!(b.elem, Elem::Quant(_));
                let ok = if quant {
                    out == Elem::Scalar(DType::F32)
                } else {
                    let acc = a.dtype().dot_result();
                    a.elem == b.elem && acc.is_some_and(|acc| out == Elem::Scalar(acc))
                };
                if !ok {
                    return bad("operand/accumulator dtypes do not follow the rules");
                }
            }
            Builtin::Dequant => {
                arity(1)?;
                if !matches!(args[0].elem, Elem::Quant(_))
                    || out != Elem::Scalar(DType::F32)
                    || e.shape != args[0].shape
                {
                    return bad("takes a quantized tile and gives f32 of its shape");
                }
            }
            Builtin::QLevels | Builtin::QScales => {
                arity(1)?;
                let expected = match args[0].elem {
                    Elem::Quant(q) => crate::ir::block_access_result(func, q, &args[0].shape),
                    Elem::Scalar(_) => None,
                };
                let ok = expected
                    .is_some_and(|(elem, shape)| out == elem && self.same_shape(&e.shape, &shape));
                if !ok {
                    return bad(
                        "takes a q4_0/q4_1/q5_0/q5_1/q8_0/iq4_nl tile; gives its levels (i8, same shape) or block scales (f32, last dim / block length)",
                    );
                }
            }
            Builtin::Abs => {
                arity(1)?;
                if args[0].elem != out || e.shape != args[0].shape || e.dtype() == DType::Bool {
                    return bad("keeps its operand's numeric type and shape");
                }
            }
            f if f.is_float_unary() => {
                arity(1)?;
                if args[0].elem != out || e.shape != args[0].shape || !e.dtype().is_float() {
                    return bad("takes and gives a float of one shape");
                }
            }
            Builtin::RowSum | Builtin::RowMax | Builtin::RowMin => {
                arity(1)?;
                let a = &args[0];
                let mut dims = a.shape.0.clone();
                if let Some(l) = dims.last_mut() {
                    *l = ShapeExpr::Lit(1);
                }
                if a.shape.rank() == 0 || a.elem != out || !self.same_shape(&e.shape, &Shape(dims))
                {
                    return bad("reduces the last dim of a tile to 1, same elem");
                }
            }
            Builtin::ReduceSum | Builtin::ReduceMax | Builtin::ReduceMin => {
                arity(1)?;
                if args[0].shape.rank() == 0 || args[0].elem != out || !e.shape.is_scalar() {
                    return bad("reduces a tile to a scalar of its elem");
                }
            }
            Builtin::Transpose => {
                arity(1)?;
                let a = &args[0].shape;
                let ok = a.rank() == 2
                    && args[0].elem == out
                    && self.same_shape(&e.shape, &Shape(vec![a.0[1].clone(), a.0[0].clone()]));
                if !ok {
                    return bad("swaps the dims of a rank-2 tile");
                }
            }
            Builtin::Reshape => {
                arity(1)?;
                let same_count = self
                    .configs
                    .iter()
                    .all(|c| args[0].shape.num_elements(c) == e.shape.num_elements(c));
                if args[0].elem != out || !same_count || args[0].shape.rank() == 0 {
                    return bad("keeps the elem and element count");
                }
            }
            Builtin::Cumsum | Builtin::Tril => {
                arity(1)?;
                let rank_ok = if func == Builtin::Tril {
                    args[0].shape.rank() == 2
                } else {
                    args[0].shape.rank() >= 1
                };
                if !rank_ok || args[0].elem != out || !self.same_shape(&e.shape, &args[0].shape) {
                    return bad("keeps its operand's elem and shape");
                }
            }
            _ => return bad("unhandled built-in"),
        }
        Ok(())
    }
}
