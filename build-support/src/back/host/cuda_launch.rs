//! The CUDA branch of the generated `launch_with`: the grid from `@grid`
//! (the same expressions the host runs), then the tensors and scalars as
//! launch arguments, handed to `phobos_rt::cuda`, which checks them against
//! the ABI in `ARTIFACT` and launches the variant of `config` for the
//! device's chip.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::expr::private;
use super::names;
use super::{GenError, Generator};
use crate::ir::{Elem, Kernel, ParamKind};

/// Statements that return from `launch_with` when `device` is a CUDA
/// device; the dims are bound (`__dim_<name>`) before them.
pub fn cuda_dispatch(generator: &Generator<'_>, kernel: &Kernel) -> Result<TokenStream, GenError> {
    let p = private();
    let kernel_name = &kernel.name;
    // The MLIR back end does not lower quantized tensors yet, so such a
    // kernel has no PTX: on CUDA it is an error naming the parameter.
    if let Some(param) = kernel.params.iter().find(|param| {
        matches!(
            param.kind,
            ParamKind::Tensor {
                elem: Elem::Quant(_),
                ..
            }
        )
    }) {
        let reason = format!(
            "kernel `{kernel_name}`: quantized tensor parameter `{}` has no CUDA implementation yet (the host runs it)",
            param.name
        );
        return Ok(quote! {
            if device.as_cuda().is_some() {
                return ::core::result::Result::Err(#p::Error::BackendUnavailable {
                    backend: device.name(),
                    reason: ::std::string::String::from(#reason),
                });
            }
        });
    }
    // Only what grid expressions can read: tune values, dims, scalars.
    let mut prelude = TokenStream::new();
    for tune in &kernel.tune {
        let field = names::public(&tune.name);
        let var = names::tune(&tune.name);
        prelude.extend(quote!(let #var: i32 = config.#field as i32;));
    }
    for dim in kernel.dims() {
        let var = names::dim(dim);
        let extent = format_ident!("__dim_{}", dim);
        let op = format!("kernel `{kernel_name}`, dim `{dim}`");
        prelude.extend(quote! {
            let #var: i32 = i32::try_from(#extent).map_err(|_| #p::Error::BadShape {
                op: #op,
                shape: ::std::vec![#extent],
                expected: "an extent of at most i32::MAX (dims are read as i32 in kernels)",
            })?;
        });
    }
    let mut args = Vec::new();
    for param in &kernel.params {
        let arg = names::public(&param.name);
        match &param.kind {
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
    let mut grid = Vec::new();
    for axis in 0..3 {
        grid.push(match kernel.grid.get(axis) {
            Some(e) => {
                let value = generator.expr(e)?;
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
            let __grid: [usize; 3] = [#(#grid),*];
            let __config: &[(&str, i64)] = &[#((#tune_names, config.#tune_fields)),*];
            let __variant = __cuda.variant_for(&ARTIFACT, __config)?;
            let __args = [#(#args),*];
            __cuda.launch(&ARTIFACT, __variant, __grid, &[#((#dim_names, #dim_vars)),*], &__args)?;
            return ::core::result::Result::Ok(());
        }
    })
}
