//! Transcendental and rounding functions on float elements.

use super::Num;
use crate::host::math;
use half::{bf16, f16};

/// Float element types: `f16 bf16 f32 f64`. `f16`/`bf16` compute in `f32`
/// and round back once.
///
/// - `f32` (and so `f16`/`bf16`) `exp tanh sigmoid silu gelu` are the
///   polynomials of `host::math` (within 2-4 ulp of libm, stated there).
/// - `gelu` is the tanh approximation
///   `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, the form GPU
///   inference kernels use.
/// - `round` rounds half away from zero (C `roundf`, MLIR `math.round`).
/// - `floor`/`round` of NaN or infinity return it unchanged.
pub trait Float: Num {
    /// `e^x`.
    fn exp(self) -> Self;
    /// Natural logarithm.
    fn log(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// `1 / sqrt(x)`.
    fn rsqrt(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// `1 / (1 + e^-x)`.
    fn sigmoid(self) -> Self;
    /// `x * sigmoid(x)`.
    fn silu(self) -> Self;
    /// GELU, tanh approximation.
    fn gelu(self) -> Self;
    /// Round toward negative infinity.
    fn floor(self) -> Self;
    /// Round to nearest, ties away from zero.
    fn round(self) -> Self;
    /// Widens to `f32` (rounds for `f64`).
    fn to_f32(self) -> f32;
    /// Narrows from `f32` (exact for `f32`/`f64`).
    fn from_f32(v: f32) -> Self;
}

macro_rules! prim_float {
    ($($t:ident: $exp:path, $log:path, $tanh:path, $sigmoid:path, $silu:path, $gelu:path),*) => {$(
        impl Float for $t {
            #[inline(always)]
            fn exp(self) -> Self { $exp(self) }
            #[inline(always)]
            fn log(self) -> Self { $log(self) }
            #[inline(always)]
            fn sqrt(self) -> Self { $t::sqrt(self) }
            #[inline(always)]
            fn rsqrt(self) -> Self { 1.0 / $t::sqrt(self) }
            #[inline(always)]
            fn tanh(self) -> Self { $tanh(self) }
            #[inline(always)]
            fn sigmoid(self) -> Self { $sigmoid(self) }
            #[inline(always)]
            fn silu(self) -> Self { $silu(self) }
            #[inline(always)]
            fn gelu(self) -> Self { $gelu(self) }
            #[inline(always)]
            fn floor(self) -> Self { $t::floor(self) }
            #[inline(always)]
            fn round(self) -> Self { $t::round(self) }
            #[inline(always)]
            fn to_f32(self) -> f32 { self as f32 }
            #[inline(always)]
            fn from_f32(v: f32) -> Self { v as $t }
        }
    )*};
}

// f32: branch-free polynomials that vectorize, with the error bounds
// stated in `host::math`; f64: libm.
prim_float!(
    f32: math::exp_f32, math::log_f32, math::tanh_f32, math::sigmoid_f32, math::silu_f32, math::gelu_f32,
    f64: f64::exp, f64::ln, f64::tanh, sigmoid_f64, silu_f64, gelu_f64
);

fn sigmoid_f64(x: f64) -> f64 {
    1.0 / (1.0 + f64::exp(-x))
}

fn silu_f64(x: f64) -> f64 {
    x / (1.0 + f64::exp(-x))
}

fn gelu_f64(x: f64) -> f64 {
    const SQRT_2_OVER_PI: f64 = std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2;
    let inner = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x);
    0.5 * x * (1.0 + f64::tanh(inner))
}

macro_rules! half_float {
    ($($t:ident),*) => {$(
        impl Float for $t {
            #[inline(always)]
            fn exp(self) -> Self { $t::from_f32(Float::exp(self.to_f32())) }
            #[inline(always)]
            fn log(self) -> Self { $t::from_f32(Float::log(self.to_f32())) }
            #[inline(always)]
            fn sqrt(self) -> Self { $t::from_f32(Float::sqrt(self.to_f32())) }
            #[inline(always)]
            fn rsqrt(self) -> Self { $t::from_f32(Float::rsqrt(self.to_f32())) }
            #[inline(always)]
            fn tanh(self) -> Self { $t::from_f32(Float::tanh(self.to_f32())) }
            #[inline(always)]
            fn sigmoid(self) -> Self { $t::from_f32(Float::sigmoid(self.to_f32())) }
            #[inline(always)]
            fn silu(self) -> Self { $t::from_f32(Float::silu(self.to_f32())) }
            #[inline(always)]
            fn gelu(self) -> Self { $t::from_f32(Float::gelu(self.to_f32())) }
            #[inline(always)]
            fn floor(self) -> Self { $t::from_f32(Float::floor(self.to_f32())) }
            #[inline(always)]
            fn round(self) -> Self { $t::from_f32(Float::round(self.to_f32())) }
            #[inline(always)]
            fn to_f32(self) -> f32 { $t::to_f32(self) }
            #[inline(always)]
            fn from_f32(v: f32) -> Self { $t::from_f32(v) }
        }
    )*};
}

half_float!(f16, bf16);

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-30)
    }

    #[test]
    fn f32_functions_match_f64_reference() {
        for &x in &[-3.0f32, -0.5, 0.0, 0.25, 1.0, 2.5] {
            let r = x as f64;
            assert!(close(Float::exp(x) as f64, r.exp(), 1e-6));
            assert!(close(Float::tanh(x) as f64, r.tanh(), 1e-6) || r == 0.0);
            assert!(close(
                Float::sigmoid(x) as f64,
                1.0 / (1.0 + (-r).exp()),
                1e-6
            ));
            assert!(close(Float::silu(x) as f64, r / (1.0 + (-r).exp()), 1e-6) || r == 0.0);
            let gelu = 0.5
                * r
                * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (r + 0.044715 * r * r * r)).tanh());
            assert!((Float::gelu(x) as f64 - gelu).abs() < 1e-6);
        }
        assert!(close(Float::log(2.0f32) as f64, 2f64.ln(), 1e-6));
        assert!(close(Float::rsqrt(4.0f32) as f64, 0.5, 1e-7));
        assert_eq!(Float::sqrt(9.0f64), 3.0);
    }

    #[test]
    fn round_is_half_away_from_zero_and_floor_goes_down() {
        assert_eq!(Float::round(2.5f32), 3.0);
        assert_eq!(Float::round(-2.5f32), -3.0);
        assert_eq!(Float::round(0.49f64), 0.0);
        assert_eq!(Float::floor(-0.5f32), -1.0);
        assert_eq!(Float::round(f16::from_f32(1.5)).to_f32(), 2.0);
        assert_eq!(Float::floor(bf16::from_f32(-1.25)).to_f32(), -2.0);
    }

    #[test]
    fn half_functions_round_the_f32_result() {
        let x = f16::from_f32(0.7);
        assert_eq!(Float::exp(x), f16::from_f32(x.to_f32().exp()));
        let y = bf16::from_f32(-1.3);
        assert_eq!(Float::tanh(y), bf16::from_f32(y.to_f32().tanh()));
    }
}
