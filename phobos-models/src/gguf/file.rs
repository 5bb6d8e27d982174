//! `Gguf`: an opened file, its metadata and its tensors.

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;

use memmap2::Mmap;

use crate::quant;

use super::error::{GgufError, Result};
use super::parse::{Parsed, parse};
use super::tensor::{TensorInfo, TensorView};
use super::value::{Array, Value};

enum Storage {
    Mapped(Mmap),
    Owned(Vec<u8>),
}

impl Storage {
    fn bytes(&self) -> &[u8] {
        match self {
            Self::Mapped(map) => map,
            Self::Owned(bytes) => bytes,
        }
    }
}

/// An opened GGUF file. Tensor data stays in the mapping and is handed out
/// as borrowed slices.
pub struct Gguf {
    storage: Storage,
    version: u32,
    metadata: Vec<(String, Value)>,
    key_index: HashMap<String, usize>,
    tensors: Vec<TensorInfo>,
    tensor_index: HashMap<String, usize>,
    alignment: u64,
    data_offset: u64,
}

impl std::fmt::Debug for Gguf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gguf")
            .field("version", &self.version)
            .field("len_bytes", &self.storage.bytes().len())
            .field("metadata_entries", &self.metadata.len())
            .field("tensors", &self.tensors.len())
            .finish()
    }
}

impl Gguf {
    /// Maps and validates the file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let io_err = |source| GgufError::Io {
            path: path.to_owned(),
            source,
        };
        let file = File::open(path).map_err(io_err)?;
        // SAFETY: the mapping is read-only. Another process truncating or
        // rewriting the file while it is mapped is outside what Rust can
        // guard against; model files are not modified in place by our tools.
        let map = unsafe { Mmap::map(&file) }.map_err(io_err)?;
        let gguf = Self::from_storage(Storage::Mapped(map))?;
        tracing::debug!(
            path = %path.display(),
            tensors = gguf.tensors.len(),
            metadata = gguf.metadata.len(),
            "opened gguf"
        );
        Ok(gguf)
    }

    /// Parses a copy of `bytes` (tests, fuzzing, in-memory files).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        Self::from_storage(Storage::Owned(bytes.to_vec()))
    }

    /// Parses an owned buffer without copying it.
    pub fn from_vec(bytes: Vec<u8>) -> Result<Self> {
        Self::from_storage(Storage::Owned(bytes))
    }

    fn from_storage(storage: Storage) -> Result<Self> {
        let Parsed {
            version,
            metadata,
            key_index,
            tensors,
            tensor_index,
            alignment,
            data_offset,
        } = parse(storage.bytes())?;
        Ok(Self {
            storage,
            version,
            metadata,
            key_index,
            tensors,
            tensor_index,
            alignment,
            data_offset,
        })
    }

    pub fn version(&self) -> u32 {
        self.version
    }

    /// Tensor data alignment (general.alignment, default 32).
    pub fn alignment(&self) -> u64 {
        self.alignment
    }

    /// File offset where the tensor data section starts.
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    pub fn len_bytes(&self) -> u64 {
        self.storage.bytes().len() as u64
    }

    /// All metadata in file order.
    pub fn metadata(&self) -> impl ExactSizeIterator<Item = (&str, &Value)> {
        self.metadata.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.key_index.get(key).map(|&i| &self.metadata[i].1)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.key_index.contains_key(key)
    }

    fn require(&self, key: &str) -> Result<&Value> {
        self.get(key).ok_or_else(|| GgufError::MissingKey {
            key: key.to_owned(),
        })
    }

    pub fn get_str(&self, key: &str) -> Result<&str> {
        let value = self.require(key)?;
        value
            .as_str()
            .ok_or_else(|| wrong_type(key, "string", value))
    }

    pub fn get_bool(&self, key: &str) -> Result<bool> {
        match self.require(key)? {
            Value::Bool(b) => Ok(*b),
            other => Err(wrong_type(key, "bool", other)),
        }
    }

    /// f32 metadata; an f64 value is accepted when it converts exactly.
    pub fn get_f32(&self, key: &str) -> Result<f32> {
        match self.require(key)? {
            Value::F32(v) => Ok(*v),
            Value::F64(v) if (*v as f32) as f64 == *v || v.is_nan() => Ok(*v as f32),
            Value::F64(v) => Err(GgufError::OutOfRange {
                key: key.to_owned(),
                expected: "f32",
                value: v.to_string(),
            }),
            other => Err(wrong_type(key, "f32", other)),
        }
    }

    /// f64 metadata; f32 values widen exactly.
    pub fn get_f64(&self, key: &str) -> Result<f64> {
        match self.require(key)? {
            Value::F32(v) => Ok((*v).into()),
            Value::F64(v) => Ok(*v),
            other => Err(wrong_type(key, "f64", other)),
        }
    }

    pub fn get_array(&self, key: &str) -> Result<&Array> {
        let value = self.require(key)?;
        value
            .as_array()
            .ok_or_else(|| wrong_type(key, "array", value))
    }

    /// An array of strings (e.g. tokenizer.ggml.tokens).
    pub fn get_str_array(&self, key: &str) -> Result<&[String]> {
        let value = self.require(key)?;
        value
            .as_array()
            .and_then(Array::as_strings)
            .ok_or_else(|| wrong_type(key, "array of string", value))
    }

    /// An array of f32 (e.g. tokenizer.ggml.scores).
    pub fn get_f32_array(&self, key: &str) -> Result<&[f32]> {
        let value = self.require(key)?;
        value
            .as_array()
            .and_then(Array::as_f32)
            .ok_or_else(|| wrong_type(key, "array of f32", value))
    }

    /// An array of i32 (e.g. tokenizer.ggml.token_type).
    pub fn get_i32_array(&self, key: &str) -> Result<&[i32]> {
        let value = self.require(key)?;
        value
            .as_array()
            .and_then(Array::as_i32)
            .ok_or_else(|| wrong_type(key, "array of i32", value))
    }

    /// `general.architecture`, e.g. "gemma3".
    pub fn arch(&self) -> Result<&str> {
        self.get_str("general.architecture")
    }

    /// A key under the architecture's prefix: `arch_u32("block_count")`
    /// reads `gemma3.block_count` in a gemma3 file.
    pub fn arch_u32(&self, suffix: &str) -> Result<u32> {
        let key = format!("{}.{suffix}", self.arch()?);
        self.get_u32(&key)
    }

    /// Like [`Gguf::arch_u32`] for f32 values.
    pub fn arch_f32(&self, suffix: &str) -> Result<f32> {
        let key = format!("{}.{suffix}", self.arch()?);
        self.get_f32(&key)
    }

    /// All tensor directory entries in file order.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    pub fn tensor_info(&self, name: &str) -> Option<&TensorInfo> {
        self.tensor_index.get(name).map(|&i| &self.tensors[i])
    }

    /// The tensor named `name`, its bytes borrowed from the file.
    pub fn tensor(&self, name: &str) -> Result<TensorView<'_>> {
        let info = self
            .tensor_info(name)
            .ok_or_else(|| GgufError::NoSuchTensor {
                name: name.to_owned(),
            })?;
        Ok(TensorView {
            info,
            data: self.tensor_data(info),
        })
    }

    /// Every tensor with its bytes, in file order.
    pub fn tensor_views(&self) -> impl ExactSizeIterator<Item = TensorView<'_>> {
        self.tensors.iter().map(|info| TensorView {
            info,
            data: self.tensor_data(info),
        })
    }

    /// Bytes of a tensor from this file's directory. The range was checked
    /// at open; an entry from another file yields an empty slice.
    pub fn tensor_data(&self, info: &TensorInfo) -> &[u8] {
        let bytes = self.storage.bytes();
        let range = self
            .data_offset
            .checked_add(info.offset)
            .and_then(|start| Some(start..start.checked_add(info.n_bytes)?))
            .and_then(|r| Some(usize::try_from(r.start).ok()?..usize::try_from(r.end).ok()?));
        range.and_then(|r| bytes.get(r)).unwrap_or(&[])
    }

    /// Dequantizes the tensor named `name` to f32 (ggml element order).
    pub fn dequantize_tensor(&self, name: &str) -> Result<Vec<f32>> {
        let view = self.tensor(name)?;
        dequantize_view(&view)
    }
}

