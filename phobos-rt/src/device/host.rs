//! Host memory: buffers that every access reaches through element-width
//! atomics.

use std::sync::atomic::AtomicU64;

use crate::Result;
use crate::pool::{self, Graph, Recorder};

/// The host backend (the CPU). Its thread pool is the process-wide
/// [`pool::global`], started on first use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostDevice;

impl HostDevice {
    /// Threads a launch runs on (`PHOBOS_THREADS`, default: physical cores).
    pub fn threads(&self) -> usize {
        pool::global().threads()
    }

    /// Records the launches `build` makes on the [`Recorder`] into a
    /// [`Graph`] that [`Graph::replay`] runs with one wake-up of the pool.
    /// Nothing runs while recording.
    ///
    /// ```
    /// # fn main() -> phobos_rt::Result<()> {
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// let counter = AtomicU32::new(0);
    /// let graph = phobos_rt::HostDevice.record(|rec| {
    ///     rec.launch([8, 1, 1], |_| Ok(drop(counter.fetch_add(1, Ordering::Relaxed))))?;
    ///     rec.launch([1, 1, 1], |_| Ok(drop(counter.fetch_add(100, Ordering::Relaxed))))
    /// })?;
    /// graph.replay()?;
    /// graph.replay()?;
    /// assert_eq!(counter.load(Ordering::Relaxed), 216);
    /// # Ok(())
    /// # }
    /// ```
    pub fn record<'a>(
        &self,
        build: impl FnOnce(&mut Recorder<'a>) -> Result<()>,
    ) -> Result<Graph<'a>> {
        let mut recorder = Recorder::new();
        build(&mut recorder)?;
        Ok(recorder.finish())
    }
}

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
