//! Pointwise evaluation: the value of one element of an expression at given
//! coordinates, as MLIR ops.

use crate::ir::{BinOp, Builtin, DType, Expr, ExprKind, Slice, UnOp};

use super::{At, Emitter, Hoisted, LocalHome, plan, reduce::Reduce, text::Ty, text::Val};
use crate::back::mlir::MlirError;

impl<'k> Emitter<'k> {
    /// Coordinates and slot for reading `child` inside `parent` at `at`,
    /// under NumPy broadcasting (trailing dims align, extent-1 dims stretch).
    pub(super) fn child_at(
        &mut self,
        child: &Expr,
        parent: &Expr,
        at: &At,
    ) -> Result<At, MlirError> {
        let child_ext = self.extents(child)?;
        let parent_ext = self.extents(parent)?;
        let offset = parent_ext.len().saturating_sub(child_ext.len());
        let mut idx = Vec::with_capacity(child_ext.len());
        for (i, extent) in child_ext.iter().enumerate() {
            let p = i + offset;
            if *extent == 1 && parent_ext.get(p) != Some(&1) {
                idx.push(self.const_i32(0));
            } else {
                idx.push(at.idx.get(p).cloned().ok_or_else(|| {
                    MlirError::unsupported("broadcast to a lower rank (compiler bug)")
                })?);
            }
        }
        let slot = if plan::same_extents(child, parent, self.config) {
            at.slot.clone()
        } else {
            None
        };
        Ok(At { idx, slot })
    }

    pub(super) fn eval(&mut self, e: &Expr, at: &At) -> Result<Val, MlirError> {
        if let Some(h) = self.hoisted.get(&(e as *const Expr)).cloned() {
            return match h {
                Hoisted::Scalar(v) => Ok(v),
                Hoisted::Tile(buf) => {
                    let extents = self.extents(e)?;
                    let lin = self.linear(&at.idx, &extents);
                    let raw = self.buffer_load(buf, &lin);
                    // A staged quantized operand holds its f32 values.
                    Ok(self.loaded_value(raw, self.operand_dtype(e)?))
                }
                Hoisted::Fragment(buf) => {
                    let slot = at.slot.clone().ok_or_else(|| {
                        MlirError::unsupported(
                            "a tensor-core result read off its owner (compiler bug)",
                        )
                    })?;
                    Ok(self.buffer_load(buf, &slot))
                }
            };
        }
        let dtype = self.dtype_of(e)?;
        let ty = Ty::of(dtype);
        match &e.kind {
            ExprKind::Int(v) => Ok(if dtype.is_float() {
                self.const_float(*v as f64, ty)
            } else {
                self.const_int(*v, ty)
            }),
            ExprKind::Float(v) => Ok(self.const_float(*v, ty)),
            ExprKind::Bool(b) => Ok(self.const_int(i64::from(*b), Ty::I1)),
            ExprKind::Local(id) => self.read_local(*id, e, at),
            ExprKind::Param(name) => self
                .params
                .get(name)
                .cloned()
                .ok_or_else(|| MlirError::unsupported(format!("unknown parameter `{name}`"))),
            ExprKind::Dim(name) => {
                let d = self
                    .dims
                    .get(name)
                    .cloned()
                    .ok_or_else(|| MlirError::unsupported(format!("unknown dim `{name}`")))?;
                Ok(self.convert(d, DType::I32, dtype))
            }
            ExprKind::Tune(name) => {
                let v = self.config.get(name).ok_or_else(|| MlirError::Config {
                    config: self.config.to_string(),
                    message: format!("tune parameter `{name}` is not bound"),
                })?;
                Ok(self.const_int(v, ty))
            }
            ExprKind::Load {
                tensor,
                index,
                other,
            } => self.load(tensor, index, other.as_deref(), dtype, at),
            ExprKind::Slice { base, index } => self.tile_slice(base, index, at),
            ExprKind::Unary { op, arg } => {
                let a_at = self.child_at(arg, e, at)?;
                let a = self.eval(arg, &a_at)?;
                self.unary(*op, a, dtype)
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let l_at = self.child_at(lhs, e, at)?;
                let l = self.eval(lhs, &l_at)?;
                let r_at = self.child_at(rhs, e, at)?;
                let r = self.eval(rhs, &r_at)?;
                self.binary(*op, l, r, self.dtype_of(lhs)?)
            }
            ExprKind::Cast(child) => {
                let c_at = self.child_at(child, e, at)?;
                let c = self.eval(child, &c_at)?;
                Ok(self.convert(c, self.dtype_of(child)?, dtype))
            }
            ExprKind::Broadcast(child) => {
                let c_at = self.child_at(child, e, at)?;
                self.eval(child, &c_at)
            }
            ExprKind::Call { func, args } => self.call(*func, args, e, dtype, at),
        }
    }

