//! The helper for slicing a local tile (`t[i, a :+ n]`), emitted into a
//! kernel module only when a program uses it. Positions outside the base
//! tile read as zero, like a masked tensor load.

use proc_macro2::TokenStream;
use quote::quote;

pub fn helper() -> TokenStream {
    quote! {
        fn __slice_tile<T: ::phobos::__private::Element>(
            base: &::phobos::__private::host::Tile<T>,
            slices: &[::phobos::__private::host::Slice],
            zero: T,
        ) -> ::phobos::__private::Result<::phobos::__private::host::Tile<T>> {
            use ::phobos::__private::host::Slice;
            let base_shape = base.shape();
            if slices.len() != base_shape.len() {
                return ::core::result::Result::Err(::phobos::__private::Error::SliceRank {
                    tensor_rank: base_shape.len(),
                    slices: slices.len(),
                });
            }
            let mut out_shape = ::std::vec::Vec::new();
            for (slice, &extent) in slices.iter().zip(base_shape) {
                match slice {
                    Slice::Point(_) => {}
                    Slice::Span { len, .. } => out_shape.push(*len),
                    Slice::Full => out_shape.push(extent),
                }
            }
            let total: usize = out_shape.iter().product();
            let mut data = ::std::vec::Vec::with_capacity(total);
            let mut out_index = ::std::vec![0usize; out_shape.len()];
            let mut base_index = ::std::vec![0usize; base_shape.len()];
            for _ in 0..total {
                let mut next_out_dim = 0;
                let mut inside = true;
                for (dim, slice) in slices.iter().enumerate() {
                    let position: i64 = match slice {
                        Slice::Point(i) => *i,
                        Slice::Span { start, .. } => {
                            next_out_dim += 1;
                            start.wrapping_add(out_index[next_out_dim - 1] as i64)
                        }
                        Slice::Full => {
                            next_out_dim += 1;
                            out_index[next_out_dim - 1] as i64
                        }
                    };
                    if position < 0 || position as u64 >= base_shape[dim] as u64 {
                        inside = false;
                        break;
                    }
                    base_index[dim] = position as usize;
                }
                data.push(if inside { base.get(&base_index).unwrap_or(zero) } else { zero });
                for dim in (0..out_index.len()).rev() {
                    out_index[dim] += 1;
                    if out_index[dim] < out_shape[dim] {
                        break;
                    }
                    out_index[dim] = 0;
                }
            }
            ::phobos::__private::host::Tile::from_vec(&out_shape, data)
        }
    }
}
