//! F32 / F16 / BF16 weight rows times f32 activations (eight FMA lanes).

use std::arch::x86_64::*;

use phobos_quant::GgmlType;

use super::hsum8;
use crate::host::qmatmul::float_weights::weight_at;
use crate::host::qmatmul::portable;

/// Eight weights from `row` starting at element `k`, as f32.
#[inline]
#[target_feature(enable = "avx2,f16c")]
fn weights8(ty: GgmlType, row: &[u8], k: usize) -> __m256 {
    match ty {
        GgmlType::F16 | GgmlType::BF16 => {
            let bytes = &row[2 * k..2 * k + 16];
            // SAFETY: `bytes` holds 16 readable bytes; the load is unaligned.
            let halves = unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) };
            if ty == GgmlType::F16 {
                _mm256_cvtph_ps(halves)
            } else {
                _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(halves), 16))
            }
        }
        _ => {
            let bytes = &row[4 * k..4 * k + 32];
            // SAFETY: `bytes` holds 32 readable bytes; the load is unaligned.
            unsafe { _mm256_loadu_ps(bytes.as_ptr().cast()) }
        }
    }
}

/// # Safety
/// The CPU must support AVX2, FMA and F16C; `w_row` holds `x.len()`
/// elements of `ty`.
#[target_feature(enable = "avx2,fma,f16c")]
pub(in crate::host::qmatmul) fn row_dot_float_avx2(ty: GgmlType, w_row: &[u8], x: &[f32]) -> f32 {
    let full = x.len() / 8 * 8;
    let mut acc = _mm256_setzero_ps();
    for k in (0..full).step_by(8) {
        let xs = &x[k..k + 8];
        // SAFETY: `xs` holds 8 readable floats; the load is unaligned.
        let xv = unsafe { _mm256_loadu_ps(xs.as_ptr()) };
        acc = _mm256_fmadd_ps(weights8(ty, w_row, k), xv, acc);
    }
    if full == x.len() {
        return hsum8(acc);
    }
    // The tail continues the same lanes: lane l gets element full + l.
    let mut lanes = [0.0f32; 8];
    // SAFETY: `lanes` is 8 writable floats.
    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc) };
    for (l, lane) in lanes.iter_mut().enumerate().take(x.len() - full) {
        *lane = weight_at(ty, w_row, full + l).mul_add(x[full + l], *lane);
    }
    portable::hsum8(lanes)
}
