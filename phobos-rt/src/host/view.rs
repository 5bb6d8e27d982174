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
//!
//! Plain stores: [`TensorWrite::allow_plain_stores`] (unsafe: the caller
//! promises that no element is stored by two threads or read by another
//! while the view lives, which generated launchers prove for program-owned
//! tensors, SPEC.md §9) makes stores ordinary copies, when the tensor is
//! the only view of its allocation (so with it borrowed mutably nothing
//! else can reach the memory) and its strides never map two indices to one
//! element. Large tensors are then written with streaming stores, fenced
//! before the program goes on.

use crate::device::HostBuffer;
use crate::{Element, Result, Tensor};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};

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
    /// Reads may be plain: a [`PlainRead`] guard holds the allocation, or
    /// it is read-only borrowed memory (no writer ever enters it).
    pub(crate) plain: bool,
    /// Nonzero while a [`PlainRead`] guard holds the allocation: an id no
    /// other guard ever gets, so data derived from the view's elements
    /// (packed `dot` operands) may be reused for as long as the id is seen
    /// again, the elements cannot change in between (no writer enters).
    pub(crate) plain_id: u64,
    /// Stores may be plain ([`TensorWrite::allow_plain_stores`]).
    pub(crate) plain_store: bool,
    /// Plain row stores bypass the cache (the tensor is too large to be
    /// read back from it).
    pub(crate) stream_store: bool,
}

impl<'a, T: Element> RawView<'a, T> {
    /// Loads the element at `elem` (offset from `base`, already including
    /// `offset`).
    ///
    /// # Safety
    /// `elem` must come from an index inside `shape` (see the invariant).
    #[inline(always)]
    pub(crate) unsafe fn load_at(&self, elem: usize) -> T {
        // SAFETY: in bounds by the caller. A plain read only where `plain`
        // says no writer is in the allocation while the view lives (a
        // `PlainRead` guard, or a read-only buffer, which never has one);
        // else atomic, as every access that may meet a write is.
        unsafe {
            if self.plain {
                self.base.add(elem).read()
            } else {
                T::load_relaxed(self.base.add(elem))
            }
        }
    }

    /// Stores `value` at `elem`.
    ///
    /// # Safety
    /// As [`RawView::load_at`].
    #[inline(always)]
    pub(crate) unsafe fn store_at(&self, elem: usize, value: T) {
        // SAFETY: in bounds by the caller; a plain store only where
        // `plain_store` says no other thread accesses the element during
        // the launch (`TensorWrite::allow_plain_stores`), else atomic.
        unsafe {
            if self.plain_store {
                self.base.add(elem).write(value);
            } else {
                T::store_relaxed(self.base.add(elem), value);
            }
        }
    }

    /// Stores `values` at `elem..elem + values.len()` with one copy when
    /// stores may be plain; `false` (nothing stored) otherwise.
    ///
    /// # Safety
    /// The range must be in bounds (from indices inside `shape`, with a
    /// last-dim stride of 1).
    #[inline(always)]
    pub(crate) unsafe fn store_row(&self, elem: usize, values: &[T]) -> bool {
        if !self.plain_store {
            return false;
        }
        // SAFETY: in bounds by the caller; `plain_store` means no other
        // thread reads or writes these elements during the launch
        // (`TensorWrite::allow_plain_stores`), and a tile never lives in a
        // tensor's allocation, so the ranges do not overlap.
        unsafe {
            let dst = self.base.add(elem);
            if self.stream_store {
                stream_copy(values, dst);
            } else {
                std::ptr::copy_nonoverlapping(values.as_ptr(), dst, values.len());
            }
        };
        true
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
    /// The `len` elements from `elem` as a slice living as long as the
    /// view's borrow of the tensor.
    ///
    /// # Safety
    /// The view must read plainly (`plain`), and the elements must be in
    /// bounds.
    #[inline(always)]
    pub(crate) unsafe fn plain_block(self, elem: usize, len: usize) -> &'a [T] {
        debug_assert!(self.plain);
        // SAFETY: in bounds (the caller), and nobody writes a tensor read
        // plainly while the view lives (`PlainRead`).
        unsafe { std::slice::from_raw_parts(self.base.add(elem), len) }
    }

    #[inline(always)]
    pub(crate) unsafe fn ptr_at(&self, elem: usize) -> *mut T {
        // SAFETY: in bounds by the caller.
        unsafe { self.base.add(elem) }
    }
}

