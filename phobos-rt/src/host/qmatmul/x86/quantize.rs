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
/// Levels and sums are stored straight into `levels` (32 bytes) and
/// `neg_sums` (8 lanes); returns the f32 scale. Returned as arrays they
/// went through a copy and an out-of-line `array::map` per block, 3-4% of
/// a two-thread Q8_0 prompt matmul (`perf record`, 256x640 at M = 512).
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(in crate::host::qmatmul) fn levels_q8_sums_avx2(
    x: &[f32],
    levels: &mut [u8],
    neg_sums: &mut [i32],
) -> f32 {
    let (ordered, d) = levels_vector(x);
    // Exact: each i16 pair sum is at most 2 * 128 in magnitude.
    let pairs = _mm256_maddubs_epi16(_mm256_set1_epi8(1), ordered);
    let sums = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
    let negated = _mm256_sub_epi32(_mm256_setzero_si256(), sums);
    let (levels, neg_sums) = (&mut levels[..32], &mut neg_sums[..8]);
    // SAFETY: 32 writable bytes each (the slices above); unaligned stores.
    unsafe {
        _mm256_storeu_si256(levels.as_mut_ptr().cast(), ordered);
        _mm256_storeu_si256(neg_sums.as_mut_ptr().cast(), negated);
    }
    d
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

/// Bytes of one Q8_K block: f32 scale, 256 levels, 16 i16 group sums.
const Q8_K_BYTES: usize = crate::host::qmatmul::activations::Q8_K_BYTES;

/// ggml's `quantize_row_q8_K_ref` (phobos-quant's `quantize_q8_k`, the
/// partner of the K-quants) for one 256-value block into `out`, the same
/// bytes: a scalar pass, as before, was ~6% of a two-thread Q4_K prompt
/// matmul (`perf record`, 640x1024 at M = 512). The same f32 operations
/// per lane: `-127 / max` with `max` the first value of largest magnitude
/// (NaNs skipped, as the scalar `>` does), `iscale * v + 1.5 * 2^23` read
/// as bits (ggml's `nearest_int`), `min(127)`, the low byte kept (`as i8`).
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(in crate::host::qmatmul) fn quantize_q8_k_avx2(x: &[f32], out: &mut [u8]) {
    const QK_K: usize = phobos_quant::QK_K;
    let (x, out) = (&x[..QK_K], &mut out[..Q8_K_BYTES]);
    // Plain loops, no closures: a closure here stayed out of line (its own
    // symbol, 0.9% of the Q4_K prompt profile), not inlined into this
    // `target_feature` function.
    let mut v = [_mm256_setzero_ps(); QK_K / 8];
    for (i, v) in v.iter_mut().enumerate() {
        // SAFETY: `x` holds 256 readable f32; the load is unaligned.
        *v = unsafe { _mm256_loadu_ps(x[8 * i..].as_ptr()) };
    }
    let sign = _mm256_set1_ps(-0.0);
    // `max_ps(a, acc)` returns `acc` where `a` is NaN, and `acc` never is.
    let mut acc = [_mm256_setzero_ps(); 4];
    for (i, &v) in v.iter().enumerate() {
        acc[i % 4] = _mm256_max_ps(_mm256_andnot_ps(sign, v), acc[i % 4]);
    }
    let max8 = _mm256_max_ps(_mm256_max_ps(acc[0], acc[1]), _mm256_max_ps(acc[2], acc[3]));
    let max4 = _mm_max_ps(_mm256_extractf128_ps(max8, 1), _mm256_castps256_ps128(max8));
    let max2 = _mm_max_ps(max4, _mm_movehl_ps(max4, max4));
    let amax = _mm_cvtss_f32(_mm_max_ss(max2, _mm_movehdup_ps(max2)));
    if amax == 0.0 {
        out.fill(0);
        return;
    }
    // The first value whose magnitude is `amax` (the scalar loop keeps
    // the first on ties, whatever its sign).
    let wanted = _mm256_set1_ps(amax);
    let mut max = amax;
    for (i, &v) in v.iter().enumerate() {
        let equal = _mm256_cmp_ps::<_CMP_EQ_OQ>(_mm256_andnot_ps(sign, v), wanted);
        let hits = _mm256_movemask_ps(equal);
        if hits != 0 {
            max = x[8 * i + hits.trailing_zeros() as usize];
            break;
        }
    }
    let iscale = -127.0 / max;
    let mul = _mm256_set1_ps(iscale);
    let magic = _mm256_set1_ps(12_582_912.0);
    let (mantissa, half) = (
        _mm256_set1_epi32(0x007f_ffff),
        _mm256_set1_epi32(0x0040_0000),
    );
    let (cap, low_byte) = (_mm256_set1_epi32(127), _mm256_set1_epi32(0xFF));
    let ones = _mm256_set1_epi8(1);
    let ones_i16 = _mm256_set1_epi16(1);
    let mut quads = [_mm256_setzero_si256(); QK_K / 32];
    for (c, quad) in quads.iter_mut().enumerate() {
        let mut ints = [_mm256_setzero_si256(); 4];
        for (k, int) in ints.iter_mut().enumerate() {
            let bits = _mm256_castps_si256(_mm256_add_ps(_mm256_mul_ps(mul, v[4 * c + k]), magic));
            let level = _mm256_sub_epi32(_mm256_and_si256(bits, mantissa), half);
            // The low byte, as `as i8` keeps it (no saturation).
            *int = _mm256_and_si256(_mm256_min_epi32(level, cap), low_byte);
        }
        let words_01 = _mm256_packus_epi32(ints[0], ints[1]);
        let words_23 = _mm256_packus_epi32(ints[2], ints[3]);
        let bytes = _mm256_packus_epi16(words_01, words_23);
        let ordered = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        // SAFETY: levels `32c..32c + 32` lie inside the block's 256.
        unsafe { _mm256_storeu_si256(out[4 + 32 * c..].as_mut_ptr().cast(), ordered) };
        // Sums of each four levels (exact: at most 4 * 128 in magnitude).
        *quad = _mm256_madd_epi16(_mm256_maddubs_epi16(ones, ordered), ones_i16);
    }
    // SAFETY: this function's AVX2.
    let (low, high) = unsafe { (group_sums(&quads[..4]), group_sums(&quads[4..])) };
    let words = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packs_epi32(low, high));
    // SAFETY: the 16 sums (32 bytes) end the block.
    unsafe { _mm256_storeu_si256(out[4 + QK_K..].as_mut_ptr().cast(), words) };
    out[..4].copy_from_slice(&(1.0 / iscale).to_le_bytes());
}

