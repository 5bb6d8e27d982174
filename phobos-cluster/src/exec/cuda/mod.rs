//! Supertiles on a CUDA device: the job's kernel, read at run time, is
//! rewritten to take its program-id base as parameters ([`rewrite`]),
//! compiled to PTX by phobos-build's MLIR back end (feature `ptx`), cached
//! on disk by content hash ([`ptx_cache`]), and launched through the
//! phobos-rt CUDA runtime over the supertile's box of programs. Each
//! tensor travels as its buffer region (what the supertile reads and
//! writes, as on the host), passed as a pointer placed so that the
//! region's first element sits at its global coordinates.
//!
//! The driver is loaded at run time: on a machine without one,
//! [`open_device`] fails with the runtime's error (which library or device
//! is missing) when the pod starts, before it registers.

pub mod ptx_cache;
pub mod rewrite;

use phobos_build::ir::{Kernel, ParamKind};
use phobos_rt::artifact::{Fingerprint, KernelArtifact, PtxVariant};
use phobos_rt::cuda::{KernelArg, ScalarArg};
use phobos_rt::{DType, Device, Element, Tensor};

use super::{ExecError, RegionLoader, Traffic};
use crate::job::{Binding, Job, ScalarValue};
use crate::plan::{Plan, Supertile};
use crate::store::HostTensor;
use ptx_cache::{CompiledPtx, PtxCache, PtxCacheError, PtxKey};
use rewrite::{PID_BASES, leak, leak_slice};

/// Offsets inside the kernel are 32-bit (the runtime's default width).
const INDEX_BITS: u32 = 32;

#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    #[error("--backend cuda: CUDA device {ordinal}: {source}")]
    Device {
        ordinal: usize,
        #[source]
        source: phobos_rt::Error,
    },
    #[error(transparent)]
    Ptx(#[from] PtxCacheError),
    #[error("kernel `{kernel}` on CUDA: {message}")]
    Kernel { kernel: String, message: String },
}

/// Opens CUDA device `ordinal`, or says why there is none.
pub fn open_device(ordinal: usize) -> Result<Device, CudaError> {
    Device::cuda(ordinal).map_err(|source| CudaError::Device { ordinal, source })
}

