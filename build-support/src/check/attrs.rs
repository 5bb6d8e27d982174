//! Kernel attributes: `@autotune`, `@cluster`, `@grid`, `@launch`,
//! `@pipeline`, `@tensorcore`, `@host_impl`.

use super::KernelChecker;
use crate::diag::Diagnostic;
use crate::diag::suggest::{close_matches, did_you_mean};
use crate::front::ast::{self, AttrArg, LiteralKind};
use crate::ir::{self, DType, Elem, ExprKind, Shape, TuneKind};
use crate::span::Span;

/// Every attribute the language knows, for the unknown-attribute error.
pub const KNOWN_ATTRIBUTES: [&str; 7] = [
    "autotune",
    "cluster",
    "grid",
    "host_impl",
    "launch",
    "pipeline",
    "tensorcore",
];

/// Attributes other than the tune parameters (which go to the checker).
pub(super) struct Attrs<'a> {
    pub grid: Option<(&'a [AttrArg], Span)>,
    pub launch: Option<ir::Launch>,
    pub pipeline: bool,
    pub tensorcore: bool,
    /// `@host_impl(name)`: the hand-written host function behind the handle.
    pub host_impl: Option<String>,
}

/// The values `X in [...]` stands for: two values are a doubling range
/// `a, 2a, 4a, ..., b`; one or three or more are an explicit list.
pub fn tune_values(values: &[i64]) -> Result<Vec<i64>, String> {
    let shown = || {
        let v: Vec<String> = values.iter().map(i64::to_string).collect();
        format!("[{}]", v.join(", "))
    };
    if let Some(bad) = values.iter().find(|v| **v <= 0) {
        return Err(format!(
            "tune values must be positive, but {} contains {bad}",
            shown()
        ));
    }
    match values {
        [] => Err("a tune parameter needs at least one value".into()),
        [a, b] => {
            if a > b {
                return Err(format!(
                    "tune range {} is empty: the first value must not exceed the last",
                    shown()
                ));
            }
            if b % a != 0 || !(b / a).cast_unsigned().is_power_of_two() {
                return Err(format!(
                    "tune range {} is not a doubling range: {b} is not {a} times a power of two",
                    shown()
                ));
            }
            let mut out = vec![*a];
            while let Some(last) = out.last().copied()
                && last < *b
            {
                out.push(last * 2);
            }
            Ok(out)
        }
        _ => {
            for (i, v) in values.iter().enumerate() {
                if values[..i].contains(v) {
                    return Err(format!("tune list {} repeats {v}", shown()));
                }
            }
            Ok(values.to_vec())
        }
    }
}

