//! Typed tensors in device memory.

use crate::device::cuda::{KernelArg, TensorArg};
use crate::device::{BufferKind, CudaBuffer, CudaDevice, HostBuffer};
use crate::{DType, Device, Element, Error, Result, Shape};
use std::marker::PhantomData;
use std::sync::Arc;

/// Where a tensor's elements live. Views made with [`Tensor::strided`]
/// share the allocation; it is freed when the last one drops. Host memory
/// borrowed from the caller (`HostDevice::with_borrowed`) has no views:
/// its one tensor must not outlive the borrow.
#[derive(Debug, Clone)]
pub(crate) enum Storage {
    Host(Arc<HostBuffer>),
    Cuda(Arc<CudaBuffer>),
}

/// A typed, shaped array on a [`Device`]. Strides are in elements, row-major
/// unless made with [`Tensor::strided`].
///
/// Views ([`Tensor::strided`], [`Tensor::narrow`], [`Tensor::reshape`])
/// share the allocation. Writing through one view while a kernel reads
/// another is allowed and well defined, just as on a GPU; the values seen
/// are then unspecified. (On the host a kernel reads a tensor nobody writes
/// with plain, vectorizable loads; a writer that arrives meanwhile waits
/// for the launch to finish, see `device::host::HostBuffer`.)
pub struct Tensor<T: Element> {
    storage: Storage,
    shape: Shape,
    strides: Vec<usize>,
    offset: usize,
    elem: PhantomData<T>,
}

impl<T: Element> Tensor<T> {
    pub(crate) fn from_storage(storage: Storage, shape: Shape) -> Tensor<T> {
        let strides = shape.row_major_strides();
        Tensor {
            storage,
            shape,
            strides,
            offset: 0,
            elem: PhantomData,
        }
    }

    /// Extents, outermost first.
    pub fn shape(&self) -> &[usize] {
        self.shape.dims()
    }

    /// Strides in elements, one per dim.
    pub fn strides(&self) -> &[usize] {
        &self.strides
    }

    /// Offset in elements of element `[0, 0, ...]` from the allocation start.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Number of dims.
    pub fn rank(&self) -> usize {
        self.shape.rank()
    }

    /// Number of elements (the product of the shape).
    pub fn len(&self) -> usize {
        self.shape.dims().iter().product()
    }

