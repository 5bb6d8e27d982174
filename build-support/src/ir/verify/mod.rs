//! The IR verifier: checks that a module keeps every invariant back ends
//! rely on. The checker runs it on its output; passes that rewrite IR can
//! run it again.
//!
//! # Invariants
//!
//! Kernel level:
//! 1. Kernel names are unique in a module; parameter names are unique and
//!    differ from every symbolic dim and tune parameter name.
//! 2. Tune parameters have unique names and non-empty lists of distinct,
//!    positive values.
//! 3. `grid` has 1 to 3 entries, each an `i32` scalar built from integer
//!    literals, `Dim`, `Tune`, `Binary` `+ - * / %` and `cdiv`/`min`/`max`.
//! 4. `launch`, when present, has `threads` in 1..=1024, `min_blocks >= 1`
//!    and `max_regs` in 1..=255.
//! 5. Local names are unique; every `LocalId` indexes `locals`.
//!
//! Shapes (checked under every config of [`super::Kernel::configs`]):
//! 6. Every shape dim and span length mentions only the kernel's tune
//!    parameters and evaluates to a positive extent.
//!
//! Statements:
//! 7. Each local is declared by exactly one `Let` or `For` and used only
//!    after it, inside the declaring block; loop variables and `let`
//!    locals are immutable, `var` locals mutable.
//! 8. `Let`/`Assign` values have exactly the local's elem and shape;
//!    `Assign` targets a mutable local.
//! 9. `Store`/`AtomicAdd` target a tensor parameter marked `written`, with
//!    a scalar (non-quantized) elem; the value has that elem and exactly the
//!    slice's shape. Every tensor marked `written` is stored to somewhere.
//! 10. `For` bounds and variable are integer scalars of one dtype;
//!     `While`/`If` conditions are `bool` scalars.
//!
//! Expressions:
//! 11. Literals are scalars: `Int` has an integer dtype, `Float` a float
//!     dtype, `Bool` is `bool`.
//! 12. `Param` names a scalar parameter and has its dtype; `Dim` names a
//!     symbolic dim, `Tune` a tune parameter; both are `i32` scalars.
//!     `Local` has its local's elem and shape.
//! 13. `Load` names a tensor parameter, has one slice per tensor dim, the
//!     tensor's elem, and the slice's shape (spans give their length,
//!     `Full` the literal tensor dim; points drop the dim); `other` is a
//!     scalar of the tensor's elem. `Slice` does the same over its base's
//!     shape. Point indices and span starts are integer scalars. `Full`
//!     appears only over literal tensor dims.
//! 14. `Binary` operands share one scalar elem; the result shape is their
//!     broadcast; comparisons give `bool`, `And`/`Or` take `bool`, shifts
//!     take integers, arithmetic does not take `bool`; otherwise the
//!     result elem is the operands'.
//! 15. `Unary`: `Neg` on numbers, `Not` on `bool`, `BitNot` on integers;
//!     same elem and shape as the operand.
//! 16. `Cast` keeps the shape and has a scalar elem; its operand is not
//!     quantized. `Broadcast` keeps the elem and its operand's shape
//!     broadcasts to the node's.
//! 17. `Call` arguments and results follow [`super::Builtin`]'s docs
//!     (arity, dtypes, shapes).
//! 18. Quantized elems appear only on `Load`s of quantized tensors, on
//!     locals holding them, and as operands of `Dot`, `DotT`, `Dequant`.

use super::{
    BinOp, Block, Builtin, Config, DType, Dim, Elem, Expr, ExprKind, Kernel, LocalId, Module,
    ParamKind, Shape, ShapeExpr, Slice, StmtKind, StoreOp, UnOp,
};
use crate::span::Span;

mod builtins;

/// An IR invariant that does not hold.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("IR verifier: kernel `{kernel}`: {message}")]
pub struct VerifyError {
    pub kernel: String,
    pub message: String,
    pub span: Span,
}

