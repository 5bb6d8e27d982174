//! Loads that read the tensor in place. A tile load that is a leaf of a
//! fused elementwise loop, or the value of an immutable `let`, goes
//! through `host::load_in_place`, which gives a `host::LoadedTile`: the
//! tensor's own memory when the tile is one contiguous unmasked block of a
//! tensor the launch reads with plain loads (a `PlainRead` parameter that
//! no written parameter aliases), else the copy `host::load` makes. Fused
//! loops read either through `as_slice`; any other use of such a local
//! (an op of the tile library, which takes a `&Tile`) goes through
//! `LoadedTile::tile`, which copies a borrowed block once. Reading memory
//! in place or from a copy of it gives the same bits, so no result changes.
//!
//! A named load is bound where the call leaves it and read by reference
//! (`let l = match r { Ok(ref t) => t, .. }`), never moved out of its
//! `Result` with `?`: a `LoadedTile` is ~120 bytes, and each move copied it
//! with vector loads over the narrower stores that had just built it, a
//! store-forwarding stall per move. Those stalls were most of a row
//! kernel's per-block cost (rmsnorm with 64-column blocks ran 1.5x faster
//! without them, with 1,024-column blocks 1.1-1.2x; one thread, Zen 4).

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::expr::private;
use super::fuse::{is_elementwise, stretch_of};
use super::names;
use super::{GenError, Generator};
use crate::ir::{Block, Builtin, Expr, ExprKind, LocalId, visit};

/// Whether every read of `local` in `body` reads it where a `LoadedTile`
/// is read without a copy: as a leaf of a fused elementwise loop that
/// reads it whole, per row or per column, or as the operand of a
/// reduction. Any other use (a contraction, a store of the bare local, a
/// slice of it, ...) would copy it for each use, so such a `let` keeps its
/// copying load and owned `Tile`.
fn read_only_in_place(body: &Block, local: LocalId) -> bool {
    let is_local = |e: &Expr| matches!(e.kind, ExprKind::Local(id) if id == local);
    let mut only_in_place = true;
    visit::stmts(body, &mut |stmt| {
        if visit::stmt_exprs(&stmt.kind).into_iter().any(is_local) {
            only_in_place = false;
        }
    });
    visit::exprs(body, &mut |parent| {
        for child in visit::children(parent) {
            if is_local(child) && !reads_in_place(parent, child) {
                only_in_place = false;
            }
        }
    });
    only_in_place
}

/// Whether `parent` reads its operand `child` without needing a `&Tile`.
fn reads_in_place(parent: &Expr, child: &Expr) -> bool {
    match &parent.kind {
        ExprKind::Call {
            func:
                Builtin::RowSum
                | Builtin::RowMax
                | Builtin::RowMin
                | Builtin::ReduceSum
                | Builtin::ReduceMax
                | Builtin::ReduceMin,
            ..
        } => true,
        // Elementwise tile nodes are fused (`fuse`): the root, and every
        // elementwise node of the root's shape below it, reads an operand
        // in place when it lines up whole, per row or per column.
        _ if is_elementwise(parent) && !parent.is_scalar() => {
            stretch_of(&child.shape.0, &parent.shape.0).is_some()
        }
        _ => false,
    }
}

