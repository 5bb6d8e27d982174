//! The 32-element formats: Q4_0 Q5_0 Q8_0 IQ4_NL (partner Q8_0) and Q4_1
//! Q5_1 (partner Q8_1).

use std::arch::x86_64::*;

use phobos_quant::GgmlType;

use super::{bits_to_bytes, dot_signed, dot_unsigned, hsum8, iq4_lookup, load32, nibbles};
use crate::host::qmatmul::portable::f16_at;

/// The levels of one weight block as AVX2 bytes (signed, or unsigned for
/// Q4_1/Q5_1) and its scale.
#[target_feature(enable = "avx2,f16c")]
fn unpack(ty: GgmlType, w: &[u8]) -> __m256i {
    match ty {
        GgmlType::Q4_0 => _mm256_sub_epi8(nibbles(&w[2..18]), _mm256_set1_epi8(8)),
        GgmlType::Q4_1 => nibbles(&w[4..20]),
        GgmlType::Q5_0 => {
            let high = bits_to_bytes(u32::from_le_bytes([w[2], w[3], w[4], w[5]]));
            // A clear fifth bit means level - 16: set the high nibble.
            let offset = _mm256_andnot_si256(high, _mm256_set1_epi8(0xF0u8 as i8));
            _mm256_or_si256(nibbles(&w[6..22]), offset)
        }
        GgmlType::Q5_1 => {
            let high = bits_to_bytes(u32::from_le_bytes([w[4], w[5], w[6], w[7]]));
            let fifth = _mm256_and_si256(high, _mm256_set1_epi8(0x10));
            _mm256_or_si256(nibbles(&w[8..24]), fifth)
        }
        GgmlType::IQ4_NL => iq4_lookup(nibbles(&w[2..18])),
        _ => load32(&w[2..34]),
    }
}

/// One weight row of a 32-element format times `R` activation rows, the
/// order of `portable::row_dot` with `single_row == false` (IQ4_NL's
/// single-row order stays on the portable path).
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C. `ty` is a 32-element format
/// and each activation row holds as many partner blocks as `w_row` blocks.
#[target_feature(enable = "avx2,fma,f16c")]
pub(in crate::host::qmatmul) fn q32_rows_avx2<const R: usize>(
    ty: GgmlType,
    w_row: &[u8],
    a_rows: [&[u8]; R],
) -> [f32; R] {
    let w_bytes = ty.info().block_bytes;
    let with_min = matches!(ty, GgmlType::Q4_1 | GgmlType::Q5_1);
    let (a_bytes, a_levels) = if with_min { (36, 4) } else { (34, 2) };
    let mut acc = [_mm256_setzero_ps(); R];
    let mut summs = [0.0f32; R];
    for (b, w) in w_row.chunks_exact(w_bytes).enumerate() {
        let levels = unpack(ty, w);
        let wd = f16_at(w, 0);
        for r in 0..R {
            let a = &a_rows[r][b * a_bytes..(b + 1) * a_bytes];
            let aq = load32(&a[a_levels..]);
            let lanes = if with_min {
                dot_unsigned(levels, aq)
            } else {
                dot_signed(levels, aq)
            };
            let d = _mm256_set1_ps(wd * f16_at(a, 0));
            acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lanes), acc[r]);
            if with_min {
                summs[r] = f16_at(w, 2).mul_add(f16_at(a, 2), summs[r]);
            }
        }
    }
    std::array::from_fn(|r| {
        let sum = hsum8(acc[r]);
        if with_min { sum + summs[r] } else { sum }
    })
}
