//! Kernel selection and the tile loop: weight rows `n_range` times
//! activation rows `m_range`, four activation rows per weight-row pass.

use std::ops::Range;
use std::sync::OnceLock;

use phobos_quant::GgmlType;

use super::{QActivations, float_weights, portable};

/// Which micro-kernels run. All levels give bit-identical results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelLevel {
    /// Plain Rust (the statement of the numerics).
    Portable,
    /// AVX2 + FMA + F16C.
    Avx2,
    /// Avx2, with AVX-512 VNNI `vpdpbusd` for the 32-element formats.
    Avx512Vnni,
}

/// The best level this CPU supports, detected once.
pub fn kernel_level() -> KernelLevel {
    static LEVEL: OnceLock<KernelLevel> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        if super::x86::has_vnni() {
            return KernelLevel::Avx512Vnni;
        }
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
        #[cfg(target_arch = "x86_64")]
        KernelLevel::Avx512Vnni => super::x86::has_vnni(),
        #[cfg(not(target_arch = "x86_64"))]
        KernelLevel::Avx2 | KernelLevel::Avx512Vnni => false,
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
    let simd = level != KernelLevel::Portable && !(w.ty == GgmlType::IQ4_NL && single_row);
    // The row loop below runs one weight row against up to four activation
    // rows; one row at a time for decode.
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
            4 => simd_group::<4>(level, w, acts, m, n_range.clone(), store),
            3 => simd_group::<3>(level, w, acts, m, n_range.clone(), store),
            2 => simd_group::<2>(level, w, acts, m, n_range.clone(), store),
            _ => simd_group::<1>(level, w, acts, m, n_range.clone(), store),
        }
        m += group;
    }
}

fn float_row(level: KernelLevel, ty: GgmlType, w_row: &[u8], x: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if level != KernelLevel::Portable {
        // SAFETY: the caller picked a SIMD level only where `level_supported`; the
        // row holds `x.len()` weights (checked by the entry points).
        return unsafe { super::x86::row_dot_float_avx2(ty, w_row, x) };
    }
    let _ = level;
    float_weights::row_dot_float(ty, w_row, x)
}

fn simd_group<const R: usize>(
    level: KernelLevel,
    w: &Weights<'_>,
    acts: &QActivations,
    m0: usize,
    n_range: Range<usize>,
    store: &mut impl FnMut(usize, usize, f32),
) {
    let a_rows: [&[u8]; R] = std::array::from_fn(|r| acts.row_blocks(m0 + r));
    let pairs = w.ty.info().block_len == 32;
    let mut n = n_range.start;
    while n < n_range.end {
        if pairs && n + 1 < n_range.end {
            let values = simd_rows::<2, R>(level, w.ty, [w.row(n), w.row(n + 1)], a_rows);
            for (i, row) in values.into_iter().enumerate() {
                for (r, value) in row.into_iter().enumerate() {
                    store(m0 + r, n + i, value);
                }
            }
            n += 2;
        } else {
            let [values] = simd_rows::<1, R>(level, w.ty, [w.row(n)], a_rows);
            for (r, value) in values.into_iter().enumerate() {
                store(m0 + r, n, value);
            }
            n += 1;
        }
    }
}

/// `W` weight rows times `R` activation rows on the AVX2 kernels (the
/// 256-element kernels take one weight row at a time).
#[cfg(target_arch = "x86_64")]
fn simd_rows<const W: usize, const R: usize>(
    level: KernelLevel,
    ty: GgmlType,
    w_rows: [&[u8]; W],
    a_rows: [&[u8]; R],
) -> [[f32; R]; W] {
    // SAFETY: `run_tile` takes this path only at a SIMD level, which the
    // entry points accept only where the CPU supports it; the entry points
    // checked the activation rows against the weight rows' block count,
    // and activation levels are in -127..=127 (`QActivations`).
    unsafe {
        use super::x86::{k_rows_avx2 as k, q32_rows_avx2, q32_rows_vnni};
        use GgmlType::*;
        macro_rules! q {
            ($f:expr) => {
                if level == KernelLevel::Avx512Vnni {
                    q32_rows_vnni::<{ $f as u32 }, W, R>(w_rows, a_rows)
                } else {
                    q32_rows_avx2::<{ $f as u32 }, W, R>(w_rows, a_rows)
                }
            };
        }
        let k_rows = |f: unsafe fn(&[u8], [&[u8]; R]) -> [f32; R]| -> [[f32; R]; W] {
            std::array::from_fn(|i| f(w_rows[i], a_rows))
        };
        match ty {
            Q4_0 => q!(Q4_0),
            Q4_1 => q!(Q4_1),
            Q5_0 => q!(Q5_0),
            Q5_1 => q!(Q5_1),
            Q8_0 => q!(Q8_0),
            IQ4_NL => q!(IQ4_NL),
            Q2_K => k_rows(k::<{ Q2_K as u32 }, R>),
            Q3_K => k_rows(k::<{ Q3_K as u32 }, R>),
            Q4_K => k_rows(k::<{ Q4_K as u32 }, R>),
            Q5_K => k_rows(k::<{ Q5_K as u32 }, R>),
            Q6_K => k_rows(k::<{ Q6_K as u32 }, R>),
            IQ4_XS => k_rows(k::<{ IQ4_XS as u32 }, R>),
            _ => std::array::from_fn(|i| {
                std::array::from_fn(|r| portable::row_dot(ty, w_rows[i], a_rows[r], false))
            }),
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn simd_rows<const W: usize, const R: usize>(
    level: KernelLevel,
    ty: GgmlType,
    w_rows: [&[u8]; W],
    a_rows: [&[u8]; R],
) -> [[f32; R]; W] {
    std::array::from_fn(|i| {
        std::array::from_fn(|r| portable::row_dot(ty, w_rows[i], a_rows[r], false))
    })
}
