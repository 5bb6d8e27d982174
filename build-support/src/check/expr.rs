//! Expressions: names, literals, operators, indexing.

use super::types::{Typed, Weak, convert, promote};
use super::{Binding, KernelChecker};
use crate::diag::Diagnostic;
use crate::front::ast;
use crate::ir::{BinOp, DType, Elem, Expr, ExprKind, Shape, UnOp};
use crate::span::Span;

pub(super) fn mk(kind: ExprKind, elem: Elem, shape: Shape, span: Span) -> Expr {
    Expr {
        kind,
        elem,
        shape,
        span,
    }
}

pub(super) fn scalar(kind: ExprKind, dtype: DType, span: Span) -> Expr {
    mk(kind, Elem::Scalar(dtype), Shape::scalar(), span)
}

impl KernelChecker {
    /// The scalar dtype of a checked value, rejecting quantized tiles
    /// outside `dot`, `dot_t` and `dequant`.
    pub(super) fn numeric(&self, t: &Typed, what: &str) -> Result<DType, Diagnostic> {
        match t.expr.elem {
            Elem::Scalar(d) => Ok(d),
            Elem::Quant(q) => Err(Diagnostic::error(
                t.span(),
                format!("{what} cannot take a quantized {q} tile directly"),
            )
            .with_help("use `dot`/`dot_t` on it, or `dequant(t)` to get an f32 tile")),
        }
    }

    pub(super) fn expr(&self, e: &ast::Expr) -> Result<Typed, Diagnostic> {
        let span = e.span;
        match &e.kind {
            ast::ExprKind::Int(v) => Ok(match i32::try_from(*v) {
                Ok(_) => Typed {
                    expr: scalar(ExprKind::Int(*v), DType::I32, span),
                    weak: Weak::Int,
                },
                Err(_) => Typed::strong(scalar(ExprKind::Int(*v), DType::I64, span)),
            }),
            ast::ExprKind::Float(v) => Ok(Typed {
                expr: scalar(ExprKind::Float(*v), DType::F32, span),
                weak: Weak::Float,
            }),
            ast::ExprKind::Bool(b) => {
                Ok(Typed::strong(scalar(ExprKind::Bool(*b), DType::Bool, span)))
            }
            ast::ExprKind::Paren(inner) => {
                let mut t = self.expr(inner)?;
                t.expr.span = span;
                Ok(t)
            }
            ast::ExprKind::Name(n) => self.name(n, span),
            ast::ExprKind::Unary { op, arg } => {
                let arg = self.expr(arg)?;
                self.unary(*op, arg, span)
            }
            ast::ExprKind::Binary { op, lhs, rhs } => {
                let lhs = self.expr(lhs)?;
                let rhs = self.expr(rhs)?;
                self.binary(binop(*op), lhs, rhs, span)
            }
            ast::ExprKind::Call { callee, args } => {
                let ast::ExprKind::Name(name) = &callee.kind else {
                    return Err(Diagnostic::error(
                        callee.span,
                        "only built-in functions and casts can be called, by name",
                    ));
                };
                self.call(name, callee.span, args, span)
            }
            ast::ExprKind::Index { base, subs } => self.index(base, subs, span),
        }
    }

    fn name(&self, n: &str, span: Span) -> Result<Typed, Diagnostic> {
        let i32_leaf = |kind| Ok(Typed::strong(scalar(kind, DType::I32, span)));
        match self.lookup(n) {
            Some(Binding::Local(id)) => {
                let l = self.local(id);
                Ok(Typed::strong(mk(
                    ExprKind::Local(id),
                    l.elem,
                    l.shape.clone(),
                    span,
                )))
            }
            Some(Binding::Scalar(d)) => {
                Ok(Typed::strong(scalar(ExprKind::Param(n.into()), d, span)))
            }
            Some(Binding::Poisoned) => Err(Diagnostic::error(span, super::REPEATED_ERROR)),
            Some(Binding::Dim) => i32_leaf(ExprKind::Dim(n.into())),
            Some(Binding::Tune) => i32_leaf(ExprKind::Tune(n.into())),
            Some(Binding::Tensor) => Err(Diagnostic::error(
                span,
                format!("tensor `{n}` must be sliced to be read: `{n}[i :+ n, ...]`"),
            )),
            None if super::calls::is_function_name(n) => Err(Diagnostic::error(
                span,
                format!("`{n}` is a built-in function; call it: `{n}(...)`"),
            )),
            None => Err(self.unknown_name(n, span, &[])),
        }
    }

