//! A [`QTensor`]'s blocks on a CUDA device for a launch (SPEC.md §14): the
//! bytes uploaded as they are, passed as a pointer to the first block with
//! byte strides (kernel ABI, `phobos_build::back::mlir::emit`).
//!
//! The typed launcher takes `&QTensor`, whose blocks live on the host, so
//! each CUDA launch uploads them once and keeps the device copy alive in a
//! [`CudaQuantUpload`] until the launch is queued; the device's single
//! stream orders the buffer's reuse after the kernel.

use super::{QTensor, QuantFormat};
use crate::cuda::{KernelArg, QuantArg};
use crate::device::{CudaBuffer, CudaDevice};
use crate::{Error, Result};

/// Keeps a launch's device copy of quantized blocks alive.
#[derive(Debug)]
pub struct CudaQuantUpload {
    buffer: CudaBuffer,
}

impl CudaQuantUpload {
    /// Copies the device blocks back into `tensor` (a tensor the kernel
    /// wrote); waits for the queued launch first.
    pub fn write_back<F: QuantFormat>(&self, tensor: &mut QTensor<'_, F>) -> Result<()> {
        let bytes = tensor.bytes_mut();
        let len = bytes.len();
        self.buffer
            .read(0, &mut bytes[..len.min(self.buffer.len_bytes())])
    }
}

/// Byte strides of a row-major quantized tensor of `shape` (elements, the
/// last dim in blocks of `block_len` elements of `block_bytes` bytes): the
/// blocked dim steps one block, each outer dim one row of the dims after it.
/// `None` when the last dim is not whole blocks or the sizes overflow.
pub fn strides_bytes(shape: &[usize], block_len: usize, block_bytes: usize) -> Option<Vec<usize>> {
    let (&last, outer) = shape.split_last()?;
    if block_len == 0 || !last.is_multiple_of(block_len) {
        return None;
    }
    let mut strides = vec![0usize; shape.len()];
    let mut step = (last / block_len).checked_mul(block_bytes)?;
    strides[shape.len() - 1] = block_bytes;
    for (d, &extent) in outer.iter().enumerate().rev() {
        strides[d] = step;
        step = step.checked_mul(extent)?;
    }
    Some(strides)
}

impl<F: QuantFormat> QTensor<'_, F> {
    /// The launch argument for this tensor on `device`: uploads the blocks
    /// as they are. Keep the returned upload until the launch is queued.
    pub fn cuda_arg(&self, device: &CudaDevice) -> Result<(KernelArg, CudaQuantUpload)> {
        let info = F::GGML.info();
        let strides =
            strides_bytes(self.shape(), info.block_len, info.block_bytes).ok_or_else(|| {
                Error::QuantShape {
                    format: F::NAME,
                    shape: self.shape().to_vec(),
                    reason: format!(
                        "the last dim must be whole blocks of {} (checked at construction)",
                        info.block_len
                    ),
                }
            })?;
        let bytes = self.bytes();
        let buffer = device.alloc_zeroed(bytes.len().max(1))?;
        buffer.write(0, bytes)?;
        let arg = KernelArg::Quant(QuantArg {
            format: F::NAME,
            device_ptr: buffer.device_ptr(),
            shape: self.shape().to_vec(),
            strides_bytes: strides,
            len_bytes: bytes.len(),
        });
        Ok((arg, CudaQuantUpload { buffer }))
    }
}

#[cfg(test)]
mod tests {
    use super::strides_bytes;

    #[test]
    fn strides_step_blocks_then_rows() {
        // q4_k [3, 512]: two 144-byte blocks per row.
        assert_eq!(strides_bytes(&[3, 512], 256, 144), Some(vec![288, 144]));
        // q8_0 [2, 4, 64]: two 34-byte blocks per row of 64.
        assert_eq!(strides_bytes(&[2, 4, 64], 32, 34), Some(vec![272, 68, 34]));
        assert_eq!(strides_bytes(&[64], 32, 34), Some(vec![34]));
        assert_eq!(strides_bytes(&[3, 100], 32, 34), None);
        assert_eq!(strides_bytes(&[], 32, 34), None);
    }
}
