//! Kernel selection and the tile loop: weight rows `n_range` times
//! activation rows `m_range`, four activation rows per weight-row pass.

use std::ops::Range;
use std::sync::OnceLock;

use phobos_quant::{GgmlType, QK_K};

use super::{QActivations, float_weights, portable};

/// Which micro-kernels run. All levels give bit-identical results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelLevel {
    /// Plain Rust (the statement of the numerics).
    Portable,
    /// AVX2 + FMA + F16C.
    Avx2,
}

/// The best level this CPU supports, detected once.
pub fn kernel_level() -> KernelLevel {
    static LEVEL: OnceLock<KernelLevel> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        if super::x86::has_avx2() {
            return KernelLevel::Avx2;
        }
        KernelLevel::Portable
    })
}

/// Whether `level` can run on this CPU.
pub(super) fn level_supported(level: KernelLevel) -> bool {
    match level {
        KernelLevel::Portable => true,
        #[cfg(target_arch = "x86_64")]
        KernelLevel::Avx2 => super::x86::has_avx2(),
        #[cfg(not(target_arch = "x86_64"))]
        KernelLevel::Avx2 => false,
    }
}

/// One weight matrix as the tile loop sees it.
pub(super) struct Weights<'a> {
    pub ty: GgmlType,
    pub data: &'a [u8],
    pub row_bytes: usize,
}

impl Weights<'_> {
    fn row(&self, n: usize) -> &[u8] {
        &self.data[n * self.row_bytes..(n + 1) * self.row_bytes]
    }
}

/// Computes `store(m, n, W[n] . x[m])` for every pair of the ranges.
/// `single_row` says the whole call has one activation row (IQ4_NL's order).
pub(super) fn run_tile(
    level: KernelLevel,
    w: &Weights<'_>,
    acts: &QActivations,
    n_range: Range<usize>,
    m_range: Range<usize>,
    single_row: bool,
    store: &mut impl FnMut(usize, usize, f32),
) {
    let float = acts.ty() == GgmlType::F32;
    let simd = level == KernelLevel::Avx2 && !(w.ty == GgmlType::IQ4_NL && single_row);
    if float || !simd {
        for m in m_range {
            for n in n_range.clone() {
                let value = if float {
                    float_row(level, w.ty, w.row(n), acts.row_floats(m))
                } else {
                    portable::row_dot(w.ty, w.row(n), acts.row_blocks(m), single_row)
                };
                store(m, n, value);
            }
        }
        return;
    }
    let mut m = m_range.start;
    while m < m_range.end {
        let group = (m_range.end - m).min(4);
        match group {
            4 => simd_group::<4>(w, acts, m, n_range.clone(), store),
            3 => simd_group::<3>(w, acts, m, n_range.clone(), store),
            2 => simd_group::<2>(w, acts, m, n_range.clone(), store),
            _ => simd_group::<1>(w, acts, m, n_range.clone(), store),
        }
        m += group;
    }
}

fn float_row(level: KernelLevel, ty: GgmlType, w_row: &[u8], x: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if level == KernelLevel::Avx2 {
        // SAFETY: the caller picked Avx2 only where `level_supported`; the
        // row holds `x.len()` weights (checked by the entry points).
        return unsafe { super::x86::row_dot_float_avx2(ty, w_row, x) };
    }
    let _ = level;
    float_weights::row_dot_float(ty, w_row, x)
}

fn simd_group<const R: usize>(
    w: &Weights<'_>,
    acts: &QActivations,
    m0: usize,
    n_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    let a_rows: [&[u8]; R] = std::array::from_fn(|r| acts.row_blocks(m0 + r));
    for n in n_range {
        let values = simd_rows(w.ty, w.row(n), a_rows);
        for (r, value) in values.into_iter().enumerate() {
            store(m0 + r, n, value);
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn simd_rows<const R: usize>(ty: GgmlType, w_row: &[u8], a_rows: [&[u8]; R]) -> [f32; R] {
    // SAFETY: `run_tile` takes this path only at level Avx2, which the
    // entry points accept only where the CPU supports it; the entry points
    // checked the activation rows against the weight row's block count,
    // and activation levels are in -127..=127 (`QActivations`).
    unsafe {
        if ty.info().block_len == QK_K {
            super::x86::k_rows_avx2(ty, w_row, a_rows)
        } else {
            super::x86::q32_rows_avx2(ty, w_row, a_rows)
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn simd_rows<const R: usize>(ty: GgmlType, w_row: &[u8], a_rows: [&[u8]; R]) -> [f32; R] {
    std::array::from_fn(|r| portable::row_dot(ty, w_row, a_rows[r], false))
}
