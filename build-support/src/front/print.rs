//! Prints the AST back as source (normalized spacing, explicit parens where
//! the tree has them). Used by `phobos-compile --emit ast` and messages.

use std::fmt::Write;

use super::ast::*;

/// An expression as source text.
pub fn expr_to_string(e: &Expr) -> String {
    let mut out = String::new();
    expr(&mut out, e);
    out
}

/// A whole program as source text, one statement per line.
pub fn program_to_string(p: &Program) -> String {
    let mut out = String::new();
    for (i, k) in p.kernels.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        kernel(&mut out, k);
    }
    out
}

fn kernel(out: &mut String, k: &Kernel) {
    for a in &k.attrs {
        let _ = write!(out, "@{}", a.name.name);
        if let Some(args) = &a.args {
            out.push('(');
            for (i, arg) in args.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                match arg {
                    AttrArg::Values { name, values, .. } => {
                        let vs: Vec<String> = values.iter().map(literal).collect();
                        let _ = write!(out, "{} in [{}]", name.name, vs.join(", "));
                    }
                    AttrArg::Named { name, value, .. } => {
                        let _ = write!(out, "{} = {}", name.name, literal(value));
                    }
                    AttrArg::Expr(e) => expr(out, e),
                }
            }
            out.push(')');
        }
        out.push('\n');
    }
    let _ = write!(out, "kernel {}(", k.name.name);
    for (i, p) in k.params.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{}: ", p.name.name);
        ty(out, &p.ty);
    }
    out.push_str(") ");
    block(out, &k.body, 0);
    out.push('\n');
}

fn literal(l: &Literal) -> String {
    match l.kind {
        LiteralKind::Int(v) => v.to_string(),
        LiteralKind::Float(v) => format!("{v:?}"),
        LiteralKind::Bool(v) => v.to_string(),
    }
}

fn ty(out: &mut String, t: &Type) {
    let (head, elem, dims) = match &t.kind {
        TypeKind::Scalar(name) => {
            out.push_str(&name.name);
            return;
        }
        TypeKind::Tensor { elem, dims } => ("tensor", elem, dims),
        TypeKind::Tile { elem, dims } => ("tile", elem, dims),
    };
    let _ = write!(out, "{head}<{}>[", elem.name);
    for (i, d) in dims.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        expr(out, d);
    }
    out.push(']');
}

fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push_str("  ");
    }
}

fn block(out: &mut String, b: &Block, depth: usize) {
    out.push_str("{\n");
    for s in &b.stmts {
        indent(out, depth + 1);
        stmt(out, s, depth + 1);
        out.push('\n');
    }
    indent(out, depth);
    out.push('}');
}

fn stmt(out: &mut String, s: &Stmt, depth: usize) {
    match &s.kind {
        StmtKind::Let {
            mutable,
            name,
            ty: t,
            value,
        } => {
            let _ = write!(
                out,
                "{} {}",
                if *mutable { "var" } else { "let" },
                name.name
            );
            if let Some(t) = t {
                out.push_str(": ");
                ty(out, t);
            }
            out.push_str(" = ");
            expr(out, value);
        }
        StmtKind::Assign {
            target,
            index,
            op,
            value,
        } => {
            out.push_str(&target.name);
            if let Some(subs) = index {
                subscripts(out, subs);
            }
            let _ = write!(out, " {} ", op.spelling());
            expr(out, value);
        }
        StmtKind::For {
            var,
            start,
            end,
            step,
            body,
        } => {
            let _ = write!(out, "for {} in range(", var.name);
            expr(out, start);
            out.push_str(", ");
            expr(out, end);
            if let Some(step) = step {
                out.push_str(", ");
                expr(out, step);
            }
            out.push_str(") ");
            block(out, body, depth);
        }
        StmtKind::While { cond, body } => {
            out.push_str("while ");
            expr(out, cond);
            out.push(' ');
            block(out, body, depth);
        }
        StmtKind::If {
            cond,
            then_body,
            else_body,
        } => {
            out.push_str("if ");
            expr(out, cond);
            out.push(' ');
            block(out, then_body, depth);
            if let Some(e) = else_body {
                out.push_str(" else ");
                block(out, e, depth);
            }
        }
        StmtKind::Expr(e) => expr(out, e),
    }
}

fn subscripts(out: &mut String, subs: &[Subscript]) {
    out.push('[');
    for (i, s) in subs.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        match &s.kind {
            SubscriptKind::Full => out.push(':'),
            SubscriptKind::Point(e) => expr(out, e),
            SubscriptKind::Range(a, b) => {
                expr(out, a);
                out.push_str(" : ");
                expr(out, b);
            }
            SubscriptKind::Span(a, n) => {
                expr(out, a);
                out.push_str(" :+ ");
                expr(out, n);
            }
            SubscriptKind::OpenRange(a, b) => {
                if let Some(a) = a {
                    expr(out, a);
                }
                out.push(':');
                if let Some(b) = b {
                    expr(out, b);
                }
            }
        }
    }
    out.push(']');
}

fn expr(out: &mut String, e: &Expr) {
    match &e.kind {
        ExprKind::Int(v) => {
            let _ = write!(out, "{v}");
        }
        ExprKind::Float(v) => {
            let _ = write!(out, "{v:?}");
        }
        ExprKind::Bool(v) => {
            let _ = write!(out, "{v}");
        }
        ExprKind::Name(n) => out.push_str(n),
        ExprKind::Unary { op, arg } => {
            out.push(match op {
                UnaryOp::Neg => '-',
                UnaryOp::Not => '!',
                UnaryOp::BitNot => '~',
            });
            expr(out, arg);
        }
        ExprKind::Binary { op, lhs, rhs } => {
            // Fully parenthesized nested operators keep the tree visible.
            let wrap = |out: &mut String, e: &Expr| {
                if matches!(e.kind, ExprKind::Binary { .. }) {
                    out.push('(');
                    expr(out, e);
                    out.push(')');
                } else {
                    expr(out, e);
                }
            };
            wrap(out, lhs);
            let _ = write!(out, " {} ", op.spelling());
            wrap(out, rhs);
        }
        ExprKind::Call { callee, args } => {
            expr(out, callee);
            out.push('(');
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                expr(out, a);
            }
            out.push(')');
        }
        ExprKind::Index { base, subs } => {
            expr(out, base);
            subscripts(out, subs);
        }
        ExprKind::Paren(inner) => {
            out.push('(');
            expr(out, inner);
            out.push(')');
        }
    }
}
