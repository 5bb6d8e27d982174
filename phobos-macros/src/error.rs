//! Turning compile errors into `compile_error!` invocations at a span.

use proc_macro2::{Span, TokenStream};
use quote::quote_spanned;

/// One error to report at a span of the user's tokens.
#[derive(Debug)]
pub struct MacroError {
    span: Span,
    message: String,
}

impl MacroError {
    pub fn new(span: Span, message: impl Into<String>) -> Self {
        Self {
            span,
            message: message.into(),
        }
    }

    /// `compile_error!` spanned so rustc underlines the offending token.
    pub fn to_compile_error(&self) -> TokenStream {
        let message = &self.message;
        quote_spanned! {self.span=> ::core::compile_error! { #message } }
    }
}