/// The sums of the 16-level groups of four level vectors, in order, from
/// their four-level sums `q`: each 128-bit half of a level vector is one
/// group, so two horizontal adds leave groups [0, 2, 4, 6 | 1, 3, 5, 7],
/// which the permute orders.
///
/// # Safety
/// AVX2 (inlined into [`quantize_q8_k_avx2`]).
#[inline(always)]
unsafe fn group_sums(q: &[__m256i]) -> __m256i {
    // SAFETY: the caller's AVX2.
    unsafe {
        let sums = _mm256_hadd_epi32(_mm256_hadd_epi32(q[0], q[1]), _mm256_hadd_epi32(q[2], q[3]));
        _mm256_permutevar8x32_epi32(sums, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))
    }
}

#[cfg(test)]
mod tests {
    use phobos_quant::{GgmlType, QK_K, quantize};
    use proptest::prelude::*;

    use super::{Q8_K_BYTES, quantize_q8_k_avx2};

    /// phobos-quant's bytes against the AVX2 quantizer's, block by block.
    fn check(x: &[f32]) {
        if !crate::host::qmatmul::x86::has_avx2() {
            return;
        }
        let mut want = Vec::new();
        quantize(GgmlType::Q8_K, x, &mut want).unwrap();
        let mut got = vec![0xA5u8; want.len()];
        for (chunk, block) in x.chunks_exact(QK_K).zip(got.chunks_exact_mut(Q8_K_BYTES)) {
            // SAFETY: the CPU has AVX2 (checked above).
            unsafe { quantize_q8_k_avx2(chunk, block) };
        }
        assert_eq!(got, want, "{x:?}");
    }

    #[test]
    fn q8_k_edge_blocks_equal_phobos_quant() {
        let ramp =
            |scale: f32| -> Vec<f32> { (0..QK_K).map(|i| (i as f32 - 127.5) * scale).collect() };
        let mut blocks = vec![vec![0.0; QK_K], vec![-0.0; QK_K], ramp(1.0), ramp(1e-30)];
        blocks.push(ramp(1e36));
        // Ties for the largest magnitude: the first one decides the sign.
        for (first, second) in [(-3.0, 3.0), (3.0, -3.0)] {
            let mut x = ramp(0.01);
            x[40] = first;
            x[200] = second;
            blocks.push(x);
        }
        // Exact halves after scaling (max -127 makes the multiplier 1).
        blocks.push(
            (0..QK_K)
                .map(|i| {
                    if i == 9 {
                        -127.0
                    } else {
                        i as f32 / 2.0 - 60.25
                    }
                })
                .collect(),
        );
        // NaN is skipped by the max search; infinities make the scale 0.
        for special in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let mut x = ramp(0.5);
            x[77] = special;
            blocks.push(x);
        }
        let mut all_nan = vec![f32::NAN; QK_K];
        all_nan[255] = 0.0;
        blocks.push(all_nan);
        for x in &blocks {
            check(x);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn q8_k_random_blocks_equal_phobos_quant(
            x in proptest::collection::vec(-1.0e3f32..1.0e3, QK_K..=QK_K * 3),
            scale_exp in -20i32..20,
        ) {
            let scale = 2f32.powi(scale_exp);
            let whole = x.len() / QK_K * QK_K;
            let x: Vec<f32> = x[..whole].iter().map(|v| v * scale).collect();
            check(&x);
        }
    }
}
