//! Activations quantized once for several weights: q, k and v (or gate and
//! up, or the experts of one token) read the same rows, and each launch of
//! [`qmatmul_host`](super::qmatmul_host) would quantize them again.
//!
//! [`with_shared_activations`] names the rows for the length of a closure.
//! A launch on this thread whose `X` is exactly that memory (same address
//! and length) takes the rows' quantized form for its partner type from the
//! scope, quantizing them on first use. The scope holds the rows borrowed
//! shared, so they cannot change while it lives: the same memory holds the
//! same values, and the reused blocks are the bits a fresh quantization
//! would give. Any other `X` is quantized as usual.

use std::cell::RefCell;
use std::rc::Rc;

use phobos_quant::GgmlType;

use super::{QActivations, QMatmulError, quantize_activations_threaded, vec_dot_type};

/// The rows of the innermost scope on this thread and their quantized forms.
struct Scope {
    /// Identity only, never read through.
    rows_addr: usize,
    len: usize,
    /// `(partner type, cols, rows quantized)`.
    quantized: Vec<(GgmlType, usize, Rc<QActivations>)>,
}

thread_local! {
    static SCOPE: RefCell<Option<Scope>> = const { RefCell::new(None) };
}

/// Runs `f` with `x`'s quantized forms shared by every quantized matmul
/// launch on this thread whose activations are `x` itself (module docs);
/// each partner type (q8_0, q8_1, q8_K) is computed at most once. Scopes
/// nest: the inner one is in force until it ends. Results are bit-identical
/// to launches without the scope.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use phobos_rt::host::qmatmul::{QMatrixRef, matmul_threaded, qmatmul_host, with_shared_activations};
/// use phobos_rt::quant::{QTensor, Q8_0};
/// use phobos_rt::{Device, HostDevice};
/// let (rows, cols) = (4, 64);
/// let w: Vec<f32> = (0..rows * cols).map(|i| (i % 7) as f32 - 3.0).collect();
/// let mut blocks = Vec::new();
/// phobos_quant::quantize(phobos_quant::GgmlType::Q8_0, &w, &mut blocks)?;
/// let weight = QTensor::<Q8_0>::borrowed(&blocks, [rows, cols])?;
/// let x: Vec<f32> = (0..cols).map(|i| i as f32 / 64.0 - 0.5).collect();
/// let (mut q, mut k) = (vec![0f32; rows], vec![0f32; rows]);
/// // Two launches over the same rows: `x` is quantized once.
/// with_shared_activations(&x, || -> phobos_rt::Result<()> {
///     for out in [&mut q, &mut k] {
///         HostDevice.with_borrowed(&x, [1, cols], out, [1, rows], |xt, yt| {
///             qmatmul_host(&Device::host(), xt, &weight, yt)
///         })??;
///     }
///     Ok(())
/// })?;
/// let mut direct = vec![0f32; rows];
/// let w_ref = QMatrixRef { ty: phobos_quant::GgmlType::Q8_0, rows, cols, data: &blocks };
/// matmul_threaded(&w_ref, &x, 1, &mut direct)?;
/// assert_eq!((q.clone(), k), (direct.clone(), direct));
/// # Ok(())
/// # }
/// ```
pub fn with_shared_activations<R>(x: &[f32], f: impl FnOnce() -> R) -> R {
    let scope = Scope {
        rows_addr: x.as_ptr() as usize,
        len: x.len(),
        quantized: Vec::new(),
    };
    let previous = SCOPE.with(|cell| cell.replace(Some(scope)));
    // Puts the outer scope back however `f` ends, so a later launch never
    // matches rows whose borrow is over.
    let _restore = Restore(Some(previous));
    f()
}

struct Restore(Option<Option<Scope>>);

impl Drop for Restore {
    fn drop(&mut self) {
        if let Some(previous) = self.0.take() {
            SCOPE.with(|cell| *cell.borrow_mut() = previous);
        }
    }
}

/// `x` (`m_rows` rows of `cols`) quantized to `weight_ty`'s partner type:
/// the scope's copy when `x` is the scope's rows, else a fresh one
/// (prompt-sized batches quantized on the host pool).
pub(super) fn quantized_activations(
    weight_ty: GgmlType,
    x: &[f32],
    m_rows: usize,
    cols: usize,
) -> Result<Rc<QActivations>, QMatmulError> {
    let partner =
        vec_dot_type(weight_ty).ok_or(QMatmulError::UnsupportedWeight { ty: weight_ty })?;
    let in_scope = |scope: &Scope| {
        !x.is_empty() && scope.rows_addr == x.as_ptr() as usize && scope.len == x.len()
    };
    let hit = SCOPE.with(|cell| {
        let scope = cell.borrow();
        let scope = scope.as_ref().filter(|s| in_scope(s))?;
        scope
            .quantized
            .iter()
            .find(|(ty, c, _)| *ty == partner && *c == cols)
            .map(|(_, _, acts)| Rc::clone(acts))
    });
    if let Some(acts) = hit {
        return Ok(acts);
    }
    let acts = Rc::new(quantize_activations_threaded(weight_ty, x, m_rows, cols)?);
    SCOPE.with(|cell| {
        if let Some(scope) = cell.borrow_mut().as_mut().filter(|s| in_scope(s)) {
            scope.quantized.push((partner, cols, Rc::clone(&acts)));
        }
    });
    Ok(acts)
}

