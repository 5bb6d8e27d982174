//! [`Q`] trees to MLIR: one op per node, integers in `i32`, floats in
//! `f32`, bytes loaded from the block in global memory one at a time (a
//! block's fields have no alignment beyond a byte in general).

use super::super::{Emitter, text::Ty, text::Val};
use super::format::{FOp, IOp, Q};

/// What a tree reads: the block's first byte and the indices it uses.
pub(crate) struct Env {
    /// `!llvm.ptr<1>` to byte 0 of the block.
    pub base: Val,
    pub elem: Option<Val>,
    pub group: Option<Val>,
}

impl Emitter<'_> {
    /// The value of `q` (`i32` or `f32`).
    pub(crate) fn lower_q(&mut self, q: &Q, env: &Env) -> Val {
        match q {
            Q::Int(v) => self.const_i32(*v),
            Q::Elem => env.elem.clone().unwrap_or_else(|| self.const_i32(0)),
            Q::Group => env.group.clone().unwrap_or_else(|| self.const_i32(0)),
            Q::Byte(offset) | Q::SByte(offset) => {
                let offset = self.lower_q(offset, env);
                let raw = self.block_byte(&env.base, &offset);
                let ext = if matches!(q, Q::SByte(_)) {
                    "extsi"
                } else {
                    "extui"
                };
                self.t
                    .def(Ty::I32, format!("arith.{ext} {raw} : i8 to i32"))
            }
            Q::Bin(op, a, b) => {
                let a = self.lower_q(a, env);
                let b = self.lower_q(b, env);
                let name = match op {
                    IOp::Add => "addi",
                    IOp::Sub => "subi",
                    IOp::Mul => "muli",
                    IOp::And => "andi",
                    IOp::Or => "ori",
                    IOp::Shl => "shli",
                    IOp::Shr => "shrui",
                    IOp::Div => "divui",
                    IOp::Rem => "remui",
                };
                self.t.def(Ty::I32, format!("arith.{name} {a}, {b} : i32"))
            }
            Q::SelectLt(a, b, then, otherwise) => {
                let a = self.lower_q(a, env);
                let b = self.lower_q(b, env);
                let then = self.lower_q(then, env);
                let otherwise = self.lower_q(otherwise, env);
                let lt = self
                    .t
                    .def(Ty::I1, format!("arith.cmpi slt, {a}, {b} : i32"));
                self.t.def(
                    then.ty,
                    format!("arith.select {lt}, {then}, {otherwise} : {}", then.ty),
                )
            }
            Q::Table16(table, index) => {
                let index = self.lower_q(index, env);
                self.table16(table, &index)
            }
            Q::Half(offset) => {
                let lo = self.const_i32(*offset as i64);
                let hi = self.const_i32(*offset as i64 + 1);
                let lo = self.block_byte(&env.base, &lo);
                let hi = self.block_byte(&env.base, &hi);
                let lo = self.t.def(Ty::I16, format!("arith.extui {lo} : i8 to i16"));
                let hi = self.t.def(Ty::I16, format!("arith.extui {hi} : i8 to i16"));
                let eight = self.const_int(8, Ty::I16);
                let hi = self
                    .t
                    .def(Ty::I16, format!("arith.shli {hi}, {eight} : i16"));
                let bits = self.t.def(Ty::I16, format!("arith.ori {lo}, {hi} : i16"));
                let h = self
                    .t
                    .def(Ty::F16, format!("arith.bitcast {bits} : i16 to f16"));
                self.t.def(Ty::F32, format!("arith.extf {h} : f16 to f32"))
            }
            Q::ToF(a) => {
                let a = self.lower_q(a, env);
                self.t
                    .def(Ty::F32, format!("arith.sitofp {a} : i32 to f32"))
            }
            Q::FBin(op, a, b) => {
                let a = self.lower_q(a, env);
                let b = self.lower_q(b, env);
                let name = match op {
                    FOp::Add => "addf",
                    FOp::Sub => "subf",
                    FOp::Mul => "mulf",
                };
                self.t.def(Ty::F32, format!("arith.{name} {a}, {b} : f32"))
            }
        }
    }

    /// The byte at `offset` (`i32`) from `base`, as `i8`.
    fn block_byte(&mut self, base: &Val, offset: &Val) -> Val {
        let ptr = self.t.fresh("v");
        self.t.line(format!(
            "{ptr} = llvm.getelementptr {base}[{offset}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i8"
        ));
        self.t
            .def(Ty::I8, format!("llvm.load {ptr} : !llvm.ptr<1> -> i8"))
    }

    /// Stores `byte` (`i8`) at `offset` (`i32`) from `base`.
    pub(crate) fn store_block_byte(&mut self, base: &Val, offset: &Val, byte: &Val) {
        let ptr = self.t.fresh("v");
        self.t.line(format!(
            "{ptr} = llvm.getelementptr {base}[{offset}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i8"
        ));
        self.t
            .line(format!("llvm.store {byte}, {ptr} : i8, !llvm.ptr<1>"));
    }

    /// `table[index]` sign-extended to `i32`: the sixteen bytes live in two
    /// `i64` constants, so the lookup needs no memory.
    fn table16(&mut self, table: &[i8; 16], index: &Val) -> Val {
        let pack = |half: &[i8]| {
            half.iter()
                .rev()
                .fold(0u64, |acc, &v| (acc << 8) | u64::from(v as u8)) as i64
        };
        let lo = self.const_int(pack(&table[..8]), Ty::I64);
        let hi = self.const_int(pack(&table[8..]), Ty::I64);
        let eight = self.const_i32(8);
        let below = self
            .t
            .def(Ty::I1, format!("arith.cmpi ult, {index}, {eight} : i32"));
        let word = self
            .t
            .def(Ty::I64, format!("arith.select {below}, {lo}, {hi} : i64"));
        let seven = self.const_i32(7);
        let within = self
            .t
            .def(Ty::I32, format!("arith.andi {index}, {seven} : i32"));
        let shift = self
            .t
            .def(Ty::I32, format!("arith.muli {within}, {eight} : i32"));
        let shift = self
            .t
            .def(Ty::I64, format!("arith.extui {shift} : i32 to i64"));
        let moved = self
            .t
            .def(Ty::I64, format!("arith.shrui {word}, {shift} : i64"));
        let byte = self
            .t
            .def(Ty::I8, format!("arith.trunci {moved} : i64 to i8"));
        self.t
            .def(Ty::I32, format!("arith.extsi {byte} : i8 to i32"))
    }
}
