//! The owned memory of a host buffer: zeroed cache lines from the global
//! allocator. Every allocation starts on a cache line; one of at least
//! [`HUGE_PAGE_BYTES`] starts on a 2 MiB boundary, spans whole 2 MiB
//! pages, and is marked for transparent huge pages before its first
//! touch. A gemm over 16 MiB operands walks its tiles with large strides:
//! on 4 KiB pages most of those loads missed the TLB (2048^3 f32 ran 25%
//! faster with malloc's huge pages turned on by `GLIBC_TUNABLES`).

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::AtomicU64;

/// One cache line of a host buffer: 64-byte aligned, so a buffer starts on
/// a cache line (and on an AVX-512 vector) and any element type's atomics
/// are aligned at every element boundary.
#[repr(C, align(64))]
pub(super) struct Line([AtomicU64; LINE_BYTES / 8]);

/// Bytes per [`Line`].
pub(super) const LINE_BYTES: usize = 64;

/// Buffers from this size up are aligned to, and rounded up to, this many
/// bytes: the size of an x86-64 (and common aarch64) huge page.
pub(super) const HUGE_PAGE_BYTES: usize = 2 << 20;

/// Zeroed [`Line`]s owned by a host buffer, freed on drop. Empty (no
/// allocation, a dangling aligned pointer) when asked for zero bytes.
pub(super) struct Lines {
    ptr: NonNull<Line>,
    /// What `ptr` was allocated with; `None` for the empty, unallocated case.
    layout: Option<Layout>,
}

// SAFETY: `Lines` owns its allocation outright (no other handle to it
// exists), and its contents are atomics, which are `Send + Sync`.
unsafe impl Send for Lines {}
// SAFETY: as for `Send`; shared access only ever goes through the atomics'
// `UnsafeCell`s (the buffer's access protocol).
unsafe impl Sync for Lines {}

impl Lines {
    /// No memory: the lines of a borrowed buffer or of a zero-byte one.
    pub(super) fn empty() -> Lines {
        Lines {
            ptr: NonNull::dangling(),
            layout: None,
        }
    }

    /// At least `len_bytes` zero bytes. `None` when that size cannot be
    /// allocated at all (it exceeds `isize::MAX` once rounded up); an
    /// allocator out of memory aborts, as a `Box` would.
    pub(super) fn zeroed(len_bytes: usize) -> Option<Lines> {
        if len_bytes == 0 {
            return Some(Lines::empty());
        }
        let line_bytes = len_bytes.checked_next_multiple_of(LINE_BYTES)?;
        let layout = if line_bytes >= HUGE_PAGE_BYTES {
            let size = line_bytes.checked_next_multiple_of(HUGE_PAGE_BYTES)?;
            Layout::from_size_align(size, HUGE_PAGE_BYTES).ok()?
        } else {
            Layout::from_size_align(line_bytes, LINE_BYTES).ok()?
        };
        // SAFETY: `layout` has a non-zero size.
        let raw = unsafe { std::alloc::alloc(layout) };
        let Some(ptr) = NonNull::new(raw.cast::<Line>()) else {
            std::alloc::handle_alloc_error(layout)
        };
        if layout.align() == HUGE_PAGE_BYTES {
            advise_huge_pages(raw, layout.size());
        }
        // Zeroing is also the first touch, so (after the advice) it is what
        // faults the huge pages in. Only the lines the buffer uses are
        // written; the rest of the last huge page is never read.
        // SAFETY: `raw` is valid for `layout.size() >= line_bytes` bytes,
        // and all-zero bytes are a valid `AtomicU64`.
        unsafe { raw.write_bytes(0, line_bytes) };
        Some(Lines {
            ptr,
            layout: Some(layout),
        })
    }

    /// The first byte.
    pub(super) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr().cast::<u8>()
    }

    /// Bytes allocated (0 when empty).
    #[cfg(test)]
    pub(super) fn capacity_bytes(&self) -> usize {
        self.layout.map_or(0, |layout| layout.size())
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        if let Some(layout) = self.layout {
            // SAFETY: `ptr` came from `alloc(layout)` and is freed once.
            unsafe { std::alloc::dealloc(self.as_ptr(), layout) };
        }
    }
}

/// Asks Linux to back `len` bytes at `start` (2 MiB aligned, whole 2 MiB
/// pages) with transparent huge pages, which the usual `madvise` mode of
/// THP only does for ranges so marked. Only a hint: where it fails (THP
/// off, an old kernel) the memory stays on normal pages.
#[cfg(target_os = "linux")]
fn advise_huge_pages(start: *mut u8, len: usize) {
    // SAFETY: the range is one allocation this buffer owns, page aligned;
    // MADV_HUGEPAGE changes how pages are backed, never their contents.
    let _ = unsafe { libc::madvise(start.cast::<libc::c_void>(), len, libc::MADV_HUGEPAGE) };
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_start: *mut u8, _len: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_zeroed_and_aligned_for_their_size() {
        for len_bytes in [
            1,
            63,
            64,
            65,
            4100,
            HUGE_PAGE_BYTES - 64,
            HUGE_PAGE_BYTES - 1,
        ] {
            let lines = Lines::zeroed(len_bytes).unwrap();
            assert_eq!(lines.as_ptr() as usize % LINE_BYTES, 0, "{len_bytes}");
            assert_eq!(
                lines.capacity_bytes(),
                len_bytes.next_multiple_of(LINE_BYTES)
            );
            // SAFETY: the allocation holds at least `len_bytes` initialized bytes.
            let bytes = unsafe { std::slice::from_raw_parts(lines.as_ptr(), len_bytes) };
            assert!(bytes.iter().all(|&b| b == 0), "{len_bytes}");
        }
        for len_bytes in [
            HUGE_PAGE_BYTES,
            HUGE_PAGE_BYTES + 1,
            3 * HUGE_PAGE_BYTES + 100,
        ] {
            let lines = Lines::zeroed(len_bytes).unwrap();
            assert_eq!(lines.as_ptr() as usize % HUGE_PAGE_BYTES, 0, "{len_bytes}");
            assert_eq!(
                lines.capacity_bytes(),
                len_bytes.next_multiple_of(HUGE_PAGE_BYTES)
            );
            // SAFETY: as above.
            let bytes = unsafe { std::slice::from_raw_parts(lines.as_ptr(), len_bytes) };
            assert!(bytes.iter().all(|&b| b == 0), "{len_bytes}");
        }
    }

    #[test]
    fn zero_bytes_allocate_nothing_and_impossible_sizes_are_refused() {
        let lines = Lines::zeroed(0).unwrap();
        assert_eq!(lines.capacity_bytes(), 0);
        assert_eq!(lines.as_ptr() as usize % LINE_BYTES, 0);
        assert!(Lines::zeroed(usize::MAX).is_none());
        assert!(Lines::zeroed(isize::MAX as usize).is_none());
    }

    #[test]
    fn reused_memory_comes_back_zeroed() {
        // Dirty an allocation of each class, free it, and allocate the same
        // size again: the allocator likely hands back the same block.
        for len_bytes in [4096, 3 * HUGE_PAGE_BYTES] {
            let lines = Lines::zeroed(len_bytes).unwrap();
            // SAFETY: the allocation is `len_bytes` long and only ours.
            unsafe { lines.as_ptr().write_bytes(0xa5, len_bytes) };
            drop(lines);
            let lines = Lines::zeroed(len_bytes).unwrap();
            // SAFETY: as above.
            let bytes = unsafe { std::slice::from_raw_parts(lines.as_ptr(), len_bytes) };
            assert!(bytes.iter().all(|&b| b == 0));
        }
    }
}
