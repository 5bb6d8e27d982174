//! `sum(tree)` of an elementwise tree as one loop that adds the tree's
//! elements as it computes them, [`SUM_CHUNK`] at a time into a fixed array
//! that stays in registers: the tree's tile is never written. Unfused, a
//! layernorm's `sum((x - mean) * (x - mean))` stored every element and read
//! it back; a store per vector bound that pass on Zen 1.
//!
//! The runtime's `SumChunks` adds the chunks into the same partials, in the
//! same order, as `host::sum` adds a tile's elements, so the fused sum has
//! the unfused sum's bits. Trees with a leaf read per row or per column
//! keep the tile (their loop runs row by row).
//!
//! [`SUM_CHUNK`]: phobos_rt::host::SUM_CHUNK

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

use super::expr::private;
use super::fuse::is_elementwise;
use super::names;
use super::{GenError, Generator};
use crate::ir::Expr;

impl Generator<'_> {
    /// The scalar `sum(arg)` as one fused loop, or `None` where `arg` is
    /// not an elementwise tree of whole tile leaves.
    pub fn fused_sum(&self, arg: &Expr) -> Result<Option<TokenStream>, GenError> {
        if !is_elementwise(arg) || arg.is_scalar() {
            return Ok(None);
        }
        let fused = self.fuse(arg)?;
        if fused.leaves.is_empty() || fused.stretched() {
            return Ok(None);
        }
        let p = private();
        let ty = names::rust_type(self.dtype_of(arg)?);
        let shape_name = Ident::new("__shape", Span::call_site());
        let checks = fused.shape_checks(&shape_name);
        let (prelude, body, shape) = (&fused.prelude, &fused.body, &fused.shape);
        let mut splits = TokenStream::new();
        // The zips over the leaves' full chunks, over one chunk's elements,
        // and over the rest, with their patterns; the two element zips
        // write `__vals` as `__acc`.
        let (mut full_iter, mut full_pattern) = (TokenStream::new(), TokenStream::new());
        let (mut chunk_iter, mut chunk_pattern) = (quote!(__vals.iter_mut()), quote!(__acc));
        let (mut rest_iter, mut rest_pattern) = (chunk_iter.clone(), chunk_pattern.clone());
        for (i, leaf) in fused.leaves.iter().enumerate() {
            let (tile, value) = (&leaf.tile, &leaf.value);
            let full = format_ident!("__full_{}", tile);
            let rest = format_ident!("__rest_{}", tile);
            let chunk = format_ident!("__chunk_{}", tile);
            splits.extend(quote!(
                let (#full, #rest) = #tile.as_slice().as_chunks::<{ #p::host::SUM_CHUNK }>();
            ));
            if i == 0 {
                full_iter = quote!(#full.iter());
                full_pattern = quote!(#chunk);
            } else {
                full_iter = quote!(#full_iter.zip(#full.iter()));
                full_pattern = quote!((#full_pattern, #chunk));
            }
            chunk_iter = quote!(#chunk_iter.zip(#chunk.iter()));
            chunk_pattern = quote!((#chunk_pattern, &#value));
            rest_iter = quote!(#rest_iter.zip(#rest.iter()));
            rest_pattern = quote!((#rest_pattern, &#value));
        }
        let first_rest = format_ident!("__rest_{}", fused.leaves[0].tile);
        // Every leaf has `__shape` (`checks`), so every leaf splits into the
        // same number of full chunks and the same rest length. Plain `for`
        // loops in the body, as in `Fused::fill_slots` (a closure handed to
        // an iterator adaptor would not get the body's target features).
        Ok(Some(quote!({
            #prelude
            let #shape_name = [#(#shape),*];
            #checks
            let mut __sum = #p::host::SumChunks::<#ty>::new(#shape_name.iter().product());
            #splits
            for #full_pattern in #full_iter {
                let mut __vals = [<#ty as #p::Element>::ZERO; #p::host::SUM_CHUNK];
                for #chunk_pattern in #chunk_iter {
                    *__acc = #body;
                }
                __sum.add_chunk(&__vals);
            }
            let mut __vals = [<#ty as #p::Element>::ZERO; #p::host::SUM_CHUNK];
            for #rest_pattern in #rest_iter {
                *__acc = #body;
            }
            __sum.add_rest(&__vals[..#first_rest.len()]);
            __sum.finish()
        })))
    }
}
