//! 8-bit integer contractions (`i8 x i8` and `u8 x u8`, accumulating
//! wrapping `i32`) on AVX-512 VNNI, and on AVX2 through `i16` pairs
//! ([`pairs`]).
//!
//! `vpdpbusd` multiplies unsigned bytes by signed bytes, four along `k`
//! per `i32` lane. Both sign cases reduce to it by flipping the top bit of
//! one operand (`x ^ 0x80`), which shifts it by 128, and subtracting the
//! shift's contribution once per output:
//! - `i8 x i8`: A becomes `a + 128` (unsigned), so each output carries an
//!   extra `128 * sum_p b[p][j]`;
//! - `u8 x u8`: B becomes `b - 128` (signed), so each output lacks
//!   `128 * sum_p a[i][p]`.
//!
//! Every step is exact modulo 2^32 (products and 4-term sums fit in `i32`;
//! the accumulation wraps like the plain path), so the result equals the
//! plain widened loop bit for bit. `k` is padded to a multiple of four with
//! zeros, whose products vanish.

/// Which 8-bit type both operands have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bytes {
    Signed,
    Unsigned,
}

/// How B is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BLayout {
    /// `[K, N]` (`dot`).
    KN,
    /// `[N, K]` (`dot_t`).
    NK,
}

mod pairs;

/// `c[M,N] += a[M,K] @ B` with wrapping `i32` sums, the operands given as
/// their bytes; false (and `c` untouched) when the CPU has neither AVX-512
/// VNNI nor AVX2.
pub(crate) fn gemm_bytes(
    c: &mut [i32],
    a: &[u8],
    b: &[u8],
    (bytes, layout): (Bytes, BLayout),
    (m, k, n): (usize, usize, usize),
) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vnni")
        {
            if m == 0 || n == 0 || k == 0 {
                return true;
            }
            // SAFETY: the CPU supports the features the function is compiled for.
            unsafe { x86::gemm_vnni(c, a, b, (bytes, layout), (m, k, n)) };
            return true;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            if m == 0 || n == 0 || k == 0 {
                return true;
            }
            // SAFETY: as above.
            unsafe { pairs::gemm_pairs(c, a, b, (bytes, layout), (m, k, n)) };
            return true;
        }
    }
    let _ = (c, a, b, bytes, layout, m, k, n);
    false
}

/// Groups of four `k` steps, padded.
const QUAD: usize = 4;
/// Block rows and panel columns of the micro-kernel (two zmm of `i32`).
const MR: usize = 8;
const NR: usize = 32;

/// Operands rewritten for `vpdpbusd` on this thread's arena: A's rows as
/// unsigned bytes padded to whole quads, B's panels as `[quad][column]`
/// groups of four signed bytes, and the per-row and per-column terms that
/// undo the 128 shift.
struct Prepared {
    a_rows: Vec<u8>,
    b_panels: Vec<[u8; QUAD * NR]>,
    row_fix: Vec<i32>,
    col_fix: Vec<i32>,
    quads: usize,
}

