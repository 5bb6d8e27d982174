//! Quantized tensors on the GPU (SPEC.md §14).
//!
//! A quantized tensor is passed as a pointer to its first byte, the GGUF
//! blocks uploaded as they are; its strides (kernel ABI) are in bytes: the
//! step of each outer dim, and `block_bytes` for the blocked last dim.
//! A quantized tile (`let w = W[...]` or a slice used in place) is never
//! copied: it is a *view* (the tensor and the slice starts), and its
//! elements are decoded straight from the blocks in global memory by the
//! trees of [`format`].
//!
//! - `dequant(q)` decodes one element per evaluation; absent blocks (rows
//!   or blocks outside the tensor) read as 0.
//! - A contraction in ggml's form (the blocks run along the contracted dim
//!   and the format has a partner type) first quantizes the float operand
//!   to the partner type in shared memory, each thread one partner block,
//!   with the operations of phobos-quant's `quantize_row_q8_0/q8_1/q8_K`;
//!   then every output element sums, block by block in order, the block's
//!   term: integer sums of level products and the float steps of §14's
//!   table, each rounded on its own.
//! - Any other contraction (the exact form) stages the dequantized tile in
//!   shared memory and runs the ordinary f32 `dot` over it.
//!
//! Formats without a lowering ([`format::format`] returns `None`) are an
//! [`MlirError::Unsupported`] naming the format and the parameter.

mod access;
pub(crate) mod format;
mod int_mma;
#[cfg(test)]
pub(crate) mod interp;
mod lower;
mod partner;
#[cfg(test)]
mod tests;

use crate::ir::{Builtin, DType, Dim, Expr, ExprKind, ParamKind, QuantType, Slice};

use self::format::{Format, Partner, Term};
use self::lower::Env;
use super::{At, Emitter, Hoisted, LocalHome, text::Ty, text::Val};
use crate::back::mlir::MlirError;

/// A quantized tile: a slice of a quantized tensor, read in place.
#[derive(Clone, Debug)]
pub(crate) struct QuantView {
    tensor: String,
    quant: QuantType,
    /// Per tensor dim: the fixed index or start (index type), or `None` for
    /// `:` (start 0); and whether the dim is kept in the tile.
    dims: Vec<(Option<Val>, bool)>,
}

/// What a statement's quantized contraction prepared before its element
/// loop: the float operand quantized to the partner type.
#[derive(Clone, Debug)]
pub(crate) struct PartnerTiles {
    pub partner: Partner,
    /// `i8` levels, `[C, K]` row-major.
    pub levels: usize,
    /// Partner block scales `d` as f32 (`[C, K / partner block]`).
    pub scales: usize,
    /// Q8_1: the stored `d * sum(levels)` as f32, one per partner block.
    pub sums: Option<usize>,
    /// Q8_K: the sums of each 16 levels as i32, `[C, K / 16]`.
    pub bsums: Option<usize>,
    /// The contracted extent.
    pub k: i64,
    /// The float operand's rows (the partner tiles' `C`).
    pub rows: i64,
    /// When the int8 tensor cores computed the whole contraction: the
    /// shared f32 tile holding it, laid out as the `dot`'s result, and that
    /// result's extents.
    pub result: Option<(usize, [i64; 2])>,
}

/// The format lowering of `quant`, or the error naming it.
pub(crate) fn lowering(quant: QuantType, what: &str) -> Result<Format, MlirError> {
    format::format(quant).ok_or_else(|| {
        MlirError::unsupported(format!(
            "quantized format `{quant}` ({what}): the PTX back end lowers q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs"
        ))
    })
}

