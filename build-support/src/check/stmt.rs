//! Statements: declarations, assignments, stores, control flow.

use super::params::scalar_dtype;
use super::types::{Typed, Weak, broadcast_to, convert, implicitly_converts, promote};
use super::{Binding, KernelChecker};
use crate::diag::Diagnostic;
use crate::front::ast::{self, AssignOp};
use crate::ir::{self, BinOp, Builtin, DType, Elem, ExprKind, Shape, StmtKind, StoreOp};
use crate::span::Span;

impl KernelChecker {
    /// Checks a block's statements in a new scope. A failing statement is
    /// recorded in `self.errors` and skipped; the block still returns Ok
    /// (the kernel fails as a whole when any error was recorded).
    pub(super) fn block(&mut self, block: &ast::Block) -> Result<ir::Block, Diagnostic> {
        self.push_scope();
        let mut out = Vec::with_capacity(block.stmts.len());
        for s in &block.stmts {
            match self.stmt(s) {
                Ok(stmt) => out.push(stmt),
                Err(d) => {
                    if let ast::StmtKind::Let { name, .. } = &s.kind
                        && let Some(p) = self.poisoned.last_mut()
                    {
                        p.push(name.name.clone());
                    }
                    if d.message != super::REPEATED_ERROR {
                        self.errors.push(d);
                    }
                }
            }
        }
        self.pop_scope();
        Ok(out)
    }

