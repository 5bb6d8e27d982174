//! `f32` transcendental functions as branch-free polynomials, so a loop of
//! them vectorizes (libm's `expf`/`tanhf` are opaque calls that keep every
//! element scalar). [`Float`](crate::Float) for `f32` (and so `f16`/`bf16`,
//! which compute in `f32`) uses these.
//!
//! Error bounds, in units in the last place of the correctly rounded
//! result, measured against libm in `f64` over every `f32` bit pattern
//! (`exhaustive_ulp_bounds`, run with `--ignored` in release) and checked on
//! a dense sweep in every test run:
//!
//! | function | max error | notes |
//! |----------|-----------|-------|
//! | `exp`     | 2 ulp  | exact 0 / inf outside (-104, 88.72) |
//! | `log`     | 1 ulp  | `-inf` at ±0, NaN below 0, subnormals scaled first |
//! | `tanh`    | 3 ulp  | exact ±1 for `|x| >= 9.5` |
//! | `sigmoid` | 2 ulp  | `1 / (1 + exp(-x))`, as `e^x / (1 + e^x)` below 0 |
//! | `silu`    | 3 ulp  | `x * sigmoid(x)`, as `x e^x / (1 + e^x)` below 0 |
//! | `gelu`    | 4 ulp, or `4 * 2^-23` absolute below 1 | computed as `x sigmoid(2u)`; the absolute bound allows for references in the tanh form, which cancels for `x < 0` |
//!
//! NaN in gives NaN out; infinities give the limits.

const LOG2_E: f32 = std::f32::consts::LOG2_E;
// ln 2 = LN2_HI + LN2_LO, LN2_HI with 12 trailing zero bits so that
// n * LN2_HI is exact for |n| < 2^12.
const LN2_HI: f32 = 0.693_145_75;
const LN2_LO: f32 = 1.428_606_8e-6;
// Rounds to nearest by adding and removing 1.5 * 2^23 (exact for
// |v| < 2^22): `round_ties_even` is a libm call without SSE4.1.
const ROUNDER: f32 = 12_582_912.0;
// ROUNDER plus twice the exponent bias, for `exp_f32`: `v + BIASED_ROUNDER`
// holds `n + 254` in its low mantissa bits, so each half of `n` comes out
// of the bit pattern with its bias of 127 already added. 254 is even, so
// ties round to the same `n` as with ROUNDER.
const BIASED_ROUNDER: f32 = ROUNDER + 254.0;

/// `e^x`. Range reduction `x = n ln2 + r` with `|r| <= ln2 / 2` (ln2 split
/// in two so `n ln2_hi` is exact), `e^r = 1 + r + r^2 q(r)` with `q` the
/// degree-4 polynomial of `EXP_Q` (relative error below 3.1e-9 on that
/// interval, 0.05 of a half-ulp), and `2^n` applied as two exact power-of-
/// two factors so results that are subnormal round once.
///
/// Every multiply-add is fused (`mul_add`): one rounding instead of two,
/// and on a CPU with FMA one instruction instead of two. `mul_add` rounds
/// once on every target (a hardware FMA, or libm's `fmaf` in the portable
/// body), so every SIMD level of a generated body gets the same bits. A
/// vectorized loop of this function is bound by its instruction count, not
/// by memory or latency (interleaving two independent halves of a row did
/// not make it faster), so it is written for few instructions: a degree-6
/// minimax polynomial where a degree-7 Taylor one was used before (two
/// multiply-adds and the `r^4` product fewer), and `n`'s two halves taken
/// straight from the rounded value's bit pattern (one subtraction fewer).
/// Over an L1-resident row on Zen 2 (AVX2): 30 instructions per 8 lanes
/// instead of 36, about 13% less time (BENCHMARKS.md, session 11); 2^n as
/// two multiplies instead of a NaN select, one fewer again (session 24,
/// bit-identical over all 2^32 inputs); the bias carried in the rounder
/// and the leading 1 fused into the scaling, three fewer (session 26, the
/// same bits over all 2^32 inputs; 1.35-1.37 against 1.47-1.53 ns per
/// element over an L1-resident row on Zen 1).
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    // exp overflows f32 above 88.73 and rounds to 0 below -104. Clamping
    // to a wider range instead of testing both ends lets the scaling below
    // produce those results itself: 2^144 overflows to +inf, 2^-159 rounds
    // to 0, and every n stays within what the two factors can hold.
    const HIGH_ARG: f32 = 100.0;
    const LOW_ARG: f32 = -110.0;
    let clamped = x.clamp(LOW_ARG, HIGH_ARG);
    let shifted = clamped.mul_add(LOG2_E, BIASED_ROUNDER);
    let n = shifted - BIASED_ROUNDER;
    let r = (-n).mul_add(LN2_LO, (-n).mul_add(LN2_HI, clamped));
    // q in Estrin's order: (c0 + c1 r) + r^2 ((c2 + c3 r) + r^2 c4). The
    // leading 1 is added last, so that the one rounding at the result's
    // magnitude is the final one (the scaling FMA below).
    let [c0, c1, c2, c3, c4] = EXP_Q;
    let r2 = r * r;
    let q = r2.mul_add(r2.mul_add(c4, r.mul_add(c3, c2)), r.mul_add(c1, c0));
    let p_minus_1 = r2.mul_add(q, r);
    // `shifted` is ROUNDER + 254 + n exactly, and ROUNDER's bit pattern
    // has its low 22 bits clear, so its bits shifted right by one are
    // (ROUNDER's bits) / 2 + floor(n / 2) + 127, and the rest of the bits
    // are (ROUNDER's bits) / 2 + n - floor(n / 2) + 127. Shifted left by
    // 23, both leave only those biased halves in the exponent field (half
    // of ROUNDER's pattern ends in 21 zero bits, so it falls off the top):
    // 2^floor(n/2) and 2^(n - floor(n/2)) with no subtraction of
    // ROUNDER's pattern, no adds of the bias (two instructions fewer per
    // vector than adding 127 << 23 to each, the same bits for all 2^32
    // inputs), and no saturating conversion (which SSE2 does one lane at
    // a time). n is in [-159, 144]; each half is in [-80, 72], so each
    // biased half is in [47, 199] and both factors are normal.
    let bits = shifted.to_bits() as i32;
    let half = bits >> 1;
    let rest = bits.wrapping_sub(half);
    let half_factor = f32::from_bits((half << 23) as u32);
    let rest_factor = f32::from_bits((rest << 23) as u32);
    // p = 1 + p_minus_1 is in [0.70, 1.42] and 2^half a power of two, so
    // p * 2^half is normal and rounding it once, `fma(p_minus_1, 2^half,
    // 2^half)`, gives the bits of rounding p and then scaling it exactly:
    // one instruction and one add's latency fewer than `(1 + p_minus_1) *
    // 2^half` (the same bits for all 2^32 inputs, checked against that
    // form). The only other rounding is the second product's, where the
    // result is subnormal. Both factors are multiplies, not integer adds
    // to p's exponent field, so a NaN `x` (which the clamp keeps) comes out
    // of the polynomial and through both as NaN with no select: one
    // instruction fewer per vector than adding `half` to p's bits and
    // testing `x` for NaN, and the same bits.
    p_minus_1.mul_add(half_factor, half_factor) * rest_factor
}

