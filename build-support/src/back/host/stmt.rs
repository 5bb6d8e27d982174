//! Statements of one program. Compound updates of a tile `var`
//! (`acc += dot(a, b)`, `acc = acc * x`) are done in place, so the hot loop
//! of a contraction allocates nothing.

use proc_macro2::TokenStream;
use quote::quote;

use super::expr::private;
use super::names;
use super::{GenError, Generator};
use crate::ir::{BinOp, Builtin, Expr, ExprKind, LocalId, Stmt, StmtKind, StoreOp};

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
            } => {
                let view = names::param(tensor);
                let slices = self.slices(index)?;
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
            StmtKind::For {
                var,
                start,
                end,
                step,
                body,
            } => {
                let name = names::local(&self.local_by_id(*var, stmt)?.name);
                let (start, end, step) = (self.expr(start)?, self.expr(end)?, self.expr(step)?);
                let body = self.block(body)?;
                // A zero step would loop forever (as on the GPU); the host
                // runs nothing instead. Overflowing the counter ends the loop.
                quote!({
                    let (__end, __step) = (#end, #step);
                    let mut __next = #start;
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

    /// `x = x + dot(a, b)` -> `dot_acc`, `x = x op y` -> `op_assign`,
    /// `x = max(x, y)` -> `max_assign`, when `x` is a tile local.
    fn in_place_update(
        &self,
        local: LocalId,
        value: &Expr,
    ) -> Result<Option<TokenStream>, GenError> {
        let p = private();
        let name = names::local(&self.local(local, value)?.name);
        let is_target = |e: &Expr| matches!(e.kind, ExprKind::Local(id) if id == local);
        let (op_fn, rhs) = match &value.kind {
            ExprKind::Binary { op, lhs, rhs } if is_target(lhs) && lhs.shape == value.shape => {
                if *op == BinOp::Add
                    && let ExprKind::Call {
                        func: func @ (Builtin::Dot | Builtin::DotT),
                        args,
                    } = &rhs.kind
                    && rhs.shape == value.shape
                    && args.len() == 2
                {
                    let (a_let, a) = self.operand(&args[0], local, "__a")?;
                    let (b_let, b) = self.operand(&args[1], local, "__b")?;
                    let f = if *func == Builtin::Dot {
                        quote!(dot_acc)
                    } else {
                        quote!(dot_t_acc)
                    };
                    return Ok(Some(quote!({
                        #a_let
                        #b_let
                        #p::host::#f(&mut #name, #a, #b)?;
                    })));
                }
                let f = match op {
                    BinOp::Add => quote!(add_assign),
                    BinOp::Sub => quote!(sub_assign),
                    BinOp::Mul => quote!(mul_assign),
                    BinOp::Div => quote!(div_assign),
                    _ => return Ok(None),
                };
                (f, rhs.as_ref())
            }
            ExprKind::Call {
                func: Builtin::Max,
                args,
            } if args.len() == 2 && is_target(&args[0]) && args[0].shape == value.shape => {
                (quote!(max_assign), &args[1])
            }
            _ => return Ok(None),
        };
        let (rhs_let, rhs) = self.operand(rhs, local, "__rhs")?;
        Ok(Some(quote!({
            #rhs_let
            #p::host::#op_fn(&mut #name, #rhs)?;
        })))
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
        let ty = names::rust_type(self.dtype_of(e)?);
        let p = private();
        Ok(if e.is_scalar() {
            ty
        } else {
            quote!(#p::host::Tile<#ty>)
        })
    }
}
