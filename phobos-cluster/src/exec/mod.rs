//! Executing a plan's supertiles: the pod-side work of one supertile
//! (load its regions, run its programs through the interpreter, store what
//! it wrote into the outputs' staging copies), and [`run_local`], which runs
//! a whole plan in this process and commits the outputs.

pub mod cuda;
pub mod region_io;

use std::collections::BTreeMap;

use phobos_build::ir::ParamKind;
use phobos_rt::DType;

use crate::interp::{InterpError, Program, Val};
use crate::job::{Access, Binding, Job, ScalarValue, TensorSpec};
use crate::plan::{Plan, Region, Supertile, lower::buffer_region};
use crate::store::{self, HostTensor, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error(transparent)]
    Store(Box<StoreError>),
    #[error(transparent)]
    Interp(Box<InterpError>),
    #[error("{0}")]
    Fetch(String),
    #[error("CUDA: {0}")]
    Cuda(String),
    #[error("job input `{tensor}`: {source}")]
    Input {
        tensor: String,
        #[source]
        source: Box<StoreError>,
    },
}

impl From<StoreError> for ExecError {
    fn from(e: StoreError) -> ExecError {
        ExecError::Store(Box::new(e))
    }
}

impl From<InterpError> for ExecError {
    fn from(e: InterpError) -> ExecError {
        ExecError::Interp(Box::new(e))
    }
}

/// Bytes a run moved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    pub bytes_loaded: u64,
    pub bytes_stored: u64,
}

/// The job's scalars as interpreter values.
pub fn scalar_values(job: &Job) -> Vec<(String, Val)> {
    job.scalars
        .iter()
        .map(|s| {
            let v = match s.value {
                ScalarValue::Int(v) => Val::int_scalar(s.dtype, v),
                ScalarValue::Float(v) => Val::float_scalar(s.dtype, v),
                ScalarValue::Bool(b) => Val::from(b),
            };
            (s.name.clone(), v)
        })
        .collect()
}

/// Checks every file a job reads before anything runs: `read` and `rmw`
/// tensors must exist at their exact size.
pub fn check_inputs(job: &Job) -> Result<(), ExecError> {
    for t in &job.tensors {
        if matches!(t.access, Access::Read | Access::ReadModifyWrite) {
            store::check_size(&t.path, t.dtype, &t.shape).map_err(|source| ExecError::Input {
                tensor: format!("{} (line {})", t.name, t.line),
                source: Box::new(source),
            })?;
        }
    }
    Ok(())
}

/// Runs one supertile: reads its regions (outputs' old values from the
/// original files, which stay untouched until the commit), runs its
/// programs, and writes its output regions into the staging copies.
pub fn run_supertile(
    job: &Job,
    binding: &Binding,
    plan: &Plan,
    st: &Supertile,
    scalars: &[(String, Val)],
) -> Result<Traffic, ExecError> {
    run_supertile_with(job, binding, plan, st, scalars, &mut |spec, region| {
        Ok(region_io::read_region(
            &spec.path,
            spec.dtype,
            &spec.shape,
            region,
        )?)
    })
}

/// Loads one input region of a supertile (from the store, or from a peer).
pub type RegionLoader<'a> = dyn FnMut(&TensorSpec, &Region) -> Result<HostTensor, ExecError> + 'a;

/// [`run_supertile`] with the input regions coming from `load`.
pub fn run_supertile_with(
    job: &Job,
    binding: &Binding,
    plan: &Plan,
    st: &Supertile,
    scalars: &[(String, Val)],
    load: &mut RegionLoader<'_>,
) -> Result<Traffic, ExecError> {
    let (mut buffers, mut traffic) = load_buffers(job, binding, st, load)?;
    {
        let scalar_refs: Vec<(&str, Val)> = scalars
            .iter()
            .map(|(n, v)| (n.as_str(), v.clone()))
            .collect();
        let tensors: Vec<(&str, &mut HostTensor, Vec<usize>)> = buffers
            .iter_mut()
            .map(|(n, (t, r))| (n.as_str(), t, r.start.clone()))
            .collect();
        let program = Program::with_regions(
            &binding.kernel,
            &plan.config,
            &plan.dims,
            tensors,
            &scalar_refs,
        )?;
        program.run_block(st.lo, st.hi)?;
    }
    store_writes(job, st, &buffers, &mut traffic)?;
    Ok(traffic)
}

