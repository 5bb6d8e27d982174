//! Contraction loops lowered whole. A `for` whose body only loads an A
//! and a B tile at the loop's `k` and adds their product into an `f32`
//! tile `var`,
//!
//! ```text
//! for kt in range(start, end, TK) {
//!   let a = A[rows, kt :+ TK]
//!   let b = B[kt :+ TK, cols]
//!   acc += dot(a, b)
//! }
//! ```
//!
//! (the operands may also be loads written inside `dot`), first tries
//! `host::dot_acc_k_loop`, which runs every iteration in one blocked call
//! that reads the tensors in place and keeps the accumulator's
//! micro-tiles in registers across `k`, with the same bits as the loop.
//! The call declines (returns `false`) for shapes it does not take (a
//! `k` span other than the step, among others); the loop then runs step by
//! step as before. Only the host back end does this; the GPU lowering of
//! the loop is unchanged.

use proc_macro2::TokenStream;
use quote::quote;

use super::expr::private;
use super::names;
use super::stmt::mentions;
use super::{GenError, Generator};
use crate::ir::{BinOp, Builtin, DType, Expr, ExprKind, Kernel, LocalId, Slice, Stmt, StmtKind};

/// The pattern's parts, borrowed from the loop body.
struct Contraction<'e> {
    acc: &'e str,
    a: (&'e str, &'e [Slice]),
    b: (&'e str, &'e [Slice]),
}

impl Generator<'_> {
    /// The `bool` expression that runs the loop over `var` with `body` as
    /// one `dot_acc_k_loop` call, evaluated with the loop variable bound
    /// to the first iteration's value and `__next` (that value), `__end`
    /// and `__step` in scope; `None` when the body is not the pattern.
    pub fn k_loop_call(
        &self,
        var: LocalId,
        body: &[Stmt],
    ) -> Result<Option<TokenStream>, GenError> {
        let Some(var_local) = self.kernel.local(var) else {
            return Ok(None);
        };
        // Every integer type converts to `i64` without loss; `bool` is not
        // a loop counter.
        if var_local
            .elem
            .scalar()
            .is_none_or(|t| t == DType::Bool || t.is_float())
        {
            return Ok(None);
        }
        let Some(found) = contraction(var, body, self.kernel) else {
            return Ok(None);
        };
        let p = private();
        let acc = names::local(found.acc);
        let (a_view, b_view) = (names::param(found.a.0), names::param(found.b.0));
        let (a_slices, b_slices) = (self.slices(found.a.1)?, self.slices(found.b.1)?);
        Ok(Some(quote!(#p::host::dot_acc_k_loop(
            &mut #acc,
            (&#a_view, &[#(#a_slices),*]),
            (&#b_view, &[#(#b_slices),*]),
            (__next as i64, __end as i64, __step as i64),
        )?)))
    }
}

/// Matches `body` against the pattern (module doc).
fn contraction<'e>(var: LocalId, body: &'e [Stmt], kernel: &'e Kernel) -> Option<Contraction<'e>> {
    let (update, lets) = body.split_last()?;
    let StmtKind::Assign { local: acc, value } = &update.kind else {
        return None;
    };
    let acc_local = kernel.local(*acc)?;
    if !acc_local.mutable
        || acc_local.elem.scalar() != Some(DType::F32)
        || acc_local.shape.0.len() != 2
    {
        return None;
    }
    let ExprKind::Binary {
        op: BinOp::Add,
        lhs,
        rhs,
    } = &value.kind
    else {
        return None;
    };
    if !matches!(lhs.kind, ExprKind::Local(id) if id == *acc) || rhs.shape != value.shape {
        return None;
    }
    let ExprKind::Call {
        func: Builtin::Dot,
        args,
    } = &rhs.kind
    else {
        return None;
    };
    let [x, y] = args.as_slice() else {
        return None;
    };
    if lets.len() > 2 {
        return None;
    }
    let mut let_values = Vec::new();
    for stmt in lets {
        let StmtKind::Let { local, value } = &stmt.kind else {
            return None;
        };
        let_values.push((*local, value));
    }
    // Each operand is a load, or a `let` of one; each `let` is an operand.
    let resolve = |e: &'e Expr| -> Option<&'e Expr> {
        match e.kind {
            ExprKind::Local(id) => let_values.iter().find(|(l, _)| *l == id).map(|(_, v)| *v),
            _ => Some(e),
        }
    };
    let (a, b) = (resolve(x)?, resolve(y)?);
    let used = |id: LocalId| {
        [x, y]
            .iter()
            .any(|e| matches!(e.kind, ExprKind::Local(l) if l == id))
    };
    if !let_values.iter().all(|(id, _)| used(*id)) {
        return None;
    }
    let a = operand(a, var, 1)?;
    let b = operand(b, var, 0)?;
    // The loads read neither the accumulator nor the `let`s.
    let reads_locals =
        |e: &Expr| mentions(e, *acc) || let_values.iter().any(|(id, _)| mentions(e, *id));
    if [x, y]
        .iter()
        .any(|e| !matches!(e.kind, ExprKind::Local(_)) && reads_locals(e))
        || let_values.iter().any(|(_, v)| reads_locals(v))
    {
        return None;
    }
    Some(Contraction {
        acc: &acc_local.name,
        a,
        b,
    })
}

/// A rank-2 `f32` tensor load whose dim `k_dim` is `var :+ len` and whose
/// other dim is a span or whole dim that does not depend on `var`.
fn operand(e: &Expr, var: LocalId, k_dim: usize) -> Option<(&str, &[Slice])> {
    let ExprKind::Load {
        tensor,
        index,
        other: None,
    } = &e.kind
    else {
        return None;
    };
    if e.elem.is_quant() || e.elem.scalar() != Some(DType::F32) || index.len() != 2 {
        return None;
    }
    let is_var = |s: &Slice| matches!(s, Slice::Span { start, .. } if matches!(start.kind, ExprKind::Local(id) if id == var));
    let free = |s: &Slice| match s {
        Slice::Span { start, .. } => !mentions(start, var),
        Slice::Full => true,
        Slice::Point(_) => false,
    };
    (is_var(&index[k_dim]) && free(&index[1 - k_dim]))
        .then_some((tensor.as_str(), index.as_slice()))
}
