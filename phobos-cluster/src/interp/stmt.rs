//! Statements, mirroring the host back end, including its in-place update
//! of tile `var`s (`acc = acc * s + dot(p, v)` becomes `mul_assign` then
//! `dot_acc`), which rounds differently from the out-of-place form.

use phobos_build::ir::{
    BinOp, Builtin, DType, Expr, ExprKind, LocalId, Shape, Slice, Stmt, StmtKind, StoreOp,
};
use phobos_rt::host::{self, Tile};
use phobos_rt::{DotElement, Num};

use super::value::Val;
use super::views::{Access, ValElement, scalar_of, tile_of, with_view};
use super::{Frame, InterpError, Program};

impl Program<'_> {
    pub(super) fn block(&self, f: &mut Frame<'_>, stmts: &[Stmt]) -> Result<(), InterpError> {
        for s in stmts {
            self.stmt(f, s)?;
        }
        Ok(())
    }

    fn stmt(&self, f: &mut Frame<'_>, stmt: &Stmt) -> Result<(), InterpError> {
        match &stmt.kind {
            StmtKind::Let { local, value } => {
                let v = self.eval(f, value)?;
                set(f, *local, v);
            }
            StmtKind::Assign { local, value } => {
                if !value.is_scalar() && self.in_place_update(f, *local, value)? {
                    return Ok(());
                }
                let v = self.eval(f, value)?;
                set(f, *local, v);
            }
            StmtKind::Store {
                tensor,
                index,
                op,
                value,
            } => {
                let slices = self.tensor_slices(f, tensor, index)?;
                let stored = match op {
                    StoreOp::Assign => self.eval(f, value)?,
                    _ => self.eval(f, &read_modify(tensor, index, *op, value))?,
                };
                let view = self.view(tensor)?;
                let scalar = value.is_scalar();
                with_view!(view, |a| store(a, &slices, &stored, scalar))?;
            }
            // A hint: the interpreter has no caches to warm.
            StmtKind::Prefetch { .. } => {}
            StmtKind::AtomicAdd {
                tensor,
                index,
                value,
            } => {
                let slices = self.tensor_slices(f, tensor, index)?;
                let v = self.eval(f, value)?;
                let view = self.view(tensor)?;
                let scalar = value.is_scalar();
                with_view!(view, |a| atomic(a, &slices, &v, scalar))?;
            }
            StmtKind::For {
                var,
                start,
                end,
                step,
                body,
            } => {
                let (start_v, end_v, step_v) = (
                    self.eval(f, start)?,
                    self.eval(f, end)?,
                    self.eval(f, step)?,
                );
                let dtype = start_v.dtype();
                let as_int = |v: &Val| {
                    v.as_i64().ok_or(InterpError::Type {
                        op: "for",
                        found: v.dtype().name().into(),
                    })
                };
                let (mut next, end, step) = (as_int(&start_v)?, as_int(&end_v)?, as_int(&step_v)?);
                if step == 0 {
                    return Err(InterpError::LoopStepZero {
                        kernel: self.kernel.name.clone(),
                        var: self
                            .kernel
                            .local(*var)
                            .map_or_else(String::new, |l| l.name.clone()),
                    });
                }
                let (lo, hi) = int_range(dtype);
                while (step > 0 && next < end) || (step < 0 && next > end) {
                    set(f, *var, Val::int_scalar(dtype, next));
                    self.block(f, body)?;
                    // Overflowing the counter's type ends the loop, as in
                    // the generated `checked_add`.
                    match next
                        .checked_add(step)
                        .filter(|n| (lo..=hi).contains(&(*n as i128)))
                    {
                        Some(n) => next = n,
                        None => break,
                    }
                }
            }
            StmtKind::While { cond, body } => {
                while self.cond(f, cond)? {
                    self.block(f, body)?;
                }
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                if self.cond(f, cond)? {
                    self.block(f, then_body)?;
                } else {
                    self.block(f, else_body)?;
                }
            }
            StmtKind::Expr(e) => {
                self.eval(f, e)?;
            }
        }
        Ok(())
    }

    fn cond(&self, f: &Frame<'_>, e: &Expr) -> Result<bool, InterpError> {
        let v = self.eval(f, e)?;
        v.as_bool().ok_or(InterpError::Type {
            op: "condition",
            found: v.dtype().name().into(),
        })
    }

    /// The back end's in-place chain; false when `value` is not one.
    fn in_place_update(
        &self,
        f: &mut Frame<'_>,
        local: LocalId,
        value: &Expr,
    ) -> Result<bool, InterpError> {
        let mut steps = Vec::new();
        if !collect_chain(local, value, &value.shape, &mut steps) || steps.is_empty() {
            return Ok(false);
        }
        for step in steps {
            match step {
                Step::Contract { transposed, a, b } => {
                    let (a, b) = (self.eval(f, a)?, self.eval(f, b)?);
                    let target = target(f, local)?;
                    dot_acc_val(target, &a, &b, transposed)?;
                }
                Step::Elementwise { function, rhs } => {
                    let rhs = self.eval(f, rhs)?;
                    let target = target(f, local)?;
                    assign_val(target, &rhs, function)?;
                }
            }
        }
        Ok(true)
    }
}

