//! Hand-written host paths behind a kernel's typed handle (`@host_impl`).
//!
//! A kernel may name a Rust function with its launcher's signature
//! (`@host_impl(f)`, SPEC.md §11). On the host device its `launch` and
//! `launch_with` call that function; the generated body stays compiled and
//! runs through the module's `launch_generated`, and for every launch when
//! `PHOBOS_HOST_IMPL=generated` ([`HostImplMode`]), so tests and whole
//! programs can compare the two. Other devices run the kernel's own code.
//!
//! [`with_host_slice`] and [`with_host_slice_mut`] lend a host tensor's
//! elements as a Rust slice, which is what such functions work on.

use std::sync::OnceLock;

use crate::{Element, Error, Result, Tensor};

/// The environment variable that picks the [`HostImplMode`].
pub const HOST_IMPL_ENV: &str = "PHOBOS_HOST_IMPL";

/// Which body a launch of a kernel with `@host_impl` runs on the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostImplMode {
    /// The hand-written function (the default).
    #[default]
    HandWritten,
    /// The generated body, as for kernels without `@host_impl`.
    Generated,
}

impl HostImplMode {
    /// Parses a `PHOBOS_HOST_IMPL` value (`None` or blank: the default).
    pub fn from_value(value: Option<&str>) -> Result<HostImplMode> {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None | Some("") | Some("hand") | Some("hand-written") => Ok(HostImplMode::HandWritten),
            Some("generated") => Ok(HostImplMode::Generated),
            Some(_) => Err(Error::BadHostImpl {
                value: value.unwrap_or_default().to_string(),
            }),
        }
    }

    /// The mode `PHOBOS_HOST_IMPL` asks for, read once per process; a bad
    /// value is an error from every launch that consults it.
    pub fn from_env() -> Result<HostImplMode> {
        static MODE: OnceLock<Result<HostImplMode>> = OnceLock::new();
        MODE.get_or_init(|| {
            let value = std::env::var(HOST_IMPL_ENV).ok();
            HostImplMode::from_value(value.as_deref())
        })
        .clone()
    }
}

/// Calls `f` with `tensor`'s elements as one slice in row-major order: in
/// place when the tensor is contiguous and no writer holds its allocation
/// (a plain reader meanwhile, so writers wait), else on a copy.
/// `WrongBackend` for a tensor not on the host.
pub fn with_host_slice<T: Element, R>(tensor: &Tensor<T>, f: impl FnOnce(&[T]) -> R) -> Result<R> {
    let buffer = tensor.host_buffer()?;
    if tensor.is_contiguous() && buffer.try_begin_plain_read() {
        // SAFETY: a contiguous tensor's elements are `offset..offset + len`
        // of its live, aligned allocation (checked at construction), and
        // while this plain reader is in no writer is (HostBuffer's
        // protocol), so nothing changes them during the borrow.
        let slice = unsafe {
            let base = tensor.host_ptr("with_host_slice")?.add(tensor.offset());
            std::slice::from_raw_parts(base.cast_const(), tensor.len())
        };
        let result = f(slice);
        buffer.end_plain_read();
        return Ok(result);
    }
    Ok(f(&tensor.to_vec()?))
}

/// Calls `f` with a mutable row-major slice of `tensor`'s elements, which
/// are the tensor's afterwards: in place when the tensor is contiguous and
/// the only handle on its allocation (no view shares it, so nothing else
/// can read or write it meanwhile), else on a copy stored back with
/// [`Tensor::copy_from_slice`]. `WrongBackend` for a tensor not on the host.
pub fn with_host_slice_mut<T: Element, R>(
    tensor: &mut Tensor<T>,
    f: impl FnOnce(&mut [T]) -> R,
) -> Result<R> {
    let (offset, len, contiguous) = (tensor.offset(), tensor.len(), tensor.is_contiguous());
    if contiguous && let Some(base) = tensor.unique_host_ptr()? {
        // SAFETY: as in `with_host_slice`; `unique_host_ptr` proved this
        // tensor is the allocation's only owner and we hold it mutably, so
        // the slice is the only access for its lifetime.
        let slice = unsafe { std::slice::from_raw_parts_mut(base.add(offset), len) };
        return Ok(f(slice));
    }
    let mut copy = tensor.to_vec()?;
    let result = f(&mut copy);
    tensor.copy_from_slice(&copy)?;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Device;

    #[test]
    fn modes_parse_and_bad_values_are_errors() {
        assert_eq!(
            HostImplMode::from_value(None).unwrap(),
            HostImplMode::HandWritten
        );
        assert_eq!(
            HostImplMode::from_value(Some(" Generated ")).unwrap(),
            HostImplMode::Generated
        );
        assert_eq!(
            HostImplMode::from_value(Some("hand")).unwrap(),
            HostImplMode::HandWritten
        );
        let err = HostImplMode::from_value(Some("fast")).unwrap_err();
        assert!(
            err.to_string().contains("PHOBOS_HOST_IMPL=\"fast\""),
            "{err}"
        );
    }

    #[test]
    fn slices_read_and_write_in_place_and_through_views() {
        let device = Device::host();
        let mut t = device
            .tensor_from(&[1f32, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3])
            .unwrap();
        let sum = with_host_slice(&t, |s| s.iter().sum::<f32>()).unwrap();
        assert_eq!(sum, 21.0);
        with_host_slice_mut(&mut t, |s| s.iter_mut().for_each(|v| *v *= 2.0)).unwrap();
        assert_eq!(t.to_vec().unwrap(), vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);

        // A strided view (a column) shares the allocation: copied both ways.
        let mut column = t.strided([2], &[3], 1).unwrap();
        assert_eq!(
            with_host_slice(&column, <[f32]>::to_vec).unwrap(),
            vec![4.0, 10.0]
        );
        with_host_slice_mut(&mut column, |s| s.copy_from_slice(&[-1.0, -2.0])).unwrap();
        assert_eq!(t.to_vec().unwrap(), vec![2.0, -1.0, 6.0, 8.0, -2.0, 12.0]);
    }
}
