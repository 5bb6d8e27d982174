//! Elementwise float functions without libdevice.
//!
//! `convert-gpu-to-nvvm` turns `math.*` ops into calls to CUDA's libdevice,
//! which is not linked here (that would need a CUDA toolkit at build time).
//! So each function is spelled with LLVM intrinsics that the NVPTX back end
//! selects directly, following the host definitions in
//! `phobos_rt::element::Float` (f16/bf16 compute in f32 and round once):
//!
//! | function | PTX | note |
//! | --- | --- | --- |
//! | exp | `ex2.approx.f32` of `x * log2(e)` | ~2 ulp + rounding of the product |
//! | log | `lg2.approx.f32` times `ln 2` | |
//! | sqrt | `sqrt.rn` | exact |
//! | rsqrt | `1 / sqrt.rn` | as the host |
//! | tanh | `(1 - e^-2|x|) / (1 + e^-2|x|)`, sign restored | |
//! | sigmoid, silu, gelu | from exp and tanh as the host writes them | |
//! | sin, cos | `sin.approx`/`cos.approx` | large arguments lose accuracy |
//! | floor, round, abs | `cvt.rmi`, `llvm.round` (ties away), `abs` | exact |
//!
//! f64 has only the exact ones (sqrt, floor, round, abs); the others are an
//! unsupported-construct error rather than a silently f32 result.

use crate::ir::{Builtin, DType};

use super::{Emitter, text::Ty, text::Val};
use crate::back::mlir::MlirError;

const LOG2_E: f64 = std::f64::consts::LOG2_E;
const LN_2: f64 = std::f64::consts::LN_2;
const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;

