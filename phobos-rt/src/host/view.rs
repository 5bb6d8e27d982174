//! Tensor views that tile programs read and write through.
//!
//! Soundness: a view holds a raw pointer to the tensor's allocation, borrowed
//! for `'a` from the tensor (which keeps the allocation alive). Programs on
//! different threads may store to the same element, or load one another
//! stores, exactly as GPU programs may. Such races are defined behaviour here
//! because every access to a host allocation, in views and in
//! `Tensor::to_vec` alike, is a relaxed atomic of the element's width
//! (`Element::{load,store}_relaxed`), and the allocation is aligned for them.
//! There are never mixed-size or non-atomic accesses that could race.

use crate::{Element, Result, Tensor};
use std::marker::PhantomData;

/// The geometry and base pointer shared by both view kinds.
///
/// Invariant: for every index `i` with `i[d] < shape[d]` for all `d`,
/// `base + offset + sum(i[d] * strides[d])` is an in-bounds, aligned element
/// of a live host allocation (guaranteed by `Tensor`'s constructors).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawView<'a, T> {
    pub(crate) base: *mut T,
    pub(crate) offset: usize,
    pub(crate) shape: &'a [usize],
    pub(crate) strides: &'a [usize],
}

impl<T: Element> RawView<'_, T> {
    /// Loads the element at `elem` (offset from `base`, already including
    /// `offset`).
    ///
    /// # Safety
    /// `elem` must come from an index inside `shape` (see the invariant).
    #[inline(always)]
    pub(crate) unsafe fn load_at(&self, elem: usize) -> T {
        // SAFETY: in bounds by the caller; atomic by construction.
        unsafe { T::load_relaxed(self.base.add(elem)) }
    }

    /// Stores `value` at `elem`.
    ///
    /// # Safety
    /// As [`RawView::load_at`].
    #[inline(always)]
    pub(crate) unsafe fn store_at(&self, elem: usize, value: T) {
        // SAFETY: in bounds by the caller; atomic by construction.
        unsafe { T::store_relaxed(self.base.add(elem), value) }
    }

    /// Hints the CPU to fetch elements `elem..elem + len` into the L2 cache.
    /// Any range is allowed: a prefetch never faults and is not a memory
    /// access in Rust's model, so the address may lie past the allocation.
    #[inline(always)]
    pub(crate) fn prefetch(&self, elem: usize, len: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_MM_HINT_T1, _mm_prefetch};
            const LINE_BYTES: usize = 64;
            let start = self.base.wrapping_add(elem).cast::<u8>();
            for line in (0..len * size_of::<T>()).step_by(LINE_BYTES) {
                // SAFETY: SSE is part of the x86_64 baseline, and a prefetch
                // of any address is harmless.
                unsafe { _mm_prefetch::<_MM_HINT_T1>(start.wrapping_add(line).cast::<i8>()) };
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (elem, len);
    }

    /// A pointer to the element at `elem`.
    ///
    /// # Safety
    /// As [`RawView::load_at`].
    #[inline(always)]
    pub(crate) unsafe fn ptr_at(&self, elem: usize) -> *mut T {
        // SAFETY: in bounds by the caller.
        unsafe { self.base.add(elem) }
    }
}

/// Read access to a tensor from inside tile programs. `Copy` and `Sync`.
#[derive(Debug, Clone, Copy)]
pub struct TensorRead<'a, T: Element> {
    raw: RawView<'a, T>,
    borrow: PhantomData<&'a Tensor<T>>,
}

// SAFETY: all accesses through the view are element-width atomics (module doc).
unsafe impl<T: Element> Send for TensorRead<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Element> Sync for TensorRead<'_, T> {}

impl<'a, T: Element> TensorRead<'a, T> {
    /// A read view of a host tensor; `WrongBackend` for other devices.
    pub fn new(tensor: &'a Tensor<T>) -> Result<Self> {
        Ok(TensorRead {
            raw: RawView {
                base: tensor.host_ptr("TensorRead::new")?,
                offset: tensor.offset(),
                shape: tensor.shape(),
                strides: tensor.strides(),
            },
            borrow: PhantomData,
        })
    }

    /// Extents of the tensor.
    pub fn shape(&self) -> &'a [usize] {
        self.raw.shape
    }

    /// Extent of dim `d` (0 when `d` is past the rank).
    pub fn dim(&self, d: usize) -> usize {
        self.raw.shape.get(d).copied().unwrap_or(0)
    }

    /// Strides in elements.
    pub fn strides(&self) -> &'a [usize] {
        self.raw.strides
    }

    /// Number of dims.
    pub fn rank(&self) -> usize {
        self.raw.shape.len()
    }

    pub(crate) fn raw(&self) -> RawView<'a, T> {
        self.raw
    }
}

/// Read-write access to a tensor from inside tile programs. `Sync`: many
/// programs store through one shared `&TensorWrite`.
#[derive(Debug)]
pub struct TensorWrite<'a, T: Element> {
    raw: RawView<'a, T>,
    borrow: PhantomData<&'a mut Tensor<T>>,
}

// SAFETY: all accesses through the view are element-width atomics (module doc).
unsafe impl<T: Element> Send for TensorWrite<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Element> Sync for TensorWrite<'_, T> {}

impl<'a, T: Element> TensorWrite<'a, T> {
    /// A read-write view of a host tensor; `WrongBackend` for other devices.
    pub fn new(tensor: &'a mut Tensor<T>) -> Result<Self> {
        Ok(TensorWrite {
            raw: RawView {
                base: tensor.host_ptr("TensorWrite::new")?,
                offset: tensor.offset(),
                shape: tensor.shape(),
                strides: tensor.strides(),
            },
            borrow: PhantomData,
        })
    }

    /// A read view of the same tensor, for kernels that read what they write.
    pub fn as_read(&self) -> TensorRead<'_, T> {
        TensorRead {
            raw: self.raw,
            borrow: PhantomData,
        }
    }

    /// Extents of the tensor.
    pub fn shape(&self) -> &'a [usize] {
        self.raw.shape
    }

    /// Extent of dim `d` (0 when `d` is past the rank).
    pub fn dim(&self, d: usize) -> usize {
        self.raw.shape.get(d).copied().unwrap_or(0)
    }

    /// Strides in elements.
    pub fn strides(&self) -> &'a [usize] {
        self.raw.strides
    }

    /// Number of dims.
    pub fn rank(&self) -> usize {
        self.raw.shape.len()
    }

    pub(crate) fn raw(&self) -> RawView<'a, T> {
        self.raw
    }
}

/// Views that [`load`](super::load) can read: [`TensorRead`] and [`TensorWrite`].
pub trait Readable<T: Element>: Sync {
    /// A read view.
    fn read_view(&self) -> TensorRead<'_, T>;
}

impl<T: Element> Readable<T> for TensorRead<'_, T> {
    fn read_view(&self) -> TensorRead<'_, T> {
        *self
    }
}

impl<T: Element> Readable<T> for TensorWrite<'_, T> {
    fn read_view(&self) -> TensorRead<'_, T> {
        self.as_read()
    }
}
