//! The host implementation once per SIMD level, and which levels a build
//! emits (`PHOBOS_HOST_SIMD`, read by the macros at build time).
//!
//! By default every kernel gets three bodies (AVX-512 and AVX2 under
//! `#[target_feature]`, and a portable one) and picks one per launch, so a
//! binary runs well on any x86-64 CPU. A build for one machine needs only
//! the body that machine runs: `native` (or a named level) emits that one,
//! which cuts the host code rustc compiles per kernel to a third.

use proc_macro2::TokenStream;
use quote::quote;

use super::expr::private;
use super::launcher::host_function;
use super::{GenError, Generator};
use crate::ir::Kernel;

/// The target features of the AVX-512 body: phobos-rt's
/// `host::simd::AVX512_FEATURES`, which its run-time check detects (a test
/// in the examples crate keeps the two lists equal).
pub const AVX512_FEATURES: &str =
    "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,bmi1,bmi2,lzcnt,popcnt,f16c";

/// The target features of the AVX2 body (phobos-rt's `AVX2_FEATURES`).
pub const AVX2_FEATURES: &str = "avx2,fma,bmi1,bmi2,lzcnt,popcnt,f16c";

/// The build-time variable that chooses [`HostBodies`].
pub const HOST_SIMD_ENV: &str = "PHOBOS_HOST_SIMD";

/// Which host bodies each kernel gets on x86-64 (other targets always get
/// one portable body).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HostBodies {
    /// One per level, picked per launch by `host::simd_level()`.
    #[default]
    All,
    /// Only the AVX-512 body: a launch in a process below that level
    /// (the CPU, or `PHOBOS_SIMD`) is an error.
    Avx512,
    /// Only the AVX2 body: AVX-512 CPUs run it too; below AVX2 a launch is
    /// an error.
    Avx2,
    /// Only the portable body (tune values read at run time): runs on any
    /// CPU, the slowest.
    Portable,
}

impl HostBodies {
    /// Parses a `PHOBOS_HOST_SIMD` value: `all` (or empty), `native` (the
    /// widest level of the machine running the build), `avx512`, `avx2` or
    /// `portable`.
    pub fn parse(value: &str) -> Result<HostBodies, String> {
        match value.trim() {
            "" | "all" => Ok(HostBodies::All),
            "native" => Ok(HostBodies::native()),
            "avx512" => Ok(HostBodies::Avx512),
            "avx2" => Ok(HostBodies::Avx2),
            "portable" => Ok(HostBodies::Portable),
            other => Err(format!(
                "{HOST_SIMD_ENV}={other:?}: expected all, native, avx512, avx2 or portable"
            )),
        }
    }

    /// From `PHOBOS_HOST_SIMD` (unset: [`HostBodies::All`]).
    pub fn from_env() -> Result<HostBodies, String> {
        match std::env::var(HOST_SIMD_ENV) {
            Ok(value) => HostBodies::parse(&value),
            Err(std::env::VarError::NotPresent) => Ok(HostBodies::All),
            Err(std::env::VarError::NotUnicode(_)) => {
                Err(format!("{HOST_SIMD_ENV} is not valid UTF-8"))
            }
        }
    }

    /// The widest level whose every feature the machine running this
    /// (the build) reports.
    pub fn native() -> HostBodies {
        #[cfg(target_arch = "x86_64")]
        {
            let has_all = |features: &str| features.split(',').all(x86_feature_detected);
            if has_all(AVX512_FEATURES) {
                return HostBodies::Avx512;
            }
            if has_all(AVX2_FEATURES) {
                return HostBodies::Avx2;
            }
        }
        HostBodies::Portable
    }

