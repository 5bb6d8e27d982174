//! ggml's x86 Q8_0/Q8_1 activation quantizer on AVX2: the same levels and
//! scale as `activations::levels_x86` (which states it in plain Rust), a
//! few instructions per eight values instead of a libm rounding call each.

use std::arch::x86_64::*;

/// Levels and f32 scale of one 32-value block (`x` holds at least 32).
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(in crate::host::qmatmul) fn levels_q8_avx2(x: &[f32]) -> ([i8; 32], f32) {
    let (ordered, d) = levels_vector(x);
    let mut levels = [0i8; 32];
    // SAFETY: `levels` is 32 writable bytes; the store is unaligned.
    unsafe { _mm256_storeu_si256(levels.as_mut_ptr().cast(), ordered) };
    (levels, d)
}

/// [`levels_q8_avx2`] plus the block's eight negated lane sums (lane `l`:
/// minus the sum of levels `4l..4l+4`), which Q8_0 activations carry for
/// the offset-binary kernels; in vector registers they cost two multiplies.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(in crate::host::qmatmul) fn levels_q8_sums_avx2(x: &[f32]) -> ([i8; 32], f32, [i32; 8]) {
    let (ordered, d) = levels_vector(x);
    // Exact: each i16 pair sum is at most 2 * 128 in magnitude.
    let pairs = _mm256_maddubs_epi16(_mm256_set1_epi8(1), ordered);
    let sums = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
    let neg_sums = _mm256_sub_epi32(_mm256_setzero_si256(), sums);
    let mut levels = [0i8; 32];
    let mut lane_sums = [0i32; 8];
    // SAFETY: 32 writable bytes each; the stores are unaligned.
    unsafe {
        _mm256_storeu_si256(levels.as_mut_ptr().cast(), ordered);
        _mm256_storeu_si256(lane_sums.as_mut_ptr().cast(), neg_sums);
    }
    (levels, d, lane_sums)
}

/// The levels in order in one vector, and the f32 scale.
#[target_feature(enable = "avx2")]
fn levels_vector(x: &[f32]) -> (__m256i, f32) {
    let x = &x[..32];
    // SAFETY: `x` holds 32 readable f32; the loads are unaligned.
    let v: [__m256; 4] = std::array::from_fn(|i| unsafe { _mm256_loadu_ps(x[8 * i..].as_ptr()) });
    let sign = _mm256_set1_ps(-0.0);
    let abs = v.map(|v| _mm256_andnot_ps(sign, v));
    let max8 = _mm256_max_ps(_mm256_max_ps(abs[0], abs[1]), _mm256_max_ps(abs[2], abs[3]));
    let max4 = _mm_max_ps(_mm256_extractf128_ps(max8, 1), _mm256_castps256_ps128(max8));
    let max2 = _mm_max_ps(max4, _mm_movehl_ps(max4, max4));
    let amax = _mm_cvtss_f32(_mm_max_ss(max2, _mm_movehdup_ps(max2)));
    let d = amax / 127.0;
    let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
    let mul = _mm256_set1_ps(id);
    let ints = v.map(|v| {
        let scaled = _mm256_mul_ps(v, mul);
        let rounded = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(scaled);
        _mm256_cvtps_epi32(rounded)
    });
    // Saturating packs interleave 4-value groups across the 128-bit lanes;
    // the permute puts them back in order.
    let words_01 = _mm256_packs_epi32(ints[0], ints[1]);
    let words_23 = _mm256_packs_epi32(ints[2], ints[3]);
    let bytes = _mm256_packs_epi16(words_01, words_23);
    let ordered = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    (ordered, d)
}