    fn read_local(&mut self, id: crate::ir::LocalId, e: &Expr, at: &At) -> Result<Val, MlirError> {
        let home = self.locals.get(&id).cloned().ok_or_else(|| {
            MlirError::unsupported(format!("local #{} read before its definition", id.0))
        })?;
        let dtype = self.dtype_of(e)?;
        match home {
            LocalHome::Ssa(v) => Ok(v),
            LocalHome::Quant(_) => Err(MlirError::unsupported(
                "a quantized local read as a value (compiler bug: only dot, dot_t and dequant take one)",
            )),
            LocalHome::ScalarVar(buf) => {
                let zero = self.const_i32(0);
                let raw = self.buffer_load(buf, &zero);
                Ok(self.loaded_value(raw, dtype))
            }
            LocalHome::Tile(buf, plan::TileHome::Private) => {
                let slot = at.slot.clone().ok_or_else(|| {
                    MlirError::unsupported(
                        "a register tile read by another thread (compiler bug in the storage plan)",
                    )
                })?;
                let raw = self.buffer_load(buf, &slot);
                Ok(self.loaded_value(raw, dtype))
            }
            LocalHome::Tile(buf, plan::TileHome::Shared) => {
                let extents = self.extents(e)?;
                let lin = self.linear(&at.idx, &extents);
                let raw = self.buffer_load(buf, &lin);
                Ok(self.loaded_value(raw, dtype))
            }
        }
    }

    /// A value read from a buffer or tensor, in its compute type.
    pub(super) fn loaded_value(&mut self, raw: Val, dtype: DType) -> Val {
        if dtype == DType::Bool {
            let zero = self.const_int(0, Ty::I8);
            self.t
                .def(Ty::I1, format!("arith.cmpi ne, {raw}, {zero} : i8"))
        } else {
            raw
        }
    }

    /// A value in its in-memory type (`bool` as a byte).
    pub(super) fn stored_value(&mut self, value: Val, dtype: DType) -> Val {
        if dtype == DType::Bool {
            self.t
                .def(Ty::I8, format!("arith.extui {value} : i1 to i8"))
        } else {
            value
        }
    }

    /// A sub-tile of a tile value; out-of-range elements read as zero.
    fn tile_slice(&mut self, base: &Expr, index: &[Slice], at: &At) -> Result<Val, MlirError> {
        let base_ext = self.extents(base)?;
        let dtype = self.dtype_of(base)?;
        let ty = Ty::of(dtype);
        let mut coords = Vec::new();
        let mut mask: Option<Val> = None;
        let mut k = 0usize;
        for (d, slice) in index.iter().enumerate() {
            let (coord, check) = match slice {
                Slice::Point(p) => {
                    let v = self.eval(p, &At::scalar())?;
                    (self.convert(v, self.dtype_of(p)?, DType::I32), true)
                }
                Slice::Span { start, .. } => {
                    let s = self.eval(start, &At::scalar())?;
                    let s = self.convert(s, self.dtype_of(start)?, DType::I32);
                    let j = at.idx.get(k).cloned().ok_or_else(|| {
                        MlirError::unsupported("slice rank mismatch (compiler bug)")
                    })?;
                    k += 1;
                    (
                        self.t.def(Ty::I32, format!("arith.addi {s}, {j} : i32")),
                        true,
                    )
                }
                Slice::Full => {
                    let j = at.idx.get(k).cloned().ok_or_else(|| {
                        MlirError::unsupported("slice rank mismatch (compiler bug)")
                    })?;
                    k += 1;
                    (j, false)
                }
            };
            if check {
                let zero = self.const_i32(0);
                let extent = self.const_i32(base_ext.get(d).copied().unwrap_or(1));
                let ge = self
                    .t
                    .def(Ty::I1, format!("arith.cmpi sge, {coord}, {zero} : i32"));
                let lt = self
                    .t
                    .def(Ty::I1, format!("arith.cmpi slt, {coord}, {extent} : i32"));
                let both = self.t.def(Ty::I1, format!("arith.andi {ge}, {lt} : i1"));
                mask = Some(match mask {
                    None => both,
                    Some(m) => self.t.def(Ty::I1, format!("arith.andi {m}, {both} : i1")),
                });
            }
            coords.push(coord);
        }
        let inner = At {
            idx: coords,
            slot: None,
        };
        let Some(mask) = mask else {
            return self.eval(base, &inner);
        };
        let result = self.t.fresh("v");
        self.t
            .open(format!("{result} = scf.if {mask} -> ({ty}) {{"));
        let v = self.eval(base, &inner)?;
        self.t.line(format!("scf.yield {v} : {ty}"));
        self.t.reopen("} else {");
        let z = self.zero(dtype);
        self.t.line(format!("scf.yield {z} : {ty}"));
        self.t.close("}");
        Ok(Val { name: result, ty })
    }

