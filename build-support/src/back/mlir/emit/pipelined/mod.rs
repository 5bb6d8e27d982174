//! `@pipeline`: double-buffered staging of the tiles a loop loads into
//! shared memory, so that loading iteration `i + 1`'s tiles overlaps
//! computing iteration `i`.
//!
//! [`analysis`] picks the loops and tiles (its module doc has the rules).
//! Each staged tile of `n` elements gets one shared buffer of `2 n`: half
//! 0 is elements `0..n`, half 1 is `n..2n`; iteration `k` (counted from
//! 0) reads half `k % 2`. Reads of the tile in the body go through
//! [`Emitter::staged_index`], which adds the current half's offset, so the
//! rest of the emitter reads staged tiles like any shared tile.
//!
//! # Schedule on sm_80 and newer (`cp.async`)
//!
//! ```text
//! prologue   if lo < hi: copy tiles(lo) -> half 0        (async)
//!            commit group G0
//! iteration k (i = lo + k*step, half h = k % 2):
//!            if i + step < hi: copy tiles(i + step) -> half 1-h   (async)
//!            commit group G(k+1)          (empty when there is no next)
//!            wait until <= 1 group pending    => G(k) landed (own copies)
//!            barrier                          => G(k) landed for every thread
//!            body, reading half h
//!            barrier                          => nobody reads half h any more,
//!                                                so iteration k+1 may refill it
//! ```
//!
//! Copies are `nvgpu.device_async_copy`. Where a row of a 2- or 4-byte
//! type splits into 16-byte runs, each run is one 16-byte copy when it
//! passes the checks below, and otherwise falls back to the 4-byte copies
//! described next: one element of 4 or 8 bytes, or a group of `4 / size`
//! consecutive elements of a narrower type. A group is copied asynchronously when the tile's innermost
//! tensor stride is 1 and the first element's address is 4-byte aligned
//! (both checked at run time) and its first element is in bounds; then
//! the out-of-bounds rest is zero-filled by the copy's `srcElements` when
//! `other` is 0, and needs every element in bounds otherwise. Any other
//! group is loaded and stored synchronously element by element, exactly
//! like a plain masked load; that is safe because it writes the half no
//! one reads until the next barrier. Single elements always go async: in
//! bounds by copy, out of bounds as a zero-fill (`other` = 0) or a store
//! of `other`.
//!
//! # Schedule on sm_75 (no `cp.async`): register prefetch
//!
//! ```text
//! prologue   if lo < hi: load tiles(lo), store to half 0;  barrier
//! iteration k (half h = k % 2):
//!            if i + step < hi: load tiles(i + step) into registers
//!            body, reading half h
//!            if i + step < hi: store the registers to half 1-h
//!            barrier     => half 1-h complete; half h free for k+2
//! ```
//!
//! The global loads of the next iteration are issued before the body, so
//! their latency hides behind it; the body of iteration `k-1` finished
//! reading half `1-h` before the barrier that ends it.

mod analysis;
mod copies;
#[cfg(test)]
mod schedule_model;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

pub(crate) use analysis::{PipelinePlan, StagedTile, analyze};

use crate::ir::{Expr, ExprKind, Kernel, LocalId, Stmt, StmtKind};

use super::{
    Emitter, LocalHome, plan,
    plan::{Plan, TileHome},
    text::{Space, Ty, Val},
};
use crate::back::mlir::MlirError;

/// The loops to pipeline in `kernel` (none without `@pipeline`); a kernel
/// marked `@pipeline` where no loop qualifies is an error naming why.
pub(crate) fn plan_for<'k>(kernel: &'k Kernel, plan: &Plan) -> Result<PipelinePlan<'k>, MlirError> {
    if !kernel.pipeline {
        return Ok(PipelinePlan::default());
    }
    let found = analyze(kernel, &plan.homes);
    if found.loops.is_empty() {
        let reason = if found.skipped.is_empty() {
            "the kernel has no `for` loop to pipeline".to_string()
        } else {
            format!("no loop can be pipelined: {}", found.skipped.join("; "))
        };
        return Err(MlirError::NotPipelinable {
            kernel: kernel.name.clone(),
            reason,
        });
    }
    for why in &found.skipped {
        tracing::debug!(kernel = %kernel.name, "@pipeline leaves {why}");
    }
    Ok(found)
}

