//! Host code for the quantized-tensor features of SPEC.md §14 beyond
//! `dequant` and the contractions: block access (`qlevels`, `qscales`) and
//! stores that quantize into a writable quantized tensor. The runtime side
//! is `phobos_rt::host::{qlevels, qscales, store_quant, QuantWrite}`.

use proc_macro2::TokenStream;
use quote::quote;

use super::expr::private;
use super::names;
use super::{GenError, Generator};
use crate::ir::{Builtin, Elem, Expr, ParamKind, Slice};

impl Generator<'_> {
    /// Whether `tensor` is a quantized parameter (its stores quantize).
    pub(super) fn is_quant_tensor(&self, tensor: &str) -> bool {
        self.kernel.param(tensor).is_some_and(|p| {
            matches!(
                p.kind,
                ParamKind::Tensor {
                    elem: Elem::Quant(_),
                    ..
                }
            )
        })
    }

    /// `T[index] = value` into a quantized tensor: quantizes the value's
    /// blocks (the checker allows `=` only, of an f32 tile of the slice's
    /// shape).
    pub(super) fn quant_store(
        &self,
        tensor: &str,
        index: &[Slice],
        value: &Expr,
    ) -> Result<TokenStream, GenError> {
        let p = private();
        let view = names::param(tensor);
        let slices = self.slices(index)?;
        let value = self.tile_ref(value)?;
        Ok(quote!(#p::host::store_quant(&#view, &[#(#slices),*], #value)?;))
    }

    /// `qlevels(q)` / `qscales(q)`; `arg` is the quantized tile's reference.
    pub(super) fn block_access(&self, func: Builtin, arg: TokenStream) -> TokenStream {
        let p = private();
        match func {
            Builtin::QLevels => quote!(#p::host::qlevels(#arg)?),
            _ => quote!(#p::host::qscales(#arg)?),
        }
    }
}
