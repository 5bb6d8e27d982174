//! The float operand of a ggml-form contraction, quantized to the partner
//! type in shared memory with the operations of phobos-quant's
//! `quantize_q8_0` / `quantize_q8_1` / `quantize_q8_k` (ggml's reference
//! quantizers): each thread quantizes whole partner blocks, serially.

use crate::ir::{DType, Expr};

use super::super::{At, Emitter, text::Ty, text::Val};
use super::PartnerTiles;
use super::format::Partner;
use crate::back::mlir::MlirError;

impl<'k> Emitter<'k> {
    /// Quantizes tile `x` (already staged) along its contracted dim:
    /// `rows_along_k` when `x` is `[C, K]`, else `[K, C]`.
    pub(crate) fn quantize_partner(
        &mut self,
        partner: Partner,
        x: &Expr,
        rows_along_k: bool,
    ) -> Result<PartnerTiles, MlirError> {
        let ext = self.extents(x)?;
        let [r0, r1] = ext.as_slice() else {
            return Err(MlirError::unsupported(
                "`dot` of operands that are not rank 2",
            ));
        };
        let (c, k) = if rows_along_k { (*r0, *r1) } else { (*r1, *r0) };
        let pbl = partner.block_len();
        if k % pbl != 0 {
            return Err(MlirError::unsupported(format!(
                "contracted extent {k} is not a multiple of the partner block {pbl} (compiler bug: the checker aligns quantized slices)"
            )));
        }
        let levels = self.temp_buffer(Ty::I8, (c * k) as u64);
        let scales = self.temp_buffer(Ty::F32, (c * (k / pbl)) as u64);
        let sums =
            (partner == Partner::Q8_1).then(|| self.temp_buffer(Ty::F32, (c * (k / pbl)) as u64));
        let bsums =
            (partner == Partner::Q8K).then(|| self.temp_buffer(Ty::I32, (c * (k / 16)) as u64));
        let tiles = PartnerTiles {
            partner,
            levels,
            scales,
            sums,
            bsums,
            k,
            rows: c,
            result: None,
        };
        let x_dtype = self.dtype_of(x)?;
        self.barrier();
        self.for_each_owned_element(&[c, k / pbl], &mut |em: &mut Emitter<'k>, at: &At| {
            let (row, pb) = (at.idx[0].clone(), at.idx[1].clone());
            let len = em.const_i32(pbl);
            let first = em.t.def(Ty::I32, format!("arith.muli {pb}, {len} : i32"));
            let read = |em: &mut Emitter<'k>, i: &Val| -> Result<Val, MlirError> {
                let kk = em.t.def(Ty::I32, format!("arith.addi {first}, {i} : i32"));
                let idx = if rows_along_k {
                    vec![row.clone(), kk]
                } else {
                    vec![kk, row.clone()]
                };
                let v = em.eval(x, &At { idx, slot: None })?;
                Ok(em.convert(v, x_dtype, DType::F32))
            };
            let kc = em.const_i32(k);
            let row_start = em.t.def(Ty::I32, format!("arith.muli {row}, {kc} : i32"));
            let level_base =
                em.t.def(Ty::I32, format!("arith.addi {row_start}, {first} : i32"));
            let per_row = em.const_i32(k / pbl);
            let r =
                em.t.def(Ty::I32, format!("arith.muli {row}, {per_row} : i32"));
            let block_index = em.t.def(Ty::I32, format!("arith.addi {r}, {pb} : i32"));
            match partner {
                Partner::Q8_0 | Partner::Q8_1 => {
                    em.quantize_q8_0_block(&tiles, &read, &len, &level_base, &block_index)
                }
                Partner::Q8K => em.quantize_q8_k_block(
                    &tiles,
                    &read,
                    &len,
                    &level_base,
                    &block_index,
                    &row,
                    &pb,
                ),
            }
        })?;
        self.barrier();
        Ok(tiles)
    }

    /// `quantize_q8_0` (and q8_1's extra sum) of one 32-element block into
    /// the partner tiles.
    fn quantize_q8_0_block(
        &mut self,
        tiles: &PartnerTiles,
        read: &dyn Fn(&mut Emitter<'k>, &Val) -> Result<Val, MlirError>,
        len: &Val,
        level_base: &Val,
        block_index: &Val,
    ) -> Result<(), MlirError> {
        let levels = tiles.levels;
        let store = |em: &mut Emitter<'k>, i: &Val, byte: &Val| {
            let at =
                em.t.def(Ty::I32, format!("arith.addi {level_base}, {i} : i32"));
            em.buffer_store(levels, &at, byte);
        };
        let (d, sum) = self.q8_0_levels(read, len, &store)?;
        let dx = self.through_f16(&d);
        self.buffer_store(tiles.scales, block_index, &dx);
        if let Some(sums) = tiles.sums {
            let sum_f = self
                .t
                .def(Ty::F32, format!("arith.sitofp {sum} : i32 to f32"));
            let s = self
                .t
                .def(Ty::F32, format!("arith.mulf {sum_f}, {d} : f32"));
            let sx = self.through_f16(&s);
            self.buffer_store(sums, block_index, &sx);
        }
        Ok(())
    }

    /// ggml's q8_0 rounding of the `len` values `read` gives: `amax =
    /// fold(0, max(m, |v|))` (maxnum ignores NaN as f32::max does), `d =
    /// amax / 127`, levels `round(v * (d == 0 ? 0 : 1 / d))` ties away,
    /// each passed to `store(i, level as i8)`. Returns the unrounded `d`
    /// and the sum of the levels.
    pub(crate) fn q8_0_levels(
        &mut self,
        read: &dyn Fn(&mut Emitter<'k>, &Val) -> Result<Val, MlirError>,
        len: &Val,
        store: &dyn Fn(&mut Emitter<'k>, &Val, &Val),
    ) -> Result<(Val, Val), MlirError> {
        let zero_f = self.const_float(0.0, Ty::F32);
        let (i, acc, result) = self.open_accumulating_loop(len, &zero_f);
        let v = read(self, &i)?;
        let a = self.float_intrinsic1("llvm.fabs", v);
        // The intrinsic, not `arith.maxnumf`: that lowers to libdevice.
        let next = self.float_intrinsic2("llvm.maxnum", acc, a);
        let amax = self.close_accumulating_loop(&next, result);
        let c127 = self.const_float(127.0, Ty::F32);
        let d = self
            .t
            .def(Ty::F32, format!("arith.divf {amax}, {c127} : f32"));
        let one = self.const_float(1.0, Ty::F32);
        let inv = self.t.def(Ty::F32, format!("arith.divf {one}, {d} : f32"));
        let is_zero = self
            .t
            .def(Ty::I1, format!("arith.cmpf oeq, {d}, {zero_f} : f32"));
        let id = self.t.def(
            Ty::F32,
            format!("arith.select {is_zero}, {zero_f}, {inv} : f32"),
        );
        let zero_i = self.const_i32(0);
        let (i, sum, result) = self.open_accumulating_loop(len, &zero_i);
        let v = read(self, &i)?;
        let scaled = self.t.def(Ty::F32, format!("arith.mulf {v}, {id} : f32"));
        let rounded = self.float_intrinsic1("llvm.round", scaled);
        let level = self
            .t
            .def(Ty::I32, format!("arith.fptosi {rounded} : f32 to i32"));
        let byte = self
            .t
            .def(Ty::I8, format!("arith.trunci {level} : i32 to i8"));
        store(self, &i, &byte);
        let next = self
            .t
            .def(Ty::I32, format!("arith.addi {sum}, {level} : i32"));
        let sum = self.close_accumulating_loop(&next, result);
        Ok((d, sum))
    }

    /// `quantize_q8_k` of one 256-element block: the signed max, levels
    /// `min(nearest_int(-127 / max * v), 127)`, `d = 1 / iscale`, and the
    /// sums of each 16 levels; all zero when the block is.
    #[allow(clippy::too_many_arguments)]
    fn quantize_q8_k_block(
        &mut self,
        tiles: &PartnerTiles,
        read: &dyn Fn(&mut Emitter<'k>, &Val) -> Result<Val, MlirError>,
        len: &Val,
        level_base: &Val,
        block_index: &Val,
        row: &Val,
        pb: &Val,
    ) -> Result<(), MlirError> {
        let bsums = tiles.bsums.ok_or_else(|| {
            MlirError::unsupported("q8_K partner without block sums (compiler bug)")
        })?;
        // The first element of largest magnitude, sign kept.
        let zero_f = self.const_float(0.0, Ty::F32);
        let (i, max, result) = self.open_accumulating_loop(len, &zero_f);
        let v = read(self, &i)?;
        let a = self.float_intrinsic1("llvm.fabs", v.clone());
        let amax = self.float_intrinsic1("llvm.fabs", max.clone());
        let gt = self
            .t
            .def(Ty::I1, format!("arith.cmpf ogt, {a}, {amax} : f32"));
        let next = self
            .t
            .def(Ty::F32, format!("arith.select {gt}, {v}, {max} : f32"));
        let max = self.close_accumulating_loop(&next, result);
        let amax = self.float_intrinsic1("llvm.fabs", max.clone());
        let is_zero = self
            .t
            .def(Ty::I1, format!("arith.cmpf oeq, {amax}, {zero_f} : f32"));
        let minus127 = self.const_float(-127.0, Ty::F32);
        let iscale = self
            .t
            .def(Ty::F32, format!("arith.divf {minus127}, {max} : f32"));
        let one = self.const_float(1.0, Ty::F32);
        let d = self
            .t
            .def(Ty::F32, format!("arith.divf {one}, {iscale} : f32"));
        let d = self.t.def(
            Ty::F32,
            format!("arith.select {is_zero}, {zero_f}, {d} : f32"),
        );
        self.buffer_store(tiles.scales, block_index, &d);
        let zero_i = self.const_i32(0);
        let sixteen = self.const_i32(16);
        let groups = self.const_i32(16);
        let (g, _unused, g_result) = self.open_accumulating_loop(&groups, &zero_i);
        let (j, sum, result) = self.open_accumulating_loop(&sixteen, &zero_i);
        let g16 = self
            .t
            .def(Ty::I32, format!("arith.muli {g}, {sixteen} : i32"));
        let i = self.t.def(Ty::I32, format!("arith.addi {g16}, {j} : i32"));
        let v = read(self, &i)?;
        let scaled = self
            .t
            .def(Ty::F32, format!("arith.mulf {iscale}, {v} : f32"));
        // ggml's nearest_int: 1.5 * 2^23 added, the low mantissa bits read.
        let magic = self.const_float(12_582_912.0, Ty::F32);
        let shifted = self
            .t
            .def(Ty::F32, format!("arith.addf {scaled}, {magic} : f32"));
        let bits = self
            .t
            .def(Ty::I32, format!("arith.bitcast {shifted} : f32 to i32"));
        let mask = self.const_i32(0x007f_ffff);
        let low = self
            .t
            .def(Ty::I32, format!("arith.andi {bits}, {mask} : i32"));
        let bias = self.const_i32(0x0040_0000);
        let level = self
            .t
            .def(Ty::I32, format!("arith.subi {low}, {bias} : i32"));
        let c127 = self.const_i32(127);
        let level = self
            .t
            .def(Ty::I32, format!("arith.minsi {level}, {c127} : i32"));
        let level = self.t.def(
            Ty::I32,
            format!("arith.select {is_zero}, {zero_i}, {level} : i32"),
        );
        let byte = self
            .t
            .def(Ty::I8, format!("arith.trunci {level} : i32 to i8"));
        let at = self
            .t
            .def(Ty::I32, format!("arith.addi {level_base}, {i} : i32"));
        self.buffer_store(tiles.levels, &at, &byte);
        // Levels are i8: the sum of 16 is exact in i32 (and in ggml's i16).
        let level = self
            .t
            .def(Ty::I32, format!("arith.extsi {byte} : i8 to i32"));
        let next = self
            .t
            .def(Ty::I32, format!("arith.addi {sum}, {level} : i32"));
        let group_sum = self.close_accumulating_loop(&next, result);
        let per_row = self.const_i32(tiles.k / 16);
        let r = self
            .t
            .def(Ty::I32, format!("arith.muli {row}, {per_row} : i32"));
        let b16 = self
            .t
            .def(Ty::I32, format!("arith.muli {pb}, {sixteen} : i32"));
        let at = self.t.def(Ty::I32, format!("arith.addi {r}, {b16} : i32"));
        let at = self.t.def(Ty::I32, format!("arith.addi {at}, {g} : i32"));
        self.buffer_store(bsums, &at, &group_sum);
        self.close_accumulating_loop(&zero_i, g_result);
        Ok(())
    }

    /// `f32 -> f16 -> f32` (round to nearest even), as a stored f16 scale.
    pub(crate) fn through_f16(&mut self, v: &Val) -> Val {
        let h = self
            .t
            .def(Ty::F16, format!("arith.truncf {v} : f32 to f16"));
        self.t.def(Ty::F32, format!("arith.extf {h} : f16 to f32"))
    }
}