    /// The value's name, as `PHOBOS_HOST_SIMD` spells it.
    pub fn name(self) -> &'static str {
        match self {
            HostBodies::All => "all",
            HostBodies::Avx512 => "avx512",
            HostBodies::Avx2 => "avx2",
            HostBodies::Portable => "portable",
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn x86_feature_detected(feature: &str) -> bool {
    match feature {
        "avx512f" => std::is_x86_feature_detected!("avx512f"),
        "avx512bw" => std::is_x86_feature_detected!("avx512bw"),
        "avx512dq" => std::is_x86_feature_detected!("avx512dq"),
        "avx512vl" => std::is_x86_feature_detected!("avx512vl"),
        "avx2" => std::is_x86_feature_detected!("avx2"),
        "fma" => std::is_x86_feature_detected!("fma"),
        "bmi1" => std::is_x86_feature_detected!("bmi1"),
        "bmi2" => std::is_x86_feature_detected!("bmi2"),
        "lzcnt" => std::is_x86_feature_detected!("lzcnt"),
        "popcnt" => std::is_x86_feature_detected!("popcnt"),
        "f16c" => std::is_x86_feature_detected!("f16c"),
        _ => false,
    }
}

/// The host implementation as module-level functions, one per SIMD level
/// `bodies` keeps (`__host_avx512`, `__host_avx2` under
/// `#[target_feature]`, and `__host_portable`), and the `match` in
/// `launch_with` that calls the one `host::simd_level()` picks. Closures
/// inherit their function's target features, so every program body and
/// fused loop inside is compiled for that level; the library's `#[inline]`
/// functions are compiled into it. On x86-64 the portable body is the
/// generic one (tune values read at run time): CPUs without AVX2 are rare
/// there, and one body instead of one per config keeps the build smaller.
/// Every body computes the same results bit for bit (rustc neither
/// contracts to FMA nor reorders float operations).
pub(super) fn simd_bodies(
    generator: &Generator<'_>,
    kernel: &Kernel,
    bodies: HostBodies,
    launcher_args: &[TokenStream],
    forward_args: &[TokenStream],
    dim_vars: &[proc_macro2::Ident],
) -> Result<(TokenStream, TokenStream), GenError> {
    let p = private();
    let specialized = host_function(generator, kernel, true)?;
    let params = quote!(
        config: &Config,
        __config_index: usize,
        #(#dim_vars: usize,)*
        #(#launcher_args),*
    );
    let args = quote!(config, __config_index, #(#dim_vars,)* #(#forward_args),*);
    // Targets other than x86-64 run one specialized portable body.
    let other_arch = quote! {
        #[cfg(not(target_arch = "x86_64"))]
        fn __host_portable(#params) -> #p::Result<()> { #specialized }
    };
    let avx512 = || {
        quote! {
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = #AVX512_FEATURES)]
            fn __host_avx512(#params) -> #p::Result<()> { #specialized }
        }
    };
    let avx2 = || {
        quote! {
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = #AVX2_FEATURES)]
            fn __host_avx2(#params) -> #p::Result<()> { #specialized }
        }
    };
    let portable = || -> Result<TokenStream, GenError> {
        let generic = host_function(generator, kernel, false)?;
        Ok(quote! {
            #[cfg(target_arch = "x86_64")]
            fn __host_portable(#params) -> #p::Result<()> { #generic }
        })
    };
    // SAFETY comments for the calls the arms below make.
    let call_avx512 = quote! {
        // SAFETY: `simd_level` returns Avx512 only when the CPU reported
        // every feature `__host_avx512` is compiled for (phobos-rt's
        // AVX512_FEATURES, equal to this crate's).
        unsafe { __host_avx512(#args) }
    };
    let call_avx2 = quote! {
        // SAFETY: as above: Avx2 and Avx512 both include every feature of
        // AVX2_FEATURES, which `__host_avx2` is compiled for.
        unsafe { __host_avx2(#args) }
    };
    let kernel_name = &kernel.name;
    let unavailable = |built: &str| {
        quote!(::core::result::Result::Err(#p::Error::HostSimdUnavailable {
            kernel: #kernel_name.to_string(),
            built: #built,
            level: __level.name(),
        }))
    };
    let (x86_bodies, x86_call) = match bodies {
        HostBodies::All => {
            let (a, b, c) = (avx512(), avx2(), portable()?);
            (
                quote!(#a #b #c),
                quote!(match #p::host::simd_level() {
                    #p::host::SimdLevel::Avx512 => { #call_avx512 }
                    #p::host::SimdLevel::Avx2 => { #call_avx2 }
                    _ => __host_portable(#args),
                }),
            )
        }
        HostBodies::Avx512 => {
            let error = unavailable("avx512");
            (
                avx512(),
                quote!(match #p::host::simd_level() {
                    #p::host::SimdLevel::Avx512 => { #call_avx512 }
                    __level => #error,
                }),
            )
        }
        HostBodies::Avx2 => {
            let error = unavailable("avx2");
            (
                avx2(),
                quote!(match #p::host::simd_level() {
                    #p::host::SimdLevel::Avx512 | #p::host::SimdLevel::Avx2 => { #call_avx2 }
                    __level => #error,
                }),
            )
        }
        HostBodies::Portable => (portable()?, quote!(__host_portable(#args))),
    };
    let call = quote! {{
        #[cfg(target_arch = "x86_64")]
        let __result = #x86_call;
        #[cfg(not(target_arch = "x86_64"))]
        let __result = __host_portable(#args);
        __result
    }};
    Ok((call, quote!(#x86_bodies #other_arch)))
}