/// How many quantized forms the innermost scope holds (tests).
#[cfg(test)]
pub(super) fn scope_entries() -> Option<usize> {
    SCOPE.with(|cell| cell.borrow().as_ref().map(|s| s.quantized.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::{Q4_0, Q4K, QTensor, QuantFormat};
    use crate::{Device, HostDevice};

    fn values(len: usize, seed: u32) -> Vec<f32> {
        (0..len)
            .map(|i| {
                ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) % 2001) as f32 / 1000.0
                    - 1.0
            })
            .collect()
    }

    #[test]
    fn the_scope_quantizes_its_rows_once_per_partner_type() {
        let (m_rows, cols) = (3, 512);
        let x = values(m_rows * cols, 7);
        let twin = x.clone();
        with_shared_activations(&x, || {
            let a = quantized_activations(GgmlType::Q4_K, &x, m_rows, cols).unwrap();
            let b = quantized_activations(GgmlType::Q6_K, &x, m_rows, cols).unwrap();
            assert!(Rc::ptr_eq(&a, &b), "both pair with q8_K");
            assert_eq!(scope_entries(), Some(1));
            let c = quantized_activations(GgmlType::Q4_0, &x, m_rows, cols).unwrap();
            assert_eq!(c.ty(), GgmlType::Q8_0);
            assert_eq!(scope_entries(), Some(2));
            // Equal values in other memory are not the scope's rows.
            let d = quantized_activations(GgmlType::Q4_K, &twin, m_rows, cols).unwrap();
            assert!(!Rc::ptr_eq(&a, &d));
            assert_eq!(*a, *d, "the shared form is a fresh quantization's bits");
            // An inner scope is in force until it ends, then the outer one.
            with_shared_activations(&twin, || assert_eq!(scope_entries(), Some(0)));
            assert_eq!(scope_entries(), Some(2));
        });
        assert_eq!(scope_entries(), None);
    }

    fn launch<F: QuantFormat>(w: &QTensor<'_, F>, x: &[f32], m_rows: usize, out: &mut [f32]) {
        let (rows, cols) = (w.shape()[0], w.shape()[1]);
        HostDevice
            .with_borrowed(x, [m_rows, cols], out, [m_rows, rows], |xt, yt| {
                super::super::qmatmul_host(&Device::host(), xt, w, yt)
            })
            .unwrap()
            .unwrap();
    }

    /// q/k/v-like launches in a scope give the bits of unscoped ones.
    #[test]
    fn launches_in_a_scope_are_bit_identical() {
        let (m_rows, cols) = (2, 256);
        let x = values(m_rows * cols, 3);
        let mut weights = Vec::new();
        for (ty, rows, seed) in [(GgmlType::Q4_K, 24, 1), (GgmlType::Q4_0, 16, 2)] {
            let mut bytes = Vec::new();
            phobos_quant::quantize(ty, &values(rows * cols, seed), &mut bytes).unwrap();
            weights.push((bytes, rows));
        }
        let q4k = QTensor::<Q4K>::borrowed(&weights[0].0, [weights[0].1, cols]).unwrap();
        let q40 = QTensor::<Q4_0>::borrowed(&weights[1].0, [weights[1].1, cols]).unwrap();
        let run = |shared: bool| {
            let mut a = vec![0f32; m_rows * weights[0].1];
            let mut b = vec![0f32; m_rows * weights[0].1];
            let mut c = vec![0f32; m_rows * weights[1].1];
            let mut all = || {
                launch(&q4k, &x, m_rows, &mut a);
                launch(&q4k, &x, m_rows, &mut b);
                launch(&q40, &x, m_rows, &mut c);
                if shared {
                    assert_eq!(scope_entries(), Some(2));
                }
            };
            if shared {
                with_shared_activations(&x, all);
            } else {
                all();
            }
            assert_eq!(a, b);
            [a, c].map(|v| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>())
        };
        assert_eq!(run(true), run(false));
    }
}
