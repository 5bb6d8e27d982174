//! `GgufWriter`: builds GGUF v3 files for tests and tools.

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use crate::quant::GgmlType;

use super::parse::{
    ALIGNMENT_KEY, DEFAULT_ALIGNMENT, GGUF_MAGIC, MAX_DIMS, align_up, checked_size,
};
use super::value::{Array, Value};

#[derive(Debug, thiserror::Error)]
pub enum GgufWriteError {
    #[error("writing GGUF: {0}")]
    Io(#[from] std::io::Error),
    #[error("metadata key '{key}' added twice")]
    DuplicateKey { key: String },
    #[error("tensor '{name}' added twice")]
    DuplicateTensor { name: String },
    #[error("alignment {alignment} is not a power of two above 0")]
    BadAlignment { alignment: u32 },
    #[error("tensor '{name}': {n_dims} dims, at most {MAX_DIMS} are allowed")]
    TooManyDims { name: String, n_dims: usize },
    #[error("tensor '{name}': {ty} with dims {dims:?} needs {expected:?} bytes, got {found}")]
    TensorSize {
        name: String,
        ty: GgmlType,
        dims: Vec<u64>,
        expected: Option<u64>,
        found: usize,
    },
}

struct PendingTensor {
    name: String,
    dims: Vec<u64>,
    ty: GgmlType,
    data: Vec<u8>,
}

/// Collects metadata and tensors, then writes them as one GGUF file.
pub struct GgufWriter {
    version: u32,
    alignment: u64,
    metadata: Vec<(String, Value)>,
    keys: HashSet<String>,
    tensors: Vec<PendingTensor>,
}

impl Default for GgufWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl GgufWriter {
    /// A GGUF v3 writer with the default alignment of 32.
    pub fn new() -> Self {
        Self {
            version: 3,
            alignment: DEFAULT_ALIGNMENT,
            metadata: Vec::new(),
            keys: HashSet::new(),
            tensors: Vec::new(),
        }
    }

    /// Writes the header as version 2 instead (same layout as 3 for
    /// little-endian files; kept to test readers of old files).
    pub fn with_version(mut self, version: u32) -> Self {
        self.version = version;
        self
    }

    /// Sets the data alignment and records it as `general.alignment` (u32).
    pub fn set_alignment(&mut self, alignment: u32) -> Result<&mut Self, GgufWriteError> {
        if !alignment.is_power_of_two() {
            return Err(GgufWriteError::BadAlignment { alignment });
        }
        self.alignment = alignment.into();
        self.add(ALIGNMENT_KEY, alignment)
    }

    /// Adds one metadata entry; keys must be unique.
    pub fn add(&mut self, key: &str, value: impl Into<Value>) -> Result<&mut Self, GgufWriteError> {
        if !self.keys.insert(key.to_owned()) {
            return Err(GgufWriteError::DuplicateKey {
                key: key.to_owned(),
            });
        }
        self.metadata.push((key.to_owned(), value.into()));
        Ok(self)
    }

    /// Adds an array entry (`Vec<T>` of any metadata type, or nested arrays).
    pub fn add_array(
        &mut self,
        key: &str,
        items: impl Into<Array>,
    ) -> Result<&mut Self, GgufWriteError> {
        self.add(key, Value::Array(items.into()))
    }

    /// Adds a tensor; `dims` are in ggml order and `data` must be exactly
    /// the bytes of that many elements of `ty`.
    pub fn add_tensor(
        &mut self,
        name: &str,
        dims: &[u64],
        ty: GgmlType,
        data: Vec<u8>,
    ) -> Result<&mut Self, GgufWriteError> {
        if self.tensors.iter().any(|t| t.name == name) {
            return Err(GgufWriteError::DuplicateTensor {
                name: name.to_owned(),
            });
        }
        if dims.len() > MAX_DIMS {
            return Err(GgufWriteError::TooManyDims {
                name: name.to_owned(),
                n_dims: dims.len(),
            });
        }
        // The reader's own shape rule, so a file this writes can be read.
        let row_len = dims.first().copied().unwrap_or(1);
        let expected = row_len
            .is_multiple_of(ty.info().block_len as u64)
            .then(|| checked_size(dims, ty).ok())
            .flatten()
            .map(|(_, n_bytes)| n_bytes);
        if expected != Some(data.len() as u64) {
            return Err(GgufWriteError::TensorSize {
                name: name.to_owned(),
                ty,
                dims: dims.to_vec(),
                expected,
                found: data.len(),
            });
        }
        self.tensors.push(PendingTensor {
            name: name.to_owned(),
            dims: dims.to_vec(),
            ty,
            data,
        });
        Ok(self)
    }