    /// True when some extent is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        T::DTYPE
    }

    /// The device holding the data.
    pub fn device(&self) -> Device {
        match &self.storage {
            Storage::Host(_) => Device::host(),
            Storage::Cuda(b) => Device::from_cuda(b.device().clone()),
        }
    }

    /// True when the strides are row-major for the shape (ignoring dims of
    /// extent 1).
    pub fn is_contiguous(&self) -> bool {
        let row_major = self.shape.row_major_strides();
        self.shape
            .dims()
            .iter()
            .zip(self.strides.iter().zip(&row_major))
            .all(|(&d, (s, r))| d == 1 || s == r)
    }

    /// A view of the same allocation with another shape, strides (elements)
    /// and offset. Errors when the ranks differ or the view reaches past the
    /// allocation. Zero strides (broadcast views) are allowed. A tensor over
    /// the caller's memory ([`HostDevice::with_borrowed`](crate::HostDevice::with_borrowed))
    /// has no views (`Error::Borrowed`, also from [`Tensor::narrow`] and
    /// [`Tensor::reshape`]): one could outlive the borrow.
    pub fn strided(
        &self,
        shape: impl Into<Shape>,
        strides: &[usize],
        offset: usize,
    ) -> Result<Tensor<T>> {
        let shape = shape.into();
        if let Storage::Host(buffer) = &self.storage
            && buffer.kind() != BufferKind::Owned
        {
            return Err(Error::Borrowed {
                op: "a view (strided, narrow, reshape)",
                reason: "a view could outlive the borrow; copy the tensor with try_clone",
            });
        }
        let capacity = self.capacity();
        let bad = || Error::BadStrides {
            shape: shape.dims().to_vec(),
            strides: strides.to_vec(),
            offset,
            buffer_len: capacity,
        };
        if strides.len() != shape.rank() {
            return Err(bad());
        }
        if !shape.dims().contains(&0) {
            let last = shape
                .dims()
                .iter()
                .zip(strides)
                .try_fold(offset, |acc, (&d, &s)| {
                    (d - 1).checked_mul(s).and_then(|x| acc.checked_add(x))
                })
                .ok_or_else(bad)?;
            if last >= capacity {
                return Err(bad());
            }
        }
        Ok(Tensor {
            storage: self.storage.clone(),
            shape,
            strides: strides.to_vec(),
            offset,
            elem: PhantomData,
        })
    }

    /// A view of `len` indices of dim `dim` starting at `start` (the other
    /// dims unchanged).
    pub fn narrow(&self, dim: usize, start: usize, len: usize) -> Result<Tensor<T>> {
        let (Some(&extent), Some(&stride)) = (self.shape().get(dim), self.strides.get(dim)) else {
            return Err(Error::BadShape {
                op: "narrow",
                shape: self.shape().to_vec(),
                expected: "a dim index below the rank",
            });
        };
        if start.checked_add(len).is_none_or(|end| end > extent) {
            return Err(Error::BadShape {
                op: "narrow",
                shape: self.shape().to_vec(),
                expected: "start + len within the dim's extent",
            });
        }
        let mut shape = self.shape().to_vec();
        shape[dim] = len;
        let offset = if len == 0 {
            self.offset
        } else {
            self.offset + start * stride
        };
        self.strided(shape, &self.strides.clone(), offset)
    }

    /// A row-major view with another shape of the same element count;
    /// the tensor must be contiguous.
    pub fn reshape(&self, shape: impl Into<Shape>) -> Result<Tensor<T>> {
        let shape = shape.into();
        let to_len = shape.elem_count()?;
        if to_len != self.len() {
            return Err(Error::ReshapeLen {
                from: self.shape().to_vec(),
                from_len: self.len(),
                to: shape.dims().to_vec(),
                to_len,
            });
        }
        if !self.is_contiguous() {
            return Err(Error::BadShape {
                op: "reshape",
                shape: self.shape().to_vec(),
                expected: "a contiguous (row-major) tensor",
            });
        }
        let strides = shape.row_major_strides();
        self.strided(shape, &strides, self.offset)
    }

    /// Overwrites the elements, given in row-major order of the shape
    /// (strides honoured). `LenMismatch` when the length differs.
    pub fn copy_from_slice(&mut self, data: &[T]) -> Result<()> {
        if data.len() != self.len() {
            return Err(Error::LenMismatch {
                shape: self.shape().to_vec(),
                expected: self.len(),
                actual: data.len(),
            });
        }
        if let Storage::Cuda(buffer) = &self.storage {
            return self.cuda_scatter(buffer, data);
        }
        let base = self.host_ptr("copy_from_slice")?;
        let buffer = self.host_buffer()?;
        buffer.begin_write("copy_from_slice")?;
        self.for_each_offset(|i, at| {
            // SAFETY: every index of the shape is inside the allocation
            // (checked at construction); the write is atomic and no plain
            // reader is in (`begin_write`).
            unsafe { T::store_relaxed(base.add(at), data[i]) }
        });
        buffer.end_write();
        Ok(())
    }

    /// A new row-major tensor on the same device holding a copy of the elements.
    pub fn try_clone(&self) -> Result<Tensor<T>> {
        self.device()
            .tensor_from(&self.to_vec()?, self.shape.clone())
    }

    /// Calls `f(i, element_offset)` for the `i`-th element in row-major order.
    fn for_each_offset(&self, mut f: impl FnMut(usize, usize)) {
        if self.is_empty() {
            return;
        }
        let dims = self.shape.dims();
        let mut index = vec![0usize; dims.len()];
        let mut i = 0;
        loop {
            let at = self.offset
                + index
                    .iter()
                    .zip(&self.strides)
                    .map(|(i, s)| i * s)
                    .sum::<usize>();
            f(i, at);
            i += 1;
            if !advance(&mut index, dims) {
                return;
            }
        }
    }

    /// The elements in row-major order of the shape (a copy).
    pub fn to_vec(&self) -> Result<Vec<T>> {
        if let Storage::Cuda(buffer) = &self.storage {
            return self.cuda_gather(buffer);
        }
        let base = self.host_ptr("to_vec")?;
        let read_only = self.host_buffer()?.is_read_only();
        let mut out = Vec::with_capacity(self.len());
        self.for_each_offset(|_, at| {
            // SAFETY: every index of the shape is inside the allocation
            // (checked at construction). A read-only buffer never has a
            // writer, so a plain read cannot race (and atomics need memory
            // valid for writes); on every other buffer all accesses that
            // may race are atomic.
            out.push(unsafe {
                if read_only {
                    base.add(at).read()
                } else {
                    T::load_relaxed(base.add(at))
                }
            })
        });
        Ok(out)
    }

    /// Number of `T` elements the allocation holds.
    fn capacity(&self) -> usize {
        match &self.storage {
            Storage::Host(b) => b.len_bytes() / size_of::<T>(),
            Storage::Cuda(b) => b.len_bytes() / size_of::<T>(),
        }
    }

    /// The host allocation, or `WrongBackend`.
    pub(crate) fn host_buffer(&self) -> Result<&HostBuffer> {
        match &self.storage {
            Storage::Host(b) => Ok(b),
            Storage::Cuda(_) => Err(Error::WrongBackend {
                op: "host access",
                expected: "host",
                actual: "cuda",
            }),
        }
    }

    /// Base pointer of the host allocation when this tensor is its only
    /// owner (no view shares it), `None` when shared; `WrongBackend` off
    /// the host.
    /// `Error::Borrowed` for a read-only borrowed tensor.
    pub(crate) fn unique_host_ptr(&mut self) -> Result<Option<*mut T>> {
        match &mut self.storage {
            Storage::Host(b) => {
                b.check_writable("mutable host access")?;
                Ok(Arc::get_mut(b).map(|b| b.base_ptr().cast::<T>()))
            }
            Storage::Cuda(_) => Err(Error::WrongBackend {
                op: "host access",
                expected: "host",
                actual: "cuda",
            }),
        }
    }

    /// Whether this is a host tensor and no other tensor (view) shares its
    /// allocation: with `&mut self` held, then nothing else can reach it.
    pub(crate) fn is_sole_host_view(&mut self) -> bool {
        match &mut self.storage {
            Storage::Host(buffer) => Arc::get_mut(buffer).is_some(),
            Storage::Cuda(_) => false,
        }
    }

    /// Base pointer of the allocation on the host, or `WrongBackend`.
    pub(crate) fn host_ptr(&self, op: &'static str) -> Result<*mut T> {
        match &self.storage {
            Storage::Host(b) => Ok(b.base_ptr().cast::<T>()),
            Storage::Cuda(_) => Err(Error::WrongBackend {
                op,
                expected: "host",
                actual: "cuda",
            }),
        }
    }

    /// Fills a freshly allocated row-major tensor from `data`.
    pub(crate) fn write_contiguous(&self, data: &[T]) -> Result<()> {
        match &self.storage {
            Storage::Host(_) => {
                let base = self.host_ptr("tensor_from")?;
                for (i, &v) in data.iter().enumerate().take(self.capacity()) {
                    // SAFETY: `i` is below the capacity; all accesses are atomic.
                    unsafe { T::store_relaxed(base.add(i), v) };
                }
                Ok(())
            }
            Storage::Cuda(buffer) => buffer.write(0, element_bytes(data)),
        }
    }

    /// The tensor as a launch argument on `device`: its first element's
    /// device address, shape and strides. `WrongBackend` when it lives on
    /// the host, an error when on another GPU.
    pub fn cuda_arg(&self, device: &CudaDevice, writable: bool) -> Result<KernelArg> {
        let Storage::Cuda(buffer) = &self.storage else {
            return Err(Error::WrongBackend {
                op: "launch",
                expected: "cuda",
                actual: "host",
            });
        };
        if buffer.device() != device {
            return Err(Error::Backend {
                backend: "cuda",
                message: format!(
                    "a tensor on CUDA device {} passed to a launch on device {}",
                    buffer.device().info().ordinal,
                    device.info().ordinal
                ),
            });
        }
        Ok(KernelArg::Tensor(TensorArg {
            elem: T::DTYPE,
            device_ptr: buffer.device_ptr() + (self.offset * size_of::<T>()) as u64,
            shape: self.shape().to_vec(),
            strides: self.strides.clone(),
            writable,
        }))
    }

    /// Element offsets `[first, last]` this view touches (`None`: empty).
    fn span(&self) -> Option<(usize, usize)> {
        if self.is_empty() {
            return None;
        }
        let last = self
            .shape()
            .iter()
            .zip(&self.strides)
            .map(|(&d, &s)| (d - 1) * s)
            .sum::<usize>();
        Some((self.offset, self.offset + last))
    }

    /// `to_vec` for device memory: the span the view covers comes back in
    /// one copy, then is gathered through the strides.
    fn cuda_gather(&self, buffer: &CudaBuffer) -> Result<Vec<T>> {
        let Some((first, last)) = self.span() else {
            return Ok(Vec::new());
        };
        let span = read_elements::<T>(buffer, first, last - first + 1)?;
        let mut out = Vec::with_capacity(self.len());
        self.for_each_offset(|_, at| out.push(span[at - first]));
        Ok(out)
    }

    /// `copy_from_slice` for device memory: a contiguous view is one copy;
    /// a strided one reads its span, scatters, and writes it back.
    fn cuda_scatter(&self, buffer: &CudaBuffer, data: &[T]) -> Result<()> {
        let Some((first, last)) = self.span() else {
            return Ok(());
        };
        if self.is_contiguous() {
            return buffer.write(first * size_of::<T>(), element_bytes(data));
        }
        let mut span = read_elements::<T>(buffer, first, last - first + 1)?;
        self.for_each_offset(|i, at| span[at - first] = data[i]);
        buffer.write(first * size_of::<T>(), element_bytes(&span))
    }
}