fn set(f: &mut Frame<'_>, id: LocalId, v: Val) {
    if let Some(slot) = f.locals.get_mut(id.0 as usize) {
        *slot = Some(v);
    }
}

fn target<'f>(f: &'f mut Frame<'_>, id: LocalId) -> Result<&'f mut Val, InterpError> {
    let name = f
        .kernel
        .local(id)
        .map_or_else(String::new, |l| l.name.clone());
    f.locals
        .get_mut(id.0 as usize)
        .and_then(Option::as_mut)
        .ok_or(InterpError::Unset { name })
}

fn int_range(dtype: DType) -> (i128, i128) {
    match dtype {
        DType::I8 => (i8::MIN.into(), i8::MAX.into()),
        DType::U8 => (0, u8::MAX.into()),
        DType::I16 => (i16::MIN.into(), i16::MAX.into()),
        DType::U16 => (0, u16::MAX.into()),
        DType::I32 => (i32::MIN.into(), i32::MAX.into()),
        DType::U32 => (0, u32::MAX.into()),
        _ => (i64::MIN.into(), i64::MAX.into()),
    }
}

fn store<T: ValElement>(
    a: &Access<'_, T>,
    slices: &[host::Slice],
    v: &Val,
    scalar: bool,
) -> Result<(), InterpError> {
    let Access::Write(view) = a else {
        return Err(InterpError::Unsupported {
            what: "a store to a read-only tensor".into(),
        });
    };
    if scalar {
        host::store_scalar(view, slices, scalar_of::<T>(v, "store")?)?;
    } else {
        host::store(view, slices, tile_of::<T>(v, "store")?)?;
    }
    Ok(())
}

/// `atomic_add` needs `Num`: each element type says how (bool refuses).
fn atomic<T: AtomicDispatch>(
    a: &Access<'_, T>,
    slices: &[host::Slice],
    v: &Val,
    scalar: bool,
) -> Result<(), InterpError> {
    T::atomic(a, slices, v, scalar)
}

trait AtomicDispatch: ValElement {
    fn atomic(
        view: &Access<'_, Self>,
        slices: &[host::Slice],
        v: &Val,
        scalar: bool,
    ) -> Result<(), InterpError>;
}

macro_rules! atomic_num_impl {
    ($($t:ty),*) => {$(
        impl AtomicDispatch for $t {
            fn atomic(view: &Access<'_, Self>, slices: &[host::Slice], v: &Val, scalar: bool) -> Result<(), InterpError> {
                let Access::Write(view) = view else {
                    return Err(InterpError::Unsupported { what: "atomic_add to a read-only tensor".into() });
                };
                if scalar {
                    host::atomic_add_scalar(view, slices, scalar_of::<$t>(v, "atomic_add")?)?;
                } else {
                    host::atomic_add(view, slices, tile_of::<$t>(v, "atomic_add")?)?;
                }
                Ok(())
            }
        }
    )*};
}
atomic_num_impl!(
    i8,
    u8,
    i16,
    u16,
    i32,
    u32,
    i64,
    half::f16,
    half::bf16,
    f32,
    f64
);

