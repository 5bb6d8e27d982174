//! Quantize -> dequantize round trips of every quantizable type, held to
//! per-type error bounds.
//!
//! Bounds. For a uniform quantizer with step Δ, the rounding error is
//! uniform in ±Δ/2, so its RMS is Δ/√12. On N(0,1) data a block whose step
//! comes from the block's largest magnitude (E[max|x|] ≈ 2.0 over 32
//! samples, ≈ 1.8 over 16) or from its range (≈ 4.1 over 32, ≈ 3.5 over 16)
//! has an expected relative RMS error of (spread / levels)/√12; the bound
//! allows 30% on top for the rounded (f16 / 4- or 6-bit) scales, whose
//! rounding up widens steps. Non-uniform formats (i-quants, MXFP4) have no
//! closed form; for the 1- to 3-bit ones the bound is 1.6 × 2^-bpw (bits per weight,
//! including scales): the rate-distortion limit for a Gaussian is 2^-R, and
//! practical scalar quantizers sit about 1.5 dB (×1.2) above it before
//! scale overheads. The 4-bit non-linear ones (IQ4_NL, IQ4_XS, MXFP4) are
//! held to the uniform 4-bit bound (MXFP4 ×1.5, see `bound`). The 8-bit
//! types and MXFP4 are also checked per element.

use phobos_models::quant::{ALL_TYPES, GgmlType, can_quantize, dequantize, quantize, type_info};
use proptest::prelude::*;

/// Deterministic N(0,1) samples (xorshift + Box-Muller), scaled per block
/// by a factor spanning a few decades.
fn gaussian(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut uniform = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| {
            let (u1, u2) = (uniform(), uniform());
            ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
        })
        .collect()
}

fn relative_rms(x: &[f32], y: &[f32]) -> f64 {
    let err: f64 = x
        .iter()
        .zip(y)
        .map(|(&a, &b)| f64::from(a - b).powi(2))
        .sum();
    let sig: f64 = x.iter().map(|&a| f64::from(a).powi(2)).sum();
    (err / sig).sqrt()
}

fn uniform_bound(spread: f64, levels: f64) -> f64 {
    1.3 * spread / levels / 12f64.sqrt()
}

fn bits_bound(ty: GgmlType) -> f64 {
    let info = type_info(ty);
    let bpw = 8.0 * info.block_bytes as f64 / info.block_len as f64;
    1.6 * (-bpw).exp2()
}

/// Relative RMS bound on N(0,1) data; None for types whose data model is
/// not Gaussian (ternary) or that are exact (F32).
fn bound(ty: GgmlType) -> Option<f64> {
    use GgmlType::*;
    Some(match ty {
        // Mantissa rounding: relative error ≤ 2^-(m+1), RMS ≈ 2^-(m+1)/√3.
        F16 => 2f64.powi(-11) / 3f64.sqrt() * 1.3,
        BF16 => 2f64.powi(-8) / 3f64.sqrt() * 1.3,
        Q4_0 => uniform_bound(2.0, 8.0),
        Q5_0 => uniform_bound(2.0, 16.0),
        Q8_0 | Q8_1 => uniform_bound(2.0, 127.0),
        Q4_1 => uniform_bound(4.1, 15.0),
        Q5_1 => uniform_bound(4.1, 31.0),
        Q8_K => uniform_bound(2.9, 127.0),
        Q2_K => uniform_bound(3.5, 3.0),
        Q3_K => uniform_bound(1.8, 4.0),
        Q4_K => uniform_bound(4.1, 15.0),
        Q5_K => uniform_bound(4.1, 31.0),
        Q6_K => uniform_bound(1.8, 32.0),
        // The 4-bit non-linear grids exist to beat uniform 4-bit levels.
        IQ4_NL | IQ4_XS => uniform_bound(2.0, 8.0),
        // A power-of-two block scale leaves the block max anywhere in the
        // top octave, costing up to half the levels' reach: 1.5x Q4_0's.
        MXFP4 => 1.5 * uniform_bound(2.0, 8.0),
        // Signs times the optimal magnitude E|x|: for a Gaussian the error is
        // exactly sqrt(1 - 2/π); 10% covers sampling over 1024 values (~2%
        // standard error).
        Q1_0 => 1.1 * (1.0 - 2.0 / std::f64::consts::PI).sqrt(),
        IQ1_S | IQ1_M | IQ2_XXS | IQ2_XS | IQ2_S | IQ3_XXS | IQ3_S => bits_bound(ty),
        _ => return None,
    })
}

#[test]
fn every_type_round_trips_within_its_bound() {
    let mut rows = Vec::new();
    for info in ALL_TYPES.iter().filter(|t| can_quantize(t.ty)) {
        let Some(limit) = bound(info.ty) else {
            continue;
        };
        let n = info.block_len.max(32) * 8;
        let x = gaussian(n, 7 + info.ty.id() as u64);
        let mut bytes = Vec::new();
        quantize(info.ty, &x, &mut bytes).unwrap();
        assert_eq!(
            bytes.len(),
            n / info.block_len * info.block_bytes,
            "{}",
            info.name
        );
        let mut y = vec![0f32; n];
        dequantize(info.ty, &bytes, &mut y).unwrap();
        let err = relative_rms(&x, &y);
        let verdict = if err <= limit { "ok" } else { "ABOVE BOUND" };
        rows.push(format!(
            "{:8} rel rms {err:.5} (bound {limit:.5}) {verdict}",
            info.name
        ));
    }
    println!("{}", rows.join("\n"));
    let failures: Vec<&String> = rows.iter().filter(|r| r.ends_with("ABOVE BOUND")).collect();
    assert!(failures.is_empty(), "{failures:#?}");
    let quantizable = ALL_TYPES.iter().filter(|t| can_quantize(t.ty)).count();
    assert!(quantizable >= 27, "only {quantizable} types quantize");
}