    pub(super) fn zero(&mut self, dtype: DType) -> Val {
        let ty = Ty::of(dtype);
        if ty.is_float() {
            self.const_float(0.0, ty)
        } else {
            self.const_int(0, ty)
        }
    }

    fn unary(&mut self, op: UnOp, a: Val, dtype: DType) -> Result<Val, MlirError> {
        let ty = a.ty;
        Ok(match op {
            UnOp::Neg if ty.is_float() => self.t.def(ty, format!("arith.negf {a} : {ty}")),
            UnOp::Neg => {
                let z = self.const_int(0, ty);
                self.t.def(ty, format!("arith.subi {z}, {a} : {ty}"))
            }
            UnOp::Not | UnOp::BitNot => {
                if ty.is_float() {
                    return Err(MlirError::unsupported(format!("`!`/`~` on {dtype}")));
                }
                let ones = self.const_int(-1, ty);
                self.t.def(ty, format!("arith.xori {a}, {ones} : {ty}"))
            }
        })
    }

    pub(super) fn binary(
        &mut self,
        op: BinOp,
        l: Val,
        r: Val,
        dtype: DType,
    ) -> Result<Val, MlirError> {
        let ty = l.ty;
        let float = ty.is_float();
        let unsigned = dtype.is_unsigned_int() || dtype == DType::Bool;
        let name = match (op, float) {
            (BinOp::Add, true) => "arith.addf",
            (BinOp::Sub, true) => "arith.subf",
            (BinOp::Mul, true) => "arith.mulf",
            (BinOp::Div, true) => "arith.divf",
            (BinOp::Rem, true) => return Ok(self.float_rem(&l, &r)),
            (BinOp::Add, false) => "arith.addi",
            (BinOp::Sub, false) => "arith.subi",
            (BinOp::Mul, false) => "arith.muli",
            // Guarded forms (edge.rs): the plain ops are undefined or poison
            // on some operands the host defines.
            (BinOp::Div, false) => return Ok(self.int_div(&l, &r, unsigned)),
            (BinOp::Rem, false) => return Ok(self.int_rem(&l, &r, unsigned)),
            (BinOp::Shl | BinOp::Shr, false) => {
                return Ok(self.int_shift(&l, &r, op == BinOp::Shl, unsigned));
            }
            (BinOp::BitAnd | BinOp::And, false) => "arith.andi",
            (BinOp::BitOr | BinOp::Or, false) => "arith.ori",
            (BinOp::BitXor, false) => "arith.xori",
            (BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge, _) => {
                return Ok(self.compare(op, &l, &r, float, unsigned));
            }
            (other, true) => {
                return Err(MlirError::unsupported(format!(
                    "operator {other:?} on {dtype}"
                )));
            }
        };
        Ok(self.t.def(ty, format!("{name} {l}, {r} : {ty}")))
    }

    fn compare(&mut self, op: BinOp, l: &Val, r: &Val, float: bool, unsigned: bool) -> Val {
        let ty = l.ty;
        let pred = match (op, float, unsigned) {
            // Ordered except `!=`, which holds for NaN as in Rust.
            (BinOp::Eq, true, _) => "oeq",
            (BinOp::Ne, true, _) => "une",
            (BinOp::Lt, true, _) => "olt",
            (BinOp::Le, true, _) => "ole",
            (BinOp::Gt, true, _) => "ogt",
            (BinOp::Ge, true, _) => "oge",
            (BinOp::Eq, false, _) => "eq",
            (BinOp::Ne, false, _) => "ne",
            (BinOp::Lt, false, true) => "ult",
            (BinOp::Le, false, true) => "ule",
            (BinOp::Gt, false, true) => "ugt",
            (BinOp::Ge, false, true) => "uge",
            (BinOp::Lt, false, false) => "slt",
            (BinOp::Le, false, false) => "sle",
            (BinOp::Gt, false, false) => "sgt",
            _ => "sge",
        };
        let cmp = if float { "arith.cmpf" } else { "arith.cmpi" };
        self.t.def(Ty::I1, format!("{cmp} {pred}, {l}, {r} : {ty}"))
    }

