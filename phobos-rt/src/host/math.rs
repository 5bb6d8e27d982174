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
//! | `tanh`    | 3 ulp  | exact ±1 for `|x| >= 9.5` |
//! | `sigmoid` | 4 ulp  | `1 / (1 + exp(-x))`, as `e^x / (1 + e^x)` below 0 |
//! | `silu`    | 4 ulp  | `x * sigmoid(x)` |
//! | `gelu`    | 4 ulp, or `4 * 2^-23` absolute below 1 | the tanh form cancels for `x < 0`, as it does in any precision |
//!
//! NaN in gives NaN out; infinities give the limits.

const LOG2_E: f32 = std::f32::consts::LOG2_E;
// ln 2 = LN2_HI + LN2_LO, LN2_HI with 12 trailing zero bits so that
// n * LN2_HI is exact for |n| < 2^12 (both forms of `e^x`).
const LN2_HI: f32 = 0.693_145_75;
const LN2_LO: f32 = 1.428_606_8e-6;
// Rounds to nearest by adding and removing 1.5 * 2^23 (exact for
// |v| < 2^22): `round_ties_even` is a libm call without SSE4.1.
const ROUNDER: f32 = 12_582_912.0;

/// `e^x`. Range reduction `x = n ln2 + r` with `|r| <= ln2 / 2` (ln2 split
/// in two so `n ln2_hi` is exact), `e^r = 1 + r + r^2 q(r)` with `q` the
/// degree-4 polynomial of [`EXP_Q`] (relative error below 3.1e-9 on that
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
/// instead of 36, about 13% less time (BENCHMARKS.md, session 11).
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    // exp overflows f32 above 88.73 and rounds to 0 below -104. Clamping
    // to a wider range instead of testing both ends lets the scaling below
    // produce those results itself: 2^144 overflows to +inf, 2^-159 rounds
    // to 0, and every n stays within what the two factors can hold.
    const HIGH_ARG: f32 = 100.0;
    const LOW_ARG: f32 = -110.0;
    let clamped = x.clamp(LOW_ARG, HIGH_ARG);
    let shifted = clamped.mul_add(LOG2_E, ROUNDER);
    let n = shifted - ROUNDER;
    let r = (-n).mul_add(LN2_LO, (-n).mul_add(LN2_HI, clamped));
    // q in Estrin's order: (c0 + c1 r) + r^2 ((c2 + c3 r) + r^2 c4). The
    // leading 1 is added last, so that the one rounding at the result's
    // magnitude is the final add.
    let [c0, c1, c2, c3, c4] = EXP_Q;
    let r2 = r * r;
    let q = r2.mul_add(r2.mul_add(c4, r.mul_add(c3, c2)), r.mul_add(c1, c0));
    let p = 1.0 + r2.mul_add(q, r);
    // `shifted` is ROUNDER + n exactly, and ROUNDER's bit pattern is even
    // with its low 9 bits clear, so its bits shifted right by one are
    // (ROUNDER's bits) / 2 + floor(n / 2), and both that and the rest,
    // shifted left by 23, leave only floor(n / 2) and n - floor(n / 2) in
    // the exponent field: the same halves as from n as an integer, without
    // subtracting ROUNDER's pattern (or the saturating conversion that SSE2
    // does one lane at a time). n is in [-159, 144]; each half is in
    // [-80, 72], a normal power of two.
    let bits = shifted.to_bits() as i32;
    let half = bits >> 1;
    let rest = bits.wrapping_sub(half);
    // p is in [0.70, 1.42], so p * 2^half is normal: multiplying by it is
    // adding half to p's exponent field, exactly, in one integer add.
    let scaled = f32::from_bits((p.to_bits() as i32).wrapping_add(half << 23) as u32);
    let factor = f32::from_bits((rest << 23).wrapping_add(127 << 23) as u32);
    let y = scaled * factor;
    if x.is_nan() { x } else { y }
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

