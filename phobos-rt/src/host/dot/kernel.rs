//! Matrix-multiply kernels behind `dot`.
//!
//! `f32`: A is packed into panels of `MR` rows and B into panels of `NR`
//! columns (zero-padded at ragged edges), both laid out by `k`, so the
//! micro-kernel streams two contiguous arrays and keeps an `MR x NR` block
//! of C in registers. With AVX2+FMA, `MR x NR = 6 x 16` uses 12 of the 16
//! ymm registers for accumulators; with AVX-512, `6 x 32` uses 12 of the 32
//! zmm registers and twice the work per instruction. Every element of C is
//! the same fused multiply-add chain over `k` in both, so they agree bit
//! for bit (the panel width only groups columns).

use crate::Num;

const MR: usize = 6;
/// Panel width of the AVX2 (and portable) kernel.
const NR: usize = 16;
/// Panel width of the AVX-512 kernel.
const NR_512: usize = 32;

/// `c += a @ b` with plain loops over contiguous rows (LLVM vectorizes the
/// inner `j` loop); used for every accumulator but `f32`.
pub(super) fn gemm_generic<T: Num>(c: &mut [T], a: &[T], b: &[T], m: usize, k: usize, n: usize) {
    if n == 0 || k == 0 {
        return;
    }
    for (c_row, a_row) in c.chunks_exact_mut(n).zip(a.chunks_exact(k)).take(m) {
        for (&av, b_row) in a_row.iter().zip(b.chunks_exact(n)) {
            for (cv, &bv) in c_row.iter_mut().zip(b_row) {
                *cv = Num::add(*cv, Num::mul(av, bv));
            }
        }
    }
}

/// `c += a @ b` for `f32`, picking the widest kernel the CPU runs.
pub(super) fn gemm_f32(c: &mut [f32], a: &[f32], b: &[f32], m: usize, k: usize, n: usize) {
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") && n >= NR_512 {
            // SAFETY: the CPU supports the features the function is compiled for.
            unsafe { gemm_f32_avx512(c, a, b, m, k, n) };
            return;
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: as above.
            unsafe { gemm_f32_avx2_fma(c, a, b, m, k, n) };
            return;
        }
    }
    gemm_f32_packed::<false, NR>(c, a, b, m, k, n);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn gemm_f32_avx2_fma(c: &mut [f32], a: &[f32], b: &[f32], m: usize, k: usize, n: usize) {
    gemm_f32_packed::<true, NR>(c, a, b, m, k, n);
}

/// AVX-512F includes FMA on 512-bit vectors.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
fn gemm_f32_avx512(c: &mut [f32], a: &[f32], b: &[f32], m: usize, k: usize, n: usize) {
    gemm_f32_packed::<true, NR_512>(c, a, b, m, k, n);
}

#[inline(always)]
fn madd<const FMA: bool>(a: f32, b: f32, acc: f32) -> f32 {
    if FMA { a.mul_add(b, acc) } else { acc + a * b }
}

#[inline(always)]
fn gemm_f32_packed<const FMA: bool, const NR: usize>(
    c: &mut [f32],
    a: &[f32],
    b: &[f32],
    m: usize,
    k: usize,
    n: usize,
) {
    // When N is a multiple of the panel width, B's rows already hold whole
    // panels; otherwise copy B into zero-padded panels.
    let b_packed = if n.is_multiple_of(NR) {
        Vec::new()
    } else {
        let mut packed = crate::host::arena::filled(n.div_ceil(NR) * k, [0.0f32; NR]);
        for (p, b_row) in b.chunks_exact(n).take(k).enumerate() {
            for (jp, cols) in b_row.chunks(NR).enumerate() {
                packed[jp * k + p][..cols.len()].copy_from_slice(cols);
            }
        }
        packed
    };
    let mut a_packed = crate::host::arena::filled(k, [0.0f32; MR]);
    for i0 in (0..m).step_by(MR) {
        let rows = MR.min(m - i0);
        for (r, a_row) in a[i0 * k..].chunks_exact(k).take(rows).enumerate() {
            for (slot, &av) in a_packed.iter_mut().zip(a_row) {
                slot[r] = av;
            }
        }
        for slot in a_packed.iter_mut() {
            slot[rows..].fill(0.0);
        }
        for jp in 0..n.div_ceil(NR) {
            let block = if b_packed.is_empty() {
                let panel = b.chunks_exact(n).map(|row| row.as_chunks::<NR>().0.get(jp));
                micro::<FMA, NR>(&a_packed, panel.map(|p| p.unwrap_or(&[0.0; NR])))
            } else {
                micro::<FMA, NR>(&a_packed, b_packed[jp * k..(jp + 1) * k].iter())
            };
            let j0 = jp * NR;
            let cols = NR.min(n - j0);
            for (r, block_row) in block.iter().enumerate().take(rows) {
                let c_row = &mut c[(i0 + r) * n + j0..][..cols];
                for (cv, &v) in c_row.iter_mut().zip(block_row) {
                    *cv += v;
                }
            }
        }
    }
    crate::host::arena::give(a_packed);
    crate::host::arena::give(b_packed);
}

#[inline(always)]
fn micro<'b, const FMA: bool, const NR: usize>(
    a_panel: &[[f32; MR]],
    b_panel: impl Iterator<Item = &'b [f32; NR]>,
) -> [[f32; NR]; MR] {
    let mut acc = [[0.0f32; NR]; MR];
    for (av, bv) in a_panel.iter().zip(b_panel) {
        for r in 0..MR {
            for j in 0..NR {
                acc[r][j] = madd::<FMA>(av[r], bv[j], acc[r][j]);
            }
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both f32 kernel variants (with and without fused multiply-add) agree
    /// with the generic loop on exact small-integer data, across ragged sizes.
    #[test]
    fn packed_variants_match_generic() {
        for (m, k, n) in [
            (1, 1, 1),
            (6, 3, 16),
            (7, 5, 17),
            (13, 1, 33),
            (5, 9, 3),
            (9, 4, 32),
            (7, 33, 64),
            (13, 8, 70),
        ] {
            let a: Vec<f32> = (0..m * k).map(|i| (i % 5) as f32 - 2.0).collect();
            let b: Vec<f32> = (0..k * n).map(|i| (i % 7) as f32 - 3.0).collect();
            let start: Vec<f32> = (0..m * n).map(|i| i as f32).collect();
            let mut want = start.clone();
            gemm_generic(&mut want, &a, &b, m, k, n);
            let mut plain = start.clone();
            gemm_f32_packed::<false, NR>(&mut plain, &a, &b, m, k, n);
            let mut fused = start.clone();
            gemm_f32_packed::<true, NR>(&mut fused, &a, &b, m, k, n);
            let mut wide = start.clone();
            gemm_f32_packed::<true, NR_512>(&mut wide, &a, &b, m, k, n);
            let mut dispatched = start.clone();
            gemm_f32(&mut dispatched, &a, &b, m, k, n);
            assert_eq!(plain, want, "{m}x{k}x{n}");
            assert_eq!(fused, want, "{m}x{k}x{n}");
            assert_eq!(wide, want, "{m}x{k}x{n}");
            assert_eq!(dispatched, want, "{m}x{k}x{n}");
        }
    }
}