/// Checks every invariant of the module doc; returns the first violation.
pub fn verify(module: &Module) -> Result<(), VerifyError> {
    for (i, k) in module.kernels.iter().enumerate() {
        if module.kernels[..i].iter().any(|o| o.name == k.name) {
            return Err(VerifyError {
                kernel: k.name.clone(),
                message: "kernel name is not unique".into(),
                span: k.span,
            });
        }
        verify_kernel(k)?;
    }
    Ok(())
}

/// Checks one kernel.
pub fn verify_kernel(k: &Kernel) -> Result<(), VerifyError> {
    let mut v = Verifier {
        k,
        configs: k.configs(),
        declared: vec![false; k.locals.len()],
        scope: Vec::new(),
        stored: Vec::new(),
    };
    v.run().map_err(|(message, span)| VerifyError {
        kernel: k.name.clone(),
        message,
        span,
    })
}

type VResult = Result<(), (String, Span)>;

struct Verifier<'k> {
    k: &'k Kernel,
    configs: Vec<Config>,
    declared: Vec<bool>,
    /// Locals visible now, innermost block last.
    scope: Vec<LocalId>,
    stored: Vec<&'k str>,
}

fn fail<T>(span: Span, message: impl Into<String>) -> Result<T, (String, Span)> {
    Err((message.into(), span))
}

fn ty(e: &Expr) -> String {
    super::print::type_to_string(e.elem, &e.shape)
}

impl<'k> Verifier<'k> {
    fn run(&mut self) -> VResult {
        let k = self.k;
        let dims = k.dims();
        for (i, p) in k.params.iter().enumerate() {
            if k.params[..i].iter().any(|q| q.name == p.name) || dims.contains(&p.name.as_str()) {
                return fail(p.span, format!("parameter name `{}` is not unique", p.name));
            }
        }
        for (i, t) in k.tune.iter().enumerate() {
            if k.tune[..i].iter().any(|o| o.name == t.name)
                || k.params.iter().any(|p| p.name == t.name)
                || dims.contains(&t.name.as_str())
            {
                return fail(
                    t.span,
                    format!("tune parameter name `{}` is not unique", t.name),
                );
            }
            if t.values.is_empty() || t.values.iter().any(|v| *v <= 0) {
                return fail(
                    t.span,
                    format!("tune parameter `{}` needs positive values", t.name),
                );
            }
            for (j, v) in t.values.iter().enumerate() {
                if t.values[..j].contains(v) {
                    return fail(t.span, format!("tune parameter `{}` repeats {v}", t.name));
                }
            }
        }
        if k.grid.is_empty() || k.grid.len() > 3 {
            return fail(
                k.span,
                format!("grid has {} entries, expected 1 to 3", k.grid.len()),
            );
        }
        for g in &k.grid {
            self.grid_expr(g)?;
        }
        if let Some(l) = &k.launch {
            let ok = (1..=1024).contains(&l.threads)
                && l.min_blocks.is_none_or(|b| b >= 1)
                && l.max_regs.is_none_or(|r| (1..=255).contains(&r));
            if !ok {
                return fail(k.span, format!("launch hints out of range: {l:?}"));
            }
        }
        for (i, l) in k.locals.iter().enumerate() {
            if k.locals[..i].iter().any(|o| o.name == l.name) {
                return fail(k.span, format!("local name `{}` is not unique", l.name));
            }
            self.shape(&l.shape, k.span)?;
        }
        self.block(&k.body)?;
        for p in &k.params {
            if let ParamKind::Tensor { written: true, .. } = p.kind
                && !self.stored.contains(&p.name.as_str())
            {
                return fail(
                    p.span,
                    format!("tensor `{}` is marked written but never stored", p.name),
                );
            }
        }
        Ok(())
    }

