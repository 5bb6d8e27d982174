//! ggml-form contractions on the int8 tensor cores (sm_80+): the integer
//! sum of each scale group is one warp-wide `mma.sync` (m16n8k32 for
//! 32-element groups, m16n8k16 for 16-element ones), `s8 x s8 -> s32`.
//!
//! The partner levels (the float operand quantized, already in shared
//! memory) are the A operand, 16 partner rows per tile; the weight levels,
//! decoded from the blocks in global memory, are B, 8 weight rows per
//! tile. Every product of two `i8` levels and every sum of a group is the
//! same integer the per-element path's wrapping `i32` sums give (a group's
//! sum is at most 32 * 128 * 128 in magnitude), and the float steps of
//! each block's term are [`Emitter::term_from_sum`], the per-element
//! path's own, applied in block order to the four C elements each thread
//! holds. So the two paths give the same bits; the result tile goes
//! through shared memory to the statement's element loop.
//!
//! The fragment layouts are PTX ISA's for `mma.m16n8k32` / `m16n8k16`
//! with `.s8` operands ([`IntMmaK`]'s `a_at`, `b_at`, `c_at`; lane `l` is
//! in group `l / 4`, position `l % 4` within it); they are unit-tested
//! against the ISA's tables, and running them is the device check's job.

use super::super::{Emitter, text::Space, text::Ty, text::Val};
use super::format::{Format, Term};
use super::lower::Env;
use super::{PartnerTiles, QuantView};
use crate::back::mlir::MlirError;

/// Which int8 `mma.sync` a scale group of this length takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IntMmaK {
    K16,
    K32,
}

impl IntMmaK {
    /// The shape for groups of `group_len` elements, if there is one.
    pub(crate) fn for_group(group_len: i64) -> Option<IntMmaK> {
        match group_len {
            16 => Some(IntMmaK::K16),
            32 => Some(IntMmaK::K32),
            _ => None,
        }
    }

    pub(crate) fn k(self) -> i64 {
        match self {
            IntMmaK::K16 => 16,
            IntMmaK::K32 => 32,
        }
    }

    /// `.b32` registers of A (four `i8` each).
    pub(crate) fn a_regs(self) -> i64 {
        self.k() / 8
    }

    /// `.b32` registers of B.
    pub(crate) fn b_regs(self) -> i64 {
        self.k() / 16
    }

    /// (row, first k) of A register `reg` of `lane`: its four bytes are
    /// k, k + 1, k + 2, k + 3 of that row.
    pub(crate) fn a_at(self, lane: i64, reg: i64) -> (i64, i64) {
        let (group, pos) = (lane / 4, lane % 4);
        match self {
            IntMmaK::K16 => (group + 8 * reg, 4 * pos),
            IntMmaK::K32 => (group + 8 * (reg % 2), 4 * pos + 16 * (reg / 2)),
        }
    }

    /// (first k, column) of B register `reg` of `lane`.
    pub(crate) fn b_at(self, lane: i64, reg: i64) -> (i64, i64) {
        (4 * (lane % 4) + 16 * reg, lane / 4)
    }

    /// (row, column) of C element `i` (0..4) of `lane`.
    pub(crate) fn c_at(lane: i64, i: i64) -> (i64, i64) {
        (lane / 4 + 8 * (i / 2), 2 * (lane % 4) + i % 2)
    }

    fn instruction(self) -> String {
        format!("mma.sync.aligned.m16n8k{}.row.col.s32.s8.s8.s32", self.k())
    }
}

/// Partner rows per tensor-core tile (mma's M).
const TILE_ROWS: i64 = 16;
/// Weight rows per tile (mma's N).
const TILE_COLS: i64 = 8;

impl<'k> Emitter<'k> {
    /// Whether this contraction runs on the int8 tensor cores: sm_80+, whole
    /// warps, outside any element loop, tiles of whole mma shapes (16
    /// partner rows, 8 weight rows, scale groups of 16 or 32), and room in
    /// shared memory for the result tile (counting it as a new buffer, so a
    /// variant that fits without it still fits, on the per-element path).
    pub(crate) fn int_mma_fits(
        &self,
        format: &Format,
        term: &Term,
        partner_rows: i64,
        weight_rows: i64,
    ) -> Option<IntMmaK> {
        let group_len = match term {
            Term::KMin { .. } | Term::KScaled { .. } => format.group_len,
            Term::Signed | Term::Offset { .. } => format.block_len,
        };
        let fits = self.target.sm >= 80
            && self.threads % 32 == 0
            && self.element_loop_depth == 0
            && partner_rows > 0
            && partner_rows % TILE_ROWS == 0
            && weight_rows > 0
            && weight_rows % TILE_COLS == 0
            && self.shared_bytes_so_far() + (partner_rows * weight_rows * 4) as u64
                <= self.target.max_static_shared_bytes();
        if fits {
            IntMmaK::for_group(group_len)
        } else {
            None
        }
    }

