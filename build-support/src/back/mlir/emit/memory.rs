//! Tensor memory: element addresses of tensor slices, the bounds masks,
//! and masked loads.

use crate::ir::{DType, Dim, Expr, ParamKind, Slice};

use super::{At, Emitter, text::Ty, text::Val};
use crate::back::mlir::MlirError;

impl<'k> Emitter<'k> {
    /// An integer scalar as the index type, extended by its signedness.
    pub(super) fn index_value(&mut self, value: Val, dtype: DType) -> Val {
        let to = self.idx_ty;
        if value.ty == to {
            return value;
        }
        if value.ty.bits() > to.bits() {
            return self
                .t
                .def(to, format!("arith.trunci {value} : {} to {to}", value.ty));
        }
        let op = if dtype.is_unsigned_int() || dtype == DType::Bool {
            "extui"
        } else {
            "extsi"
        };
        self.t
            .def(to, format!("arith.{op} {value} : {} to {to}", value.ty))
    }

    /// The extent of tensor dim `dim` as the index type.
    pub(super) fn tensor_extent(&mut self, dim: &Dim) -> Result<Val, MlirError> {
        match dim {
            Dim::Lit(v) => Ok(self.const_int(*v, self.idx_ty)),
            Dim::Sym(name) => {
                let d = self
                    .dims
                    .get(name)
                    .cloned()
                    .ok_or_else(|| MlirError::unsupported(format!("unknown dim `{name}`")))?;
                Ok(self.index_value(d, DType::I32))
            }
        }
    }

    /// `mask && 0 <= coord < extent of dim` (`coord` in the index type).
    pub(super) fn and_in_bounds(
        &mut self,
        mask: Option<Val>,
        coord: &Val,
        dim: &Dim,
    ) -> Result<Val, MlirError> {
        let idx_ty = self.idx_ty;
        let extent = self.tensor_extent(dim)?;
        let zero = self.const_int(0, idx_ty);
        let ge = self.t.def(
            Ty::I1,
            format!("arith.cmpi sge, {coord}, {zero} : {idx_ty}"),
        );
        let lt = self.t.def(
            Ty::I1,
            format!("arith.cmpi slt, {coord}, {extent} : {idx_ty}"),
        );
        let both = self.t.def(Ty::I1, format!("arith.andi {ge}, {lt} : i1"));
        Ok(match mask {
            None => both,
            Some(m) => self.t.def(Ty::I1, format!("arith.andi {m}, {both} : i1")),
        })
    }