/// Each tensor parameter's buffer for one supertile, with the region of
/// the tensor it holds: read regions from `load`, the rest zeros.
pub type Buffers = BTreeMap<String, (HostTensor, Region)>;

/// Loads the buffers of supertile `st` (what it reads through `load`).
pub fn load_buffers(
    job: &Job,
    binding: &Binding,
    st: &Supertile,
    load: &mut RegionLoader<'_>,
) -> Result<(Buffers, Traffic), ExecError> {
    let mut traffic = Traffic::default();
    let mut buffers = Buffers::new();
    for p in &binding.kernel.params {
        let ParamKind::Tensor { .. } = p.kind else {
            continue;
        };
        let Some(spec) = job.tensor(&p.name) else {
            continue;
        };
        let region = buffer_region(st, &p.name);
        let region = if region.start.is_empty() {
            // Untouched by this supertile: an empty box at the origin.
            Region {
                start: vec![0; spec.shape.len()],
                len: vec![0; spec.shape.len()],
            }
        } else {
            region
        };
        let touched_read = st.footprint.reads.contains_key(&p.name);
        let buffer = if touched_read && spec.access != Access::Write {
            traffic.bytes_loaded += (region.elements() * spec.dtype.size_bytes()) as u64;
            load(spec, &region)?
        } else {
            HostTensor::zeros(spec.dtype, &region.len)?
        };
        buffers.insert(p.name.clone(), (buffer, region));
    }
    Ok((buffers, traffic))
}

/// Writes what supertile `st` wrote, from its buffers, into the outputs'
/// staging copies.
pub fn store_writes(
    job: &Job,
    st: &Supertile,
    buffers: &Buffers,
    traffic: &mut Traffic,
) -> Result<(), ExecError> {
    for (name, region) in &st.footprint.writes {
        let (Some(spec), Some((buffer, buffer_region))) = (job.tensor(name), buffers.get(name))
        else {
            continue;
        };
        region_io::write_region(
            &store::staging_path(&spec.path),
            &spec.shape,
            buffer,
            buffer_region,
            region,
        )?;
        traffic.bytes_stored += (region.elements() * spec.dtype.size_bytes()) as u64;
    }
    Ok(())
}

/// Creates the staging copies of every output.
pub fn begin_outputs(job: &Job) -> Result<(), ExecError> {
    for t in job.outputs() {
        store::begin_staging(
            &t.path,
            t.dtype,
            &t.shape,
            t.access == Access::ReadModifyWrite,
        )?;
    }
    Ok(())
}

/// Renames every staging copy over its output.
pub fn commit_outputs(job: &Job) -> Result<(), ExecError> {
    for t in job.outputs() {
        store::commit_staging(&t.path)?;
    }
    Ok(())
}

/// Removes the staging copies after a failure; outputs stay as they were.
pub fn abort_outputs(job: &Job) {
    for t in job.outputs() {
        let _ = std::fs::remove_file(store::staging_path(&t.path));
    }
}

/// Runs every supertile of `plan` in this process, then commits the
/// outputs; on any error the outputs are left untouched.
/// `on_supertile` is called after each supertile (progress reporting).
pub fn run_local(
    job: &Job,
    binding: &Binding,
    plan: &Plan,
    on_supertile: &dyn Fn(),
) -> Result<Traffic, ExecError> {
    check_inputs(job)?;
    begin_outputs(job)?;
    let scalars = scalar_values(job);
    let mut total = Traffic::default();
    for st in &plan.supertiles {
        match run_supertile(job, binding, plan, st, &scalars) {
            Ok(t) => {
                total.bytes_loaded += t.bytes_loaded;
                total.bytes_stored += t.bytes_stored;
                on_supertile();
            }
            Err(e) => {
                abort_outputs(job);
                return Err(e);
            }
        }
    }
    if let Err(e) = commit_outputs(job) {
        abort_outputs(job);
        return Err(e);
    }
    Ok(total)
}

/// The dtype of a job tensor (helper for callers holding only a name).
pub fn tensor_dtype(job: &Job, name: &str) -> Option<DType> {
    job.tensor(name).map(|t| t.dtype)
}