impl KernelChecker {
    pub(super) fn attributes<'a>(
        &mut self,
        attrs: &'a [ast::Attribute],
    ) -> Result<Attrs<'a>, Diagnostic> {
        let mut out = Attrs {
            grid: None,
            launch: None,
            pipeline: false,
            tensorcore: false,
            host_impl: None,
        };
        let mut seen: Vec<&str> = Vec::new();
        for a in attrs {
            let name = a.name.name.as_str();
            if seen.contains(&name) {
                return Err(Diagnostic::error(
                    a.name.span,
                    format!("attribute `@{name}` is given twice"),
                ));
            }
            seen.push(name);
            match name {
                "autotune" => self.tune_attr(a, TuneKind::Autotune)?,
                "cluster" => self.tune_attr(a, TuneKind::Cluster)?,
                "grid" => {
                    let args = a.args.as_deref().unwrap_or(&[]);
                    if args.is_empty() || args.len() > 3 {
                        return Err(Diagnostic::error(
                            a.span,
                            format!("`@grid` takes 1 to 3 expressions, got {}", args.len()),
                        ));
                    }
                    out.grid = Some((args, a.span));
                }
                "launch" => out.launch = Some(launch_attr(a)?),
                "host_impl" => out.host_impl = Some(host_impl_attr(a)?),
                "pipeline" | "tensorcore" => {
                    if a.args.as_ref().is_some_and(|args| !args.is_empty()) {
                        return Err(Diagnostic::error(
                            a.span,
                            format!("`@{name}` takes no arguments"),
                        ));
                    }
                    if name == "pipeline" {
                        out.pipeline = true;
                    } else {
                        out.tensorcore = true;
                    }
                }
                _ => {
                    let d = Diagnostic::error(a.name.span, format!("unknown attribute `@{name}`"))
                        .with_note(format!(
                            "known attributes: {}",
                            KNOWN_ATTRIBUTES.map(|k| format!("@{k}")).join(", ")
                        ));
                    let close: Vec<String> = close_matches(name, KNOWN_ATTRIBUTES)
                        .into_iter()
                        .map(|k| format!("@{k}"))
                        .collect();
                    let close: Vec<&str> = close.iter().map(String::as_str).collect();
                    let d = match did_you_mean(&close) {
                        Some(h) => d.with_help(h),
                        None => d,
                    };
                    return Err(d);
                }
            }
        }
        self.configs = ir::Kernel::configs_of(&self.tune);
        Ok(out)
    }

    fn tune_attr(&mut self, a: &ast::Attribute, kind: TuneKind) -> Result<(), Diagnostic> {
        let args = a.args.as_deref().unwrap_or(&[]);
        if args.is_empty() {
            return Err(Diagnostic::error(
                a.span,
                format!("`@{}` needs parameters: `NAME in [lo, hi]`", a.name.name),
            ));
        }
        for arg in args {
            let AttrArg::Values { name, values, span } = arg else {
                return Err(Diagnostic::error(
                    attr_arg_span(arg),
                    format!(
                        "expected `NAME in [lo, hi]` or `NAME in [v1, v2, v3, ...]` in `@{}`",
                        a.name.name
                    ),
                ));
            };
            if let Some(what) = self.name_kind(&name.name) {
                return Err(Diagnostic::error(
                    name.span,
                    format!(
                        "tune parameter `{}` clashes with {what} of that name",
                        name.name
                    ),
                ));
            }
            let mut ints = Vec::with_capacity(values.len());
            for v in values {
                match v.kind {
                    LiteralKind::Int(i) => ints.push(i),
                    _ => {
                        return Err(Diagnostic::error(
                            v.span,
                            "tune values must be integer literals",
                        ));
                    }
                }
            }
            let values = tune_values(&ints).map_err(|msg| Diagnostic::error(*span, msg))?;
            self.tune.push(ir::TuneParam {
                name: name.name.clone(),
                kind,
                values,
                span: *span,
            });
        }
        Ok(())
    }

    /// What else a name already is, if anything (params, dims, tune).
    fn name_kind(&self, name: &str) -> Option<&'static str> {
        if self.params.iter().any(|p| p.name == name) {
            Some("a parameter")
        } else if self.dims.iter().any(|d| d == name) {
            Some("a tensor dim")
        } else if self.tune.iter().any(|t| t.name == name) {
            Some("another tune parameter")
        } else {
            None
        }
    }

    /// Grid expressions: `i32` arithmetic over tensor dims, tune parameters
    /// and literals (with `cdiv`, `min`, `max`).
    pub(super) fn grid(
        &self,
        (args, _span): (&[AttrArg], Span),
    ) -> Result<Vec<ir::Expr>, Diagnostic> {
        args.iter()
            .map(|arg| match arg {
                AttrArg::Expr(e) => self.grid_expr(e),
                other => Err(Diagnostic::error(
                    attr_arg_span(other),
                    "expected a grid expression such as `cdiv(M, TILE_M)`",
                )),
            })
            .collect()
    }

    fn grid_expr(&self, e: &ast::Expr) -> Result<ir::Expr, Diagnostic> {
        let i32_expr = |kind| ir::Expr {
            kind,
            elem: Elem::Scalar(DType::I32),
            shape: Shape::scalar(),
            span: e.span,
        };
        let kind = match &e.kind {
            ast::ExprKind::Int(v) => {
                if i32::try_from(*v).is_err() {
                    return Err(Diagnostic::error(e.span, "grid extent does not fit in i32"));
                }
                ExprKind::Int(*v)
            }
            ast::ExprKind::Paren(inner) => return self.grid_expr(inner),
            ast::ExprKind::Name(n) if self.dims.contains(n) => ExprKind::Dim(n.clone()),
            ast::ExprKind::Name(n) if self.tune.iter().any(|t| &t.name == n) => {
                ExprKind::Tune(n.clone())
            }
            ast::ExprKind::Name(n) => return Err(self.unknown_grid_name(n, e.span)),
            ast::ExprKind::Binary { op, lhs, rhs } => {
                let op = match op {
                    ast::BinaryOp::Add => ir::BinOp::Add,
                    ast::BinaryOp::Sub => ir::BinOp::Sub,
                    ast::BinaryOp::Mul => ir::BinOp::Mul,
                    ast::BinaryOp::Div => ir::BinOp::Div,
                    ast::BinaryOp::Rem => ir::BinOp::Rem,
                    other => {
                        return Err(Diagnostic::error(
                            e.span,
                            format!(
                                "operator `{}` is not allowed in a grid expression; use + - * / % cdiv min max",
                                other.spelling()
                            ),
                        ));
                    }
                };
                ExprKind::Binary {
                    op,
                    lhs: Box::new(self.grid_expr(lhs)?),
                    rhs: Box::new(self.grid_expr(rhs)?),
                }
            }
            ast::ExprKind::Call { callee, args } => {
                let name = match &callee.kind {
                    ast::ExprKind::Name(n) => n.as_str(),
                    _ => "",
                };
                let func = match name {
                    "cdiv" => ir::Builtin::Cdiv,
                    "min" => ir::Builtin::Min,
                    "max" => ir::Builtin::Max,
                    _ => {
                        return Err(Diagnostic::error(
                            callee.span,
                            "a grid expression may call only `cdiv`, `min` and `max`",
                        ));
                    }
                };
                if args.len() != 2 {
                    return Err(Diagnostic::error(
                        e.span,
                        format!("`{name}` takes 2 arguments, got {}", args.len()),
                    ));
                }
                ExprKind::Call {
                    func,
                    args: args
                        .iter()
                        .map(|a| self.grid_expr(a))
                        .collect::<Result<_, _>>()?,
                }
            }
            _ => {
                return Err(Diagnostic::error(
                    e.span,
                    "a grid expression uses tensor dims, tune parameters, integer literals, + - * / % and cdiv/min/max",
                ));
            }
        };
        Ok(i32_expr(kind))
    }

    fn unknown_grid_name(&self, name: &str, span: Span) -> Diagnostic {
        if self.params.iter().any(|p| p.name == name) {
            return Diagnostic::error(
                span,
                format!(
                    "parameter `{name}` cannot size the grid: use tensor dims and tune parameters"
                ),
            );
        }
        let candidates = self
            .dims
            .iter()
            .map(String::as_str)
            .chain(self.tune.iter().map(|t| t.name.as_str()));
        let d = Diagnostic::error(span, format!("unknown name `{name}` in `@grid`"))
            .with_note("a grid expression uses tensor dims and tune parameters");
        match did_you_mean(&close_matches(name, candidates)) {
            Some(h) => d.with_help(h),
            None => d,
        }
    }
}

