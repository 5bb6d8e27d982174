//! The operators whose plain MLIR forms are poison or undefined on some
//! inputs, emitted in guarded forms that give exactly what the host back
//! end (`phobos-rt`'s `Num`/`Int`/`Element` traits) gives on every input
//! (SPEC.md §10, "Edge cases"):
//!
//! - integer `/` and `%`: `x / 0 == x % 0 == 0`, `MIN / -1 == MIN` (wraps),
//!   `MIN % -1 == 0`. The divisor is replaced by 1 where it is 0 or where
//!   `MIN / -1` would overflow, so `arith.div*`/`arith.rem*` never see an
//!   undefined pair; a select then puts 0 where the divisor was 0.
//! - shifts by an amount outside `0..bits` (negative included): `<<` and
//!   unsigned `>>` give 0, signed `>>` the sign fill. The amount is clamped
//!   into range before the shift, so `arith.sh*` never sees a poison amount.
//! - float `%`: C `fmod`, computed exactly in emitted code (no libdevice).
//! - float `min`/`max`: the host's definition spelled out with compares and
//!   a select, so the result is bit-equal (NaN loses to a number, ties keep
//!   the first operand, signed zeros included).

use crate::ir::DType;

use super::{Emitter, text::Ty, text::Val};

impl Emitter<'_> {
    /// `a / b` on integers; `unsigned` for unsigned types.
    pub(super) fn int_div(&mut self, a: &Val, b: &Val, unsigned: bool) -> Val {
        let ty = a.ty;
        let (safe, b_zero) = self.safe_divisor(a, b, unsigned);
        let op = if unsigned { "divui" } else { "divsi" };
        let q = self.t.def(ty, format!("arith.{op} {a}, {safe} : {ty}"));
        let zero = self.const_int(0, ty);
        self.t
            .def(ty, format!("arith.select {b_zero}, {zero}, {q} : {ty}"))
    }

    /// `a % b` on integers. With the divisor 1 in place of 0 and of `-1`
    /// under `MIN`, the remainder is already the host's 0.
    pub(super) fn int_rem(&mut self, a: &Val, b: &Val, unsigned: bool) -> Val {
        let ty = a.ty;
        let (safe, _) = self.safe_divisor(a, b, unsigned);
        let op = if unsigned { "remui" } else { "remsi" };
        self.t.def(ty, format!("arith.{op} {a}, {safe} : {ty}"))
    }

    /// The divisor with 1 wherever dividing by it is undefined, and whether
    /// `b` is 0.
    fn safe_divisor(&mut self, a: &Val, b: &Val, unsigned: bool) -> (Val, Val) {
        let ty = a.ty;
        let zero = self.const_int(0, ty);
        let one = self.const_int(1, ty);
        let b_zero = self
            .t
            .def(Ty::I1, format!("arith.cmpi eq, {b}, {zero} : {ty}"));
        let undefined = if unsigned {
            b_zero.clone()
        } else {
            let min = self.const_int(signed_min(ty), ty);
            let minus_one = self.const_int(-1, ty);
            let a_min = self
                .t
                .def(Ty::I1, format!("arith.cmpi eq, {a}, {min} : {ty}"));
            let b_minus_one = self
                .t
                .def(Ty::I1, format!("arith.cmpi eq, {b}, {minus_one} : {ty}"));
            let overflow = self
                .t
                .def(Ty::I1, format!("arith.andi {a_min}, {b_minus_one} : i1"));
            self.t
                .def(Ty::I1, format!("arith.ori {b_zero}, {overflow} : i1"))
        };
        let safe = self
            .t
            .def(ty, format!("arith.select {undefined}, {one}, {b} : {ty}"));
        (safe, b_zero)
    }

    /// `a << b` / `a >> b` on integers (`left` for `<<`).
    pub(super) fn int_shift(&mut self, a: &Val, b: &Val, left: bool, unsigned: bool) -> Val {
        let ty = a.ty;
        let bits = self.const_int(i64::from(ty.bits()), ty);
        // Unsigned compare: a negative amount is huge, so out of range too.
        let in_range = self
            .t
            .def(Ty::I1, format!("arith.cmpi ult, {b}, {bits} : {ty}"));
        if !left && !unsigned {
            // Shifting by bits - 1 is the sign fill the host gives.
            let top = self.const_int(i64::from(ty.bits()) - 1, ty);
            let amount = self
                .t
                .def(ty, format!("arith.select {in_range}, {b}, {top} : {ty}"));
            return self.t.def(ty, format!("arith.shrsi {a}, {amount} : {ty}"));
        }
        let zero = self.const_int(0, ty);
        let amount = self
            .t
            .def(ty, format!("arith.select {in_range}, {b}, {zero} : {ty}"));
        let op = if left { "shli" } else { "shrui" };
        let shifted = self.t.def(ty, format!("arith.{op} {a}, {amount} : {ty}"));
        self.t.def(
            ty,
            format!("arith.select {in_range}, {shifted}, {zero} : {ty}"),
        )
    }

    /// `cdiv(a, b)` as the host computes it: `a / b`, plus one when the
    /// remainder is non-zero and the operands have the same sign (always,
    /// for unsigned types); so `cdiv(x, 0) == 0`.
    pub(super) fn int_ceil_div(&mut self, a: &Val, b: &Val, dtype: DType) -> Val {
        let ty = a.ty;
        let unsigned = dtype.is_unsigned_int();
        let q = self.int_div(a, b, unsigned);
        let r = self.int_rem(a, b, unsigned);
        let zero = self.const_int(0, ty);
        let one = self.const_int(1, ty);
        let inexact = self
            .t
            .def(Ty::I1, format!("arith.cmpi ne, {r}, {zero} : {ty}"));
        let bump = if unsigned {
            inexact
        } else {
            let a_neg = self
                .t
                .def(Ty::I1, format!("arith.cmpi slt, {a}, {zero} : {ty}"));
            let b_neg = self
                .t
                .def(Ty::I1, format!("arith.cmpi slt, {b}, {zero} : {ty}"));
            let same_sign = self
                .t
                .def(Ty::I1, format!("arith.cmpi eq, {a_neg}, {b_neg} : i1"));
            self.t
                .def(Ty::I1, format!("arith.andi {inexact}, {same_sign} : i1"))
        };
        let q1 = self.t.def(ty, format!("arith.addi {q}, {one} : {ty}"));
        self.t
            .def(ty, format!("arith.select {bump}, {q1}, {q} : {ty}"))
    }

    /// `min(a, b)` (`max` when `!min`) on floats, bit-equal to the host's
    /// `Element::minimum`: `if a.is_nan() || b < a { b } else { a }`.
    pub(super) fn float_min_max(&mut self, a: &Val, b: &Val, min: bool) -> Val {
        let ty = a.ty;
        let a_nan = self
            .t
            .def(Ty::I1, format!("arith.cmpf uno, {a}, {a} : {ty}"));
        let pred = if min { "olt" } else { "ogt" };
        let better = self
            .t
            .def(Ty::I1, format!("arith.cmpf {pred}, {b}, {a} : {ty}"));
        let take_b = self
            .t
            .def(Ty::I1, format!("arith.ori {a_nan}, {better} : i1"));
        self.t
            .def(ty, format!("arith.select {take_b}, {b}, {a} : {ty}"))
    }

    /// `a % b` on floats: C `fmod` (the result has the dividend's sign and
    /// is exact), as Rust's `%` on the host.
    ///
    /// Computed in emitted code rather than by libdevice's `__nv_fmodf`, so
    /// the PTX path needs no file from a CUDA toolkit. The algorithm is
    /// exact in IEEE arithmetic: for finite `|x| >= |y| > 0`, take `t`, the
    /// largest `|y| * 2^k <= |x|` (doubling is exact); then, while
    /// `t >= |y|`, subtract `t` from the remainder `r` when `r >= t` and
    /// halve `t`. Throughout `r < 2t`, so each subtraction has
    /// `t <= r < 2t` and is exact (Sterbenz), and each halving of a
    /// `|y| * 2^k` with `k >= 1` is exact. At most about twice the exponent
    /// difference of `x` and `y` steps (some 550 for `f32`, 4200 for `f64`
    /// in the worst case, a handful for operands of similar size).
    /// `f16`/`bf16` are computed in `f32`, which is exact (the remainder of
    /// two `f16` values is an `f16` value) and rounds once, like the host.
    pub(super) fn float_rem(&mut self, x: &Val, y: &Val) -> Val {
        let ty = x.ty;
        if ty != Ty::F32 && ty != Ty::F64 {
            let wx = self.t.def(Ty::F32, format!("arith.extf {x} : {ty} to f32"));
            let wy = self.t.def(Ty::F32, format!("arith.extf {y} : {ty} to f32"));
            let r = self.float_rem(&wx, &wy);
            return self.t.def(ty, format!("arith.truncf {r} : f32 to {ty}"));
        }
        // llvm intrinsics, not `math.absf`/`math.copysign`: those would be
        // rewritten into libdevice calls, which the pipeline does not link.
        let ax = self.call_intrinsic(&format!("llvm.fabs.{ty}"), std::slice::from_ref(x), ty);
        let ay = self.call_intrinsic(&format!("llvm.fabs.{ty}"), std::slice::from_ref(y), ty);
        let zero = self.const_float(0.0, ty);
        let inf = self.const_float(f64::INFINITY, ty);
        let two = self.const_float(2.0, ty);
        let half = self.const_float(0.5, ty);
        // Ordered compares: false when either side is NaN.
        let x_finite = self
            .t
            .def(Ty::I1, format!("arith.cmpf olt, {ax}, {inf} : {ty}"));
        let reduce = self
            .t
            .def(Ty::I1, format!("arith.cmpf oge, {ax}, {ay} : {ty}"));
        let y_nonzero = self
            .t
            .def(Ty::I1, format!("arith.cmpf one, {ay}, {zero} : {ty}"));
        let go = self
            .t
            .def(Ty::I1, format!("arith.andi {x_finite}, {reduce} : i1"));
        let go = self
            .t
            .def(Ty::I1, format!("arith.andi {go}, {y_nonzero} : i1"));

        let rem = self.t.fresh("fmod");
        self.t.open(format!("{rem} = scf.if {go} -> ({ty}) {{"));
        // t = the largest |y| * 2^k <= |x| (doubling past the largest
        // finite value gives inf, which ends the loop).
        let t0 = self.t.fresh("t");
        let t = self.t.fresh("t");
        self.t.open(format!(
            "{t} = scf.while ({t0} = {ay}) : ({ty}) -> ({ty}) {{"
        ));
        let doubled = self.t.def(ty, format!("arith.mulf {t0}, {two} : {ty}"));
        let fits = self
            .t
            .def(Ty::I1, format!("arith.cmpf ole, {doubled}, {ax} : {ty}"));
        self.t.line(format!("scf.condition({fits}) {t0} : {ty}"));
        self.t.close("} do {");
        let t1 = self.t.fresh("t");
        self.t.open(format!("^bb0({t1}: {ty}):"));
        let next = self.t.def(ty, format!("arith.mulf {t1}, {two} : {ty}"));
        self.t.line(format!("scf.yield {next} : {ty}"));
        self.t.close("}");
        // Walk t back down to |y|, subtracting where it fits.
        let (r0, s0, out) = (self.t.fresh("r"), self.t.fresh("s"), self.t.fresh("r"));
        self.t.open(format!(
            "{out}:2 = scf.while ({r0} = {ax}, {s0} = {t}) : ({ty}, {ty}) -> ({ty}, {ty}) {{"
        ));
        let more = self
            .t
            .def(Ty::I1, format!("arith.cmpf oge, {s0}, {ay} : {ty}"));
        self.t
            .line(format!("scf.condition({more}) {r0}, {s0} : {ty}, {ty}"));
        self.t.close("} do {");
        let (r1, s1) = (self.t.fresh("r"), self.t.fresh("s"));
        self.t.open(format!("^bb0({r1}: {ty}, {s1}: {ty}):"));
        let fits = self
            .t
            .def(Ty::I1, format!("arith.cmpf oge, {r1}, {s1} : {ty}"));
        let less = self.t.def(ty, format!("arith.subf {r1}, {s1} : {ty}"));
        let r2 = self
            .t
            .def(ty, format!("arith.select {fits}, {less}, {r1} : {ty}"));
        let s2 = self.t.def(ty, format!("arith.mulf {s1}, {half} : {ty}"));
        self.t.line(format!("scf.yield {r2}, {s2} : {ty}, {ty}"));
        self.t.close("}");
        self.t.line(format!("scf.yield {out}#0 : {ty}"));
        self.t.reopen("} else {");
        self.t.line(format!("scf.yield {ax} : {ty}"));
        self.t.close("}");
        let rem = Val { name: rem, ty };
        let signed = self.call_intrinsic(&format!("llvm.copysign.{ty}"), &[rem, x.clone()], ty);

        // |x| < |y| (y infinite included): x itself. x infinite or NaN, y
        // zero or NaN: NaN.
        let small = self
            .t
            .def(Ty::I1, format!("arith.cmpf olt, {ax}, {ay} : {ty}"));
        let kept = self
            .t
            .def(ty, format!("arith.select {small}, {x}, {signed} : {ty}"));
        let x_bad = self
            .t
            .def(Ty::I1, format!("arith.cmpf uge, {ax}, {inf} : {ty}"));
        let y_bad = self
            .t
            .def(Ty::I1, format!("arith.cmpf ueq, {ay}, {zero} : {ty}"));
        let bad = self
            .t
            .def(Ty::I1, format!("arith.ori {x_bad}, {y_bad} : i1"));
        let nan = self.const_float(f64::NAN, ty);
        self.t
            .def(ty, format!("arith.select {bad}, {nan}, {kept} : {ty}"))
    }
}

