//! Block access (`qlevels`, `qscales`) and stores that quantize into a
//! writable `q8_0` tensor (SPEC.md §14), on the GPU.

use crate::ir::{Builtin, DType, Expr, Slice};

use super::super::{At, Emitter, text::Ty, text::Val};
use super::lower::Env;
use super::{QuantView, lowering};
use crate::back::mlir::MlirError;

impl<'k> Emitter<'k> {
    /// `qlevels(q)` (the level of element `at`, `i8`) or `qscales(q)` (the
    /// `d` of block `at`, `f32`); 0 in an absent block.
    pub(crate) fn block_access_at(
        &mut self,
        func: Builtin,
        q: &Expr,
        at: &At,
    ) -> Result<Val, MlirError> {
        let view = self.quant_view(q)?;
        let format = lowering(view.quant, &format!("tensor `{}`", view.tensor))?;
        let mut idx = at.idx.clone();
        let (tree, ty) = match func {
            Builtin::QLevels => (&format.level, Ty::I8),
            _ => {
                // Block `b` of the tile starts at element `b * block_len`.
                let last = idx.pop().ok_or_else(|| {
                    MlirError::unsupported("`qscales` of a rank-0 tile (compiler bug)")
                })?;
                let bl = self.const_i32(format.block_len);
                idx.push(
                    self.t
                        .def(Ty::I32, format!("arith.muli {last}, {bl} : i32")),
                );
                (&format.d, Ty::F32)
            }
        };
        let (mask, coords) = self.quant_block_mask(&view, &idx)?;
        let result = self.t.fresh("v");
        self.t
            .open(format!("{result} = scf.if {mask} -> ({ty}) {{"));
        let (base, within) = self.quant_block_at(&view, &format, &coords)?;
        let env = Env {
            base,
            elem: Some(within),
            group: None,
        };
        let v = self.lower_q(tree, &env);
        let v = if ty == Ty::I8 {
            self.t.def(Ty::I8, format!("arith.trunci {v} : i32 to i8"))
        } else {
            v
        };
        self.t.line(format!("scf.yield {v} : {ty}"));
        self.t.reopen("} else {");
        let zero = if ty == Ty::I8 {
            self.const_int(0, Ty::I8)
        } else {
            self.const_float(0.0, Ty::F32)
        };
        self.t.line(format!("scf.yield {zero} : {ty}"));
        self.t.close("}");
        Ok(Val { name: result, ty })
    }

    /// `T[index] = value` with `T` a writable `q8_0` tensor: the value is
    /// staged in shared memory, then each thread quantizes whole blocks
    /// (ggml's q8_0 rounding) and writes those inside the tensor.
    pub(crate) fn quant_store(
        &mut self,
        tensor: &str,
        index: &[Slice],
        value: &Expr,
    ) -> Result<(), MlirError> {
        self.prepare_slices(index)?;
        self.prepare(value, true)?;
        if !self.is_shared_local(value) {
            self.materialize(value)?;
        }
        let dims = self.view_dims(index)?;
        let quant = self
            .kernel
            .param(tensor)
            .and_then(|p| match &p.kind {
                crate::ir::ParamKind::Tensor { elem, .. } => elem.quant(),
                crate::ir::ParamKind::Scalar { .. } => None,
            })
            .ok_or_else(|| {
                MlirError::unsupported(format!("unknown quantized tensor `{tensor}`"))
            })?;
        if quant != crate::ir::QuantType::Q8_0 {
            return Err(MlirError::unsupported(format!(
                "stores into {quant} tensors (only q8_0 is writable)"
            )));
        }
        let view = QuantView {
            tensor: tensor.to_string(),
            quant,
            dims,
        };
        let format = lowering(quant, &format!("tensor `{tensor}`"))?;
        let extents = self.extents(value)?;
        let mut blocks = extents.clone();
        let Some(last) = blocks.last_mut() else {
            return Err(MlirError::unsupported(
                "a rank-0 quantized store (compiler bug)",
            ));
        };
        *last /= format.block_len;
        let value_dtype = self.dtype_of(value)?;
        self.barrier();
        self.for_each_owned_element(&blocks, &mut |em: &mut Emitter<'k>, at: &At| {
            let mut first = at.idx.clone();
            let b = first
                .pop()
                .ok_or_else(|| MlirError::unsupported("rank-0 block"))?;
            let bl = em.const_i32(format.block_len);
            let col = em.t.def(Ty::I32, format!("arith.muli {b}, {bl} : i32"));
            first.push(col.clone());
            let (mask, coords) = em.quant_block_mask(&view, &first)?;
            em.t.open(format!("scf.if {mask} {{"));
            let (base, _) = em.quant_block_at(&view, &format, &coords)?;
            let rows = first[..first.len() - 1].to_vec();
            let read = |em: &mut Emitter<'k>, i: &Val| -> Result<Val, MlirError> {
                let c = em.t.def(Ty::I32, format!("arith.addi {col}, {i} : i32"));
                let mut idx = rows.clone();
                idx.push(c);
                let v = em.eval(value, &At { idx, slot: None })?;
                Ok(em.convert(v, value_dtype, DType::F32))
            };
            let store = |em: &mut Emitter<'k>, i: &Val, byte: &Val| {
                let two = em.const_i32(2);
                let at = em.t.def(Ty::I32, format!("arith.addi {i}, {two} : i32"));
                em.store_block_byte(&base, &at, byte);
            };
            let len = em.const_i32(format.block_len);
            let (d, _) = em.q8_0_levels(&read, &len, &store)?;
            // d as the f16 the block stores, little-endian at bytes 0..2.
            let h = em.t.def(Ty::F16, format!("arith.truncf {d} : f32 to f16"));
            let bits = em.t.def(Ty::I16, format!("arith.bitcast {h} : f16 to i16"));
            let lo = em.t.def(Ty::I8, format!("arith.trunci {bits} : i16 to i8"));
            let eight = em.const_int(8, Ty::I16);
            let high =
                em.t.def(Ty::I16, format!("arith.shrui {bits}, {eight} : i16"));
            let hi = em.t.def(Ty::I8, format!("arith.trunci {high} : i16 to i8"));
            let zero = em.const_i32(0);
            let one = em.const_i32(1);
            em.store_block_byte(&base, &zero, &lo);
            em.store_block_byte(&base, &one, &hi);
            em.t.close("}");
            Ok(())
        })?;
        self.barrier();
        Ok(())
    }
}
