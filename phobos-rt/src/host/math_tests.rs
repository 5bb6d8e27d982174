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
const CASES: [Case; 4] = [
    ("exp", exp_f32, f64::exp, 2),
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
/// exhaustive_ulp_bounds -- --ignored` (about a minute per core).
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
    // Subnormal results round once.
    let tiny = exp_f32(-100.0);
    assert!(tiny > 0.0 && tiny < f32::MIN_POSITIVE);
    assert!(ulps(tiny, (-100.0f64).exp() as f32) <= 1);
}
