//! Host memory: 64-byte aligned buffers that every access reaches through
//! element-width atomics.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};

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

/// One cache line of a host buffer: 64-byte aligned, so a buffer starts on
/// a cache line (and on an AVX-512 vector) and any element type's atomics
/// are aligned at every element boundary.
#[repr(C, align(64))]
#[derive(Default)]
struct Line([AtomicU64; LINE_BYTES / 8]);

/// Bytes per [`Line`].
const LINE_BYTES: usize = 64;

/// A host allocation, 64-byte aligned.
///
/// Plain (non-atomic, vectorizable) reads are allowed only between
/// [`HostBuffer::try_begin_plain_read`] and [`HostBuffer::end_plain_read`],
/// and every write to the buffer after its creation happens between
/// [`HostBuffer::begin_write`] and [`HostBuffer::end_write`]. The two
/// exclude each other (a plain reader is refused while a writer is in, a
/// writer waits until the plain readers are out), so a plain read never
/// races with a write: the only accesses that may race are atomic ones.
///
/// The words are `AtomicU64` only for their `UnsafeCell` and alignment:
/// element accesses cast the base pointer to `*mut T` and go through
/// `Element::{load,store}_relaxed`, never through the `u64` words, so all
/// accesses to one element have the same width.
pub(crate) struct HostBuffer {
    lines: Box<[Line]>,
    len_bytes: usize,
    /// Launches reading the buffer with plain loads right now.
    plain_readers: AtomicUsize,
    /// Writers (launches, copies) in or waiting to get in.
    writers: AtomicUsize,
}

impl HostBuffer {
    /// A zero-filled buffer. All-zero bytes are a valid value of every
    /// element type (`false`, `0`, `+0.0`).
    pub(crate) fn zeroed(len_bytes: usize) -> HostBuffer {
        let lines = (0..len_bytes.div_ceil(LINE_BYTES))
            .map(|_| Line::default())
            .collect();
        HostBuffer {
            lines,
            len_bytes,
            plain_readers: AtomicUsize::new(0),
            writers: AtomicUsize::new(0),
        }
    }

    /// Enters as a plain reader unless a writer is in or waiting; false
    /// (and nothing to undo) when refused, and the caller reads atomically.
    ///
    /// Both sides announce themselves first and then look at the other
    /// (sequentially consistent), so of a reader and a writer arriving
    /// together at least one sees the other: the reader backs out or the
    /// writer waits.
    pub(crate) fn try_begin_plain_read(&self) -> bool {
        self.plain_readers.fetch_add(1, SeqCst);
        if self.writers.load(SeqCst) == 0 {
            true
        } else {
            self.plain_readers.fetch_sub(1, SeqCst);
            false
        }
    }

    /// Leaves after a successful [`HostBuffer::try_begin_plain_read`].
    pub(crate) fn end_plain_read(&self) {
        self.plain_readers.fetch_sub(1, SeqCst);
    }

    /// Enters as a writer, waiting while plain readers are in: it spins a
    /// little, then yields its core. The readers are launches that finish
    /// without the writer's help, with one exception: a launch made from
    /// inside a program (which runs on that program's thread) that writes
    /// a tensor another thread's launch reads, while that other launch
    /// waits for the pool the outer launch holds, waits forever. Kernels
    /// cannot launch kernels; only hand-written pool tasks could do this.
    pub(crate) fn begin_write(&self) {
        self.writers.fetch_add(1, SeqCst);
        let mut spins = 0u32;
        while self.plain_readers.load(SeqCst) != 0 {
            spins = spins.saturating_add(1);
            if spins < 1 << 10 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// Leaves after [`HostBuffer::begin_write`].
    pub(crate) fn end_write(&self) {
        self.writers.fetch_sub(1, SeqCst);
    }

    /// Size in bytes.
    pub(crate) fn len_bytes(&self) -> usize {
        self.len_bytes
    }

    /// Base pointer. Writes through it are allowed because the words live in
    /// `UnsafeCell`s.
    pub(crate) fn base_ptr(&self) -> *mut u8 {
        self.lines.as_ptr().cast::<u8>().cast_mut()
    }
}

impl std::fmt::Debug for HostBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostBuffer")
            .field("len_bytes", &self.len_bytes)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_start_on_a_cache_line() {
        for len_bytes in [1, 63, 64, 65, 4096 + 4] {
            let buffer = HostBuffer::zeroed(len_bytes);
            assert_eq!(buffer.base_ptr() as usize % LINE_BYTES, 0);
            assert_eq!(buffer.len_bytes(), len_bytes);
        }
    }

    #[test]
    fn plain_readers_and_writers_exclude_each_other() {
        let buffer = HostBuffer::zeroed(64);
        assert!(buffer.try_begin_plain_read());
        assert!(buffer.try_begin_plain_read());
        buffer.end_plain_read();
        buffer.end_plain_read();
        buffer.begin_write();
        assert!(!buffer.try_begin_plain_read());
        buffer.end_write();
        assert!(buffer.try_begin_plain_read());
        // A writer waits for the reader to leave.
        let left = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                buffer.begin_write();
                assert!(left.load(SeqCst));
                buffer.end_write();
            });
            std::thread::sleep(std::time::Duration::from_millis(20));
            left.store(true, SeqCst);
            buffer.end_plain_read();
        });
    }
}