/// Dequantizes a borrowed tensor to a new f32 vector.
pub fn dequantize_view(view: &TensorView<'_>) -> Result<Vec<f32>> {
    let dequant_err = |source| GgufError::Dequantize {
        tensor: view.name().to_owned(),
        source,
    };
    let n_elements = usize::try_from(view.n_elements()).map_err(|_| {
        dequant_err(quant::QuantError::Unsupported {
            ty: view.ty(),
            op: "dequantize on this platform",
        })
    })?;
    let mut out = vec![0f32; n_elements];
    quant::dequantize(view.ty(), view.data, &mut out).map_err(dequant_err)?;
    Ok(out)
}

fn wrong_type(key: &str, expected: &'static str, found: &Value) -> GgufError {
    GgufError::WrongType {
        key: key.to_owned(),
        expected,
        found: found.type_description(),
    }
}

macro_rules! integer_getters {
    ($($method:ident -> $ty:ty),* $(,)?) => {
        impl Gguf {
            $(
                #[doc = concat!(
                    "Integer metadata as `", stringify!($ty), "`. Any integer value type is ",
                    "accepted when the value fits, since writers disagree on widths."
                )]
                pub fn $method(&self, key: &str) -> Result<$ty> {
                    let value = self.require(key)?;
                    let raw = value
                        .as_integer()
                        .ok_or_else(|| wrong_type(key, stringify!($ty), value))?;
                    <$ty>::try_from(raw).map_err(|_| GgufError::OutOfRange {
                        key: key.to_owned(),
                        expected: stringify!($ty),
                        value: raw.to_string(),
                    })
                }
            )*
        }
    };
}

integer_getters! {
    get_u8 -> u8,
    get_i8 -> i8,
    get_u16 -> u16,
    get_i16 -> i16,
    get_u32 -> u32,
    get_i32 -> i32,
    get_u64 -> u64,
    get_i64 -> i64,
    get_usize -> usize,
}
