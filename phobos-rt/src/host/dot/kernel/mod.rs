//! Matrix-multiply kernels behind `dot`.
//!
//! `f32`: the micro-kernel keeps an `MR x NR` block of C in registers,
//! broadcasting one element of each of `MR` rows of A (read in place) and
//! multiplying a row of `NR` columns of B per `k` step; B is read in place
//! when `N` is a multiple of `NR` and otherwise copied once per call into
//! zero-padded panels. With AVX2+FMA, `MR x NR = 6 x 16` uses 12 of the 16
//! ymm registers for accumulators; with AVX-512, `8 x 32` uses 16 of the 32
//! zmm registers and twice the work per instruction. Every element of C is
//! the same fused multiply-add chain over `k`, starting from C's old value,
//! in both, so they agree bit for bit (the panel width only groups columns).

use crate::Num;

/// Block rows and panel width of the AVX2 (and portable) kernel: 12 of the
/// 16 ymm registers hold C.
const MR: usize = 6;
const NR: usize = 16;
/// Block rows and panel width of the AVX-512 kernel: 16 of the 32 zmm
/// registers hold C, and 8 rows divide the power-of-two tile heights
/// kernels use, so no rows are computed only to be dropped.
const MR_512: usize = 8;
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
    gemm_f32_blocked::<MR, NR>(c, a, b, (m, k, n), micro::<false, MR, NR>);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn gemm_f32_avx2_fma(c: &mut [f32], a: &[f32], b: &[f32], m: usize, k: usize, n: usize) {
    gemm_f32_blocked::<MR, NR>(c, a, b, (m, k, n), |c, ldc, a_rows, panel, stride, k| {
        // SAFETY: only reached from `gemm_f32` after AVX2 and FMA detection.
        unsafe { x86::micro_6x16(c, ldc, a_rows, panel, stride, k) }
    });
}

/// AVX-512F includes FMA on 512-bit vectors.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
fn gemm_f32_avx512(c: &mut [f32], a: &[f32], b: &[f32], m: usize, k: usize, n: usize) {
    gemm_f32_blocked::<MR_512, NR_512>(c, a, b, (m, k, n), |c, ldc, a_rows, panel, stride, k| {
        // SAFETY: only reached from `gemm_f32` after AVX-512F detection.
        unsafe { x86::micro_8x32(c, ldc, a_rows, panel, stride, k) }
    });
}

#[cfg(target_arch = "x86_64")]
mod x86;

mod k_loop;
pub use k_loop::dot_acc_k_loop;

#[inline(always)]
fn madd<const FMA: bool>(a: f32, b: f32, acc: f32) -> f32 {
    if FMA { a.mul_add(b, acc) } else { acc + a * b }
}

/// A micro-kernel over an `MR x NR` block of C that starts at `c[0]` with
/// rows `ldc` apart: `c[r * ldc + j] += sum_p a_rows[r][p] * panel[p *
/// stride][j]` for `p` in `0..k`, one multiply-add at a time in `p` order.
/// `c` holds at least `(MR - 1) * ldc + NR` elements, `a_rows` at least `k`
/// each and `panel` at least `(k - 1) * stride + 1` rows.
type Micro<const MR: usize, const NR: usize> =
    fn(&mut [f32], usize, &[&[f32]; MR], &[[f32; NR]], usize, usize);

/// The blocked loop around a micro-kernel: `c += a @ b`.
#[inline(always)]
fn gemm_f32_blocked<const MR: usize, const NR: usize>(
    c: &mut [f32],
    a: &[f32],
    b: &[f32],
    (m, k, n): (usize, usize, usize),
    micro: Micro<MR, NR>,
) {
    // When N is a multiple of the panel width, B's rows already hold whole
    // panels (panel `jp` of row `p` is chunk `p * n / NR + jp`); otherwise
    // copy B into zero-padded panels laid out panel by panel.
    let whole_panels = n.is_multiple_of(NR);
    let panels = n.div_ceil(NR);
    let b_packed = if whole_panels {
        Vec::new()
    } else {
        let mut packed = crate::host::arena::filled(panels * k, [0.0f32; NR]);
        for (p, b_row) in b.chunks_exact(n).take(k).enumerate() {
            for (jp, cols) in b_row.chunks(NR).enumerate() {
                packed[jp * k + p][..cols.len()].copy_from_slice(cols);
            }
        }
        packed
    };
    let (b_chunks, _) = b.as_chunks::<NR>();
    let (b_packed_chunks, b_chunk_stride, b_panel_stride) = if whole_panels {
        (b_chunks, panels, 1)
    } else {
        (&b_packed[..], 1, k)
    };
    for i0 in (0..m).step_by(MR) {
        let rows = MR.min(m - i0);
        // A is read in place, row by row: the micro-kernel broadcasts one
        // element of each of its rows per `k` step. Rows past a ragged edge
        // repeat the last row; their results are dropped.
        let a_rows: [&[f32]; MR] = std::array::from_fn(|r| &a[(i0 + r.min(rows - 1)) * k..][..k]);
        for jp in 0..panels {
            let j0 = jp * NR;
            let cols = NR.min(n - j0);
            let panel = &b_packed_chunks[jp * b_panel_stride..];
            // C's block is the accumulator, updated in place when whole;
            // a ragged one goes through a padded copy.
            if rows == MR && cols == NR {
                micro(&mut c[i0 * n + j0..], n, &a_rows, panel, b_chunk_stride, k);
                continue;
            }
            let mut block = [[0.0f32; NR]; MR];
            for (r, block_row) in block.iter_mut().enumerate().take(rows) {
                block_row[..cols].copy_from_slice(&c[(i0 + r) * n + j0..][..cols]);
            }
            micro(
                block.as_flattened_mut(),
                NR,
                &a_rows,
                panel,
                b_chunk_stride,
                k,
            );
            for (r, block_row) in block.iter().enumerate().take(rows) {
                c[(i0 + r) * n + j0..][..cols].copy_from_slice(&block_row[..cols]);
            }
        }
    }
    crate::host::arena::give(b_packed);
}