impl Prepared {
    fn new(
        a: &[u8],
        b: &[u8],
        (bytes, layout): (Bytes, BLayout),
        (m, k, n): (usize, usize, usize),
    ) -> Prepared {
        let quads = k.div_ceil(QUAD);
        let panels = n.div_ceil(NR);
        let (a_flip, b_flip) = match bytes {
            Bytes::Signed => (0x80u8, 0u8),
            Bytes::Unsigned => (0u8, 0x80u8),
        };
        // Padding is a logical zero, flipped like the data.
        let mut a_rows = crate::host::arena::filled(m * quads * QUAD, a_flip);
        for (row, src) in a_rows.chunks_exact_mut(quads * QUAD).zip(a.chunks_exact(k)) {
            for (dst, &v) in row.iter_mut().zip(src) {
                *dst = v ^ a_flip;
            }
        }
        let mut b_panels = crate::host::arena::filled(panels * quads, [b_flip; QUAD * NR]);
        let mut col_fix = crate::host::arena::filled(n, 0i32);
        match layout {
            BLayout::KN => {
                for (p, row) in b.chunks_exact(n).take(k).enumerate() {
                    let (quad, lane) = (p / QUAD, p % QUAD);
                    for (jp, cols) in row.chunks(NR).enumerate() {
                        let group = &mut b_panels[jp * quads + quad];
                        for (slot, &v) in group.iter_mut().skip(lane).step_by(QUAD).zip(cols) {
                            *slot = v ^ b_flip;
                        }
                    }
                    for (sum, &v) in col_fix.iter_mut().zip(row) {
                        *sum = sum.wrapping_add(i32::from(v as i8));
                    }
                }
            }
            BLayout::NK => {
                for ((j, col), sum) in b
                    .chunks_exact(k)
                    .take(n)
                    .enumerate()
                    .zip(col_fix.iter_mut())
                {
                    let (jp, jj) = (j / NR, j % NR);
                    let groups = &mut b_panels[jp * quads..][..quads];
                    for (group, four) in groups.iter_mut().zip(col.chunks(QUAD)) {
                        for (slot, &v) in group[jj * QUAD..][..four.len()].iter_mut().zip(four) {
                            *slot = v ^ b_flip;
                        }
                    }
                    *sum = col
                        .iter()
                        .fold(0i32, |s, &v| s.wrapping_add(i32::from(v as i8)));
                }
            }
        }
        let mut row_fix = crate::host::arena::filled(m, 0i32);
        match bytes {
            Bytes::Signed => {
                for fix in col_fix.iter_mut() {
                    *fix = fix.wrapping_mul(-128);
                }
            }
            Bytes::Unsigned => {
                col_fix.fill(0);
                for (fix, src) in row_fix.iter_mut().zip(a.chunks_exact(k)) {
                    let sum = src.iter().fold(0i32, |s, &v| s.wrapping_add(i32::from(v)));
                    *fix = sum.wrapping_mul(128);
                }
            }
        }
        Prepared {
            a_rows,
            b_panels,
            row_fix,
            col_fix,
            quads,
        }
    }