    fn grid_expr(&self, e: &Expr) -> VResult {
        if e.elem != Elem::Scalar(DType::I32) || !e.shape.is_scalar() {
            return fail(
                e.span,
                format!("grid entries are i32 scalars, found {}", ty(e)),
            );
        }
        match &e.kind {
            ExprKind::Int(_) => Ok(()),
            ExprKind::Dim(_) | ExprKind::Tune(_) => self.expr(e),
            ExprKind::Binary {
                op: BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem,
                lhs,
                rhs,
            } => {
                self.grid_expr(lhs)?;
                self.grid_expr(rhs)
            }
            ExprKind::Call {
                func: Builtin::Cdiv | Builtin::Min | Builtin::Max,
                args,
            } if args.len() == 2 => args.iter().try_for_each(|a| self.grid_expr(a)),
            _ => fail(
                e.span,
                "grid entries use literals, dims, tune parameters, + - * / % cdiv min max",
            ),
        }
    }

    fn shape_dim(&self, d: &ShapeExpr, span: Span) -> VResult {
        for name in d.tune_params() {
            if !self.k.tune.iter().any(|t| t.name == name) {
                return fail(
                    span,
                    format!("shape mentions `{name}`, which is not a tune parameter"),
                );
            }
        }
        for c in &self.configs {
            match d.try_eval(c) {
                Ok(v) if v > 0 => {}
                Ok(v) => return fail(span, format!("extent `{d}` is {v} for config {c}")),
                Err(e) => return fail(span, format!("extent `{d}`: {e} for config {c}")),
            }
        }
        Ok(())
    }

    fn shape(&self, s: &Shape, span: Span) -> VResult {
        s.0.iter().try_for_each(|d| self.shape_dim(d, span))
    }

    fn same_shape(&self, a: &Shape, b: &Shape) -> bool {
        a.rank() == b.rank()
            && self
                .configs
                .iter()
                .all(|c| matches!((a.try_eval(c), b.try_eval(c)), (Ok(x), Ok(y)) if x == y))
    }

    /// NumPy broadcast of two shapes per config, compared with `out`.
    fn broadcast_ok(&self, a: &Shape, b: &Shape, out: &Shape) -> bool {
        let rank = a.rank().max(b.rank());
        if out.rank() != rank {
            return false;
        }
        self.configs.iter().all(|c| {
            let (av, bv, ov) = (a.eval(c), b.eval(c), out.eval(c));
            (0..rank).all(|i| {
                let x = (i + av.len()).checked_sub(rank).map_or(1, |j| av[j]);
                let y = (i + bv.len()).checked_sub(rank).map_or(1, |j| bv[j]);
                (x == y || x == 1 || y == 1) && ov[i] == x.max(y)
            })
        })
    }

    fn block(&mut self, b: &'k Block) -> VResult {
        let mark = self.scope.len();
        for s in b {
            self.stmt(&s.kind, s.span)?;
        }
        self.scope.truncate(mark);
        Ok(())
    }

    fn declare(&mut self, id: LocalId, span: Span) -> VResult {
        match self.declared.get_mut(id.0 as usize) {
            Some(d) if !*d => {
                *d = true;
                self.scope.push(id);
                Ok(())
            }
            Some(_) => fail(span, format!("local {} is declared twice", id.0)),
            None => fail(span, format!("local id {} is out of range", id.0)),
        }
    }