    /// Computes the whole contraction (`q` against the partner tiles) on
    /// the tensor cores into a shared f32 tile laid out as the `dot`'s
    /// result (`[weight rows, partner rows]` when `q_lhs`, else the
    /// transpose); every thread of the CTA must reach this.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn int_mma_dot(
        &mut self,
        shape: IntMmaK,
        view: &QuantView,
        format: &Format,
        term: &Term,
        tiles: &PartnerTiles,
        partner_rows: i64,
        weight_rows: i64,
        q_lhs: bool,
    ) -> Result<usize, MlirError> {
        let out = self.temp_buffer(Ty::F32, (partner_rows * weight_rows) as u64);
        let (warp, lane) = self.warp_and_lane()?;
        let four = self.const_i32(4);
        let group = self
            .t
            .def(Ty::I32, format!("arith.divui {lane}, {four} : i32"));
        let pos = self
            .t
            .def(Ty::I32, format!("arith.remui {lane}, {four} : i32"));
        let tiles_per_row = weight_rows / TILE_COLS;
        let tile_count = self.const_i32((partner_rows / TILE_ROWS) * tiles_per_row);
        let warps = self.const_i32(self.threads / 32);
        let t = self.t.fresh("tile");
        self.t.open(format!(
            "scf.for {t} = {warp} to {tile_count} step {warps} : i32 {{"
        ));
        let per_row = self.const_i32(tiles_per_row);
        let tile_row = self
            .t
            .def(Ty::I32, format!("arith.divui {t}, {per_row} : i32"));
        let tile_col = self
            .t
            .def(Ty::I32, format!("arith.remui {t}, {per_row} : i32"));
        let m0 = self.scaled(&tile_row, TILE_ROWS);
        let n0 = self.scaled(&tile_col, TILE_COLS);
        // The four C elements' (partner row, weight row), and B's weight row.
        let lane_part = |em: &mut Emitter<'k>, base: &Val, of_lane: &Val, coeff: i64, off: i64| {
            let scaled = em.scaled(of_lane, coeff);
            let at =
                em.t.def(Ty::I32, format!("arith.addi {base}, {scaled} : i32"));
            em.offset(&at, off)
        };
        let mut c_rows = Vec::with_capacity(4);
        for i in 0..4 {
            let (row, col) = IntMmaK::c_at(0, i);
            let m = lane_part(self, &m0, &group, 1, row);
            let n = lane_part(self, &n0, &pos, 2, col);
            c_rows.push((m, n));
        }
        let b_row = lane_part(self, &n0, &group, 1, 0);
        let acc = self.new_buffer(Ty::F32, 4, Space::Private);
        let zero_f = self.const_float(0.0, Ty::F32);
        for i in 0..4 {
            let slot = self.const_i32(i);
            self.buffer_store(acc, &slot, &zero_f);
        }
        let blocks = self.const_i32(tiles.k / format.block_len);
        let blk = self.open_counted_loop(&blocks);
        let bl = self.const_i32(format.block_len);
        let first = self.t.def(Ty::I32, format!("arith.muli {blk}, {bl} : i32"));
        let sums = self.int_mma_block_sums(
            shape, view, format, term, tiles, &first, &b_row, &c_rows, &group, &pos, &m0,
        )?;
        for (i, (m, n)) in c_rows.iter().enumerate() {
            let slot = self.const_i32(i as i64);
            let sum = self.buffer_load(acc, &slot);
            let next =
                self.add_term_where_present(view, format, n, &first, &sum, &mut |em, base| {
                    let sumi = em.buffer_load(sums, &slot);
                    em.term_from_sum(format, term, tiles, base, m, &blk, &sumi)
                })?;
            self.buffer_store(acc, &slot, &next);
        }
        self.t.close("}");
        for (i, (m, n)) in c_rows.iter().enumerate() {
            let slot = self.const_i32(i as i64);
            let v = self.buffer_load(acc, &slot);
            let at = if q_lhs {
                self.linear(&[n.clone(), m.clone()], &[weight_rows, partner_rows])
            } else {
                self.linear(&[m.clone(), n.clone()], &[partner_rows, weight_rows])
            };
            self.buffer_store(out, &at, &v);
        }
        self.t.close("}");
        self.barrier();
        Ok(out)
    }

    /// One weight block's integer sums for this thread's four C elements,
    /// `sum_g scale(g) * dot_g` (wrapping `i32`, as the per-element path),
    /// each group's dots one `mma.sync`; returned in a private buffer of
    /// four. `first` is the block's first element along K.
    #[allow(clippy::too_many_arguments)]
    fn int_mma_block_sums(
        &mut self,
        shape: IntMmaK,
        view: &QuantView,
        format: &Format,
        term: &Term,
        tiles: &PartnerTiles,
        first: &Val,
        b_row: &Val,
        c_rows: &[(Val, Val)],
        group: &Val,
        pos: &Val,
        m0: &Val,
    ) -> Result<usize, MlirError> {
        let scale = match term {
            Term::KMin { scale, .. } | Term::KScaled { scale } => Some(scale),
            Term::Signed | Term::Offset { .. } => None,
        };
        let sums = self.new_buffer(Ty::I32, 4, Space::Private);
        let zero = self.const_i32(0);
        for i in 0..4 {
            let slot = self.const_i32(i);
            self.buffer_store(sums, &slot, &zero);
        }
        let groups = format.block_len / shape.k();
        let group_count = self.const_i32(groups);
        let g = self.open_counted_loop(&group_count);
        let k_len = self.const_i32(shape.k());
        let group_first = self
            .t
            .def(Ty::I32, format!("arith.muli {g}, {k_len} : i32"));
        // A: partner levels from shared memory, row (m0 + row), elements
        // first + group_first + k .. + 4.
        let lane_k = self.scaled(pos, 4);
        let along = self
            .t
            .def(Ty::I32, format!("arith.addi {first}, {group_first} : i32"));
        let mut a_regs = Vec::new();
        for reg in 0..shape.a_regs() {
            let (row, k) = shape.a_at(0, reg);
            let m = self.offset(m0, row);
            let m = self
                .t
                .def(Ty::I32, format!("arith.addi {m}, {group} : i32"));
            let row_start = self.scaled(&m, tiles.k);
            let at = self
                .t
                .def(Ty::I32, format!("arith.addi {row_start}, {along} : i32"));
            let at = self
                .t
                .def(Ty::I32, format!("arith.addi {at}, {lane_k} : i32"));
            let at = self.offset(&at, k);
            let mut bytes = Vec::with_capacity(4);
            for b in 0..4 {
                let byte_at = self.offset(&at, b);
                let level = self.buffer_load(tiles.levels, &byte_at);
                bytes.push(
                    self.t
                        .def(Ty::I32, format!("arith.extsi {level} : i8 to i32")),
                );
            }
            a_regs.push(self.pack_bytes(&bytes));
        }
        // B: this lane's weight row, elements group_first + k .. + 4 of the
        // block; 0 where the block is outside the tensor.
        let (mask, coords) = self.quant_block_mask(view, &[b_row.clone(), first.clone()])?;
        let b_packed = self.t.fresh("v");
        let b_types = vec!["i32"; shape.b_regs() as usize].join(", ");
        self.t.open(format!(
            "{b_packed}:{} = scf.if {mask} -> ({b_types}) {{",
            shape.b_regs()
        ));
        let (base, _) = self.quant_block_at(view, format, &coords)?;
        let mut b_regs = Vec::new();
        for reg in 0..shape.b_regs() {
            let (k, _) = shape.b_at(0, reg);
            let e0 = self
                .t
                .def(Ty::I32, format!("arith.addi {group_first}, {lane_k} : i32"));
            let e0 = self.offset(&e0, k);
            let mut levels = Vec::with_capacity(4);
            for b in 0..4 {
                let e = self.offset(&e0, b);
                levels.push(self.lower_q(
                    &format.level,
                    &Env {
                        base: base.clone(),
                        elem: Some(e),
                        group: None,
                    },
                ));
            }
            b_regs.push(self.pack_bytes(&levels));
        }
        let names = b_regs.iter().map(|v| v.name.clone()).collect::<Vec<_>>();
        self.t
            .line(format!("scf.yield {} : {b_types}", names.join(", ")));
        self.t.reopen("} else {");
        let zeros = vec![zero.name.clone(); shape.b_regs() as usize];
        self.t
            .line(format!("scf.yield {} : {b_types}", zeros.join(", ")));
        self.t.close("}");
        let b_regs = (0..shape.b_regs())
            .map(|r| Val {
                name: format!("{b_packed}#{r}"),
                ty: Ty::I32,
            })
            .collect::<Vec<_>>();
        let dots = self.int_mma(shape, &a_regs, &b_regs)?;
        for (i, (_, n)) in c_rows.iter().enumerate() {
            let slot = self.const_i32(i as i64);
            let sum = self.buffer_load(sums, &slot);
            let scaled = match scale {
                None => dots[i].clone(),
                Some(scale) => {
                    // The group's scale of weight row n (0 outside the tensor,
                    // where the term is skipped anyway).
                    let (mask, coords) =
                        self.quant_block_mask(view, &[n.clone(), first.clone()])?;
                    let sc = self.t.fresh("v");
                    self.t.open(format!("{sc} = scf.if {mask} -> (i32) {{"));
                    let (base, _) = self.quant_block_at(view, format, &coords)?;
                    // One mma step per scale group: the step is the group.
                    let v = self.lower_q(
                        scale,
                        &Env {
                            base,
                            elem: None,
                            group: Some(g.clone()),
                        },
                    );
                    self.t.line(format!("scf.yield {v} : i32"));
                    self.t.reopen("} else {");
                    self.t.line(format!("scf.yield {zero} : i32"));
                    self.t.close("}");
                    let dot = &dots[i];
                    self.t.def(Ty::I32, format!("arith.muli {sc}, {dot} : i32"))
                }
            };
            let next = self
                .t
                .def(Ty::I32, format!("arith.addi {sum}, {scaled} : i32"));
            self.buffer_store(sums, &slot, &next);
        }
        self.t.close("}");
        Ok(sums)
    }

    /// `scf.for` over `0..count` without loop-carried values (the sums
    /// live in private buffers); closed by `self.t.close("}")`.
    fn open_counted_loop(&mut self, count: &Val) -> Val {
        let lo = self.const_i32(0);
        let one = self.const_i32(1);
        let i = self.t.fresh("i");
        self.t
            .open(format!("scf.for {i} = {lo} to {count} step {one} : i32 {{"));
        Val {
            name: i,
            ty: Ty::I32,
        }
    }

    /// One `mma.sync` with a zero accumulator; the four `i32` results.
    fn int_mma(&mut self, shape: IntMmaK, a: &[Val], b: &[Val]) -> Result<Vec<Val>, MlirError> {
        let zero = self.const_i32(0);
        let operands: Vec<Val> = a
            .iter()
            .chain(b)
            .cloned()
            .chain(std::iter::repeat_n(zero, 4))
            .collect();
        let (na, nb) = (a.len(), b.len());
        let list = |from: usize, n: usize| {
            (from..from + n)
                .map(|i| format!("${i}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let asm = format!(
            "{} {{{}}}, {{{}}}, {{{}}}, {{{}}};",
            shape.instruction(),
            list(0, 4),
            list(4, na),
            list(4 + na, nb),
            list(4 + na + nb, 4)
        );
        let constraints = std::iter::repeat_n("=r", 4)
            .chain(std::iter::repeat_n("r", operands.len()))
            .collect::<Vec<_>>()
            .join(",");
        let names = operands
            .iter()
            .map(|v| v.name.clone())
            .collect::<Vec<_>>()
            .join(", ");
        let types = vec!["i32"; operands.len()].join(", ");
        let result = self.t.fresh("mma");
        let st = "!llvm.struct<(i32, i32, i32, i32)>";
        self.t.line(format!(
            "{result} = llvm.inline_asm has_side_effects \"{asm}\", \"{constraints}\" {names} : ({types}) -> {st}"
        ));
        Ok((0..4)
            .map(|i| {
                self.t
                    .def(Ty::I32, format!("llvm.extractvalue {result}[{i}] : {st}"))
            })
            .collect())
    }

    /// `v * factor` in `i32`.
    fn scaled(&mut self, v: &Val, factor: i64) -> Val {
        if factor == 1 {
            return v.clone();
        }
        let f = self.const_i32(factor);
        self.t.def(Ty::I32, format!("arith.muli {v}, {f} : i32"))
    }

    /// `v + off` in `i32`.
    fn offset(&mut self, v: &Val, off: i64) -> Val {
        if off == 0 {
            return v.clone();
        }
        let o = self.const_i32(off);
        self.t.def(Ty::I32, format!("arith.addi {v}, {o} : i32"))
    }
}

#[cfg(test)]
mod tests {
    use super::IntMmaK;
    use std::collections::HashSet;

    /// Every element of A (16 x k), B (k x 8) and C (16 x 8) is held by
    /// exactly one (lane, register, byte) of the warp.
    #[test]
    fn fragments_cover_each_element_once() {
        for shape in [IntMmaK::K16, IntMmaK::K32] {
            let k = shape.k();
            let mut a = HashSet::new();
            let mut b = HashSet::new();
            let mut c = HashSet::new();
            for lane in 0..32 {
                for reg in 0..shape.a_regs() {
                    let (row, k0) = shape.a_at(lane, reg);
                    for byte in 0..4 {
                        assert!(row < 16 && k0 + byte < k);
                        assert!(a.insert((row, k0 + byte)), "{shape:?} A {lane} {reg}");
                    }
                }
                for reg in 0..shape.b_regs() {
                    let (k0, col) = shape.b_at(lane, reg);
                    for byte in 0..4 {
                        assert!(col < 8 && k0 + byte < k);
                        assert!(b.insert((k0 + byte, col)), "{shape:?} B {lane} {reg}");
                    }
                }
                for i in 0..4 {
                    let (row, col) = IntMmaK::c_at(lane, i);
                    assert!(row < 16 && col < 8);
                    assert!(c.insert((row, col)));
                }
            }
            assert_eq!(a.len() as i64, 16 * k);
            assert_eq!(b.len() as i64, k * 8);
            assert_eq!(c.len(), 128);
        }
    }

    /// Entries of PTX ISA's fragment tables for `.s8` (mma.m16n8k32: a0..a3
    /// row groupID, a4..a7 row groupID + 8, a8..a15 the same rows 16
    /// columns on; b0..b3 rows tid*4.., b4..b7 16 on; c0, c1 row groupID,
    /// c2, c3 row groupID + 8, columns tid*2 + (i & 1); m16n8k16: a0..a3
    /// row groupID, a4..a7 groupID + 8, one B register).
    #[test]
    fn fragments_match_the_ptx_tables() {
        // lane 13: groupID 3, threadID_in_group 1.
        let k32 = IntMmaK::K32;
        assert_eq!(k32.a_at(13, 0), (3, 4));
        assert_eq!(k32.a_at(13, 1), (11, 4));
        assert_eq!(k32.a_at(13, 2), (3, 20));
        assert_eq!(k32.a_at(13, 3), (11, 20));
        assert_eq!(k32.b_at(13, 0), (4, 3));
        assert_eq!(k32.b_at(13, 1), (20, 3));
        let k16 = IntMmaK::K16;
        assert_eq!(k16.a_at(13, 0), (3, 4));
        assert_eq!(k16.a_at(13, 1), (11, 4));
        assert_eq!(k16.b_at(13, 0), (4, 3));
        assert_eq!(IntMmaK::c_at(13, 0), (3, 2));
        assert_eq!(IntMmaK::c_at(13, 1), (3, 3));
        assert_eq!(IntMmaK::c_at(13, 3), (11, 3));
        // lane 31: groupID 7, threadID_in_group 3.
        assert_eq!(k32.a_at(31, 3), (15, 28));
        assert_eq!(IntMmaK::c_at(31, 3), (15, 7));
    }

    /// The emitter writes each position as `lane part + register part`
    /// (the layout at lane 0 plus group or position times a coefficient):
    /// that split holds for every lane.
    #[test]
    fn lane_and_register_parts_separate() {
        for shape in [IntMmaK::K16, IntMmaK::K32] {
            for lane in 0..32 {
                let (group, pos) = (lane / 4, lane % 4);
                for reg in 0..shape.a_regs() {
                    let (r0, k0) = shape.a_at(0, reg);
                    assert_eq!(shape.a_at(lane, reg), (r0 + group, k0 + 4 * pos));
                }
                for reg in 0..shape.b_regs() {
                    let (k0, c0) = shape.b_at(0, reg);
                    assert_eq!(shape.b_at(lane, reg), (k0 + 4 * pos, c0 + group));
                }
                for i in 0..4 {
                    let (r0, c0) = IntMmaK::c_at(0, i);
                    assert_eq!(IntMmaK::c_at(lane, i), (r0 + group, c0 + 2 * pos));
                }
            }
        }
    }
}
