//! Reductions and contractions: row reductions, `dot`/`dot_t` and `cumsum`
//! as per-element loops, and whole-tile reductions computed by the whole
//! CTA: each thread folds the elements it owns, warps combine with
//! butterfly shuffles, and one value per warp meets in shared memory. The
//! CTA-wide form is used where every thread is at the same statement (not
//! inside an element loop) and the type is one a shuffle moves (`f32`,
//! `i32`); elsewhere every thread folds serially.

use crate::ir::{BinOp, Builtin, DType, Expr};

use super::{At, Emitter, text::Space, text::Ty, text::Val};
use crate::back::mlir::MlirError;

/// What a reduction combines with.
#[derive(Clone, Copy)]
pub(super) enum Reduce {
    Sum,
    Max,
    Min,
}

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

    /// The `min`/`max` built-ins and `max=`: floats bit-equal to the host
    /// (edge.rs); integers as in a reduction.
    pub(super) fn min_max(
        &mut self,
        how: Reduce,
        a: Val,
        b: Val,
        dtype: DType,
    ) -> Result<Val, MlirError> {
        match how {
            Reduce::Min | Reduce::Max if a.ty.is_float() => {
                Ok(self.float_min_max(&a, &b, matches!(how, Reduce::Min)))
            }
            _ => self.combine(how, a, b, dtype),
        }
    }

    /// One step of a reduction. Float min/max use `llvm.minnum`/`maxnum`
    /// (`min`/`max.f32` in PTX: NaN loses to a number); a reduction's
    /// order differs between back ends anyway, so which of two equal
    /// values (`+0`/`-0`) it returns is not specified.
    pub(super) fn combine(
        &mut self,
        how: Reduce,
        a: Val,
        b: Val,
        dtype: DType,
    ) -> Result<Val, MlirError> {
        let ty = a.ty;
        if ty.is_float() {
            return Ok(match how {
                Reduce::Sum => self.t.def(ty, format!("arith.addf {a}, {b} : {ty}")),
                Reduce::Max => self.float_intrinsic2("llvm.maxnum", a, b),
                Reduce::Min => self.float_intrinsic2("llvm.minnum", a, b),
            });
        }
        let unsigned = dtype.is_unsigned_int() || dtype == DType::Bool;
        let op = match (how, unsigned) {
            (Reduce::Sum, _) => "arith.addi",
            (Reduce::Max, true) => "arith.maxui",
            (Reduce::Max, false) => "arith.maxsi",
            (Reduce::Min, true) => "arith.minui",
            (Reduce::Min, false) => "arith.minsi",
        };
        Ok(self.t.def(ty, format!("{op} {a}, {b} : {ty}")))
    }

    /// The identity of a reduction in `dtype`.
    pub(super) fn reduce_identity(&mut self, how: Reduce, dtype: DType) -> Val {
        let ty = Ty::of(dtype);
        match how {
            Reduce::Sum => self.zero(dtype),
            Reduce::Max | Reduce::Min if ty.is_float() => {
                let inf = if matches!(how, Reduce::Max) {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                };
                self.const_float(inf, ty)
            }
            Reduce::Max | Reduce::Min => {
                let shift = 64 - ty.bits();
                let unsigned = dtype.is_unsigned_int() || dtype == DType::Bool;
                let value: i64 = match (how, unsigned) {
                    (Reduce::Max, true) => 0,
                    (Reduce::Max, false) => i64::MIN >> shift,
                    // All ones: the largest unsigned value.
                    (_, true) => -1,
                    (_, false) => i64::MAX >> shift,
                };
                self.const_int(value, ty)
            }
        }
    }

    /// Opens `scf.for %k = 0 to count` carrying one accumulator; returns
    /// (loop variable, accumulator, result name).
    pub(super) fn open_accumulating_loop(&mut self, count: &Val, init: &Val) -> (Val, Val, String) {
        let lo = self.const_i32(0);
        let one = self.const_i32(1);
        let result = self.t.fresh("v");
        let k = self.t.fresh("k");
        let acc = self.t.fresh("acc");
        self.t.open(format!(
            "{result} = scf.for {k} = {lo} to {count} step {one} iter_args({acc} = {init}) -> ({}) : i32 {{",
            init.ty
        ));
        (
            Val {
                name: k,
                ty: Ty::I32,
            },
            Val {
                name: acc,
                ty: init.ty,
            },
            result,
        )
    }

    pub(super) fn close_accumulating_loop(&mut self, next: &Val, result: String) -> Val {
        self.t.line(format!("scf.yield {next} : {}", next.ty));
        self.t.close("}");
        Val {
            name: result,
            ty: next.ty,
        }
    }

    pub(super) fn dot(
        &mut self,
        func: Builtin,
        a: &Expr,
        b: &Expr,
        dtype: DType,
        at: &At,
    ) -> Result<Val, MlirError> {
        let (m, n) = match at.idx.as_slice() {
            [m, n] => (m.clone(), n.clone()),
            _ => return Err(MlirError::unsupported("`dot` whose result is not rank 2")),
        };
        let a_ext = self.extents(a)?;
        if a_ext.len() != 2 {
            return Err(MlirError::unsupported(
                "`dot` of operands that are not rank 2",
            ));
        }
        let count = self.const_i32(a_ext[1]);
        let init = self.zero(dtype);
        let (k, acc, result) = self.open_accumulating_loop(&count, &init);
        let av = self.eval(
            a,
            &At {
                idx: vec![m, k.clone()],
                slot: None,
            },
        )?;
        let b_idx = if func == Builtin::DotT {
            vec![n, k]
        } else {
            vec![k, n]
        };
        let bv = self.eval(
            b,
            &At {
                idx: b_idx,
                slot: None,
            },
        )?;
        let av = self.convert(av, self.operand_dtype(a)?, dtype);
        let bv = self.convert(bv, self.operand_dtype(b)?, dtype);
        let prod = self.binary(BinOp::Mul, av, bv, dtype)?;
        let next = self.binary(BinOp::Add, acc, prod, dtype)?;
        Ok(self.close_accumulating_loop(&next, result))
    }

    pub(super) fn row_reduce(
        &mut self,
        how: Reduce,
        arg: &Expr,
        dtype: DType,
        at: &At,
    ) -> Result<Val, MlirError> {
        let ext = self.extents(arg)?;
        let Some(&cols) = ext.last() else {
            return Err(MlirError::unsupported("row reduction of a scalar"));
        };
        let count = self.const_i32(cols);
        let init = self.reduce_identity(how, dtype);
        let (c, acc, result) = self.open_accumulating_loop(&count, &init);
        let mut idx: Vec<Val> = at.idx.iter().take(ext.len() - 1).cloned().collect();
        idx.push(c);
        let v = self.eval(arg, &At { idx, slot: None })?;
        let v = self.convert(v, self.dtype_of(arg)?, dtype);
        let next = self.combine(how, acc, v, dtype)?;
        Ok(self.close_accumulating_loop(&next, result))
    }

    pub(super) fn serial_reduce_all(
        &mut self,
        how: Reduce,
        arg: &Expr,
        dtype: DType,
    ) -> Result<Val, MlirError> {
        let ext = self.extents(arg)?;
        let n: i64 = ext.iter().product();
        let count = self.const_i32(n);
        let init = self.reduce_identity(how, dtype);
        let (i, acc, result) = self.open_accumulating_loop(&count, &init);
        let idx = self.delinearize(&i, &ext);
        let v = self.eval(arg, &At { idx, slot: None })?;
        let v = self.convert(v, self.dtype_of(arg)?, dtype);
        let next = self.combine(how, acc, v, dtype)?;
        Ok(self.close_accumulating_loop(&next, result))
    }

    pub(super) fn cumsum(&mut self, arg: &Expr, dtype: DType, at: &At) -> Result<Val, MlirError> {
        let Some(row) = at.idx.first().cloned() else {
            return Err(MlirError::unsupported("`cumsum` of a scalar"));
        };
        let one = self.const_i32(1);
        let count = self
            .t
            .def(Ty::I32, format!("arith.addi {row}, {one} : i32"));
        let init = self.zero(dtype);
        let (i, acc, result) = self.open_accumulating_loop(&count, &init);
        let mut idx = vec![i];
        idx.extend(at.idx.iter().skip(1).cloned());
        let v = self.eval(arg, &At { idx, slot: None })?;
        let v = self.convert(v, self.dtype_of(arg)?, dtype);
        let next = self.combine(Reduce::Sum, acc, v, dtype)?;
        Ok(self.close_accumulating_loop(&next, result))
    }
}
