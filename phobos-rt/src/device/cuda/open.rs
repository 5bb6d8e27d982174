//! Finding the driver and a device, with an error that names what is
//! missing: the driver library, a device, or a recent enough driver.

use cudarc::driver::{result, sys};

use crate::{Error, Result};

/// The oldest driver the runtime talks to (CUDA 12.0): the PTX the back
/// end writes needs ISA 8.x, and the symbols used are 12.x's.
pub const MIN_DRIVER_VERSION: i32 = 12000;

pub(super) fn unavailable(reason: String) -> Error {
    Error::BackendUnavailable {
        backend: "cuda",
        reason,
    }
}

/// A driver call's failure as a backend error.
pub(super) fn driver_error(what: &str, err: result::DriverError) -> Error {
    let name = err
        .error_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", err.0));
    Error::Backend {
        backend: "cuda",
        message: format!("{what}: {name}"),
    }
}

/// The driver library's file names this platform searches, for the error.
fn library_names() -> String {
    cudarc::get_lib_name_candidates("cuda").join(", ")
}

/// Loads the driver, initialises it and checks `ordinal` exists; returns
/// the driver version (`cuDriverGetVersion`, e.g. 12040).
pub(super) fn probe(ordinal: usize) -> Result<i32> {
    // SAFETY: only tries to open the library; no symbol is called.
    if !unsafe { sys::is_culib_present() } {
        return Err(unavailable(format!(
            "no CUDA driver library found (searched {}; is the NVIDIA driver installed and on LD_LIBRARY_PATH?)",
            library_names()
        )));
    }
    let mut driver = 0;
    // SAFETY: the library is present; the out pointer is valid.
    let version = unsafe { sys::cuDriverGetVersion(&raw mut driver) }.result();
    if let Err(err) = version {
        return Err(driver_error("cuDriverGetVersion", err));
    }
    if driver < MIN_DRIVER_VERSION {
        return Err(unavailable(format!(
            "the CUDA driver is too old: it supports CUDA {}.{}, Phobos needs {}.{} or newer (PTX ISA 8); update the NVIDIA driver",
            driver / 1000,
            (driver % 1000) / 10,
            MIN_DRIVER_VERSION / 1000,
            (MIN_DRIVER_VERSION % 1000) / 10
        )));
    }
    match result::init() {
        Ok(()) => {}
        Err(err) if err.0 == sys::CUresult::CUDA_ERROR_NO_DEVICE => {
            return Err(unavailable(
                "the CUDA driver is installed but found no CUDA device".into(),
            ));
        }
        Err(err) => return Err(driver_error("cuInit", err)),
    }
    let count = result::device::get_count().map_err(|e| driver_error("cuDeviceGetCount", e))?;
    let count = usize::try_from(count).unwrap_or(0);
    if count == 0 {
        return Err(unavailable(
            "the CUDA driver is installed but found no CUDA device".into(),
        ));
    }
    if ordinal >= count {
        return Err(unavailable(format!(
            "CUDA device {ordinal} requested, this machine has {count} (0..{count})"
        )));
    }
    Ok(driver)
}
