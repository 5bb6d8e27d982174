//! Built-in functions and casts.

use super::KernelChecker;
use super::expr::{mk, scalar};
use super::types::{Typed, Weak, convert, promote};
use crate::diag::Diagnostic;
use crate::diag::suggest::{close_matches, did_you_mean};
use crate::front::ast;
use crate::ir::{Builtin, DType, Elem, ExprKind, Shape, ShapeExpr};
use crate::span::Span;

/// Every callable name in the source language.
pub const FUNCTION_NAMES: [&str; 40] = [
    "program_id",
    "num_programs",
    "cdiv",
    "arange",
    "load",
    "dot",
    "dot_t",
    "dequant",
    "qlevels",
    "qscales",
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "tanh",
    "sigmoid",
    "silu",
    "gelu",
    "sin",
    "cos",
    "abs",
    "floor",
    "round",
    "min",
    "max",
    "where",
    "rowsum",
    "rowmax",
    "rowmin",
    "sum",
    "transpose",
    "reshape",
    "cumsum",
    "tril",
    "atomic_add",
    "prefetch",
    // Casts other than the scalar type names, listed for suggestions.
    "f16",
    "bf16",
    "f32",
    "i32",
];

pub(super) fn is_function_name(name: &str) -> bool {
    FUNCTION_NAMES.contains(&name) || DType::from_name(name).is_some()
}

fn float_unary(name: &str) -> Option<Builtin> {
    Some(match name {
        "exp" => Builtin::Exp,
        "log" => Builtin::Log,
        "sqrt" => Builtin::Sqrt,
        "rsqrt" => Builtin::Rsqrt,
        "tanh" => Builtin::Tanh,
        "sigmoid" => Builtin::Sigmoid,
        "silu" => Builtin::Silu,
        "gelu" => Builtin::Gelu,
        "sin" => Builtin::Sin,
        "cos" => Builtin::Cos,
        "floor" => Builtin::Floor,
        "round" => Builtin::Round,
        _ => return None,
    })
}

impl KernelChecker {
    fn arity(
        &self,
        name: &str,
        args: &[ast::Expr],
        allowed: &[usize],
        span: Span,
        signature: &str,
    ) -> Result<(), Diagnostic> {
        if allowed.contains(&args.len()) {
            return Ok(());
        }
        Err(Diagnostic::error(
            span,
            format!(
                "`{name}` takes {} argument{}, got {}",
                allowed
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(" or "),
                if allowed == [1] { "" } else { "s" },
                args.len()
            ),
        )
        .with_note(format!("signature: {signature}")))
    }

    fn tile_arg(
        &self,
        name: &str,
        t: &Typed,
        min_rank: usize,
        exact: Option<usize>,
    ) -> Result<DType, Diagnostic> {
        let d = self.numeric(t, &format!("`{name}`"))?;
        let rank = t.shape().rank();
        let ok = match exact {
            Some(r) => rank == r,
            None => rank >= min_rank,
        };
        if !ok {
            let need = match exact {
                Some(r) => format!("a rank-{r} tile"),
                None => format!("a tile of rank {min_rank} or more"),
            };
            return Err(Diagnostic::error(
                t.span(),
                format!("`{name}` needs {need}, found shape {}", t.shape()),
            ));
        }
        Ok(d)
    }

