//! Parsing of the header, metadata and tensor directory. Works on any byte
//! slice; `Gguf` decides where the bytes live.

use std::collections::HashMap;

use crate::quant::GgmlType;

use super::cursor::Cursor;
use super::error::{GgufError, Result};
use super::tensor::TensorInfo;
use super::value::{Array, Value, ValueType};

pub const GGUF_MAGIC: [u8; 4] = *b"GGUF";
pub const DEFAULT_ALIGNMENT: u64 = 32;
pub const ALIGNMENT_KEY: &str = "general.alignment";
/// ggml tensors have at most four dimensions.
pub const MAX_DIMS: usize = 4;
/// Real files nest arrays one or two deep; the limit keeps a hostile file
/// from recursing the parser off the stack.
pub const MAX_ARRAY_DEPTH: usize = 32;

/// Smallest tensor directory entry: name length, n_dims, type, offset.
const MIN_TENSOR_INFO_LEN: u64 = 8 + 4 + 4 + 8;
/// Smallest metadata entry: key length, value type, one byte of value.
const MIN_KV_LEN: u64 = 8 + 4 + 1;

pub(crate) struct Parsed {
    pub version: u32,
    pub metadata: Vec<(String, Value)>,
    pub key_index: HashMap<String, usize>,
    pub tensors: Vec<TensorInfo>,
    pub tensor_index: HashMap<String, usize>,
    pub alignment: u64,
    /// Absolute file offset of the tensor data section.
    pub data_offset: u64,
}

pub(crate) fn parse(bytes: &[u8]) -> Result<Parsed> {
    let mut cur = Cursor::new(bytes);
    let magic = cur.take(4, "magic")?;
    if magic != GGUF_MAGIC {
        return Err(GgufError::BadMagic {
            found: magic.to_vec(),
        });
    }
    let version = cur.u32("version")?;
    match version {
        2 | 3 => {}
        1 => {
            return Err(GgufError::UnsupportedVersion {
                version,
                hint: " (version 1 used 32-bit counts and is obsolete; re-convert the model)",
            });
        }
        v if v.swap_bytes() == 2 || v.swap_bytes() == 3 => {
            return Err(GgufError::UnsupportedVersion {
                version,
                hint: " (this looks like a big-endian GGUF, which is not supported)",
            });
        }
        _ => return Err(GgufError::UnsupportedVersion { version, hint: "" }),
    }
    let tensor_count_offset = cur.pos();
    let tensor_count = cur.u64("tensor count")?;
    let kv_count_offset = cur.pos();
    let kv_count = cur.u64("metadata count")?;
    let tensor_count = cur.check_count(
        tensor_count,
        MIN_TENSOR_INFO_LEN,
        "tensor directory entries",
        "tensor count",
        tensor_count_offset,
    )?;
    // The directory follows the metadata: its bytes are not the metadata's
    // to claim. Cannot overflow: checked against the remaining bytes above.
    let directory_min = tensor_count as u64 * MIN_TENSOR_INFO_LEN;
    let before_metadata = cur.reserve(directory_min);
    let kv_count = cur.check_count(
        kv_count,
        MIN_KV_LEN,
        "metadata entries",
        "metadata count",
        kv_count_offset,
    )?;

    let mut metadata = Vec::with_capacity(kv_count);
    let mut metadata_offsets = Vec::with_capacity(kv_count);
    let mut key_index = HashMap::with_capacity(kv_count);
    for kv in 0..kv_count {
        let later_entries = cur.reserve((kv_count - kv - 1) as u64 * MIN_KV_LEN);
        let key_offset = cur.pos();
        let key = cur.string(&format!("key of metadata entry {kv}"))?;
        let field = format!("metadata key '{key}'");
        let type_offset = cur.pos();
        let type_id = cur.u32(&field)?;
        let value_type =
            ValueType::from_id(type_id).ok_or_else(|| GgufError::UnknownValueType {
                field: field.clone(),
                offset: type_offset,
                type_id,
            })?;
        let value = read_value(&mut cur, value_type, &field, 0)?;
        cur.restore(later_entries);
        if key_index.insert(key.clone(), metadata.len()).is_some() {
            return Err(GgufError::DuplicateKey {
                key,
                offset: key_offset,
            });
        }
        metadata.push((key, value));
        metadata_offsets.push(key_offset);
    }
    cur.restore(before_metadata);
    let alignment = alignment_of(&metadata, &metadata_offsets, &key_index)?;

    let mut tensors = Vec::with_capacity(tensor_count);
    let mut tensor_index = HashMap::with_capacity(tensor_count);
    for index in 0..tensor_count {
        let entry_offset = cur.pos();
        let info = read_tensor_info(&mut cur, index)?;
        if tensor_index
            .insert(info.name.clone(), tensors.len())
            .is_some()
        {
            return Err(GgufError::DuplicateTensor {
                tensor: info.name,
                offset: entry_offset,
            });
        }
        tensors.push(info);
    }

    let file_len = bytes.len() as u64;
    let data_offset = align_up(cur.pos(), alignment);
    check_tensor_data(&tensors, data_offset, alignment, file_len)?;
    Ok(Parsed {
        version,
        metadata,
        key_index,
        tensors,
        tensor_index,
        alignment,
        data_offset,
    })
}