    fn stmt(&mut self, kind: &'k StmtKind, span: Span) -> VResult {
        let k = self.k;
        match kind {
            StmtKind::Let { local, value } => {
                self.expr(value)?;
                self.declare(*local, span)?;
                let l = &k.locals[local.0 as usize];
                if value.elem != l.elem || !self.same_shape(&value.shape, &l.shape) {
                    return fail(
                        span,
                        format!(
                            "`{}` is {} but its value is {}",
                            l.name,
                            super::print::type_to_string(l.elem, &l.shape),
                            ty(value)
                        ),
                    );
                }
            }
            StmtKind::Assign { local, value } => {
                self.expr(value)?;
                self.use_local(*local, span)?;
                let l = &k.locals[local.0 as usize];
                if !l.mutable {
                    return fail(span, format!("assignment to immutable `{}`", l.name));
                }
                if value.elem != l.elem || !self.same_shape(&value.shape, &l.shape) {
                    return fail(
                        span,
                        format!(
                            "`{}` is {} but is assigned {}",
                            l.name,
                            super::print::type_to_string(l.elem, &l.shape),
                            ty(value)
                        ),
                    );
                }
            }
            StmtKind::Prefetch { tensor, index } => {
                self.tensor_slice(tensor, index, span)?;
            }
            StmtKind::Store {
                tensor,
                index,
                value,
                ..
            }
            | StmtKind::AtomicAdd {
                tensor,
                index,
                value,
            } => {
                self.expr(value)?;
                let (elem, shape) = self.tensor_slice(tensor, index, span)?;
                let Some(ParamKind::Tensor { written: true, .. }) =
                    k.param(tensor).map(|p| &p.kind)
                else {
                    return fail(
                        span,
                        format!("store to `{tensor}`, which is not marked written"),
                    );
                };
                let quantizing = matches!(elem, Elem::Quant(q) if q.is_writable())
                    && matches!(
                        kind,
                        StmtKind::Store {
                            op: StoreOp::Assign,
                            ..
                        }
                    );
                if elem.scalar().is_none() && !quantizing {
                    return fail(span, format!("store to quantized tensor `{tensor}`"));
                }
                let stored = if quantizing {
                    Elem::Scalar(DType::F32)
                } else {
                    elem
                };
                if value.elem != stored || !self.same_shape(&value.shape, &shape) {
                    return fail(
                        span,
                        format!(
                            "store of {} into `{tensor}` slice of {}",
                            ty(value),
                            super::print::type_to_string(elem, &shape)
                        ),
                    );
                }
                self.stored.push(tensor);
            }
            StmtKind::For {
                var,
                start,
                end,
                step,
                body,
            } => {
                for e in [start, end, step] {
                    self.expr(e)?;
                }
                let d = start.elem;
                let int_scalar = |e: &Expr| {
                    e.shape.is_scalar() && e.elem == d && e.elem.scalar().is_some_and(DType::is_int)
                };
                if ![start, end, step].into_iter().all(int_scalar) {
                    return fail(span, "`for` bounds must be integer scalars of one dtype");
                }
                let mark = self.scope.len();
                self.declare(*var, span)?;
                let l = &k.locals[var.0 as usize];
                if l.mutable || l.elem != d || !l.shape.is_scalar() {
                    return fail(
                        span,
                        format!(
                            "loop variable `{}` must be an immutable scalar of the bounds' dtype",
                            l.name
                        ),
                    );
                }
                self.block(body)?;
                self.scope.truncate(mark);
            }
            StmtKind::While { cond, body } => {
                self.cond(cond)?;
                self.block(body)?;
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                self.cond(cond)?;
                self.block(then_body)?;
                self.block(else_body)?;
            }
            StmtKind::Expr(e) => self.expr(e)?,
        }
        Ok(())
    }

    fn cond(&self, e: &Expr) -> VResult {
        self.expr(e)?;
        if e.elem != Elem::Scalar(DType::Bool) || !e.shape.is_scalar() {
            return fail(
                e.span,
                format!("condition must be a bool scalar, found {}", ty(e)),
            );
        }
        Ok(())
    }

    fn use_local(&self, id: LocalId, span: Span) -> VResult {
        if (id.0 as usize) >= self.k.locals.len() {
            return fail(span, format!("local id {} is out of range", id.0));
        }
        if !self.scope.contains(&id) {
            return fail(
                span,
                format!(
                    "`{}` is used outside its scope or before its declaration",
                    self.k.locals[id.0 as usize].name
                ),
            );
        }
        Ok(())
    }