    pub(super) fn call(
        &self,
        name: &str,
        name_span: Span,
        args: &[ast::Expr],
        span: Span,
    ) -> Result<Typed, Diagnostic> {
        if let Some(to) = DType::from_name(name) {
            self.arity(
                name,
                args,
                &[1],
                span,
                &format!("{name}(x) -> {name} of x's shape"),
            )?;
            let t = self.expr(&args[0])?;
            self.numeric(&t, &format!("cast `{name}`"))?;
            let mut e = convert(t, to);
            e.span = span;
            return Ok(Typed::strong(e));
        }
        if let Some(func) = float_unary(name) {
            self.arity(
                name,
                args,
                &[1],
                span,
                &format!("{name}(x) -> float of x's shape"),
            )?;
            let t = self.expr(&args[0])?;
            let d = self.numeric(&t, &format!("`{name}`"))?;
            if d == DType::Bool {
                return Err(Diagnostic::error(
                    t.span(),
                    format!("`{name}` needs a number, found bool"),
                ));
            }
            let to = if d.is_float() { d } else { DType::F32 };
            let weak = if t.weak == Weak::No {
                Weak::No
            } else {
                Weak::Float
            };
            let shape = t.shape().clone();
            let arg = convert(t, to);
            return Ok(Typed {
                expr: mk(
                    ExprKind::Call {
                        func,
                        args: vec![arg],
                    },
                    Elem::Scalar(to),
                    shape,
                    span,
                ),
                weak,
            });
        }
        match name {
            "program_id" | "num_programs" => {
                self.arity(
                    name,
                    args,
                    &[1],
                    span,
                    &format!("{name}(axis: 0, 1 or 2) -> i32"),
                )?;
                let axis = match args[0].kind {
                    ast::ExprKind::Int(a) if (0..=2).contains(&a) => a,
                    _ => {
                        return Err(Diagnostic::error(
                            args[0].span,
                            format!("`{name}` needs a literal axis 0, 1 or 2"),
                        ));
                    }
                };
                let func = if name == "program_id" {
                    Builtin::ProgramId
                } else {
                    Builtin::NumPrograms
                };
                let arg = scalar(ExprKind::Int(axis), DType::I32, args[0].span);
                Ok(Typed::strong(scalar(
                    ExprKind::Call {
                        func,
                        args: vec![arg],
                    },
                    DType::I32,
                    span,
                )))
            }
            "cdiv" => {
                self.arity(name, args, &[2], span, "cdiv(a: int, b: int) -> int")?;
                let (a, b) = (self.expr(&args[0])?, self.expr(&args[1])?);
                self.elementwise2(Builtin::Cdiv, a, b, span, true)
            }
            "min" | "max" if args.len() == 2 => {
                let (a, b) = (self.expr(&args[0])?, self.expr(&args[1])?);
                let func = if name == "min" {
                    Builtin::Min
                } else {
                    Builtin::Max
                };
                self.elementwise2(func, a, b, span, false)
            }
            "min" | "max" | "sum" => {
                let sig = format!(
                    "{name}(t) -> scalar (whole tile){}",
                    if name == "sum" {
                        ""
                    } else {
                        ", or elementwise {name}(a, b)"
                    }
                );
                self.arity(name, args, &[1], span, &sig)?;
                let t = self.expr(&args[0])?;
                let d = self.tile_arg(name, &t, 1, None)?;
                let (func, out) = match name {
                    "sum" => (Builtin::ReduceSum, d.sum_result()),
                    "max" => (Builtin::ReduceMax, d),
                    _ => (Builtin::ReduceMin, d),
                };
                let arg = convert(t, out);
                Ok(Typed::strong(scalar(
                    ExprKind::Call {
                        func,
                        args: vec![arg],
                    },
                    out,
                    span,
                )))
            }
            "rowsum" | "rowmax" | "rowmin" => {
                self.arity(
                    name,
                    args,
                    &[1],
                    span,
                    &format!("{name}(t [.., C]) -> [.., 1]"),
                )?;
                let t = self.expr(&args[0])?;
                let d = self.tile_arg(name, &t, 1, None)?;
                let (func, out) = match name {
                    "rowsum" => (Builtin::RowSum, d.sum_result()),
                    "rowmax" => (Builtin::RowMax, d),
                    _ => (Builtin::RowMin, d),
                };
                let mut dims = t.shape().0.clone();
                if let Some(last) = dims.last_mut() {
                    *last = ShapeExpr::Lit(1);
                }
                let arg = convert(t, out);
                Ok(Typed::strong(mk(
                    ExprKind::Call {
                        func,
                        args: vec![arg],
                    },
                    Elem::Scalar(out),
                    Shape(dims),
                    span,
                )))
            }
            "abs" => {
                self.arity(name, args, &[1], span, "abs(x) -> x's type")?;
                let t = self.expr(&args[0])?;
                let d = self.numeric(&t, "`abs`")?;
                if d == DType::Bool {
                    return Err(Diagnostic::error(
                        t.span(),
                        "`abs` needs a number, found bool",
                    ));
                }
                let (elem, shape, weak) = (t.expr.elem, t.shape().clone(), t.weak);
                Ok(Typed {
                    expr: mk(
                        ExprKind::Call {
                            func: Builtin::Abs,
                            args: vec![t.expr],
                        },
                        elem,
                        shape,
                        span,
                    ),
                    weak,
                })
            }
            "where" => {
                self.arity(
                    name,
                    args,
                    &[3],
                    span,
                    "where(cond: bool, a, b) -> broadcast of all three",
                )?;
                let c = self.expr(&args[0])?;
                let (a, b) = (self.expr(&args[1])?, self.expr(&args[2])?);
                if self.numeric(&c, "`where`")? != DType::Bool {
                    return Err(Diagnostic::error(
                        c.span(),
                        format!("`where` needs a bool condition, found {}", c.expr.elem),
                    )
                    .with_help("compare to get a bool: `x > 0`"));
                }
                let (ad, bd) = (self.numeric(&a, "`where`")?, self.numeric(&b, "`where`")?);
                let shapes = self.shapes();
                let ab = shapes
                    .broadcast(a.shape(), b.shape())
                    .ok_or_else(|| self.shape_mismatch(span, "`where`", a.shape(), b.shape()))?;
                let shape = shapes
                    .broadcast(c.shape(), &ab)
                    .ok_or_else(|| self.shape_mismatch(span, "`where`", c.shape(), &ab))?;
                let (common, weak) = promote(ad, a.weak, bd, b.weak);
                let args = vec![c.expr, convert(a, common), convert(b, common)];
                Ok(Typed {
                    expr: mk(
                        ExprKind::Call {
                            func: Builtin::Where,
                            args,
                        },
                        Elem::Scalar(common),
                        shape,
                        span,
                    ),
                    weak,
                })
            }
            "arange" => {
                self.arity(name, args, &[1], span, "arange(n: compile-time) -> i32 [n]")?;
                let n = self.const_extent(&args[0], "`arange` length")?;
                Ok(Typed::strong(mk(
                    ExprKind::Call {
                        func: Builtin::Arange,
                        args: vec![],
                    },
                    Elem::Scalar(DType::I32),
                    Shape(vec![n]),
                    span,
                )))
            }
            "dot" | "dot_t" => self.dot(name, args, span),
            "qlevels" | "qscales" => self.block_access(name, args, span),
            "dequant" => {
                self.arity(
                    name,
                    args,
                    &[1],
                    span,
                    "dequant(q: quantized tile) -> f32 of q's shape",
                )?;
                let t = self.expr(&args[0])?;
                if !matches!(t.expr.elem, Elem::Quant(_)) {
                    return Err(Diagnostic::error(
                        t.span(),
                        format!(
                            "`dequant` needs a tile sliced from a quantized tensor, found {}",
                            t.expr.elem
                        ),
                    ));
                }
                let shape = t.shape().clone();
                Ok(Typed::strong(mk(
                    ExprKind::Call {
                        func: Builtin::Dequant,
                        args: vec![t.expr],
                    },
                    Elem::Scalar(DType::F32),
                    shape,
                    span,
                )))
            }
            "transpose" => {
                self.arity(name, args, &[1], span, "transpose(t [A, B]) -> [B, A]")?;
                let t = self.expr(&args[0])?;
                let d = self.tile_arg(name, &t, 2, Some(2))?;
                let dims = &t.shape().0;
                let shape = Shape(vec![dims[1].clone(), dims[0].clone()]);
                Ok(Typed::strong(mk(
                    ExprKind::Call {
                        func: Builtin::Transpose,
                        args: vec![t.expr],
                    },
                    Elem::Scalar(d),
                    shape,
                    span,
                )))
            }
            "tril" => {
                self.arity(
                    name,
                    args,
                    &[1],
                    span,
                    "tril(t [R, C]) -> [R, C], zero above the diagonal",
                )?;
                let t = self.expr(&args[0])?;
                let d = self.tile_arg(name, &t, 2, Some(2))?;
                let shape = t.shape().clone();
                Ok(Typed::strong(mk(
                    ExprKind::Call {
                        func: Builtin::Tril,
                        args: vec![t.expr],
                    },
                    Elem::Scalar(d),
                    shape,
                    span,
                )))
            }
            "cumsum" => {
                self.arity(
                    name,
                    args,
                    &[1],
                    span,
                    "cumsum(t [R, ..]) -> same shape, prefix sums down dim 0",
                )?;
                let t = self.expr(&args[0])?;
                let d = self.tile_arg(name, &t, 1, None)?;
                let out = d.sum_result();
                let shape = t.shape().clone();
                let arg = convert(t, out);
                Ok(Typed::strong(mk(
                    ExprKind::Call {
                        func: Builtin::Cumsum,
                        args: vec![arg],
                    },
                    Elem::Scalar(out),
                    shape,
                    span,
                )))
            }
            "reshape" => {
                if args.len() < 2 {
                    return Err(Diagnostic::error(
                        span,
                        format!("`reshape` takes a tile and at least one dim, got {} argument(s)", args.len()),
                    )
                    .with_note("signature: reshape(t, d0, d1, ...) with compile-time dims and the same element count"));
                }
                let t = self.expr(&args[0])?;
                let d = self.tile_arg(name, &t, 1, None)?;
                let dims = args[1..]
                    .iter()
                    .map(|a| self.const_extent(a, "`reshape` dim"))
                    .collect::<Result<Vec<_>, _>>()?;
                let shape = Shape(dims);
                for c in &self.configs {
                    if t.shape().num_elements(c) != shape.num_elements(c) {
                        return Err(Diagnostic::error(
                            span,
                            format!(
                                "`reshape` from {} to {shape} changes the element count ({} vs {} for config {c})",
                                t.shape(),
                                t.shape().num_elements(c),
                                shape.num_elements(c)
                            ),
                        ));
                    }
                }
                Ok(Typed::strong(mk(
                    ExprKind::Call {
                        func: Builtin::Reshape,
                        args: vec![t.expr],
                    },
                    Elem::Scalar(d),
                    shape,
                    span,
                )))
            }
            "load" => {
                self.arity(
                    name,
                    args,
                    &[1, 2],
                    span,
                    "load(T[slices][, other]) -> tile, `other` filling out-of-bounds elements",
                )?;
                let ast::ExprKind::Index { base, subs } = &args[0].kind else {
                    return Err(Diagnostic::error(
                        args[0].span,
                        "`load` needs a tensor slice: `load(T[i :+ n], other)`",
                    ));
                };
                let ast::ExprKind::Name(tensor) = &base.kind else {
                    return Err(Diagnostic::error(
                        base.span,
                        "`load` needs a tensor parameter by name",
                    ));
                };
                if self.tensor(tensor).is_none() {
                    return Err(match self.lookup(tensor) {
                        Some(_) => Diagnostic::error(
                            base.span,
                            format!("`load` reads tensors; `{tensor}` is not a tensor parameter"),
                        ),
                        None => self.unknown_name(tensor, base.span, &[]),
                    });
                }
                self.load(tensor, base.span, subs, args.get(1), span)
            }
            "atomic_add" => Err(Diagnostic::error(
                span,
                "`atomic_add(T[...], v)` is a statement: it returns nothing",
            )),
            "prefetch" => Err(Diagnostic::error(
                span,
                "`prefetch(T[...])` is a statement: it returns nothing",
            )),
            _ => {
                let mut candidates: Vec<&str> = FUNCTION_NAMES.to_vec();
                candidates.extend(DType::ALL.iter().map(|d| d.name()));
                let d = Diagnostic::error(name_span, format!("unknown function `{name}`"));
                Err(match did_you_mean(&close_matches(name, candidates)) {
                    Some(h) => d.with_help(h),
                    None => d,
                })
            }
        }
    }

