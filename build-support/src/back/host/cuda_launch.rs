//! The CUDA branch of the generated `launch_with`: the grid from `@grid`
//! (the same expressions the host runs), then the tensors and scalars as
//! launch arguments, handed to `phobos_rt::cuda`, which checks them against
//! the ABI in `ARTIFACT` and launches the variant of `config` for the
//! device's chip.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::expr::private;
use super::grid;
use super::names;
use super::{GenError, Generator};
use crate::ir::{Elem, Kernel, ParamKind};

/// Statements that return from `launch_with` when `device` is a CUDA
/// device; the dims are bound (`__dim_<name>`) before them.
pub fn cuda_dispatch(generator: &Generator<'_>, kernel: &Kernel) -> Result<TokenStream, GenError> {
    let p = private();
    // Only what grid expressions can read: tune values, dims, scalars.
    let mut prelude = grid::tune_and_dim_bindings(kernel);
    let mut args = Vec::new();
    let mut uploads = TokenStream::new();
    let mut write_backs = TokenStream::new();
    for param in &kernel.params {
        let arg = names::public(&param.name);
        match &param.kind {
            // Quantized blocks are uploaded as they are for this launch;
            // the upload lives until `launch_with` returns.
            ParamKind::Tensor {
                elem: Elem::Quant(_),
                written,
                ..
            } => {
                let var = format_ident!("__quant_{}", param.name);
                let keep = format_ident!("__quant_upload_{}", param.name);
                uploads.extend(quote!(let (#var, #keep) = #arg.cuda_arg(__cuda)?;));
                args.push(quote!(#var));
                if *written {
                    write_backs.extend(quote!(#keep.write_back(#arg)?;));
                }
            }
            ParamKind::Tensor { written, .. } => {
                args.push(quote!(#arg.cuda_arg(__cuda, #written)?));
            }
            ParamKind::Scalar { .. } => {
                let var = names::param(&param.name);
                prelude.extend(quote!(let #var = #arg;));
                args.push(quote!(#p::cuda::KernelArg::Scalar(#p::cuda::ScalarArg::of(#arg))));
            }
        }
    }
    let grid = grid::grid_extents(generator, kernel)?;
    let tune_names: Vec<&str> = kernel.tune.iter().map(|t| t.name.as_str()).collect();
    let tune_fields: Vec<_> = kernel.tune.iter().map(|t| names::public(&t.name)).collect();
    let dim_names: Vec<&str> = kernel.dims();
    let dim_vars: Vec<_> = dim_names
        .iter()
        .map(|d| format_ident!("__dim_{}", d))
        .collect();
    Ok(quote! {
        if let ::core::option::Option::Some(__cuda) = device.as_cuda() {
            #prelude
            let __grid: [usize; 3] = #grid;
            let __config: &[(&str, i64)] = &[#((#tune_names, config.#tune_fields)),*];
            let __variant = __cuda.variant_for(&ARTIFACT, __config)?;
            #uploads
            let __args = [#(#args),*];
            __cuda.launch(&ARTIFACT, __variant, __grid, &[#((#dim_names, #dim_vars)),*], &__args)?;
            #write_backs
            return ::core::result::Result::Ok(());
        }
    })
}