fn alignment_of(
    metadata: &[(String, Value)],
    offsets: &[u64],
    key_index: &HashMap<String, usize>,
) -> Result<u64> {
    let Some(&index) = key_index.get(ALIGNMENT_KEY) else {
        return Ok(DEFAULT_ALIGNMENT);
    };
    let value = &metadata[index].1;
    let offset = offsets[index];
    let Some(raw) = value.as_integer() else {
        return Err(GgufError::AlignmentType {
            offset,
            found: value.value_type(),
        });
    };
    match u64::try_from(raw) {
        Ok(a) if a.is_power_of_two() => Ok(a),
        _ => Err(GgufError::BadAlignment {
            offset,
            value: raw.clamp(0, u64::MAX as i128) as u64,
        }),
    }
}

/// Rounds `pos` up to a multiple of `alignment` (a power of two); saturates
/// so an absurd position stays past the end of any file.
pub(crate) fn align_up(pos: u64, alignment: u64) -> u64 {
    pos.checked_add(alignment - 1)
        .map_or(u64::MAX, |p| p & !(alignment - 1))
}

fn read_value(cur: &mut Cursor<'_>, ty: ValueType, field: &str, depth: usize) -> Result<Value> {
    Ok(match ty {
        ValueType::U8 => Value::U8(cur.u8(field)?),
        ValueType::I8 => Value::I8(cur.i8(field)?),
        ValueType::U16 => Value::U16(cur.u16(field)?),
        ValueType::I16 => Value::I16(cur.i16(field)?),
        ValueType::U32 => Value::U32(cur.u32(field)?),
        ValueType::I32 => Value::I32(cur.i32(field)?),
        ValueType::U64 => Value::U64(cur.u64(field)?),
        ValueType::I64 => Value::I64(cur.i64(field)?),
        ValueType::F32 => Value::F32(cur.f32(field)?),
        ValueType::F64 => Value::F64(cur.f64(field)?),
        ValueType::Bool => Value::Bool(cur.bool(field)?),
        ValueType::String => Value::String(cur.string(field)?),
        ValueType::Array => Value::Array(read_array(cur, field, depth + 1)?),
    })
}

fn read_array(cur: &mut Cursor<'_>, field: &str, depth: usize) -> Result<Array> {
    let header_offset = cur.pos();
    if depth > MAX_ARRAY_DEPTH {
        return Err(GgufError::NestingTooDeep {
            field: field.to_owned(),
            offset: header_offset,
            max_depth: MAX_ARRAY_DEPTH,
        });
    }
    let type_id = cur.u32(field)?;
    let element_type = ValueType::from_id(type_id).ok_or_else(|| GgufError::UnknownValueType {
        field: field.to_owned(),
        offset: header_offset,
        type_id,
    })?;
    let count_offset = cur.pos();
    let count = cur.u64(field)?;
    let count = cur.check_count(
        count,
        element_type.min_encoded_len(),
        "array elements",
        field,
        count_offset,
    )?;

    macro_rules! collect {
        ($variant:ident, $read:ident) => {{
            let mut items = Vec::with_capacity(count);
            for _ in 0..count {
                items.push(cur.$read(field)?);
            }
            Array::$variant(items)
        }};
    }
    Ok(match element_type {
        ValueType::U8 => Array::U8(cur.take(count as u64, field)?.to_vec()),
        ValueType::I8 => collect!(I8, i8),
        ValueType::U16 => collect!(U16, u16),
        ValueType::I16 => collect!(I16, i16),
        ValueType::U32 => collect!(U32, u32),
        ValueType::I32 => collect!(I32, i32),
        ValueType::U64 => collect!(U64, u64),
        ValueType::I64 => collect!(I64, i64),
        ValueType::F32 => collect!(F32, f32),
        ValueType::F64 => collect!(F64, f64),
        ValueType::Bool => collect!(Bool, bool),
        ValueType::String => collect!(String, string),
        ValueType::Array => {
            let mut items = Vec::with_capacity(count);
            for index in 0..count {
                // The siblings after this one need their headers at least;
                // cannot overflow: count * 12 was checked against the bytes.
                let siblings =
                    cur.reserve((count - index - 1) as u64 * ValueType::Array.min_encoded_len());
                items.push(read_array(cur, field, depth + 1)?);
                cur.restore(siblings);
            }
            Array::Array(items)
        }
    })
}