    /// The element offset of a tensor slice at `at` and the in-bounds
    /// condition (`None`: always in bounds).
    pub(super) fn tensor_address(
        &mut self,
        tensor: &str,
        index: &[Slice],
        at: &At,
    ) -> Result<(Val, Option<Val>, DType), MlirError> {
        let param = self
            .kernel
            .param(tensor)
            .ok_or_else(|| MlirError::unsupported(format!("unknown tensor `{tensor}`")))?;
        let (elem, dims) = match &param.kind {
            ParamKind::Tensor { elem, dims, .. } => (*elem, dims.clone()),
            ParamKind::Scalar { .. } => {
                return Err(MlirError::unsupported(format!(
                    "indexing scalar parameter `{tensor}`"
                )));
            }
        };
        let dtype = elem.scalar().ok_or_else(|| {
            MlirError::unsupported(format!("slices of quantized tensor `{tensor}`"))
        })?;
        if index.len() != dims.len() {
            return Err(MlirError::unsupported(format!(
                "tensor `{tensor}` indexed with {} subscripts for {} dims",
                index.len(),
                dims.len()
            )));
        }
        let strides = self.strides.get(tensor).cloned().unwrap_or_default();
        let idx_ty = self.idx_ty;
        let mut offset: Option<Val> = None;
        let mut mask: Option<Val> = None;
        let mut k = 0usize;
        for (d, slice) in index.iter().enumerate() {
            let (coord, needs_mask) = match slice {
                Slice::Point(p) => {
                    let v = self.eval(p, &At::scalar())?;
                    (self.index_value(v, self.dtype_of(p)?), true)
                }
                Slice::Span { start, .. } => {
                    let s = self.eval(start, &At::scalar())?;
                    let s = self.index_value(s, self.dtype_of(start)?);
                    let j = at.idx.get(k).cloned().ok_or_else(|| {
                        MlirError::unsupported("slice rank mismatch (compiler bug)")
                    })?;
                    k += 1;
                    let j = self.index_value(j, DType::I32);
                    (
                        self.t
                            .def(idx_ty, format!("arith.addi {s}, {j} : {idx_ty}")),
                        true,
                    )
                }
                Slice::Full => {
                    let j = at.idx.get(k).cloned().ok_or_else(|| {
                        MlirError::unsupported("slice rank mismatch (compiler bug)")
                    })?;
                    k += 1;
                    // A whole literal dim is walked by coordinates that are
                    // in range by construction.
                    (
                        self.index_value(j, DType::I32),
                        !matches!(dims[d], Dim::Lit(_)),
                    )
                }
            };
            if needs_mask {
                mask = Some(self.and_in_bounds(mask, &coord, &dims[d])?);
            }
            let stride = strides.get(d).cloned().ok_or_else(|| {
                MlirError::unsupported(format!("missing stride of `{tensor}` (compiler bug)"))
            })?;
            let term = self
                .t
                .def(idx_ty, format!("arith.muli {coord}, {stride} : {idx_ty}"));
            offset = Some(match offset {
                None => term,
                Some(o) => self
                    .t
                    .def(idx_ty, format!("arith.addi {o}, {term} : {idx_ty}")),
            });
        }
        let offset = match offset {
            Some(o) => o,
            None => self.const_int(0, idx_ty),
        };
        Ok((offset, mask, dtype))
    }

    /// `!llvm.ptr<1>` to element `offset` of `tensor`.
    pub(super) fn element_pointer(&mut self, tensor: &str, offset: &Val, dtype: DType) -> Val {
        let mem = Ty::in_memory(dtype);
        let name = self.t.fresh("v");
        self.t.line(format!(
            "{name} = llvm.getelementptr %p_{tensor}[{offset}] : (!llvm.ptr<1>, {}) -> !llvm.ptr<1>, {mem}",
            offset.ty
        ));
        Val { name, ty: Ty::I64 }
    }

    pub(super) fn load(
        &mut self,
        tensor: &str,
        index: &[Slice],
        other: Option<&Expr>,
        dtype: DType,
        at: &At,
    ) -> Result<Val, MlirError> {
        let (offset, mask, tensor_dtype) = self.tensor_address(tensor, index, at)?;
        if tensor_dtype != dtype {
            return Err(MlirError::unsupported(format!(
                "load of `{tensor}` ({tensor_dtype}) typed as {dtype} (compiler bug)"
            )));
        }
        let ty = Ty::of(dtype);
        let mem = Ty::in_memory(dtype);
        let Some(mask) = mask else {
            let ptr = self.element_pointer(tensor, &offset, dtype);
            let raw = self
                .t
                .def(mem, format!("llvm.load {ptr} : !llvm.ptr<1> -> {mem}"));
            return Ok(self.loaded_value(raw, dtype));
        };
        let fallback = match other {
            Some(o) => self.eval(o, &At::scalar())?,
            None => self.zero(dtype),
        };
        let result = self.t.fresh("v");
        self.t
            .open(format!("{result} = scf.if {mask} -> ({ty}) {{"));
        let ptr = self.element_pointer(tensor, &offset, dtype);
        let raw = self
            .t
            .def(mem, format!("llvm.load {ptr} : !llvm.ptr<1> -> {mem}"));
        let v = self.loaded_value(raw, dtype);
        self.t.line(format!("scf.yield {v} : {ty}"));
        self.t.reopen("} else {");
        self.t.line(format!("scf.yield {fallback} : {ty}"));
        self.t.close("}");
        Ok(Val { name: result, ty })
    }
}