impl<T: Element> std::fmt::Debug for Tensor<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensor")
            .field("dtype", &T::DTYPE)
            .field("shape", &self.shape())
            .field("strides", &self.strides)
            .field("offset", &self.offset)
            .field("device", &self.device().name())
            .finish()
    }
}

/// The bytes of a slice of elements.
fn element_bytes<T: Element>(data: &[T]) -> &[u8] {
    // SAFETY: every `Element` is a plain scalar without padding, so its
    // bytes are initialised; u8 has no alignment requirement.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), size_of_val(data)) }
}

/// `count` elements of device memory from element `first`. The bytes are
/// copied raw; `bool` bytes are normalised to 0/1 first, so every value
/// built is valid whatever a kernel stored.
fn read_elements<T: Element>(buffer: &CudaBuffer, first: usize, count: usize) -> Result<Vec<T>> {
    let mut bytes = vec![0u8; count * size_of::<T>()];
    buffer.read(first * size_of::<T>(), &mut bytes)?;
    if T::DTYPE == DType::Bool {
        for byte in &mut bytes {
            *byte = u8::from(*byte != 0);
        }
    }
    Ok(bytes
        .chunks_exact(size_of::<T>())
        // SAFETY: each chunk is `size_of::<T>()` bytes of a valid `T` (any
        // bit pattern is a valid number; bools were normalised above).
        .map(|chunk| unsafe { std::ptr::read_unaligned(chunk.as_ptr().cast::<T>()) })
        .collect())
}

