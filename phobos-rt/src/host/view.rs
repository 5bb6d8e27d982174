//! Tensor views that tile programs read and write through.
//!
//! Soundness: a view holds a raw pointer to the tensor's allocation, borrowed
//! for `'a` from the tensor (which keeps the allocation alive). Programs on
//! different threads may store to the same element, or load one another
//! stores, exactly as GPU programs may (SPEC.md: racing stores are allowed,
//! one of them wins). Such races are defined behaviour here because every
//! write to a host allocation, in views and in `Tensor::copy_from_slice`
//! alike, is a relaxed atomic of the element's width
//! (`Element::{load,store}_relaxed`), the allocation is aligned for them,
//! and so is every read that could meet a write.
//!
//! Plain reads: a [`PlainRead`] guard makes a view whose contiguous rows are
//! read with ordinary (vectorizable) loads. It exists only while the
//! allocation has no writer: the guard enters the allocation's plain-reader
//! count, which writers ([`TensorWrite::new`], `copy_from_slice`) wait on,
//! and it is refused (the view reads atomically) when a writer is in, such
//! as a written parameter of the same launch on the same storage (generated
//! launchers make their [`TensorWrite`]s first for exactly this). So a plain
//! read never overlaps a write, from this launch or any other thread.

use crate::device::HostBuffer;
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
    /// Reads may be plain (a [`PlainRead`] guard holds the allocation).
    pub(crate) plain: bool,
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

    /// The `len` elements from `elem` as a slice when reads may be plain.
    ///
    /// # Safety
    /// `elem..elem + len` must be in bounds (from indices inside `shape`,
    /// with a last-dim stride of 1).
    #[inline(always)]
    pub(crate) unsafe fn plain_row(&self, elem: usize, len: usize) -> Option<&[T]> {
        // SAFETY: in bounds by the caller; `plain` means a `PlainRead` guard
        // keeps every writer out of the allocation while this view (and so
        // the slice, which borrows it) lives (module doc).
        self.plain
            .then(|| unsafe { std::slice::from_raw_parts(self.base.add(elem), len) })
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
                plain: false,
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

/// Plain (vectorizable) read access to a tensor for one launch: while the
/// guard lives, no writer is in the allocation (module doc). Make it after
/// the launch's [`TensorWrite`]s; on an allocation a writer holds it falls
/// back to atomic reads, so it never waits.
#[derive(Debug)]
pub struct PlainRead<'a, T: Element> {
    view: TensorRead<'a, T>,
    buffer: Option<&'a HostBuffer>,
}

impl<'a, T: Element> PlainRead<'a, T> {
    /// Enters `tensor`'s allocation as a plain reader when no writer is in;
    /// `WrongBackend` for other devices.
    pub fn new(tensor: &'a Tensor<T>) -> Result<Self> {
        let mut view = TensorRead::new(tensor)?;
        let buffer = tensor.host_buffer()?;
        let entered = buffer.try_begin_plain_read();
        view.raw.plain = entered;
        Ok(PlainRead {
            view,
            buffer: entered.then_some(buffer),
        })
    }

    /// The view, plain while the guard holds the allocation.
    pub fn view(&self) -> TensorRead<'_, T> {
        self.view
    }

    /// Whether reads through [`PlainRead::view`] are plain.
    pub fn is_plain(&self) -> bool {
        self.buffer.is_some()
    }
}

impl<T: Element> Drop for PlainRead<'_, T> {
    fn drop(&mut self) {
        if let Some(buffer) = self.buffer {
            buffer.end_plain_read();
        }
    }
}

/// Read-write access to a tensor from inside tile programs. `Sync`: many
/// programs store through one shared `&TensorWrite`. While it lives it is a
/// writer of the allocation: plain readers are kept out (module doc).
#[derive(Debug)]
pub struct TensorWrite<'a, T: Element> {
    raw: RawView<'a, T>,
    buffer: &'a HostBuffer,
    borrow: PhantomData<&'a mut Tensor<T>>,
}

impl<T: Element> Drop for TensorWrite<'_, T> {
    fn drop(&mut self) {
        self.buffer.end_write();
    }
}

// SAFETY: all accesses through the view are element-width atomics (module doc).
unsafe impl<T: Element> Send for TensorWrite<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Element> Sync for TensorWrite<'_, T> {}

impl<'a, T: Element> TensorWrite<'a, T> {
    /// A read-write view of a host tensor; `WrongBackend` for other devices.
    /// Waits while a launch on another thread reads the allocation with
    /// plain loads ([`PlainRead`]).
    pub fn new(tensor: &'a mut Tensor<T>) -> Result<Self> {
        let tensor: &'a Tensor<T> = tensor;
        let raw = RawView {
            base: tensor.host_ptr("TensorWrite::new")?,
            offset: tensor.offset(),
            shape: tensor.shape(),
            strides: tensor.strides(),
            plain: false,
        };
        let buffer = tensor.host_buffer()?;
        buffer.begin_write();
        Ok(TensorWrite {
            raw,
            buffer,
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
