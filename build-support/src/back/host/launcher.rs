//! The module generated per kernel: definition data, `Config`, the typed
//! launchers and the host implementation.
//!
//! `launch_with` checks, in order: the config is in the tune space; every
//! tensor has its declared rank; literal dims match; every symbolic dim
//! agrees across the tensors that share it (an `Err` naming the dim and both
//! extents). Then it computes the grid from `@grid` and runs the programs on
//! the device's backend: on CUDA through `cuda_launch`, else on the host.

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use super::expr::private;
use super::grid;
use super::names;
use super::simd_bodies::{HostBodies, simd_bodies};
use super::tile_slice;
use super::{GenError, Generator};
use crate::ir::{Builtin, Dim, Elem, Expr, ExprKind, Kernel, Param, ParamKind};

/// FNV-1a over the source text: stable across Rust releases and platforms,
/// unlike `std`'s `DefaultHasher`, so cache keys survive toolchain updates.
pub fn source_hash(text: &str) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    text.bytes().fold(OFFSET, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(PRIME)
    })
}

/// The module of `kernel`; `artifact` (the `ARTIFACT` static) goes inside
/// it, and `tune_lines` (its entries of an embedded tune table) become
/// `TUNE_TABLE`.
pub fn kernel_module(
    kernel: &Kernel,
    hash: u64,
    artifact: TokenStream,
    tune_lines: &[String],
    bodies: HostBodies,
) -> Result<TokenStream, GenError> {
    let p = private();
    let generator = Generator::new(kernel);
    let module_name = names::public(&kernel.name);
    let kernel_name = &kernel.name;

    // Definition data.
    let tune_fields: Vec<_> = kernel.tune.iter().map(|t| names::public(&t.name)).collect();
    let tune_names: Vec<&str> = kernel.tune.iter().map(|t| t.name.as_str()).collect();
    let configs: Vec<TokenStream> = kernel
        .configs()
        .iter()
        .map(|config| {
            let values = config.values.iter().map(|(_, v)| Literal::i64_suffixed(*v));
            quote!(Config { #(#tune_fields: #values),* })
        })
        .collect();
    let params_data = kernel.params.iter().map(|param| {
        let name = &param.name;
        let ty = param_type_text(param);
        let written = matches!(param.kind, ParamKind::Tensor { written: true, .. });
        quote!((#name, #ty, #written))
    });
    let config_texts: Vec<String> = kernel
        .configs()
        .iter()
        .map(|config| {
            let pairs: Vec<String> = config
                .values
                .iter()
                .map(|(name, value)| format!("{name}={value}"))
                .collect();
            pairs.join(",")
        })
        .collect();
    let dims: Vec<&str> = kernel.dims();
    let grid_text: Vec<String> = kernel.grid.iter().map(expr_text).collect();
    let hash_lit = Literal::u64_suffixed(hash);
    let tune_docs = kernel.tune.iter().map(|t| {
        let values: Vec<String> = t.values.iter().map(i64::to_string).collect();
        format!(
            "`{}`: one of [{}]; the first is the default.",
            t.name,
            values.join(", ")
        )
    });

    // Launcher signature.
    let mut launcher_args = Vec::new();
    let mut forward_args = Vec::new();
    for param in &kernel.params {
        let public = names::public(&param.name);
        forward_args.push(quote!(#public));
        launcher_args.push(match &param.kind {
            ParamKind::Tensor {
                elem: Elem::Quant(quant),
                written,
                ..
            } => {
                let marker = names::quant_marker(*quant);
                if *written {
                    quote!(#public: &mut #p::QTensor<'_, #marker>)
                } else {
                    quote!(#public: &#p::QTensor<'_, #marker>)
                }
            }
            ParamKind::Tensor { elem, written, .. } => {
                let ty = tensor_elem_type(*elem, param)?;
                if *written {
                    quote!(#public: &mut #p::Tensor<#ty>)
                } else {
                    quote!(#public: &#p::Tensor<#ty>)
                }
            }
            ParamKind::Scalar { dtype } => {
                let ty = names::rust_type(*dtype);
                quote!(#public: #ty)
            }
        });
    }

    // `select_config` reads every tensor (it clones the written ones).
    let mut select_args = Vec::new();
    let mut select_forward = Vec::new();
    let mut scratch = TokenStream::new();
    let mut scratch_forward = Vec::new();
    for param in &kernel.params {
        let public = names::public(&param.name);
        match &param.kind {
            // Read quantized tensors pass through as they are; written ones
            // (q8_0) get scratch copies, as float tensors do.
            ParamKind::Tensor {
                elem: Elem::Quant(quant),
                written,
                ..
            } => {
                let marker = names::quant_marker(*quant);
                select_args.push(quote!(#public: &#p::QTensor<'_, #marker>));
                if *written {
                    let copy = format_ident!("__scratch_{}", public);
                    scratch.extend(quote!(let mut #copy = #public.clone();));
                    scratch_forward.push(quote!(&mut #copy));
                    select_forward.push(quote!(&*#public));
                } else {
                    scratch_forward.push(quote!(#public));
                    select_forward.push(quote!(#public));
                }
            }
            ParamKind::Tensor { elem, written, .. } => {
                let ty = tensor_elem_type(*elem, param)?;
                select_args.push(quote!(#public: &#p::Tensor<#ty>));
                if *written {
                    let copy = format_ident!("__scratch_{}", public);
                    scratch.extend(quote!(let mut #copy = #public.try_clone()?;));
                    scratch_forward.push(quote!(&mut #copy));
                    select_forward.push(quote!(&*#public));
                } else {
                    scratch_forward.push(quote!(#public));
                    select_forward.push(quote!(#public));
                }
            }
            ParamKind::Scalar { dtype } => {
                let ty = names::rust_type(*dtype);
                select_args.push(quote!(#public: #ty));
                scratch_forward.push(quote!(#public));
                select_forward.push(quote!(#public));
            }
        }
    }
    let dim_vars: Vec<_> = dims.iter().map(|d| format_ident!("__dim_{}", d)).collect();
    let tune_lines = tune_lines.iter();

    let binding = dim_binding(kernel);
    let (host_call, host_bodies) = simd_bodies(
        &generator,
        kernel,
        bodies,
        &launcher_args,
        &forward_args,
        &dim_vars,
    )?;
    let cuda_fn = super::cuda_launch::cuda_dispatch(&generator, kernel)?;
    let slice_helper = if generator.uses_tile_slice.get() {
        tile_slice::helper()
    } else {
        quote!()
    };
    let hand = host_impl_launchers(kernel, &launcher_args, &forward_args)?;
    let (launchers, call_host_impl, skip_tuning) = (hand.launchers, hand.call, hand.skip_tuning);
    let host_impl_name = match &kernel.host_impl {
        Some(name) => quote!(::core::option::Option::Some(#name)),
        None => quote!(::core::option::Option::None),
    };
    let module_doc = format!(
        "Kernel `{kernel_name}` (generated by `phobos::kernel!`). Launch it with [`launch`] or [`launch_with`]."
    );
    let launch_doc = format!(
        "Runs `{kernel_name}` with the config the autotuner picks for these shapes ([`select_config`] with the process-wide tuner). Tensor dims are bound from the arguments' shapes; a mismatch is an `Err`."
    );

    Ok(quote! {
        #[doc = #module_doc]
        // Generated code must stay quiet under the user's lint levels,
        // including common opt-in ones: tune parameters keep their
        // SCREAMING names, and the expansion is mechanical.
        #[allow(
            non_snake_case,
            non_camel_case_types,
            non_upper_case_globals,
            unused,
            unused_comparisons,
            unused_parens,
            unused_qualifications,
            unused_results,
            trivial_casts,
            trivial_numeric_casts,
            unreachable_pub,
            missing_docs,
            missing_debug_implementations,
            missing_copy_implementations,
            clippy::all,
            clippy::pedantic,
            clippy::nursery,
            clippy::restriction,
            clippy::cargo
        )]
        pub mod #module_name {
            /// The tune parameters of one variant of the kernel.
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
            pub struct Config {
                #(#[doc = #tune_docs] pub #tune_fields: i64,)*
            }

            impl ::core::default::Default for Config {
                /// Every tune parameter at its first value.
                fn default() -> Self {
                    CONFIGS[0]
                }
            }

            impl Config {
                /// The whole tune space, the default first.
                pub fn all() -> &'static [Config] {
                    CONFIGS
                }
            }

            /// The tune space: every combination of tune values, the default first.
            pub const CONFIGS: &[Config] = &[#(#configs),*];

            /// What the compiler knows about this kernel, as data.
            #[derive(Debug)]
            pub struct KernelDef {
                /// The kernel's name in the source.
                pub name: &'static str,
                /// FNV-1a hash of the source text the kernel was compiled from.
                pub source_hash: u64,
                /// `(name, declared type, written by the kernel)` per parameter, in order.
                pub params: &'static [(&'static str, &'static str, bool)],
                /// Symbolic tensor dims, bound from the tensors' shapes at launch.
                pub dims: &'static [&'static str],
                /// Names of the tune parameters, in `Config` field order.
                pub tune_params: &'static [&'static str],
                /// The tune space, the default first.
                pub configs: &'static [Config],
                /// The `@grid` rule, one expression per grid axis.
                pub grid: &'static [&'static str],
                /// `@host_impl`: the hand-written function the host runs, if any.
                pub host_impl: ::core::option::Option<&'static str>,
            }

            /// This kernel's definition.
            pub static KERNEL: KernelDef = KernelDef {
                name: #kernel_name,
                source_hash: #hash_lit,
                params: &[#(#params_data),*],
                dims: &[#(#dims),*],
                tune_params: &[#(#tune_names),*],
                configs: CONFIGS,
                grid: &[#(#grid_text),*],
                host_impl: #host_impl_name,
            };

            /// Each config of [`CONFIGS`] as `NAME=value,...` (how tune tables name them).
            pub const CONFIG_TEXTS: &[&str] = &[#(#config_texts),*];

            /// This kernel's entries of the tune table embedded at build time
            /// (`PHOBOS_TUNE_TABLE`), one JSON entry per line.
            pub static TUNE_TABLE: &[&str] = &[#(#tune_lines),*];

            #[doc = #launch_doc]
            pub fn launch(device: &#p::Device, #(#launcher_args),*) -> #p::Result<()> {
                launch_tuned(#p::tune::Tuner::global(), device, #(#forward_args),*)
            }

            /// [`launch`] with the config `tuner` picks.
            pub fn launch_tuned(
                tuner: &#p::tune::Tuner,
                device: &#p::Device,
                #(#launcher_args),*
            ) -> #p::Result<()> {
                #skip_tuning
                let config = select_config(tuner, device, #(#select_forward),*)?;
                launch_with(device, &config, #(#forward_args),*)
            }

            /// The config `tuner` picks for these arguments: from its memory,
            /// the user's tune cache, [`TUNE_TABLE`], or by timing every config
            /// on scratch copies of the written tensors (the arguments are
            /// left untouched), else the default.
            pub fn select_config(
                tuner: &#p::tune::Tuner,
                device: &#p::Device,
                #(#select_args),*
            ) -> #p::Result<Config> {
                #binding
                let __request = #p::tune::TuneRequest {
                    kernel: KERNEL.name,
                    source_hash: KERNEL.source_hash,
                    compiler_version: ARTIFACT.fingerprint.compiler_version,
                    configs: CONFIG_TEXTS,
                    embedded: TUNE_TABLE,
                    device,
                    dims: &[#(#dim_vars),*],
                };
                let __index = match tuner.lookup(&__request) {
                    #p::tune::Lookup::Use(__index, _) => __index,
                    #p::tune::Lookup::Tune(__session) => {
                        #scratch
                        __session.tune(&mut |__index: usize| {
                            launch_with(device, &CONFIGS[__index], #(#scratch_forward),*)
                        })
                    }
                };
                ::core::result::Result::Ok(CONFIGS.get(__index).copied().unwrap_or_default())
            }

            #launchers

            fn __launch(
                device: &#p::Device,
                config: &Config,
                __hand_written: bool,
                #(#launcher_args),*
            ) -> #p::Result<()> {
                let ::core::option::Option::Some(__config_index) =
                    CONFIGS.iter().position(|__c| __c == config)
                else {
                    return ::core::result::Result::Err(#p::Error::Backend {
                        backend: device.name(),
                        message: ::std::format!(
                            "kernel `{}`: {:?} is not in the tune space; use one of `{}::CONFIGS`",
                            #kernel_name, config, #kernel_name
                        ),
                    });
                };
                #binding
                #cuda_fn
                if !device.is_host() {
                    return ::core::result::Result::Err(#p::Error::BackendUnavailable {
                        backend: device.name(),
                        reason: ::std::format!(
                            "kernel `{}` has no implementation for this backend yet",
                            #kernel_name
                        ),
                    });
                }
                #call_host_impl
                #host_call
            }

            #host_bodies

            #artifact

            #slice_helper
        }
    })
}

/// What `@host_impl` adds to the module: the public launchers, the call
/// of the hand-written function in `__launch`, and the start of
/// `launch_tuned` that skips tuning when that function runs (every config
/// runs the same code there).
struct HostImplCode {
    launchers: TokenStream,
    call: TokenStream,
    skip_tuning: TokenStream,
}

/// `launch_with` (and, with `@host_impl`, `launch_generated`) over
/// `__launch`; with `@host_impl(f)`, `super::f(device, args..)` runs on the
/// host unless `launch_generated` or `PHOBOS_HOST_IMPL=generated` asks for
/// the generated body.
fn host_impl_launchers(
    kernel: &Kernel,
    launcher_args: &[TokenStream],
    forward_args: &[TokenStream],
) -> Result<HostImplCode, GenError> {
    let p = private();
    let launch_with = quote! {
        /// Runs the kernel with `config`, which must be one of [`CONFIGS`].
        pub fn launch_with(
            device: &#p::Device,
            config: &Config,
            #(#launcher_args),*
        ) -> #p::Result<()> {
            __launch(device, config, true, #(#forward_args),*)
        }
    };
    let Some(name) = &kernel.host_impl else {
        return Ok(HostImplCode {
            launchers: launch_with,
            call: TokenStream::new(),
            skip_tuning: TokenStream::new(),
        });
    };
    if names::is_rust_keyword(name) || name.starts_with("__") {
        return Err(GenError::new(
            kernel.span,
            format!(
                "`@host_impl({name})`: `{name}` cannot name a Rust function here (a keyword, or a name starting with `__`)"
            ),
        ));
    }
    let function = proc_macro2::Ident::new(name, proc_macro2::Span::call_site());
    let doc = format!(
        "[`launch_with`] running the generated body on the host too, never `{name}` (`@host_impl`): what tests compare the hand-written function against."
    );
    let hand_written = quote!(#p::host::HostImplMode::HandWritten);
    Ok(HostImplCode {
        launchers: quote! {
            #launch_with

            #[doc = #doc]
            pub fn launch_generated(
                device: &#p::Device,
                config: &Config,
                #(#launcher_args),*
            ) -> #p::Result<()> {
                __launch(device, config, false, #(#forward_args),*)
            }
        },
        call: quote! {
            if __hand_written && #p::host::HostImplMode::from_env()? == #hand_written {
                return super::#function(device, #(#forward_args),*);
            }
        },
        skip_tuning: quote! {
            if device.is_host() && #p::host::HostImplMode::from_env()? == #hand_written {
                return launch_with(device, &CONFIGS[0], #(#forward_args),*);
            }
        },
    })
}

/// Rank checks, then each symbolic dim bound from its first tensor and
/// compared with every later one. Defines `__dim_<name>: usize`.
fn dim_binding(kernel: &Kernel) -> TokenStream {
    let p = private();
    let kernel_name = &kernel.name;
    let mut out = TokenStream::new();
    let tensors: Vec<(&Param, &Vec<Dim>)> = kernel
        .params
        .iter()
        .filter_map(|param| match &param.kind {
            ParamKind::Tensor { dims, .. } => Some((param, dims)),
            ParamKind::Scalar { .. } => None,
        })
        .collect();
    for (param, dims) in &tensors {
        let arg = names::public(&param.name);
        let name = &param.name;
        let rank = dims.len();
        out.extend(quote! {
            if #arg.rank() != #rank {
                return ::core::result::Result::Err(#p::Error::RankMismatch {
                    kernel: ::std::string::String::from(#kernel_name),
                    param: ::std::string::String::from(#name),
                    expected: #rank,
                    actual: #arg.rank(),
                });
            }
        });
    }
    let mut first_seen: Vec<(&str, &str, usize)> = Vec::new();
    for (param, dims) in &tensors {
        let arg = names::public(&param.name);
        let name = &param.name;
        let declared = param_type_text(param);
        for (axis, dim) in dims.iter().enumerate() {
            match dim {
                Dim::Lit(extent) => {
                    let extent = (*extent).max(0) as usize;
                    let op = format!("kernel `{kernel_name}`, parameter `{name}`");
                    out.extend(quote! {
                        if #arg.shape()[#axis] != #extent {
                            let mut __expected = #arg.shape().to_vec();
                            __expected[#axis] = #extent;
                            return ::core::result::Result::Err(#p::Error::ShapeMismatch {
                                op: #op,
                                lhs: __expected,
                                rhs: #arg.shape().to_vec(),
                                expected: #declared,
                            });
                        }
                    });
                }
                Dim::Sym(dim_name) => {
                    let var = format_ident!("__dim_{}", dim_name);
                    match first_seen.iter().find(|(d, _, _)| d == dim_name) {
                        None => {
                            first_seen.push((dim_name, name, axis));
                            out.extend(quote!(let #var: usize = #arg.shape()[#axis];));
                        }
                        Some((_, first_param, _)) => {
                            out.extend(quote! {
                                if #arg.shape()[#axis] != #var {
                                    return ::core::result::Result::Err(#p::Error::DimMismatch {
                                        kernel: ::std::string::String::from(#kernel_name),
                                        dim: ::std::string::String::from(#dim_name),
                                        first_param: ::std::string::String::from(#first_param),
                                        first_extent: #var,
                                        second_param: ::std::string::String::from(#name),
                                        second_extent: #arg.shape()[#axis],
                                    });
                                }
                            });
                        }
                    }
                }
            }
        }
    }
    out
}

/// The host implementation: views on the tensors, the config and dims as
/// `i32` scalars, the grid, then every program in parallel; the program
/// body once per config when `specialize` (else one generic body).
pub(super) fn host_function(
    generator: &Generator<'_>,
    kernel: &Kernel,
    specialize: bool,
) -> Result<TokenStream, GenError> {
    let p = private();
    let mut prelude = TokenStream::new();
    // Written tensors first: each enters its allocation as a writer, so a
    // read-only parameter on the same storage (an alias) is then refused
    // plain reads and reads atomically, and making the plain readers last
    // means the launch never waits while holding one.
    let mut written = TokenStream::new();
    let mut read = TokenStream::new();
    let owned = super::ownership::program_owned(kernel);
    for param in &kernel.params {
        let arg = names::public(&param.name);
        let var = names::param(&param.name);
        match &param.kind {
            ParamKind::Tensor {
                elem: Elem::Quant(_),
                written: true,
                ..
            } => written.extend(quote!(let #var = #p::host::QuantWrite::new(#arg)?;)),
            ParamKind::Tensor {
                elem: Elem::Quant(_),
                ..
            } => prelude.extend(quote!(let #var = #p::host::QuantRead::new(#arg)?;)),
            ParamKind::Tensor { written: true, .. }
                if owned.iter().any(|(name, _)| *name == param.name) =>
            {
                written.extend(quote!(let mut #var = #p::host::TensorWrite::new(#arg)?;));
            }
            ParamKind::Tensor { written: true, .. } => {
                written.extend(quote!(let #var = #p::host::TensorWrite::new(#arg)?;));
            }
            ParamKind::Tensor { written: false, .. } => {
                let guard = format_ident!("__plain_{}", var);
                read.extend(quote! {
                    let #guard = #p::host::PlainRead::new(#arg)?;
                    let #var = #guard.view();
                });
            }
            ParamKind::Scalar { .. } => prelude.extend(quote!(let #var = #arg;)),
        }
    }
    prelude.extend(written);
    prelude.extend(read);
    // The generic arm's tune values: read from the config at run time.
    let runtime_tune = grid::tune_bindings(kernel);
    prelude.extend(grid::dim_bindings(kernel));
    let grid = grid::grid_extents(generator, kernel)?;
    let body = generator.block(&kernel.body)?;
    let plain_stores = plain_store_grants(generator, &owned);
    let prefetcher = generator
        .prefetches
        .then(|| quote!(let mut __prefetch = #p::host::Prefetcher::new();));
    let run = quote! {
        let __grid: [usize; 3] = #grid;
        // Each grid dim fits i32: try_run_grid rejects larger grids first.
        let __num_programs: [i32; 3] = [__grid[0] as i32, __grid[1] as i32, __grid[2] as i32];
        #plain_stores
        #p::host::try_run_grid(__grid, |__pid: [i32; 3]| -> #p::Result<()> {
            #prefetcher
            #body
            ::core::result::Result::Ok(())
        })
    };
    let dispatch = if specialize {
        specialized_dispatch(kernel, &run, &runtime_tune)
    } else {
        quote!({ #runtime_tune #run })
    };
    Ok(quote! {
        #prelude
        #dispatch
    })
}

/// For each program-owned tensor ([`super::ownership`]): plain stores,
/// once the grid is known not to wrap any owning span start
/// (`program_id(a) * M` below `2^31` for every program).
fn plain_store_grants(
    generator: &Generator<'_>,
    owned: &[(String, Vec<super::ownership::AxisOwner>)],
) -> TokenStream {
    let mut out = TokenStream::new();
    for (name, owners) in owned {
        let var = names::param(name);
        let checks = owners.iter().filter_map(|owner| {
            let axis = owner.axis;
            let multiplier = generator.shape_dim(owner.multiplier.as_ref()?);
            Some(quote!(
                (__grid[#axis] as u64).saturating_mul(#multiplier as u64) <= (1u64 << 31)
            ))
        });
        out.extend(quote! {
            if true #(&& #checks)* {
                // SAFETY: `#name` is program-owned (build-support's
                // `back/host/ownership.rs`): no program reads it, and the
                // dims each grid axis indexes by `program_id` (or by a
                // non-wrapping `program_id * M` span of at most M, checked
                // just above) give every program its own elements, so no
                // element is stored by two threads or read by another.
                let _ = unsafe { #var.allow_plain_stores() };
            }
        });
    }
    out
}

/// Configs past this many share one generic body with runtime tune values;
/// the ones before it get a body each (a kernel's code is copied per
/// specialized config, so the bound keeps build time in check).
pub(super) const MAX_SPECIALIZED_CONFIGS: usize = 64;

/// The launch body once per config, its tune parameters as constants (so
/// rustc folds tile dims and unrolls over them), picked by
/// `__config_index` with one `match` per launch. The specializations
/// compute what the generic body computes: only where the tune values come
/// from differs.
fn specialized_dispatch(
    kernel: &Kernel,
    run: &TokenStream,
    runtime_tune: &TokenStream,
) -> TokenStream {
    let configs = kernel.configs();
    if kernel.tune.is_empty() || configs.is_empty() {
        return quote!({ #runtime_tune #run });
    }
    let specialized = configs.len().min(MAX_SPECIALIZED_CONFIGS);
    let mut arms = TokenStream::new();
    for (index, config) in configs.iter().enumerate().take(specialized) {
        let consts = config.values.iter().map(|(name, value)| {
            let var = names::tune(name);
            // Tune values are small positives (the checker bounds them).
            let value = Literal::i32_suffixed(*value as i32);
            quote!(const #var: i32 = #value;)
        });
        let pattern = if index + 1 == configs.len() {
            quote!(_)
        } else {
            let index = Literal::usize_unsuffixed(index);
            quote!(#index)
        };
        arms.extend(quote!(#pattern => { #(#consts)* #run }));
    }
    if specialized < configs.len() {
        arms.extend(quote!(_ => { #runtime_tune #run }));
    }
    quote!(match __config_index { #arms })
}

fn tensor_elem_type(elem: Elem, param: &Param) -> Result<TokenStream, GenError> {
    match elem {
        Elem::Scalar(dtype) => Ok(names::rust_type(dtype)),
        Elem::Quant(quant) => Err(GenError::new(
            param.span,
            format!(
                "the host back end does not support quantized tensors yet (`{}` is {quant})",
                param.name
            ),
        )),
    }
}

/// The parameter's type as written in the kernel language.
fn param_type_text(param: &Param) -> String {
    match &param.kind {
        ParamKind::Scalar { dtype } => dtype.name().to_string(),
        ParamKind::Tensor { elem, dims, .. } => {
            let dims: Vec<String> = dims
                .iter()
                .map(|d| match d {
                    Dim::Sym(name) => name.clone(),
                    Dim::Lit(v) => v.to_string(),
                })
                .collect();
            format!("tensor<{elem}>[{}]", dims.join(", "))
        }
    }
}

/// A grid expression back in source form, for the kernel definition.
pub(super) fn expr_text(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Int(v) => v.to_string(),
        ExprKind::Float(v) => v.to_string(),
        ExprKind::Bool(v) => v.to_string(),
        ExprKind::Dim(name) | ExprKind::Tune(name) | ExprKind::Param(name) => name.clone(),
        ExprKind::Cast(inner) | ExprKind::Broadcast(inner) => expr_text(inner),
        ExprKind::Binary { op, lhs, rhs } => {
            format!("({} {} {})", expr_text(lhs), op.symbol(), expr_text(rhs))
        }
        ExprKind::Call { func, args } => {
            let args: Vec<String> = args.iter().map(expr_text).collect();
            let name = match func {
                Builtin::ReduceSum => "sum",
                Builtin::ReduceMax => "max",
                Builtin::ReduceMin => "min",
                other => other.name(),
            };
            format!("{name}({})", args.join(", "))
        }
        _ => "<expr>".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::source_hash;

    #[test]
    fn fnv1a_matches_known_vectors() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(source_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(source_hash("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(source_hash("foobar"), 0x8594_4171_f739_67e8);
    }
}
