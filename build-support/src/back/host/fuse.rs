//! Elementwise fusion: a tree of elementwise nodes of one shape (operators,
//! casts, `exp`, `where`, ...) becomes one loop over its leaves, with no
//! tile in between (`a * b + c` reads `a`, `b`, `c` once each and writes
//! one tile). Leaves are the nodes that are not elementwise: scalars
//! (evaluated once, before the loop), and tiles (loads, locals,
//! contractions, reductions, ...). A leaf of a smaller shape (operators
//! broadcast implicitly) that holds one value per row (`[.., 1]`, a
//! `rowmax`) or one row for every row (`[C]`) is read in place by a
//! row-by-row loop ([`Stretch`]); any other is stretched to the tree's
//! shape once, before the loop. The result goes into reused storage
//! (`TileSlots` takes it from the thread's free list), not a fresh
//! allocation, and is written once, not filled first; every loop is a
//! `for` loop in the generated body (see `fused_tile` for why no closure
//! goes to an iterator adaptor).
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
use crate::ir::{Builtin, Expr, ExprKind, Shape, ShapeExpr};

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

/// How a tile leaf lines up with the tree's shape `[.., C]` (the last dim
/// is the row).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stretch {
    /// The leaf has the tree's shape.
    Whole,
    /// `[.., 1]` with the tree's leading dims: one value per row, read
    /// once per row instead of stretched into a tile.
    PerRow,
    /// `[C]` (leading dims absent or 1): the same row for every row.
    PerColumn,
}

/// One tile leaf of a fused loop.
pub struct Leaf {
    /// The `&Tile<_>` name.
    pub tile: Ident,
    /// The per-element value name in the loop body.
    pub value: Ident,
    pub stretch: Stretch,
    /// The leaf's own shape as `usize` expressions (checked before the loop).
    pub shape: Vec<TokenStream>,
}

/// The parts of one fused loop.
pub struct Fused {
    /// `let`s of the leaves, in evaluation order.
    pub prelude: TokenStream,
    /// The tile leaves.
    pub leaves: Vec<Leaf>,
    /// The element expression (over the leaves' values and the scalars).
    pub body: TokenStream,
    /// The tree's shape as `usize` expressions.
    pub shape: Vec<TokenStream>,
}

impl Fused {
    /// Whether some leaf is read per row or per column, which takes the
    /// row-by-row loop ([`Fused::rows`]) instead of one flat zip.
    pub fn stretched(&self) -> bool {
        self.leaves.iter().any(|l| l.stretch != Stretch::Whole)
    }

