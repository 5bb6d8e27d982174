//! Elementwise fusion: a tree of elementwise nodes of one shape (operators,
//! casts, `exp`, `where`, ...) becomes one loop over its leaves, with no
//! tile in between (`a * b + c` reads `a`, `b`, `c` once each and writes
//! one tile). Leaves are the nodes that are not elementwise: scalars
//! (evaluated once, before the loop), and tiles (loads, locals,
//! contractions, reductions, ...); a leaf of a smaller shape (operators
//! broadcast implicitly) is stretched to the tree's shape before the loop.
//!
//! The loop body is the scalar code of the tree (`Generator::scalar`) with
//! every leaf replaced by a name, so a fused tile op computes exactly what
//! the unfused ops computed, element by element: fusion changes no result.
//! Leaves are evaluated in the tree's left-to-right order, as the unfused
//! code evaluated them.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

use super::expr::private;
use super::names;
use super::{GenError, Generator};
use crate::ir::{Builtin, Expr, ExprKind};

/// Whether a node computes each element from the same element of its
/// operands (all of the node's shape, broadcasts being explicit nodes).
pub fn is_elementwise(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Unary { .. } | ExprKind::Binary { .. } | ExprKind::Cast(_) => true,
        ExprKind::Call { func, .. } => {
            func.is_float_unary()
                || matches!(
                    func,
                    Builtin::Abs | Builtin::Min | Builtin::Max | Builtin::Where | Builtin::Cdiv
                )
        }
        _ => false,
    }
}

/// The parts of one fused loop.
pub struct Fused {
    /// `let`s of the leaves, in evaluation order.
    pub prelude: TokenStream,
    /// The tile leaves: `&Tile<_>` names, each of the tree's shape.
    pub tiles: Vec<Ident>,
    /// The per-element value names bound to `tiles` in the loop.
    pub values: Vec<Ident>,
    /// The element expression (over `values` and the scalar leaves).
    pub body: TokenStream,
    /// The tree's shape as `usize` expressions.
    pub shape: Vec<TokenStream>,
}

impl Fused {
    /// `a.iter().zip(b).zip(c)`: the leaves' elements in lockstep, and the
    /// matching closure pattern `((&va, &vb), &vc)`. `first` (an iterator
    /// and a pattern) goes in front when given, for in-place updates.
    pub fn zipped(&self, first: Option<(TokenStream, TokenStream)>) -> (TokenStream, TokenStream) {
        let mut tiles = self.tiles.iter();
        let mut values = self.values.iter();
        let (mut iter, mut pattern) = match first {
            Some(pair) => pair,
            None => match (tiles.next(), values.next()) {
                (Some(t), Some(v)) => (quote!(#t.as_slice().iter()), quote!(&#v)),
                _ => (quote!(::core::iter::empty()), quote!(_)),
            },
        };
        for (t, v) in tiles.zip(values) {
            iter = quote!(#iter.zip(#t.as_slice()));
            pattern = quote!((#pattern, &#v));
        }
        (iter, pattern)
    }

    /// `expect_shape` for every tile leaf: the IR gives them the tree's
    /// shape, so this never fails on checked kernels.
    pub fn shape_checks(&self, shape: &Ident) -> TokenStream {
        let p = private();
        let tiles = &self.tiles;
        quote!(#(#p::host::expect_shape(#tiles, &#shape)?;)*)
    }
}

impl Generator<'_> {
    /// Splits the elementwise tree at `root` into leaves and a loop body.
    pub fn fuse(&self, root: &Expr) -> Result<Fused, GenError> {
        let mut fused = Fused {
            prelude: TokenStream::new(),
            tiles: Vec::new(),
            values: Vec::new(),
            body: TokenStream::new(),
            shape: self.shape(&root.shape.0),
        };
        let mut overrides = Vec::new();
        self.collect_leaves(root, root, &mut fused, &mut overrides)?;
        let saved = self.overrides.borrow().len();
        self.overrides.borrow_mut().extend(overrides);
        let body = self.scalar(root);
        self.overrides.borrow_mut().truncate(saved);
        fused.body = body?;
        Ok(fused)
    }

    fn collect_leaves(
        &self,
        root: &Expr,
        e: &Expr,
        fused: &mut Fused,
        overrides: &mut Vec<(*const Expr, TokenStream)>,
    ) -> Result<(), GenError> {
        let p = private();
        let scalar_leaf =
            e.is_scalar() || matches!(&e.kind, ExprKind::Broadcast(arg) if arg.is_scalar());
        if scalar_leaf {
            let name = format_ident!("__s{}", self.next_fused_id());
            let ty = names::rust_type(self.dtype_of(e)?);
            let value = self.scalar(e)?;
            fused.prelude.extend(quote!(let #name: #ty = #value;));
            overrides.push((e as *const Expr, quote!(#name)));
            return Ok(());
        }
        if is_elementwise(e) && e.shape == root.shape {
            return match &e.kind {
                ExprKind::Unary { arg, .. } | ExprKind::Cast(arg) => {
                    self.collect_leaves(root, arg, fused, overrides)
                }
                ExprKind::Binary { lhs, rhs, .. } => {
                    self.collect_leaves(root, lhs, fused, overrides)?;
                    self.collect_leaves(root, rhs, fused, overrides)
                }
                ExprKind::Call { args, .. } => args
                    .iter()
                    .try_for_each(|a| self.collect_leaves(root, a, fused, overrides)),
                _ => Ok(()),
            };
        }
        let id = self.next_fused_id();
        let tile = format_ident!("__t{}", id);
        let value = format_ident!("__v{}", id);
        let ty = names::rust_type(self.dtype_of(e)?);
        let mut tile_ref = self.tile_ref(e)?;
        if e.shape != root.shape {
            // Operators broadcast implicitly (NumPy rules): stretch the
            // leaf to the tree's shape once, before the loop.
            let shape = &fused.shape;
            tile_ref = quote!(&(#p::host::broadcast_to(#tile_ref, &[#(#shape),*])?));
        }
        fused
            .prelude
            .extend(quote!(let #tile: &#p::host::Tile<#ty> = #tile_ref;));
        overrides.push((e as *const Expr, quote!(#value)));
        fused.tiles.push(tile);
        fused.values.push(value);
        Ok(())
    }

    /// A fused elementwise tree as an owned tile.
    pub fn fused_tile(&self, root: &Expr) -> Result<TokenStream, GenError> {
        let p = private();
        let fused = self.fuse(root)?;
        let ty = names::rust_type(self.dtype_of(root)?);
        let Fused {
            prelude,
            body,
            shape,
            ..
        } = &fused;
        let shape_name = Ident::new("__shape", Span::call_site());
        if fused.tiles.is_empty() {
            return Ok(quote!({
                #prelude
                #p::host::full(&[#(#shape),*], #body)?
            }));
        }
        let checks = fused.shape_checks(&shape_name);
        let (iter, pattern) = fused.zipped(None);
        Ok(quote!({
            #prelude
            let #shape_name = [#(#shape),*];
            #checks
            let __data: ::std::vec::Vec<#ty> = #iter.map(|#pattern| -> #ty { #body }).collect();
            #p::host::Tile::from_vec(&#shape_name, __data)?
        }))
    }
}
