//! Devices: where tensors live and kernels run.

mod borrowed;
pub mod cuda;
mod host;
mod host_lines;

pub(crate) use cuda::CudaBuffer;
pub use cuda::CudaDevice;
pub use host::HostDevice;
pub(crate) use host::{BufferKind, HostBuffer};

use crate::tensor::Storage;
use crate::{Element, Error, Result, Shape, Tensor};
use std::sync::Arc;

/// The backends a [`Device`] dispatches over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// The CPU, running tile programs in parallel on its thread pool.
    Host(HostDevice),
    /// An NVIDIA GPU, through the driver API loaded at run time.
    Cuda(CudaDevice),
}

/// A place to allocate tensors and launch kernels. Cheap to clone (a CUDA
/// device is shared).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    backend: Backend,
}

impl Device {
    /// The host (CPU) device.
    pub fn host() -> Device {
        Device {
            backend: Backend::Host(HostDevice),
        }
    }

    /// CUDA device `ordinal`; `BackendUnavailable` naming what is missing
    /// (driver library, device, recent enough driver) where there is none.
    pub fn cuda(ordinal: usize) -> Result<Device> {
        CudaDevice::new(ordinal).map(Device::from_cuda)
    }

    /// The device of an opened CUDA device.
    pub fn from_cuda(device: CudaDevice) -> Device {
        Device {
            backend: Backend::Cuda(device),
        }
    }

    /// The CUDA device, when this is one.
    pub fn as_cuda(&self) -> Option<&CudaDevice> {
        match &self.backend {
            Backend::Cuda(device) => Some(device),
            Backend::Host(_) => None,
        }
    }

    /// The device the environment asks for: `PHOBOS_BACKEND=host` or `cuda`;
    /// unset (or empty) picks CUDA when available, else the host.
    ///
    /// Named like `Default::default` on purpose, but it can fail (a forced
    /// backend may be missing), so it is not the trait.
    #[allow(clippy::should_implement_trait)]
    pub fn default() -> Result<Device> {
        Device::from_backend_name(std::env::var("PHOBOS_BACKEND").ok().as_deref())
    }

    /// Resolves a `PHOBOS_BACKEND` value (`None` or `""`: auto).
    pub fn from_backend_name(name: Option<&str>) -> Result<Device> {
        match name.map(str::trim) {
            None | Some("") => Ok(Device::cuda(0).unwrap_or_else(|err| {
                tracing::debug!(%err, "no CUDA device, using the host backend");
                Device::host()
            })),
            Some(n) if n.eq_ignore_ascii_case("host") || n.eq_ignore_ascii_case("cpu") => {
                Ok(Device::host())
            }
            Some(n) if n.eq_ignore_ascii_case("cuda") => Device::cuda(0),
            Some(other) => Err(Error::UnknownBackend {
                value: other.to_string(),
            }),
        }
    }

