//! Raw little-endian encoding of every element type, and [`HostTensor`]:
//! a host tensor of a dtype known only at run time.

use half::{bf16, f16};
use phobos_rt::{DType, Device, Element, Tensor};

use super::StoreError;

/// An element with a fixed little-endian byte encoding (what numpy's
/// `fromfile` reads for the same dtype; `bool` is one byte, 0 or 1).
pub trait RawElement: Element {
    fn from_le(bytes: &[u8]) -> Self;
    fn put_le(self, out: &mut Vec<u8>);
}

macro_rules! raw_prim {
    ($($t:ty),*) => {$(
        impl RawElement for $t {
            fn from_le(bytes: &[u8]) -> Self {
                let mut b = [0u8; size_of::<$t>()];
                b.copy_from_slice(&bytes[..size_of::<$t>()]);
                <$t>::from_le_bytes(b)
            }
            fn put_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}
raw_prim!(i8, u8, i16, u16, i32, u32, i64, f32, f64);

macro_rules! raw_half {
    ($($t:ty),*) => {$(
        impl RawElement for $t {
            fn from_le(bytes: &[u8]) -> Self {
                <$t>::from_bits(u16::from_le_bytes([bytes[0], bytes[1]]))
            }
            fn put_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_bits().to_le_bytes());
            }
        }
    )*};
}
raw_half!(f16, bf16);

impl RawElement for bool {
    fn from_le(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
    fn put_le(self, out: &mut Vec<u8>) {
        out.push(u8::from(self));
    }
}

/// Decodes `bytes` (a whole number of elements) into values.
pub fn decode<T: RawElement>(bytes: &[u8]) -> Vec<T> {
    bytes.chunks_exact(size_of::<T>()).map(T::from_le).collect()
}

/// Encodes values as raw little-endian bytes.
pub fn encode<T: RawElement>(values: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(std::mem::size_of_val(values));
    for &v in values {
        v.put_le(&mut out);
    }
    out
}

/// A host tensor whose dtype is a run-time value.
#[derive(Debug)]
pub enum HostTensor {
    Bool(Tensor<bool>),
    I8(Tensor<i8>),
    U8(Tensor<u8>),
    I16(Tensor<i16>),
    U16(Tensor<u16>),
    I32(Tensor<i32>),
    U32(Tensor<u32>),
    I64(Tensor<i64>),
    F16(Tensor<f16>),
    Bf16(Tensor<bf16>),
    F32(Tensor<f32>),
    F64(Tensor<f64>),
}

/// `$body` with `$t` bound to the typed tensor inside `$value`.
#[macro_export]
#[doc(hidden)]
macro_rules! with_host_tensor {
    ($value:expr, $t:ident => $body:expr) => {
        match $value {
            $crate::store::HostTensor::Bool($t) => $body,
            $crate::store::HostTensor::I8($t) => $body,
            $crate::store::HostTensor::U8($t) => $body,
            $crate::store::HostTensor::I16($t) => $body,
            $crate::store::HostTensor::U16($t) => $body,
            $crate::store::HostTensor::I32($t) => $body,
            $crate::store::HostTensor::U32($t) => $body,
            $crate::store::HostTensor::I64($t) => $body,
            $crate::store::HostTensor::F16($t) => $body,
            $crate::store::HostTensor::Bf16($t) => $body,
            $crate::store::HostTensor::F32($t) => $body,
            $crate::store::HostTensor::F64($t) => $body,
        }
    };
}

/// `$body` with `$T` the Rust element type of the run-time `$dtype`.
#[macro_export]
#[doc(hidden)]
macro_rules! with_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            phobos_rt::DType::Bool => {
                type $T = bool;
                $body
            }
            phobos_rt::DType::I8 => {
                type $T = i8;
                $body
            }
            phobos_rt::DType::U8 => {
                type $T = u8;
                $body
            }
            phobos_rt::DType::I16 => {
                type $T = i16;
                $body
            }
            phobos_rt::DType::U16 => {
                type $T = u16;
                $body
            }
            phobos_rt::DType::I32 => {
                type $T = i32;
                $body
            }
            phobos_rt::DType::U32 => {
                type $T = u32;
                $body
            }
            phobos_rt::DType::I64 => {
                type $T = i64;
                $body
            }
            phobos_rt::DType::F16 => {
                type $T = half::f16;
                $body
            }
            phobos_rt::DType::Bf16 => {
                type $T = half::bf16;
                $body
            }
            phobos_rt::DType::F32 => {
                type $T = f32;
                $body
            }
            phobos_rt::DType::F64 => {
                type $T = f64;
                $body
            }
        }
    };
}

