//! cuBLAS, loaded at run time, as the GEMM reference: row-major C = A B is
//! column-major C^T = B^T A^T, so B and A swap places in the call.

use std::ffi::c_void;

use anyhow::{Context, Result, bail};
use cudarc::cublas::{result, sys};
use phobos::cuda::KernelArg;
use phobos::{CudaDevice, Element, Tensor, f16};

fn device_ptr<T: Element>(device: &CudaDevice, tensor: &Tensor<T>) -> Result<u64> {
    match tensor.cuda_arg(device, true)? {
        KernelArg::Tensor(t) => Ok(t.device_ptr),
        KernelArg::Scalar(_) => bail!("a tensor became a scalar"),
        KernelArg::Quant(_) => bail!("a float tensor became a quantized one"),
    }
}

/// A cuBLAS handle on the device's stream, destroyed on drop.
struct Handle(sys::cublasHandle_t);

impl Handle {
    fn new(device: &CudaDevice) -> Result<Handle> {
        // SAFETY: only tries to open the library.
        if !unsafe { sys::is_culib_present() } {
            bail!("no cuBLAS library found (libcublas.so)");
        }
        device.bind_to_thread()?;
        let handle = result::create_handle().context("cublasCreate")?;
        // SAFETY: a live handle and the device's live stream.
        unsafe { result::set_stream(handle, device.cu_stream().cast()) }
            .context("cublasSetStream")?;
        Ok(Handle(handle))
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: created by `Handle::new`, destroyed once.
        let _ = unsafe { result::destroy_handle(self.0) };
    }
}

fn side(n: usize) -> Result<i32> {
    i32::try_from(n).context("GEMM side does not fit cuBLAS's int")
}

/// cuBLAS SGEMM GFLOP/s at n^3.
pub fn gemm_f32_rate(
    device: &CudaDevice,
    reps: u32,
    a: &Tensor<f32>,
    b: &Tensor<f32>,
    c: &mut Tensor<f32>,
    n: usize,
) -> Result<f64> {
    let handle = Handle::new(device)?;
    let (pa, pb, pc) = (
        device_ptr(device, a)?,
        device_ptr(device, b)?,
        device_ptr(device, c)?,
    );
    let ni = side(n)?;
    let (alpha, beta) = (1.0f32, 0.0f32);
    let timer = phobos::cuda::EventTimer::new(device)?;
    let ms = timer.time_ms(reps, || {
        // SAFETY: n x n f32 matrices in live device buffers; host scalars.
        unsafe {
            result::sgemm(
                handle.0,
                sys::cublasOperation_t::CUBLAS_OP_N,
                sys::cublasOperation_t::CUBLAS_OP_N,
                ni,
                ni,
                ni,
                &alpha,
                pb as *const f32,
                ni,
                pa as *const f32,
                ni,
                &beta,
                pc as *mut f32,
                ni,
            )
        }
        .map_err(|e| phobos::Error::Backend {
            backend: "cuda",
            message: format!("cublasSgemm: {e:?}"),
        })
    })?;
    Ok(2.0 * (n as f64).powi(3) / (f64::from(ms) * 1e6))
}

/// cuBLAS GemmEx GFLOP/s at n^3: f16 inputs, f32 output and accumulation.
pub fn gemm_f16_rate(
    device: &CudaDevice,
    reps: u32,
    a: &Tensor<f16>,
    b: &Tensor<f16>,
    c: &mut Tensor<f32>,
    n: usize,
) -> Result<f64> {
    let handle = Handle::new(device)?;
    let (pa, pb, pc) = (
        device_ptr(device, a)?,
        device_ptr(device, b)?,
        device_ptr(device, c)?,
    );
    let ni = side(n)?;
    let (alpha, beta) = (1.0f32, 0.0f32);
    let timer = phobos::cuda::EventTimer::new(device)?;
    let ms = timer.time_ms(reps, || {
        // SAFETY: n x n matrices of the declared types in live device
        // buffers; host scalars of the compute type.
        unsafe {
            result::gemm_ex(
                handle.0,
                sys::cublasOperation_t::CUBLAS_OP_N,
                sys::cublasOperation_t::CUBLAS_OP_N,
                ni,
                ni,
                ni,
                (&raw const alpha).cast::<c_void>(),
                pb as *const c_void,
                sys::cudaDataType::CUDA_R_16F,
                ni,
                pa as *const c_void,
                sys::cudaDataType::CUDA_R_16F,
                ni,
                (&raw const beta).cast::<c_void>(),
                pc as *mut c_void,
                sys::cudaDataType::CUDA_R_32F,
                ni,
                sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(|e| phobos::Error::Backend {
            backend: "cuda",
            message: format!("cublasGemmEx: {e:?}"),
        })
    })?;
    Ok(2.0 * (n as f64).powi(3) / (f64::from(ms) * 1e6))
}
