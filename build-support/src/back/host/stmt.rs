//! Statements of one program. Compound updates of a tile `var`
//! (`acc += dot(a, b)`, `acc = acc * x`) are done in place, so the hot loop
//! of a contraction allocates nothing.

use proc_macro2::TokenStream;
use quote::quote;

use super::expr::private;
use super::names;
use super::{GenError, Generator};
use crate::ir::{BinOp, Builtin, Expr, ExprKind, LocalId, Shape, Slice, Stmt, StmtKind, StoreOp};

impl Generator<'_> {
    pub fn block(&self, stmts: &[Stmt]) -> Result<TokenStream, GenError> {
        let stmts = stmts
            .iter()
            .map(|s| self.stmt(s))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(quote!(#(#stmts)*))
    }

    fn stmt(&self, stmt: &Stmt) -> Result<TokenStream, GenError> {
        let p = private();
        Ok(match &stmt.kind {
            StmtKind::Let { local, value } => {
                let decl = self.local_by_id(*local, stmt)?;
                if let Some(binding) = self.in_place_let(*local, decl.mutable, value)? {
                    return Ok(binding);
                }
                let name = names::local(&decl.name);
                let ty = self.value_type(value)?;
                let value = self.expr(value)?;
                if decl.mutable {
                    quote!(let mut #name: #ty = #value;)
                } else {
                    quote!(let #name: #ty = #value;)
                }
            }
            StmtKind::Assign { local, value } => self.assign(*local, value, stmt)?,
            StmtKind::Store {
                tensor,
                index,
                op,
                value,
            } if self.is_quant_tensor(tensor) => self.quant_store(tensor, index, value)?,
            StmtKind::Store {
                tensor,
                index,
                op,
                value,
            } => {
                let view = names::param(tensor);
                let slices = self.slices(index)?;
                // A whole tree stored as it is computed (`fused_store`).
                if *op == StoreOp::Assign
                    && !value.is_scalar()
                    && super::fuse::is_elementwise(value)
                    && let Some(store) = self.fused_store(&view, &slices, value)?
                {
                    return Ok(store);
                }
                let stored = match op {
                    StoreOp::Assign => self.expr(value)?,
                    _ => self.read_modify(tensor, index, *op, value)?,
                };
                if value.is_scalar() {
                    quote!(#p::host::store_scalar(&#view, &[#(#slices),*], #stored)?;)
                } else {
                    quote!(#p::host::store(&#view, &[#(#slices),*], &(#stored))?;)
                }
            }
            StmtKind::AtomicAdd {
                tensor,
                index,
                value,
            } => {
                let view = names::param(tensor);
                let slices = self.slices(index)?;
                if value.is_scalar() {
                    let value = self.expr(value)?;
                    quote!(#p::host::atomic_add_scalar(&#view, &[#(#slices),*], #value)?;)
                } else {
                    let value = self.tile_ref(value)?;
                    quote!(#p::host::atomic_add(&#view, &[#(#slices),*], #value)?;)
                }
            }
            StmtKind::Prefetch { tensor, index } => {
                let view = names::param(tensor);
                let slices = self.slices(index)?;
                quote!(__prefetch.push(&#view, &[#(#slices),*]);)
            }
            StmtKind::For {
                var,
                start,
                end,
                step,
                body,
            } => {
                let var_name = &self.local_by_id(*var, stmt)?.name;
                let name = names::local(var_name);
                let kernel_name = &self.kernel.name;
                let (start, end, step) = (self.expr(start)?, self.expr(end)?, self.expr(step)?);
                let whole = self.k_loop_call(*var, body)?;
                let body = self.block(body)?;
                // A contraction loop first tries to run whole (`k_loop`);
                // it needs an iteration, as the loop evaluates its slices
                // only inside one.
                let first = match whole {
                    None => quote!(let mut __next = #start;),
                    Some(call) => quote!(
                        let mut __next = #start;
                        if __step > 0 && __next < __end && {
                            let #name = __next;
                            #call
                        } {
                            __next = __end;
                        }
                    ),
                };
                // A zero step is an error, as the GPU back end traps on it
                // (SPEC.md §9). Overflowing the counter ends the loop.
                quote!({
                    let (__end, __step) = (#end, #step);
                    if __step == 0 {
                        return ::core::result::Result::Err(#p::Error::LoopStepZero {
                            kernel: ::std::string::String::from(#kernel_name),
                            var: ::std::string::String::from(#var_name),
                        });
                    }
                    #first
                    while (__step > 0 && __next < __end) || (__step < 0 && __next > __end) {
                        let #name = __next;
                        #body
                        match __next.checked_add(__step) {
                            ::core::option::Option::Some(__n) => __next = __n,
                            ::core::option::Option::None => break,
                        }
                    }
                })
            }
            StmtKind::While { cond, body } => {
                let cond = self.expr(cond)?;
                let body = self.block(body)?;
                quote!(while #cond { #body })
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                let cond = self.expr(cond)?;
                let then_body = self.block(then_body)?;
                if else_body.is_empty() {
                    quote!(if #cond { #then_body })
                } else {
                    let else_body = self.block(else_body)?;
                    quote!(if #cond { #then_body } else { #else_body })
                }
            }
            StmtKind::Expr(e) => {
                let e = self.expr(e)?;
                quote!(let _ = #e;)
            }
        })
    }

    /// `old op value` for a compound store, reading the old value with the
    /// same mask (masked positions are skipped by the store anyway).
    fn read_modify(
        &self,
        tensor: &str,
        index: &[crate::ir::Slice],
        op: StoreOp,
        value: &Expr,
    ) -> Result<TokenStream, GenError> {
        let old = Expr {
            kind: ExprKind::Load {
                tensor: tensor.to_string(),
                index: index.to_vec(),
                other: None,
            },
            ..value.clone()
        };
        let combined = match op {
            StoreOp::Max => ExprKind::Call {
                func: Builtin::Max,
                args: vec![old, value.clone()],
            },
            StoreOp::Add | StoreOp::Sub | StoreOp::Mul | StoreOp::Div | StoreOp::Assign => {
                let op = match op {
                    StoreOp::Add => BinOp::Add,
                    StoreOp::Sub => BinOp::Sub,
                    StoreOp::Mul => BinOp::Mul,
                    _ => BinOp::Div,
                };
                ExprKind::Binary {
                    op,
                    lhs: Box::new(old),
                    rhs: Box::new(value.clone()),
                }
            }
        };
        self.expr(&Expr {
            kind: combined,
            ..value.clone()
        })
    }

    fn assign(&self, local: LocalId, value: &Expr, stmt: &Stmt) -> Result<TokenStream, GenError> {
        let decl = self.local_by_id(local, stmt)?;
        let name = names::local(&decl.name);
        if !value.is_scalar()
            && let Some(update) = self.in_place_update(local, value)?
        {
            return Ok(update);
        }
        let value = self.expr(value)?;
        Ok(quote!(#name = #value;))
    }

    /// Updates of a tile `var` whose value is a chain of operations
    /// starting at the var itself, e.g. `acc = acc * rescale + dot(p, v)`,
    /// become in-place steps (`mul_assign`, then `dot_acc`), provided every
    /// intermediate has the var's shape and no other operand reads the var.
    fn in_place_update(
        &self,
        local: LocalId,
        value: &Expr,
    ) -> Result<Option<TokenStream>, GenError> {
        let p = private();
        let name = names::local(&self.local(local, value)?.name);
        let mut steps = Vec::new();
        if !collect_chain(local, value, &value.shape, &mut steps) || steps.is_empty() {
            return Ok(None);
        }
        let mut out = TokenStream::new();
        for step in steps {
            out.extend(match step {
                Step::Contract { transposed, a, b } => {
                    let (a_let, a) = self.operand(a, local, "__a")?;
                    let (b_let, b) = self.operand(b, local, "__b")?;
                    let f = if transposed {
                        quote!(dot_t_acc)
                    } else {
                        quote!(dot_acc)
                    };
                    quote!({
                        #a_let
                        #b_let
                        #p::host::#f(&mut #name, #a, #b)?;
                    })
                }
                Step::Elementwise { function, rhs } => {
                    self.fused_update(&name, function, rhs, &value.shape)?
                }
            });
        }
        Ok(Some(out))
    }

    /// `target[i] = function(target[i], rhs[i])` as one loop, `rhs` fused
    /// (its leaves read in lockstep with the target; a scalar `rhs` read once).
    fn fused_update(
        &self,
        target: &proc_macro2::Ident,
        function: &'static str,
        rhs: &Expr,
        target_shape: &Shape,
    ) -> Result<TokenStream, GenError> {
        let p = private();
        let op = match function {
            "add_assign" => quote!(#p::Num::add),
            "sub_assign" => quote!(#p::Num::sub),
            "mul_assign" => quote!(#p::Num::mul),
            "div_assign" => quote!(#p::Num::div),
            _ => quote!(#p::Element::maximum),
        };
        if rhs.is_scalar() {
            let value = self.expr(rhs)?;
            return Ok(quote!({
                let __rhs = #value;
                for __acc in #target.as_mut_slice().iter_mut() {
                    *__acc = #op(*__acc, __rhs);
                }
            }));
        }
        // A load (or a local holding one) of the target's shape is a
        // one-leaf fused loop, so it is read in place when it can be.
        let in_place_leaf = self.in_place_leaf(rhs)?.is_some();
        // One tile of one value per row (a `rowsum` kept in a `let`) or one
        // row for every row: read in place by the row-by-row loop, as a
        // fused tree reads such a leaf, instead of the library op's walk
        // over every element's coordinates. An elementwise tree of that
        // smaller shape stays with the library op, which computes it once
        // per row rather than once per element.
        let stretched_leaf = !super::fuse::is_elementwise(rhs)
            && matches!(
                super::fuse::stretch_of(&rhs.shape.0, &target_shape.0),
                Some(super::fuse::Stretch::PerRow | super::fuse::Stretch::PerColumn)
            );
        let whole =
            (super::fuse::is_elementwise(rhs) || in_place_leaf) && rhs.shape == *target_shape;
        if !(whole || stretched_leaf) {
            // One tile (or a fused tree of a smaller shape): the library's
            // in-place op, which broadcasts a smaller tile itself.
            let function = proc_macro2::Ident::new(function, proc_macro2::Span::call_site());
            let inner = match &rhs.kind {
                crate::ir::ExprKind::Broadcast(arg) if !arg.is_scalar() => arg.as_ref(),
                _ => rhs,
            };
            let value = self.tile_ref(inner)?;
            return Ok(quote!({
                let __rhs = #value;
                #p::host::#function(&mut #target, __rhs)?;
            }));
        }
        let fused = self.fuse_as(rhs, target_shape)?;
        let shape_name = proc_macro2::Ident::new("__shape", proc_macro2::Span::call_site());
        let checks = fused.shape_checks(&shape_name);
        let super::fuse::Fused {
            prelude,
            body,
            shape,
            ..
        } = &fused;
        let update = if fused.stretched() || self.prefetches {
            fused.rows(
                &shape_name,
                Some(quote!(#target.as_mut_slice())),
                self.prefetches,
                |iter, pattern| quote!(for #pattern in #iter { *__acc = #op(*__acc, #body); }),
            )
        } else {
            let (iter, pattern) = fused.zipped(Some((
                quote!(#target.as_mut_slice().iter_mut()),
                quote!(__acc),
            )));
            quote!(for #pattern in #iter { *__acc = #op(*__acc, #body); })
        };
        Ok(quote!({
            #prelude
            let #shape_name = [#(#shape),*];
            #checks
            #p::host::expect_shape(&#target, &#shape_name)?;
            #update
        }))
    }

    /// A `&Tile` operand for an in-place update of `target`, plus the `let`
    /// that must run first: values other than another tile local are
    /// computed into a temporary before `target` is borrowed mutably.
    fn operand(
        &self,
        e: &Expr,
        target: LocalId,
        temp: &str,
    ) -> Result<(TokenStream, TokenStream), GenError> {
        let p = private();
        if let Some(name) = self.in_place_local(e)? {
            return Ok((quote!(), quote!(#name.tile()?)));
        }
        if let ExprKind::Local(id) = e.kind
            && id != target
            && !e.is_scalar()
        {
            let name = names::local(&self.local(id, e)?.name);
            return Ok((quote!(), quote!(&#name)));
        }
        let temp = proc_macro2::Ident::new(temp, proc_macro2::Span::call_site());
        let value = self.expr(e)?;
        let value = if e.is_scalar() {
            quote!(#p::host::Tile::scalar(#value))
        } else {
            value
        };
        Ok((quote!(let #temp = #value;), quote!(&#temp)))
    }

    /// The Rust type of a value: a scalar or `Tile<T>`.
    pub fn value_type(&self, e: &Expr) -> Result<TokenStream, GenError> {
        if e.elem.is_quant() {
            let p = private();
            return Ok(quote!(#p::host::QTile));
        }
        let ty = names::rust_type(self.dtype_of(e)?);
        let p = private();
        Ok(if e.is_scalar() {
            ty
        } else {
            quote!(#p::host::Tile<#ty>)
        })
    }
}

/// One in-place step applied to the target tile.
enum Step<'e> {
    /// `target += a @ b` (or `a @ b^T`).
    Contract {
        transposed: bool,
        a: &'e Expr,
        b: &'e Expr,
    },
    /// `target = function(target, rhs)` for an `*_assign` of the tile library.
    Elementwise {
        function: &'static str,
        rhs: &'e Expr,
    },
}

/// Collects the steps of `e` in application order when `e` is a chain of
/// `+ - * /` and `max` whose innermost left operand is `target`.
fn collect_chain<'e>(
    target: LocalId,
    e: &'e Expr,
    shape: &Shape,
    steps: &mut Vec<Step<'e>>,
) -> bool {
    if &e.shape != shape {
        return false;
    }
    match &e.kind {
        ExprKind::Local(id) => *id == target,
        ExprKind::Binary { op, lhs, rhs } => {
            let function = match op {
                BinOp::Add => "add_assign",
                BinOp::Sub => "sub_assign",
                BinOp::Mul => "mul_assign",
                BinOp::Div => "div_assign",
                _ => return false,
            };
            if mentions(rhs, target) || !collect_chain(target, lhs, shape, steps) {
                return false;
            }
            steps.push(match &rhs.kind {
                ExprKind::Call {
                    func: func @ (Builtin::Dot | Builtin::DotT),
                    args,
                } if *op == BinOp::Add
                    && &rhs.shape == shape
                    && args.len() == 2
                    && !args.iter().any(|a| a.elem.is_quant()) =>
                {
                    Step::Contract {
                        transposed: *func == Builtin::DotT,
                        a: &args[0],
                        b: &args[1],
                    }
                }
                _ => Step::Elementwise { function, rhs },
            });
            true
        }
        ExprKind::Call {
            func: Builtin::Max,
            args,
        } if args.len() == 2 => {
            if mentions(&args[1], target) || !collect_chain(target, &args[0], shape, steps) {
                return false;
            }
            steps.push(Step::Elementwise {
                function: "max_assign",
                rhs: &args[1],
            });
            true
        }
        _ => false,
    }
}

/// Whether `e` reads local `target` anywhere.
pub(super) fn mentions(e: &Expr, target: LocalId) -> bool {
    let in_slices = |index: &[Slice]| {
        index.iter().any(|s| match s {
            Slice::Point(i) => mentions(i, target),
            Slice::Span { start, .. } => mentions(start, target),
            Slice::Full => false,
        })
    };
    match &e.kind {
        ExprKind::Local(id) => *id == target,
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Bool(_)
        | ExprKind::Param(_)
        | ExprKind::Dim(_)
        | ExprKind::Tune(_) => false,
        ExprKind::Load { index, other, .. } => {
            in_slices(index) || other.as_deref().is_some_and(|o| mentions(o, target))
        }
        ExprKind::Slice { base, index } => mentions(base, target) || in_slices(index),
        ExprKind::Unary { arg, .. } | ExprKind::Cast(arg) | ExprKind::Broadcast(arg) => {
            mentions(arg, target)
        }
        ExprKind::Binary { lhs, rhs, .. } => mentions(lhs, target) || mentions(rhs, target),
        ExprKind::Call { args, .. } => args.iter().any(|a| mentions(a, target)),
    }
}