impl Emitter<'_> {
    /// `func(v)` where `v` already has the result dtype.
    pub(super) fn math(&mut self, func: Builtin, v: Val, dtype: DType) -> Result<Val, MlirError> {
        let ty = Ty::of(dtype);
        if !ty.is_float() {
            return match func {
                Builtin::Abs => Ok(self.int_abs(v, dtype)),
                other => Err(MlirError::unsupported(format!(
                    "`{}` on {dtype} (expected a float)",
                    other.name()
                ))),
            };
        }
        if ty == Ty::F64 {
            return match func {
                Builtin::Sqrt => Ok(self.float_intrinsic1("llvm.sqrt", v)),
                Builtin::Floor => Ok(self.float_intrinsic1("llvm.floor", v)),
                Builtin::Round => Ok(self.float_intrinsic1("llvm.round", v)),
                Builtin::Abs => Ok(self.float_intrinsic1("llvm.fabs", v)),
                Builtin::Rsqrt => {
                    let s = self.float_intrinsic1("llvm.sqrt", v);
                    let one = self.const_float(1.0, ty);
                    Ok(self.t.def(ty, format!("arith.divf {one}, {s} : {ty}")))
                }
                other => Err(MlirError::unsupported(format!(
                    "`{}` on f64 (only sqrt, rsqrt, floor, round, abs are exact without libdevice)",
                    other.name()
                ))),
            };
        }
        let x = if ty == Ty::F32 {
            v
        } else {
            self.t.def(Ty::F32, format!("arith.extf {v} : {ty} to f32"))
        };
        let r = self.math_f32(func, x)?;
        Ok(if ty == Ty::F32 {
            r
        } else {
            self.t.def(ty, format!("arith.truncf {r} : f32 to {ty}"))
        })
    }

    fn math_f32(&mut self, func: Builtin, x: Val) -> Result<Val, MlirError> {
        Ok(match func {
            Builtin::Exp => self.exp_f32(x),
            Builtin::Log => {
                let l2 = self.call_intrinsic("llvm.nvvm.lg2.approx.f", &[x], Ty::F32);
                let ln2 = self.const_float(LN_2, Ty::F32);
                self.t.def(Ty::F32, format!("arith.mulf {l2}, {ln2} : f32"))
            }
            Builtin::Sqrt => self.float_intrinsic1("llvm.sqrt", x),
            Builtin::Rsqrt => {
                let s = self.float_intrinsic1("llvm.sqrt", x);
                let one = self.const_float(1.0, Ty::F32);
                self.t.def(Ty::F32, format!("arith.divf {one}, {s} : f32"))
            }
            Builtin::Tanh => self.tanh_f32(x),
            Builtin::Sigmoid => {
                let d = self.one_plus_exp_neg(&x);
                let one = self.const_float(1.0, Ty::F32);
                self.t.def(Ty::F32, format!("arith.divf {one}, {d} : f32"))
            }
            Builtin::Silu => {
                let d = self.one_plus_exp_neg(&x);
                self.t.def(Ty::F32, format!("arith.divf {x}, {d} : f32"))
            }
            Builtin::Gelu => {
                let c = self.const_float(0.044715, Ty::F32);
                let x2 = self.t.def(Ty::F32, format!("arith.mulf {x}, {x} : f32"));
                let x3 = self.t.def(Ty::F32, format!("arith.mulf {x2}, {x} : f32"));
                let cx3 = self.t.def(Ty::F32, format!("arith.mulf {c}, {x3} : f32"));
                let sum = self.t.def(Ty::F32, format!("arith.addf {x}, {cx3} : f32"));
                let k = self.const_float(SQRT_2_OVER_PI, Ty::F32);
                let inner = self.t.def(Ty::F32, format!("arith.mulf {k}, {sum} : f32"));
                let th = self.tanh_f32(inner);
                let one = self.const_float(1.0, Ty::F32);
                let half = self.const_float(0.5, Ty::F32);
                let onep = self.t.def(Ty::F32, format!("arith.addf {one}, {th} : f32"));
                let hx = self.t.def(Ty::F32, format!("arith.mulf {half}, {x} : f32"));
                self.t
                    .def(Ty::F32, format!("arith.mulf {hx}, {onep} : f32"))
            }
            Builtin::Sin => self.call_intrinsic("llvm.nvvm.sin.approx.f", &[x], Ty::F32),
            Builtin::Cos => self.call_intrinsic("llvm.nvvm.cos.approx.f", &[x], Ty::F32),
            Builtin::Floor => self.float_intrinsic1("llvm.floor", x),
            Builtin::Round => self.float_intrinsic1("llvm.round", x),
            Builtin::Abs => self.float_intrinsic1("llvm.fabs", x),
            other => {
                return Err(MlirError::unsupported(format!(
                    "`{}` as an elementwise float function",
                    other.name()
                )));
            }
        })
    }

    fn exp_f32(&mut self, x: Val) -> Val {
        let k = self.const_float(LOG2_E, Ty::F32);
        let scaled = self.t.def(Ty::F32, format!("arith.mulf {x}, {k} : f32"));
        self.float_intrinsic1("llvm.exp2", scaled)
    }

    /// `1 + e^-x`.
    fn one_plus_exp_neg(&mut self, x: &Val) -> Val {
        let neg = self.t.def(Ty::F32, format!("arith.negf {x} : f32"));
        let e = self.exp_f32(neg);
        let one = self.const_float(1.0, Ty::F32);
        self.t.def(Ty::F32, format!("arith.addf {one}, {e} : f32"))
    }

    /// tanh through `e^-2|x|`, which cannot overflow.
    fn tanh_f32(&mut self, x: Val) -> Val {
        let ax = self.float_intrinsic1("llvm.fabs", x.clone());
        let m2 = self.const_float(-2.0, Ty::F32);
        let arg = self.t.def(Ty::F32, format!("arith.mulf {ax}, {m2} : f32"));
        let e = self.exp_f32(arg);
        let one = self.const_float(1.0, Ty::F32);
        let num = self.t.def(Ty::F32, format!("arith.subf {one}, {e} : f32"));
        let den = self.t.def(Ty::F32, format!("arith.addf {one}, {e} : f32"));
        let mag = self
            .t
            .def(Ty::F32, format!("arith.divf {num}, {den} : f32"));
        self.call_intrinsic("llvm.copysign.f32", &[mag, x], Ty::F32)
    }

    fn int_abs(&mut self, v: Val, dtype: DType) -> Val {
        if dtype.is_unsigned_int() || dtype == DType::Bool {
            return v;
        }
        let ty = v.ty;
        let z = self.const_int(0, ty);
        let neg = self.t.def(ty, format!("arith.subi {z}, {v} : {ty}"));
        let is_neg = self
            .t
            .def(Ty::I1, format!("arith.cmpi slt, {v}, {z} : {ty}"));
        self.t
            .def(ty, format!("arith.select {is_neg}, {neg}, {v} : {ty}"))
    }

    /// `llvm.<name>.<ty>(v)` for a float intrinsic overloaded on its type.
    pub(super) fn float_intrinsic1(&mut self, name: &str, v: Val) -> Val {
        let ty = v.ty;
        self.call_intrinsic(&format!("{name}.{ty}"), &[v], ty)
    }

    pub(super) fn float_intrinsic2(&mut self, name: &str, a: Val, b: Val) -> Val {
        let ty = a.ty;
        if ty == Ty::F32 || ty == Ty::F64 {
            return self.call_intrinsic(&format!("{name}.{ty}"), &[a, b], ty);
        }
        // Half types: compute in f32 (exact for min/max) and narrow back.
        let wa = self.t.def(Ty::F32, format!("arith.extf {a} : {ty} to f32"));
        let wb = self.t.def(Ty::F32, format!("arith.extf {b} : {ty} to f32"));
        let r = self.call_intrinsic(&format!("{name}.f32"), &[wa, wb], Ty::F32);
        self.t.def(ty, format!("arith.truncf {r} : f32 to {ty}"))
    }

    /// `llvm.call_intrinsic`: bypasses the libdevice patterns of
    /// `convert-gpu-to-nvvm`, so NVPTX selects the instruction itself.
    pub(super) fn call_intrinsic(&mut self, name: &str, args: &[Val], result: Ty) -> Val {
        let names = args
            .iter()
            .map(|a| a.name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let types = args
            .iter()
            .map(|a| a.ty.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        self.t.def(
            result,
            format!("llvm.call_intrinsic \"{name}\"({names}) : ({types}) -> {result}"),
        )
    }
}