/// The `e^x` of [`half_exp`]: the unfused form [`exp_f32`] had before it
/// was made cheaper. `sigmoid` and `silu` square its result (`h * h`),
/// which doubles its error, and the cheaper form's errors, though within
/// 1 ulp for `e^x` itself, put `silu` at 5 ulp at one input (-5.0924153,
/// over every f32) against its bound of 4; with this form both stay
/// within 4.
#[inline(always)]
fn exp_f32_unfused(x: f32) -> f32 {
    // Above this exp overflows f32; below -104 it rounds to 0.
    const MAX_ARG: f32 = 88.722_84;
    const MIN_ARG: f32 = -104.0;
    let clamped = x.clamp(MIN_ARG, MAX_ARG);
    let shifted = clamped * LOG2_E + ROUNDER;
    let n = shifted - ROUNDER;
    let r = (clamped - n * LN2_HI) - n * LN2_LO;
    let mut p = 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    // n is in [-150, 128]; each half is in [-75, 64], a normal power of two.
    // `shifted` holds n in its low mantissa bits (its exponent is that of
    // ROUNDER), so n as an integer is a subtraction of bit patterns: the
    // same n as `n as i32`, without the saturating conversion that SSE2
    // does one lane at a time.
    let n = (shifted.to_bits() as i32).wrapping_sub(ROUNDER.to_bits() as i32);
    let half = n >> 1;
    let rest = n - half;
    let y = p * pow2(half) * pow2(rest);
    if x.is_nan() {
        x
    } else if x > MAX_ARG {
        f32::INFINITY
    } else if x < MIN_ARG {
        0.0
    } else {
        y
    }
}

/// `2^n` for `n` in the normal exponent range.
#[inline(always)]
fn pow2(n: i32) -> f32 {
    f32::from_bits(((n + 127) as u32) << 23)
}

/// `e^y - 1` for `0 <= y <= 1`: Taylor to degree 11 (truncation below
/// 3e-8 relative), no cancellation near 0.
#[inline(always)]
fn expm1_small(y: f32) -> f32 {
    let mut p = 1.0 / 39_916_800.0;
    p = p * y + 1.0 / 3_628_800.0;
    p = p * y + 1.0 / 362_880.0;
    p = p * y + 1.0 / 40_320.0;
    p = p * y + 1.0 / 5040.0;
    p = p * y + 1.0 / 720.0;
    p = p * y + 1.0 / 120.0;
    p = p * y + 1.0 / 24.0;
    p = p * y + 1.0 / 6.0;
    p = p * y + 0.5;
    p = p * y + 1.0;
    p * y
}

/// `tanh x = e / (e + 2)` with `e = e^{2|x|} - 1`, the sign restored;
/// `e` from [`expm1_small`] while `2|x| <= 1`, else from [`exp_f32`].
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    // tanh(9.5) = 1 - 1.1e-8 rounds to 1 in f32.
    let y = 2.0 * x.abs().min(9.5);
    let e = if y <= 1.0 {
        expm1_small(y)
    } else {
        exp_f32(y) - 1.0
    };
    let t = e / (e + 2.0);
    if x.is_nan() { x } else { t.copysign(x) }
}

/// `h = e^{-|x|/2}` and `1 + h^2`: both logistic functions from one
/// `exp`, with `e^{-|x|}` kept as `h * h` so that a result deep in the
/// subnormals is rounded once instead of after an underflowed factor.
#[inline(always)]
fn half_exp(x: f32) -> (f32, f32) {
    let h = exp_f32_unfused(-0.5 * x.abs());
    (h, 1.0 + h * h)
}

/// `1 / (1 + e^-x)`: `1 / (1 + h^2)` for `x >= 0`, `h * (h / (1 + h^2))`
/// (`e^x / (1 + e^x)`) below 0, which follows `e^x` into the subnormals
/// instead of overflowing `e^-x`.
#[inline(always)]
pub fn sigmoid_f32(x: f32) -> f32 {
    let (h, d) = half_exp(x);
    if x < 0.0 { h * (h / d) } else { 1.0 / d }
}

/// `x * sigmoid(x)`, as `(x h) (h / (1 + h^2))` below 0 (see [`sigmoid_f32`]).
#[inline(always)]
pub fn silu_f32(x: f32) -> f32 {
    let (h, d) = half_exp(x);
    if x < 0.0 { (x * h) * (h / d) } else { x / d }
}

/// GELU, tanh approximation: `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
#[inline(always)]
pub fn gelu_f32(x: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = std::f32::consts::FRAC_2_SQRT_PI * std::f32::consts::FRAC_1_SQRT_2;
    let inner = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x);
    0.5 * x * (1.0 + tanh_f32(inner))
}

#[cfg(test)]
#[path = "math_tests.rs"]
mod tests;