/// Wraps a typed tensor.
pub trait IntoHostTensor {
    fn into_host(self) -> HostTensor;
}

macro_rules! into_host {
    ($($t:ty => $v:ident),*) => {$(
        impl IntoHostTensor for Tensor<$t> {
            fn into_host(self) -> HostTensor { HostTensor::$v(self) }
        }
    )*};
}
into_host!(bool => Bool, i8 => I8, u8 => U8, i16 => I16, u16 => U16, i32 => I32, u32 => U32,
    i64 => I64, f16 => F16, bf16 => Bf16, f32 => F32, f64 => F64);

impl HostTensor {
    /// A host tensor of `shape` decoded from raw little-endian `bytes`,
    /// which must hold exactly the tensor's elements.
    pub fn from_le_bytes(dtype: DType, shape: &[usize], bytes: &[u8]) -> Result<Self, StoreError> {
        let len: usize = shape.iter().product();
        let expected = len * dtype.size_bytes();
        if bytes.len() != expected {
            return Err(StoreError::Size {
                what: format!("{} {:?}", dtype.name(), shape),
                expected_bytes: expected as u64,
                actual_bytes: bytes.len() as u64,
            });
        }
        let device = Device::host();
        with_dtype!(dtype, T => {
            let values = decode::<T>(bytes);
            Ok(device.tensor_from(&values, shape.to_vec())?.into_host())
        })
    }

    /// A zero-filled host tensor.
    pub fn zeros(dtype: DType, shape: &[usize]) -> Result<Self, StoreError> {
        let device = Device::host();
        with_dtype!(dtype, T => Ok(device.zeros::<T>(shape.to_vec())?.into_host()))
    }

    /// The elements as raw little-endian bytes, row-major.
    pub fn to_le_bytes(&self) -> Result<Vec<u8>, StoreError> {
        with_host_tensor!(self, t => Ok(encode(&t.to_vec()?)))
    }

    pub fn dtype(&self) -> DType {
        with_host_tensor!(self, t => t.dtype())
    }

    pub fn shape(&self) -> &[usize] {
        with_host_tensor!(self, t => t.shape())
    }

    /// Every element widened to `f64`, row-major (for printing and tests).
    pub fn to_f64_vec(&self) -> Result<Vec<f64>, StoreError> {
        with_host_tensor!(self, t => Ok(t.to_vec()?.into_iter().map(Element::to_f64).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_round_trip_every_dtype() {
        for dtype in DType::ALL {
            let shape = [3usize, 5];
            let bytes: Vec<u8> = (0..15 * dtype.size_bytes())
                .map(|i| {
                    if dtype == DType::Bool {
                        (i % 2) as u8
                    } else {
                        (i * 37 % 251) as u8
                    }
                })
                .collect();
            let t = HostTensor::from_le_bytes(dtype, &shape, &bytes).unwrap();
            assert_eq!(t.dtype(), dtype);
            assert_eq!(t.shape(), &shape);
            assert_eq!(t.to_le_bytes().unwrap(), bytes, "{dtype:?}");
        }
    }

    #[test]
    fn f32_matches_numpy_layout() {
        // numpy: np.array([1.0, -2.5], dtype='<f4').tobytes()
        let bytes = [0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x20, 0xc0];
        let t = HostTensor::from_le_bytes(DType::F32, &[2], &bytes).unwrap();
        assert_eq!(t.to_f64_vec().unwrap(), vec![1.0, -2.5]);
    }

    #[test]
    fn wrong_length_is_an_error() {
        let err = HostTensor::from_le_bytes(DType::F32, &[2, 2], &[0; 12]).unwrap_err();
        assert!(err.to_string().contains("16"), "{err}");
    }
}
