//! A store of a fused elementwise tree (`Y[block] = e / rowsum(e)`)
//! written straight to its destination: the tree's elements are computed
//! row by row in chunks of `host::STORE_CHUNK` into what
//! `host::StoreSink` gives (the tensor's own elements, or a small buffer
//! it streams out after each chunk), instead of into a whole tile that
//! `host::store` then copies. That saves a pass over every stored tile,
//! and for a tensor written with streaming stores it interleaves the
//! writes to memory with the compute instead of issuing them in one
//! burst after it (`phobos_rt::host` `store_sink.rs`).
//!
//! The element code is the fused loop's (`Fused::body`), so the stored
//! bits are those of the tile path. When the tensor's block cannot be
//! written in place (stores not plain, a masked or strided block) the
//! sink builds the tile whole and stores it in `finish`: the loop is
//! emitted once either way.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

use super::expr::private;
use super::fuse::{Fused, Stretch};
use super::names;
use super::{GenError, Generator};
use crate::ir::Expr;

impl Generator<'_> {
    /// `view[slices] = root` for an elementwise `root`, or `None` when the
    /// tree has no tile leaf (a `full`, which the plain store handles).
    pub fn fused_store(
        &self,
        view: &Ident,
        slices: &[TokenStream],
        root: &Expr,
    ) -> Result<Option<TokenStream>, GenError> {
        let p = private();
        let fused = self.fuse(root)?;
        if fused.leaves.is_empty() || fused.shape.is_empty() {
            return Ok(None);
        }
        let ty = names::rust_type(self.dtype_of(root)?);
        let shape_name = Ident::new("__shape", Span::call_site());
        let checks = fused.shape_checks(&shape_name);
        let chunks = chunked_rows(&fused, &shape_name, self.prefetches);
        let Fused { prelude, shape, .. } = &fused;
        // Slices first, then the leaves, as `store(&view, &[slices],
        // &tree)` evaluated them.
        Ok(Some(quote!({
            let __slices = [#(#slices),*];
            #prelude
            let #shape_name = [#(#shape),*];
            #checks
            let mut __sink = #p::host::StoreSink::<#ty>::new(&#view, &__slices, &#shape_name)?;
            #chunks
            // SAFETY: the loops above wrote every element of the tile (see
            // `chunked_rows`).
            unsafe { __sink.finish(&#view, &__slices) }?;
        })))
    }
}

/// The loops that compute the tree into `__sink`: per row (`__outer` of
/// `__inner` elements), per chunk of at most `STORE_CHUNK` of the row,
/// the chunk's slots zipped with each whole leaf's and per-column leaf's
/// chunk and each per-row leaf's value. The leaves' shapes were checked
/// against `shape_name` (whole) or their own shapes, so every zip runs the
/// chunk's full length and every slot is written before `commit`. With
/// `pump`, each chunk also pumps the program's prefetch queue.
fn chunked_rows(fused: &Fused, shape_name: &Ident, pump: bool) -> TokenStream {
    let p = private();
    let pump = pump.then(|| quote!(__prefetch.pump(__len);));
    let body = &fused.body;
    let last = fused.shape.len() - 1;
    let mut outer = vec![(quote!((0..__outer)), quote!(__row))];
    let mut chunk = vec![(
        quote!((0..__inner).step_by(#p::host::STORE_CHUNK)),
        quote!(__col),
    )];
    let mut inner = vec![(quote!(__dst.iter_mut()), quote!(__acc))];
    for leaf in &fused.leaves {
        let (t, v) = (&leaf.tile, &leaf.value);
        let part = format_ident!("__chunk_{}", t);
        match leaf.stretch {
            Stretch::Whole => {
                let row = format_ident!("__row_{}", t);
                outer.push((quote!(#t.as_slice().chunks_exact(__inner)), quote!(#row)));
                chunk.push((quote!(#row.chunks(#p::host::STORE_CHUNK)), quote!(#part)));
                inner.push((quote!(#part.iter()), quote!(&#v)));
            }
            Stretch::PerRow => outer.push((quote!(#t.as_slice().iter()), quote!(&#v))),
            Stretch::PerColumn => {
                chunk.push((
                    quote!(#t.as_slice().chunks(#p::host::STORE_CHUNK)),
                    quote!(#part),
                ));
                inner.push((quote!(#part.iter()), quote!(&#v)));
            }
        }
    }
    let zip = |pairs: Vec<(TokenStream, TokenStream)>| {
        let mut pairs = pairs.into_iter();
        let (mut iter, mut pattern) = pairs.next().unwrap_or((quote!(()), quote!(_)));
        for (i, v) in pairs {
            iter = quote!(#iter.zip(#i));
            pattern = quote!((#pattern, #v));
        }
        (iter, pattern)
    };
    let (outer_iter, outer_pattern) = zip(outer);
    let (chunk_iter, chunk_pattern) = zip(chunk);
    let (inner_iter, inner_pattern) = zip(inner);
    quote!(
        let __inner: usize = #shape_name[#last];
        let __outer: usize = #shape_name[..#last].iter().product();
        if __inner > 0 {
            for #outer_pattern in #outer_iter {
                for #chunk_pattern in #chunk_iter {
                    let __len = (__inner - __col).min(#p::host::STORE_CHUNK);
                    let __at = __row * __inner + __col;
                    let __dst = __sink.chunk(__at, __len);
                    for #inner_pattern in #inner_iter {
                        __acc.write(#body);
                    }
                    // SAFETY: the zip above ran the chunk's full length.
                    unsafe { __sink.commit(__at, __len) };
                    #pump
                }
            }
        }
    )
}
