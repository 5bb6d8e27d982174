//! The copies that fill one half of a staged tile: asynchronous
//! (`nvgpu.device_async_copy`, sm_80+), synchronous, and the register
//! prefetch of sm_75. Every thread copies the elements it owns in the
//! usual cyclic layout (of groups, for narrow types), so no element is
//! written twice.

use crate::ir::{Expr, ExprKind, Slice};

use super::{super::At, Emitter, Staging};
use crate::back::mlir::{MlirError, emit::text::Ty, emit::text::Val};

/// Bytes one `cp.async` moves at least.
const MIN_COPY_BYTES: u64 = 4;
/// Bytes one `cp.async` moves at most.
const MAX_COPY_BYTES: u64 = 16;

/// What every run of one staged tile's copies shares.
struct Run<'a> {
    half_offset: &'a Val,
    /// Unit innermost stride (`i1`) and the low bits of the tensor's base
    /// address; `None` when every run is a single element.
    contiguous: Option<&'a (Val, Val)>,
    other_is_zero: bool,
}

/// The LLVM struct of a rank-1 memref descriptor with 64-bit index
/// fields, which is what `convert-nvgpu-to-nvvm` expects.
const GLOBAL_DESCRIPTOR: &str =
    "!llvm.struct<(ptr<1>, ptr<1>, i64, array<1 x i64>, array<1 x i64>)>";

impl<'k> Emitter<'k> {
    /// `tensor` as a `memref<?xT, 1>` starting at its first element, for
    /// the source of `nvgpu` copies (offsets are computed by
    /// [`Emitter::tensor_address`]; size and stride are never read).
    pub(super) fn global_view(&mut self, tensor: &str, mem_ty: Ty) -> String {
        let ptr = format!("%p_{tensor}");
        let d = GLOBAL_DESCRIPTOR;
        let undef = self.t.def(Ty::I64, format!("llvm.mlir.undef : {d}"));
        let with_base = self
            .t
            .def(Ty::I64, format!("llvm.insertvalue {ptr}, {undef}[0] : {d}"));
        let with_aligned = self.t.def(
            Ty::I64,
            format!("llvm.insertvalue {ptr}, {with_base}[1] : {d}"),
        );
        let zero = self.t.def(Ty::I64, "llvm.mlir.constant(0 : i64) : i64");
        let with_offset = self.t.def(
            Ty::I64,
            format!("llvm.insertvalue {zero}, {with_aligned}[2] : {d}"),
        );
        let size = self.t.def(
            Ty::I64,
            format!("llvm.mlir.constant({} : i64) : i64", i64::MAX),
        );
        let with_size = self.t.def(
            Ty::I64,
            format!("llvm.insertvalue {size}, {with_offset}[3, 0] : {d}"),
        );
        let one = self.t.def(Ty::I64, "llvm.mlir.constant(1 : i64) : i64");
        let desc = self.t.def(
            Ty::I64,
            format!("llvm.insertvalue {one}, {with_size}[4, 0] : {d}"),
        );
        let view = self.t.def(
            Ty::I64,
            format!(
                "builtin.unrealized_conversion_cast {desc} : {d} to {}",
                global_memref(mem_ty)
            ),
        );
        view.name
    }

