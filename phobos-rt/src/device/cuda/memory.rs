//! Device buffers (RAII, through the arena) and host<->device copies.
//!
//! Copies above [`PINNED_THRESHOLD_BYTES`] go through a pinned staging
//! buffer in chunks: the driver copies pageable memory through its own
//! small staging anyway, slower and with a full stream sync per call.

use std::ffi::c_void;

use cudarc::driver::{result, sys};

use super::arena::size_class;
use super::open::driver_error;
use super::{CudaDevice, poisoned};
use crate::{Error, Result};

/// Copies at least this large are staged through pinned memory.
pub const PINNED_THRESHOLD_BYTES: usize = 1 << 20;
/// Size of the pinned staging buffer (one per device).
const STAGING_BYTES: usize = 16 << 20;

/// Device memory owned by a tensor's storage; back to the arena on drop.
pub(crate) struct CudaBuffer {
    device: CudaDevice,
    ptr: u64,
    len_bytes: usize,
    class_bytes: usize,
}

impl CudaBuffer {
    pub(crate) fn device(&self) -> &CudaDevice {
        &self.device
    }

    pub(crate) fn len_bytes(&self) -> usize {
        self.len_bytes
    }

    /// Device address of byte 0.
    pub(crate) fn device_ptr(&self) -> u64 {
        self.ptr
    }

    /// Copies `data` to bytes `offset..offset + data.len()`.
    pub(crate) fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.check_range(offset, data.len())?;
        self.device.upload(self.ptr + offset as u64, data)
    }

    /// Copies bytes `offset..offset + out.len()` into `out` (waits for
    /// queued work first: the stream orders the copy after it).
    pub(crate) fn read(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.check_range(offset, out.len())?;
        self.device.download(self.ptr + offset as u64, out)
    }

    fn check_range(&self, offset: usize, len: usize) -> Result<()> {
        if offset
            .checked_add(len)
            .is_none_or(|end| end > self.len_bytes)
        {
            return Err(Error::Backend {
                backend: "cuda",
                message: format!(
                    "copy of {len} bytes at {offset} outside a {}-byte buffer",
                    self.len_bytes
                ),
            });
        }
        Ok(())
    }
}

impl Drop for CudaBuffer {
    fn drop(&mut self) {
        self.device.release(self.ptr, self.class_bytes);
    }
}

impl std::fmt::Debug for CudaBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBuffer")
            .field("len_bytes", &self.len_bytes)
            .field("device", &self.device.info().ordinal)
            .finish_non_exhaustive()
    }
}

/// Page-locked host memory for staging copies.
pub(super) struct Pinned {
    ptr: *mut u8,
    len_bytes: usize,
}

// SAFETY: the pointer is owned (no aliasing) and only used under the
// device's staging lock.
unsafe impl Send for Pinned {}

impl Pinned {
    fn new(len_bytes: usize) -> Result<Pinned> {
        // SAFETY: allocates; the context is bound by the caller.
        let ptr = unsafe { result::malloc_host(len_bytes, 0) }
            .map_err(|e| driver_error("cuMemHostAlloc", e))?;
        Ok(Pinned {
            ptr: ptr.cast(),
            len_bytes,
        })
    }

    fn slice_mut(&mut self, len: usize) -> &mut [u8] {
        // SAFETY: `ptr` is a live allocation of `len_bytes` >= `len` bytes
        // that only this value refers to.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, len.min(self.len_bytes)) }
    }

    pub(super) fn free(self) {
        // SAFETY: allocated by cuMemHostAlloc, freed once (consumes self).
        let _ = unsafe { result::free_host(self.ptr.cast::<c_void>()) };
    }
}

impl CudaDevice {
    /// A zero-filled device buffer of `len_bytes` (from the arena when a
    /// block of its class is free).
    pub(crate) fn alloc_zeroed(&self, len_bytes: usize) -> Result<CudaBuffer> {
        self.bind()?;
        let class_bytes = size_class(len_bytes);
        let cached = self
            .inner
            .arena
            .lock()
            .map_err(|_| poisoned())?
            .take(class_bytes);
        let ptr = match cached {
            Some(ptr) => ptr,
            None => self.alloc_fresh(class_bytes)?,
        };
        let buffer = CudaBuffer {
            device: self.clone(),
            ptr,
            len_bytes,
            class_bytes,
        };
        // SAFETY: `ptr` is a live block of `class_bytes` >= `len_bytes`.
        unsafe { sys::cuMemsetD8Async(ptr, 0, class_bytes, self.stream()) }
            .result()
            .map_err(|e| driver_error("cuMemsetD8Async", e))?;
        Ok(buffer)
    }