    /// Converts `v` from `from` to `to` (float to int truncates toward zero
    /// and saturates, as `cvt.rzi` does and as Rust's `as` does).
    pub(super) fn convert(&mut self, v: Val, from: DType, to: DType) -> Val {
        if from == to {
            return v;
        }
        let (ft, tt) = (Ty::of(from), Ty::of(to));
        if to == DType::Bool {
            let z = self.zero(from);
            return if ft.is_float() {
                self.t
                    .def(Ty::I1, format!("arith.cmpf une, {v}, {z} : {ft}"))
            } else {
                self.t
                    .def(Ty::I1, format!("arith.cmpi ne, {v}, {z} : {ft}"))
            };
        }
        let from_unsigned = from.is_unsigned_int() || from == DType::Bool;
        match (ft.is_float(), tt.is_float()) {
            (true, true) => {
                if ft == tt {
                    v
                } else if (ft == Ty::F16 && tt == Ty::Bf16) || (ft == Ty::Bf16 && tt == Ty::F16) {
                    let wide = self.t.def(Ty::F32, format!("arith.extf {v} : {ft} to f32"));
                    self.t.def(tt, format!("arith.truncf {wide} : f32 to {tt}"))
                } else if ft.bits() < tt.bits() {
                    self.t.def(tt, format!("arith.extf {v} : {ft} to {tt}"))
                } else {
                    self.t.def(tt, format!("arith.truncf {v} : {ft} to {tt}"))
                }
            }
            (false, true) => {
                let op = if from_unsigned { "uitofp" } else { "sitofp" };
                self.t.def(tt, format!("arith.{op} {v} : {ft} to {tt}"))
            }
            (true, false) => {
                // The saturating intrinsics: plain fptosi is poison out of
                // range, while Rust's `as` (the host) saturates and maps NaN
                // to 0, which is what these do.
                let (v, ft) = if ft.bits() < 32 {
                    (
                        self.t.def(Ty::F32, format!("arith.extf {v} : {ft} to f32")),
                        Ty::F32,
                    )
                } else {
                    (v, ft)
                };
                let op = if to.is_unsigned_int() {
                    "fptoui"
                } else {
                    "fptosi"
                };
                self.call_intrinsic(&format!("llvm.{op}.sat.{tt}.{ft}"), &[v], tt)
            }
            (false, false) => {
                if ft.bits() == tt.bits() {
                    v
                } else if ft.bits() > tt.bits() {
                    self.t.def(tt, format!("arith.trunci {v} : {ft} to {tt}"))
                } else {
                    let op = if from_unsigned { "extui" } else { "extsi" };
                    self.t.def(tt, format!("arith.{op} {v} : {ft} to {tt}"))
                }
            }
        }
    }