    /// The whole file as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&GGUF_MAGIC);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&(self.tensors.len() as u64).to_le_bytes());
        out.extend_from_slice(&(self.metadata.len() as u64).to_le_bytes());
        for (key, value) in &self.metadata {
            put_string(&mut out, key);
            out.extend_from_slice(&value.value_type().id().to_le_bytes());
            put_value(&mut out, value);
        }
        let mut data_offset = 0u64;
        let mut offsets = Vec::with_capacity(self.tensors.len());
        for tensor in &self.tensors {
            put_string(&mut out, &tensor.name);
            out.extend_from_slice(&(tensor.dims.len() as u32).to_le_bytes());
            for &d in &tensor.dims {
                out.extend_from_slice(&d.to_le_bytes());
            }
            out.extend_from_slice(&tensor.ty.id().to_le_bytes());
            out.extend_from_slice(&data_offset.to_le_bytes());
            offsets.push(data_offset);
            data_offset = align_up(data_offset + tensor.data.len() as u64, self.alignment);
        }
        let data_start = align_up(out.len() as u64, self.alignment);
        for (tensor, offset) in self.tensors.iter().zip(offsets) {
            out.resize((data_start + offset) as usize, 0);
            out.extend_from_slice(&tensor.data);
        }
        // Pad the last tensor too, as ggml does, so files concatenate cleanly.
        if !self.tensors.is_empty() {
            let end = align_up(out.len() as u64, self.alignment);
            out.resize(end as usize, 0);
        }
        out
    }

    pub fn write_to(&self, mut sink: impl Write) -> Result<(), GgufWriteError> {
        sink.write_all(&self.to_bytes())?;
        Ok(())
    }

    pub fn write_file(&self, path: impl AsRef<Path>) -> Result<(), GgufWriteError> {
        std::fs::write(path, self.to_bytes())?;
        Ok(())
    }
}

fn put_string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::U8(v) => out.push(*v),
        Value::I8(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::U16(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::I16(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::U32(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::I32(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::U64(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::I64(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::F32(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::F64(v) => out.extend_from_slice(&v.to_le_bytes()),
        Value::Bool(v) => out.push(u8::from(*v)),
        Value::String(v) => put_string(out, v),
        Value::Array(a) => put_array(out, a),
    }
}

fn put_array(out: &mut Vec<u8>, array: &Array) {
    out.extend_from_slice(&array.element_type().id().to_le_bytes());
    out.extend_from_slice(&(array.len() as u64).to_le_bytes());
    fn each<T>(out: &mut Vec<u8>, items: &[T], put: impl Fn(&mut Vec<u8>, &T)) {
        for item in items {
            put(out, item);
        }
    }
    match array {
        Array::U8(v) => out.extend_from_slice(v),
        Array::I8(v) => each(out, v, |o, x| o.extend_from_slice(&x.to_le_bytes())),
        Array::U16(v) => each(out, v, |o, x| o.extend_from_slice(&x.to_le_bytes())),
        Array::I16(v) => each(out, v, |o, x| o.extend_from_slice(&x.to_le_bytes())),
        Array::U32(v) => each(out, v, |o, x| o.extend_from_slice(&x.to_le_bytes())),
        Array::I32(v) => each(out, v, |o, x| o.extend_from_slice(&x.to_le_bytes())),
        Array::U64(v) => each(out, v, |o, x| o.extend_from_slice(&x.to_le_bytes())),
        Array::I64(v) => each(out, v, |o, x| o.extend_from_slice(&x.to_le_bytes())),
        Array::F32(v) => each(out, v, |o, x| o.extend_from_slice(&x.to_le_bytes())),
        Array::F64(v) => each(out, v, |o, x| o.extend_from_slice(&x.to_le_bytes())),
        Array::Bool(v) => each(out, v, |o, x| o.push(u8::from(*x))),
        Array::String(v) => each(out, v, |o, x| put_string(o, x)),
        Array::Array(v) => each(out, v, put_array),
    }
}
