//! Tensors over the caller's memory for the length of a closure: what lets
//! a launch read `&[T]` and write `&mut [U]` without copying them in and
//! out ([`HostDevice::with_borrowed`]).
//!
//! # Why it is sound
//!
//! A [`Tensor`] is `'static` and shares its memory through an `Arc`, so a
//! tensor over borrowed memory must not outlive the borrow. Within the
//! scope the closure gets `&Tensor` for the input and `&mut Tensor` for the
//! output, and every way such a tensor could be kept past the scope is shut:
//!
//! - Views ([`Tensor::strided`], [`Tensor::narrow`], [`Tensor::reshape`])
//!   are the only way to share a tensor's memory with a new tensor; on
//!   borrowed memory they are refused (`Error::Borrowed`). `try_clone`
//!   copies. `Tensor` is not `Clone`. So each buffer has exactly one tensor.
//! - The input is lent as `&Tensor`: it cannot be moved out.
//! - The output is lent as `&mut Tensor`: `std::mem::swap` (or `replace`,
//!   `take`) could move it out. Its buffer reports its drop to the scope.
//!   When the scope ends (normally or by unwinding) it drops the tensor in
//!   its slot and checks that the borrowed buffer is gone. If it is not,
//!   the closure moved the tensor out and it is alive somewhere else, and
//!   the process aborts before the borrow ends: returning would let that
//!   tensor reach memory the caller may free. This is the only abort,
//!   reachable only by swapping the scope's own tensor away and keeping
//!   it. (Swapping it out and back, or out and dropping it, is fine.)
//! - The closure's result cannot hold the tensors: it is one type for every
//!   lifetime of the closure's arguments.
//!
//! The input's memory is reached only by plain reads (`HostBuffer` refuses
//! it writers, so plain reads never race and no atomic touches memory that
//! is not valid for writes). The output's is reached like an owned
//! allocation: the caller's `&mut` makes this scope its only user.

use std::mem::ManuallyDrop;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{Device, HostBuffer, HostDevice};
use crate::tensor::Storage;
use crate::{Element, Error, Result, Shape, Tensor};

impl HostDevice {
    /// Runs `f` on tensors that are the caller's memory, without copying:
    /// `input` (read only) as a row-major tensor of `input_shape`, `output`
    /// as one of `output_shape` that `f` may write (a launch's written
    /// parameter writes straight into the slice).
    ///
    /// Views of these tensors are refused (`Error::Borrowed`): they could
    /// outlive the borrow. A write to the input (a launch that writes its
    /// parameter, `copy_from_slice`) is `Error::Borrowed` too. Moving the
    /// output tensor out of its `&mut` (`std::mem::swap`) and keeping it
    /// past the closure aborts the process when the scope ends (module
    /// docs: it is the only way the borrow could be outlived).
    ///
    /// `LenMismatch` when a slice's length is not its shape's element count.
    ///
    /// ```
    /// # fn main() -> phobos_rt::Result<()> {
    /// use phobos_rt::host::{with_host_slice, with_host_slice_mut};
    /// let x = [1.0f32, 2.0, 3.0, 4.0];
    /// let mut y = [0.0f32; 4];
    /// phobos_rt::HostDevice.with_borrowed(&x, [2, 2], &mut y, [2, 2], |xt, yt| {
    ///     let doubled = with_host_slice(xt, |x| x.iter().map(|v| v * 2.0).collect::<Vec<_>>())?;
    ///     with_host_slice_mut(yt, |y| y.copy_from_slice(&doubled))
    /// })??;
    /// assert_eq!(y, [2.0, 4.0, 6.0, 8.0]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_borrowed<T: Element, U: Element, R>(
        &self,
        input: &[T],
        input_shape: impl Into<Shape>,
        output: &mut [U],
        output_shape: impl Into<Shape>,
        f: impl FnOnce(&Tensor<T>, &mut Tensor<U>) -> R,
    ) -> Result<R> {
        // Both lengths are checked before either closure runs.
        let input_shape = checked_shape(input_shape.into(), input.len())?;
        let output_shape = checked_shape(output_shape.into(), output.len())?;
        self.with_borrowed_read(input, input_shape, |input| {
            self.with_borrowed_write(output, output_shape, |output| f(input, output))
        })?
    }

    /// Runs `f` on a read-only tensor that is the caller's memory `input`
    /// (row-major, `shape`), without copying: for launches with more
    /// inputs than [`HostDevice::with_borrowed`] lends, nested inside it.
    /// The tensor is lent as `&Tensor` only, its views are refused and
    /// writers are refused (`Error::Borrowed`), so it cannot outlive the
    /// call (module docs). `LenMismatch` when `input`'s length is not the
    /// shape's element count.
    pub fn with_borrowed_read<T: Element, R>(
        &self,
        input: &[T],
        shape: impl Into<Shape>,
        f: impl FnOnce(&Tensor<T>) -> R,
    ) -> Result<R> {
        let shape = checked_shape(shape.into(), input.len())?;
        // SAFETY: as for `with_borrowed`'s input: `input` is borrowed shared
        // for this whole call and the buffer never writes it; its one tensor
        // is the local below, lent as `&Tensor` and dropped before return.
        let buffer = unsafe { HostBuffer::borrowed_read(input) };
        let tensor = Tensor::from_storage(Storage::Host(Arc::new(buffer)), shape);
        Ok(f(&tensor))
    }

    /// Runs `f` on a tensor that is the caller's memory `output`
    /// (row-major, `shape`) and that `f` may write, without copying: a
    /// launch's written parameter writes straight into the slice. Nested
    /// inside [`HostDevice::with_borrowed`] for launches that write more
    /// than one tensor. Views are refused; moving the tensor out of its
    /// `&mut` and keeping it past the closure aborts the process when the
    /// scope ends (module docs). `LenMismatch` when `output`'s length is
    /// not the shape's element count.
    pub fn with_borrowed_write<U: Element, R>(
        &self,
        output: &mut [U],
        shape: impl Into<Shape>,
        f: impl FnOnce(&mut Tensor<U>) -> R,
    ) -> Result<R> {
        let shape = checked_shape(shape.into(), output.len())?;
        // SAFETY: `output` is borrowed mutably for this whole call, so this
        // buffer is its only user. Its one tensor is `scope.output`, which
        // is dropped with `scope` before this call returns; if `f` moved it
        // out and kept it alive, `WriteScope::drop` aborts the process
        // before this call can return.
        let buffer = unsafe { HostBuffer::borrowed_write(output) };
        let released = Arc::new(AtomicBool::new(false));
        let buffer = buffer.reporting_drop_to(Arc::clone(&released));
        let mut scope = WriteScope {
            output: ManuallyDrop::new(Tensor::from_storage(Storage::Host(Arc::new(buffer)), shape)),
            released,
        };
        Ok(f(&mut scope.output))
    }
}