impl AtomicDispatch for bool {
    fn atomic(
        _: &Access<'_, Self>,
        _: &[host::Slice],
        _: &Val,
        _: bool,
    ) -> Result<(), InterpError> {
        Err(InterpError::Unsupported {
            what: "atomic_add on bool".into(),
        })
    }
}

/// `target += a @ b` (or `a @ b^T`) with the tile library's fused form.
fn dot_acc_val(target: &mut Val, a: &Val, b: &Val, transposed: bool) -> Result<(), InterpError> {
    fn go<T: DotElement + ValElement>(
        target: &mut Val,
        a: &Tile<T>,
        b: &Tile<T>,
        transposed: bool,
    ) -> Result<(), InterpError>
    where
        T::Acc: ValElement,
    {
        let found = target.dtype().name();
        let acc = <T::Acc as ValElement>::tile_mut(target).ok_or_else(|| InterpError::Type {
            op: "dot accumulate",
            found: found.into(),
        })?;
        if transposed {
            host::dot_t_acc(acc, a, b)?;
        } else {
            host::dot_acc(acc, a, b)?;
        }
        Ok(())
    }
    match (a, b) {
        (Val::I8(x), Val::I8(y)) => go(target, x, y, transposed),
        (Val::U8(x), Val::U8(y)) => go(target, x, y, transposed),
        (Val::I16(x), Val::I16(y)) => go(target, x, y, transposed),
        (Val::U16(x), Val::U16(y)) => go(target, x, y, transposed),
        (Val::I32(x), Val::I32(y)) => go(target, x, y, transposed),
        (Val::U32(x), Val::U32(y)) => go(target, x, y, transposed),
        (Val::I64(x), Val::I64(y)) => go(target, x, y, transposed),
        (Val::F16(x), Val::F16(y)) => go(target, x, y, transposed),
        (Val::Bf16(x), Val::Bf16(y)) => go(target, x, y, transposed),
        (Val::F32(x), Val::F32(y)) => go(target, x, y, transposed),
        (Val::F64(x), Val::F64(y)) => go(target, x, y, transposed),
        _ => Err(InterpError::Type {
            op: "dot",
            found: format!("{} and {}", a.dtype().name(), b.dtype().name()),
        }),
    }
}

/// `target = function(target, rhs)` through the library's `*_assign`.
fn assign_val(target: &mut Val, rhs: &Val, function: &'static str) -> Result<(), InterpError> {
    fn num<T: Num + ValElement>(
        acc: &mut Tile<T>,
        rhs: &Val,
        function: &'static str,
    ) -> Result<(), InterpError> {
        let rhs = tile_of::<T>(rhs, function)?;
        match function {
            "add_assign" => host::add_assign(acc, rhs)?,
            "sub_assign" => host::sub_assign(acc, rhs)?,
            "mul_assign" => host::mul_assign(acc, rhs)?,
            "div_assign" => host::div_assign(acc, rhs)?,
            _ => host::max_assign(acc, rhs)?,
        }
        Ok(())
    }
    match target {
        Val::I8(t) => num(t, rhs, function),
        Val::U8(t) => num(t, rhs, function),
        Val::I16(t) => num(t, rhs, function),
        Val::U16(t) => num(t, rhs, function),
        Val::I32(t) => num(t, rhs, function),
        Val::U32(t) => num(t, rhs, function),
        Val::I64(t) => num(t, rhs, function),
        Val::F16(t) => num(t, rhs, function),
        Val::Bf16(t) => num(t, rhs, function),
        Val::F32(t) => num(t, rhs, function),
        Val::F64(t) => num(t, rhs, function),
        Val::Bool(t) if function == "max_assign" => {
            host::max_assign(t, tile_of::<bool>(rhs, function)?)?;
            Ok(())
        }
        Val::Bool(_) => Err(InterpError::Type {
            op: function,
            found: "bool".into(),
        }),
    }
}

