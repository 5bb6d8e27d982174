//! x86 micro-kernels for the f32 contraction (see the parent's `Micro`),
//! written with intrinsics so the accumulator block provably stays in
//! registers whatever the surrounding loop looks like.

use std::arch::x86_64::{
    __m256, __m512, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_set1_ps, _mm256_storeu_ps,
    _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_set1_ps, _mm512_storeu_ps,
};

/// Checks the [`super::Micro`] contract (`k > 0`) and returns `a_rows` cut
/// to `k`. The blocked loop always meets it; a breach is a bug there.
#[inline(always)]
fn checked_rows<'a, const MR: usize, const NR: usize>(
    c: &[f32],
    ldc: usize,
    a_rows: &[&'a [f32]; MR],
    panel: &[[f32; NR]],
    (stride, k): (usize, usize),
) -> [&'a [f32]; MR] {
    assert!(
        c.len() >= (MR - 1) * ldc + NR && ldc >= NR && panel.len() > (k - 1) * stride,
        "micro-kernel operands smaller than the block"
    );
    std::array::from_fn(|r| &a_rows[r][..k])
}

/// 8 rows x 32 columns: 16 zmm accumulators, two B vectors and one
/// broadcast per row and `k` step.
///
/// # Safety
/// The CPU must support AVX-512F.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn micro_8x32(
    c: &mut [f32],
    ldc: usize,
    a_rows: &[&[f32]; 8],
    panel: &[[f32; 32]],
    stride: usize,
    k: usize,
) {
    if k == 0 {
        return;
    }
    let a_rows = checked_rows(c, ldc, a_rows, panel, (stride, k));
    // SAFETY: C is read and written as 16 floats at offsets `r * ldc` and
    // `r * ldc + 16` for `r < 8`, B as 16 floats at offsets 0 and 16 of a
    // `[f32; 32]` panel row; `p < k` indexes rows of `a_rows` cut to exactly
    // `k` and `p * stride` stays within `panel`: all checked by
    // `checked_rows`.
    unsafe {
        let c_ptr = c.as_mut_ptr();
        let mut acc: [[__m512; 2]; 8] = std::array::from_fn(|r| {
            let row = c_ptr.add(r * ldc);
            [_mm512_loadu_ps(row), _mm512_loadu_ps(row.add(16))]
        });
        for p in 0..k {
            let b_row = panel.as_ptr().add(p * stride).cast::<f32>();
            let b0 = _mm512_loadu_ps(b_row);
            let b1 = _mm512_loadu_ps(b_row.add(16));
            for r in 0..8 {
                let av = _mm512_set1_ps(*a_rows[r].get_unchecked(p));
                acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
                acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
            }
        }
        for (r, [lo, hi]) in acc.into_iter().enumerate() {
            let row = c_ptr.add(r * ldc);
            _mm512_storeu_ps(row, lo);
            _mm512_storeu_ps(row.add(16), hi);
        }
    }
}

/// 6 rows x 16 columns: 12 ymm accumulators, two B vectors and one
/// broadcast per row and `k` step.
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn micro_6x16(
    c: &mut [f32],
    ldc: usize,
    a_rows: &[&[f32]; 6],
    panel: &[[f32; 16]],
    stride: usize,
    k: usize,
) {
    if k == 0 {
        return;
    }
    let a_rows = checked_rows(c, ldc, a_rows, panel, (stride, k));
    // SAFETY: as in `micro_8x32`, with 8-float vectors at offsets 0 and 8
    // of each C row and `[f32; 16]` panel row.
    unsafe {
        let c_ptr = c.as_mut_ptr();
        let mut acc: [[__m256; 2]; 6] = std::array::from_fn(|r| {
            let row = c_ptr.add(r * ldc);
            [_mm256_loadu_ps(row), _mm256_loadu_ps(row.add(8))]
        });
        for p in 0..k {
            let b_row = panel.as_ptr().add(p * stride).cast::<f32>();
            let b0 = _mm256_loadu_ps(b_row);
            let b1 = _mm256_loadu_ps(b_row.add(8));
            for r in 0..6 {
                let av = _mm256_set1_ps(*a_rows[r].get_unchecked(p));
                acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
                acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
            }
        }
        for (r, [lo, hi]) in acc.into_iter().enumerate() {
            let row = c_ptr.add(r * ldc);
            _mm256_storeu_ps(row, lo);
            _mm256_storeu_ps(row.add(8), hi);
        }
    }
}