    /// Issues the copies of one staged tile into the half at element
    /// `half_offset` (`i32`), under the loop variable bound by the caller.
    pub(super) fn copy_async(
        &mut self,
        s: &Staging<'k>,
        half_offset: &Val,
    ) -> Result<(), MlirError> {
        let mem_ty = Ty::in_memory(s.tile.dtype);
        let elem_bytes = mem_ty.size_bytes();
        let inner = s.extents.last().copied().unwrap_or(1);
        let group = if elem_bytes >= MIN_COPY_BYTES {
            1
        } else {
            (MIN_COPY_BYTES / elem_bytes) as i64
        };
        if group > 1 && inner % group != 0 {
            // Groups would straddle rows: every element goes the plain way.
            return self.copy_sync(s, half_offset);
        }
        // 16-byte runs of 2- and 4-byte elements where rows split into
        // them (and the thread layout is the plain cyclic one); a run
        // that fails its run-time checks falls back to today's copies.
        let wide = (MAX_COPY_BYTES / elem_bytes) as i64;
        let mut run = group;
        if matches!(elem_bytes, 2 | 4) && inner % wide == 0 {
            let mut wide_extents = s.extents.clone();
            if let Some(last) = wide_extents.last_mut() {
                *last /= wide;
            }
            if self.fragment_tiling(&wide_extents).is_none() {
                run = wide;
            }
        }
        let other_is_zero = s.tile.other.is_none_or(is_zero_literal);
        let idx_ty = self.idx_ty;
        // Run-time conditions shared by every run of the tile.
        let contiguous = if run > 1 {
            let stride = self.inner_stride(s)?;
            let one = self.const_int(1, idx_ty);
            let unit = self
                .t
                .def(Ty::I1, format!("arith.cmpi eq, {stride}, {one} : {idx_ty}"));
            let raw = self.t.def(
                Ty::I64,
                format!("llvm.ptrtoint %p_{} : !llvm.ptr<1> to i64", s.tile.tensor),
            );
            let low = if idx_ty == Ty::I64 {
                raw
            } else {
                self.t
                    .def(idx_ty, format!("arith.trunci {raw} : i64 to {idx_ty}"))
            };
            Some((unit, low))
        } else {
            None
        };
        let mut unit_extents = s.extents.clone();
        if let Some(last) = unit_extents.last_mut() {
            *last /= run;
        }
        let copy = Run {
            half_offset,
            contiguous: contiguous.as_ref(),
            other_is_zero,
        };
        self.for_each_owned_element(&unit_extents, &mut |em: &mut Emitter<'k>, at: &At| {
            let first = em.group_coords(&at.idx, run, 0);
            em.copy_run(s, &copy, &first, run, group)
        })
    }

    /// Copies the `n` consecutive elements of a row that start at `first`:
    /// one `cp.async` when the run is contiguous, aligned and (as `other`
    /// needs) in bounds; otherwise runs of `fallback` elements, or element
    /// by element with plain masked loads when `fallback` is `n`.
    fn copy_run(
        &mut self,
        s: &Staging<'k>,
        copy: &Run<'_>,
        first: &At,
        n: i64,
        fallback: i64,
    ) -> Result<(), MlirError> {
        let elem_bytes = Ty::in_memory(s.tile.dtype).size_bytes();
        let idx_ty = self.idx_ty;
        let (offset, mask, _) = self.tensor_address(s.tile.tensor, s.tile.index, first)?;
        let lin = self.linear(&first.idx, &s.extents);
        let half_offset = copy.half_offset;
        let dst = self
            .t
            .def(Ty::I32, format!("arith.addi {lin}, {half_offset} : i32"));
        let Some((unit, base_low)) = copy.contiguous else {
            return self.copy_one_element(s, &offset, mask, &dst, copy.other_is_zero);
        };
        if n == 1 {
            return self.copy_one_element(s, &offset, mask, &dst, copy.other_is_zero);
        }
        let mut masks = Vec::new();
        for e in 0..n {
            let at_e = self.shifted(first, e);
            let (_, m, _) = self.tensor_address(s.tile.tensor, s.tile.index, &at_e)?;
            masks.push(m);
        }
        let bytes = self.const_int(elem_bytes as i64, idx_ty);
        let scaled = self
            .t
            .def(idx_ty, format!("arith.muli {offset}, {bytes} : {idx_ty}"));
        let addr = self.t.def(
            idx_ty,
            format!("arith.addi {base_low}, {scaled} : {idx_ty}"),
        );
        let align_mask = self.const_int((n as u64 * elem_bytes - 1) as i64, idx_ty);
        let low_bits = self.t.def(
            idx_ty,
            format!("arith.andi {addr}, {align_mask} : {idx_ty}"),
        );
        let zero = self.const_int(0, idx_ty);
        let aligned = self.t.def(
            Ty::I1,
            format!("arith.cmpi eq, {low_bits}, {zero} : {idx_ty}"),
        );
        let mut fast = self
            .t
            .def(Ty::I1, format!("arith.andi {unit}, {aligned} : i1"));
        // With element 0 in bounds the in-bounds elements are a prefix
        // (coordinates only grow along the run), so `srcElements`
        // zero-fills exactly the out-of-bounds rest.
        let needed: Vec<&Val> = if copy.other_is_zero {
            masks.first().and_then(|m| m.as_ref()).into_iter().collect()
        } else {
            masks.iter().flatten().collect()
        };
        for m in needed {
            fast = self.t.def(Ty::I1, format!("arith.andi {fast}, {m} : i1"));
        }
        let count = if copy.other_is_zero && masks.iter().any(Option::is_some) {
            let mut total = self.const_int(0, Ty::I64);
            for m in &masks {
                let one = match m {
                    Some(m) => self.t.def(Ty::I64, format!("arith.extui {m} : i1 to i64")),
                    None => self.const_int(1, Ty::I64),
                };
                total = self
                    .t
                    .def(Ty::I64, format!("arith.addi {total}, {one} : i64"));
            }
            Some(
                self.t
                    .def(Ty::I64, format!("arith.index_cast {total} : i64 to index")),
            )
        } else {
            None
        };
        self.t.open(format!("scf.if {fast} {{"));
        self.device_async_copy(s, &offset, &dst, n, count.as_ref());
        self.t.reopen("} else {");
        if fallback < n {
            for j in (0..n).step_by(fallback as usize) {
                let at_j = self.shifted(first, j);
                self.copy_run(s, copy, &at_j, fallback, fallback)?;
            }
        } else {
            for e in 0..n {
                let at_e = self.shifted(first, e);
                let v = self.load(
                    s.tile.tensor,
                    s.tile.index,
                    s.tile.other,
                    s.tile.dtype,
                    &at_e,
                )?;
                let mem = self.stored_value(v, s.tile.dtype);
                let step = self.const_i32(e);
                let dst_e = self
                    .t
                    .def(Ty::I32, format!("arith.addi {dst}, {step} : i32"));
                self.buffer_store(s.buf, &dst_e, &mem);
            }
        }
        self.t.close("}");
        Ok(())
    }

    /// `at` moved `e` elements along the innermost dim.
    fn shifted(&mut self, at: &At, e: i64) -> At {
        let mut idx = at.idx.clone();
        if e != 0
            && let Some(last) = idx.last_mut()
        {
            let step = self.const_i32(e);
            *last = self
                .t
                .def(Ty::I32, format!("arith.addi {last}, {step} : i32"));
        }
        At { idx, slot: None }
    }

    /// One element of 4 or 8 bytes: copied when in bounds; out of bounds a
    /// zero-fill (`other` = 0) or a plain store of `other`.
    fn copy_one_element(
        &mut self,
        s: &Staging<'k>,
        offset: &Val,
        mask: Option<Val>,
        dst: &Val,
        other_is_zero: bool,
    ) -> Result<(), MlirError> {
        let Some(mask) = mask else {
            self.device_async_copy(s, offset, dst, 1, None);
            return Ok(());
        };
        if other_is_zero {
            let one = self.const_int(1, Ty::I64);
            let none = self.const_int(0, Ty::I64);
            let n = self
                .t
                .def(Ty::I64, format!("arith.select {mask}, {one}, {none} : i64"));
            let count = self
                .t
                .def(Ty::I64, format!("arith.index_cast {n} : i64 to index"));
            // Nothing is read when out of bounds; point at element 0
            // anyway so the address is one the tensor owns.
            let zero = self.const_int(0, offset.ty);
            let src = self.t.def(
                offset.ty,
                format!("arith.select {mask}, {offset}, {zero} : {}", offset.ty),
            );
            self.device_async_copy(s, &src, dst, 1, Some(&count));
            return Ok(());
        }
        self.t.open(format!("scf.if {mask} {{"));
        self.device_async_copy(s, offset, dst, 1, None);
        self.t.reopen("} else {");
        let other = s.tile.other.ok_or_else(|| {
            MlirError::unsupported("non-zero `other` without an expression (compiler bug)")
        })?;
        let v = self.eval(other, &At::scalar())?;
        let mem = self.stored_value(v, s.tile.dtype);
        self.buffer_store(s.buf, dst, &mem);
        self.t.close("}");
        Ok(())
    }

    fn device_async_copy(
        &mut self,
        s: &Staging<'k>,
        offset: &Val,
        dst: &Val,
        elements: i64,
        src_elements: Option<&Val>,
    ) {
        let global = s.global.clone().unwrap_or_default();
        let src = self.as_index(offset);
        let dst = self.as_index(dst);
        let b = self.buffers[s.buf].clone();
        let mem_ty = Ty::in_memory(s.tile.dtype);
        let count = src_elements.map(|c| format!(", {c}")).unwrap_or_default();
        // Only 16-byte copies may skip L1 (`cp.async.cg`).
        let bypass = if elements as u64 * mem_ty.size_bytes() == MAX_COPY_BYTES {
            " {bypassL1}"
        } else {
            ""
        };
        let token = self.t.fresh("token");
        self.t.line(format!(
            "{token} = nvgpu.device_async_copy {global}[{src}], {}[{dst}], {elements}{count}{bypass} : {} to {}",
            b.name,
            global_memref(mem_ty),
            b.memref_type()
        ));
    }

    /// Loads one staged tile with plain masked loads and stores it to the
    /// half at `half_offset`.
    pub(super) fn copy_sync(
        &mut self,
        s: &Staging<'k>,
        half_offset: &Val,
    ) -> Result<(), MlirError> {
        self.for_each_owned_element(&s.extents, &mut |em: &mut Emitter<'k>, at: &At| {
            let at = At {
                idx: at.idx.clone(),
                slot: None,
            };
            let v = em.load(s.tile.tensor, s.tile.index, s.tile.other, s.tile.dtype, &at)?;
            let mem = em.stored_value(v, s.tile.dtype);
            let lin = em.linear(&at.idx, &s.extents);
            let dst =
                em.t.def(Ty::I32, format!("arith.addi {lin}, {half_offset} : i32"));
            em.buffer_store(s.buf, &dst, &mem);
            Ok(())
        })
    }

    /// sm_75: loads the calling thread's elements of the next iteration's
    /// tile into its registers.
    pub(super) fn prefetch_to_registers(&mut self, s: &Staging<'k>) -> Result<(), MlirError> {
        let regs = s.registers.ok_or_else(|| {
            MlirError::unsupported("register prefetch without registers (compiler bug)")
        })?;
        self.for_each_owned_element(&s.extents, &mut |em: &mut Emitter<'k>, at: &At| {
            let slot = at.slot.clone().ok_or_else(|| {
                MlirError::unsupported("element loop without a slot (compiler bug)")
            })?;
            let at = At {
                idx: at.idx.clone(),
                slot: None,
            };
            let v = em.load(s.tile.tensor, s.tile.index, s.tile.other, s.tile.dtype, &at)?;
            let mem = em.stored_value(v, s.tile.dtype);
            em.buffer_store(regs, &slot, &mem);
            Ok(())
        })
    }

    /// sm_75: stores the prefetched registers to the half at `half_offset`.
    pub(super) fn registers_to_half(
        &mut self,
        s: &Staging<'k>,
        half_offset: &Val,
    ) -> Result<(), MlirError> {
        let regs = s.registers.ok_or_else(|| {
            MlirError::unsupported("register prefetch without registers (compiler bug)")
        })?;
        self.for_each_owned_element(&s.extents, &mut |em: &mut Emitter<'k>, at: &At| {
            let slot = at.slot.clone().ok_or_else(|| {
                MlirError::unsupported("element loop without a slot (compiler bug)")
            })?;
            let raw = em.buffer_load(regs, &slot);
            let lin = em.linear(&at.idx, &s.extents);
            let dst =
                em.t.def(Ty::I32, format!("arith.addi {lin}, {half_offset} : i32"));
            em.buffer_store(s.buf, &dst, &raw);
            Ok(())
        })
    }

    /// Coordinates of element `e` of the group at unit coordinates `unit`.
    fn group_coords(&mut self, unit: &[Val], group: i64, e: i64) -> At {
        let mut idx = unit.to_vec();
        if group > 1
            && let Some(last) = idx.last_mut()
        {
            let g = self.const_i32(group);
            let scaled = self.t.def(Ty::I32, format!("arith.muli {last}, {g} : i32"));
            *last = if e == 0 {
                scaled
            } else {
                let step = self.const_i32(e);
                self.t
                    .def(Ty::I32, format!("arith.addi {scaled}, {step} : i32"))
            };
        }
        At { idx, slot: None }
    }

    /// The stride (index type) of the tensor dim the tile's innermost dim
    /// walks: the last subscript that is not a single index.
    fn inner_stride(&mut self, s: &Staging<'k>) -> Result<Val, MlirError> {
        let dim = s
            .tile
            .index
            .iter()
            .rposition(|sl| !matches!(sl, Slice::Point(_)))
            .ok_or_else(|| MlirError::unsupported("staged tile of rank 0 (compiler bug)"))?;
        self.strides
            .get(s.tile.tensor)
            .and_then(|st| st.get(dim))
            .cloned()
            .ok_or_else(|| {
                MlirError::unsupported(format!(
                    "missing stride of `{}` (compiler bug)",
                    s.tile.tensor
                ))
            })
    }
}

fn global_memref(mem_ty: Ty) -> String {
    format!("memref<?x{mem_ty}, 1>")
}

/// `other` that reads as all-zero bits (what a zero-filling copy writes).
fn is_zero_literal(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Int(v) => *v == 0,
        ExprKind::Float(v) => v.to_bits() == 0,
        ExprKind::Bool(b) => !b,
        _ => false,
    }
}