    /// A new block; on out-of-memory frees the arena's cache and retries.
    fn alloc_fresh(&self, class_bytes: usize) -> Result<u64> {
        // SAFETY: plain allocation on the bound context.
        match unsafe { result::malloc_sync(class_bytes) } {
            Ok(ptr) => Ok(ptr),
            Err(err) if err.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                self.trim()?;
                // SAFETY: as above.
                unsafe { result::malloc_sync(class_bytes) }
                    .map_err(|e| driver_error(&format!("cuMemAlloc of {class_bytes} bytes"), e))
            }
            Err(err) => Err(driver_error("cuMemAlloc", err)),
        }
    }

    /// Frees every cached block (after the stream is idle).
    pub fn trim(&self) -> Result<()> {
        self.synchronize()?;
        let mut arena = self.inner.arena.lock().map_err(|_| poisoned())?;
        tracing::debug!(
            cached_bytes = arena.cached_bytes(),
            "freeing the device arena's cache"
        );
        let blocks = arena.drain();
        drop(arena);
        for ptr in blocks {
            // SAFETY: cached blocks are unused allocations of this context.
            unsafe { result::free_sync(ptr) }.map_err(|e| driver_error("cuMemFree", e))?;
        }
        Ok(())
    }

    /// A block back to the arena. Reuse is safe without a sync: later work
    /// on the one stream runs after the work that used it.
    fn release(&self, ptr: u64, class_bytes: usize) {
        let Ok(mut arena) = self.inner.arena.lock() else {
            return;
        };
        let evicted = arena.give(ptr, class_bytes);
        drop(arena);
        if evicted.is_empty() || self.synchronize().is_err() {
            return;
        }
        for block in evicted {
            // SAFETY: evicted blocks are unused allocations of this context.
            if let Err(err) = unsafe { result::free_sync(block) } {
                tracing::warn!(%err, "cuMemFree failed");
            }
        }
    }

    /// Host bytes to device address `dst`; returns once the copy is done.
    fn upload(&self, dst: u64, data: &[u8]) -> Result<()> {
        self.bind()?;
        if data.len() < PINNED_THRESHOLD_BYTES {
            // SAFETY: `dst..dst + len` is inside a live buffer (checked by
            // the caller); the stream sync below keeps `data` borrowed
            // until the driver has read it.
            unsafe { result::memcpy_htod_async(dst, data, self.stream()) }
                .map_err(|e| driver_error("cuMemcpyHtoDAsync", e))?;
            return self.synchronize();
        }
        let mut staging = self.inner.staging.lock().map_err(|_| poisoned())?;
        let pinned = staging_buffer(&mut staging)?;
        for (i, chunk) in data.chunks(STAGING_BYTES).enumerate() {
            let stage = pinned.slice_mut(chunk.len());
            stage.copy_from_slice(chunk);
            let at = dst + (i * STAGING_BYTES) as u64;
            // SAFETY: as above; the staging buffer is not touched again
            // until the sync.
            unsafe { result::memcpy_htod_async(at, &*stage, self.stream()) }
                .map_err(|e| driver_error("cuMemcpyHtoDAsync", e))?;
            self.synchronize()?;
        }
        Ok(())
    }

    /// Device bytes at `src` into `out`, after all queued work.
    fn download(&self, src: u64, out: &mut [u8]) -> Result<()> {
        self.bind()?;
        if out.len() < PINNED_THRESHOLD_BYTES {
            // SAFETY: `src..src + len` is inside a live buffer; the sync
            // completes the write into `out` before it is used.
            unsafe { result::memcpy_dtoh_async(out, src, self.stream()) }
                .map_err(|e| driver_error("cuMemcpyDtoHAsync", e))?;
            return self.synchronize();
        }
        let mut staging = self.inner.staging.lock().map_err(|_| poisoned())?;
        let pinned = staging_buffer(&mut staging)?;
        for (i, chunk) in out.chunks_mut(STAGING_BYTES).enumerate() {
            let at = src + (i * STAGING_BYTES) as u64;
            let stage = pinned.slice_mut(chunk.len());
            // SAFETY: as above.
            unsafe { result::memcpy_dtoh_async(&mut *stage, at, self.stream()) }
                .map_err(|e| driver_error("cuMemcpyDtoHAsync", e))?;
            self.synchronize()?;
            chunk.copy_from_slice(stage);
        }
        Ok(())
    }
}

fn staging_buffer(slot: &mut Option<Pinned>) -> Result<&mut Pinned> {
    if slot.is_none() {
        *slot = Some(Pinned::new(STAGING_BYTES)?);
    }
    slot.as_mut().ok_or_else(poisoned)
}