impl Generator<'_> {
    /// `host::load_in_place(..)` (a `Result<LoadedTile>`) when `e` loads a
    /// tile of a tensor with a scalar element type; `None` for anything
    /// else.
    pub fn in_place_load(&self, e: &Expr) -> Result<Option<TokenStream>, GenError> {
        let ExprKind::Load {
            tensor,
            index,
            other,
        } = &e.kind
        else {
            return Ok(None);
        };
        if e.is_scalar() || e.elem.is_quant() {
            return Ok(None);
        }
        let p = private();
        let dtype = self.dtype_of(e)?;
        let view = names::param(tensor);
        let slices = self.slices(index)?;
        let other = match other.as_deref() {
            Some(o) => self.scalar(o)?,
            None => {
                let ty = names::rust_type(dtype);
                quote!(<#ty as #p::Element>::ZERO)
            }
        };
        Ok(Some(
            quote!(#p::host::load_in_place(&#view, &[#(#slices),*], #other)),
        ))
    }

    /// `let name: &LoadedTile = ..;` for the in-place load `e`: the
    /// `Result` stays where the call wrote it and `name` borrows its tile
    /// (see the module doc); an error returns as `?` would.
    pub fn bind_in_place_load(
        &self,
        name: &Ident,
        e: &Expr,
    ) -> Result<Option<TokenStream>, GenError> {
        let Some(load) = self.in_place_load(e)? else {
            return Ok(None);
        };
        let p = private();
        let ty = names::rust_type(self.dtype_of(e)?);
        // `__` first: generated locals are `l_<name>`, so no kernel local
        // can be shadowed by (or shadow) this one.
        let result = format_ident!("__loaded_{}", name);
        Ok(Some(quote! {
            let #result = #load;
            let #name: &#p::host::LoadedTile<'_, #ty> = match #result {
                ::core::result::Result::Ok(ref tile) => tile,
                ::core::result::Result::Err(error) => {
                    return ::core::result::Result::Err(::core::convert::From::from(error));
                }
            };
        }))
    }

    /// The name of the local `e` reads when that local holds a
    /// `&LoadedTile`.
    pub fn in_place_local(&self, e: &Expr) -> Result<Option<Ident>, GenError> {
        let ExprKind::Local(id) = e.kind else {
            return Ok(None);
        };
        if !self.in_place_locals.borrow().contains(&id) {
            return Ok(None);
        }
        Ok(Some(names::local(&self.local(id, e)?.name)))
    }

    /// A `&LoadedTile` for a leaf of a fused loop that can be read in
    /// place (a tile load, or a local holding one), with its type.
    pub fn in_place_leaf(&self, e: &Expr) -> Result<Option<(TokenStream, TokenStream)>, GenError> {
        let p = private();
        let reference = match self.in_place_local(e)? {
            Some(name) => quote!(#name),
            None => match self.in_place_load(e)? {
                Some(load) => quote!(&(#load?)),
                None => return Ok(None),
            },
        };
        let ty = names::rust_type(self.dtype_of(e)?);
        Ok(Some((reference, quote!(&#p::host::LoadedTile<'_, #ty>))))
    }

    /// The operand of an op that reads any `host::TileData` (the
    /// reductions): a load, or a local holding one, is read in place.
    pub fn data_ref(&self, e: &Expr) -> Result<TokenStream, GenError> {
        match self.in_place_leaf(e)? {
            Some((reference, _)) => Ok(reference),
            None => self.tile_ref(e),
        }
    }

    /// `let name: &LoadedTile = ..;` for an immutable `let` of a tile load
    /// ([`Generator::bind_in_place_load`]), recording the local as holding
    /// one.
    pub fn in_place_let(
        &self,
        local: LocalId,
        mutable: bool,
        value: &Expr,
    ) -> Result<Option<TokenStream>, GenError> {
        if mutable || !read_only_in_place(&self.kernel.body, local) {
            return Ok(None);
        }
        let name = names::local(&self.local(local, value)?.name);
        let Some(binding) = self.bind_in_place_load(&name, value)? else {
            return Ok(None);
        };
        self.in_place_locals.borrow_mut().push(local);
        Ok(Some(binding))
    }
}

#[cfg(test)]
mod tests {
    use crate::back::host::generate;
    use crate::{Source, check_source};

    fn generated(text: &str) -> String {
        let module = check_source(&Source::file("test.ph", text)).expect("test kernels are valid");
        generate(&module, text)
            .expect("the host back end generates test kernels")
            .to_string()
    }

    const RMSNORM: &str = "@autotune(BLOCK_C in [64, 1024])
@grid(R)
kernel rmsnorm(X: tensor<f32>[R, C], W: tensor<f32>[C], Y: tensor<f32>[R, C], eps: f32) {
  let r = program_id(0)
  var sq: tile<f32>[BLOCK_C] = 0.0
  for c in range(0, C, BLOCK_C) {
    let x = X[r, c :+ BLOCK_C]
    sq += x * x
  }
  let rstd = rsqrt(sum(sq) / f32(C) + eps)
  for c in range(0, C, BLOCK_C) {
    Y[r, c :+ BLOCK_C] = X[r, c :+ BLOCK_C] * rstd * W[c :+ BLOCK_C]
  }
}";

    #[test]
    fn fused_leaves_and_let_loads_read_in_place() {
        let out = generated(RMSNORM);
        // The load's `Result` stays where the call wrote it; the local
        // borrows the tile inside it (no move out with `?`).
        assert!(
            out.contains(
                "let __loaded_l_x = :: phobos :: __private :: host :: load_in_place (& p_X"
            ),
            "{out}"
        );
        assert!(
            out.contains("let l_x : & :: phobos :: __private :: host :: LoadedTile < '_ , f32 > = match __loaded_l_x { :: core :: result :: Result :: Ok (ref tile) => tile ,"),
            "{out}"
        );
        // `x * x` reads the local's LoadedTile twice, never a copy of it.
        assert!(!out.contains("l_x . tile ()"), "{out}");
        assert!(
            out.contains("& :: phobos :: __private :: host :: LoadedTile < '_ , f32 > = l_x ;"),
            "{out}"
        );
        // The store's operands are loads read in place inside the loop,
        // bound the same way.
        assert!(
            out.contains("let __loaded___t")
                && out.contains(" = :: phobos :: __private :: host :: load_in_place (& p_W"),
            "{out}"
        );
        assert!(
            !out.contains("& (:: phobos :: __private :: host :: load_in_place"),
            "no load is moved out of its Result: {out}"
        );
        assert!(
            !out.contains("host :: load (& p_"),
            "no copying load is left: {out}"
        );
    }

    #[test]
    fn a_load_added_into_an_accumulator_is_one_fused_loop() {
        let text = "@grid(R)
kernel rowsums(X: tensor<f32>[R, 64], Y: tensor<f32>[R]) {
  let r = program_id(0)
  var total: tile<f32>[16] = 0.0
  for c in range(0, 64, 16) {
    total += X[r, c :+ 16]
  }
  Y[r] = sum(total)
}";
        let out = generated(text);
        assert!(out.contains("host :: load_in_place (& p_X"), "{out}");
        assert!(!out.contains("add_assign"), "{out}");
    }

    #[test]
    fn reductions_and_fused_loops_read_a_let_load_in_place() {
        let text = "@grid(R)
kernel rows(X: tensor<f32>[R, 8], Y: tensor<f32>[R, 8]) {
  let r = program_id(0)
  let x = X[r :+ 1, :]
  let m = rowmax(x)
  Y[r :+ 1, :] = exp(x - m) / rowsum(x)
}";
        let out = generated(text);
        assert!(
            out.contains(
                "let __loaded_l_x = :: phobos :: __private :: host :: load_in_place (& p_X"
            ),
            "{out}"
        );
        assert!(out.contains("host :: rowmax (l_x)"), "{out}");
        assert!(out.contains("host :: rowsum (l_x)"), "{out}");
        assert!(!out.contains("l_x . tile ()"), "{out}");
    }

    #[test]
    fn a_let_load_another_op_reads_as_a_tile_keeps_the_copying_load() {
        // `dot` takes `&Tile`s: a borrowed block would be copied for it,
        // so the local stays the copying load's owned tile.
        let text = "@grid(R)
kernel rows(X: tensor<f32>[R, 8], A: tensor<f32>[8, 8], Y: tensor<f32>[R, 8], Z: tensor<f32>[R, 8]) {
  let r = program_id(0)
  let x = X[r :+ 1, :]
  Y[r :+ 1, :] = x * 2.0
  Z[r :+ 1, :] = dot(x, A[:, :])
}";
        let out = generated(text);
        assert!(
            out.contains("let l_x : :: phobos :: __private :: host :: Tile < f32 > = :: phobos :: __private :: host :: load (& p_X"),
            "{out}"
        );
        assert!(
            out.contains("host :: dot (& l_x , & (:: phobos :: __private :: host :: load (& p_A"),
            "{out}"
        );
    }

    #[test]
    fn mutable_locals_atomics_and_quantized_loads_keep_the_copying_path() {
        let text = "@grid(R)
kernel keep(X: tensor<f32>[R, 8], Y: tensor<f32>[R, 8], S: tensor<f32>[8]) {
  let r = program_id(0)
  var x = X[r, :]
  x += 1.0
  Y[r, :] = x
  atomic_add(S[:], X[r, :])
  Y[r, :] += X[r, :]
}";
        let out = generated(text);
        assert!(
            out.contains("let mut l_x : :: phobos :: __private :: host :: Tile < f32 > = :: phobos :: __private :: host :: load (& p_X"),
            "{out}"
        );
        assert!(out.contains("host :: atomic_add (& p_S , & [:: phobos :: __private :: host :: Slice :: Full] , & (:: phobos :: __private :: host :: load (& p_X"), "{out}");
        // `Y += ..` reads Y back through its write view: `load_in_place`
        // copies there (a written tensor is never read plainly).
        assert!(out.contains("load_in_place (& p_Y"), "{out}");
    }
}