/// The portable micro-kernel ([`Micro`]). Not inlined: compiled on its own,
/// LLVM keeps `acc` in registers; inlined into the blocked loop it has been
/// seen to vectorize across rows with gathers instead.
#[inline(never)]
fn micro<const FMA: bool, const MR: usize, const NR: usize>(
    c: &mut [f32],
    ldc: usize,
    a_rows: &[&[f32]; MR],
    panel: &[[f32; NR]],
    stride: usize,
    k: usize,
) {
    if k == 0 {
        return;
    }
    let mut acc: [[f32; NR]; MR] = std::array::from_fn(|r| std::array::from_fn(|j| c[r * ldc + j]));
    // Re-slicing to exactly `k` (and the panel to its last used row) lets
    // LLVM drop the bounds checks and keep `acc` in registers.
    let a_rows: [&[f32]; MR] = std::array::from_fn(|r| &a_rows[r][..k]);
    let panel = &panel[..(k - 1) * stride + 1];
    for p in 0..k {
        let bv = &panel[p * stride];
        let av: [f32; MR] = std::array::from_fn(|r| a_rows[r][p]);
        for r in 0..MR {
            for j in 0..NR {
                acc[r][j] = madd::<FMA>(av[r], bv[j], acc[r][j]);
            }
        }
    }
    for (r, acc_row) in acc.iter().enumerate() {
        c[r * ldc..][..NR].copy_from_slice(acc_row);
    }
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
            gemm_f32_blocked::<MR, NR>(&mut plain, &a, &b, (m, k, n), micro::<false, MR, NR>);
            let mut fused = start.clone();
            gemm_f32_blocked::<MR, NR>(&mut fused, &a, &b, (m, k, n), micro::<true, MR, NR>);
            let mut wide = start.clone();
            gemm_f32_blocked::<MR_512, NR_512>(
                &mut wide,
                &a,
                &b,
                (m, k, n),
                micro::<true, MR_512, NR_512>,
            );
            let mut dispatched = start.clone();
            gemm_f32(&mut dispatched, &a, &b, m, k, n);
            assert_eq!(plain, want, "{m}x{k}x{n}");
            assert_eq!(fused, want, "{m}x{k}x{n}");
            assert_eq!(wide, want, "{m}x{k}x{n}");
            assert_eq!(dispatched, want, "{m}x{k}x{n}");
        }
    }

    /// On inexact data every fused variant computes, for each element of C,
    /// one `mul_add` chain over `k` in order starting from C's old value,
    /// whatever the block shape and the ragged edges.
    #[test]
    fn fused_variants_are_one_ordered_chain_from_c() {
        let mut state = 0x9e37_79b9_u32;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (state % 20_000) as f32 / 1_000.0 - 10.0 + 1.0 / 3.0
        };
        for (m, k, n) in [
            (1, 7, 32),
            (9, 37, 33),
            (8, 64, 64),
            (17, 5, 95),
            (13, 70, 48),
        ] {
            let a: Vec<f32> = (0..m * k).map(|_| next()).collect();
            let b: Vec<f32> = (0..k * n).map(|_| next()).collect();
            let start: Vec<f32> = (0..m * n).map(|_| next()).collect();
            let mut want = start.clone();
            for i in 0..m {
                for j in 0..n {
                    for p in 0..k {
                        want[i * n + j] = a[i * k + p].mul_add(b[p * n + j], want[i * n + j]);
                    }
                }
            }
            let mut fused = start.clone();
            gemm_f32_blocked::<MR, NR>(&mut fused, &a, &b, (m, k, n), micro::<true, MR, NR>);
            assert_eq!(fused, want, "portable {m}x{k}x{n}");
            let mut wide = start.clone();
            gemm_f32_blocked::<MR_512, NR_512>(
                &mut wide,
                &a,
                &b,
                (m, k, n),
                micro::<true, MR_512, NR_512>,
            );
            assert_eq!(wide, want, "portable wide {m}x{k}x{n}");
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    let mut avx2 = start.clone();
                    // SAFETY: features detected just above.
                    unsafe { gemm_f32_avx2_fma(&mut avx2, &a, &b, m, k, n) };
                    assert_eq!(avx2, want, "avx2 {m}x{k}x{n}");
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    let mut avx512 = start.clone();
                    // SAFETY: as above.
                    unsafe { gemm_f32_avx512(&mut avx512, &a, &b, m, k, n) };
                    assert_eq!(avx512, want, "avx512 {m}x{k}x{n}");
                }
            }
        }
    }
}
