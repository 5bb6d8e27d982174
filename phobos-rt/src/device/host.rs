//! Host memory: 64-byte aligned buffers that every access reaches through
//! element-width atomics.

use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Release, Ordering::SeqCst};

#[cfg(test)]
use super::host_lines::LINE_BYTES;
use super::host_lines::Lines;

use crate::pool::{self, Graph, Recorder};
use crate::{Error, Result};

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

/// Host memory for tensors: an allocation of its own ([`Lines`]: 64-byte
/// aligned, huge-page backed from 2 MiB up), or the caller's slice lent for a [`HostDevice::with_borrowed`] scope.
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
///
/// Borrowed memory ([`BufferKind`]): a read-only buffer (over `&[T]`)
/// refuses every writer ([`HostBuffer::begin_write`] is an error), so it
/// never has one and every read of it is plain (atomics need memory valid
/// for writes). A writable one (over `&mut [T]`) is accessed like an owned
/// allocation. Both only ever hold elements of the `T` they were lent as.
pub(crate) struct HostBuffer {
    /// The owned memory ([`Lines`]); empty when borrowed.
    lines: Lines,
    /// The caller's first byte when borrowed.
    borrowed_base: Option<NonNull<u8>>,
    kind: BufferKind,
    len_bytes: usize,
    /// Launches reading the buffer with plain loads right now.
    plain_readers: AtomicUsize,
    /// Writers (launches, copies) in or waiting to get in.
    writers: AtomicUsize,
    /// Set to true when the buffer drops (`with_borrowed` watches its
    /// output's).
    on_drop: Option<Arc<AtomicBool>>,
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        if let Some(flag) = &self.on_drop {
            flag.store(true, Release);
        }
    }
}

/// Whose memory a [`HostBuffer`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BufferKind {
    /// Allocated by the buffer, freed with it.
    Owned,
    /// The caller's `&[T]`: read only, with plain loads.
    BorrowedRead,
    /// The caller's `&mut [T]`.
    BorrowedWrite,
}

// SAFETY: the buffer is its bytes plus atomics. Owned bytes live in `lines`
// (atomics, `Send + Sync`) and `base` points into them. Borrowed bytes are
// elements of an `Element` type (`Send + Sync` primitives) lent by a
// `with_borrowed` scope, which outlives every tensor over them (it aborts
// rather than return while one could remain). Every access from any thread
// follows the plain-reader / writer protocol above.
unsafe impl Send for HostBuffer {}
// SAFETY: as for `Send`.
unsafe impl Sync for HostBuffer {}

impl HostBuffer {
    /// A zero-filled buffer. All-zero bytes are a valid value of every
    /// element type (`false`, `0`, `+0.0`). `None` when `len_bytes` is
    /// more than one allocation can hold.
    pub(crate) fn zeroed(len_bytes: usize) -> Option<HostBuffer> {
        Some(HostBuffer {
            lines: Lines::zeroed(len_bytes)?,
            borrowed_base: None,
            kind: BufferKind::Owned,
            len_bytes,
            plain_readers: AtomicUsize::new(0),
            writers: AtomicUsize::new(0),
            on_drop: None,
        })
    }

    /// A read-only buffer over the caller's elements.
    ///
    /// # Safety
    /// `data` must stay valid for reads, and written by nobody, for as
    /// long as the buffer lives.
    pub(crate) unsafe fn borrowed_read<T: crate::Element>(data: &[T]) -> HostBuffer {
        HostBuffer::borrowed(
            NonNull::from(data).cast::<u8>(),
            size_of_val(data),
            BufferKind::BorrowedRead,
        )
    }

    /// A writable buffer over the caller's elements.
    ///
    /// # Safety
    /// `data` must stay valid for reads and writes, and reached only
    /// through this buffer, for as long as the buffer lives.
    pub(crate) unsafe fn borrowed_write<T: crate::Element>(data: &mut [T]) -> HostBuffer {
        let len_bytes = size_of_val(data);
        HostBuffer::borrowed(
            NonNull::from(data).cast::<u8>(),
            len_bytes,
            BufferKind::BorrowedWrite,
        )
    }

    fn borrowed(base: NonNull<u8>, len_bytes: usize, kind: BufferKind) -> HostBuffer {
        HostBuffer {
            lines: Lines::empty(),
            borrowed_base: Some(base),
            kind,
            len_bytes,
            plain_readers: AtomicUsize::new(0),
            writers: AtomicUsize::new(0),
            on_drop: None,
        }
    }

    /// The buffer, setting `flag` when it drops.
    pub(crate) fn reporting_drop_to(mut self, flag: Arc<AtomicBool>) -> HostBuffer {
        self.on_drop = Some(flag);
        self
    }

    /// Whose memory this is.
    pub(crate) fn kind(&self) -> BufferKind {
        self.kind
    }

    /// True for a read-only borrowed buffer: no writer ever enters it, so
    /// all its reads are plain.
    pub(crate) fn is_read_only(&self) -> bool {
        self.kind == BufferKind::BorrowedRead
    }

    /// Enters as a plain reader unless a writer is in or waiting; false
    /// (and nothing to undo) when refused, and the caller reads atomically.
    /// Never refused on a read-only buffer (it has no writers).
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
    ///
    /// A read-only borrowed buffer refuses (`Error::Borrowed`, naming
    /// `op`), and nothing is to undo.
    pub(crate) fn begin_write(&self, op: &'static str) -> Result<()> {
        self.check_writable(op)?;
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
        Ok(())
    }

    /// `Error::Borrowed` for a read-only borrowed buffer.
    pub(crate) fn check_writable(&self, op: &'static str) -> Result<()> {
        if self.is_read_only() {
            return Err(Error::Borrowed {
                op,
                reason: "it is the read-only input of `with_borrowed` and cannot be written",
            });
        }
        Ok(())
    }

    /// Leaves after [`HostBuffer::begin_write`].
    pub(crate) fn end_write(&self) {
        self.writers.fetch_sub(1, SeqCst);
    }

    /// Size in bytes.
    pub(crate) fn len_bytes(&self) -> usize {
        self.len_bytes
    }

    /// Base pointer. Writes through it are allowed, under the protocol,
    /// because owned words live in `UnsafeCell`s and writable borrowed
    /// memory came from `&mut`; never through a read-only buffer's.
    pub(crate) fn base_ptr(&self) -> *mut u8 {
        match self.borrowed_base {
            Some(base) => base.as_ptr(),
            None => self.lines.as_ptr(),
        }
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
            let buffer = HostBuffer::zeroed(len_bytes).unwrap();
            assert_eq!(buffer.base_ptr() as usize % LINE_BYTES, 0);
            assert_eq!(buffer.len_bytes(), len_bytes);
        }
    }

    #[test]
    fn plain_readers_and_writers_exclude_each_other() {
        let buffer = HostBuffer::zeroed(64).unwrap();
        assert!(buffer.try_begin_plain_read());
        assert!(buffer.try_begin_plain_read());
        buffer.end_plain_read();
        buffer.end_plain_read();
        buffer.begin_write("test").unwrap();
        assert!(!buffer.try_begin_plain_read());
        buffer.end_write();
        assert!(buffer.try_begin_plain_read());
        // A writer waits for the reader to leave.
        let left = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                buffer.begin_write("test").unwrap();
                assert!(left.load(SeqCst));
                buffer.end_write();
            });
            std::thread::sleep(std::time::Duration::from_millis(20));
            left.store(true, SeqCst);
            buffer.end_plain_read();
        });
    }
}
