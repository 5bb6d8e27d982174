//! Statements: element loops for tile values, structured control flow,
//! stores and atomics, and the barriers around shared memory.

use crate::ir::{BinOp, Builtin, DType, Expr, ExprKind, LocalId, Slice, Stmt, StmtKind, StoreOp};

use super::{
    At, Emitter, Hoisted, LocalHome,
    plan::{self, TileHome},
    reduce::Reduce,
    text::{Space, Ty, Val},
};
use crate::back::mlir::MlirError;

impl<'k> Emitter<'k> {
    pub(super) fn block(&mut self, block: &[Stmt]) -> Result<(), MlirError> {
        for stmt in block {
            self.stmt(stmt)?;
            self.end_statement();
        }
        Ok(())
    }

    pub(super) fn stmt(&mut self, stmt: &Stmt) -> Result<(), MlirError> {
        match &stmt.kind {
            StmtKind::Let { local, value } => self.define(*local, value, true),
            StmtKind::Assign { local, value } => self.define(*local, value, false),
            StmtKind::Store {
                tensor,
                index,
                op,
                value,
            } => self.store(tensor, index, Some(*op), value),
            StmtKind::AtomicAdd {
                tensor,
                index,
                value,
            } => self.store(tensor, index, None, value),
            // A hint only, and nothing is emitted: a GPU hides memory
            // latency with the warps it keeps in flight, and no kernel has
            // been measured to gain from `prefetch.global` there yet.
            StmtKind::Prefetch { .. } => Ok(()),
            StmtKind::For {
                var,
                start,
                end,
                step,
                body,
            } => self.for_loop(*var, start, end, step, body),
            StmtKind::While { cond, body } => {
                self.t.open("scf.while : () -> () {");
                let c = self.scalar(cond)?;
                self.end_statement();
                self.t.line(format!("scf.condition({c})"));
                self.t.reopen("} do {");
                self.block(body)?;
                self.t.line("scf.yield");
                self.t.close("}");
                Ok(())
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                let c = self.scalar(cond)?;
                self.end_statement();
                self.t.open(format!("scf.if {c} {{"));
                self.block(then_body)?;
                if else_body.is_empty() {
                    self.t.close("}");
                } else {
                    self.t.reopen("} else {");
                    self.block(else_body)?;
                    self.t.close("}");
                }
                Ok(())
            }
            // Expressions have no effects; nothing to run.
            StmtKind::Expr(_) => Ok(()),
        }
    }

    /// Evaluates a scalar expression (uniform across the CTA).
    pub(super) fn scalar(&mut self, e: &Expr) -> Result<Val, MlirError> {
        self.prepare(e, false)?;
        self.eval(e, &At::scalar())
    }