/// `q` of [`exp_f32`], lowest degree first: the minimax (equal-ripple)
/// fit of `(e^r - 1 - r) / r^2` for the relative error of `1 + r + r^2 q`
/// over `|r| <= ln 2 / 2` (a Remez exchange in 40-digit arithmetic; the
/// f32 roundings of the coefficients add far less than the f32 result's
/// own rounding).
const EXP_Q: [f32; 5] = [
    0.499_999_94,
    0.166_665_21,
    0.041_668_39,
    0.008_368_71,
    0.001_381_461_4,
];

/// `(ln(1 + f) - f + f^2 / 2) / f^3` as a polynomial in `f` on
/// `sqrt(1/2) - 1 <= f < sqrt(2) - 1`, lowest degree first: a near-minimax
/// fit (Lawson-weighted least squares) of `ln(1 + f)`'s relative error,
/// below 6e-9 before rounding (within 0.81 ulp once evaluated in `f32`).
const LOG_P: [f32; 8] = [
    0.333_333_3,
    -0.250_008_2,
    0.200_012_27,
    -0.166_233_57,
    0.142_017_59,
    -0.131_601_87,
    0.127_615_68,
    -0.076_344_74,
];

/// The bit pattern of `sqrt(1/2)` rounded: the mantissa interval starts
/// there, so `m = x / 2^e` lies in `[sqrt(1/2), sqrt(2))` and `ln m` is
/// small on both sides of 0.
const SQRT_HALF_BITS: i32 = 0x3f35_04f3;

/// `ln x`: `x = 2^e m` with `m` in `[sqrt(1/2), sqrt(2))` read off the bit
/// pattern (subnormals scaled by 2^23 first), `ln m = f - f^2/2 + f^3
/// P(f)` with `f = m - 1` (`LOG_P`), and `e ln 2` added last in two parts
/// (`e * LN2_HI` is exact), so the only large rounding is the final add.
/// Zero gives `-inf`, a negative or NaN `x` NaN, `+inf` itself. libm's
/// `logf` is an opaque call per element; this vectorizes.
#[inline(always)]
pub fn log_f32(x: f32) -> f32 {
    const TWO_POW_23: f32 = 8_388_608.0;
    let subnormal = x < f32::MIN_POSITIVE;
    let scaled = if subnormal { x * TWO_POW_23 } else { x };
    let bits = scaled.to_bits() as i32;
    let exponent = bits.wrapping_sub(SQRT_HALF_BITS) >> 23;
    let m = f32::from_bits(bits.wrapping_sub(exponent << 23) as u32);
    let e = exponent as f32 - if subnormal { 23.0 } else { 0.0 };
    let f = m - 1.0;
    let f2 = f * f;
    let mut p = LOG_P[7];
    for &c in LOG_P[..7].iter().rev() {
        p = p.mul_add(f, c);
    }
    let tail = (f2 * f).mul_add(p, -0.5 * f2);
    let ln = e.mul_add(LN2_HI, f + e.mul_add(LN2_LO, tail));
    if x == 0.0 {
        f32::NEG_INFINITY
    } else if x < 0.0 || x.is_nan() {
        f32::NAN
    } else if x == f32::INFINITY {
        x
    } else {
        ln
    }
}