/// Tensors from this size up are written with streaming (cache-bypassing)
/// stores when their stores are plain: they do not fit the cache for a
/// later kernel to read them from it anyway, and a streaming store does
/// not first read the line it overwrites, which a normal store does. The
/// same trade as glibc's `memcpy` threshold for non-temporal copies.
pub(crate) const STREAM_MIN_BYTES: usize = 32 << 20;

/// Copies `values` to `dst`, the aligned middle with streaming stores:
/// whole 64-byte lines, one store each, where the CPU has AVX-512, else
/// 16 bytes per store. (On Emerald Rapids, a C model of rmsnorm that
/// stages 256 results and streams them out took 3.77 ms at 16 bytes per
/// store and 3.24 ms at one store per line, medians timed in turns in one
/// process; in the generated kernels the difference was within that
/// machine's noise. BENCHMARKS.md, session 31.) They are weakly
/// ordered: [`fence_streamed_stores`] must run on
/// this thread before another thread may read `dst`. The pool runs it
/// after every chunk of programs, before it counts them done (so before
/// the launch can return), and a [`TensorWrite`] runs it when it drops on
/// the launching thread. Fencing once per chunk instead of once per copy
/// keeps a row kernel's next loads from waiting behind every tile's stores.
///
/// # Safety
/// `dst..dst + values.len()` must be valid for writes, not overlap
/// `values`, and not be accessed by another thread until the launch ends.
#[inline]
pub(super) unsafe fn stream_copy<T: Copy>(values: &[T], dst: *mut T) {
    let bytes = std::mem::size_of_val(values);
    let src = values.as_ptr().cast::<u8>();
    let out = dst.cast::<u8>();
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the caller's contract; the CPU has AVX-512F.
            unsafe { stream_lines_avx512(src, out, bytes) };
        } else {
            // SAFETY: the caller's contract.
            unsafe { stream_lines_sse2(src, out, bytes) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // SAFETY: the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(src, out, bytes) };
    }
}

/// `bytes` from `src` to `out`: plain copies up to the first 64-byte
/// boundary of `out` and after the last, one streaming store per line
/// between.
///
/// # Safety
/// Both ranges valid (read, write), not overlapping; the CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn stream_lines_avx512(src: *const u8, out: *mut u8, bytes: usize) {
    use std::arch::x86_64::{__m512i, _mm512_loadu_si512, _mm512_stream_si512};
    const LINE: usize = 64;
    let head = out.align_offset(LINE).min(bytes);
    let lines_end = head + (bytes - head) / LINE * LINE;
    // SAFETY: every range lies inside the `bytes` bytes of both (the
    // caller's contract); the streamed stores go to 64-byte-aligned lines.
    unsafe {
        std::ptr::copy_nonoverlapping(src, out, head);
        for offset in (head..lines_end).step_by(LINE) {
            let line = _mm512_loadu_si512(src.add(offset).cast::<__m512i>());
            _mm512_stream_si512(out.add(offset).cast::<__m512i>(), line);
        }
        std::ptr::copy_nonoverlapping(src.add(lines_end), out.add(lines_end), bytes - lines_end);
    }
}

/// As [`stream_lines_avx512`], 16 bytes per streaming store.
///
/// # Safety
/// Both ranges valid (read, write), not overlapping.
#[cfg(target_arch = "x86_64")]
unsafe fn stream_lines_sse2(src: *const u8, out: *mut u8, bytes: usize) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
    const VECTOR: usize = 16;
    const LINE: usize = 64;
    let head = out.align_offset(VECTOR).min(bytes);
    let body = (bytes - head) / VECTOR * VECTOR;
    // SAFETY: every range below lies inside the `bytes` bytes of both (the
    // caller's contract); the streamed stores go to 16-byte-aligned
    // addresses; SSE2 is part of the x86_64 baseline.
    unsafe {
        std::ptr::copy_nonoverlapping(src, out, head);
        // A cache line per step: four loads, then four stores, so the
        // line's write-combining buffer fills back to back.
        let lines_end = head + body / LINE * LINE;
        for offset in (head..lines_end).step_by(LINE) {
            let s = src.add(offset).cast::<__m128i>();
            let d = out.add(offset).cast::<__m128i>();
            let (a, b) = (_mm_loadu_si128(s), _mm_loadu_si128(s.add(1)));
            let (c, e) = (_mm_loadu_si128(s.add(2)), _mm_loadu_si128(s.add(3)));
            _mm_stream_si128(d, a);
            _mm_stream_si128(d.add(1), b);
            _mm_stream_si128(d.add(2), c);
            _mm_stream_si128(d.add(3), e);
        }
        for offset in (lines_end..head + body).step_by(VECTOR) {
            let v = _mm_loadu_si128(src.add(offset).cast::<__m128i>());
            _mm_stream_si128(out.add(offset).cast::<__m128i>(), v);
        }
        std::ptr::copy_nonoverlapping(
            src.add(head + body),
            out.add(head + body),
            bytes - head - body,
        );
    }
}