/// The tail of a "does not fit" reason when `@pipeline` doubled some tiles.
pub(crate) fn doubling_note(doubled_bytes: u64) -> String {
    if doubled_bytes == 0 {
        String::new()
    } else {
        format!(" (@pipeline double-buffering adds {doubled_bytes} bytes)")
    }
}

/// What the emitter keeps for `@pipeline`.
#[derive(Default)]
pub(crate) struct PipelineState<'k> {
    pub plan: PipelinePlan<'k>,
    /// Staged buffer -> element offset (`i32`) of the half the current
    /// iteration reads; set only while a pipelined body is emitted.
    pub current_half: HashMap<usize, Val>,
    /// Shared bytes the second halves add (for the "does not fit" reason).
    pub doubled_bytes: u64,
}

/// A staged tile being emitted.
struct Staging<'k> {
    tile: StagedTile<'k>,
    extents: Vec<i64>,
    elements: i64,
    buf: usize,
    /// sm_75: the calling thread's registers for the next iteration.
    registers: Option<usize>,
    /// sm_80+: the tensor as a `memref<?xT, 1>` for `nvgpu` copies.
    global: Option<String>,
}

impl<'k> Emitter<'k> {
    /// `index` into buffer `buf`, moved into the half the current
    /// pipelined iteration reads when `buf` is a staged tile.
    pub(super) fn staged_index(&mut self, buf: usize, index: &Val) -> Val {
        match self.pipeline.current_half.get(&buf).cloned() {
            Some(offset) => self
                .t
                .def(Ty::I32, format!("arith.addi {index}, {offset} : i32")),
            None => index.clone(),
        }
    }

    /// Emits `for` as a pipelined loop when the analysis chose it; returns
    /// false (having emitted nothing) otherwise.
    pub(super) fn pipelined_for_loop(
        &mut self,
        var: LocalId,
        start: &Expr,
        end: &Expr,
        step: &Expr,
        body: &[Stmt],
    ) -> Result<bool, MlirError> {
        let Some(tiles) = self.pipeline.plan.loops.get(&body.as_ptr()).cloned() else {
            return Ok(false);
        };
        let positive_step = match &step.kind {
            ExprKind::Int(v) => *v > 0,
            ExprKind::Tune(name) => self.config.get(name).is_some_and(|v| v > 0),
            _ => false,
        };
        if !positive_step {
            return Err(MlirError::NotPipelinable {
                kernel: self.kernel.name.clone(),
                reason: format!("config [{}] makes the loop step non-positive", self.config),
            });
        }
        let ty = Ty::of(self.dtype_of(start)?);
        let lo = self.scalar(start)?;
        let hi = self.scalar(end)?;
        let st = self.scalar(step)?;
        self.end_statement();
        let async_copies = self.target.sm >= 80;
        let mut staged = Vec::new();
        for tile in tiles {
            staged.push(self.stage(tile, async_copies)?);
        }

        let zero = self.const_i32(0);
        let has_first = self
            .t
            .def(Ty::I1, format!("arith.cmpi slt, {lo}, {hi} : {ty}"));
        self.t.open(format!("scf.if {has_first} {{"));
        self.bind(var, &lo, ty);
        for s in &staged {
            if async_copies {
                self.copy_async(s, &zero)?;
            } else {
                self.copy_sync(s, &zero)?;
            }
        }
        self.t.close("}");
        self.end_statement();
        if async_copies {
            let group = self.t.fresh("group");
            self.t
                .line(format!("{group} = nvgpu.device_async_create_group {{}}"));
        } else {
            self.barrier();
        }

        let iv = self.t.fresh("i");
        let half = self.t.fresh("half");
        let one = self.const_i32(1);
        let last_half = self.t.fresh("v");
        self.t.open(format!(
            "{last_half} = scf.for {iv} = {lo} to {hi} step {st} iter_args({half} = {zero}) -> (i32) : {ty} {{"
        ));
        let half = Val {
            name: half,
            ty: Ty::I32,
        };
        let iv = Val { name: iv, ty };
        let next = self.t.def(ty, format!("arith.addi {iv}, {st} : {ty}"));
        let has_next = self
            .t
            .def(Ty::I1, format!("arith.cmpi slt, {next}, {hi} : {ty}"));
        let other_half = self
            .t
            .def(Ty::I32, format!("arith.subi {one}, {half} : i32"));
        let mut next_offsets = Vec::new();
        let mut current_offsets = Vec::new();
        for s in &staged {
            let n = self.const_i32(s.elements);
            next_offsets.push(
                self.t
                    .def(Ty::I32, format!("arith.muli {other_half}, {n} : i32")),
            );
            current_offsets.push(self.t.def(Ty::I32, format!("arith.muli {half}, {n} : i32")));
        }

        self.t.open(format!("scf.if {has_next} {{"));
        self.bind(var, &next, ty);
        for (s, offset) in staged.iter().zip(&next_offsets) {
            if async_copies {
                self.copy_async(s, offset)?;
            } else {
                self.prefetch_to_registers(s)?;
            }
        }
        self.t.close("}");
        self.end_statement();
        if async_copies {
            let group = self.t.fresh("group");
            self.t
                .line(format!("{group} = nvgpu.device_async_create_group {{}}"));
            self.t.line(format!(
                "nvgpu.device_async_wait {group} {{numGroups = 1 : i32}}"
            ));
            self.barrier();
        }

        self.bind(var, &iv, ty);
        for (s, offset) in staged.iter().zip(&current_offsets) {
            self.pipeline.current_half.insert(s.buf, offset.clone());
        }
        let result = self.pipelined_body(body, &staged);
        for s in &staged {
            self.pipeline.current_half.remove(&s.buf);
        }
        result?;

        if !async_copies {
            self.t.open(format!("scf.if {has_next} {{"));
            for (s, offset) in staged.iter().zip(&next_offsets) {
                self.registers_to_half(s, offset)?;
            }
            self.t.close("}");
        }
        self.barrier();
        self.t.line(format!("scf.yield {other_half} : i32"));
        self.t.close("}");
        tracing::debug!(
            kernel = %self.kernel.name,
            tiles = staged.len(),
            async_copies,
            "pipelined a loop"
        );
        Ok(true)
    }

