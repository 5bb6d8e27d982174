//! Per-thread reuse of tile storage: a dropped [`Tile`](super::Tile)
//! hands its buffer to its thread's free list, and the next tile of a
//! fitting size on that thread takes it back, so a program's loop (and the
//! next program on the same pool worker) allocates nothing once warm.
//!
//! Buffers are kept by byte size and alignment: a buffer goes back out
//! only as a `Vec<T>` whose layout (`capacity * size_of::<T>()` bytes at
//! `align_of::<T>()`) is exactly the one it was allocated with, which is
//! what `Vec::from_raw_parts` requires. The list is bounded
//! ([`MAX_BUFFERS`], [`MAX_BYTES`]); past that a returned buffer is freed.
//! Taking picks the smallest buffer that fits, so a large accumulator's
//! storage is not spent on a small reduction result.

use std::alloc::Layout;
use std::cell::RefCell;
use std::ptr::NonNull;

/// Buffers a thread keeps.
pub const MAX_BUFFERS: usize = 32;
/// Bytes a thread keeps in all.
pub const MAX_BYTES: usize = 64 << 20;

struct Buffer {
    ptr: NonNull<u8>,
    bytes: usize,
    align: usize,
}

#[derive(Default)]
struct FreeList {
    buffers: Vec<Buffer>,
    bytes: usize,
}

impl Drop for FreeList {
    fn drop(&mut self) {
        for buffer in self.buffers.drain(..) {
            free(buffer);
        }
    }
}

fn free(buffer: Buffer) {
    // SAFETY: the buffer came from a `Vec` with exactly this layout (see
    // `give`), through the global allocator `Vec` uses.
    unsafe {
        std::alloc::dealloc(
            buffer.ptr.as_ptr(),
            Layout::from_size_align_unchecked(buffer.bytes, buffer.align),
        )
    }
}

thread_local! {
    static FREE: RefCell<FreeList> = RefCell::new(FreeList::default());
}

/// An empty `Vec<T>` with room for at least `len` elements, reusing a
/// buffer of this thread when one fits.
#[inline]
pub fn take<T: Copy>(len: usize) -> Vec<T> {
    let size = size_of::<T>();
    let align = align_of::<T>();
    let wanted = len.saturating_mul(size);
    if size == 0 || wanted == 0 {
        return Vec::with_capacity(len);
    }
    let found = FREE
        .try_with(|list| {
            let mut list = list.try_borrow_mut().ok()?;
            let best = list
                .buffers
                .iter()
                .enumerate()
                .filter(|(_, b)| {
                    b.align == align && b.bytes >= wanted && b.bytes.is_multiple_of(size)
                })
                .min_by_key(|(_, b)| b.bytes)
                .map(|(i, _)| i)?;
            let buffer = list.buffers.swap_remove(best);
            list.bytes -= buffer.bytes;
            Some(buffer)
        })
        .ok()
        .flatten();
    match found {
        // SAFETY: the buffer was a `Vec<U>` allocation of `bytes` bytes at
        // `align` (`give`), with `align == align_of::<T>()` and `bytes` a
        // multiple of `size_of::<T>()`, so it is exactly the allocation of a
        // `Vec<T>` of capacity `bytes / size`. Length 0: nothing to drop or
        // read uninitialized.
        Some(buffer) => unsafe {
            Vec::from_raw_parts(buffer.ptr.as_ptr().cast::<T>(), 0, buffer.bytes / size)
        },
        None => Vec::with_capacity(len),
    }
}

/// A `Vec<T>` of `len` copies of `value` on reused storage.
#[inline]
pub fn filled<T: Copy>(len: usize, value: T) -> Vec<T> {
    let mut data = take(len);
    data.resize(len, value);
    data
}

/// Hands `data`'s buffer to this thread's free list (or frees it when the
/// list is full or the elements need dropping).
#[inline]
pub fn give<T>(data: Vec<T>) {
    let bytes = data.capacity().saturating_mul(size_of::<T>());
    if std::mem::needs_drop::<T>() || bytes == 0 {
        return;
    }
    let mut data = std::mem::ManuallyDrop::new(data);
    let Some(ptr) = NonNull::new(data.as_mut_ptr().cast::<u8>()) else {
        std::mem::ManuallyDrop::into_inner(data);
        return;
    };
    let buffer = Buffer {
        ptr,
        bytes,
        align: align_of::<T>(),
    };
    let refused = FREE
        .try_with(|list| {
            let Ok(mut list) = list.try_borrow_mut() else {
                return Some(buffer);
            };
            if list.buffers.len() >= MAX_BUFFERS || list.bytes + bytes > MAX_BYTES {
                return Some(buffer);
            }
            list.bytes += bytes;
            list.buffers.push(buffer);
            None
        })
        // The thread is exiting: its list is gone, free the buffer here.
        .unwrap_or(Some(Buffer {
            ptr,
            bytes,
            align: align_of::<T>(),
        }));
    if let Some(buffer) = refused {
        free(buffer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_returned_buffer_is_reused_with_its_layout() {
        let mut first = take::<f32>(1000);
        first.extend((0..1000).map(|i| i as f32));
        let ptr = first.as_ptr() as usize;
        give(first);
        let again = take::<f32>(900);
        assert_eq!(again.as_ptr() as usize, ptr, "best fit reuses the buffer");
        assert!(again.is_empty() && again.capacity() >= 1000);
        // Another element type of the same alignment reads the bytes anew.
        give(again);
        let as_u32 = take::<u32>(1000);
        assert_eq!(as_u32.as_ptr() as usize, ptr);
        // A wider alignment never gets it.
        give(as_u32);
        let wide = take::<f64>(10);
        assert_ne!(wide.as_ptr() as usize, ptr);
        let filled = filled(5, 2.5f32);
        assert_eq!(filled, vec![2.5; 5]);
    }

    #[test]
    fn the_list_is_bounded() {
        let held: Vec<Vec<u8>> = (0..MAX_BUFFERS + 8).map(|_| take::<u8>(64)).collect();
        for v in held {
            give(v);
        }
        FREE.with(|list| {
            let list = list.borrow();
            assert!(list.buffers.len() <= MAX_BUFFERS);
            assert!(list.bytes <= MAX_BYTES);
        });
        give(Vec::<u8>::with_capacity(MAX_BYTES + 1));
        FREE.with(|list| assert!(list.borrow().bytes <= MAX_BYTES));
    }
}