fn read_tensor_info(cur: &mut Cursor<'_>, index: usize) -> Result<TensorInfo> {
    let entry_offset = cur.pos();
    let name = cur.string(&format!("name of tensor {index}"))?;
    let field = format!("tensor '{name}'");
    let dims_offset = cur.pos();
    let n_dims = cur.u32(&field)?;
    if n_dims as usize > MAX_DIMS {
        return Err(GgufError::TooManyDims {
            tensor: name,
            offset: dims_offset,
            n_dims,
            max: MAX_DIMS,
        });
    }
    let mut dims = Vec::with_capacity(n_dims as usize);
    for _ in 0..n_dims {
        dims.push(cur.u64(&field)?);
    }
    let type_offset = cur.pos();
    let type_id = cur.u32(&field)?;
    let ty = GgmlType::from_id(type_id).map_err(|source| GgufError::TensorType {
        tensor: name.clone(),
        offset: type_offset,
        source,
    })?;
    let offset = cur.u64(&field)?;

    let info = ty.info();
    let row_len = dims.first().copied().unwrap_or(1);
    if row_len % info.block_len as u64 != 0 {
        return Err(GgufError::RowNotBlockMultiple {
            tensor: name,
            offset: dims_offset,
            ty,
            row_len,
            block_len: info.block_len,
        });
    }
    let (n_elements, n_bytes) = match checked_size(&dims, ty) {
        Ok(sizes) => sizes,
        Err(reason) => {
            return Err(GgufError::ShapeOverflow {
                tensor: name,
                offset: dims_offset,
                dims,
                reason,
            });
        }
    };
    Ok(TensorInfo {
        name,
        dims,
        ty,
        offset,
        n_elements,
        n_bytes,
        entry_offset,
    })
}

/// Element count and byte size of a tensor of `dims` (row length already
/// a whole number of blocks). ggml stores dims and strides as int64, and
/// consumers take products of any subset of the dims (rows, planes, row
/// bytes times rows) even when another dim is 0. So the shape must stay
/// within i64 with every 0 counted as 1: then no product of dims, and no
/// byte size of any sub-block of the tensor, can overflow.
pub(crate) fn checked_size(dims: &[u64], ty: GgmlType) -> Result<(u64, u64), String> {
    let info = ty.info();
    let within = |n: Option<u64>| n.filter(|&n| n <= i64::MAX as u64);
    let mut span = Some(1u64);
    // Bytes of one row (a row of length 0 counted as one block), then
    // times each further dim.
    let row_blocks = dims
        .first()
        .map_or(1, |&d| d.div_ceil(info.block_len as u64).max(1));
    let mut span_bytes = row_blocks.checked_mul(info.block_bytes as u64);
    for (i, &d) in dims.iter().enumerate() {
        span = within(span.and_then(|s| s.checked_mul(d.max(1))));
        if i > 0 {
            span_bytes = within(span_bytes.and_then(|b| b.checked_mul(d.max(1))));
        }
    }
    let span =
        span.ok_or("expected the product of its dims (0 counted as 1) to be at most 2^63-1")?;
    let span_bytes = within(span_bytes)
        .ok_or_else(|| format!("expected its {ty} data to take at most 2^63-1 bytes"))?;
    if dims.contains(&0) {
        return Ok((0, 0));
    }
    Ok((span, span_bytes))
}

fn check_tensor_data(
    tensors: &[TensorInfo],
    data_offset: u64,
    alignment: u64,
    file_len: u64,
) -> Result<()> {
    for t in tensors {
        if t.offset % alignment != 0 {
            return Err(GgufError::MisalignedTensor {
                tensor: t.name.clone(),
                data_offset: t.offset,
                alignment,
            });
        }
        let start = data_offset.checked_add(t.offset);
        let end = start.and_then(|s| s.checked_add(t.n_bytes));
        match (start, end) {
            (Some(_), Some(end)) if end <= file_len => {}
            _ => {
                return Err(GgufError::TensorOutOfRange {
                    tensor: t.name.clone(),
                    start: start.unwrap_or(u64::MAX),
                    end: end.unwrap_or(u64::MAX),
                    file_len,
                });
            }
        }
    }
    // Empty tensors occupy no bytes and cannot overlap anything.
    let mut by_offset: Vec<&TensorInfo> = tensors.iter().filter(|t| t.n_bytes > 0).collect();
    by_offset.sort_by_key(|t| t.offset);
    let mut furthest: Option<(&TensorInfo, u64)> = None;
    for next in by_offset {
        // Both ends were checked against the file length above, so these
        // sums cannot overflow.
        if let Some((prev, prev_end)) = furthest
            && next.offset < prev_end
        {
            return Err(GgufError::TensorOverlap {
                tensor: next.name.clone(),
                start: data_offset + next.offset,
                other: prev.name.clone(),
                other_end: data_offset + prev_end,
            });
        }
        let next_end = next.offset + next.n_bytes;
        if furthest.is_none_or(|(_, end)| next_end > end) {
            furthest = Some((next, next_end));
        }
    }
    Ok(())
}
