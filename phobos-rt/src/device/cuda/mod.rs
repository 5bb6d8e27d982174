//! The CUDA backend: the embedded PTX run through the driver API.
//!
//! The driver is loaded at run time (cudarc's dynamic loading), so every
//! binary builds and starts on machines without CUDA; [`CudaDevice::new`]
//! then fails with [`crate::Error::BackendUnavailable`] naming what is
//! missing. Everything a device does goes through one stream, so work is
//! ordered the way the host issues it; copies back to the host wait for it.
//!
//! - `open`: driver library, version, device checks.
//! - `select`: which PTX variant a chip runs (exact chip, else the nearest
//!   lower one), and whether the driver can JIT its ISA version.
//! - `args`: launch arguments checked against and packed in the artifact's ABI.
//! - `arena` + `memory`: device allocations with reuse, copies (pinned
//!   staging for large ones), RAII buffers.
//! - `module`: the JIT-loaded modules, cached per device, and launches.
//! - `timing`: CUDA events; `tune`: what the shared autotuner needs from CUDA.

mod arena;
pub mod args;
mod memory;
mod module;
mod open;
pub mod select;
mod timing;
pub mod tune;

pub use args::{KernelArg, PackedArgs, ScalarArg, TensorArg};
pub(crate) use memory::CudaBuffer;
pub use module::LaunchReport;
pub use open::MIN_DRIVER_VERSION;
pub use timing::EventTimer;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{CudaContext, CudaStream};

use crate::{Error, Result};
use arena::Arena;

/// What the runtime knows about a GPU; part of every tuning cache key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuInfo {
    pub ordinal: usize,
    /// As the driver names it (`NVIDIA H200`).
    pub name: String,
    /// `sm_XY`.
    pub chip: String,
    /// `cuDriverGetVersion` (12040 is CUDA 12.4).
    pub driver_version: i32,
    pub total_mem_bytes: usize,
}

/// A CUDA device: a context, its stream, the loaded modules and the memory
/// arena. Cheap to clone (shared); one per ordinal per process.
#[derive(Clone)]
pub struct CudaDevice {
    inner: Arc<Inner>,
}

struct Inner {
    info: GpuInfo,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    modules: Mutex<HashMap<module::ModuleKey, module::Loaded>>,
    arena: Mutex<Arena>,
    staging: Mutex<Option<memory::Pinned>>,
}

/// Free device blocks kept for reuse, at most.
const ARENA_LIMIT_BYTES: usize = 1 << 30;

impl CudaDevice {
    /// CUDA device `ordinal`, opened once per process and shared after.
    pub fn new(ordinal: usize) -> Result<CudaDevice> {
        static OPEN: OnceLock<Mutex<HashMap<usize, CudaDevice>>> = OnceLock::new();
        let open = OPEN.get_or_init(Mutex::default);
        let mut open = open.lock().map_err(|_| poisoned())?;
        if let Some(device) = open.get(&ordinal) {
            return Ok(device.clone());
        }
        let device = CudaDevice::open(ordinal)?;
        open.insert(ordinal, device.clone());
        Ok(device)
    }

    fn open(ordinal: usize) -> Result<CudaDevice> {
        let driver_version = open::probe(ordinal)?;
        let what = |call: &'static str| move |e| open::driver_error(call, e);
        let ctx = CudaContext::new(ordinal).map_err(what("cuDevicePrimaryCtxRetain"))?;
        let stream = ctx.new_stream().map_err(what("cuStreamCreate"))?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(what("cuDeviceGetAttribute"))?;
        let info = GpuInfo {
            ordinal,
            name: ctx.name().map_err(what("cuDeviceGetName"))?,
            chip: select::chip_name(major, minor),
            driver_version,
            total_mem_bytes: ctx.total_mem().map_err(what("cuDeviceTotalMem"))?,
        };
        tracing::info!(
            gpu = %info.name, chip = %info.chip, driver = info.driver_version,
            "CUDA device {ordinal} opened"
        );
        Ok(CudaDevice {
            inner: Arc::new(Inner {
                info,
                ctx,
                stream,
                modules: Mutex::default(),
                arena: Mutex::new(Arena::new(ARENA_LIMIT_BYTES)),
                staging: Mutex::default(),
            }),
        })
    }

    /// The GPU's name, chip, driver version and memory.
    pub fn info(&self) -> &GpuInfo {
        &self.inner.info
    }

    /// Waits for all work queued on the device.
    pub fn synchronize(&self) -> Result<()> {
        self.bind()?;
        self.inner
            .stream
            .synchronize()
            .map_err(|e| open::driver_error("cuStreamSynchronize", e))
    }

    /// Makes the device's context current on this thread, for driver or
    /// library calls made outside this crate (cuBLAS).
    pub fn bind_to_thread(&self) -> Result<()> {
        self.bind()
    }

    /// The stream all of this device's work is queued on, for libraries
    /// (cuBLAS) whose work must be ordered with it.
    pub fn cu_stream(&self) -> cudarc::driver::sys::CUstream {
        self.stream()
    }

    /// Makes the context current on this thread (driver calls need it).
    fn bind(&self) -> Result<()> {
        self.inner
            .ctx
            .bind_to_thread()
            .map_err(|e| open::driver_error("cuCtxSetCurrent", e))
    }

    fn stream(&self) -> cudarc::driver::sys::CUstream {
        self.inner.stream.cu_stream()
    }
}

impl PartialEq for CudaDevice {
    fn eq(&self, other: &CudaDevice) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for CudaDevice {}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaDevice")
            .field("ordinal", &self.inner.info.ordinal)
            .field("name", &self.inner.info.name)
            .field("chip", &self.inner.info.chip)
            .finish_non_exhaustive()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Best effort: a failing driver at shutdown has nothing to report to.
        if self.ctx.bind_to_thread().is_err() {
            return;
        }
        let _ = self.stream.synchronize();
        if let Ok(mut arena) = self.arena.lock() {
            for ptr in arena.drain() {
                // SAFETY: the block came from cuMemAlloc on this context and
                // no buffer refers to it (it was returned to the arena).
                let _ = unsafe { cudarc::driver::result::free_sync(ptr) };
            }
        }
        if let Ok(mut modules) = self.modules.lock() {
            for (_, loaded) in modules.drain() {
                loaded.unload();
            }
        }
        if let Ok(mut staging) = self.staging.lock()
            && let Some(pinned) = staging.take()
        {
            pinned.free();
        }
    }
}

fn poisoned() -> Error {
    Error::Backend {
        backend: "cuda",
        message: "a CUDA device lock was poisoned by a panic on another thread".into(),
    }
}

#[cfg(test)]
mod tests;