    fn call(
        &mut self,
        func: Builtin,
        args: &[Expr],
        e: &Expr,
        dtype: DType,
        at: &At,
    ) -> Result<Val, MlirError> {
        let arg = |i: usize| {
            args.get(i).ok_or_else(|| {
                MlirError::unsupported(format!("`{}` without argument {i}", func.name()))
            })
        };
        match func {
            Builtin::ProgramId | Builtin::NumPrograms => {
                let axis = match arg(0)?.kind {
                    ExprKind::Int(a) if (0..=2).contains(&a) => a as usize,
                    _ => {
                        return Err(MlirError::unsupported(format!(
                            "`{}` with a non-literal axis",
                            func.name()
                        )));
                    }
                };
                let v = if func == Builtin::ProgramId {
                    self.block_ids[axis].clone()
                } else {
                    self.grid_dims[axis].clone()
                };
                Ok(self.convert(v, DType::I32, dtype))
            }
            Builtin::Cdiv => {
                let a_at = self.child_at(arg(0)?, e, at)?;
                let a = self.eval(arg(0)?, &a_at)?;
                let b_at = self.child_at(arg(1)?, e, at)?;
                let b = self.eval(arg(1)?, &b_at)?;
                self.ceil_div(a, b, dtype)
            }
            Builtin::Arange => {
                let i = at.idx.first().cloned().ok_or_else(|| {
                    MlirError::unsupported("`arange` evaluated as a scalar (compiler bug)")
                })?;
                Ok(self.convert(i, DType::I32, dtype))
            }
            Builtin::Dot | Builtin::DotT => {
                if let Some(tiles) = self.partner_tiles.get(&(e as *const Expr)).cloned() {
                    return self.quant_dot(args, &tiles, at);
                }
                self.dot(func, arg(0)?, arg(1)?, dtype, at)
            }
            Builtin::RowSum | Builtin::RowMax | Builtin::RowMin => {
                let how = match func {
                    Builtin::RowSum => Reduce::Sum,
                    Builtin::RowMax => Reduce::Max,
                    _ => Reduce::Min,
                };
                self.row_reduce(how, arg(0)?, dtype, at)
            }
            Builtin::ReduceSum | Builtin::ReduceMax | Builtin::ReduceMin => {
                let how = match func {
                    Builtin::ReduceSum => Reduce::Sum,
                    Builtin::ReduceMax => Reduce::Max,
                    _ => Reduce::Min,
                };
                self.reduce_all(how, arg(0)?, dtype)
            }
            Builtin::Transpose => {
                let inner = At {
                    idx: at.idx.iter().rev().cloned().collect(),
                    slot: None,
                };
                self.eval(arg(0)?, &inner)
            }
            Builtin::Reshape => {
                let out_ext = self.extents(e)?;
                let child = arg(0)?;
                let in_ext = self.extents(child)?;
                let lin = self.linear(&at.idx, &out_ext);
                let idx = self.delinearize(&lin, &in_ext);
                self.eval(child, &At { idx, slot: None })
            }
            Builtin::Cumsum => self.cumsum(arg(0)?, dtype, at),
            Builtin::Tril => {
                let child = arg(0)?;
                let c_at = self.child_at(child, e, at)?;
                let v = self.eval(child, &c_at)?;
                let (row, col) = match at.idx.as_slice() {
                    [r, c] => (r.clone(), c.clone()),
                    _ => {
                        return Err(MlirError::unsupported(
                            "`tril` of a tile that is not rank 2",
                        ));
                    }
                };
                let keep = self
                    .t
                    .def(Ty::I1, format!("arith.cmpi sle, {col}, {row} : i32"));
                let z = self.zero(dtype);
                let ty = Ty::of(dtype);
                Ok(self
                    .t
                    .def(ty, format!("arith.select {keep}, {v}, {z} : {ty}")))
            }
            Builtin::Where => {
                let c_at = self.child_at(arg(0)?, e, at)?;
                let c = self.eval(arg(0)?, &c_at)?;
                let a_at = self.child_at(arg(1)?, e, at)?;
                let a = self.eval(arg(1)?, &a_at)?;
                let b_at = self.child_at(arg(2)?, e, at)?;
                let b = self.eval(arg(2)?, &b_at)?;
                let ty = Ty::of(dtype);
                Ok(self.t.def(ty, format!("arith.select {c}, {a}, {b} : {ty}")))
            }
            Builtin::Min | Builtin::Max => {
                let a_at = self.child_at(arg(0)?, e, at)?;
                let a = self.eval(arg(0)?, &a_at)?;
                let b_at = self.child_at(arg(1)?, e, at)?;
                let b = self.eval(arg(1)?, &b_at)?;
                let how = if func == Builtin::Min {
                    Reduce::Min
                } else {
                    Reduce::Max
                };
                self.min_max(how, a, b, dtype)
            }
            Builtin::Dequant => self.dequant_at(arg(0)?, at),
            Builtin::QLevels | Builtin::QScales => self.block_access_at(func, arg(0)?, at),
            Builtin::Abs
            | Builtin::Exp
            | Builtin::Log
            | Builtin::Sqrt
            | Builtin::Rsqrt
            | Builtin::Tanh
            | Builtin::Sigmoid
            | Builtin::Silu
            | Builtin::Gelu
            | Builtin::Sin
            | Builtin::Cos
            | Builtin::Floor
            | Builtin::Round => {
                let child = arg(0)?;
                let c_at = self.child_at(child, e, at)?;
                let v = self.eval(child, &c_at)?;
                let v = self.convert(v, self.dtype_of(child)?, dtype);
                self.math(func, v, dtype)
            }
        }
    }

    fn ceil_div(&mut self, a: Val, b: Val, dtype: DType) -> Result<Val, MlirError> {
        if a.ty.is_float() {
            return Err(MlirError::unsupported("`cdiv` on floats"));
        }
        Ok(self.int_ceil_div(&a, &b, dtype))
    }
}
