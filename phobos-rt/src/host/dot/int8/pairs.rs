//! The 8-bit contraction on AVX2 without VNNI: both operands widened to
//! `i16` and multiplied in `k`-pairs by `vpmaddwd` (two exact products
//! summed into each `i32` lane; 8-bit values cannot overflow it), then
//! added with wrapping `vpaddd`, so the result equals the widened loop bit
//! for bit. `k` is padded to even with zeros.

use super::{BLayout, Bytes};

/// Block rows and panel columns: 12 ymm accumulators.
const MR: usize = 6;
const NR: usize = 16;
/// `i16` values per panel group: one `k`-pair of each of the panel's columns.
const GROUP: usize = 2 * NR;

/// `c += a @ B`; the caller has checked AVX2.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn gemm_pairs(
    c: &mut [i32],
    a: &[u8],
    b: &[u8],
    (bytes, layout): (Bytes, BLayout),
    (m, k, n): (usize, usize, usize),
) {
    let widen = |v: u8| match bytes {
        Bytes::Signed => i16::from(v as i8),
        Bytes::Unsigned => i16::from(v),
    };
    let pairs = k.div_ceil(2);
    let panels = n.div_ceil(NR);
    let mut a_rows = crate::host::arena::filled(m * pairs * 2, 0i16);
    for (row, src) in a_rows.chunks_exact_mut(pairs * 2).zip(a.chunks_exact(k)) {
        for (dst, &v) in row.iter_mut().zip(src) {
            *dst = widen(v);
        }
    }
    let mut b_panels = crate::host::arena::filled(panels * pairs, [0i16; GROUP]);
    match layout {
        BLayout::KN => {
            for (p, row) in b.chunks_exact(n).take(k).enumerate() {
                for (jp, cols) in row.chunks(NR).enumerate() {
                    let group = &mut b_panels[jp * pairs + p / 2];
                    for (slot, &v) in group.iter_mut().skip(p % 2).step_by(2).zip(cols) {
                        *slot = widen(v);
                    }
                }
            }
        }
        BLayout::NK => {
            for (j, col) in b.chunks_exact(k).take(n).enumerate() {
                let groups = &mut b_panels[(j / NR) * pairs..][..pairs];
                for (group, two) in groups.iter_mut().zip(col.chunks(2)) {
                    for (slot, &v) in group[(j % NR) * 2..][..two.len()].iter_mut().zip(two) {
                        *slot = widen(v);
                    }
                }
            }
        }
    }
    let row_len = pairs * 2;
    for i0 in (0..m).step_by(MR) {
        let rows = MR.min(m - i0);
        // Rows past a ragged edge repeat the last row; dropped below.
        let a_block: [&[i16]; MR] =
            std::array::from_fn(|r| &a_rows[(i0 + r.min(rows - 1)) * row_len..][..row_len]);
        for jp in 0..panels {
            let j0 = jp * NR;
            let cols = NR.min(n - j0);
            let mut block = [[0i32; NR]; MR];
            for (r, block_row) in block.iter_mut().enumerate().take(rows) {
                block_row[..cols].copy_from_slice(&c[(i0 + r) * n + j0..][..cols]);
            }
            micro(&mut block, &a_block, &b_panels[jp * pairs..][..pairs]);
            for (r, block_row) in block.iter().enumerate().take(rows) {
                c[(i0 + r) * n + j0..][..cols].copy_from_slice(&block_row[..cols]);
            }
        }
    }
    crate::host::arena::give(a_rows);
    crate::host::arena::give(b_panels);
}

/// `block[r][j] += sum_q a_block[r][2q..2q+2] . panel[q][2j..2j+2]`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn micro(block: &mut [[i32; NR]; MR], a_block: &[&[i16]; MR], panel: &[[i16; GROUP]]) {
    use std::arch::x86_64::{
        __m256i, _mm256_add_epi32, _mm256_loadu_si256, _mm256_madd_epi16, _mm256_set1_epi32,
        _mm256_storeu_si256,
    };
    let pairs = panel.len();
    let a_pairs: [&[[i16; 2]]; MR] =
        std::array::from_fn(|r| &a_block[r].as_chunks::<2>().0[..pairs]);
    // SAFETY: loads and stores are of 32 bytes at offsets 0 and 32 of
    // `[i32; 16]` rows and `[i16; 32]` panel groups (64 bytes each).
    unsafe {
        let mut acc: [[__m256i; 2]; MR] = std::array::from_fn(|r| {
            let row = block[r].as_ptr();
            [
                _mm256_loadu_si256(row.cast()),
                _mm256_loadu_si256(row.add(8).cast()),
            ]
        });
        for (q, group) in panel.iter().enumerate() {
            let b0 = _mm256_loadu_si256(group.as_ptr().cast());
            let b1 = _mm256_loadu_si256(group.as_ptr().add(16).cast());
            for r in 0..MR {
                let [lo, hi] = a_pairs[r][q];
                let av = _mm256_set1_epi32(i32::from(lo as u16) | (i32::from(hi) << 16));
                acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(av, b0));
                acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(av, b1));
            }
        }
        for (row, [lo, hi]) in block.iter_mut().zip(acc) {
            _mm256_storeu_si256(row.as_mut_ptr().cast(), lo);
            _mm256_storeu_si256(row.as_mut_ptr().add(8).cast(), hi);
        }
    }
}
