//! Subscripts: `A[i]`, `A[a : b]`, `A[a :+ n]`, `A[:]` on tensors and tiles.

use super::KernelChecker;
use super::types::{Typed, convert};
use crate::diag::Diagnostic;
use crate::front::{ast, print::expr_to_string};
use crate::ir::{self, DType, Elem, ExprKind, QuantType, Shape, ShapeExpr, ShapeOp, Slice};
use crate::span::Span;

/// The extent of a dim being sliced.
pub(super) enum DimExtent {
    /// Known per config (tile dims, literal tensor dims).
    Static(ShapeExpr),
    /// A tensor dim bound at launch.
    Runtime(String),
}

impl KernelChecker {
    /// Resolves `tensor[subs]`: its element type, slices and result shape.
    pub(super) fn tensor_slice(
        &self,
        tensor: &str,
        tensor_span: Span,
        subs: &[ast::Subscript],
        span: Span,
    ) -> Result<(Elem, Vec<Slice>, Shape), Diagnostic> {
        let Some((elem, dims)) = self.tensor(tensor) else {
            return Err(Diagnostic::error(
                tensor_span,
                format!("`{tensor}` is not a tensor parameter"),
            ));
        };
        let extents: Vec<DimExtent> = dims
            .iter()
            .map(|d| match d {
                ir::Dim::Lit(v) => DimExtent::Static(ShapeExpr::Lit(*v)),
                ir::Dim::Sym(s) => DimExtent::Runtime(s.clone()),
            })
            .collect();
        let quant = match elem {
            Elem::Quant(q) => Some(q),
            Elem::Scalar(_) => None,
        };
        let what = format!("tensor `{tensor}`");
        let (index, shape) = self.slices(subs, &extents, quant, span, &what)?;
        Ok((elem, index, shape))
    }

    /// One slice per dim, and the shape of what they select.
    pub(super) fn slices(
        &self,
        subs: &[ast::Subscript],
        dims: &[DimExtent],
        quant: Option<QuantType>,
        span: Span,
        what: &str,
    ) -> Result<(Vec<Slice>, Shape), Diagnostic> {
        if subs.len() != dims.len() {
            return Err(Diagnostic::error(
                span,
                format!(
                    "{what} has {} dims but {} subscripts were given",
                    dims.len(),
                    subs.len()
                ),
            )
            .with_help("give one subscript per dim: `i`, `a :+ n`, `a : b` or `:`"));
        }
        let mut index = Vec::with_capacity(subs.len());
        let mut shape = Vec::new();
        for (i, (sub, dim)) in subs.iter().zip(dims).enumerate() {
            let blocked = quant.filter(|_| i + 1 == dims.len());
            let slice = match &sub.kind {
                ast::SubscriptKind::Full => match dim {
                    DimExtent::Static(extent) => {
                        if let Some(q) = blocked {
                            self.check_block_len(extent, q, sub.span)?;
                        }
                        shape.push(extent.clone());
                        Slice::Full
                    }
                    DimExtent::Runtime(name) => {
                        return Err(Diagnostic::error(
                            sub.span,
                            format!("`:` would make a tile of extent `{name}`: tile dims unknown at compile time"),
                        )
                        .with_help(format!("slice a compile-time length instead: `start :+ TILE` (`{name}` is bound only at launch)")));
                    }
                },
                ast::SubscriptKind::Point(e) => {
                    if blocked.is_some() {
                        return Err(Diagnostic::error(
                            sub.span,
                            "a quantized tensor's last (blocked) dim must be sliced with a span, not indexed",
                        ));
                    }
                    let p = self.index_value(e)?;
                    self.check_static_bounds(&p, &ShapeExpr::Lit(1), dim, sub.span)?;
                    Slice::Point(p)
                }
                ast::SubscriptKind::Span(start, len) => {
                    let start = self.index_value(start)?;
                    let len = self.const_extent(len, "span length")?;
                    self.span_slice(start, len, dim, blocked, sub.span, &mut shape)?
                }
                ast::SubscriptKind::Range(lo, hi) => {
                    let len = self.range_len(lo, hi, sub.span)?;
                    let start = self.index_value(lo)?;
                    self.span_slice(start, len, dim, blocked, sub.span, &mut shape)?
                }
                ast::SubscriptKind::OpenRange(lo, hi) => {
                    let written = match (lo, hi) {
                        (Some(lo), None) => format!("{}:", expr_to_string(lo)),
                        (None, Some(hi)) => format!(":{}", expr_to_string(hi)),
                        _ => ":".into(),
                    };
                    return Err(Diagnostic::error(
                        sub.span,
                        format!("open-ended slice `{written}` is not allowed"),
                    )
                    .with_help("write `start :+ len` or `start : end` with a compile-time length, or `:` for a whole literal dim"));
                }
            };
            index.push(slice);
        }
        Ok((index, Shape(shape)))
    }