    fn give_back(self) {
        crate::host::arena::give(self.a_rows);
        crate::host::arena::give(self.b_panels);
        crate::host::arena::give(self.row_fix);
        crate::host::arena::give(self.col_fix);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{BLayout, Bytes, MR, NR, Prepared, QUAD};
    use std::arch::x86_64::{
        __m512i, _mm512_dpbusd_epi32, _mm512_loadu_si512, _mm512_set1_epi32, _mm512_storeu_si512,
    };

    /// # Safety
    /// The CPU must support AVX-512F and AVX-512 VNNI.
    #[target_feature(enable = "avx512f,avx512vnni")]
    pub(super) unsafe fn gemm_vnni(
        c: &mut [i32],
        a: &[u8],
        b: &[u8],
        kind: (Bytes, BLayout),
        (m, k, n): (usize, usize, usize),
    ) {
        let prepared = Prepared::new(a, b, kind, (m, k, n));
        let quads = prepared.quads;
        let row_bytes = quads * QUAD;
        for i0 in (0..m).step_by(MR) {
            let rows = MR.min(m - i0);
            // Rows past a ragged edge repeat the last row; dropped below.
            let a_rows: [&[u8]; MR] = std::array::from_fn(|r| {
                &prepared.a_rows[(i0 + r.min(rows - 1)) * row_bytes..][..row_bytes]
            });
            for jp in 0..n.div_ceil(NR) {
                let j0 = jp * NR;
                let cols = NR.min(n - j0);
                let mut block = [[0i32; NR]; MR];
                for (r, block_row) in block.iter_mut().enumerate().take(rows) {
                    let c_row = &c[(i0 + r) * n + j0..][..cols];
                    let fixes = &prepared.col_fix[j0..][..cols];
                    for ((dst, &cv), &col) in block_row.iter_mut().zip(c_row).zip(fixes) {
                        *dst = cv.wrapping_add(col).wrapping_add(prepared.row_fix[i0 + r]);
                    }
                }
                let panel = &prepared.b_panels[jp * quads..][..quads];
                micro(&mut block, &a_rows, panel);
                for (r, block_row) in block.iter().enumerate().take(rows) {
                    c[(i0 + r) * n + j0..][..cols].copy_from_slice(&block_row[..cols]);
                }
            }
        }
        prepared.give_back();
    }

    /// `block[r][j] += sum_q dot4(a_rows[r][quad q], panel[q][column j])`.
    #[target_feature(enable = "avx512f,avx512vnni")]
    fn micro(block: &mut [[i32; NR]; MR], a_rows: &[&[u8]; MR], panel: &[[u8; QUAD * NR]]) {
        let quads = panel.len();
        let a_quads: [&[[u8; QUAD]]; MR] =
            std::array::from_fn(|r| &a_rows[r].as_chunks::<QUAD>().0[..quads]);
        // SAFETY: loads and stores are of 64 bytes at offsets 0 and 64 of
        // `[i32; 32]` rows (128 bytes) and `[u8; 128]` panel groups.
        unsafe {
            let mut acc: [[__m512i; 2]; MR] = std::array::from_fn(|r| {
                let row = block[r].as_ptr();
                [
                    _mm512_loadu_si512(row.cast()),
                    _mm512_loadu_si512(row.add(16).cast()),
                ]
            });
            for (q, group) in panel.iter().enumerate() {
                let b0 = _mm512_loadu_si512(group.as_ptr().cast());
                let b1 = _mm512_loadu_si512(group.as_ptr().add(64).cast());
                for r in 0..MR {
                    let av = _mm512_set1_epi32(i32::from_le_bytes(a_quads[r][q]));
                    acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], av, b0);
                    acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], av, b1);
                }
            }
            for (row, [lo, hi]) in block.iter_mut().zip(acc) {
                _mm512_storeu_si512(row.as_mut_ptr().cast(), lo);
                _mm512_storeu_si512(row.as_mut_ptr().add(16).cast(), hi);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn plain(
        a: &[u8],
        b: &[u8],
        (bytes, layout): (Bytes, BLayout),
        (m, k, n): (usize, usize, usize),
        c: &mut [i32],
    ) {
        let widen = |v: u8| match bytes {
            Bytes::Signed => i32::from(v as i8),
            Bytes::Unsigned => i32::from(v),
        };
        for i in 0..m {
            for j in 0..n {
                for p in 0..k {
                    let bv = match layout {
                        BLayout::KN => b[p * n + j],
                        BLayout::NK => b[j * k + p],
                    };
                    c[i * n + j] =
                        c[i * n + j].wrapping_add(widen(a[i * k + p]).wrapping_mul(widen(bv)));
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Equal to the widened loop bit for bit, ragged shapes, extreme
        /// bytes (-128, 255) and wrapping starting values included.
        #[test]
        fn byte_kernels_equal_the_widened_loop(
            (m, k, n) in (1usize..20, 1usize..70, 1usize..70),
            seed in any::<u64>(),
            signed in any::<bool>(),
            transposed in any::<bool>(),
        ) {
            let mut state = seed | 1;
            let mut next = move || { state ^= state << 13; state ^= state >> 7; state ^= state << 17; state };
            let extreme = |x: u64| match x % 5 { 0 => 0x80, 1 => 0xff, 2 => 0x7f, _ => (x >> 8) as u8 };
            let a: Vec<u8> = (0..m * k).map(|_| extreme(next())).collect();
            let b: Vec<u8> = (0..k * n).map(|_| extreme(next())).collect();
            let start: Vec<i32> = (0..m * n).map(|_| next() as i32).collect();
            let kind = (
                if signed { Bytes::Signed } else { Bytes::Unsigned },
                if transposed { BLayout::NK } else { BLayout::KN },
            );
            let mut want = start.clone();
            plain(&a, &b, kind, (m, k, n), &mut want);
            let mut got = start.clone();
            if gemm_bytes(&mut got, &a, &b, kind, (m, k, n)) {
                prop_assert_eq!(&got, &want);
            }
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                let mut got = start.clone();
                // SAFETY: AVX2 detected just above.
                unsafe { pairs::gemm_pairs(&mut got, &a, &b, kind, (m, k, n)) };
                prop_assert_eq!(&got, &want, "AVX2 pairs");
            }
        }
    }
}