/// A job's kernel compiled and loaded for one device.
pub struct CudaRunner {
    device: Device,
    artifact: &'static KernelArtifact,
    dims: Vec<(&'static str, usize)>,
    /// The job's scalars by parameter name.
    scalars: Vec<(String, ScalarArg)>,
}

impl CudaRunner {
    /// Compiles (or loads from `cache`) the job's kernel for `device`.
    /// Returns the runner and whether the PTX came from the cache.
    pub fn prepare(
        device: Device,
        job: &Job,
        binding: &Binding,
        plan: &Plan,
        cache: &PtxCache,
    ) -> Result<(CudaRunner, bool), CudaError> {
        let name = binding.kernel.name.clone();
        let fail = |message: String| CudaError::Kernel {
            kernel: name.clone(),
            message,
        };
        let chip = device
            .as_cuda()
            .ok_or_else(|| fail("the device is not a CUDA device".into()))?
            .info()
            .chip
            .clone();
        let kernel = rewrite::with_program_bases(&binding.kernel);
        let key = PtxKey {
            source: &binding.source_text,
            kernel: &kernel.name,
            config: plan.config.to_string(),
            chip: &chip,
            index_bits: INDEX_BITS,
        };
        let (compiled, hit) = cache.get_or_compile(&key, || compile(&kernel, plan, &chip))?;
        tracing::info!(
            kernel = %kernel.name, %chip, cached = hit, threads = compiled.threads,
            "kernel ready on CUDA"
        );
        let artifact = artifact(&kernel, plan, &chip, &compiled).map_err(&fail)?;
        let dims: Vec<(&'static str, usize)> = artifact
            .dims
            .iter()
            .map(|&d| {
                plan.dims
                    .get(d)
                    .map(|&v| (d, v))
                    .ok_or_else(|| fail(format!("the job gives no extent for dim `{d}`")))
            })
            .collect::<Result<_, _>>()?;
        let scalars = job
            .scalars
            .iter()
            .map(|s| -> Result<(String, ScalarArg), CudaError> {
                Ok((s.name.clone(), scalar_arg(s.dtype, s.value).map_err(&fail)?))
            })
            .collect::<Result<_, _>>()?;
        Ok((
            CudaRunner {
                device,
                artifact,
                dims,
                scalars,
            },
            hit,
        ))
    }

    /// Runs supertile `st`: its buffers loaded through `load`, uploaded,
    /// the box of programs launched, the written regions copied back and
    /// stored into the outputs' staging copies.
    pub fn run_supertile(
        &self,
        job: &Job,
        binding: &Binding,
        st: &Supertile,
        load: &mut RegionLoader<'_>,
    ) -> Result<Traffic, ExecError> {
        let (mut buffers, mut traffic) = super::load_buffers(job, binding, st, load)?;
        let cuda_err = |e: phobos_rt::Error| ExecError::Cuda(e.to_string());
        let Some(cuda) = self.device.as_cuda() else {
            return Err(ExecError::Cuda("not a CUDA device".into()));
        };
        let mut on_device: Vec<(String, HostTensor)> = Vec::new();
        let mut args = Vec::with_capacity(binding.kernel.params.len() + 3);
        for p in &binding.kernel.params {
            match &p.kind {
                ParamKind::Tensor { written, .. } => {
                    let (Some(spec), Some((host, region))) =
                        (job.tensor(&p.name), buffers.get(&p.name))
                    else {
                        return Err(ExecError::Cuda(format!("no buffer for `{}`", p.name)));
                    };
                    let device_tensor = to_device(host, &self.device).map_err(cuda_err)?;
                    let arg =
                        crate::with_host_tensor!(&device_tensor, t => t.cuda_arg(cuda, *written))
                            .map_err(cuda_err)?;
                    let KernelArg::Tensor(mut arg) = arg else {
                        return Err(ExecError::Cuda(format!("`{}` is not a tensor", p.name)));
                    };
                    // Row-major strides of the region; the pointer moves back
                    // by the origin's offset so global indices land inside it.
                    let strides = row_major_strides(&region.len);
                    let origin: usize = region.start.iter().zip(&strides).map(|(s, t)| s * t).sum();
                    arg.device_ptr = arg
                        .device_ptr
                        .wrapping_sub((origin * spec.dtype.size_bytes()) as u64);
                    arg.shape = spec.shape.clone();
                    arg.strides = strides;
                    args.push(KernelArg::Tensor(arg));
                    on_device.push((p.name.clone(), device_tensor));
                }
                ParamKind::Scalar { .. } => {
                    let Some((_, value)) = self.scalars.iter().find(|(n, _)| n == &p.name) else {
                        return Err(ExecError::Cuda(format!("no value for scalar `{}`", p.name)));
                    };
                    args.push(KernelArg::Scalar(*value));
                }
            }
        }
        for axis in 0..PID_BASES.len() {
            args.push(KernelArg::Scalar(ScalarArg::of(st.lo[axis] as i32)));
        }
        let grid = [0, 1, 2].map(|d| st.hi[d] - st.lo[d]);
        cuda.launch(self.artifact, 0, grid, &self.dims, &args)
            .map_err(cuda_err)?;
        cuda.synchronize().map_err(cuda_err)?;
        let host = Device::host();
        for (name, device_tensor) in &on_device {
            if st.footprint.writes.contains_key(name)
                && let Some((buffer, _)) = buffers.get_mut(name)
            {
                *buffer = to_device(device_tensor, &host).map_err(cuda_err)?;
            }
        }
        super::store_writes(job, st, &buffers, &mut traffic)?;
        Ok(traffic)
    }
}

#[cfg(feature = "ptx")]
fn compile(kernel: &Kernel, plan: &Plan, chip: &str) -> Result<CompiledPtx, PtxCacheError> {
    let v = phobos_build::back::mlir::compile_ptx(kernel, &plan.config, chip, INDEX_BITS).map_err(
        |e| PtxCacheError::Compile {
            kernel: kernel.name.clone(),
            chip: chip.to_string(),
            message: e.to_string(),
        },
    )?;
    Ok(CompiledPtx {
        ptx: v.ptx,
        threads: v.threads,
        shared_bytes: v.shared_bytes,
    })
}

#[cfg(not(feature = "ptx"))]
fn compile(kernel: &Kernel, _plan: &Plan, chip: &str) -> Result<CompiledPtx, PtxCacheError> {
    Err(PtxCacheError::Compile {
        kernel: kernel.name.clone(),
        chip: chip.to_string(),
        message: "this phobos-cluster was built without feature `ptx` (MLIR/LLVM 22); \
                  build it with `--features ptx` to compile kernels for CUDA pods"
            .into(),
    })
}

/// The artifact the runtime launches, for a kernel compiled at run time
/// (leaked: a pod builds one, for its job).
fn artifact(
    kernel: &Kernel,
    plan: &Plan,
    chip: &str,
    compiled: &CompiledPtx,
) -> Result<&'static KernelArtifact, String> {
    let params = rewrite::abi_params(kernel)?;
    let config: Vec<(&'static str, i64)> = plan
        .config
        .values
        .iter()
        .map(|(n, v)| (leak(n.clone()), *v))
        .collect();
    let variant = PtxVariant {
        config: leak_slice(config),
        chip: leak(chip.to_string()),
        index_bits: INDEX_BITS,
        ptx_lz4: leak_slice(lz4_flex::block::compress_prepend_size(
            compiled.ptx.as_bytes(),
        )),
        ptx_len_bytes: compiled.ptx.len(),
        threads: compiled.threads,
        shared_bytes: compiled.shared_bytes,
        registers: None,
        spill_bytes: None,
    };
    use phobos_build::back::fingerprint;
    Ok(Box::leak(Box::new(KernelArtifact {
        name: leak(kernel.name.clone()),
        ptx_built: true,
        variants: leak_slice(vec![variant]),
        pruned: &[],
        grid: &[],
        params: leak_slice(params),
        dims: leak_slice(
            kernel
                .dims()
                .into_iter()
                .map(|d| leak(d.to_string()))
                .collect(),
        ),
        fingerprint: Fingerprint {
            source_hash: 0,
            compiler_version: fingerprint::COMPILER_VERSION,
            backend_hash: fingerprint::mlir_backend_hash(),
            mlir_version: fingerprint::MLIR_VERSION,
        },
        autotune: &[],
    })))
}

fn row_major_strides(len: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; len.len()];
    for d in (0..len.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * len[d + 1].max(1);
    }
    strides
}

/// A job scalar as a launch argument of `dtype` (the kernel's).
fn scalar_arg(dtype: DType, value: ScalarValue) -> Result<ScalarArg, String> {
    let (f, i) = match value {
        ScalarValue::Int(v) => (v as f64, v),
        ScalarValue::Float(v) => (v, v as i64),
        ScalarValue::Bool(b) => (f64::from(u8::from(b)), i64::from(b)),
    };
    let bytes: Vec<u8> = match dtype {
        DType::Bool => vec![u8::from(i != 0)],
        DType::I8 => (i as i8).to_le_bytes().to_vec(),
        DType::U8 => (i as u8).to_le_bytes().to_vec(),
        DType::I16 => (i as i16).to_le_bytes().to_vec(),
        DType::U16 => (i as u16).to_le_bytes().to_vec(),
        DType::I32 => (i as i32).to_le_bytes().to_vec(),
        DType::U32 => (i as u32).to_le_bytes().to_vec(),
        DType::I64 => i.to_le_bytes().to_vec(),
        DType::F16 => half::f16::from_f64(f).to_le_bytes().to_vec(),
        DType::Bf16 => half::bf16::from_f64(f).to_le_bytes().to_vec(),
        DType::F32 => (f as f32).to_le_bytes().to_vec(),
        DType::F64 => f.to_le_bytes().to_vec(),
    };
    ScalarArg::from_le_bytes(dtype, &bytes).map_err(|e| e.to_string())
}

/// A copy of `t` on `device` (either way between host and GPU).
fn to_device(t: &HostTensor, device: &Device) -> phobos_rt::Result<HostTensor> {
    fn copy<T: Element>(t: &Tensor<T>, device: &Device) -> phobos_rt::Result<Tensor<T>> {
        let data = t.to_vec()?;
        let mut out = device.zeros::<T>(t.shape().to_vec())?;
        if !data.is_empty() {
            out.copy_from_slice(&data)?;
        }
        Ok(out)
    }
    Ok(match t {
        HostTensor::Bool(t) => HostTensor::Bool(copy(t, device)?),
        HostTensor::I8(t) => HostTensor::I8(copy(t, device)?),
        HostTensor::U8(t) => HostTensor::U8(copy(t, device)?),
        HostTensor::I16(t) => HostTensor::I16(copy(t, device)?),
        HostTensor::U16(t) => HostTensor::U16(copy(t, device)?),
        HostTensor::I32(t) => HostTensor::I32(copy(t, device)?),
        HostTensor::U32(t) => HostTensor::U32(copy(t, device)?),
        HostTensor::I64(t) => HostTensor::I64(copy(t, device)?),
        HostTensor::F16(t) => HostTensor::F16(copy(t, device)?),
        HostTensor::Bf16(t) => HostTensor::Bf16(copy(t, device)?),
        HostTensor::F32(t) => HostTensor::F32(copy(t, device)?),
        HostTensor::F64(t) => HostTensor::F64(copy(t, device)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_driver_the_device_error_names_cuda() {
        match open_device(0) {
            // A machine with a GPU: nothing to check here.
            Ok(_) => {}
            Err(e) => {
                let text = e.to_string();
                assert!(text.contains("CUDA device 0"), "{text}");
                assert!(
                    std::error::Error::source(&e).is_some_and(|s| !s.to_string().is_empty()),
                    "{text}"
                );
            }
        }
    }

    #[test]
    fn scalars_take_the_kernels_dtype() {
        let a = scalar_arg(DType::F32, ScalarValue::Float(1.5)).unwrap();
        assert_eq!(a.le_bytes(), 1.5f32.to_le_bytes());
        let a = scalar_arg(DType::F16, ScalarValue::Int(2)).unwrap();
        assert_eq!(a.le_bytes(), half::f16::from_f32(2.0).to_le_bytes());
        let a = scalar_arg(DType::I32, ScalarValue::Int(-7)).unwrap();
        assert_eq!(a.le_bytes(), (-7i32).to_le_bytes());
        let a = scalar_arg(DType::Bool, ScalarValue::Bool(true)).unwrap();
        assert_eq!(a.le_bytes(), [1]);
    }

    #[test]
    fn region_strides_are_row_major_over_the_region() {
        assert_eq!(row_major_strides(&[3, 4, 5]), vec![20, 5, 1]);
        assert_eq!(row_major_strides(&[0, 0]), vec![1, 1]);
        assert_eq!(row_major_strides(&[7]), vec![1]);
    }
}
