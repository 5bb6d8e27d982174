//! Checking a job against its kernel: every parameter given once with the
//! declared kind, dtype and rank; written tensors are outputs; symbolic
//! dims agree across tensors and with `dim` lines.

use std::collections::BTreeMap;

use phobos_build::ir::{Dim, Elem, Kernel, ParamKind};

use super::{Job, JobError, ScalarSpec};

/// A job matched to its kernel.
#[derive(Clone, Debug)]
pub struct Binding {
    pub kernel: Kernel,
    /// The kernel source text (its hash names the kernel between processes).
    pub source_text: String,
    /// Every symbolic dim's extent.
    pub dims: BTreeMap<String, usize>,
}

/// Loads the job's kernel source, checks it, and matches it to the job.
pub fn bind(job: &Job) -> Result<Binding, JobError> {
    let text = std::fs::read_to_string(&job.source).map_err(|e| {
        job.error(
            job.source_line,
            format!(
                "cannot read the kernel source {}: {e}",
                job.source.display()
            ),
        )
    })?;
    let source = phobos_build::Source::file(job.source.display().to_string(), text.clone());
    let module = phobos_build::check_source(&source).map_err(|d| {
        job.error(
            job.source_line,
            format!("the kernel does not compile:\n{}", d.render()),
        )
    })?;
    let kernel = match module.kernels.as_slice() {
        [one] => one.clone(),
        [] => return Err(job.error(job.source_line, "the source defines no kernel")),
        many => {
            let names: Vec<&str> = many.iter().map(|k| k.name.as_str()).collect();
            return Err(job.error(
                job.source_line,
                format!(
                    "the source defines {} kernels ({}); a job runs exactly one",
                    many.len(),
                    names.join(", ")
                ),
            ));
        }
    };
    bind_kernel(job, kernel, text)
}

/// [`bind`] for an already checked kernel.
pub fn bind_kernel(job: &Job, kernel: Kernel, source_text: String) -> Result<Binding, JobError> {
    // Names the job declares that the kernel does not have.
    for t in &job.tensors {
        if kernel.param(&t.name).is_none() {
            return Err(job.error(t.line, unknown(&kernel, &t.name)));
        }
    }
    for s in &job.scalars {
        if kernel.param(&s.name).is_none() {
            return Err(job.error(s.line, unknown(&kernel, &s.name)));
        }
    }
    let kernel_dims = kernel.dims();
    for (name, _, line) in &job.dims {
        if !kernel_dims.contains(&name.as_str()) {
            return Err(job.error(
                *line,
                format!(
                    "kernel `{}` has no dim `{name}` (its dims: {})",
                    kernel.name,
                    kernel_dims.join(", ")
                ),
            ));
        }
    }
    let mut dims: BTreeMap<String, (usize, String)> = BTreeMap::new();
    for (name, value, line) in &job.dims {
        dims.insert(
            name.clone(),
            (*value, format!("`dim {name}` on line {line}")),
        );
    }
    for param in &kernel.params {
        match &param.kind {
            ParamKind::Tensor {
                elem,
                dims: pdims,
                written,
            } => {
                let Some(t) = job.tensor(&param.name) else {
                    return Err(job.error(
                        0,
                        format!(
                            "kernel `{}` needs tensor `{}`: add `tensor {} = ...`",
                            kernel.name, param.name, param.name
                        ),
                    ));
                };
                let Elem::Scalar(dtype) = elem else {
                    return Err(job.error(
                        t.line,
                        format!(
                            "`{}` is a quantized tensor ({elem}); jobs support scalar dtypes only",
                            t.name
                        ),
                    ));
                };
                if *dtype != t.dtype {
                    return Err(job.error(
                        t.line,
                        format!(
                            "`{}` is {} in the kernel, {} in the job",
                            t.name,
                            dtype.name(),
                            t.dtype.name()
                        ),
                    ));
                }
                if pdims.len() != t.shape.len() {
                    return Err(job.error(
                        t.line,
                        format!(
                            "`{}` has rank {} in the kernel, shape {:?} in the job",
                            t.name,
                            pdims.len(),
                            t.shape
                        ),
                    ));
                }
                if *written && !t.access.is_output() {
                    return Err(job.error(
                        t.line,
                        format!(
                            "kernel `{}` writes `{}`: declare it `write` or `rmw`",
                            kernel.name, t.name
                        ),
                    ));
                }
                for (axis, (d, &extent)) in pdims.iter().zip(&t.shape).enumerate() {
                    match d {
                        Dim::Lit(v) if *v as usize != extent => {
                            return Err(job.error(
                                t.line,
                                format!(
                                    "`{}` dim {axis} must be {v}, the job gives {extent}",
                                    t.name
                                ),
                            ));
                        }
                        Dim::Lit(_) => {}
                        Dim::Sym(name) => match dims.get(name) {
                            Some((first, origin)) if *first != extent => {
                                return Err(job.error(
                                    t.line,
                                    format!("dim `{name}` is {extent} here (`{}` axis {axis}) but {first} from {origin}", t.name),
                                ));
                            }
                            Some(_) => {}
                            None => {
                                dims.insert(
                                    name.clone(),
                                    (extent, format!("`{}` on line {}", t.name, t.line)),
                                );
                            }
                        },
                    }
                }
            }
            ParamKind::Scalar { dtype } => {
                let Some(s) = job
                    .scalars
                    .iter()
                    .find(|s: &&ScalarSpec| s.name == param.name)
                else {
                    return Err(job.error(
                        0,
                        format!(
                            "kernel `{}` needs scalar `{}`: add `scalar {} = {} VALUE`",
                            kernel.name,
                            param.name,
                            param.name,
                            dtype.name()
                        ),
                    ));
                };
                if s.dtype != *dtype {
                    return Err(job.error(
                        s.line,
                        format!(
                            "`{}` is {} in the kernel, {} in the job",
                            s.name,
                            dtype.name(),
                            s.dtype.name()
                        ),
                    ));
                }
            }
        }
    }
    Ok(Binding {
        kernel,
        source_text,
        dims: dims.into_iter().map(|(k, (v, _))| (k, v)).collect(),
    })
}

fn unknown(kernel: &Kernel, name: &str) -> String {
    let params: Vec<&str> = kernel.params.iter().map(|p| p.name.as_str()).collect();
    format!(
        "kernel `{}` has no parameter `{name}` (its parameters: {})",
        kernel.name,
        params.join(", ")
    )
}