    /// The backend this device dispatches to.
    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// `"host"` or `"cuda"`.
    pub fn name(&self) -> &'static str {
        match &self.backend {
            Backend::Host(_) => "host",
            Backend::Cuda(_) => "cuda",
        }
    }

    /// True for the host backend.
    pub fn is_host(&self) -> bool {
        matches!(self.backend, Backend::Host(_))
    }

    /// A tensor holding a copy of `data` in row-major order.
    pub fn tensor_from<T: Element>(
        &self,
        data: &[T],
        shape: impl Into<Shape>,
    ) -> Result<Tensor<T>> {
        let shape = shape.into();
        let expected = shape.elem_count()?;
        if data.len() != expected {
            return Err(Error::LenMismatch {
                shape: shape.dims().to_vec(),
                expected,
                actual: data.len(),
            });
        }
        let tensor = self.zeros::<T>(shape)?;
        tensor.write_contiguous(data)?;
        Ok(tensor)
    }

    /// A zero-filled row-major tensor.
    pub fn zeros<T: Element>(&self, shape: impl Into<Shape>) -> Result<Tensor<T>> {
        let shape = shape.into();
        let len = shape.elem_count()?;
        let len_bytes = len
            .checked_mul(size_of::<T>())
            .ok_or_else(|| Error::ShapeOverflow {
                shape: shape.dims().to_vec(),
            })?;
        let storage = match &self.backend {
            Backend::Host(_) => Storage::Host(Arc::new(HostBuffer::zeroed(len_bytes).ok_or_else(
                || Error::ShapeOverflow {
                    shape: shape.dims().to_vec(),
                },
            )?)),
            Backend::Cuda(d) => Storage::Cuda(Arc::new(d.alloc_zeroed(len_bytes)?)),
        };
        Ok(Tensor::from_storage(storage, shape))
    }

    /// A row-major tensor with every element `value`.
    pub fn full<T: Element>(&self, shape: impl Into<Shape>, value: T) -> Result<Tensor<T>> {
        let shape = shape.into();
        let len = shape.elem_count()?;
        self.tensor_from(&vec![value; len], shape)
    }

    /// Waits for queued work to finish (host work is synchronous).
    pub fn synchronize(&self) -> Result<()> {
        match &self.backend {
            Backend::Host(_) => Ok(()),
            Backend::Cuda(d) => d.synchronize(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names_resolve() {
        // SAFETY: only tries to open the library.
        let has_driver = unsafe { cudarc::driver::sys::is_culib_present() };
        let auto = Device::from_backend_name(None).unwrap();
        assert!(auto.is_host() || has_driver);
        assert!(Device::from_backend_name(Some("HOST")).unwrap().is_host());
        if !has_driver {
            // No driver: auto picks the host, forcing CUDA names what is missing.
            assert!(auto.is_host());
            let err = Device::from_backend_name(Some("cuda")).unwrap_err();
            assert!(
                err.to_string()
                    .starts_with("backend `cuda` is not available: no CUDA driver library found"),
                "{err}"
            );
        }
        let err = Device::from_backend_name(Some("tpu")).unwrap_err();
        assert_eq!(
            err,
            Error::UnknownBackend {
                value: "tpu".into()
            }
        );
        assert!(err.to_string().contains("expected `host` or `cuda`"));
    }

    #[test]
    fn host_device_reports_itself() {
        let dev = Device::host();
        assert_eq!(dev.name(), "host");
        assert_eq!(dev.backend(), &Backend::Host(HostDevice));
        dev.synchronize().unwrap();
        let t = dev.zeros::<f32>([2]).unwrap();
        assert_eq!(t.device(), dev);
        assert!(dev.as_cuda().is_none());
    }

    #[test]
    fn tensor_from_checks_length() {
        let dev = Device::host();
        let err = dev.tensor_from(&[1.0f32, 2.0, 3.0], [2, 2]).unwrap_err();
        assert_eq!(
            err,
            Error::LenMismatch {
                shape: vec![2, 2],
                expected: 4,
                actual: 3
            }
        );
        let t = dev.tensor_from(&[1i8, -2, 3, 4, 5, 6], [2, 3]).unwrap();
        assert_eq!(t.to_vec().unwrap(), vec![1, -2, 3, 4, 5, 6]);
    }

    #[test]
    fn zeros_and_full() {
        let dev = Device::host();
        assert_eq!(
            dev.zeros::<f32>([3]).unwrap().to_vec().unwrap(),
            vec![0.0; 3]
        );
        assert_eq!(
            dev.full([2, 2], true).unwrap().to_vec().unwrap(),
            vec![true; 4]
        );
        assert_eq!(dev.zeros::<u8>([0, 5]).unwrap().len(), 0);
        assert!(matches!(
            dev.zeros::<f64>([usize::MAX / 4, 4]),
            Err(Error::ShapeOverflow { .. })
        ));
    }
}