    fn elementwise2(
        &self,
        func: Builtin,
        a: Typed,
        b: Typed,
        span: Span,
        ints_only: bool,
    ) -> Result<Typed, Diagnostic> {
        let name = func.name();
        let (ad, bd) = (
            self.numeric(&a, &format!("`{name}`"))?,
            self.numeric(&b, &format!("`{name}`"))?,
        );
        let shape = self
            .shapes()
            .broadcast(a.shape(), b.shape())
            .ok_or_else(|| self.shape_mismatch(span, &format!("`{name}`"), a.shape(), b.shape()))?;
        let (common, weak) = promote(ad, a.weak, bd, b.weak);
        if ints_only && !common.is_int() {
            return Err(Diagnostic::error(
                span,
                format!("`{name}` needs integers, found {ad} and {bd}"),
            ));
        }
        // As for the arithmetic operators, a bool operand is refused even
        // next to a number (SPEC.md §10: numbers / integers).
        if ad == DType::Bool || bd == DType::Bool {
            let need = if ints_only { "integers" } else { "numbers" };
            return Err(Diagnostic::error(
                span,
                format!("`{name}` needs {need}, found {ad} and {bd}"),
            ));
        }
        let args = vec![convert(a, common), convert(b, common)];
        Ok(Typed {
            expr: mk(
                ExprKind::Call { func, args },
                Elem::Scalar(common),
                shape,
                span,
            ),
            weak,
        })
    }