/// Steps a row-major multi-index; false after the last one.
pub(crate) fn advance(index: &mut [usize], dims: &[usize]) -> bool {
    for (i, &d) in index.iter_mut().zip(dims).rev() {
        *i += 1;
        if *i < d {
            return true;
        }
        *i = 0;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_views_read_through_strides() {
        let dev = Device::host();
        let t = dev.tensor_from(&[0i32, 1, 2, 3, 4, 5], [2, 3]).unwrap();
        assert_eq!(t.strides(), &[3, 1]);
        assert!(t.is_contiguous());
        let transposed = t.strided([3, 2], &[1, 3], 0).unwrap();
        assert_eq!(transposed.to_vec().unwrap(), vec![0, 3, 1, 4, 2, 5]);
        assert!(!transposed.is_contiguous());
        let column = t.strided([2], &[3], 2).unwrap();
        assert_eq!(column.to_vec().unwrap(), vec![2, 5]);
        let broadcast = t.strided([2, 2], &[0, 1], 4).unwrap();
        assert_eq!(broadcast.to_vec().unwrap(), vec![4, 5, 4, 5]);
    }

    #[test]
    fn strided_rejects_views_past_the_buffer() {
        let dev = Device::host();
        let t = dev.zeros::<f32>([2, 3]).unwrap();
        assert!(matches!(
            t.strided([2, 3], &[3, 1], 1),
            Err(Error::BadStrides { .. })
        ));
        assert!(matches!(
            t.strided([2, 3], &[3], 0),
            Err(Error::BadStrides { .. })
        ));
        assert!(matches!(
            t.strided([2], &[usize::MAX], 0),
            Err(Error::BadStrides { .. })
        ));
        assert!(t.strided([0, 3], &[100, 100], 100).is_ok());
    }

    #[test]
    fn narrow_reshape_copy_and_clone() {
        let dev = Device::host();
        let mut t = dev
            .tensor_from(&(0..12).collect::<Vec<i32>>(), [3, 4])
            .unwrap();
        let rows = t.narrow(0, 1, 2).unwrap();
        assert_eq!(rows.to_vec().unwrap(), (4..12).collect::<Vec<_>>());
        let cols = t.narrow(1, 1, 2).unwrap();
        assert_eq!(cols.to_vec().unwrap(), vec![1, 2, 5, 6, 9, 10]);
        assert!(!cols.is_contiguous());
        assert!(cols.reshape([6]).is_err());
        assert!(t.narrow(1, 3, 2).is_err());
        assert!(t.narrow(2, 0, 1).is_err());
        assert_eq!(t.narrow(0, 3, 0).unwrap().len(), 0);
        let flat = t.reshape([2, 6]).unwrap();
        assert_eq!(flat.strides(), &[6, 1]);
        assert!(matches!(t.reshape([5]), Err(Error::ReshapeLen { .. })));
        let mut col = t.narrow(1, 0, 1).unwrap();
        col.copy_from_slice(&[-1, -2, -3]).unwrap();
        assert!(col.copy_from_slice(&[1]).is_err());
        assert_eq!(t.to_vec().unwrap()[..5], [-1, 1, 2, 3, -2]);
        let copy = t.try_clone().unwrap();
        t.copy_from_slice(&[0; 12]).unwrap();
        assert_eq!(copy.to_vec().unwrap()[0], -1);
        assert!(format!("{t:?}").contains("shape: [3, 4]"));
    }

    #[test]
    fn rank0_tensor_holds_one_element() {
        let t = Device::host().tensor_from(&[7u16], Vec::new()).unwrap();
        assert_eq!(t.len(), 1);
        assert_eq!(t.to_vec().unwrap(), vec![7]);
        assert_eq!(t.dtype(), DType::U16);
    }
}
