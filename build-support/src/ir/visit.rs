//! Walking every expression of a kernel body, for analyses and rewrites.

use super::{Block, Expr, ExprKind, Slice, StmtKind};

/// The direct sub-expressions of `e`, in evaluation order.
pub fn children(e: &Expr) -> Vec<&Expr> {
    let mut out = Vec::new();
    match &e.kind {
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Bool(_)
        | ExprKind::Local(_)
        | ExprKind::Param(_)
        | ExprKind::Dim(_)
        | ExprKind::Tune(_) => {}
        ExprKind::Load { index, other, .. } => {
            slice_exprs(index, &mut out);
            if let Some(o) = other {
                out.push(o);
            }
        }
        ExprKind::Slice { base, index } => {
            out.push(base);
            slice_exprs(index, &mut out);
        }
        ExprKind::Unary { arg, .. } | ExprKind::Cast(arg) | ExprKind::Broadcast(arg) => {
            out.push(arg)
        }
        ExprKind::Binary { lhs, rhs, .. } => {
            out.push(lhs);
            out.push(rhs);
        }
        ExprKind::Call { args, .. } => out.extend(args.iter()),
    }
    out
}

fn slice_exprs<'a>(index: &'a [Slice], out: &mut Vec<&'a Expr>) {
    for s in index {
        match s {
            Slice::Point(e) | Slice::Span { start: e, .. } => out.push(e),
            Slice::Full => {}
        }
    }
}

/// Calls `f` on `e` and every expression inside it, parents first.
pub fn expr(e: &Expr, f: &mut impl FnMut(&Expr)) {
    f(e);
    for c in children(e) {
        expr(c, f);
    }
}

/// The top-level expressions of one statement (not those of nested blocks).
pub fn stmt_exprs(kind: &StmtKind) -> Vec<&Expr> {
    let mut out = Vec::new();
    match kind {
        StmtKind::Let { value, .. } | StmtKind::Assign { value, .. } | StmtKind::Expr(value) => {
            out.push(value)
        }
        StmtKind::Store { index, value, .. } | StmtKind::AtomicAdd { index, value, .. } => {
            slice_exprs(index, &mut out);
            out.push(value);
        }
        StmtKind::Prefetch { index, .. } => slice_exprs(index, &mut out),
        StmtKind::For {
            start, end, step, ..
        } => out.extend([start, end, step]),
        StmtKind::While { cond, .. } | StmtKind::If { cond, .. } => out.push(cond),
    }
    out
}

/// Calls `f` on every statement in `block`, nested blocks included, each
/// statement before the ones inside it.
pub fn stmts<'a>(block: &'a [super::Stmt], f: &mut impl FnMut(&'a super::Stmt)) {
    for s in block {
        f(s);
        match &s.kind {
            StmtKind::For { body, .. } | StmtKind::While { body, .. } => stmts(body, f),
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                stmts(then_body, f);
                stmts(else_body, f);
            }
            _ => {}
        }
    }
}

/// Calls `f` on every expression in `block`, nested blocks included.
pub fn exprs(block: &Block, f: &mut impl FnMut(&Expr)) {
    for s in block {
        for e in stmt_exprs(&s.kind) {
            expr(e, f);
        }
        match &s.kind {
            StmtKind::For { body, .. } | StmtKind::While { body, .. } => exprs(body, f),
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                exprs(then_body, f);
                exprs(else_body, f);
            }
            _ => {}
        }
    }
}

/// Calls `f` on `e` and every expression inside it, children first.
pub fn expr_mut(e: &mut Expr, f: &mut impl FnMut(&mut Expr)) {
    match &mut e.kind {
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Bool(_)
        | ExprKind::Local(_)
        | ExprKind::Param(_)
        | ExprKind::Dim(_)
        | ExprKind::Tune(_) => {}
        ExprKind::Load { index, other, .. } => {
            slices_mut(index, f);
            if let Some(o) = other {
                expr_mut(o, f);
            }
        }
        ExprKind::Slice { base, index } => {
            expr_mut(base, f);
            slices_mut(index, f);
        }
        ExprKind::Unary { arg, .. } | ExprKind::Cast(arg) | ExprKind::Broadcast(arg) => {
            expr_mut(arg, f)
        }
        ExprKind::Binary { lhs, rhs, .. } => {
            expr_mut(lhs, f);
            expr_mut(rhs, f);
        }
        ExprKind::Call { args, .. } => {
            for a in args {
                expr_mut(a, f);
            }
        }
    }
    f(e);
}

fn slices_mut(index: &mut [Slice], f: &mut impl FnMut(&mut Expr)) {
    for s in index {
        match s {
            Slice::Point(e) | Slice::Span { start: e, .. } => expr_mut(e, f),
            Slice::Full => {}
        }
    }
}

/// Calls `f` on every expression in `block` (children first), nested
/// blocks included.
pub fn exprs_mut(block: &mut Block, f: &mut impl FnMut(&mut Expr)) {
    for s in block {
        match &mut s.kind {
            StmtKind::Let { value, .. }
            | StmtKind::Assign { value, .. }
            | StmtKind::Expr(value) => expr_mut(value, f),
            StmtKind::Store { index, value, .. } | StmtKind::AtomicAdd { index, value, .. } => {
                slices_mut(index, f);
                expr_mut(value, f);
            }
            StmtKind::Prefetch { index, .. } => slices_mut(index, f),
            StmtKind::For {
                start,
                end,
                step,
                body,
                ..
            } => {
                expr_mut(start, f);
                expr_mut(end, f);
                expr_mut(step, f);
                exprs_mut(body, f);
            }
            StmtKind::While { cond, body } => {
                expr_mut(cond, f);
                exprs_mut(body, f);
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                expr_mut(cond, f);
                exprs_mut(then_body, f);
                exprs_mut(else_body, f);
            }
        }
    }
}