/// Orders this thread's streaming stores ([`stream_copy`]) before its later
/// stores, as std's docs require before another thread may see them (a
/// release store or lock after the fence then publishes them).
#[inline]
pub(crate) fn fence_streamed_stores() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_sfence();
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
                plain: tensor.host_buffer()?.is_read_only(),
                plain_id: 0,
                plain_store: false,
                stream_store: false,
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

/// Source of [`RawView::plain_id`]s; starts at 1 (0 means none). 64 bits
/// never wrap in practice.
static NEXT_PLAIN_ID: AtomicU64 = AtomicU64::new(1);

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
        if entered {
            // Relaxed: only uniqueness matters, not ordering.
            view.raw.plain_id = NEXT_PLAIN_ID.fetch_add(1, Ordering::Relaxed);
        }
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
    /// The tensor is its allocation's only view and its layout maps
    /// distinct indices to distinct elements.
    sole_view: bool,
    borrow: PhantomData<&'a mut Tensor<T>>,
}

impl<T: Element> Drop for TensorWrite<'_, T> {
    fn drop(&mut self) {
        // Stores this thread streamed outside a pool launch.
        if self.raw.stream_store {
            fence_streamed_stores();
        }
        self.buffer.end_write();
    }
}

// SAFETY: all accesses through the view are element-width atomics, or plain
// stores under `allow_plain_stores`'s contract (module doc).
unsafe impl<T: Element> Send for TensorWrite<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Element> Sync for TensorWrite<'_, T> {}

impl<'a, T: Element> TensorWrite<'a, T> {
    /// A read-write view of a host tensor; `WrongBackend` for other devices.
    /// Waits while a launch on another thread reads the allocation with
    /// plain loads ([`PlainRead`]).
    pub fn new(tensor: &'a mut Tensor<T>) -> Result<Self> {
        let sole_view = tensor.is_sole_host_view() && layout_does_not_overlap(tensor);
        let tensor: &'a Tensor<T> = tensor;
        let raw = RawView {
            base: tensor.host_ptr("TensorWrite::new")?,
            offset: tensor.offset(),
            shape: tensor.shape(),
            strides: tensor.strides(),
            plain: false,
            plain_id: 0,
            plain_store: false,
            stream_store: false,
        };
        let buffer = tensor.host_buffer()?;
        buffer.begin_write("a launch writing the tensor")?;
        Ok(TensorWrite {
            raw,
            buffer,
            sole_view,
            borrow: PhantomData,
        })
    }

