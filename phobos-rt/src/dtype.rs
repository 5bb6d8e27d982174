//! Runtime tags for the scalar types of the kernel language: the one
//! definition in `phobos-dtype`, which the compiler shares.

pub use phobos_dtype::DType;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Element;

    #[test]
    fn sizes_match_rust_types() {
        fn size<T: Element>() -> (DType, usize) {
            (T::DTYPE, std::mem::size_of::<T>())
        }
        for (d, bytes) in [
            size::<bool>(),
            size::<i8>(),
            size::<u8>(),
            size::<i16>(),
            size::<u16>(),
            size::<i32>(),
            size::<u32>(),
            size::<i64>(),
            size::<half::f16>(),
            size::<half::bf16>(),
            size::<f32>(),
            size::<f64>(),
        ] {
            assert_eq!(d.size_bytes(), bytes, "{d}");
        }
    }
}
