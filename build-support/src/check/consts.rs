//! Compile-time integers (tile dims, span lengths): literals, tune
//! parameters and arithmetic on them, as [`ShapeExpr`]s.

use super::{Binding, KernelChecker};
use crate::diag::Diagnostic;
use crate::front::ast;
use crate::ir::{ShapeExpr, ShapeOp};

impl KernelChecker {
    /// `e` as a compile-time integer, or an error naming the runtime part;
    /// `what` says where it is needed ("tile dim", "span length").
    pub(super) fn const_int(&self, e: &ast::Expr, what: &str) -> Result<ShapeExpr, Diagnostic> {
        let out = match &e.kind {
            ast::ExprKind::Int(v) => ShapeExpr::Lit(*v),
            ast::ExprKind::Paren(inner) => self.const_int(inner, what)?,
            ast::ExprKind::Name(n) => match self.lookup(n) {
                Some(Binding::Tune) => ShapeExpr::Tune(n.clone()),
                Some(Binding::Poisoned) => {
                    return Err(Diagnostic::error(e.span, super::REPEATED_ERROR));
                }
                Some(Binding::Dim) => {
                    return Err(Diagnostic::error(
                        e.span,
                        format!("{what} unknown at compile time: `{n}` is a tensor dim, bound only at launch"),
                    )
                    .with_help("use literals and tune parameters (`@autotune(T in [16, 64])`) for tile dims"));
                }
                Some(_) => {
                    return Err(Diagnostic::error(
                        e.span,
                        format!("{what} unknown at compile time: `{n}` is a runtime value"),
                    )
                    .with_help("use literals and tune parameters for tile dims"));
                }
                None => return Err(self.unknown_name(n, e.span, &[])),
            },
            ast::ExprKind::Unary {
                op: ast::UnaryOp::Neg,
                arg,
            } => ShapeExpr::bin(ShapeOp::Sub, ShapeExpr::Lit(0), self.const_int(arg, what)?),
            ast::ExprKind::Binary { op, lhs, rhs } => {
                let op = match op {
                    ast::BinaryOp::Add => ShapeOp::Add,
                    ast::BinaryOp::Sub => ShapeOp::Sub,
                    ast::BinaryOp::Mul => ShapeOp::Mul,
                    ast::BinaryOp::Div => ShapeOp::Div,
                    ast::BinaryOp::Rem => ShapeOp::Rem,
                    other => {
                        return Err(Diagnostic::error(
                            e.span,
                            format!(
                                "operator `{}` is not allowed in a {what}; use + - * / % cdiv min max",
                                other.spelling()
                            ),
                        ));
                    }
                };
                ShapeExpr::bin(op, self.const_int(lhs, what)?, self.const_int(rhs, what)?)
            }
            ast::ExprKind::Call { callee, args } => {
                let op = match &callee.kind {
                    ast::ExprKind::Name(n) if n == "cdiv" => ShapeOp::Cdiv,
                    ast::ExprKind::Name(n) if n == "min" => ShapeOp::Min,
                    ast::ExprKind::Name(n) if n == "max" => ShapeOp::Max,
                    _ => {
                        return Err(Diagnostic::error(
                            e.span,
                            format!(
                                "{what} unknown at compile time: only cdiv, min and max may be called in it"
                            ),
                        ));
                    }
                };
                let [a, b] = args.as_slice() else {
                    return Err(Diagnostic::error(
                        e.span,
                        format!("`{}` takes 2 arguments, got {}", op.symbol(), args.len()),
                    ));
                };
                ShapeExpr::bin(op, self.const_int(a, what)?, self.const_int(b, what)?)
            }
            _ => {
                return Err(Diagnostic::error(
                    e.span,
                    format!(
                        "{what} unknown at compile time: expected literals, tune parameters and arithmetic on them"
                    ),
                ));
            }
        };
        Ok(out)
    }

    /// Like [`Self::const_int`], and the value must be positive in every
    /// config (a tile dim or a span length).
    pub(super) fn const_extent(&self, e: &ast::Expr, what: &str) -> Result<ShapeExpr, Diagnostic> {
        let s = self.const_int(e, what)?;
        for c in &self.configs {
            match s.try_eval(c) {
                Ok(v) if v > 0 => {}
                Ok(v) => {
                    return Err(Diagnostic::error(
                        e.span,
                        format!("{what} `{s}` must be positive, but it is {v} for config {c}"),
                    ));
                }
                Err(err) => {
                    return Err(Diagnostic::error(
                        e.span,
                        format!("{what} `{s}` has no value for config {c}: {err}"),
                    ));
                }
            }
        }
        Ok(s)
    }

    /// Whether `e` is a compile-time integer (no error built).
    pub(super) fn is_const(&self, e: &ast::Expr) -> bool {
        match &e.kind {
            ast::ExprKind::Int(_) => true,
            ast::ExprKind::Paren(inner) => self.is_const(inner),
            ast::ExprKind::Name(n) => matches!(self.lookup(n), Some(Binding::Tune)),
            ast::ExprKind::Unary {
                op: ast::UnaryOp::Neg,
                arg,
            } => self.is_const(arg),
            ast::ExprKind::Binary { op, lhs, rhs } => {
                matches!(
                    op,
                    ast::BinaryOp::Add
                        | ast::BinaryOp::Sub
                        | ast::BinaryOp::Mul
                        | ast::BinaryOp::Div
                        | ast::BinaryOp::Rem
                ) && self.is_const(lhs)
                    && self.is_const(rhs)
            }
            ast::ExprKind::Call { callee, args } => {
                matches!(&callee.kind, ast::ExprKind::Name(n) if n == "cdiv" || n == "min" || n == "max")
                    && args.len() == 2
                    && args.iter().all(|a| self.is_const(a))
            }
            _ => false,
        }
    }
}