    /// Lets stores through this view be plain (vectorizable copies) when
    /// the tensor is the only view of its allocation and no two of its
    /// indices share an element; otherwise stores stay atomic. Returns
    /// whether they are plain now.
    ///
    /// # Safety
    /// For as long as this view lives, no element of the tensor may be
    /// stored by two threads, nor read by another thread than the one
    /// storing it: what generated launchers prove for program-owned tensors
    /// (SPEC.md §9), whose every element is stored by at most one program
    /// and read by none. (Other views cannot interfere: the tensor is
    /// borrowed mutably and its allocation is shared with no other tensor.)
    /// Stores into a large tensor may stream past the cache; they are
    /// fenced when the pool finishes a chunk of programs and when the view
    /// drops, so the view must only be stored through from inside a pool
    /// launch (`host::try_run_grid`) or on the thread that drops it.
    pub unsafe fn allow_plain_stores(&mut self) -> bool {
        self.raw.plain_store = self.sole_view;
        let elements: usize = self.raw.shape.iter().product();
        self.raw.stream_store =
            self.sole_view && elements.saturating_mul(size_of::<T>()) >= STREAM_MIN_BYTES;
        self.sole_view
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

/// Whether distinct indices of `tensor` always name distinct elements: with
/// the dims of extent > 1 sorted by stride, each stride steps past every
/// element the smaller dims reach.
fn layout_does_not_overlap<T: Element>(tensor: &Tensor<T>) -> bool {
    let mut dims: Vec<(usize, usize)> = tensor
        .strides()
        .iter()
        .copied()
        .zip(tensor.shape().iter().copied())
        .filter(|&(_, extent)| extent > 1)
        .collect();
    dims.sort_unstable();
    let mut reach = 0usize;
    for (stride, extent) in dims {
        if stride <= reach {
            return false;
        }
        match (extent - 1)
            .checked_mul(stride)
            .and_then(|span| span.checked_add(reach))
        {
            Some(next) => reach = next,
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Device;

    /// Every start alignment and length around the vector and line sizes:
    /// exactly the elements asked for are written, by the dispatched copy
    /// and by each line kernel the CPU can run.
    #[test]
    fn streamed_copies_write_exactly_their_elements() {
        type Copy = unsafe fn(&[u8], *mut u8);
        let mut copies: Vec<(&str, Copy)> = vec![("dispatched", stream_copy::<u8>)];
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY (both): the caller's contract of `stream_copy`.
            copies.push(("sse2", |v, d| unsafe {
                stream_lines_sse2(v.as_ptr(), d, v.len())
            }));
            if std::arch::is_x86_feature_detected!("avx512f") {
                // The CPU has AVX-512F (checked above).
                copies.push(("avx512", |v, d| unsafe {
                    stream_lines_avx512(v.as_ptr(), d, v.len())
                }));
            }
        }
        let src: Vec<u8> = (0..400u32).map(|i| (i * 7 + 1) as u8).collect();
        for (name, copy) in copies {
            for start in 0..70 {
                for len in [0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 200, 256, 300] {
                    let mut dst = vec![0u8; 400];
                    // SAFETY: `start + len` <= 370 < 400; the buffers are
                    // distinct and no other thread sees them.
                    unsafe { copy(&src[..len], dst.as_mut_ptr().add(start)) };
                    fence_streamed_stores();
                    let at = format!("{name} {start}+{len}");
                    assert!(dst[..start].iter().all(|&b| b == 0), "{at}");
                    assert_eq!(&dst[start..start + len], &src[..len], "{at}");
                    assert!(dst[start + len..].iter().all(|&b| b == 0), "{at}");
                }
            }
        }
    }

    #[test]
    fn plain_stores_need_the_sole_view_of_a_non_overlapping_layout() {
        let device = Device::host();
        let mut alone = device.zeros::<f32>([4, 8]).unwrap();
        let mut view = TensorWrite::new(&mut alone).unwrap();
        // SAFETY: nothing stores through the view.
        assert!(unsafe { view.allow_plain_stores() });
        drop(view);

        let base = device.zeros::<f32>([4, 8]).unwrap();
        let mut shared = base.narrow(0, 0, 2).unwrap();
        let mut view = TensorWrite::new(&mut shared).unwrap();
        // SAFETY: as above.
        assert!(!unsafe { view.allow_plain_stores() }, "base shares it");
        drop(view);
        drop(base);
        let mut view = TensorWrite::new(&mut shared).unwrap();
        // SAFETY: as above.
        assert!(unsafe { view.allow_plain_stores() }, "now alone");
        drop(view);

        let mut repeated = shared.strided([3, 8], &[0, 1], 0).unwrap();
        drop(shared);
        let mut view = TensorWrite::new(&mut repeated).unwrap();
        // SAFETY: as above.
        assert!(!unsafe { view.allow_plain_stores() }, "rows overlap");
    }

    #[test]
    fn overlap_check_follows_the_strides() {
        let device = Device::host();
        let t = device.zeros::<f32>([6, 8]).unwrap();
        let cases: [(&[usize], &[usize], bool); 5] = [
            (&[6, 8], &[8, 1], true),
            (&[8, 6], &[1, 8], true),
            (&[3, 4], &[8, 2], true),
            (&[3, 4], &[3, 1], false),
            (&[1, 5, 1], &[0, 1, 0], true),
        ];
        for (shape, strides, expected) in cases {
            let view = t.strided(shape.to_vec(), strides, 0).unwrap();
            assert_eq!(
                layout_does_not_overlap(&view),
                expected,
                "{shape:?} {strides:?}"
            );
        }
    }
}
