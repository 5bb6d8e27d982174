//! How IR names and types become Rust identifiers and type paths.
//!
//! Every generated identifier carries a prefix by kind (`l_` locals, `p_`
//! parameters, `d_` tensor dims, `t_` tune parameters) so kernel names can
//! never collide with Rust keywords, with one another, or with the
//! generator's own `__`-prefixed names.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

use crate::ir::{DType, QuantType};

pub fn local(name: &str) -> Ident {
    format_ident!("l_{}", name)
}

pub fn param(name: &str) -> Ident {
    format_ident!("p_{}", name)
}

pub fn dim(name: &str) -> Ident {
    format_ident!("d_{}", name)
}

pub fn tune(name: &str) -> Ident {
    format_ident!("t_{}", name)
}

/// The name a kernel module, parameter or `Config` field has in the public
/// API: the kernel's own name when Rust accepts it as an identifier, else
/// prefixed with `p_`.
pub fn public(name: &str) -> Ident {
    if is_rust_keyword(name) {
        format_ident!("p_{}", name)
    } else {
        Ident::new(name, Span::call_site())
    }
}

pub(super) fn is_rust_keyword(name: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum",
        "extern", "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod",
        "move", "mut", "pub", "ref", "return", "self", "Self", "static", "struct", "super",
        "trait", "true", "type", "unsafe", "use", "where", "while", "abstract", "become", "box",
        "do", "final", "macro", "override", "priv", "try", "typeof", "unsized", "virtual", "yield",
        "_",
    ];
    KEYWORDS.contains(&name)
}

/// The Rust type of a scalar dtype, as a path that resolves in any crate.
pub fn rust_type(dtype: DType) -> TokenStream {
    match dtype {
        DType::Bool => quote!(bool),
        DType::I8 => quote!(i8),
        DType::U8 => quote!(u8),
        DType::I16 => quote!(i16),
        DType::U16 => quote!(u16),
        DType::I32 => quote!(i32),
        DType::U32 => quote!(u32),
        DType::I64 => quote!(i64),
        DType::F16 => quote!(::phobos::__private::f16),
        DType::Bf16 => quote!(::phobos::__private::bf16),
        DType::F32 => quote!(f32),
        DType::F64 => quote!(f64),
    }
}

/// The runtime marker type of a quantized format
/// (`::phobos::__private::quant::Q4K`); the marker names are the
/// `QuantType` variant names.
pub fn quant_marker(quant: QuantType) -> TokenStream {
    let marker = Ident::new(&format!("{quant:?}"), Span::call_site());
    quote!(::phobos::__private::quant::#marker)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_keep_kinds_apart() {
        assert_eq!(local("x").to_string(), "l_x");
        assert_eq!(param("x").to_string(), "p_x");
        assert_eq!(dim("M").to_string(), "d_M");
        assert_eq!(tune("TILE_M").to_string(), "t_TILE_M");
    }

    #[test]
    fn keywords_are_prefixed_in_the_public_api() {
        assert_eq!(public("alpha").to_string(), "alpha");
        assert_eq!(public("type").to_string(), "p_type");
        assert_eq!(public("self").to_string(), "p_self");
    }
}