impl Device {
    /// [`HostDevice::with_borrowed`] on the host; `WrongBackend` on a GPU
    /// (its kernels cannot reach host memory).
    pub fn with_borrowed<T: Element, U: Element, R>(
        &self,
        input: &[T],
        input_shape: impl Into<Shape>,
        output: &mut [U],
        output_shape: impl Into<Shape>,
        f: impl FnOnce(&Tensor<T>, &mut Tensor<U>) -> R,
    ) -> Result<R> {
        self.host_only("with_borrowed")?;
        HostDevice.with_borrowed(input, input_shape, output, output_shape, f)
    }

    /// [`HostDevice::with_borrowed_read`] on the host; `WrongBackend` on a GPU.
    pub fn with_borrowed_read<T: Element, R>(
        &self,
        input: &[T],
        shape: impl Into<Shape>,
        f: impl FnOnce(&Tensor<T>) -> R,
    ) -> Result<R> {
        self.host_only("with_borrowed_read")?;
        HostDevice.with_borrowed_read(input, shape, f)
    }

    /// [`HostDevice::with_borrowed_write`] on the host; `WrongBackend` on a GPU.
    pub fn with_borrowed_write<U: Element, R>(
        &self,
        output: &mut [U],
        shape: impl Into<Shape>,
        f: impl FnOnce(&mut Tensor<U>) -> R,
    ) -> Result<R> {
        self.host_only("with_borrowed_write")?;
        HostDevice.with_borrowed_write(output, shape, f)
    }
}

impl Device {
    /// `WrongBackend` naming `op` unless this is the host: a GPU's kernels
    /// cannot reach the caller's memory.
    fn host_only(&self, op: &'static str) -> Result<()> {
        if self.is_host() {
            Ok(())
        } else {
            Err(Error::WrongBackend {
                op,
                expected: "host",
                actual: self.name(),
            })
        }
    }
}

fn checked_shape(shape: Shape, len: usize) -> Result<Shape> {
    let expected = shape.elem_count()?;
    if expected != len {
        return Err(Error::LenMismatch {
            shape: shape.dims().to_vec(),
            expected,
            actual: len,
        });
    }
    Ok(shape)
}

/// The written tensor of one [`HostDevice::with_borrowed_write`] call.
struct WriteScope<U: Element> {
    /// Dropped first thing in `drop`, to see whether the borrowed buffer
    /// goes with it.
    output: ManuallyDrop<Tensor<U>>,
    /// Set when the output's borrowed buffer is dropped.
    released: Arc<AtomicBool>,
}

impl<U: Element> Drop for WriteScope<U> {
    fn drop(&mut self) {
        // SAFETY: `output` is not used again: this is the scope's end.
        unsafe { ManuallyDrop::drop(&mut self.output) };
        // The borrowed buffer has exactly one tensor (views are refused).
        // If it was in the slot it is gone now; if it is not gone, `f`
        // moved it out and it is alive somewhere: it must not reach the
        // caller's memory after the borrow ends, and nothing here can take
        // it back, so nothing may run after this point.
        if !self.released.load(Ordering::Acquire) {
            eprintln!(
                "phobos: a tensor borrowing the caller's memory (the output of \
                 `with_borrowed` or `with_borrowed_write`) was moved out of its \
                 scope and would outlive the borrow; aborting"
            );
            std::process::abort();
        }
    }
}

#[cfg(test)]
#[path = "borrowed_tests.rs"]
mod tests;