impl<'k> Emitter<'k> {
    /// The view a quantized expression denotes.
    pub(crate) fn quant_view(&mut self, e: &Expr) -> Result<QuantView, MlirError> {
        match &e.kind {
            ExprKind::Local(id) => match self.locals.get(id) {
                Some(LocalHome::Quant(view)) => Ok(view.clone()),
                _ => Err(MlirError::unsupported(format!(
                    "quantized local #{} read before its definition",
                    id.0
                ))),
            },
            ExprKind::Load { tensor, index, .. } => {
                let quant = e.elem.quant().ok_or_else(|| {
                    MlirError::unsupported("a quantized view of a float tensor (compiler bug)")
                })?;
                let dims = self.view_dims(index)?;
                Ok(QuantView {
                    tensor: tensor.clone(),
                    quant,
                    dims,
                })
            }
            _ => Err(MlirError::unsupported(
                "a quantized value that is neither a tensor slice nor a local (compiler bug)",
            )),
        }
    }

    /// Per subscript of a quantized slice: its index or start (index
    /// type; `None` for `:`) and whether the dim stays in the tile.
    pub(crate) fn view_dims(
        &mut self,
        index: &[Slice],
    ) -> Result<Vec<(Option<Val>, bool)>, MlirError> {
        let mut dims = Vec::with_capacity(index.len());
        for slice in index {
            dims.push(match slice {
                Slice::Point(p) | Slice::Span { start: p, .. } => {
                    let v = self.eval(p, &At::scalar())?;
                    let v = self.index_value(v, self.dtype_of(p)?);
                    (Some(v), matches!(slice, Slice::Span { .. }))
                }
                Slice::Full => (None, true),
            });
        }
        Ok(dims)
    }

    /// `let w = W[...]` with `W` quantized: records the view.
    pub(crate) fn define_quant_local(
        &mut self,
        local: crate::ir::LocalId,
        value: &Expr,
    ) -> Result<(), MlirError> {
        self.prepare_quant_slices(value)?;
        let view = self.quant_view(value)?;
        self.locals.insert(local, LocalHome::Quant(view));
        Ok(())
    }

    fn prepare_quant_slices(&mut self, e: &Expr) -> Result<(), MlirError> {
        if let ExprKind::Load { index, .. } = &e.kind {
            for s in index {
                if let Slice::Point(p) | Slice::Span { start: p, .. } = s {
                    self.scalar(p)?;
                }
            }
        }
        Ok(())
    }

    /// Whether the block holding tile element `idx` (one coordinate per
    /// kept dim) is inside the tensor, and (computed only when it is, so
    /// call it under the mask) a pointer to its first byte and the element
    /// index within it.
    pub(crate) fn quant_block_mask(
        &mut self,
        view: &QuantView,
        idx: &[Val],
    ) -> Result<(Val, Vec<Val>), MlirError> {
        let dims = self.quant_param_dims(&view.tensor)?;
        let idx_ty = self.idx_ty;
        let mut coords = Vec::with_capacity(dims.len());
        let mut mask: Option<Val> = None;
        let mut k = 0usize;
        for (d, (start, kept)) in view.dims.iter().enumerate() {
            let coord = if *kept {
                let j = idx.get(k).cloned().ok_or_else(|| {
                    MlirError::unsupported("quantized slice rank mismatch (compiler bug)")
                })?;
                k += 1;
                let j = self.index_value(j, DType::I32);
                match start {
                    Some(s) => self
                        .t
                        .def(idx_ty, format!("arith.addi {s}, {j} : {idx_ty}")),
                    None => j,
                }
            } else {
                start.clone().ok_or_else(|| {
                    MlirError::unsupported("a point subscript without an index (compiler bug)")
                })?
            };
            mask = Some(self.and_in_bounds(mask, &coord, &dims[d])?);
            coords.push(coord);
        }
        let mask = mask.ok_or_else(|| MlirError::unsupported("a rank-0 quantized tensor"))?;
        Ok((mask, coords))
    }

