//! Proc macros `kernel!` and `kernel_file!`.

use proc_macro::TokenStream;

/// Compiles inline Phobos kernels into a module per kernel.
#[proc_macro]
pub fn kernel(input: TokenStream) -> TokenStream {
    let _ = input;
    quote::quote!(compile_error!("phobos::kernel! is not implemented yet");).into()
}

/// Compiles the kernels of a `.ph` file into a module per kernel.
#[proc_macro]
pub fn kernel_file(input: TokenStream) -> TokenStream {
    let _ = input;
    quote::quote!(compile_error!("phobos::kernel_file! is not implemented yet");).into()
}