    pub(super) fn unary(
        &self,
        op: ast::UnaryOp,
        arg: Typed,
        span: Span,
    ) -> Result<Typed, Diagnostic> {
        let d = self.numeric(&arg, "an operator")?;
        let (op, ok, need) = match op {
            ast::UnaryOp::Neg => (UnOp::Neg, d.is_int() || d.is_float(), "a number"),
            ast::UnaryOp::Not => (UnOp::Not, d == DType::Bool, "bool (for integers use `~`)"),
            ast::UnaryOp::BitNot => (UnOp::BitNot, d.is_int(), "an integer"),
        };
        if !ok {
            return Err(Diagnostic::error(
                span,
                format!(
                    "operator `{}` needs {need}, found {d}",
                    match op {
                        UnOp::Neg => "-",
                        UnOp::Not => "!",
                        UnOp::BitNot => "~",
                    }
                ),
            ));
        }
        // A negated literal stays a (weak) literal, so `-1.0e30` is a float
        // constant that adopts the other operand's type.
        if op == UnOp::Neg {
            match arg.expr.kind {
                ExprKind::Int(v) if v != i64::MIN => {
                    return Ok(Typed {
                        expr: mk(ExprKind::Int(-v), arg.expr.elem, arg.expr.shape, span),
                        weak: arg.weak,
                    });
                }
                ExprKind::Float(v) => {
                    return Ok(Typed {
                        expr: mk(ExprKind::Float(-v), arg.expr.elem, arg.expr.shape, span),
                        weak: arg.weak,
                    });
                }
                _ => {}
            }
        }
        let weak = arg.weak;
        let expr = mk(
            ExprKind::Unary {
                op,
                arg: Box::new(arg.expr.clone()),
            },
            arg.expr.elem,
            arg.expr.shape,
            span,
        );
        Ok(Typed { expr, weak })
    }