/// `(tanh x - x) / x^3` as a polynomial in `s = x^2` on `|x| <= 1/2`,
/// lowest degree first: a near-minimax fit (Lawson-weighted least squares)
/// of the relative error of `x + x^3 P(s)`, below 4e-10 before rounding,
/// so the result is within 0.65 ulp there.
const TANH_P: [f32; 5] = [
    -0.333_333_28,
    0.133_329_64,
    -0.053_899_19,
    0.021_297_988,
    -0.006_647_481_6,
];

/// `tanh x`: `|x| + |x|^3 P(x^2)` (`TANH_P`) while `|x| <= 1/2`, else
/// `e / (e + 2)` with `e = e^{2|x|} - 1` from [`exp_f32`] (no cancellation
/// there: `e > 1.7`); the sign restored.
///
/// The small branch once took `e` from an 11-term Taylor series of
/// `e^y - 1` in separate multiplies and adds, twenty-two operations per
/// vector on top of `exp` (a vector evaluates both branches); the odd
/// polynomial is five FMAs and two products, and it rounds less.
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    // tanh(9.5) = 1 - 1.1e-8 rounds to 1 in f32.
    let a = x.abs().min(9.5);
    let t = if a <= 0.5 {
        let s = a * a;
        let [c0, c1, c2, c3, c4] = TANH_P;
        let p = s.mul_add(s.mul_add(s.mul_add(s.mul_add(c4, c3), c2), c1), c0);
        (a * s).mul_add(p, a)
    } else {
        let e = exp_f32(2.0 * a) - 1.0;
        e / (e + 2.0)
    };
    if x.is_nan() { x } else { t.copysign(x) }
}

/// `1 / (1 + e^-x)` from `e = e^{-|x|}`, which never overflows:
/// `1 / (1 + e)` for `x >= 0`, `e / (1 + e)` below 0 (a result in the
/// subnormals is `exp`'s own, rounded once).
///
/// Both logistic functions once used `h = e^{-|x|/2}` and `e = h * h` to
/// share one form; squaring doubled `exp`'s error and put them at 5 ulp
/// (sigmoid at -3.4651504, silu at -2.0295715) against a bound of 4.
#[inline(always)]
pub fn sigmoid_f32(x: f32) -> f32 {
    let e = exp_f32(-x.abs());
    if x < 0.0 {
        e / (1.0 + e)
    } else {
        1.0 / (1.0 + e)
    }
}

/// Below this `silu` takes `e^x` as `h * h` with `h = e^{x/2}`: `e^x`
/// itself would be subnormal past -87.3, and `x * e^x` (about 1e-36 there,
/// still normal) would keep only its few bits.
const SILU_HALF_BELOW: f32 = -80.0;

/// `x * sigmoid(x)`: `x / (1 + e^-x)` for `x >= 0`, `x e^x / (1 + e^x)`
/// below 0, and `(x h) h` with `h = e^{x/2}` below [`SILU_HALF_BELOW`]
/// (where `1 + e^x` rounds to 1). One `exp` whichever branch a lane takes.
#[inline(always)]
pub fn silu_f32(x: f32) -> f32 {
    let arg = if x < SILU_HALF_BELOW {
        0.5 * x
    } else {
        -x.abs()
    };
    let e = exp_f32(arg);
    if x >= 0.0 {
        x / (1.0 + e)
    } else if x >= SILU_HALF_BELOW {
        (x * e) / (1.0 + e)
    } else {
        (x * e) * e
    }
}

/// GELU, tanh approximation: `0.5 x (1 + tanh(u))` with
/// `u = sqrt(2/pi) (x + 0.044715 x^3)`, computed as `x sigmoid(2 u)` (the
/// same function: `(1 + tanh u) / 2 = 1 / (1 + e^{-2u})`). That is one
/// `exp` and one division, where `tanh` is a polynomial, an `exp` and a
/// division (a vector evaluates both of its branches): 2.2 against 3.4 ns
/// per element on Zen 1. It also has no cancellation for negative `x`,
/// where `1 + tanh u` subtracts two numbers near 1.
#[inline(always)]
pub fn gelu_f32(x: f32) -> f32 {
    const TWO_SQRT_2_OVER_PI: f32 =
        2.0 * std::f32::consts::FRAC_2_SQRT_PI * std::f32::consts::FRAC_1_SQRT_2;
    let two_u = TWO_SQRT_2_OVER_PI * (0.044715 * x * x).mul_add(x, x);
    x * sigmoid_f32(two_u)
}

#[cfg(test)]
#[path = "math_tests.rs"]
mod tests;