    /// `a.iter().zip(b).zip(c)`: the leaves' elements in lockstep, and the
    /// matching closure pattern `((&va, &vb), &vc)`. `first` (an iterator
    /// and a pattern) goes in front when given, for in-place updates.
    /// Only for trees without stretched leaves.
    pub fn zipped(&self, first: Option<(TokenStream, TokenStream)>) -> (TokenStream, TokenStream) {
        zip_all(
            first,
            self.leaves.iter().map(|leaf| {
                let (t, v) = (&leaf.tile, &leaf.value);
                (quote!(#t.as_slice().iter()), quote!(&#v))
            }),
            quote!(::core::iter::empty()),
        )
    }

    /// The row-by-row loop of a tree with stretched leaves: for each row
    /// (`__outer` of them, `__inner` elements each), whole leaves give
    /// their row, per-row leaves their one value, per-column leaves their
    /// whole tile; `each_row(inner_iter, inner_pattern)` is the statement
    /// run per row. `target` is the written elements as a `&mut [_]`
    /// expression (an in-place target tile's, or a new tile's slots), if
    /// any, whose row comes first in the inner iterator as `__acc`.
    /// With `pump` (the kernel prefetches: `Generator::prefetches`), each
    /// row runs in chunks of `STORE_CHUNK`, pumping the program's
    /// `__prefetch` queue per chunk.
    pub fn rows(
        &self,
        shape_name: &Ident,
        target: Option<TokenStream>,
        pump: bool,
        each_row: impl FnOnce(TokenStream, TokenStream) -> TokenStream,
    ) -> TokenStream {
        let rank = self.shape.len();
        let last = rank.saturating_sub(1);
        let mut outer = vec![(quote!((0..__outer)), quote!(_))];
        // The row's operands: a slice, whether it is written, a pattern.
        let mut inner = Vec::new();
        if let Some(target) = target {
            outer.push((quote!(#target.chunks_exact_mut(__inner)), quote!(__acc_row)));
            inner.push((quote!(__acc_row), true, quote!(__acc)));
        }
        for leaf in &self.leaves {
            let (t, v) = (&leaf.tile, &leaf.value);
            match leaf.stretch {
                Stretch::Whole => {
                    let row = format_ident!("__row_{}", t);
                    outer.push((quote!(#t.as_slice().chunks_exact(__inner)), quote!(#row)));
                    inner.push((quote!(#row), false, quote!(&#v)));
                }
                Stretch::PerRow => outer.push((quote!(#t.as_slice().iter()), quote!(&#v))),
                Stretch::PerColumn => inner.push((quote!(#t.as_slice()), false, quote!(&#v))),
            }
        }
        let mut outer = outer.into_iter();
        let (outer_iter, outer_pattern) = zip_all(outer.next(), outer, quote!(0..__outer));
        let range = pump.then(|| quote!([__at..__end]));
        let inner_iters = inner.into_iter().map(|(slice, written, pattern)| {
            let iter = if written {
                quote!(iter_mut)
            } else {
                quote!(iter)
            };
            (quote!(#slice #range.#iter()), pattern)
        });
        let all = if pump {
            quote!((__at..__end))
        } else {
            quote!((0..__inner))
        };
        let (inner_iter, inner_pattern) = zip_all(None, inner_iters, all);
        let mut per_row = each_row(inner_iter, inner_pattern);
        if pump {
            let p = private();
            per_row = quote!(
                let mut __at: usize = 0;
                while __at < __inner {
                    let __end = (__at + #p::host::STORE_CHUNK).min(__inner);
                    __prefetch.pump(__end - __at);
                    #per_row
                    __at = __end;
                }
            );
        }
        quote!(
            let __inner: usize = #shape_name[#last];
            let __outer: usize = #shape_name[..#last].iter().product();
            if __inner > 0 {
                for #outer_pattern in #outer_iter {
                    #per_row
                }
            }
        )
    }

    /// The loop that writes the tree's elements into the `TileSlots`
    /// named `out` (of `shape_name`'s shape).
    /// With `pump`, the loop runs row by row in chunks (see [`Fused::rows`]).
    pub fn fill_slots(&self, shape_name: &Ident, out: &Ident, pump: bool) -> TokenStream {
        let body = &self.body;
        // The loops are plain `for` loops over zipped slices writing into
        // the result, never closures handed to an iterator adaptor: code
        // generated inside a `#[target_feature]` body compiles for that
        // level only where it stays in the body, and a closure called from
        // `Iterator::fold` (compiled without the features) is a call per
        // element instead of a vectorized loop. The result is written into
        // uninitialized slots (`TileSlots`), not over a tile first filled
        // with zeros: that fill was one more pass over every fused tile.
        if self.stretched() || pump {
            self.rows(
                shape_name,
                Some(quote!(#out.slots())),
                pump,
                |iter, pattern| quote!(for #pattern in #iter { __acc.write(#body); }),
            )
        } else {
            let (iter, pattern) =
                self.zipped(Some((quote!(#out.slots().iter_mut()), quote!(__acc))));
            quote!(for #pattern in #iter { __acc.write(#body); })
        }
    }

    /// `expect_shape` for every tile leaf: the IR gives them these shapes,
    /// so this never fails on checked kernels.
    pub fn shape_checks(&self, shape: &Ident) -> TokenStream {
        let p = private();
        let checks = self.leaves.iter().map(|leaf| {
            let tile = &leaf.tile;
            if leaf.stretch == Stretch::Whole {
                quote!(#p::host::expect_shape(#tile, &#shape)?;)
            } else {
                let own = &leaf.shape;
                quote!(#p::host::expect_shape(#tile, &[#(#own),*])?;)
            }
        });
        quote!(#(#checks)*)
    }
}

/// Zips `(iterator, pattern)` pairs in order, after `first` when given;
/// with none at all, `empty` and the pattern `_`.
fn zip_all(
    first: Option<(TokenStream, TokenStream)>,
    mut rest: impl Iterator<Item = (TokenStream, TokenStream)>,
    empty: TokenStream,
) -> (TokenStream, TokenStream) {
    let (mut iter, mut pattern) = match first.or_else(|| rest.next()) {
        Some(pair) => pair,
        None => (empty, quote!(_)),
    };
    for (i, v) in rest {
        iter = quote!(#iter.zip(#i));
        pattern = quote!((#pattern, #v));
    }
    (iter, pattern)
}

/// How a leaf of shape `leaf` is read in a loop over `root`, when it can be
/// read without stretching it into a tile first.
pub fn stretch_of(leaf: &[ShapeExpr], root: &[ShapeExpr]) -> Option<Stretch> {
    let one = ShapeExpr::Lit(1);
    let (root_last, root_outer) = root.split_last()?;
    let (leaf_last, leaf_outer) = leaf.split_last()?;
    if leaf == root {
        return Some(Stretch::Whole);
    }
    if *leaf_last == one && leaf_outer == root_outer {
        return Some(Stretch::PerRow);
    }
    if leaf_last == root_last && leaf_outer.iter().all(|d| *d == one) && leaf.len() <= root.len() {
        return Some(Stretch::PerColumn);
    }
    None
}

impl Generator<'_> {
    /// Splits the elementwise tree at `root` into leaves and a loop body.
    pub fn fuse(&self, root: &Expr) -> Result<Fused, GenError> {
        self.fuse_as(root, &root.shape)
    }

    /// [`Generator::fuse`] for a loop over `shape`, which `root`'s own
    /// shape lines up with whole, per row or per column: an in-place
    /// update reads a `[.., 1]` operand once per row of its target.
    pub fn fuse_as(&self, root: &Expr, shape: &Shape) -> Result<Fused, GenError> {
        let mut fused = Fused {
            prelude: TokenStream::new(),
            leaves: Vec::new(),
            body: TokenStream::new(),
            shape: self.shape(&shape.0),
        };
        let mut overrides = Vec::new();
        self.collect_leaves(shape, root, &mut fused, &mut overrides)?;
        let saved = self.overrides.borrow().len();
        self.overrides.borrow_mut().extend(overrides);
        let body = self.scalar(root);
        self.overrides.borrow_mut().truncate(saved);
        fused.body = body?;
        Ok(fused)
    }

    fn collect_leaves(
        &self,
        root: &Shape,
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
        if is_elementwise(e) && e.shape == *root {
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
        let stretch = stretch_of(&e.shape.0, &root.0);
        // A load read in place is bound by reference, not moved out of
        // its `Result` (see in_place.rs).
        let bound_in_place = match stretch {
            Some(stretch) if self.in_place_local(e)?.is_none() => self
                .bind_in_place_load(&tile, e)?
                .map(|binding| (binding, stretch)),
            _ => None,
        };
        let (binding, stretch) = match bound_in_place {
            Some(bound) => bound,
            None => {
                // A local holding an in-place load: the loop reads a
                // `LoadedTile` the same way as a `Tile`.
                let in_place = match stretch {
                    Some(_) => self.in_place_leaf(e)?,
                    None => None,
                };
                let (mut tile_ref, tile_type) = match in_place {
                    Some(leaf) => leaf,
                    None => (self.tile_ref(e)?, quote!(&#p::host::Tile<#ty>)),
                };
                let stretch = match stretch {
                    Some(stretch) => stretch,
                    None => {
                        // Operators broadcast implicitly (NumPy rules): a
                        // leaf that is neither per row nor per column is
                        // stretched to the tree's shape once, before the
                        // loop.
                        let shape = &fused.shape;
                        tile_ref = quote!(&(#p::host::broadcast_to(#tile_ref, &[#(#shape),*])?));
                        Stretch::Whole
                    }
                };
                (quote!(let #tile: #tile_type = #tile_ref;), stretch)
            }
        };
        let shape = if stretch == Stretch::Whole {
            fused.shape.clone()
        } else {
            self.shape(&e.shape.0)
        };
        fused.prelude.extend(binding);
        overrides.push((e as *const Expr, quote!(#value)));
        fused.leaves.push(Leaf {
            tile,
            value,
            stretch,
            shape,
        });
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
        if fused.leaves.is_empty() {
            return Ok(quote!({
                #prelude
                #p::host::full(&[#(#shape),*], #body)?
            }));
        }
        let checks = fused.shape_checks(&shape_name);
        let out = Ident::new("__out", Span::call_site());
        let fill = fused.fill_slots(&shape_name, &out, self.prefetches);
        // The loop writes every slot: the row-by-row form zips the slots'
        // `__outer` rows of `__inner` with every leaf's rows, values or
        // columns, whose shapes `checks` has just matched to `__shape`
        // (and with `__inner == 0` there is no slot); the flat form zips
        // all the slots with whole leaves of `__shape`.
        Ok(quote!({
            #prelude
            let #shape_name = [#(#shape),*];
            #checks
            let mut #out = #p::host::TileSlots::<#ty>::new(&#shape_name)?;
            #fill
            // SAFETY: the loop above wrote every slot (see the generator).
            unsafe { #out.assume_init() }
        }))
    }
}