    pub(super) fn binary(
        &self,
        op: BinOp,
        lhs: Typed,
        rhs: Typed,
        span: Span,
    ) -> Result<Typed, Diagnostic> {
        let spelling = op.symbol();
        let what = format!("operator `{spelling}`");
        let ld = self.numeric(&lhs, &what)?;
        let rd = self.numeric(&rhs, &what)?;
        let shape = self
            .shapes()
            .broadcast(lhs.shape(), rhs.shape())
            .ok_or_else(|| self.shape_mismatch(span, &what, lhs.shape(), rhs.shape()))?;
        let (common, weak) = promote(ld, lhs.weak, rd, rhs.weak);
        let bad = |need: &str| {
            Diagnostic::error(
                span,
                format!("operator `{spelling}` needs {need}, found {ld} and {rd}"),
            )
        };
        let result = match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => {
                if ld == DType::Bool || rd == DType::Bool {
                    return Err(bad("numbers (cast bool with `i32(x)`)"));
                }
                common
            }
            BinOp::Shl | BinOp::Shr => {
                if !common.is_int() || ld == DType::Bool || rd == DType::Bool {
                    return Err(bad("integers"));
                }
                common
            }
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => {
                let both_bool = ld == DType::Bool && rd == DType::Bool;
                if !(both_bool || (ld.is_int() && rd.is_int())) {
                    return Err(bad("two integers or two bools"));
                }
                common
            }
            BinOp::And | BinOp::Or => {
                if ld != DType::Bool || rd != DType::Bool {
                    return Err(bad("bool operands"));
                }
                DType::Bool
            }
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => DType::Bool,
        };
        let expr = mk(
            ExprKind::Binary {
                op,
                lhs: Box::new(convert(lhs, common)),
                rhs: Box::new(convert(rhs, common)),
            },
            Elem::Scalar(result),
            shape,
            span,
        );
        let weak = if result == DType::Bool {
            Weak::No
        } else {
            weak
        };
        Ok(Typed { expr, weak })
    }

    pub(super) fn shape_mismatch(
        &self,
        span: Span,
        what: &str,
        a: &Shape,
        b: &Shape,
    ) -> Diagnostic {
        let d = Diagnostic::error(
            span,
            format!("shape mismatch in {what}: {a} and {b} do not broadcast"),
        );
        match self.shapes().witness(a, b) {
            Some(c) if !c.values.is_empty() => d.with_note(format!(
                "for config {c} they are {:?} and {:?}",
                a.eval(c),
                b.eval(c)
            )),
            _ => d,
        }
    }

    fn index(
        &self,
        base: &ast::Expr,
        subs: &[ast::Subscript],
        span: Span,
    ) -> Result<Typed, Diagnostic> {
        if let ast::ExprKind::Name(n) = &base.kind
            && let Some(Binding::Tensor) = self.lookup(n)
        {
            return self.load(n, base.span, subs, None, span);
        }
        let base = self.expr(base)?;
        if base.shape().is_scalar() {
            return Err(Diagnostic::error(
                span,
                "cannot slice a scalar: subscripts apply to tensors and tiles",
            ));
        }
        let dims: Vec<super::slices::DimExtent> = base
            .shape()
            .0
            .iter()
            .map(|d| super::slices::DimExtent::Static(d.clone()))
            .collect();
        let (index, shape) = self.slices(subs, &dims, None, span, "tile")?;
        let elem = base.expr.elem;
        Ok(Typed::strong(mk(
            ExprKind::Slice {
                base: Box::new(base.expr),
                index,
            },
            elem,
            shape,
            span,
        )))
    }

    /// A masked read of a tensor slice, with an optional fill value.
    pub(super) fn load(
        &self,
        tensor: &str,
        tensor_span: Span,
        subs: &[ast::Subscript],
        other: Option<&ast::Expr>,
        span: Span,
    ) -> Result<Typed, Diagnostic> {
        let (elem, index, shape) = self.tensor_slice(tensor, tensor_span, subs, span)?;
        let other = match other {
            None => None,
            Some(o) => {
                let t = self.expr(o)?;
                let Elem::Scalar(to) = elem else {
                    return Err(Diagnostic::error(
                        o.span,
                        "a quantized tensor has no fill value: out-of-bounds blocks read as zero",
                    ));
                };
                self.numeric(&t, "`load`'s fill value")?;
                if !t.shape().is_scalar() {
                    return Err(Diagnostic::error(
                        o.span,
                        format!(
                            "`load`'s fill value must be a scalar, found shape {}",
                            t.shape()
                        ),
                    ));
                }
                Some(Box::new(convert(t, to)))
            }
        };
        Ok(Typed::strong(mk(
            ExprKind::Load {
                tensor: tensor.to_string(),
                index,
                other,
            },
            elem,
            shape,
            span,
        )))
    }
}

pub(super) fn binop(op: ast::BinaryOp) -> BinOp {
    match op {
        ast::BinaryOp::Or => BinOp::Or,
        ast::BinaryOp::And => BinOp::And,
        ast::BinaryOp::BitOr => BinOp::BitOr,
        ast::BinaryOp::BitXor => BinOp::BitXor,
        ast::BinaryOp::BitAnd => BinOp::BitAnd,
        ast::BinaryOp::Eq => BinOp::Eq,
        ast::BinaryOp::Ne => BinOp::Ne,
        ast::BinaryOp::Lt => BinOp::Lt,
        ast::BinaryOp::Le => BinOp::Le,
        ast::BinaryOp::Gt => BinOp::Gt,
        ast::BinaryOp::Ge => BinOp::Ge,
        ast::BinaryOp::Shl => BinOp::Shl,
        ast::BinaryOp::Shr => BinOp::Shr,
        ast::BinaryOp::Add => BinOp::Add,
        ast::BinaryOp::Sub => BinOp::Sub,
        ast::BinaryOp::Mul => BinOp::Mul,
        ast::BinaryOp::Div => BinOp::Div,
        ast::BinaryOp::Rem => BinOp::Rem,
    }
}
