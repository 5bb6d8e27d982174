//! The polynomial functions against libm in `f64`, in ulps of the
//! correctly rounded `f32` result.

use super::*;

/// Distance in representable `f32` values (both finite or equal).
fn ulps(got: f32, want: f32) -> u64 {
    if got == want || (got.is_nan() && want.is_nan()) {
        return 0;
    }
    if got.is_nan() || want.is_nan() {
        return u64::MAX;
    }
    // Map the bits to a monotonic integer line.
    let key = |v: f32| {
        let bits = v.to_bits() as i64;
        if bits < 0 {
            i64::from(i32::MIN) - bits
        } else {
            bits
        }
    };
    key(got).abs_diff(key(want))
}

fn sigmoid64(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn gelu64(x: f64) -> f64 {
    0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
}

type Case = (&'static str, fn(f32) -> f32, fn(f64) -> f64, u64);

/// (name, polynomial, f64 reference, ulp bound); gelu is checked apart.
const CASES: [Case; 5] = [
    ("exp", exp_f32, f64::exp, 2),
    ("log", log_f32, f64::ln, 1),
    ("tanh", tanh_f32, f64::tanh, 3),
    ("sigmoid", sigmoid_f32, sigmoid64, 2),
    ("silu", silu_f32, |x| x * sigmoid64(x), 3),
];

/// The worst error of every case over the bit patterns `start, start +
/// step, ...`; gelu's in ulps, or in units of 2^-23 below magnitude 1.
fn sweep(step: usize) -> Vec<(&'static str, u64, f32)> {
    let mut worst: Vec<(&'static str, u64, f32)> = CASES.iter().map(|c| (c.0, 0, 0.0)).collect();
    worst.push(("gelu", 0, 0.0));
    for bits in (0..=u32::MAX).step_by(step) {
        let x = f32::from_bits(bits);
        for (case, slot) in CASES.iter().zip(worst.iter_mut()) {
            let want = (case.2)(f64::from(x)) as f32;
            let e = ulps((case.1)(x), want);
            if e > slot.1 {
                *slot = (case.0, e, x);
            }
        }
        let want = gelu64(f64::from(x));
        let got = gelu_f32(x);
        let e = if want.abs() < 1.0 && got.is_finite() {
            ((f64::from(got) - want).abs() * f64::from(1u32 << 23)).ceil() as u64
        } else {
            ulps(got, want as f32)
        };
        let slot = worst.last_mut().unwrap_or_else(|| unreachable!());
        if e > slot.1 {
            *slot = ("gelu", e, x);
        }
    }
    worst
}

fn check(worst: &[(&'static str, u64, f32)]) {
    for &(name, error, at) in worst {
        let bound = CASES.iter().find(|c| c.0 == name).map_or(4, |c| c.3);
        assert!(
            error <= bound,
            "{name}: {error} ulp at {at:e} (bits {:#x})",
            at.to_bits()
        );
    }
}

#[test]
fn dense_sweep_is_within_the_stated_bounds() {
    // 2^21 patterns spread over the whole range, every sign and exponent.
    check(&sweep(2047));
}

/// Every f32 bit pattern: `cargo test --release -p phobos-rt --lib
/// exhaustive_ulp_bounds -- --ignored`. One thread, five f64 libm
/// references per input: over 20 minutes on a Zen 1 vCPU.
#[test]
#[ignore = "2^32 inputs: run in release"]
fn exhaustive_ulp_bounds() {
    let worst = sweep(1);
    for (name, error, at) in &worst {
        println!("{name}: worst {error} ulp at {at:e}");
    }
    check(&worst);
}

#[test]
fn special_values() {
    assert_eq!(exp_f32(0.0), 1.0);
    assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
    assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
    assert_eq!(exp_f32(89.0), f32::INFINITY);
    assert_eq!(exp_f32(-200.0), 0.0);
    assert!(exp_f32(f32::NAN).is_nan());
    assert_eq!(tanh_f32(f32::INFINITY), 1.0);
    assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
    assert_eq!(tanh_f32(-0.0).to_bits(), (-0.0f32).to_bits());
    assert!(tanh_f32(f32::NAN).is_nan());
    assert_eq!(sigmoid_f32(f32::NEG_INFINITY), 0.0);
    assert_eq!(sigmoid_f32(f32::INFINITY), 1.0);
    assert!(gelu_f32(f32::NAN).is_nan());
    assert_eq!(log_f32(1.0).to_bits(), 0.0f32.to_bits());
    assert_eq!(log_f32(0.0), f32::NEG_INFINITY);
    assert_eq!(log_f32(-0.0), f32::NEG_INFINITY);
    assert_eq!(log_f32(f32::INFINITY), f32::INFINITY);
    assert!(log_f32(-1.0).is_nan() && log_f32(f32::NEG_INFINITY).is_nan());
    assert!(log_f32(f32::NAN).is_nan());
    // Subnormal inputs are scaled into the normal range first.
    let least = f32::from_bits(1);
    assert!(ulps(log_f32(least), f64::from(least).ln() as f32) <= 1);
    assert_eq!(log_f32(2.0f32.powi(-140)), -140.0 * std::f32::consts::LN_2);
    // Subnormal results round once.
    let tiny = exp_f32(-100.0);
    assert!(tiny > 0.0 && tiny < f32::MIN_POSITIVE);
    assert!(ulps(tiny, (-100.0f64).exp() as f32) <= 1);
}

/// `exp_f32` carries the exponent bias in its rounder and scales `p - 1`
/// by `2^half` in one FMA; that must give the bits of the plain form: `n`
/// rounded with the unbiased rounder, the bias added to each half, and
/// `p = 1 + (p - 1)` rounded first and scaled exactly after (which holds
/// while `p * 2^half` is normal). The reference is the previous body
/// written out on purpose, not shared with `exp_f32`. Over 2^21 patterns
/// spread across every sign and exponent (all 2^32 were checked once when
/// the form changed).
#[test]
fn biased_rounder_and_fused_scaling_equal_the_plain_form() {
    fn two_step(x: f32) -> f32 {
        let clamped = x.clamp(-110.0, 100.0);
        let shifted = clamped.mul_add(LOG2_E, ROUNDER);
        let n = shifted - ROUNDER;
        let r = (-n).mul_add(LN2_LO, (-n).mul_add(LN2_HI, clamped));
        let [c0, c1, c2, c3, c4] = EXP_Q;
        let r2 = r * r;
        let q = r2.mul_add(r2.mul_add(c4, r.mul_add(c3, c2)), r.mul_add(c1, c0));
        let p = 1.0 + r2.mul_add(q, r);
        let bits = shifted.to_bits() as i32;
        let half = bits >> 1;
        let rest = bits.wrapping_sub(half);
        let half_factor = f32::from_bits((half << 23).wrapping_add(127 << 23) as u32);
        let rest_factor = f32::from_bits((rest << 23).wrapping_add(127 << 23) as u32);
        (p * half_factor) * rest_factor
    }
    for bits in (0..=u32::MAX).step_by(2047) {
        let x = f32::from_bits(bits);
        let (got, want) = (exp_f32(x), two_step(x));
        assert!(
            got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
            "exp({x:e}) = {got:e}, two-step form {want:e}"
        );
    }
}