    fn span_slice(
        &self,
        start: ir::Expr,
        len: ShapeExpr,
        dim: &DimExtent,
        blocked: Option<QuantType>,
        span: Span,
        shape: &mut Vec<ShapeExpr>,
    ) -> Result<Slice, Diagnostic> {
        if let Some(q) = blocked {
            self.check_block_len(&len, q, span)?;
            self.check_block_start(&start, q, span)?;
        }
        self.check_static_bounds(&start, &len, dim, span)?;
        shape.push(len.clone());
        Ok(Slice::Span { start, len })
    }

    /// `a : b` needs a compile-time length: both ends compile-time, or
    /// `b` spelled `a + n` with `n` compile-time.
    fn range_len(
        &self,
        lo: &ast::Expr,
        hi: &ast::Expr,
        span: Span,
    ) -> Result<ShapeExpr, Diagnostic> {
        if self.is_const(lo) && self.is_const(hi) {
            let len = ShapeExpr::bin(
                ShapeOp::Sub,
                self.const_int(hi, "range end")?,
                self.const_int(lo, "range start")?,
            );
            return self.positive(len, span, "range length");
        }
        if let ast::ExprKind::Binary {
            op: ast::BinaryOp::Add,
            lhs,
            rhs,
        } = &strip_parens(hi).kind
        {
            let lo_text = expr_to_string(lo);
            if expr_to_string(lhs) == lo_text && self.is_const(rhs) {
                return self.const_extent(rhs, "range length");
            }
            if expr_to_string(rhs) == lo_text && self.is_const(lhs) {
                return self.const_extent(lhs, "range length");
            }
        }
        Err(Diagnostic::error(
            span,
            format!(
                "range `{} : {}` has no compile-time length",
                expr_to_string(lo),
                expr_to_string(hi)
            ),
        )
        .with_help("write `start :+ len` with `len` a literal or tune parameter"))
    }

    fn positive(&self, len: ShapeExpr, span: Span, what: &str) -> Result<ShapeExpr, Diagnostic> {
        for c in &self.configs {
            match len.try_eval(c) {
                Ok(v) if v > 0 => {}
                Ok(v) => {
                    return Err(Diagnostic::error(
                        span,
                        format!("{what} `{len}` must be positive, but it is {v} for config {c}"),
                    ));
                }
                Err(e) => {
                    return Err(Diagnostic::error(span, format!("{what} `{len}`: {e}")));
                }
            }
        }
        Ok(len)
    }

    /// An index or span start: an integer scalar (literals become `i32`).
    pub(super) fn index_value(&self, e: &ast::Expr) -> Result<ir::Expr, Diagnostic> {
        let t: Typed = self.expr(e)?;
        let d = self.numeric(&t, "an index")?;
        if !d.is_int() || !t.shape().is_scalar() {
            return Err(Diagnostic::error(
                e.span,
                format!(
                    "an index must be an integer scalar, found {}",
                    crate::ir::print::type_to_string(t.expr.elem, t.shape())
                ),
            ));
        }
        let to = if t.weak == super::types::Weak::No {
            d
        } else {
            DType::I32
        };
        Ok(convert(t, to))
    }

