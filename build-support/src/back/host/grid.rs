//! The `@grid` evaluation shared by the host launcher and the CUDA
//! dispatch: both bind the tune values and dims as the kernel's `i32`
//! scalars, then evaluate the grid expressions into `[usize; 3]`, so the
//! two back ends launch the same grid by construction.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::expr::private;
use super::names;
use super::{GenError, Generator};
use crate::ir::Kernel;

/// `let` statements binding every tune value (from `config`) and every
/// symbolic dim (from `__dim_<name>`, checked to fit `i32`) under the names
/// kernel expressions read them by.
pub fn tune_and_dim_bindings(kernel: &Kernel) -> TokenStream {
    let mut out = tune_bindings(kernel);
    out.extend(dim_bindings(kernel));
    out
}

/// `let` statements binding every tune value, read from `config` at run
/// time (the host launcher's per-config bodies bind them as constants
/// instead).
pub fn tune_bindings(kernel: &Kernel) -> TokenStream {
    let mut out = TokenStream::new();
    for tune in &kernel.tune {
        let field = names::public(&tune.name);
        let var = names::tune(&tune.name);
        // Tune values come from CONFIGS (checked by the launcher), all small
        // positives.
        out.extend(quote!(let #var: i32 = config.#field as i32;));
    }
    out
}

/// `let` statements binding every symbolic dim from `__dim_<name>`, checked
/// to fit `i32`.
pub fn dim_bindings(kernel: &Kernel) -> TokenStream {
    let p = private();
    let kernel_name = &kernel.name;
    let mut out = TokenStream::new();
    for dim in kernel.dims() {
        let var = names::dim(dim);
        let extent = format_ident!("__dim_{}", dim);
        let op = format!("kernel `{kernel_name}`, dim `{dim}`");
        out.extend(quote! {
            let #var: i32 = i32::try_from(#extent).map_err(|_| #p::Error::BadShape {
                op: #op,
                shape: ::std::vec![#extent],
                expected: "an extent of at most i32::MAX (dims are read as i32 in kernels)",
            })?;
        });
    }
    out
}

/// An expression of type `[usize; 3]`: the launch grid from `@grid`
/// (missing axes are 1). Needs [`tune_and_dim_bindings`] (and any scalar
/// parameters a grid expression reads) in scope.
pub fn grid_extents(generator: &Generator<'_>, kernel: &Kernel) -> Result<TokenStream, GenError> {
    let p = private();
    let kernel_name = &kernel.name;
    let mut grid = Vec::new();
    for axis in 0..3usize {
        grid.push(match kernel.grid.get(axis) {
            Some(e) => {
                let value = generator.expr(e)?;
                // Grid expressions are i32 (the checker types them so); a
                // negative extent is the caller's error, never zero programs.
                quote!({
                    let __extent: i32 = #value;
                    usize::try_from(__extent).map_err(|_| #p::Error::GridExtent {
                        kernel: ::std::string::String::from(#kernel_name),
                        axis: #axis,
                        value: i64::from(__extent),
                    })?
                })
            }
            None => quote!(1usize),
        });
    }
    Ok(quote!([#(#grid),*]))
}