    /// The loop body without the staged `let`s (their tiles are already in
    /// the current half).
    fn pipelined_body(&mut self, body: &[Stmt], staged: &[Staging<'k>]) -> Result<(), MlirError> {
        for stmt in body {
            if let StmtKind::Let { local, .. } = &stmt.kind
                && staged.iter().any(|s| s.tile.local == *local)
            {
                continue;
            }
            self.stmt(stmt)?;
            self.end_statement();
        }
        Ok(())
    }

    /// The loop variable as `value` for the statements emitted next
    /// (scalar subexpressions hoisted under another value are dropped).
    fn bind(&mut self, var: LocalId, value: &Val, ty: Ty) {
        self.end_statement();
        self.locals.insert(
            var,
            LocalHome::Ssa(Val {
                name: value.name.clone(),
                ty,
            }),
        );
    }

    /// Declares the two halves (and registers or the global view) of one
    /// staged tile.
    fn stage(
        &mut self,
        tile: StagedTile<'k>,
        async_copies: bool,
    ) -> Result<Staging<'k>, MlirError> {
        let info = self.kernel.local(tile.local).ok_or_else(|| {
            MlirError::unsupported(format!("unknown local #{} (compiler bug)", tile.local.0))
        })?;
        let extents = plan::extents(&info.shape, self.config)?;
        let elements: i64 = extents.iter().product();
        let mem_ty = Ty::in_memory(tile.dtype);
        let buf = self.new_buffer(mem_ty, 2 * elements as u64, Space::Workgroup);
        self.pipeline.doubled_bytes += elements as u64 * mem_ty.size_bytes();
        self.locals
            .insert(tile.local, LocalHome::Tile(buf, TileHome::Shared));
        let registers = (!async_copies).then(|| {
            let slots = self.slots_for(&extents);
            self.new_buffer(mem_ty, slots, Space::Private)
        });
        let global = async_copies.then(|| self.global_view(tile.tensor, mem_ty));
        Ok(Staging {
            tile,
            extents,
            elements,
            buf,
            registers,
            global,
        })
    }
}
