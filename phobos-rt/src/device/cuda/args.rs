//! Kernel arguments packed in the order and widths the PTX entry point
//! declares (see [`crate::artifact::abi`]), and checked against that ABI
//! first: a launch whose arguments disagree with it is an error, never a
//! kernel reading the wrong bytes.

use crate::artifact::{AbiParamKind, KernelArtifact, PtxVariant};
use crate::{DType, Element, Error, Result};

/// One argument of a launch, before packing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelArg {
    Tensor(TensorArg),
    Scalar(ScalarArg),
}

/// A tensor argument: where its first element is and how it is laid out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorArg {
    pub elem: DType,
    /// Device address of element `[0, 0, ...]`.
    pub device_ptr: u64,
    pub shape: Vec<usize>,
    /// In elements.
    pub strides: Vec<usize>,
    /// Passed as `&mut`: the kernel may write it.
    pub writable: bool,
}

/// A scalar argument by value, its bytes little-endian.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScalarArg {
    pub dtype: DType,
    bytes: [u8; 8],
}

impl ScalarArg {
    /// The value `value` of element type `T`.
    pub fn of<T: Element>(value: T) -> ScalarArg {
        let mut bytes = [0u8; 8];
        let len = size_of::<T>().min(8);
        // SAFETY: every `Element` is a plain scalar of at most 8 bytes with
        // no padding (`bool` is one byte, 0 or 1); reading its bytes is sound.
        unsafe {
            std::ptr::copy_nonoverlapping((&raw const value).cast::<u8>(), bytes.as_mut_ptr(), len)
        };
        ScalarArg {
            dtype: T::DTYPE,
            bytes,
        }
    }

    /// A scalar given by its raw little-endian bytes (at most 8).
    pub fn from_le_bytes(dtype: DType, raw: &[u8]) -> Result<ScalarArg> {
        if raw.len() != dtype.size_bytes() {
            return Err(Error::Backend {
                backend: "cuda",
                message: format!(
                    "a {dtype} scalar is {} bytes, got {}",
                    dtype.size_bytes(),
                    raw.len()
                ),
            });
        }
        let mut bytes = [0u8; 8];
        bytes[..raw.len()].copy_from_slice(raw);
        Ok(ScalarArg { dtype, bytes })
    }

    /// The value's bytes.
    pub fn le_bytes(&self) -> &[u8] {
        &self.bytes[..self.dtype.size_bytes()]
    }
}

/// One packed argument slot: the value in its declared width, held in an
/// 8-byte-aligned word so the driver can read any width from its address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    word: u64,
    /// Bytes the PTX parameter has (1, 2, 4 or 8).
    pub len_bytes: usize,
}

impl Slot {
    fn new(bytes: &[u8]) -> Slot {
        let mut word = [0u8; 8];
        word[..bytes.len()].copy_from_slice(bytes);
        Slot {
            word: u64::from_le_bytes(word),
            len_bytes: bytes.len(),
        }
    }

    /// The value's little-endian bytes.
    pub fn le_bytes(&self) -> Vec<u8> {
        self.word.to_le_bytes()[..self.len_bytes].to_vec()
    }

    pub(crate) fn address(&mut self) -> *mut std::ffi::c_void {
        (&raw mut self.word).cast()
    }
}

/// The arguments of one launch in PTX parameter order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackedArgs {
    pub slots: Vec<Slot>,
}