    /// `let`/`var` (first = true) or assignment to a local.
    fn define(&mut self, local: LocalId, value: &Expr, first: bool) -> Result<(), MlirError> {
        let info = self
            .kernel
            .local(local)
            .ok_or_else(|| MlirError::unsupported(format!("unknown local #{}", local.0)))?;
        if info.elem.is_quant() {
            return self.define_quant_local(local, value);
        }
        let dtype = info
            .elem
            .scalar()
            .ok_or_else(|| MlirError::unsupported(format!("quantized local `{}`", info.name)))?;
        if info.shape.is_scalar() {
            let v = self.scalar(value)?;
            if first && !info.mutable {
                self.locals.insert(local, LocalHome::Ssa(v));
                return Ok(());
            }
            let buf = match self.locals.get(&local) {
                Some(LocalHome::ScalarVar(buf)) => *buf,
                _ => {
                    let buf = self.new_buffer(Ty::in_memory(dtype), 1, Space::Private);
                    self.locals.insert(local, LocalHome::ScalarVar(buf));
                    buf
                }
            };
            let zero = self.const_i32(0);
            let mem = self.stored_value(v, dtype);
            self.buffer_store(buf, &zero, &mem);
            return Ok(());
        }
        let extents = plan::extents(&info.shape, self.config)?;
        let n: i64 = extents.iter().product();
        let home = self
            .plan
            .homes
            .get(&local)
            .copied()
            .unwrap_or(TileHome::Shared);
        let buf = match self.locals.get(&local) {
            Some(LocalHome::Tile(buf, _)) => *buf,
            _ => {
                let buf = match home {
                    TileHome::Private => {
                        let slots = self.slots_for(&extents);
                        self.new_buffer(Ty::in_memory(dtype), slots, Space::Private)
                    }
                    TileHome::Shared => {
                        self.new_buffer(Ty::in_memory(dtype), n as u64, Space::Workgroup)
                    }
                };
                self.locals.insert(local, LocalHome::Tile(buf, home));
                buf
            }
        };
        if !first && self.accumulate_on_tensor_cores(local, buf, value)? {
            return Ok(());
        }
        // Reading the destination at other threads' elements while
        // writing it would race: compute into a temporary first.
        let source_is_temp = home == TileHome::Shared && reads_off_owner(value, local, self.config);
        self.prepare(value, true)?;
        if source_is_temp {
            self.materialize(value)?;
        }
        if home == TileHome::Shared {
            self.barrier();
        }
        self.for_each_owned_element(&extents, &mut |em: &mut Emitter<'k>, at: &At| {
            let v = em.eval(value, at)?;
            let mem = em.stored_value(v, dtype);
            match home {
                TileHome::Private => {
                    let slot = at.slot.clone().ok_or_else(|| {
                        MlirError::unsupported("element loop without a slot (compiler bug)")
                    })?;
                    em.buffer_store(buf, &slot, &mem);
                }
                TileHome::Shared => {
                    let lin = em.linear(&at.idx, &extents);
                    em.buffer_store(buf, &lin, &mem);
                }
            }
            Ok(())
        })?;
        if home == TileHome::Shared {
            self.barrier();
        }
        Ok(())
    }

    /// Computes what a statement needs before its element loop: scalar
    /// subexpressions (once, uniformly), dot operands into shared memory,
    /// and reductions whose elements other threads read.
    pub(super) fn prepare(&mut self, e: &Expr, identity: bool) -> Result<(), MlirError> {
        if self.hoisted.contains_key(&(e as *const Expr)) {
            return Ok(());
        }
        if e.is_scalar() {
            if is_leaf(e) {
                return Ok(());
            }
            for child in children(e) {
                self.prepare(child, false)?;
            }
            let v = self.eval(e, &At::scalar())?;
            self.hoisted.insert(e as *const Expr, Hoisted::Scalar(v));
            return Ok(());
        }
        let same = |child: &Expr| identity && plan::same_extents(child, e, self.config);
        match &e.kind {
            ExprKind::Call {
                func: func @ (Builtin::Dot | Builtin::DotT),
                args,
            } if args.iter().any(|a| a.elem.is_quant()) => {
                self.prepare_quant_dot(*func, args, e)?;
                if !identity {
                    self.materialize(e)?;
                }
            }
            ExprKind::Call {
                func: func @ (Builtin::Dot | Builtin::DotT),
                args,
            } => {
                for operand in args {
                    if !self.is_shared_local(operand) {
                        self.prepare(operand, true)?;
                        self.materialize(operand)?;
                    }
                }
                if let ([a, b], Some(_)) = (args.as_slice(), self.tensor_cores.as_ref()) {
                    let buf = self.tensor_core_dot(*func, a, b, e, None)?;
                    self.hoisted
                        .insert(e as *const Expr, Hoisted::Fragment(buf));
                }
                if !identity {
                    self.materialize(e)?;
                }
            }
            ExprKind::Call {
                func:
                    Builtin::RowSum
                    | Builtin::RowMax
                    | Builtin::RowMin
                    | Builtin::Cumsum
                    | Builtin::Transpose
                    | Builtin::Reshape,
                args,
            } => {
                for a in args {
                    self.prepare(a, false)?;
                }
                // A row reduction with one output element (a [1, C] row) is
                // a whole-tile reduction: let the whole CTA do it.
                if let (Some(how), [a]) = (row_reduction(&e.kind), args.as_slice())
                    && self.extents(e)?.iter().product::<i64>() == 1
                {
                    let v = self.reduce_all(how, a, self.dtype_of(e)?)?;
                    self.hoisted.insert(e as *const Expr, Hoisted::Scalar(v));
                    return Ok(());
                }
                let reduces = !matches!(
                    e.kind,
                    ExprKind::Call {
                        func: Builtin::Transpose | Builtin::Reshape,
                        ..
                    }
                );
                if reduces && !identity {
                    self.materialize(e)?;
                }
            }
            ExprKind::Call { func, args } => {
                let elementwise = plan::is_elementwise(*func);
                for a in args {
                    self.prepare(a, elementwise && same(a))?;
                }
            }
            ExprKind::Load { index, other, .. } => {
                self.prepare_slices(index)?;
                if let Some(o) = other {
                    self.prepare(o, false)?;
                }
            }
            ExprKind::Slice { base, index } => {
                self.prepare_slices(index)?;
                self.prepare(base, false)?;
            }
            ExprKind::Unary { arg, .. } => self.prepare(arg, same(arg))?,
            ExprKind::Binary { lhs, rhs, .. } => {
                self.prepare(lhs, same(lhs))?;
                self.prepare(rhs, same(rhs))?;
            }
            ExprKind::Cast(c) | ExprKind::Broadcast(c) => self.prepare(c, same(c))?,
            _ => {}
        }
        Ok(())
    }

    pub(super) fn prepare_slices(&mut self, index: &[Slice]) -> Result<(), MlirError> {
        for s in index {
            match s {
                Slice::Point(p) | Slice::Span { start: p, .. } => self.prepare(p, false)?,
                Slice::Full => {}
            }
        }
        Ok(())
    }

    /// `local = local + dot(a, b)` (either order) with `local` an f32
    /// register tile in the C-fragment layout: runs the mma with `local`'s
    /// own slots as C and D. Returns false (having emitted nothing) for
    /// any other statement.
    fn accumulate_on_tensor_cores(
        &mut self,
        local: LocalId,
        buf: usize,
        value: &Expr,
    ) -> Result<bool, MlirError> {
        let ExprKind::Binary {
            op: BinOp::Add,
            lhs,
            rhs,
        } = &value.kind
        else {
            return Ok(false);
        };
        let is_acc = |e: &Expr| matches!(e.kind, ExprKind::Local(id) if id == local);
        let dot = match (is_acc(lhs), is_acc(rhs)) {
            (true, false) => rhs,
            (false, true) => lhs,
            _ => return Ok(false),
        };
        let ExprKind::Call {
            func: func @ (Builtin::Dot | Builtin::DotT),
            args,
        } = &dot.kind
        else {
            return Ok(false);
        };
        let [a, b] = args.as_slice() else {
            return Ok(false);
        };
        let extents = self.extents(value)?;
        let fused = self.tensor_cores.is_some()
            && self.fragment_tiling(&extents).is_some()
            && self.extents(dot)? == extents
            && self.dtype_of(value)? == DType::F32
            && self.dtype_of(dot)? == DType::F32
            && matches!(
                self.locals.get(&local),
                Some(LocalHome::Tile(_, TileHome::Private))
            );
        if !fused {
            return Ok(false);
        }
        for operand in [a, b] {
            if !self.is_shared_local(operand) {
                self.prepare(operand, true)?;
                self.materialize(operand)?;
            }
        }
        self.tensor_core_dot(*func, a, b, dot, Some(buf))?;
        Ok(true)
    }

    pub(super) fn is_shared_local(&self, e: &Expr) -> bool {
        matches!(&e.kind, ExprKind::Local(id)
            if matches!(self.locals.get(id), Some(LocalHome::Tile(_, TileHome::Shared))))
    }

    /// Writes every element of tile `e` to a shared temporary, which later
    /// evaluation of `e` reads instead of recomputing.
    pub(super) fn materialize(&mut self, e: &Expr) -> Result<(), MlirError> {
        let dtype = self.dtype_of(e)?;
        let extents = self.extents(e)?;
        let n: i64 = extents.iter().product();
        let buf = self.temp_buffer(Ty::in_memory(dtype), n as u64);
        self.barrier();
        self.for_each_owned_element(&extents, &mut |em: &mut Emitter<'k>, at: &At| {
            // The loop runs over `e`'s own layout, so the slot stays valid
            // for children of the same extents (and is ignored by shared
            // reads, which is all the plan leaves under a non-owner read).
            let v = em.eval(e, at)?;
            let mem = em.stored_value(v, dtype);
            let lin = em.linear(&at.idx, &extents);
            em.buffer_store(buf, &lin, &mem);
            Ok(())
        })?;
        self.barrier();
        self.hoisted.insert(e as *const Expr, Hoisted::Tile(buf));
        Ok(())
    }

    /// A store (`op` = Some) or an atomic add (`op` = None) of `value` into
    /// a tensor slice, masked at the tensor's extent.
    fn store(
        &mut self,
        tensor: &str,
        index: &[Slice],
        op: Option<StoreOp>,
        value: &Expr,
    ) -> Result<(), MlirError> {
        if self.kernel.param(tensor).is_some_and(
            |p| matches!(&p.kind, crate::ir::ParamKind::Tensor { elem, .. } if elem.is_quant()),
        ) {
            return self.quant_store(tensor, index, value);
        }
        self.prepare_slices(index)?;
        self.prepare(value, true)?;
        let value_dtype = self.dtype_of(value)?;
        let racy = self.tensor_is_read(tensor);
        if racy {
            self.barrier();
        }
        let extents = self.extents(value)?;
        let mut body = |em: &mut Emitter<'k>, at: &At| -> Result<(), MlirError> {
            let (offset, mask, dtype) = em.tensor_address(tensor, index, at)?;
            if dtype != value_dtype {
                return Err(MlirError::unsupported(format!(
                    "store of {value_dtype} into `{tensor}` of {dtype} (compiler bug)"
                )));
            }
            if let Some(m) = &mask {
                em.t.open(format!("scf.if {m} {{"));
            }
            let v = em.eval(value, at)?;
            let ptr = em.element_pointer(tensor, &offset, dtype);
            let mem_ty = Ty::in_memory(dtype);
            match op {
                None => {
                    let kind = if mem_ty.is_float() { "fadd" } else { "add" };
                    let mem = em.stored_value(v, dtype);
                    em.t.def(
                        mem_ty,
                        format!(
                            "llvm.atomicrmw {kind} {ptr}, {mem} monotonic : !llvm.ptr<1>, {mem_ty}"
                        ),
                    );
                }
                Some(op) => {
                    let v = match store_binop(op) {
                        None => v,
                        Some(how) => {
                            let raw = em.t.def(
                                mem_ty,
                                format!("llvm.load {ptr} : !llvm.ptr<1> -> {mem_ty}"),
                            );
                            let old = em.loaded_value(raw, dtype);
                            match how {
                                Ok(bin) => em.binary(bin, old, v, dtype)?,
                                Err(reduce) => em.min_max(reduce, old, v, dtype)?,
                            }
                        }
                    };
                    let mem = em.stored_value(v, dtype);
                    em.t.line(format!("llvm.store {mem}, {ptr} : {mem_ty}, !llvm.ptr<1>"));
                }
            }
            if mask.is_some() {
                em.t.close("}");
            }
            Ok(())
        };
        if extents.is_empty() {
            // A scalar store: one thread does it, or `+=` would apply once
            // per thread.
            let tid = self.tid()?;
            let zero = self.const_i32(0);
            let first = self
                .t
                .def(Ty::I1, format!("arith.cmpi eq, {tid}, {zero} : i32"));
            self.t.open(format!("scf.if {first} {{"));
            // Only one thread runs this: nothing cooperative may go here.
            self.element_loop_depth += 1;
            let result = body(self, &At::scalar());
            self.element_loop_depth -= 1;
            result?;
            self.t.close("}");
        } else {
            self.for_each_owned_element(&extents, &mut body)?;
        }
        if racy {
            self.barrier();
        }
        Ok(())
    }

    /// Whether the kernel loads `tensor` anywhere (then stores to it are
    /// fenced by barriers so that other threads' loads see them in order).
    fn tensor_is_read(&self, tensor: &str) -> bool {
        let mut read = false;
        crate::ir::visit::exprs(&self.kernel.body, &mut |e| {
            read |= matches!(&e.kind, ExprKind::Load { tensor: t, .. } if t == tensor);
        });
        read
    }

    fn for_loop(
        &mut self,
        var: LocalId,
        start: &Expr,
        end: &Expr,
        step: &Expr,
        body: &[Stmt],
    ) -> Result<(), MlirError> {
        if self.pipelined_for_loop(var, start, end, step, body)? {
            return Ok(());
        }
        let dtype = self.dtype_of(start)?;
        let ty = Ty::of(dtype);
        let lo = self.scalar(start)?;
        let hi = self.scalar(end)?;
        let st = self.scalar(step)?;
        self.end_statement();
        let constant_step = match &step.kind {
            ExprKind::Int(v) => Some(*v),
            ExprKind::Tune(name) => self.config.get(name),
            _ => None,
        };
        let iv = self.t.fresh("i");
        if matches!(constant_step, Some(s) if s > 0) && !dtype.is_unsigned_int() {
            self.t
                .open(format!("scf.for {iv} = {lo} to {hi} step {st} : {ty} {{"));
            self.locals
                .insert(var, LocalHome::Ssa(Val { name: iv, ty }));
            self.block(body)?;
            self.t.close("}");
            return Ok(());
        }
        // A step of 0 at run time is an error (SPEC.md §9): the host's
        // launch returns one, and here the program traps, which fails the
        // launch, instead of looping forever.
        if constant_step.is_none() {
            let zero = self.const_int(0, ty);
            let stuck = self
                .t
                .def(Ty::I1, format!("arith.cmpi eq, {st}, {zero} : {ty}"));
            self.t.open(format!("scf.if {stuck} {{"));
            self.t.line("llvm.intr.trap");
            self.t.close("}");
        }
        // Any other step: a while loop that counts up or down by its sign.
        let lt = if dtype.is_unsigned_int() {
            "ult"
        } else {
            "slt"
        };
        let gt = if dtype.is_unsigned_int() {
            "ugt"
        } else {
            "sgt"
        };
        let cur = self.t.fresh("i");
        self.t
            .open(format!("scf.while ({cur} = {lo}) : ({ty}) -> ({ty}) {{"));
        let zero = self.const_int(0, ty);
        let up = self
            .t
            .def(Ty::I1, format!("arith.cmpi {gt}, {st}, {zero} : {ty}"));
        let below = self
            .t
            .def(Ty::I1, format!("arith.cmpi {lt}, {cur}, {hi} : {ty}"));
        let above = self
            .t
            .def(Ty::I1, format!("arith.cmpi {gt}, {cur}, {hi} : {ty}"));
        let go = self
            .t
            .def(Ty::I1, format!("arith.select {up}, {below}, {above} : i1"));
        self.t.line(format!("scf.condition({go}) {cur} : {ty}"));
        self.t.close("} do {");
        self.t.open(format!("^bb0({iv}: {ty}):"));
        self.locals.insert(
            var,
            LocalHome::Ssa(Val {
                name: iv.clone(),
                ty,
            }),
        );
        self.block(body)?;
        // A counter that would wrap ends the loop, as on the host: the next
        // value becomes `end`, which fails the condition either way.
        let next = self.t.def(ty, format!("arith.addi {iv}, {st} : {ty}"));
        let zero = self.const_int(0, ty);
        let up = self
            .t
            .def(Ty::I1, format!("arith.cmpi {gt}, {st}, {zero} : {ty}"));
        let fell = self
            .t
            .def(Ty::I1, format!("arith.cmpi {lt}, {next}, {iv} : {ty}"));
        let rose = self
            .t
            .def(Ty::I1, format!("arith.cmpi {gt}, {next}, {iv} : {ty}"));
        let wrapped = self
            .t
            .def(Ty::I1, format!("arith.select {up}, {fell}, {rose} : i1"));
        let next = self
            .t
            .def(ty, format!("arith.select {wrapped}, {hi}, {next} : {ty}"));
        self.t.line(format!("scf.yield {next} : {ty}"));
        self.t.close("}");
        Ok(())
    }
}