    fn stmt(&mut self, s: &ast::Stmt) -> Result<ir::Stmt, Diagnostic> {
        let kind = match &s.kind {
            ast::StmtKind::Let {
                mutable,
                name,
                ty,
                value,
            } => self.let_stmt(*mutable, name, ty.as_ref(), value)?,
            ast::StmtKind::Assign {
                target,
                index,
                op,
                value,
            } => self.assign(target, index.as_deref(), *op, value, s.span)?,
            ast::StmtKind::For {
                var,
                start,
                end,
                step,
                body,
            } => self.for_stmt(var, start, end, step.as_ref(), body)?,
            ast::StmtKind::While { cond, body } => {
                let cond = self.condition(cond, "`while`")?;
                StmtKind::While {
                    cond,
                    body: self.block(body)?,
                }
            }
            ast::StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                let cond = self.condition(cond, "`if`")?;
                let then_body = self.block(then_body)?;
                let else_body = match else_body {
                    Some(b) => self.block(b)?,
                    None => Vec::new(),
                };
                StmtKind::If {
                    cond,
                    then_body,
                    else_body,
                }
            }
            ast::StmtKind::Expr(e) => self.expr_stmt(e)?,
        };
        Ok(ir::Stmt { kind, span: s.span })
    }

    fn condition(&self, e: &ast::Expr, what: &str) -> Result<ir::Expr, Diagnostic> {
        let t = self.expr(e)?;
        if t.expr.elem != Elem::Scalar(DType::Bool) || !t.shape().is_scalar() {
            return Err(Diagnostic::error(
                e.span,
                format!(
                    "{what} needs a bool scalar condition, found {}",
                    ir::print::type_to_string(t.expr.elem, t.shape())
                ),
            ));
        }
        Ok(t.expr)
    }

    fn declared_type(&self, ty: &ast::Type) -> Result<(Elem, Shape), Diagnostic> {
        match &ty.kind {
            ast::TypeKind::Scalar(name) => Ok((Elem::Scalar(scalar_dtype(name)?), Shape::scalar())),
            ast::TypeKind::Tile { elem, dims } => {
                let d = scalar_dtype(elem)?;
                let dims = dims
                    .iter()
                    .map(|d| self.const_extent(d, "tile dim"))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok((Elem::Scalar(d), Shape(dims)))
            }
            ast::TypeKind::Tensor { .. } => Err(Diagnostic::error(
                ty.span,
                "a local cannot be a tensor: tensors are kernel parameters; declare a `tile<T>[dims]`",
            )),
        }
    }

    /// Converts a value to a local's type, allowing only widening and weak
    /// literals (a narrowing needs a written cast).
    fn to_local_type(
        &self,
        value: Typed,
        elem: Elem,
        shape: &Shape,
        name: &str,
    ) -> Result<ir::Expr, Diagnostic> {
        let span = value.span();
        let converted = match (value.expr.elem, elem) {
            (Elem::Scalar(from), Elem::Scalar(to)) => {
                if !implicitly_converts(from, value.weak, to) {
                    return Err(Diagnostic::error(
                        span,
                        format!("cannot implicitly convert {from} to {to} for `{name}`"),
                    )
                    .with_help(format!("convert explicitly: `{to}(...)`")));
                }
                convert(value, to)
            }
            (a, b) if a == b => value.expr,
            (a, b) => {
                return Err(Diagnostic::error(
                    span,
                    format!("cannot use a {a} value as {b} for `{name}`"),
                ));
            }
        };
        broadcast_to(
            &self.shapes(),
            converted,
            shape,
            &format!("the value of `{name}`"),
        )
    }

    fn let_stmt(
        &mut self,
        mutable: bool,
        name: &ast::Ident,
        ty: Option<&ast::Type>,
        value: &ast::Expr,
    ) -> Result<StmtKind, Diagnostic> {
        let t = self.expr(value)?;
        let (elem, shape, value) = match ty {
            Some(ty) => {
                let (elem, shape) = self.declared_type(ty)?;
                let v = self.to_local_type(t, elem, &shape, &name.name)?;
                (elem, shape, v)
            }
            None => {
                let elem = t.expr.elem;
                let shape = t.shape().clone();
                // A weak literal settles on its default type (i32 or f32).
                let v = match (t.weak, elem) {
                    (Weak::No, _) | (_, Elem::Quant(_)) => t.expr,
                    (_, Elem::Scalar(d)) => convert(t, d),
                };
                (elem, shape, v)
            }
        };
        let local = self.declare(name, elem, shape, mutable)?;
        if !mutable {
            self.local_defs.insert(local, vec![value.clone()]);
        }
        Ok(StmtKind::Let { local, value })
    }

    fn assign(
        &mut self,
        target: &ast::Ident,
        index: Option<&[ast::Subscript]>,
        op: AssignOp,
        value: &ast::Expr,
        span: Span,
    ) -> Result<StmtKind, Diagnostic> {
        match self.lookup(&target.name) {
            Some(Binding::Local(id)) => {
                let l = self.local(id).clone();
                if !l.mutable {
                    return Err(Diagnostic::error(
                        target.span,
                        format!(
                            "cannot assign to `{}`: it is immutable (`let` or a loop variable)",
                            target.name
                        ),
                    )
                    .with_help(format!(
                        "declare it with `var {}` to make it mutable",
                        target.name
                    )));
                }
                if index.is_some() {
                    return Err(Diagnostic::error(
                        span,
                        format!("cannot assign into part of local tile `{}`", target.name),
                    )
                    .with_help("build the whole tile instead, e.g. with `where(mask, new, old)`"));
                }
                let rhs = self.expr(value)?;
                let current = Typed::strong(ir::Expr {
                    kind: ExprKind::Local(id),
                    elem: l.elem,
                    shape: l.shape.clone(),
                    span: target.span,
                });
                let combined = match op {
                    AssignOp::Assign => rhs,
                    AssignOp::Add => self.binary(BinOp::Add, current, rhs, span)?,
                    AssignOp::Sub => self.binary(BinOp::Sub, current, rhs, span)?,
                    AssignOp::Mul => self.binary(BinOp::Mul, current, rhs, span)?,
                    AssignOp::Div => self.binary(BinOp::Div, current, rhs, span)?,
                    AssignOp::Max => self.max_of(current, rhs, span)?,
                };
                let value = self.to_local_type(combined, l.elem, &l.shape, &target.name)?;
                Ok(StmtKind::Assign { local: id, value })
            }
            Some(Binding::Tensor) => {
                let Some(subs) = index else {
                    return Err(Diagnostic::error(
                        span,
                        format!(
                            "assign to a slice of tensor `{0}`: `{0}[i :+ n, ...] = value`",
                            target.name
                        ),
                    ));
                };
                let (elem, index, shape) =
                    self.tensor_slice(&target.name, target.span, subs, span)?;
                // A store into a writable quantized tensor quantizes the
                // value's blocks (SPEC.md §14): it takes f32 values.
                let to = match elem {
                    Elem::Scalar(to) => to,
                    Elem::Quant(q) if q.is_writable() && matches!(op, AssignOp::Assign) => {
                        DType::F32
                    }
                    Elem::Quant(q) if q.is_writable() => {
                        return Err(Diagnostic::error(
                            span,
                            format!(
                                "`{}` is {q}: a quantized tensor is stored with `=` only (a store quantizes whole blocks)",
                                target.name
                            ),
                        ));
                    }
                    Elem::Quant(q) => {
                        return Err(Diagnostic::error(
                            target.span,
                            format!(
                                "cannot store into quantized tensor `{}`: {q} tensors are read-only",
                                target.name
                            ),
                        )
                        .with_help("a kernel writes quantized tensors of q8_0 only"));
                    }
                };
                let v = self.expr(value)?;
                self.numeric(&v, "a store")?;
                // Stores convert like Triton's: any number to the tensor's type.
                let v = convert(v, to);
                let value = broadcast_to(
                    &self.shapes(),
                    v,
                    &shape,
                    &format!("the store to `{}`", target.name),
                )?;
                let op = match op {
                    AssignOp::Assign => StoreOp::Assign,
                    AssignOp::Add => StoreOp::Add,
                    AssignOp::Sub => StoreOp::Sub,
                    AssignOp::Mul => StoreOp::Mul,
                    AssignOp::Div => StoreOp::Div,
                    AssignOp::Max => StoreOp::Max,
                };
                self.mark_written(&target.name);
                Ok(StmtKind::Store {
                    tensor: target.name.clone(),
                    index,
                    op,
                    value,
                })
            }
            Some(Binding::Scalar(_)) => Err(Diagnostic::error(
                target.span,
                format!(
                    "cannot assign to parameter `{}`: scalar parameters are read-only",
                    target.name
                ),
            )
            .with_help(format!("copy it into a local: `var x = {}`", target.name))),
            Some(Binding::Poisoned) => Err(Diagnostic::error(target.span, super::REPEATED_ERROR)),
            Some(Binding::Dim | Binding::Tune) => Err(Diagnostic::error(
                target.span,
                format!(
                    "cannot assign to `{}`: dims and tune parameters are constants",
                    target.name
                ),
            )),
            None => Err(self.unknown_name(&target.name, target.span, &[])),
        }
    }

    fn max_of(&self, a: Typed, b: Typed, span: Span) -> Result<Typed, Diagnostic> {
        let (ad, bd) = (self.numeric(&a, "`max=`")?, self.numeric(&b, "`max=`")?);
        let shape = self
            .shapes()
            .broadcast(a.shape(), b.shape())
            .ok_or_else(|| self.shape_mismatch(span, "`max=`", a.shape(), b.shape()))?;
        let (common, _) = promote(ad, a.weak, bd, b.weak);
        let args = vec![convert(a, common), convert(b, common)];
        Ok(Typed::strong(ir::Expr {
            kind: ExprKind::Call {
                func: Builtin::Max,
                args,
            },
            elem: Elem::Scalar(common),
            shape,
            span,
        }))
    }

    fn mark_written(&mut self, tensor: &str) {
        if !self.written.iter().any(|w| w == tensor) {
            self.written.push(tensor.to_string());
        }
    }

    fn for_stmt(
        &mut self,
        var: &ast::Ident,
        start: &ast::Expr,
        end: &ast::Expr,
        step: Option<&ast::Expr>,
        body: &ast::Block,
    ) -> Result<StmtKind, Diagnostic> {
        let mut bounds = Vec::with_capacity(3);
        for e in [Some(start), Some(end), step].into_iter().flatten() {
            let t = self.expr(e)?;
            let d = self.numeric(&t, "`range`")?;
            if !d.is_int() || !t.shape().is_scalar() {
                return Err(Diagnostic::error(
                    e.span,
                    format!(
                        "`range` bounds must be integer scalars, found {}",
                        ir::print::type_to_string(t.expr.elem, t.shape())
                    ),
                ));
            }
            bounds.push(t);
        }
        if let Some(step_e) = step
            && let ExprKind::Int(0) = bounds[2].expr.kind
        {
            return Err(Diagnostic::error(step_e.span, "`range` step must not be 0"));
        }
        let (mut common, mut weak) = (DType::I32, Weak::Int);
        for b in &bounds {
            let d = b.dtype().unwrap_or(DType::I32);
            (common, weak) = promote(common, weak, d, b.weak);
        }
        let step_span = step.map_or(end.span, |s| s.span);
        let mut it = bounds.into_iter().map(|b| convert(b, common));
        let (Some(start), Some(end)) = (it.next(), it.next()) else {
            return Err(Diagnostic::error(
                start.span,
                "`range` needs a start and an end",
            ));
        };
        let step = it
            .next()
            .unwrap_or_else(|| super::expr::scalar(ExprKind::Int(1), common, step_span));
        self.push_scope();
        let var_id = self.declare(var, Elem::Scalar(common), Shape::scalar(), false);
        let var_id = match var_id {
            Ok(id) => id,
            Err(e) => {
                self.pop_scope();
                return Err(e);
            }
        };
        self.local_defs
            .insert(var_id, vec![start.clone(), step.clone()]);
        let body = self.block(body);
        self.pop_scope();
        Ok(StmtKind::For {
            var: var_id,
            start,
            end,
            step,
            body: body?,
        })
    }

    fn expr_stmt(&mut self, e: &ast::Expr) -> Result<StmtKind, Diagnostic> {
        if let ast::ExprKind::Call { callee, args } = &e.kind
            && let ast::ExprKind::Name(name) = &callee.kind
            && self.lookup(name).is_none()
        {
            match name.as_str() {
                "atomic_add" => return self.atomic_add(e, args),
                "prefetch" => return self.prefetch(e, args),
                _ => {}
            }
        }
        Ok(StmtKind::Expr(self.expr(e)?.expr))
    }

    /// The `T[slices]` first argument of a statement built-in (`what`):
    /// the tensor's name and the span of that name.
    fn statement_target<'e>(
        what: &str,
        target: &'e ast::Expr,
    ) -> Result<(&'e String, Span, &'e [ast::Subscript]), Diagnostic> {
        let ast::ExprKind::Index { base, subs } = &target.kind else {
            return Err(Diagnostic::error(
                target.span,
                format!("`{what}` needs a tensor slice: `{what}(T[i :+ n], ..)`"),
            ));
        };
        let ast::ExprKind::Name(tensor) = &base.kind else {
            return Err(Diagnostic::error(
                base.span,
                format!("`{what}` needs a tensor parameter by name"),
            ));
        };
        Ok((tensor, base.span, subs))
    }

    fn atomic_add(&mut self, e: &ast::Expr, args: &[ast::Expr]) -> Result<StmtKind, Diagnostic> {
        let [target, value] = args else {
            return Err(Diagnostic::error(
                e.span,
                format!("`atomic_add` takes 2 arguments, got {}", args.len()),
            )
            .with_note("signature: atomic_add(T[slices], value)"));
        };
        let (tensor, base_span, subs) = Self::statement_target("atomic_add", target)?;
        let (elem, index, shape) = self.tensor_slice(tensor, base_span, subs, target.span)?;
        let Elem::Scalar(to) = elem else {
            return Err(Diagnostic::error(
                base_span,
                "cannot `atomic_add` into a quantized tensor",
            ));
        };
        if to == DType::Bool {
            return Err(Diagnostic::error(
                base_span,
                format!("cannot `atomic_add` into `{tensor}`: it holds bool, not numbers"),
            ));
        }
        let v = self.expr(value)?;
        self.numeric(&v, "`atomic_add`")?;
        let v = convert(v, to);
        let value = broadcast_to(&self.shapes(), v, &shape, "`atomic_add`")?;
        self.mark_written(tensor);
        Ok(StmtKind::AtomicAdd {
            tensor: tensor.clone(),
            index,
            value,
        })
    }

    /// `prefetch(T[slices])`: a hint with no result, so it reads nothing
    /// the checker tracks and marks nothing written.
    fn prefetch(&mut self, e: &ast::Expr, args: &[ast::Expr]) -> Result<StmtKind, Diagnostic> {
        let [target] = args else {
            return Err(Diagnostic::error(
                e.span,
                format!("`prefetch` takes 1 argument, got {}", args.len()),
            )
            .with_note("signature: prefetch(T[slices])"));
        };
        let (tensor, base_span, subs) = Self::statement_target("prefetch", target)?;
        let (elem, index, _) = self.tensor_slice(tensor, base_span, subs, target.span)?;
        if let Elem::Quant(format) = elem {
            return Err(Diagnostic::error(
                base_span,
                format!("cannot `prefetch` the quantized tensor `{tensor}` ({format}) yet"),
            )
            .with_note("prefetch reads float and integer tensors"));
        }
        Ok(StmtKind::Prefetch {
            tensor: tensor.clone(),
            index,
        })
    }
}