    /// `qlevels(q)` / `qscales(q)` (SPEC.md §14, "Block access").
    fn block_access(
        &self,
        name: &str,
        args: &[ast::Expr],
        span: Span,
    ) -> Result<Typed, Diagnostic> {
        let (func, sig) = if name == "qlevels" {
            (
                Builtin::QLevels,
                "qlevels(q: quantized tile [.., C]) -> i8 [.., C]",
            )
        } else {
            (
                Builtin::QScales,
                "qscales(q: quantized tile [.., C]) -> f32 [.., C / block length]",
            )
        };
        self.arity(name, args, &[1], span, sig)?;
        let t = self.expr(&args[0])?;
        let Elem::Quant(q) = t.expr.elem else {
            return Err(Diagnostic::error(
                t.span(),
                format!(
                    "`{name}` needs a tile sliced from a quantized tensor, found {}",
                    t.expr.elem
                ),
            ));
        };
        let Some((elem, shape)) = crate::ir::block_access_result(func, q, t.shape()) else {
            return Err(Diagnostic::error(
                t.span(),
                format!("`{name}` does not take {q} tiles"),
            )
            .with_help("block access covers q4_0 q4_1 q5_0 q5_1 q8_0 iq4_nl; use `dequant` for the others"));
        };
        Ok(Typed::strong(mk(
            ExprKind::Call {
                func,
                args: vec![t.expr],
            },
            elem,
            shape,
            span,
        )))
    }

