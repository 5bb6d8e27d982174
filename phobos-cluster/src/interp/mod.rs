//! Running a kernel that was not compiled into the binary: an interpreter
//! of the typed tile IR (phobos-build's checker output) over the host tile
//! library (`phobos_rt::host`).
//!
//! Why an interpreter and not a JIT: tile programs spend their time inside
//! the tile library's ops (`dot`, loads, elementwise over whole tiles), so
//! walking the IR per op costs little next to the op itself, and calling
//! the very functions the generated host code calls, in the same order
//! (including the in-place `acc += dot(a, b)` rewrite), makes the
//! interpreter bit-identical to the generated code by construction. The
//! test `tests/interp_vs_generated.rs` checks that on every example kernel.
//!
//! Entry points: [`Program::new`] binds a kernel, a config, tensors and
//! scalars (checking ranks and dims as the generated launcher does);
//! [`Program::run_all`] runs the whole grid, [`Program::run_block`] a box of
//! it (the cluster runs one supertile of programs per call).

mod eval;
mod stmt;
pub mod value;
pub mod views;

use std::collections::HashMap;

use phobos_build::ir::{Config, Dim, Kernel, LocalId, ParamKind};
use rayon::prelude::*;

pub use value::Val;
use views::TensorView;

use crate::store::HostTensor;

#[derive(Debug, thiserror::Error)]
pub enum InterpError {
    #[error("type error in {op}: {found}")]
    Type { op: &'static str, found: String },
    #[error("the interpreter does not support {what}")]
    Unsupported { what: String },
    #[error("kernel `{kernel}`: {message}")]
    Bind { kernel: String, message: String },
    #[error("local `{name}` is read before it is set")]
    Unset { name: String },
    #[error("kernel `{kernel}`: loop `{var}` has step 0")]
    LoopStepZero { kernel: String, var: String },
    #[error(transparent)]
    Runtime(#[from] phobos_rt::Error),
}

/// A kernel bound to a config, tensors and scalars, ready to run programs.
pub struct Program<'a> {
    kernel: &'a Kernel,
    tunes: HashMap<String, i32>,
    dims: HashMap<String, i32>,
    scalars: HashMap<String, Val>,
    views: HashMap<String, TensorView<'a>>,
    /// Where each region-bound tensor's local buffer starts in the tensor.
    origins: HashMap<String, Vec<i64>>,
    grid: [usize; 3],
    num_programs: [i32; 3],
}

/// One program's state: its grid point and its locals.
pub(crate) struct Frame<'k> {
    kernel: &'k Kernel,
    pid: [i32; 3],
    locals: Vec<Option<Val>>,
}

impl Frame<'_> {
    fn local(&self, id: LocalId) -> Result<&Val, InterpError> {
        self.locals
            .get(id.0 as usize)
            .and_then(Option::as_ref)
            .ok_or_else(|| InterpError::Unset {
                name: self
                    .kernel
                    .local(id)
                    .map_or_else(|| format!("#{}", id.0), |l| l.name.clone()),
            })
    }
}

impl<'a> Program<'a> {
    /// Binds `kernel` under `config` to named tensors and scalars. Every
    /// parameter must be given, tensors with the declared dtype and rank;
    /// symbolic dims must agree across tensors.
    pub fn new(
        kernel: &'a Kernel,
        config: &Config,
        tensors: Vec<(&str, &'a mut HostTensor)>,
        scalars: &[(&str, Val)],
    ) -> Result<Program<'a>, InterpError> {
        let tensors = tensors.into_iter().map(|(n, t)| (n, t, None)).collect();
        Program::bind(kernel, config, tensors, None, scalars)
    }