    /// Pointer to the block holding tensor coordinates `coords` and the
    /// element index (`i32`) within it. Only valid where the mask holds.
    pub(crate) fn quant_block_at(
        &mut self,
        view: &QuantView,
        format: &Format,
        coords: &[Val],
    ) -> Result<(Val, Val), MlirError> {
        let idx_ty = self.idx_ty;
        let strides = self.strides.get(&view.tensor).cloned().unwrap_or_default();
        let last = coords.len() - 1;
        let block_len = self.const_int(format.block_len, idx_ty);
        let col = &coords[last];
        let block = self
            .t
            .def(idx_ty, format!("arith.divui {col}, {block_len} : {idx_ty}"));
        let within = self
            .t
            .def(idx_ty, format!("arith.remui {col}, {block_len} : {idx_ty}"));
        let within = if idx_ty == Ty::I32 {
            within
        } else {
            self.t
                .def(Ty::I32, format!("arith.trunci {within} : {idx_ty} to i32"))
        };
        let mut offset = None;
        for (d, coord) in coords.iter().enumerate() {
            let c = if d == last { &block } else { coord };
            let stride = strides.get(d).cloned().ok_or_else(|| {
                MlirError::unsupported(format!(
                    "missing stride of `{}` (compiler bug)",
                    view.tensor
                ))
            })?;
            let term = self
                .t
                .def(idx_ty, format!("arith.muli {c}, {stride} : {idx_ty}"));
            offset = Some(match offset {
                None => term,
                Some(o) => self
                    .t
                    .def(idx_ty, format!("arith.addi {o}, {term} : {idx_ty}")),
            });
        }
        let offset = offset.unwrap_or_else(|| self.const_int(0, idx_ty));
        let ptr = self.t.fresh("v");
        self.t.line(format!(
            "{ptr} = llvm.getelementptr %p_{}[{offset}] : (!llvm.ptr<1>, {idx_ty}) -> !llvm.ptr<1>, i8",
            view.tensor
        ));
        Ok((
            Val {
                name: ptr,
                ty: Ty::I64,
            },
            within,
        ))
    }

    fn quant_param_dims(&self, tensor: &str) -> Result<Vec<Dim>, MlirError> {
        match self.kernel.param(tensor).map(|p| &p.kind) {
            Some(ParamKind::Tensor { dims, .. }) => Ok(dims.clone()),
            _ => Err(MlirError::unsupported(format!(
                "unknown quantized tensor `{tensor}`"
            ))),
        }
    }

    /// `dequant(q)` at tile coordinates `at`: the element's f32 value, 0 in
    /// an absent block.
    pub(crate) fn dequant_at(&mut self, q: &Expr, at: &At) -> Result<Val, MlirError> {
        let view = self.quant_view(q)?;
        let format = lowering(view.quant, &format!("tensor `{}`", view.tensor))?;
        let (mask, coords) = self.quant_block_mask(&view, &at.idx)?;
        let result = self.t.fresh("v");
        self.t.open(format!("{result} = scf.if {mask} -> (f32) {{"));
        let (base, within) = self.quant_block_at(&view, &format, &coords)?;
        let env = Env {
            base,
            elem: Some(within),
            group: None,
        };
        let v = self.lower_q(&format.value, &env);
        self.t.line(format!("scf.yield {v} : f32"));
        self.t.reopen("} else {");
        let zero = self.const_float(0.0, Ty::F32);
        self.t.line(format!("scf.yield {zero} : f32"));
        self.t.close("}");
        Ok(Val {
            name: result,
            ty: Ty::F32,
        })
    }

    /// The element type a contraction reads an operand as: quantized
    /// operands are read dequantized (f32).
    pub(crate) fn operand_dtype(&self, e: &Expr) -> Result<DType, MlirError> {
        if e.elem.is_quant() {
            Ok(DType::F32)
        } else {
            self.dtype_of(e)
        }
    }

