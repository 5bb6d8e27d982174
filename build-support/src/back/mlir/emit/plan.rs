//! Decides, per config, where each tile local lives and how many threads a
//! CTA has.
//!
//! Every tile is spread over the CTA's threads cyclically: element `e` (row
//! major) belongs to thread `e % threads`, in that thread's slot
//! `e / threads`. A tile local that is only ever read by the thread owning
//! each element (elementwise use at the same shape) stays in that thread's
//! private slots, which LLVM keeps in registers. Any other read (broadcast
//! across a stretched dim, slicing, transpose, reductions, dot operands)
//! needs other threads' elements, so such a local lives in shared memory.

use std::collections::HashMap;

use crate::ir::{Builtin, Config, Expr, ExprKind, Kernel, LocalId, Slice, Stmt, StmtKind};

use super::super::MlirError;

/// Where a tile local is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TileHome {
    /// The owning thread's slots: registers.
    Private,
    /// Shared memory, readable by every thread of the CTA.
    Shared,
}

pub(crate) struct Plan {
    pub homes: HashMap<LocalId, TileHome>,
    /// The largest tile (elements) any expression or local has.
    pub max_tile_elements: i64,
    /// Every `dot`/`dot_t` in the kernel (for `@tensorcore`).
    pub contractions: Vec<Contraction>,
}

/// One `dot`/`dot_t` call: what decides whether tensor cores can run it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Contraction {
    pub func: Builtin,
    /// Operand element types (`None`: quantized).
    pub a: Option<crate::ir::DType>,
    pub b: Option<crate::ir::DType>,
    pub result: Option<crate::ir::DType>,
    /// Result `[M, N]` and the contracted extent `K`.
    pub m: i64,
    pub n: i64,
    pub k: i64,
}

/// Extents of `shape` under `config`, or a config error.
pub(crate) fn extents(shape: &crate::ir::Shape, config: &Config) -> Result<Vec<i64>, MlirError> {
    shape.try_eval(config).map_err(|e| MlirError::Config {
        config: config.to_string(),
        message: format!("shape {shape}: {e}"),
    })
}

/// True when a child read at the parent's coordinates is the same element
/// the parent's owner thread holds: same extents in every dim.
pub(crate) fn same_extents(a: &Expr, b: &Expr, config: &Config) -> bool {
    a.shape.rank() == b.shape.rank()
        && matches!(
            (a.shape.try_eval(config), b.shape.try_eval(config)),
            (Ok(x), Ok(y)) if x == y
        )
}

/// Built-ins computed element by element from operands at the same
/// coordinates (after NumPy broadcasting).
pub(crate) fn is_elementwise(func: Builtin) -> bool {
    func.is_float_unary()
        || matches!(
            func,
            Builtin::Abs | Builtin::Min | Builtin::Max | Builtin::Where | Builtin::Tril
        )
}

pub(crate) fn plan(kernel: &Kernel, config: &Config) -> Result<Plan, MlirError> {
    let mut planner = Planner {
        config,
        homes: HashMap::new(),
        max_tile_elements: 1,
        contractions: Vec::new(),
    };
    for (i, local) in kernel.locals.iter().enumerate() {
        if !local.shape.is_scalar() {
            let n: i64 = extents(&local.shape, config)?.iter().product();
            planner.max_tile_elements = planner.max_tile_elements.max(n);
            planner.homes.insert(LocalId(i as u32), TileHome::Private);
        }
    }
    planner.block(&kernel.body)?;
    Ok(Plan {
        homes: planner.homes,
        max_tile_elements: planner.max_tile_elements,
        contractions: planner.contractions,
    })
}

struct Planner<'k> {
    config: &'k Config,
    homes: HashMap<LocalId, TileHome>,
    max_tile_elements: i64,
    contractions: Vec<Contraction>,
}