/// `old op value` for a compound store, reading the old value with the
/// same mask.
fn read_modify(tensor: &str, index: &[Slice], op: StoreOp, value: &Expr) -> Expr {
    let old = Expr {
        kind: ExprKind::Load {
            tensor: tensor.to_string(),
            index: index.to_vec(),
            other: None,
        },
        ..value.clone()
    };
    let kind = match op {
        StoreOp::Max => ExprKind::Call {
            func: Builtin::Max,
            args: vec![old, value.clone()],
        },
        _ => ExprKind::Binary {
            op: match op {
                StoreOp::Add => BinOp::Add,
                StoreOp::Sub => BinOp::Sub,
                StoreOp::Mul => BinOp::Mul,
                _ => BinOp::Div,
            },
            lhs: Box::new(old),
            rhs: Box::new(value.clone()),
        },
    };
    Expr {
        kind,
        ..value.clone()
    }
}

enum Step<'e> {
    Contract {
        transposed: bool,
        a: &'e Expr,
        b: &'e Expr,
    },
    Elementwise {
        function: &'static str,
        rhs: &'e Expr,
    },
}

/// The steps of `e` when it is a chain of `+ - * /` and `max` whose
/// innermost left operand is `target` (the back end's rule, exactly).
fn collect_chain<'e>(
    target: LocalId,
    e: &'e Expr,
    shape: &Shape,
    steps: &mut Vec<Step<'e>>,
) -> bool {
    if &e.shape != shape {
        return false;
    }
    match &e.kind {
        ExprKind::Local(id) => *id == target,
        ExprKind::Binary { op, lhs, rhs } => {
            let function = match op {
                BinOp::Add => "add_assign",
                BinOp::Sub => "sub_assign",
                BinOp::Mul => "mul_assign",
                BinOp::Div => "div_assign",
                _ => return false,
            };
            if mentions(rhs, target) || !collect_chain(target, lhs, shape, steps) {
                return false;
            }
            steps.push(match &rhs.kind {
                ExprKind::Call {
                    func: func @ (Builtin::Dot | Builtin::DotT),
                    args,
                } if *op == BinOp::Add && &rhs.shape == shape && args.len() == 2 => {
                    Step::Contract {
                        transposed: *func == Builtin::DotT,
                        a: &args[0],
                        b: &args[1],
                    }
                }
                _ => Step::Elementwise { function, rhs },
            });
            true
        }
        ExprKind::Call {
            func: Builtin::Max,
            args,
        } if args.len() == 2 => {
            if mentions(&args[1], target) || !collect_chain(target, &args[0], shape, steps) {
                return false;
            }
            steps.push(Step::Elementwise {
                function: "max_assign",
                rhs: &args[1],
            });
            true
        }
        _ => false,
    }
}

fn mentions(e: &Expr, target: LocalId) -> bool {
    let in_slices = |index: &[Slice]| {
        index.iter().any(|s| match s {
            Slice::Point(i) => mentions(i, target),
            Slice::Span { start, .. } => mentions(start, target),
            Slice::Full => false,
        })
    };
    match &e.kind {
        ExprKind::Local(id) => *id == target,
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Bool(_)
        | ExprKind::Param(_)
        | ExprKind::Dim(_)
        | ExprKind::Tune(_) => false,
        ExprKind::Load { index, other, .. } => {
            in_slices(index) || other.as_deref().is_some_and(|o| mentions(o, target))
        }
        ExprKind::Slice { base, index } => mentions(base, target) || in_slices(index),
        ExprKind::Unary { arg, .. } | ExprKind::Cast(arg) | ExprKind::Broadcast(arg) => {
            mentions(arg, target)
        }
        ExprKind::Binary { lhs, rhs, .. } => mentions(lhs, target) || mentions(rhs, target),
        ExprKind::Call { args, .. } => args.iter().any(|a| mentions(a, target)),
    }
}