    /// The elem and shape a tensor slice selects.
    fn tensor_slice(
        &self,
        tensor: &str,
        index: &[Slice],
        span: Span,
    ) -> Result<(Elem, Shape), (String, Span)> {
        let Some(ParamKind::Tensor { elem, dims, .. }) = self.k.param(tensor).map(|p| &p.kind)
        else {
            return fail(span, format!("`{tensor}` is not a tensor parameter"));
        };
        if index.len() != dims.len() {
            return fail(
                span,
                format!(
                    "`{tensor}` has {} dims but {} slices",
                    dims.len(),
                    index.len()
                ),
            );
        }
        let mut shape = Vec::new();
        for (s, d) in index.iter().zip(dims) {
            match s {
                Slice::Point(e) => self.index(e)?,
                Slice::Span { start, len } => {
                    self.index(start)?;
                    self.shape_dim(len, span)?;
                    shape.push(len.clone());
                }
                Slice::Full => match d {
                    Dim::Lit(v) => shape.push(ShapeExpr::Lit(*v)),
                    Dim::Sym(n) => {
                        return fail(
                            span,
                            format!("`full` over symbolic dim `{n}` of `{tensor}`"),
                        );
                    }
                },
            }
        }
        Ok((*elem, Shape(shape)))
    }

    fn index(&self, e: &Expr) -> VResult {
        self.expr(e)?;
        if !e.shape.is_scalar() || !e.elem.scalar().is_some_and(DType::is_int) {
            return fail(
                e.span,
                format!("index must be an integer scalar, found {}", ty(e)),
            );
        }
        Ok(())
    }

    fn no_quant(&self, e: &Expr) -> VResult {
        if let Elem::Quant(q) = e.elem {
            return fail(
                e.span,
                format!("quantized {q} value used outside dot, dot_t, dequant"),
            );
        }
        Ok(())
    }