    /// Like [`Program::new`] for tensors held as regions: each buffer holds
    /// `tensor[origin .. origin + buffer shape]`, and `dims` gives the whole
    /// tensors' dims. Programs must only touch elements inside the regions
    /// or outside the tensor (the planner's footprints guarantee it), so
    /// masking at a region's edge equals masking at the tensor's.
    pub fn with_regions(
        kernel: &'a Kernel,
        config: &Config,
        dims: &std::collections::BTreeMap<String, usize>,
        tensors: Vec<(&str, &'a mut HostTensor, Vec<usize>)>,
        scalars: &[(&str, Val)],
    ) -> Result<Program<'a>, InterpError> {
        let tensors = tensors
            .into_iter()
            .map(|(n, t, o)| (n, t, Some(o)))
            .collect();
        Program::bind(kernel, config, tensors, Some(dims), scalars)
    }

    fn bind(
        kernel: &'a Kernel,
        config: &Config,
        tensors: Vec<(&str, &'a mut HostTensor, Option<Vec<usize>>)>,
        global_dims: Option<&std::collections::BTreeMap<String, usize>>,
        scalars: &[(&str, Val)],
    ) -> Result<Program<'a>, InterpError> {
        let bind = |message: String| InterpError::Bind {
            kernel: kernel.name.clone(),
            message,
        };
        if !kernel.configs().contains(config) {
            return Err(bind(format!("{config:?} is not in the tune space")));
        }
        let mut tunes = HashMap::new();
        for (name, v) in &config.values {
            tunes.insert(
                name.clone(),
                i32::try_from(*v)
                    .map_err(|_| bind(format!("tune value {name}={v} exceeds i32")))?,
            );
        }
        let mut by_name: HashMap<&str, (&'a mut HostTensor, Option<Vec<usize>>)> =
            tensors.into_iter().map(|(n, t, o)| (n, (t, o))).collect();
        let mut dims: HashMap<String, i32> = HashMap::new();
        let mut origins = HashMap::new();
        if let Some(global) = global_dims {
            for (name, &v) in global {
                dims.insert(
                    name.clone(),
                    i32::try_from(v).map_err(|_| bind(format!("dim `{name}` exceeds i32")))?,
                );
            }
        }
        let mut views = HashMap::new();
        let mut scalar_map = HashMap::new();
        for param in &kernel.params {
            match &param.kind {
                ParamKind::Tensor {
                    elem,
                    dims: pdims,
                    written,
                } => {
                    let (tensor, origin) = by_name
                        .remove(param.name.as_str())
                        .ok_or_else(|| bind(format!("tensor `{}` is not given", param.name)))?;
                    if elem.scalar() != Some(tensor.dtype()) {
                        return Err(bind(format!(
                            "`{}` is {elem}, the tensor is {}",
                            param.name,
                            tensor.dtype().name()
                        )));
                    }
                    if tensor.shape().len() != pdims.len() {
                        return Err(bind(format!(
                            "`{}` has rank {}, the tensor {:?}",
                            param.name,
                            pdims.len(),
                            tensor.shape()
                        )));
                    }
                    if let Some(origin) = origin {
                        if origin.len() != pdims.len() {
                            return Err(bind(format!(
                                "`{}` region origin has rank {}",
                                param.name,
                                origin.len()
                            )));
                        }
                        origins.insert(
                            param.name.clone(),
                            origin.iter().map(|&o| o as i64).collect(),
                        );
                        views.insert(param.name.clone(), TensorView::new(tensor, *written)?);
                        continue;
                    }
                    for (axis, (d, &extent)) in pdims.iter().zip(tensor.shape()).enumerate() {
                        let extent_i32 = i32::try_from(extent).map_err(|_| {
                            bind(format!("`{}` axis {axis} exceeds i32", param.name))
                        })?;
                        match d {
                            Dim::Lit(v) if *v as usize != extent => {
                                return Err(bind(format!(
                                    "`{}` axis {axis} must be {v}, is {extent}",
                                    param.name
                                )));
                            }
                            Dim::Lit(_) => {}
                            Dim::Sym(name) => match dims.get(name) {
                                Some(&first) if first != extent_i32 => {
                                    return Err(bind(format!(
                                        "dim `{name}` is {first} and {extent} (`{}`)",
                                        param.name
                                    )));
                                }
                                Some(_) => {}
                                None => {
                                    dims.insert(name.clone(), extent_i32);
                                }
                            },
                        }
                    }
                    views.insert(param.name.clone(), TensorView::new(tensor, *written)?);
                }
                ParamKind::Scalar { dtype } => {
                    let value = scalars
                        .iter()
                        .find(|(n, _)| *n == param.name)
                        .map(|(_, v)| v.clone())
                        .ok_or_else(|| bind(format!("scalar `{}` is not given", param.name)))?;
                    if value.dtype() != *dtype || !value.shape().is_empty() {
                        return Err(bind(format!(
                            "scalar `{}` must be a {} scalar",
                            param.name,
                            dtype.name()
                        )));
                    }
                    scalar_map.insert(param.name.clone(), value);
                }
            }
        }
        let mut program = Program {
            kernel,
            tunes,
            dims,
            scalars: scalar_map,
            views,
            origins,
            grid: [1; 3],
            num_programs: [1; 3],
        };
        let probe = Frame {
            kernel,
            pid: [0; 3],
            locals: Vec::new(),
        };
        for (axis, e) in kernel.grid.iter().enumerate().take(3) {
            let v = program.index(&probe, e)?;
            program.grid[axis] = usize::try_from(v).map_err(|_| {
                InterpError::Runtime(phobos_rt::Error::GridExtent {
                    kernel: kernel.name.clone(),
                    axis,
                    value: v,
                })
            })?;
        }
        if program.grid.iter().any(|&g| g > i32::MAX as usize) {
            return Err(phobos_rt::Error::GridTooLarge {
                grid: program.grid,
                max: i32::MAX as usize,
            }
            .into());
        }
        program.num_programs = program.grid.map(|g| g as i32);
        Ok(program)
    }

    /// The launch grid (`@grid` under the bound dims and config).
    pub fn grid(&self) -> [usize; 3] {
        self.grid
    }

    /// Runs every program of the grid, in parallel.
    pub fn run_all(&self) -> Result<(), InterpError> {
        self.run_block([0; 3], self.grid)
    }

    /// Runs the programs `lo[d] <= pid[d] < hi[d]`, in parallel.
    pub fn run_block(&self, lo: [usize; 3], hi: [usize; 3]) -> Result<(), InterpError> {
        let hi = [0, 1, 2].map(|d| hi[d].min(self.grid[d]));
        let ext = [0, 1, 2].map(|d| hi[d].saturating_sub(lo[d]));
        let total = ext[0] * ext[1] * ext[2];
        (0..total).into_par_iter().try_for_each(|linear| {
            let pid = [
                (lo[0] + linear % ext[0]) as i32,
                (lo[1] + (linear / ext[0]) % ext[1]) as i32,
                (lo[2] + linear / (ext[0] * ext[1])) as i32,
            ];
            self.run_program(pid)
        })
    }

    /// Runs one program.
    pub fn run_program(&self, pid: [i32; 3]) -> Result<(), InterpError> {
        let mut frame = Frame {
            kernel: self.kernel,
            pid,
            locals: vec![None; self.kernel.locals.len()],
        };
        self.block(&mut frame, &self.kernel.body)
    }

    fn view(&self, name: &str) -> Result<&TensorView<'a>, InterpError> {
        self.views
            .get(name)
            .ok_or_else(|| InterpError::Unsupported {
                what: format!("an unbound tensor `{name}`"),
            })
    }

    fn scalar_param(&self, name: &str) -> Result<&Val, InterpError> {
        self.scalars
            .get(name)
            .ok_or_else(|| InterpError::Unsupported {
                what: format!("an unbound scalar `{name}`"),
            })
    }

    fn dim(&self, name: &str) -> Result<i32, InterpError> {
        self.dims
            .get(name)
            .copied()
            .ok_or_else(|| InterpError::Unsupported {
                what: format!("an unbound dim `{name}`"),
            })
    }

    fn tune(&self, name: &str) -> Result<i32, InterpError> {
        self.tunes
            .get(name)
            .copied()
            .ok_or_else(|| InterpError::Unsupported {
                what: format!("an unbound tune parameter `{name}`"),
            })
    }
}
