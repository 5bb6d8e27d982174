//! Proc macros `kernel!` and `kernel_file!`: the Phobos kernel language
//! compiled inside a Rust crate.
//!
//! Both run the compiler's front half (`phobos_build::parse`, then the
//! checker) and the host back end (`phobos_build::back::host`), and expand
//! to one module per kernel (see that back end's docs for its contents).
//! Errors become `compile_error!` at the offending token (inline kernels)
//! or at the path literal with `file:line:col` and the underlined line
//! (kernel files), and the modules are still emitted, empty, so the rest of
//! the crate keeps resolving while the kernel is being fixed.

mod error;
mod expand;
#[cfg(feature = "ptx")]
mod ptx;
mod source_file;
mod tune_table;

use proc_macro::TokenStream;

/// Compiles inline Phobos kernels into a module per kernel.
///
/// ```ignore
/// phobos::kernel! {
///     @autotune(BLOCK in [256, 4096])
///     @grid(cdiv(N, BLOCK))
///     kernel saxpy(x: tensor<f32>[N], y: tensor<f32>[N], out: tensor<f32>[N], alpha: f32) {
///         let base = program_id(0) * BLOCK
///         out[base :+ BLOCK] = alpha * x[base :+ BLOCK] + y[base :+ BLOCK]
///     }
/// }
/// // saxpy::launch(&device, &x, &y, &mut out, 2.0)?;
/// ```
#[proc_macro]
pub fn kernel(input: TokenStream) -> TokenStream {
    expand::inline(input.into()).into()
}

/// Compiles the kernels of a `.ph` file (path relative to the crate's
/// `Cargo.toml`) into a module per kernel; cargo rebuilds when it changes.
///
/// ```ignore
/// phobos::kernel_file!("kernels/gemm_f32.ph");
/// ```
#[proc_macro]
pub fn kernel_file(input: TokenStream) -> TokenStream {
    expand::file(input.into()).into()
}