#[test]
fn ternary_types_are_exact_on_ternary_data() {
    for ty in [GgmlType::TQ1_0, GgmlType::TQ2_0] {
        let scale = 0.375f32; // exact in f16
        let x: Vec<f32> = gaussian(512, 3)
            .iter()
            .map(|v| {
                if *v > 0.5 {
                    scale
                } else if *v < -0.5 {
                    -scale
                } else {
                    0.0
                }
            })
            .collect();
        let mut bytes = Vec::new();
        quantize(ty, &x, &mut bytes).unwrap();
        let mut y = vec![0f32; x.len()];
        dequantize(ty, &bytes, &mut y).unwrap();
        assert_eq!(x, y, "{ty}");
    }
}

#[test]
fn unsupported_and_ragged_inputs_are_errors() {
    let err = quantize(GgmlType::NVFP4, &[0.0; 64], &mut Vec::new()).unwrap_err();
    assert!(err.to_string().contains("NVFP4"), "{err}");
    let err = quantize(GgmlType::Q4_K, &[0.0; 300], &mut Vec::new()).unwrap_err();
    assert!(
        err.to_string().contains("Q4_K") && err.to_string().contains("256"),
        "{err}"
    );
    let err = dequantize(GgmlType::Q8_0, &[0; 35], &mut [0.0; 32]).unwrap_err();
    assert!(err.to_string().contains("34"), "{err}");
    let err = dequantize(GgmlType::Q8_0, &[0; 34], &mut [0.0; 31]).unwrap_err();
    assert!(err.to_string().contains("32"), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Q8_0 and Q8_1: each element within half a step of the input, the step
    /// being amax/127 (and the f16 rounding of the stored step, times at
    /// most 127 levels).
    #[test]
    fn q8_elementwise_bound(
        blocks in 1usize..5,
        seed in any::<u64>(),
        scale_exp in -20i32..20,
    ) {
        let scale = (scale_exp as f32).exp2();
        let x: Vec<f32> = gaussian(32 * blocks, seed).iter().map(|v| v * scale).collect();
        for ty in [GgmlType::Q8_0, GgmlType::Q8_1] {
            let mut bytes = Vec::new();
            quantize(ty, &x, &mut bytes).unwrap();
            let mut y = vec![0f32; x.len()];
            dequantize(ty, &bytes, &mut y).unwrap();
            for (xb, yb) in x.chunks(32).zip(y.chunks(32)) {
                let d = xb.iter().fold(0f32, |m, v| m.max(v.abs())) / 127.0;
                let d16 = half::f16::from_f32(d).to_f32();
                let limit = d / 2.0 + 127.0 * (d - d16).abs() + d * 1e-5;
                for (a, b) in xb.iter().zip(yb) {
                    prop_assert!((a - b).abs() <= limit, "{ty}: {a} -> {b}, limit {limit}");
                }
            }
        }
    }

    /// MXFP4 levels are u·{0, ½, 1, 1½, 2, 3, 4, 6} with u = 2^(⌊log2 amax⌋-2):
    /// gaps between levels are at most half the lower level above u, so an
    /// in-range element is off by at most |x|/4 (or u/4 below u); an element
    /// above 6u (at most 8u) clamps to 6u, off by at most |x|/4 as well.
    #[test]
    fn mxfp4_elementwise_bound(seed in any::<u64>(), scale_exp in -20i32..20) {
        let scale = (scale_exp as f32).exp2();
        let x: Vec<f32> = gaussian(64, seed).iter().map(|v| v * scale).collect();
        let mut bytes = Vec::new();
        quantize(GgmlType::MXFP4, &x, &mut bytes).unwrap();
        let mut y = vec![0f32; x.len()];
        dequantize(GgmlType::MXFP4, &bytes, &mut y).unwrap();
        for (xb, yb) in x.chunks(32).zip(y.chunks(32)) {
            let amax = xb.iter().fold(0f32, |m, v| m.max(v.abs()));
            let u = (amax.log2().floor() - 2.0).exp2();
            for (a, b) in xb.iter().zip(yb) {
                let limit = (a.abs() / 4.0).max(u / 4.0) * (1.0 + 1e-6);
                prop_assert!((a - b).abs() <= limit, "{a} -> {b}, u {u}");
            }
        }
    }

    /// Block-count edges: any whole number of blocks round-trips in length,
    /// and a zero block dequantizes to zeros.
    #[test]
    fn zero_blocks_stay_zero(n_blocks in 0usize..4, which in 0usize..ALL_TYPES.len()) {
        let info = &ALL_TYPES[which];
        prop_assume!(can_quantize(info.ty));
        let x = vec![0f32; n_blocks * info.block_len];
        let mut bytes = Vec::new();
        quantize(info.ty, &x, &mut bytes).unwrap();
        prop_assert_eq!(bytes.len(), n_blocks * info.block_bytes);
        let mut y = vec![1f32; x.len()];
        dequantize(info.ty, &bytes, &mut y).unwrap();
        prop_assert!(y.iter().all(|v| *v == 0.0), "{}: {:?}", info.name, &y[..y.len().min(8)]);
    }
}
