//! PTX modules JIT-loaded by the driver, cached per device, and launches.

use std::ffi::{CString, c_void};

use cudarc::driver::{result, sys};

use super::args::{KernelArg, pack};
use super::open::driver_error;
use super::select::{check_driver_for_ptx, default_variant, select_variant};
use super::{CudaDevice, poisoned};
use crate::artifact::KernelArtifact;
use crate::{Error, Result};

/// A kernel variant: the artifact (by address: artifacts are statics) and
/// the index of the variant in it.
pub(super) type ModuleKey = (usize, usize);

/// A loaded module and its entry point.
pub(super) struct Loaded {
    module: sys::CUmodule,
    function: sys::CUfunction,
}

// SAFETY: driver handles are usable from any thread once the context is
// current; the map holding them is behind a mutex.
unsafe impl Send for Loaded {}

impl Loaded {
    pub(super) fn unload(self) {
        // SAFETY: loaded by cuModuleLoadDataEx, unloaded once (consumes self).
        let _ = unsafe { result::module::unload(self.module) };
    }
}

/// What a launch ran: the variant and the grid, for logs and the device
/// check's CSV.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchReport {
    pub variant: usize,
    pub grid: [u32; 3],
    pub threads: u32,
}

const JIT_LOG_BYTES: usize = 16 << 10;
/// `gridDim.x` limit; y and z are limited to 65535.
const GRID_X_MAX: usize = (1 << 31) - 1;
const GRID_YZ_MAX: usize = 65535;

impl CudaDevice {
    /// The entry point of `artifact.variants[variant]`, loaded on first use.
    fn function(
        &self,
        artifact: &'static KernelArtifact,
        variant: usize,
    ) -> Result<sys::CUfunction> {
        let key = (std::ptr::from_ref(artifact) as usize, variant);
        let mut modules = self.inner.modules.lock().map_err(|_| poisoned())?;
        if let Some(loaded) = modules.get(&key) {
            return Ok(loaded.function);
        }
        let loaded = self.load(artifact, variant)?;
        let function = loaded.function;
        modules.insert(key, loaded);
        Ok(function)
    }

    fn load(&self, artifact: &KernelArtifact, variant: usize) -> Result<Loaded> {
        let name = artifact.name;
        let v = artifact
            .variants
            .get(variant)
            .ok_or_else(|| Error::Backend {
                backend: "cuda",
                message: format!("kernel `{name}` has no variant {variant}"),
            })?;
        let ptx = v.ptx().map_err(|e| Error::Backend {
            backend: "cuda",
            message: format!("kernel `{name}`: {e}"),
        })?;
        check_driver_for_ptx(name, &ptx, self.info().driver_version)?;
        let image = CString::new(ptx).map_err(|_| Error::Backend {
            backend: "cuda",
            message: format!("kernel `{name}`: embedded PTX holds a NUL byte"),
        })?;
        self.bind()?;
        let mut log = vec![0u8; JIT_LOG_BYTES];
        let mut options = [
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        // The driver reads option values as pointer-sized words.
        let mut values = [
            log.as_mut_ptr().cast::<c_void>(),
            JIT_LOG_BYTES as *mut c_void,
        ];
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: `image` is NUL-terminated PTX; the option arrays have
        // two entries each and the log buffer outlives the call.
        let loaded = unsafe {
            sys::cuModuleLoadDataEx(
                &raw mut module,
                image.as_ptr().cast(),
                2,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        }
        .result();
        if let Err(err) = loaded {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let log = String::from_utf8_lossy(&log[..end]);
            return Err(driver_error(
                &format!(
                    "JIT of kernel `{name}` ({} PTX, config {:?}) failed: {}",
                    v.chip,
                    v.config,
                    log.trim()
                ),
                err,
            ));
        }
        let entry = CString::new(name).map_err(|_| Error::Backend {
            backend: "cuda",
            message: format!("kernel name `{name}` holds a NUL byte"),
        })?;
        let mut function: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: `module` was just loaded; `entry` is NUL-terminated.
        let found =
            unsafe { sys::cuModuleGetFunction(&raw mut function, module, entry.as_ptr()) }.result();
        if let Err(err) = found {
            // SAFETY: unloads the module loaded above, once.
            let _ = unsafe { result::module::unload(module) };
            return Err(driver_error(&format!("entry point `{name}`"), err));
        }
        tracing::debug!(kernel = name, chip = v.chip, config = ?v.config, "PTX module loaded");
        Ok(Loaded { module, function })
    }

    /// The variant `config` (tune values by name, in `Config` order) runs on
    /// this device: the device's chip, else the nearest lower one.
    pub fn variant_for(&self, artifact: &KernelArtifact, config: &[(&str, i64)]) -> Result<usize> {
        select_variant(artifact, &self.info().chip, config)
    }

    /// The variant the autotune table picks for this device.
    pub fn default_variant(&self, artifact: &KernelArtifact) -> Result<usize> {
        default_variant(artifact, &self.info().chip)
    }

    /// Loads (once) and launches `artifact.variants[variant]` on the
    /// device's stream. `dims` are the symbolic dims' extents in
    /// `artifact.dims` order, `args` one per parameter; both are checked
    /// against the ABI before anything runs. The launch is asynchronous:
    /// copies back to the host wait for it.
    pub fn launch(
        &self,
        artifact: &'static KernelArtifact,
        variant: usize,
        grid: [usize; 3],
        dims: &[(&str, usize)],
        args: &[KernelArg],
    ) -> Result<LaunchReport> {
        let v = artifact
            .variants
            .get(variant)
            .ok_or_else(|| Error::Backend {
                backend: "cuda",
                message: format!("kernel `{}` has no variant {variant}", artifact.name),
            })?;
        let mut packed = pack(artifact, v, dims, args)?;
        if grid[0] > GRID_X_MAX || grid[1] > GRID_YZ_MAX || grid[2] > GRID_YZ_MAX {
            return Err(Error::GridTooLarge {
                grid,
                max: GRID_X_MAX,
            });
        }
        let grid32 = grid.map(|g| g as u32);
        let report = LaunchReport {
            variant,
            grid: grid32,
            threads: v.threads,
        };
        if grid.contains(&0) {
            return Ok(report);
        }
        let function = self.function(artifact, variant)?;
        self.bind()?;
        let mut pointers: Vec<*mut c_void> =
            packed.slots.iter_mut().map(|slot| slot.address()).collect();
        // SAFETY: the arguments match the entry point's parameters in
        // number, order and width (checked by `pack` against the ABI the
        // back end declared); pointers are into live device buffers held by
        // the caller's tensors; the driver copies the argument values
        // before returning.
        unsafe {
            result::launch_kernel(
                function,
                (grid32[0], grid32[1], grid32[2]),
                (v.threads, 1, 1),
                0,
                self.stream(),
                &mut pointers,
            )
        }
        .map_err(|e| {
            driver_error(
                &format!(
                    "launch of kernel `{}` (grid {grid:?}, {} threads)",
                    artifact.name, v.threads
                ),
                e,
            )
        })?;
        Ok(report)
    }
}
