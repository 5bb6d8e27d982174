//! Host memory: buffers that every access reaches through element-width
//! atomics.

use std::sync::atomic::AtomicU64;

/// The host backend (the CPU). Stateless: its thread pool is rayon's global one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostDevice;

/// A host allocation, 8-byte aligned so that any element type's atomics are
/// aligned at every element boundary.
///
/// The words are `AtomicU64` only for their `UnsafeCell` and alignment:
/// element accesses cast the base pointer to `*mut T` and go through
/// `Element::{load,store}_relaxed`, never through the `u64` words, so all
/// accesses to one element have the same width.
pub(crate) struct HostBuffer {
    words: Box<[AtomicU64]>,
    len_bytes: usize,
}

impl HostBuffer {
    /// A zero-filled buffer. All-zero bytes are a valid value of every
    /// element type (`false`, `0`, `+0.0`).
    pub(crate) fn zeroed(len_bytes: usize) -> HostBuffer {
        let words = (0..len_bytes.div_ceil(8))
            .map(|_| AtomicU64::new(0))
            .collect();
        HostBuffer { words, len_bytes }
    }

    /// Size in bytes.
    pub(crate) fn len_bytes(&self) -> usize {
        self.len_bytes
    }

    /// Base pointer. Writes through it are allowed because the words live in
    /// `UnsafeCell`s.
    pub(crate) fn base_ptr(&self) -> *mut u8 {
        self.words.as_ptr().cast::<u8>().cast_mut()
    }
}

impl std::fmt::Debug for HostBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostBuffer")
            .field("len_bytes", &self.len_bytes)
            .finish_non_exhaustive()
    }
}
