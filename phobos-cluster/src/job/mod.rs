//! The job file: which kernel to run on which tensors.
//!
//! ```text
//! # comments start with '#'
//! source = gemm_f32.ph                 # relative to the job file
//! dim M = 1000
//! tensor A = read  f32 1000x700 file://A.bin
//! tensor C = rmw   f32 1000x900 file:///data/C.bin
//! scalar alpha = f32 0.5
//! ```
//!
//! `read` tensors must exist at their exact size; `rmw` ones too (the
//! kernel reads their old values); `write` ones are created (the kernel
//! sees zeros where it reads them). Every error names the line.
//! [`bind`] then checks the job against the kernel's parameters.

mod bind;

pub use bind::{Binding, bind};

use std::path::{Path, PathBuf};

use phobos_rt::DType;

use crate::store::{self, parse_shape};

/// An error in a job file, at a line (1-based; 0 for the file as a whole).
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct JobError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

/// How a job uses a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
    ReadModifyWrite,
}

impl Access {
    pub fn name(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::ReadModifyWrite => "rmw",
        }
    }

    /// True for tensors the job stores into.
    pub fn is_output(self) -> bool {
        !matches!(self, Access::Read)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct TensorSpec {
    pub name: String,
    pub access: Access,
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub uri: String,
    /// The URI's path, resolved against the job file's folder.
    pub path: PathBuf,
    pub line: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ScalarSpec {
    pub name: String,
    pub dtype: DType,
    /// The value as written; parsed for `dtype` (ints exactly, floats as f64).
    pub value: ScalarValue,
    pub line: usize,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarValue {
    Int(i64),
    Float(f64),
    Bool(bool),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// The job file, as given (for error messages).
    pub file: String,
    /// The kernel source, resolved against the job file's folder.
    pub source: PathBuf,
    pub source_line: usize,
    pub dims: Vec<(String, usize, usize)>,
    pub tensors: Vec<TensorSpec>,
    pub scalars: Vec<ScalarSpec>,
}

impl Job {
    /// Reads and parses a job file.
    pub fn load(path: &Path) -> Result<Job, JobError> {
        let text = std::fs::read_to_string(path).map_err(|e| JobError {
            file: path.display().to_string(),
            line: 0,
            message: format!("cannot read the job file: {e}"),
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        Job::parse(&path.display().to_string(), &text, base)
    }

    /// Parses job text; relative paths resolve against `base`.
    pub fn parse(file: &str, text: &str, base: &Path) -> Result<Job, JobError> {
        let err = |line: usize, message: String| JobError {
            file: file.to_string(),
            line,
            message,
        };
        let mut source: Option<(PathBuf, usize)> = None;
        let mut job = Job {
            file: file.to_string(),
            source: PathBuf::new(),
            source_line: 0,
            dims: Vec::new(),
            tensors: Vec::new(),
            scalars: Vec::new(),
        };
        let mut names: Vec<(String, usize)> = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let content = raw.split('#').next().unwrap_or("").trim();
            if content.is_empty() {
                continue;
            }
            let (lhs, rhs) = content.split_once('=').ok_or_else(|| {
                err(
                    line,
                    format!(
                        "expected `KEY = VALUE` (source, dim, tensor or scalar), found `{content}`"
                    ),
                )
            })?;
            let lhs: Vec<&str> = lhs.split_whitespace().collect();
            let rhs: Vec<&str> = rhs.split_whitespace().collect();
            let mut declare = |name: &str| -> Result<String, JobError> {
                if !is_ident(name) {
                    return Err(err(line, format!("`{name}` is not a valid name")));
                }
                if let Some((_, first)) = names.iter().find(|(n, _)| n == name) {
                    return Err(err(
                        line,
                        format!("`{name}` is already declared on line {first}"),
                    ));
                }
                names.push((name.to_string(), line));
                Ok(name.to_string())
            };
            match lhs.as_slice() {
                ["source"] => {
                    if let Some((_, first)) = &source {
                        return Err(err(
                            line,
                            format!("`source` is already given on line {first}"),
                        ));
                    }
                    let [path] = rhs.as_slice() else {
                        return Err(err(line, "expected `source = PATH`".into()));
                    };
                    source = Some((base.join(path), line));
                }
                ["dim", name] => {
                    let name = declare(name)?;
                    let value = match rhs.as_slice() {
                        [v] => v
                            .parse::<usize>()
                            .ok()
                            .filter(|&v| v > 0 && v <= i32::MAX as usize),
                        _ => None,
                    }
                    .ok_or_else(|| {
                        err(
                            line,
                            format!(
                                "expected `dim {name} = N` with N a positive integer up to 2^31-1"
                            ),
                        )
                    })?;
                    job.dims.push((name, value, line));
                }
                ["tensor", name] => {
                    let name = declare(name)?;
                    let [access, dtype, shape, uri] = rhs.as_slice() else {
                        return Err(err(
                            line,
                            format!(
                                "expected `tensor {name} = read|write|rmw DTYPE RxC file://URI`"
                            ),
                        ));
                    };
                    let access = match *access {
                        "read" => Access::Read,
                        "write" => Access::Write,
                        "rmw" => Access::ReadModifyWrite,
                        other => {
                            return Err(err(
                                line,
                                format!("unknown access `{other}`: expected read, write or rmw"),
                            ));
                        }
                    };
                    let dtype = parse_dtype(dtype).map_err(|m| err(line, m))?;
                    let shape = parse_shape(shape).map_err(|e| err(line, e.to_string()))?;
                    let path =
                        store::uri_path(uri, Some(base)).map_err(|e| err(line, e.to_string()))?;
                    job.tensors.push(TensorSpec {
                        name,
                        access,
                        dtype,
                        shape,
                        uri: uri.to_string(),
                        path,
                        line,
                    });
                }
                ["scalar", name] => {
                    let name = declare(name)?;
                    let [dtype, value] = rhs.as_slice() else {
                        return Err(err(line, format!("expected `scalar {name} = DTYPE VALUE`")));
                    };
                    let dtype = parse_dtype(dtype).map_err(|m| err(line, m))?;
                    let value = parse_scalar(dtype, value).map_err(|m| err(line, m))?;
                    job.scalars.push(ScalarSpec {
                        name,
                        dtype,
                        value,
                        line,
                    });
                }
                _ => {
                    return Err(err(
                        line,
                        format!(
                            "unknown declaration `{}`: expected `source = PATH`, `dim NAME = N`, `tensor NAME = ...` or `scalar NAME = ...`",
                            lhs.join(" ")
                        ),
                    ));
                }
            }
        }
        let (source, source_line) = source
            .ok_or_else(|| err(0, "no `source = PATH` line (the kernel's .ph file)".into()))?;
        job.source = source;
        job.source_line = source_line;
        if !job.tensors.iter().any(|t| t.access.is_output()) {
            return Err(err(
                0,
                "no output tensor: at least one tensor must be `write` or `rmw`".into(),
            ));
        }
        Ok(job)
    }

    pub fn tensor(&self, name: &str) -> Option<&TensorSpec> {
        self.tensors.iter().find(|t| t.name == name)
    }

    pub fn error(&self, line: usize, message: impl Into<String>) -> JobError {
        JobError {
            file: self.file.clone(),
            line,
            message: message.into(),
        }
    }

    /// The output tensors, in declaration order.
    pub fn outputs(&self) -> impl Iterator<Item = &TensorSpec> {
        self.tensors.iter().filter(|t| t.access.is_output())
    }
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn parse_dtype(text: &str) -> Result<DType, String> {
    DType::from_name(text).ok_or_else(|| {
        let known: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
        format!(
            "unknown dtype `{text}`: expected one of {}",
            known.join(", ")
        )
    })
}

fn parse_scalar(dtype: DType, text: &str) -> Result<ScalarValue, String> {
    let bad = || format!("`{text}` is not a valid {} value", dtype.name());
    if dtype == DType::Bool {
        return match text {
            "true" => Ok(ScalarValue::Bool(true)),
            "false" => Ok(ScalarValue::Bool(false)),
            _ => Err(bad()),
        };
    }
    if dtype.is_float() {
        return text
            .parse::<f64>()
            .map(ScalarValue::Float)
            .map_err(|_| bad());
    }
    let v = text.parse::<i64>().map_err(|_| bad())?;
    let (lo, hi): (i128, i128) = if dtype.is_signed_int() {
        (
            -(1i128 << (dtype.bits() - 1)),
            (1i128 << (dtype.bits() - 1)) - 1,
        )
    } else {
        (0, (1i128 << dtype.bits()) - 1)
    };
    if (v as i128) < lo || (v as i128) > hi {
        return Err(format!("{v} is out of range for {}", dtype.name()));
    }
    Ok(ScalarValue::Int(v))
}

#[cfg(test)]
mod tests;