fn attr_arg_span(arg: &AttrArg) -> Span {
    match arg {
        AttrArg::Values { span, .. } | AttrArg::Named { span, .. } => *span,
        AttrArg::Expr(e) => e.span,
    }
}

/// `@host_impl(name)`: exactly one plain name (a Rust function in scope
/// where the kernel is expanded; the host back end checks it is not a Rust
/// keyword).
fn host_impl_attr(a: &ast::Attribute) -> Result<String, Diagnostic> {
    match a.args.as_deref() {
        Some(
            [
                AttrArg::Expr(ast::Expr {
                    kind: ast::ExprKind::Name(name),
                    ..
                }),
            ],
        ) => Ok(name.clone()),
        Some([other]) => Err(Diagnostic::error(
            attr_arg_span(other),
            "`@host_impl` takes the name of a Rust function, e.g. `@host_impl(my_matmul_host)`",
        )),
        _ => Err(Diagnostic::error(
            a.span,
            "`@host_impl` takes exactly one argument, the name of a Rust function",
        )),
    }
}

fn launch_attr(a: &ast::Attribute) -> Result<ir::Launch, Diagnostic> {
    let args = a.args.as_deref().unwrap_or(&[]);
    let mut slots: [Option<i64>; 3] = [None; 3];
    const NAMES: [&str; 3] = ["threads", "min_blocks", "max_regs"];
    if args.len() > 3 {
        return Err(Diagnostic::error(
            a.span,
            format!(
                "`@launch` takes at most 3 arguments (threads, min_blocks, max_regs), got {}",
                args.len()
            ),
        ));
    }
    for (i, arg) in args.iter().enumerate() {
        let (slot, value, span) = match arg {
            AttrArg::Expr(ast::Expr {
                kind: ast::ExprKind::Int(v),
                span,
            }) => (i, *v, *span),
            AttrArg::Named { name, value, span } => {
                let Some(slot) = NAMES.iter().position(|n| *n == name.name) else {
                    return Err(Diagnostic::error(
                        name.span,
                        format!(
                            "unknown `@launch` argument `{}`; expected threads, min_blocks or max_regs",
                            name.name
                        ),
                    ));
                };
                let LiteralKind::Int(v) = value.kind else {
                    return Err(Diagnostic::error(value.span, "expected an integer literal"));
                };
                (slot, v, *span)
            }
            other => {
                return Err(Diagnostic::error(
                    attr_arg_span(other),
                    "expected an integer literal: `@launch(threads[, min_blocks[, max_regs]])`",
                ));
            }
        };
        let max = [1024, i64::from(u32::MAX), 255][slot];
        if !(1..=max).contains(&value) {
            return Err(Diagnostic::error(
                span,
                format!(
                    "`@launch` {} must be in 1..={max}, got {value}",
                    NAMES[slot]
                ),
            ));
        }
        slots[slot] = Some(value);
    }
    let Some(threads) = slots[0] else {
        return Err(Diagnostic::error(
            a.span,
            "`@launch` needs the thread count: `@launch(threads[, min_blocks[, max_regs]])`",
        ));
    };
    Ok(ir::Launch {
        threads,
        min_blocks: slots[1],
        max_regs: slots[2],
    })
}

#[cfg(test)]
mod tests {
    use super::tune_values;

    #[test]
    fn two_values_double() {
        assert_eq!(tune_values(&[32, 256]), Ok(vec![32, 64, 128, 256]));
        assert_eq!(tune_values(&[3, 12]), Ok(vec![3, 6, 12]));
        assert_eq!(tune_values(&[16, 16]), Ok(vec![16]));
    }

    #[test]
    fn three_values_are_a_list_and_first_is_default() {
        assert_eq!(tune_values(&[64, 16, 32]), Ok(vec![64, 16, 32]));
        assert_eq!(tune_values(&[7]), Ok(vec![7]));
    }

    #[test]
    fn bad_ranges_show_the_range() {
        let e = tune_values(&[256, 32]).unwrap_err();
        assert!(e.contains("[256, 32]"), "{e}");
        let e = tune_values(&[32, 100]).unwrap_err();
        assert!(e.contains("[32, 100]") && e.contains("power of two"), "{e}");
        let e = tune_values(&[0, 8]).unwrap_err();
        assert!(e.contains("positive"), "{e}");
        let e = tune_values(&[1, 2, 1]).unwrap_err();
        assert!(e.contains("repeats"), "{e}");
    }
}
