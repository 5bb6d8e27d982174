//! Stand-in for the CUDA backend until it lands: it cannot be constructed,
//! so every CUDA path is statically unreachable and no `cfg` spreads.

use crate::{Error, Result};

/// A CUDA device. This build has none: the type is uninhabited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CudaDevice {}

/// Device memory on a CUDA device (uninhabited in this build).
#[derive(Debug)]
pub(crate) enum CudaBuffer {}

impl CudaDevice {
    /// Opens CUDA device `ordinal`; always an error in this build.
    pub fn new(ordinal: usize) -> Result<CudaDevice> {
        Err(Error::BackendUnavailable {
            backend: "cuda",
            reason: format!(
                "this build of phobos-rt has no CUDA backend yet (device {ordinal} requested); use PHOBOS_BACKEND=host"
            ),
        })
    }
}