    /// Rejects slices that are out of range for some config when the start
    /// is a literal and the extent is compile-time.
    fn check_static_bounds(
        &self,
        start: &ir::Expr,
        len: &ShapeExpr,
        dim: &DimExtent,
        span: Span,
    ) -> Result<(), Diagnostic> {
        let (ExprKind::Int(s), DimExtent::Static(extent)) = (&start.kind, dim) else {
            return Ok(());
        };
        for c in &self.configs {
            let (l, n) = (len.eval(c), extent.eval(c));
            if *s < 0 || s + l > n {
                let cfg = if c.values.is_empty() {
                    String::new()
                } else {
                    format!(" for config {c}")
                };
                return Err(Diagnostic::error(
                    span,
                    format!(
                        "slice {s}..{} is out of range for a dim of extent {n}{cfg}",
                        s + l
                    ),
                ));
            }
        }
        Ok(())
    }

    fn check_block_len(&self, len: &ShapeExpr, q: QuantType, span: Span) -> Result<(), Diagnostic> {
        let block = q.block_len();
        for c in &self.configs {
            let v = len.eval(c);
            if v % block != 0 {
                return Err(Diagnostic::error(
                    span,
                    format!(
                        "a {q} slice along the blocked (last) dim must span whole blocks of {block}, but `{len}` is {v}{}",
                        config_suffix(c)
                    ),
                ));
            }
        }
        Ok(())
    }

    fn check_block_start(
        &self,
        start: &ir::Expr,
        q: QuantType,
        span: Span,
    ) -> Result<(), Diagnostic> {
        let block = q.block_len();
        for c in &self.configs {
            let align = self.alignment(start, c, 0);
            if align % block != 0 {
                return Err(Diagnostic::error(
                    span,
                    format!(
                        "a {q} slice along the blocked (last) dim must start on a block boundary (a multiple of {block}); the start is only known to be a multiple of {align}{}",
                        config_suffix(c)
                    ),
                )
                .with_help("start at a multiple of the block length, e.g. a loop `for k in range(0, K, TILE_K)` with TILE_K a multiple of it"));
            }
        }
        Ok(())
    }

    /// A number the value of `e` is always a multiple of (0 means "the
    /// value is 0", which every block length divides).
    fn alignment(&self, e: &ir::Expr, c: &ir::Config, depth: u32) -> i64 {
        if depth > 16 {
            return 1;
        }
        match &e.kind {
            ExprKind::Int(v) => v.abs(),
            ExprKind::Tune(n) => c.get(n).unwrap_or(1),
            ExprKind::Cast(inner) => self.alignment(inner, c, depth + 1),
            ExprKind::Binary { op, lhs, rhs } => {
                let (a, b) = (
                    self.alignment(lhs, c, depth + 1),
                    self.alignment(rhs, c, depth + 1),
                );
                match op {
                    ir::BinOp::Mul => a.saturating_mul(b),
                    ir::BinOp::Add | ir::BinOp::Sub => gcd(a, b),
                    _ => 1,
                }
            }
            ExprKind::Local(id) => match self.local_defs.get(id) {
                Some(defs) => defs
                    .iter()
                    .map(|d| self.alignment(d, c, depth + 1))
                    .fold(0, gcd),
                None => 1,
            },
            _ => 1,
        }
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a.abs() } else { gcd(b, a % b) }
}

fn config_suffix(c: &ir::Config) -> String {
    if c.values.is_empty() {
        String::new()
    } else {
        format!(" for config {c}")
    }
}

fn strip_parens(e: &ast::Expr) -> &ast::Expr {
    match &e.kind {
        ast::ExprKind::Paren(inner) => strip_parens(inner),
        _ => e,
    }
}