    fn expr(&self, e: &Expr) -> VResult {
        self.shape(&e.shape, e.span)?;
        let span = e.span;
        let scalar_dtype = e.elem.scalar();
        match &e.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) => {
                let ok = e.shape.is_scalar()
                    && match (&e.kind, scalar_dtype) {
                        (ExprKind::Int(_), Some(d)) => d.is_int(),
                        (ExprKind::Float(_), Some(d)) => d.is_float(),
                        (ExprKind::Bool(_), Some(d)) => d == DType::Bool,
                        _ => false,
                    };
                if !ok {
                    return fail(span, format!("literal of type {}", ty(e)));
                }
            }
            ExprKind::Local(id) => {
                self.use_local(*id, span)?;
                let l = &self.k.locals[id.0 as usize];
                if l.elem != e.elem || l.shape != e.shape {
                    return fail(
                        span,
                        format!(
                            "`{}` read as {} but declared {}",
                            l.name,
                            ty(e),
                            super::print::type_to_string(l.elem, &l.shape)
                        ),
                    );
                }
            }
            ExprKind::Param(n) => match self.k.param(n).map(|p| &p.kind) {
                Some(ParamKind::Scalar { dtype })
                    if e.elem == Elem::Scalar(*dtype) && e.shape.is_scalar() => {}
                _ => {
                    return fail(
                        span,
                        format!("`param({n})` is not a scalar parameter of type {}", ty(e)),
                    );
                }
            },
            ExprKind::Dim(n) | ExprKind::Tune(n) => {
                let known = match &e.kind {
                    ExprKind::Dim(_) => self.k.dims().contains(&n.as_str()),
                    _ => self.k.tune.iter().any(|t| &t.name == n),
                };
                if !known || e.elem != Elem::Scalar(DType::I32) || !e.shape.is_scalar() {
                    return fail(
                        span,
                        format!("`{n}` is not a known i32 dim or tune parameter"),
                    );
                }
            }
            ExprKind::Load {
                tensor,
                index,
                other,
            } => {
                let (elem, shape) = self.tensor_slice(tensor, index, span)?;
                if e.elem != elem || !self.same_shape(&e.shape, &shape) {
                    return fail(
                        span,
                        format!(
                            "load of `{tensor}` typed {} but selects {}",
                            ty(e),
                            super::print::type_to_string(elem, &shape)
                        ),
                    );
                }
                if let Some(o) = other {
                    self.expr(o)?;
                    if o.elem != elem || !o.shape.is_scalar() {
                        return fail(
                            span,
                            format!("load fill value {} for a {elem} tensor", ty(o)),
                        );
                    }
                }
            }
            ExprKind::Slice { base, index } => {
                self.expr(base)?;
                if index.len() != base.shape.rank() {
                    return fail(span, "tile slice needs one slice per dim");
                }
                let mut dims = Vec::new();
                for (s, d) in index.iter().zip(&base.shape.0) {
                    match s {
                        Slice::Point(p) => self.index(p)?,
                        Slice::Span { start, len } => {
                            self.index(start)?;
                            dims.push(len.clone());
                        }
                        Slice::Full => dims.push(d.clone()),
                    }
                }
                if e.elem != base.elem || !self.same_shape(&e.shape, &Shape(dims)) {
                    return fail(span, "tile slice type does not match what it selects");
                }
            }
            ExprKind::Unary { op, arg } => {
                self.expr(arg)?;
                self.no_quant(arg)?;
                let d = arg.dtype();
                let ok = match op {
                    UnOp::Neg => d.is_int() || d.is_float(),
                    UnOp::Not => d == DType::Bool,
                    UnOp::BitNot => d.is_int(),
                };
                if !ok || e.elem != arg.elem || e.shape != arg.shape {
                    return fail(span, format!("{op:?} on {} typed {}", ty(arg), ty(e)));
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                self.expr(lhs)?;
                self.expr(rhs)?;
                self.no_quant(lhs)?;
                self.no_quant(rhs)?;
                if lhs.elem != rhs.elem {
                    return fail(
                        span,
                        format!("{op:?} operands differ: {} and {}", ty(lhs), ty(rhs)),
                    );
                }
                let d = lhs.dtype();
                let (ok, out) = match op {
                    BinOp::And | BinOp::Or => (d == DType::Bool, DType::Bool),
                    o if o.is_comparison() => (true, DType::Bool),
                    BinOp::Shl | BinOp::Shr => (d.is_int(), d),
                    BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => {
                        (d.is_int() || d == DType::Bool, d)
                    }
                    _ => (d != DType::Bool, d),
                };
                if !ok || e.elem != Elem::Scalar(out) {
                    return fail(span, format!("{op:?} of {} typed {}", ty(lhs), ty(e)));
                }
                if !self.broadcast_ok(&lhs.shape, &rhs.shape, &e.shape) {
                    return fail(
                        span,
                        format!(
                            "{op:?} of shapes {} and {} typed {}",
                            lhs.shape, rhs.shape, e.shape
                        ),
                    );
                }
            }
            ExprKind::Cast(arg) => {
                self.expr(arg)?;
                self.no_quant(arg)?;
                if scalar_dtype.is_none() || !self.same_shape(&arg.shape, &e.shape) {
                    return fail(span, format!("cast of {} to {}", ty(arg), ty(e)));
                }
            }
            ExprKind::Broadcast(arg) => {
                self.expr(arg)?;
                if arg.elem != e.elem
                    || arg.shape.rank() > e.shape.rank()
                    || !self.broadcast_ok(&arg.shape, &e.shape, &e.shape)
                {
                    return fail(span, format!("broadcast of {} to {}", ty(arg), ty(e)));
                }
            }
            ExprKind::Call { func, args } => {
                for a in args {
                    self.expr(a)?;
                }
                self.call(*func, args, e)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