/// Checks `args` (one per kernel parameter, in order) and the symbolic dim
/// extents `dims` against `artifact`'s ABI for `variant`, and packs them:
/// parameters, then dims as `i32`, then every tensor's strides as integers
/// of the variant's index width.
pub fn pack(
    artifact: &KernelArtifact,
    variant: &PtxVariant,
    dims: &[(&str, usize)],
    args: &[KernelArg],
) -> Result<PackedArgs> {
    let kernel = artifact.name;
    let fail = |message: String| Error::Backend {
        backend: "cuda",
        message: format!("kernel `{kernel}` ABI mismatch: {message}"),
    };
    if args.len() != artifact.params.len() {
        return Err(fail(format!(
            "{} arguments given, the kernel declares {} parameters",
            args.len(),
            artifact.params.len()
        )));
    }
    let dim_names: Vec<&str> = dims.iter().map(|(n, _)| *n).collect();
    if dim_names != artifact.dims {
        return Err(fail(format!(
            "dims {dim_names:?} given, the kernel declares {:?}",
            artifact.dims
        )));
    }
    let index_max: u64 = match variant.index_bits {
        32 => i32::MAX as u64,
        64 => i64::MAX as u64,
        other => return Err(fail(format!("variant index width {other} bits"))),
    };

    let mut slots = Vec::with_capacity(args.len() + dims.len() + 8);
    let mut strides = Vec::new();
    for (param, arg) in artifact.params.iter().zip(args) {
        match (param.kind, arg) {
            (
                AbiParamKind::Pointer {
                    elem,
                    dims: param_dims,
                    written,
                },
                KernelArg::Tensor(tensor),
            ) => {
                let name = param.name;
                if tensor.elem.name() != elem {
                    return Err(fail(format!(
                        "parameter `{name}` is a tensor of {elem}, got {}",
                        tensor.elem
                    )));
                }
                if tensor.shape.len() != param_dims.len()
                    || tensor.strides.len() != tensor.shape.len()
                {
                    return Err(fail(format!(
                        "parameter `{name}` has rank {}, got shape {:?} / strides {:?}",
                        param_dims.len(),
                        tensor.shape,
                        tensor.strides
                    )));
                }
                if written && !tensor.writable {
                    return Err(fail(format!(
                        "parameter `{name}` is written by the kernel but was passed read-only"
                    )));
                }
                for (axis, (declared, &extent)) in param_dims.iter().zip(&tensor.shape).enumerate()
                {
                    let expected = match declared.parse::<usize>() {
                        Ok(literal) => literal,
                        Err(_) => dims
                            .iter()
                            .find(|(n, _)| n == declared)
                            .map(|(_, v)| *v)
                            .ok_or_else(|| {
                                fail(format!("dim `{declared}` of `{name}` is not given"))
                            })?,
                    };
                    if extent != expected {
                        return Err(fail(format!(
                            "parameter `{name}` axis {axis} is `{declared}` = {expected}, the tensor has {extent}"
                        )));
                    }
                }
                // Offsets are computed in the variant's index width: the
                // farthest element must be addressable in it.
                let reach =
                    tensor
                        .shape
                        .iter()
                        .zip(&tensor.strides)
                        .try_fold(0u64, |acc, (&d, &s)| {
                            let step = (d.saturating_sub(1) as u64).checked_mul(s as u64)?;
                            acc.checked_add(step)
                        });
                if reach.is_none_or(|r| r > index_max)
                    || tensor.strides.iter().any(|&s| s as u64 > index_max)
                {
                    return Err(fail(format!(
                        "parameter `{name}` (shape {:?}, strides {:?}) reaches past the {}-bit offsets of this variant",
                        tensor.shape, tensor.strides, variant.index_bits
                    )));
                }
                slots.push(Slot::new(&tensor.device_ptr.to_le_bytes()));
                strides.extend(tensor.strides.iter().copied());
            }
            (AbiParamKind::Value { dtype }, KernelArg::Scalar(scalar)) => {
                if scalar.dtype.name() != dtype {
                    return Err(fail(format!(
                        "parameter `{}` is a {dtype} scalar, got {}",
                        param.name, scalar.dtype
                    )));
                }
                slots.push(Slot::new(scalar.le_bytes()));
            }
            (AbiParamKind::Pointer { .. }, KernelArg::Scalar(_)) => {
                return Err(fail(format!(
                    "parameter `{}` is a tensor, got a scalar",
                    param.name
                )));
            }
            (AbiParamKind::Value { .. }, KernelArg::Tensor(_)) => {
                return Err(fail(format!(
                    "parameter `{}` is a scalar, got a tensor",
                    param.name
                )));
            }
        }
    }
    for &(name, extent) in dims {
        let value = i32::try_from(extent).map_err(|_| {
            fail(format!(
                "dim `{name}` = {extent} does not fit the kernel's i32"
            ))
        })?;
        slots.push(Slot::new(&value.to_le_bytes()));
    }
    for stride in strides {
        // In range: checked against `index_max` above.
        slots.push(match variant.index_bits {
            32 => Slot::new(&(stride as i32).to_le_bytes()),
            _ => Slot::new(&(stride as i64).to_le_bytes()),
        });
    }
    Ok(PackedArgs { slots })
}

#[cfg(test)]
mod tests;