/// How a compound store combines old and new: a binary op, a reduction
/// (`max=`), or nothing for plain `=`.
fn store_binop(op: StoreOp) -> Option<Result<BinOp, Reduce>> {
    match op {
        StoreOp::Assign => None,
        StoreOp::Add => Some(Ok(BinOp::Add)),
        StoreOp::Sub => Some(Ok(BinOp::Sub)),
        StoreOp::Mul => Some(Ok(BinOp::Mul)),
        StoreOp::Div => Some(Ok(BinOp::Div)),
        StoreOp::Max => Some(Err(Reduce::Max)),
    }
}

fn row_reduction(kind: &ExprKind) -> Option<Reduce> {
    match kind {
        ExprKind::Call {
            func: Builtin::RowSum,
            ..
        } => Some(Reduce::Sum),
        ExprKind::Call {
            func: Builtin::RowMax,
            ..
        } => Some(Reduce::Max),
        ExprKind::Call {
            func: Builtin::RowMin,
            ..
        } => Some(Reduce::Min),
        _ => None,
    }
}

fn is_leaf(e: &Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Bool(_)
            | ExprKind::Local(_)
            | ExprKind::Param(_)
            | ExprKind::Dim(_)
            | ExprKind::Tune(_)
    )
}

/// Direct subexpressions, including slice indices and `other`.
fn children(e: &Expr) -> Vec<&Expr> {
    fn push_slices<'e>(out: &mut Vec<&'e Expr>, index: &'e [Slice]) {
        for s in index {
            if let Slice::Point(p) | Slice::Span { start: p, .. } = s {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    match &e.kind {
        ExprKind::Load { index, other, .. } => {
            push_slices(&mut out, index);
            if let Some(o) = other {
                out.push(o);
            }
        }
        ExprKind::Slice { base, index } => {
            push_slices(&mut out, index);
            out.push(base);
        }
        ExprKind::Unary { arg, .. } => out.push(arg),
        ExprKind::Binary { lhs, rhs, .. } => {
            out.push(lhs);
            out.push(rhs);
        }
        ExprKind::Cast(c) | ExprKind::Broadcast(c) => out.push(c),
        ExprKind::Call { args, .. } => out.extend(args.iter()),
        _ => {}
    }
    out
}

/// Whether `value` reads tile `local` anywhere but at the element the
/// writing thread owns (same rules as the storage plan).
fn reads_off_owner(value: &Expr, local: LocalId, config: &crate::ir::Config) -> bool {
    fn walk(e: &Expr, identity: bool, local: LocalId, config: &crate::ir::Config) -> bool {
        if let ExprKind::Local(id) = e.kind {
            return id == local && !identity;
        }
        let same = |c: &Expr| identity && plan::same_extents(c, e, config);
        match &e.kind {
            ExprKind::Unary { arg, .. } => walk(arg, same(arg), local, config),
            ExprKind::Binary { lhs, rhs, .. } => {
                walk(lhs, same(lhs), local, config) || walk(rhs, same(rhs), local, config)
            }
            ExprKind::Cast(c) | ExprKind::Broadcast(c) => walk(c, same(c), local, config),
            ExprKind::Call { func, args } if plan::is_elementwise(*func) => {
                args.iter().any(|a| walk(a, same(a), local, config))
            }
            _ => children(e)
                .into_iter()
                .any(|c| walk(c, false, local, config)),
        }
    }
    walk(value, true, local, config)
}