/// The most negative value of a signed integer type of `ty`'s width.
fn signed_min(ty: Ty) -> i64 {
    match ty.bits() {
        bits @ 1..=63 => -(1i64 << (bits - 1)),
        _ => i64::MIN,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    /// `float_rem`'s emitted steps, op for op, in Rust: each IEEE operation
    /// here is the one the MLIR performs (no fused or reordered math).
    macro_rules! fmod_model {
        ($name:ident, $t:ty) => {
            fn $name(x: $t, y: $t) -> $t {
                let (ax, ay) = (x.abs(), y.abs());
                let go = ax < <$t>::INFINITY && ax >= ay && ay != 0.0;
                let rem = if go {
                    let mut t = ay;
                    while t * 2.0 <= ax {
                        t *= 2.0;
                    }
                    let (mut r, mut s) = (ax, t);
                    while s >= ay {
                        r = if r >= s { r - s } else { r };
                        s *= 0.5;
                    }
                    r
                } else {
                    ax
                };
                let kept = if ax < ay { x } else { rem.copysign(x) };
                // `uge`/`ueq`: true for NaN too.
                let bad = ax.is_nan() || ax == <$t>::INFINITY || ay.is_nan() || ay == 0.0;
                if bad { <$t>::NAN } else { kept }
            }
        };
    }

    fmod_model!(fmod_f32, f32);
    fmod_model!(fmod_f64, f64);

    fn same_f32(a: f32, b: f32) -> bool {
        (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
    }

    fn same_f64(a: f64, b: f64) -> bool {
        (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
    }

    #[test]
    fn fmod_model_matches_rust_on_special_values() {
        let values = [
            0.0f32,
            -0.0,
            1.0,
            -1.0,
            0.1,
            -7.5,
            3.0,
            f32::MAX,
            -f32::MAX,
            f32::MIN_POSITIVE,
            f32::from_bits(1),
            -f32::from_bits(3),
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
        ];
        for &x in &values {
            for &y in &values {
                assert!(same_f32(fmod_f32(x, y), x % y), "{x:e} % {y:e}");
                let (x, y) = (f64::from(x), f64::from(y));
                assert!(same_f64(fmod_f64(x, y), x % y), "{x:e} % {y:e}");
            }
        }
        // The largest exponent gap of each type: the longest loops.
        assert!(same_f64(
            fmod_f64(f64::MAX, f64::from_bits(1)),
            f64::MAX % f64::from_bits(1)
        ));
        assert!(same_f32(
            fmod_f32(f32::MAX, f32::from_bits(1)),
            f32::MAX % f32::from_bits(1)
        ));
    }

    proptest! {
        /// Any two bit patterns: the model equals Rust's `%` (C fmod).
        #[test]
        fn fmod_model_matches_rust_on_any_f32(x in any::<u32>(), y in any::<u32>()) {
            let (x, y) = (f32::from_bits(x), f32::from_bits(y));
            prop_assert!(same_f32(fmod_f32(x, y), x % y), "{:e} % {:e}", x, y);
        }

        #[test]
        fn fmod_model_matches_rust_on_any_f64(x in any::<u64>(), y in any::<u64>()) {
            let (x, y) = (f64::from_bits(x), f64::from_bits(y));
            prop_assert!(same_f64(fmod_f64(x, y), x % y), "{:e} % {:e}", x, y);
        }

        /// Operands of similar size, where the quotient is small and every
        /// remainder bit matters.
        #[test]
        fn fmod_model_matches_rust_on_close_operands(x in -1e6f64..1e6, y in -1e3f64..1e3) {
            prop_assert!(same_f64(fmod_f64(x, y), x % y), "{:e} % {:e}", x, y);
            let (x, y) = (x as f32, y as f32);
            prop_assert!(same_f32(fmod_f32(x, y), x % y), "{:e} % {:e}", x, y);
        }
    }
}