    fn dot(&self, name: &str, args: &[ast::Expr], span: Span) -> Result<Typed, Diagnostic> {
        let transposed = name == "dot_t";
        let sig = if transposed {
            "dot_t(a [M, K], b [N, K]) -> [M, N]"
        } else {
            "dot(a [M, K], b [K, N]) -> [M, N]"
        };
        self.arity(name, args, &[2], span, sig)?;
        let (a, b) = (self.expr(&args[0])?, self.expr(&args[1])?);
        for t in [&a, &b] {
            if t.shape().rank() != 2 {
                return Err(Diagnostic::error(
                    t.span(),
                    format!("`{name}` needs rank-2 tiles, found shape {}", t.shape()),
                )
                .with_note(format!("signature: {sig}")));
            }
        }
        let (ad, bd) = (&a.shape().0, &b.shape().0);
        let (ka, kb, n) = if transposed {
            (&ad[1], &bd[1], &bd[0])
        } else {
            (&ad[1], &bd[0], &bd[1])
        };
        if !self.shapes().same_dim(ka, kb) {
            let d = Diagnostic::error(
                span,
                format!(
                    "`{name}` contraction dims differ: {} x {} (inner dims `{ka}` and `{kb}`)",
                    a.shape(),
                    b.shape()
                ),
            )
            .with_note(format!("signature: {sig}"));
            return Err(d);
        }
        let shape = Shape(vec![ad[0].clone(), n.clone()]);
        let (aq, bq) = (
            matches!(a.expr.elem, Elem::Quant(_)),
            matches!(b.expr.elem, Elem::Quant(_)),
        );
        if aq && bq {
            return Err(Diagnostic::error(
                span,
                format!("`{name}` takes at most one quantized operand"),
            ));
        }
        if aq || bq {
            let (q, other) = if aq { (a, b) } else { (b, a) };
            let od = self.numeric(&other, &format!("`{name}`"))?;
            let od = if od.is_float() { od } else { DType::F32 };
            let other = convert(other, od);
            let args = if aq {
                vec![q.expr, other]
            } else {
                vec![other, q.expr]
            };
            let func = if transposed {
                Builtin::DotT
            } else {
                Builtin::Dot
            };
            return Ok(Typed::strong(mk(
                ExprKind::Call { func, args },
                Elem::Scalar(DType::F32),
                shape,
                span,
            )));
        }
        let (adt, bdt) = (self.numeric(&a, name)?, self.numeric(&b, name)?);
        let (common, _) = promote(adt, a.weak, bdt, b.weak);
        // `u8` x `i8` is the VNNI/dp4a dot: both widen to i32 (phobos-dtype).
        let strong = matches!(a.weak, Weak::No) && matches!(b.weak, Weak::No);
        let common = match adt.dot_mixed_sign(bdt) {
            Some(meet) if strong => meet,
            _ => common,
        };
        if adt == DType::Bool || bdt == DType::Bool {
            return Err(Diagnostic::error(
                span,
                format!("`{name}` needs numbers, found {adt} and {bdt}"),
            ));
        }
        // The rule is shared with the host tile library (`phobos-dtype`), so
        // the generated host code always has the type the checker gave.
        let Some(out) = common.dot_result() else {
            return Err(Diagnostic::error(
                span,
                format!("`{name}` needs numbers, found bool"),
            ));
        };
        let func = if transposed {
            Builtin::DotT
        } else {
            Builtin::Dot
        };
        let args = vec![convert(a, common), convert(b, common)];
        Ok(Typed::strong(mk(
            ExprKind::Call { func, args },
            Elem::Scalar(out),
            shape,
            span,
        )))
    }
}