    /// `prepare` for a `dot`/`dot_t` with a quantized operand: the partner
    /// tiles for ggml's form, or the dequantized tile for the exact form.
    pub(crate) fn prepare_quant_dot(
        &mut self,
        func: Builtin,
        args: &[Expr],
        e: &Expr,
    ) -> Result<(), MlirError> {
        let [a, b] = args else {
            return Err(MlirError::unsupported("`dot` arity (compiler bug)"));
        };
        let (q, x, q_lhs) = if a.elem.is_quant() {
            (a, b, true)
        } else {
            (b, a, false)
        };
        if x.elem.is_quant() {
            return Err(MlirError::unsupported("`dot` of two quantized tiles"));
        }
        self.prepare_quant_slices(q)?;
        let view = self.quant_view(q)?;
        let format = lowering(view.quant, &format!("tensor `{}`", view.tensor))?;
        // The blocks run along the contracted dim unless q is dot's B.
        let along_k = q_lhs || func == Builtin::DotT;
        if !self.is_shared_local(x) {
            self.prepare(x, true)?;
            self.materialize(x)?;
        }
        match (&format.ggml, along_k) {
            (Some((partner, term)), true) => {
                // x's rows along K: dot(q, x) contracts x's dim 0.
                let x_rows_along_k = !(q_lhs && func == Builtin::Dot);
                let mut tiles = self.quantize_partner(*partner, x, x_rows_along_k)?;
                let weight_rows = self.extents(q)?.first().copied().unwrap_or(0);
                if let Some(shape) = self.int_mma_fits(&format, term, tiles.rows, weight_rows) {
                    let buf = self.int_mma_dot(
                        shape,
                        &view,
                        &format,
                        term,
                        &tiles,
                        tiles.rows,
                        weight_rows,
                        q_lhs,
                    )?;
                    let extents = if q_lhs {
                        [weight_rows, tiles.rows]
                    } else {
                        [tiles.rows, weight_rows]
                    };
                    tiles.result = Some((buf, extents));
                }
                self.partner_tiles.insert(e as *const Expr, tiles);
            }
            _ => {
                // The exact form: stage dequant(q) as an f32 tile.
                let extents = self.extents(q)?;
                let n: i64 = extents.iter().product();
                let buf = self.temp_buffer(Ty::F32, n as u64);
                self.barrier();
                self.for_each_owned_element(&extents, &mut |em: &mut Emitter<'k>, at: &At| {
                    let v = em.dequant_at(q, at)?;
                    let lin = em.linear(&at.idx, &extents);
                    em.buffer_store(buf, &lin, &v);
                    Ok(())
                })?;
                self.barrier();
                self.hoisted.insert(q as *const Expr, Hoisted::Tile(buf));
            }
        }
        Ok(())
    }

    /// Element `at` of a contraction in ggml's form, whose partner tiles
    /// `prepare_quant_dot` made.
    pub(crate) fn quant_dot(
        &mut self,
        args: &[Expr],
        tiles: &PartnerTiles,
        at: &At,
    ) -> Result<Val, MlirError> {
        let [a, b] = args else {
            return Err(MlirError::unsupported("`dot` arity (compiler bug)"));
        };
        let [m, n] = at.idx.as_slice() else {
            return Err(MlirError::unsupported("`dot` whose result is not rank 2"));
        };
        if let Some((buf, extents)) = tiles.result {
            let lin = self.linear(&at.idx, &extents);
            return Ok(self.buffer_load(buf, &lin));
        }
        // The quantized operand's row and the float operand's row.
        let (q, row, col) = if a.elem.is_quant() {
            (a, m.clone(), n.clone())
        } else {
            (b, n.clone(), m.clone())
        };
        let view = self.quant_view(q)?;
        let format = lowering(view.quant, &format!("tensor `{}`", view.tensor))?;
        let Some((_, term)) = format.ggml.clone() else {
            return Err(MlirError::unsupported(
                "ggml form without a partner (compiler bug)",
            ));
        };
        let blocks = self.const_i32(tiles.k / format.block_len);
        let init = self.const_float(0.0, Ty::F32);
        let (blk, sum, result) = self.open_accumulating_loop(&blocks, &init);
        let bl = self.const_i32(format.block_len);
        let first = self.t.def(Ty::I32, format!("arith.muli {blk}, {bl} : i32"));
        let next =
            self.add_term_where_present(&view, &format, &row, &first, &sum, &mut |em, base| {
                em.block_term(&format, &term, tiles, base, &col, &blk)
            })?;
        Ok(self.close_accumulating_loop(&next, result))
    }

    /// `sum + term(base)` when weight row `row`'s block starting at element
    /// `first` is inside the tensor (`base` its first byte), else `sum`
    /// unchanged: an absent block adds nothing, not even `+0.0` (which
    /// would turn a `-0.0` sum into `+0.0`).
    pub(crate) fn add_term_where_present(
        &mut self,
        view: &QuantView,
        format: &Format,
        row: &Val,
        first: &Val,
        sum: &Val,
        term: &mut dyn FnMut(&mut Emitter<'k>, &Val) -> Result<Val, MlirError>,
    ) -> Result<Val, MlirError> {
        let (mask, coords) = self.quant_block_mask(view, &[row.clone(), first.clone()])?;
        let next = self.t.fresh("v");
        self.t.open(format!("{next} = scf.if {mask} -> (f32) {{"));
        let (base, _) = self.quant_block_at(view, format, &coords)?;
        let term = term(self, &base)?;
        let added = self
            .t
            .def(Ty::F32, format!("arith.addf {sum}, {term} : f32"));
        self.t.line(format!("scf.yield {added} : f32"));
        self.t.reopen("} else {");
        self.t.line(format!("scf.yield {sum} : f32"));
        self.t.close("}");
        Ok(Val {
            name: next,
            ty: Ty::F32,
        })
    }

    /// One weight block's term (SPEC §14's table) against partner row `col`.
    fn block_term(
        &mut self,
        format: &Format,
        term: &Term,
        tiles: &PartnerTiles,
        base: &Val,
        col: &Val,
        blk: &Val,
    ) -> Result<Val, MlirError> {
        let k = self.const_i32(tiles.k);
        let row_start = self.t.def(Ty::I32, format!("arith.muli {col}, {k} : i32"));
        let bl = self.const_i32(format.block_len);
        let block_first = self.t.def(Ty::I32, format!("arith.muli {blk}, {bl} : i32"));
        let first = self.t.def(
            Ty::I32,
            format!("arith.addi {row_start}, {block_first} : i32"),
        );
        let scale = match term {
            Term::KMin { scale, .. } | Term::KScaled { scale } => Some(scale),
            _ => None,
        };
        let sumi = self.grouped_sum(format, scale, tiles, base, &first)?;
        self.term_from_sum(format, term, tiles, base, col, blk, &sumi)
    }

    /// The block term (SPEC §14's table) from its integer sum `sumi`
    /// (`sum_g scale(g) * dot_g`, wrapping `i32`): the float steps, each
    /// rounded on its own. Shared by the per-element sums and the int8
    /// tensor cores, so both give the same bits.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn term_from_sum(
        &mut self,
        format: &Format,
        term: &Term,
        tiles: &PartnerTiles,
        base: &Val,
        col: &Val,
        blk: &Val,
        sumi: &Val,
    ) -> Result<Val, MlirError> {
        // The partner block covering this weight block (same length, or one
        // Q8_K block per 256-element weight block).
        let partner_index = {
            let per_row = self.const_i32(tiles.k / tiles.partner.block_len());
            let r = self
                .t
                .def(Ty::I32, format!("arith.muli {col}, {per_row} : i32"));
            self.t.def(Ty::I32, format!("arith.addi {r}, {blk} : i32"))
        };
        let dx = self.buffer_load(tiles.scales, &partner_index);
        let d = self.lower_q(
            &format.d,
            &Env {
                base: base.clone(),
                elem: None,
                group: None,
            },
        );
        let sumi_f = self
            .t
            .def(Ty::F32, format!("arith.sitofp {sumi} : i32 to f32"));
        let ddx = self.t.def(Ty::F32, format!("arith.mulf {d}, {dx} : f32"));
        let env = Env {
            base: base.clone(),
            elem: None,
            group: None,
        };
        Ok(match term {
            Term::Signed => self
                .t
                .def(Ty::F32, format!("arith.mulf {sumi_f}, {ddx} : f32")),
            Term::Offset { m } => {
                let sums = tiles.sums.ok_or_else(|| {
                    MlirError::unsupported("q8_1 partner without sums (compiler bug)")
                })?;
                let sx = self.buffer_load(sums, &partner_index);
                let m = self.lower_q(m, &env);
                let scaled = self
                    .t
                    .def(Ty::F32, format!("arith.mulf {ddx}, {sumi_f} : f32"));
                let offset = self.t.def(Ty::F32, format!("arith.mulf {m}, {sx} : f32"));
                self.t
                    .def(Ty::F32, format!("arith.addf {scaled}, {offset} : f32"))
            }
            Term::KScaled { .. } => self
                .t
                .def(Ty::F32, format!("arith.mulf {ddx}, {sumi_f} : f32")),
            Term::KMin { min, dmin, .. } => {
                let bsums = tiles.bsums.ok_or_else(|| {
                    MlirError::unsupported("q8_K partner without block sums (compiler bug)")
                })?;
                let scaled = self
                    .t
                    .def(Ty::F32, format!("arith.mulf {ddx}, {sumi_f} : f32"));
                // sum over the 16 level sums of bsum * min(group of the 16).
                let sixteen = self.const_i32(16);
                let zero = self.const_i32(0);
                let (g16, acc, result) = self.open_accumulating_loop(&sixteen, &zero);
                let per_row = self.const_i32(tiles.k / 16);
                let r = self
                    .t
                    .def(Ty::I32, format!("arith.muli {col}, {per_row} : i32"));
                let b16 = self
                    .t
                    .def(Ty::I32, format!("arith.muli {blk}, {sixteen} : i32"));
                let at = self.t.def(Ty::I32, format!("arith.addi {r}, {b16} : i32"));
                let at = self.t.def(Ty::I32, format!("arith.addi {at}, {g16} : i32"));
                let bsum = self.buffer_load(bsums, &at);
                let per_group = self.const_i32(format.group_len / 16);
                let group = self
                    .t
                    .def(Ty::I32, format!("arith.divui {g16}, {per_group} : i32"));
                let mn = self.lower_q(
                    min,
                    &Env {
                        base: base.clone(),
                        elem: None,
                        group: Some(group),
                    },
                );
                let prod = self
                    .t
                    .def(Ty::I32, format!("arith.muli {bsum}, {mn} : i32"));
                let next = self
                    .t
                    .def(Ty::I32, format!("arith.addi {acc}, {prod} : i32"));
                let mins = self.close_accumulating_loop(&next, result);
                let mins_f = self
                    .t
                    .def(Ty::F32, format!("arith.sitofp {mins} : i32 to f32"));
                let dmin = self.lower_q(dmin, &env);
                let dmdx = self
                    .t
                    .def(Ty::F32, format!("arith.mulf {dmin}, {dx} : f32"));
                let offset = self
                    .t
                    .def(Ty::F32, format!("arith.mulf {dmdx}, {mins_f} : f32"));
                self.t
                    .def(Ty::F32, format!("arith.subf {scaled}, {offset} : f32"))
            }
        })
    }

    /// `sum_g scale(g) * sum_{e in g} level(e) * xq(e)` in wrapping `i32`
    /// (one group of scale 1 when `scale` is `None`); `first` is the
    /// block's first element in the levels tile.
    fn grouped_sum(
        &mut self,
        format: &Format,
        scale: Option<&format::Q>,
        tiles: &PartnerTiles,
        base: &Val,
        first: &Val,
    ) -> Result<Val, MlirError> {
        let (groups, group_len) = match scale {
            Some(_) => (format.block_len / format.group_len, format.group_len),
            None => (1, format.block_len),
        };
        let count = self.const_i32(groups);
        let zero = self.const_i32(0);
        let (g, outer, outer_result) = self.open_accumulating_loop(&count, &zero);
        let len = self.const_i32(group_len);
        let gl = self.t.def(Ty::I32, format!("arith.muli {g}, {len} : i32"));
        // Every format's levels and every partner level fit an i8, so on
        // sm_61+ four products at a time are one `dp4a` (bytes sign-
        // extended, summed into the i32): the same wrapping integer sum.
        let dp4a = self.target.sm >= 61 && group_len % 4 == 0;
        let (step, steps) = if dp4a {
            (4, group_len / 4)
        } else {
            (1, group_len)
        };
        let steps = self.const_i32(steps);
        let (j, inner, inner_result) = self.open_accumulating_loop(&steps, &zero);
        let step_val = self.const_i32(step);
        let j_first = self
            .t
            .def(Ty::I32, format!("arith.muli {j}, {step_val} : i32"));
        let mut w_levels = Vec::with_capacity(step as usize);
        let mut x_levels = Vec::with_capacity(step as usize);
        for lane in 0..step {
            let lane_val = self.const_i32(lane);
            let within = self
                .t
                .def(Ty::I32, format!("arith.addi {j_first}, {lane_val} : i32"));
            let e = self
                .t
                .def(Ty::I32, format!("arith.addi {gl}, {within} : i32"));
            w_levels.push(self.lower_q(
                &format.level,
                &Env {
                    base: base.clone(),
                    elem: Some(e.clone()),
                    group: None,
                },
            ));
            let at = self
                .t
                .def(Ty::I32, format!("arith.addi {first}, {e} : i32"));
            let xq = self.buffer_load(tiles.levels, &at);
            x_levels.push(self.t.def(Ty::I32, format!("arith.extsi {xq} : i8 to i32")));
        }
        let next = if dp4a {
            let w = self.pack_bytes(&w_levels);
            let x = self.pack_bytes(&x_levels);
            self.call_intrinsic("llvm.nvvm.idp4a.s.s", &[w, x, inner.clone()], Ty::I32)
        } else {
            let (w, x) = (&w_levels[0], &x_levels[0]);
            let prod = self.t.def(Ty::I32, format!("arith.muli {w}, {x} : i32"));
            self.t
                .def(Ty::I32, format!("arith.addi {inner}, {prod} : i32"))
        };
        let dot = self.close_accumulating_loop(&next, inner_result);
        let scaled = match scale {
            Some(scale) => {
                let sc = self.lower_q(
                    scale,
                    &Env {
                        base: base.clone(),
                        elem: None,
                        group: Some(g),
                    },
                );
                self.t.def(Ty::I32, format!("arith.muli {sc}, {dot} : i32"))
            }
            None => dot,
        };
        let next = self
            .t
            .def(Ty::I32, format!("arith.addi {outer}, {scaled} : i32"));
        Ok(self.close_accumulating_loop(&next, outer_result))
    }

    /// The low bytes of `values` (each an `i32` holding an `i8` level)
    /// packed into one `i32`, `values[0]` in the lowest byte: the operand
    /// form of `dp4a` and of the int8 `mma.sync` fragments.
    pub(crate) fn pack_bytes(&mut self, values: &[Val]) -> Val {
        let byte_mask = self.const_i32(0xFF);
        let mut packed: Option<Val> = None;
        for (i, v) in values.iter().enumerate() {
            let byte = self
                .t
                .def(Ty::I32, format!("arith.andi {v}, {byte_mask} : i32"));
            let byte = if i == 0 {
                byte
            } else {
                let shift = self.const_i32(8 * i as i64);
                self.t
                    .def(Ty::I32, format!("arith.shli {byte}, {shift} : i32"))
            };
            packed = Some(match packed {
                Some(p) => self.t.def(Ty::I32, format!("arith.ori {p}, {byte} : i32")),
                None => byte,
            });
        }
        packed.unwrap_or_else(|| self.const_i32(0))
    }
}
