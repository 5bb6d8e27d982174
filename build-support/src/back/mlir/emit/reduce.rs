//! Whole-tile reductions computed by the whole CTA: each thread folds the
//! elements it owns, warps combine with butterfly shuffles, and one value
//! per warp meets in shared memory. Used where every thread of the CTA is
//! at the same statement (not inside an element loop) and the type is one
//! a shuffle moves (`f32`, `i32`); elsewhere every thread folds serially.

use crate::ir::{DType, Expr};

use super::{At, Emitter, expr::Reduce, text::Space, text::Ty, text::Val};
use crate::back::mlir::MlirError;

impl<'k> Emitter<'k> {
    /// All elements of tile `arg` combined by `how`, as a `dtype` scalar
    /// every thread holds.
    pub(super) fn reduce_all(
        &mut self,
        how: Reduce,
        arg: &Expr,
        dtype: DType,
    ) -> Result<Val, MlirError> {
        let ty = Ty::of(dtype);
        let shuffles = matches!(ty, Ty::F32 | Ty::I32);
        if !shuffles || self.threads % 32 != 0 || self.element_loop_depth > 0 {
            return self.serial_reduce_all(how, arg, dtype);
        }
        let ext = self.extents(arg)?;
        let acc = self.new_buffer(ty, 1, Space::Private);
        let zero = self.const_i32(0);
        let init = self.reduce_identity(how, dtype);
        self.buffer_store(acc, &zero, &init);
        let arg_dtype = self.dtype_of(arg)?;
        self.for_each_owned_element(&ext, &mut |em: &mut Emitter<'k>, at: &At| {
            let inner = At {
                idx: at.idx.clone(),
                slot: None,
            };
            let v = em.eval(arg, &inner)?;
            let v = em.convert(v, arg_dtype, dtype);
            let zero = em.const_i32(0);
            let old = em.buffer_load(acc, &zero);
            let new = em.combine(how, old, v, dtype)?;
            em.buffer_store(acc, &zero, &new);
            Ok(())
        })?;
        let mut partial = self.buffer_load(acc, &zero);
        let width = self.const_i32(32);
        for offset in [16, 8, 4, 2, 1] {
            let off = self.const_i32(offset);
            let other = self.t.fresh("v");
            let valid = self.t.fresh("ok");
            self.t.line(format!(
                "{other}, {valid} = gpu.shuffle xor {partial}, {off}, {width} : {ty}"
            ));
            partial = self.combine(how, partial, Val { name: other, ty }, dtype)?;
        }
        let warps = self.threads / 32;
        if warps == 1 {
            return Ok(partial);
        }
        let scratch = self.temp_buffer(ty, warps as u64);
        let tid = self.tid()?;
        let lanes = self.const_i32(32);
        let lane = self
            .t
            .def(Ty::I32, format!("arith.remui {tid}, {lanes} : i32"));
        let warp = self
            .t
            .def(Ty::I32, format!("arith.divui {tid}, {lanes} : i32"));
        let first = self
            .t
            .def(Ty::I1, format!("arith.cmpi eq, {lane}, {zero} : i32"));
        self.barrier();
        self.t.open(format!("scf.if {first} {{"));
        self.buffer_store(scratch, &warp, &partial);
        self.t.close("}");
        self.barrier();
        let mut total = self.reduce_identity(how, dtype);
        for w in 0..warps {
            let i = self.const_i32(w);
            let v = self.buffer_load(scratch, &i);
            total = self.combine(how, total, v, dtype)?;
        }
        Ok(total)
    }
}