impl Planner<'_> {
    fn block(&mut self, block: &[Stmt]) -> Result<(), MlirError> {
        for stmt in block {
            self.stmt(stmt)?;
        }
        Ok(())
    }

    fn stmt(&mut self, stmt: &Stmt) -> Result<(), MlirError> {
        match &stmt.kind {
            StmtKind::Let { value, .. } | StmtKind::Assign { value, .. } => {
                self.expr(value, !value.is_scalar())
            }
            StmtKind::Store { index, value, .. } | StmtKind::AtomicAdd { index, value, .. } => {
                self.slices(index)?;
                self.expr(value, !value.is_scalar())
            }
            // Emits nothing (see `Emitter::stmt`), so plans nothing.
            StmtKind::Prefetch { .. } => Ok(()),
            StmtKind::For {
                start,
                end,
                step,
                body,
                ..
            } => {
                self.expr(start, false)?;
                self.expr(end, false)?;
                self.expr(step, false)?;
                self.block(body)
            }
            StmtKind::While { cond, body } => {
                self.expr(cond, false)?;
                self.block(body)
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                self.expr(cond, false)?;
                self.block(then_body)?;
                self.block(else_body)
            }
            StmtKind::Expr(e) => self.expr(e, false),
        }
    }

    fn slices(&mut self, index: &[Slice]) -> Result<(), MlirError> {
        for s in index {
            match s {
                Slice::Point(e) | Slice::Span { start: e, .. } => self.expr(e, false)?,
                Slice::Full => {}
            }
        }
        Ok(())
    }

    /// `identity`: the expression is read by the thread that owns each of
    /// its elements (see the module doc).
    fn expr(&mut self, e: &Expr, identity: bool) -> Result<(), MlirError> {
        if !e.is_scalar() {
            let n: i64 = extents(&e.shape, self.config)?.iter().product();
            self.max_tile_elements = self.max_tile_elements.max(n);
        }
        let same = |child: &Expr| identity && same_extents(child, e, self.config);
        match &e.kind {
            ExprKind::Local(id) => {
                if !identity && let Some(home) = self.homes.get_mut(id) {
                    *home = TileHome::Shared;
                }
                Ok(())
            }
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Bool(_)
            | ExprKind::Param(_)
            | ExprKind::Dim(_)
            | ExprKind::Tune(_) => Ok(()),
            ExprKind::Load { index, other, .. } => {
                self.slices(index)?;
                if let Some(o) = other {
                    self.expr(o, false)?;
                }
                Ok(())
            }
            ExprKind::Slice { base, index } => {
                self.slices(index)?;
                self.expr(base, false)
            }
            ExprKind::Unary { arg, .. } => self.expr(arg, same(arg)),
            ExprKind::Binary { lhs, rhs, .. } => {
                self.expr(lhs, same(lhs))?;
                self.expr(rhs, same(rhs))
            }
            ExprKind::Cast(child) | ExprKind::Broadcast(child) => self.expr(child, same(child)),
            ExprKind::Call { func, args } => {
                if let (Builtin::Dot | Builtin::DotT, [a, b]) = (func, args.as_slice()) {
                    self.contraction(*func, e, a, b)?;
                }
                let elementwise = is_elementwise(*func);
                for a in args {
                    let identity_here = elementwise && same(a);
                    self.expr(a, identity_here)?;
                }
                Ok(())
            }
        }
    }

    fn contraction(
        &mut self,
        func: Builtin,
        e: &Expr,
        a: &Expr,
        b: &Expr,
    ) -> Result<(), MlirError> {
        let out = extents(&e.shape, self.config)?;
        let a_ext = extents(&a.shape, self.config)?;
        if let ([m, n], [_, k]) = (out.as_slice(), a_ext.as_slice()) {
            self.contractions.push(Contraction {
                func,
                a: a.elem.scalar(),
                b: b.elem.scalar(),
                result: e.elem.scalar(),
                m: *m,
                n: *n,
                k: *k,
            });
        }
        Ok(())
    }
}
