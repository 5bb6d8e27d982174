//! The IR text form. [`super::parse`] reads it back.
//!
//! ```text
//! kernel saxpy {
//!   param X: tensor<f32>[N]
//!   param Y: tensor<f32>[N] written
//!   param a: f32
//!   tune BLOCK autotune [256, 512, 1024]
//!   grid [cdiv(dim(N), tune(BLOCK)):i32]
//!   body {
//!     let %pid: i32 = program_id(0:i32):i32
//!     let %x: f32[BLOCK] = load(X[span(mul(%pid, tune(BLOCK)):i32, BLOCK)]):f32[BLOCK]
//!     store Y[span(mul(%pid, tune(BLOCK)):i32, BLOCK)] = ...
//!   }
//! }
//! ```
//!
//! Every non-leaf expression is `op(args):type`, where a type is an element
//! type followed by `[dims]` unless it is a scalar. Leaves: literals with
//! their type (`0.5:f32`, `1:i32`, `true:bool`), locals `%name`, scalar
//! parameters `param(name)`, tensor dims `dim(M)`, tune parameters
//! `tune(T)`. Slices: `point(e)`, `span(e, shape_expr)`, `full`.

use std::fmt::{self, Write};

use super::{
    Block, Dim, Elem, Expr, ExprKind, Kernel, Local, Module, ParamKind, Shape, Slice, Stmt,
    StmtKind, StoreOp, TuneKind, UnOp,
};

/// The text form of a whole module.
pub fn module_to_string(module: &Module) -> String {
    let mut out = String::new();
    for (i, k) in module.kernels.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&kernel_to_string(k));
    }
    out
}

/// The text form of one kernel.
pub fn kernel_to_string(kernel: &Kernel) -> String {
    let mut p = Printer {
        out: String::new(),
        kernel,
    };
    // Writing to a String cannot fail.
    let _ = p.kernel();
    p.out
}

/// The text form of a type: `f32[TILE_M, TILE_N]`, or `f32` for a scalar.
pub fn type_to_string(elem: Elem, shape: &Shape) -> String {
    if shape.is_scalar() {
        elem.to_string()
    } else {
        format!("{elem}{shape}")
    }
}

pub(crate) fn unop_name(op: UnOp) -> &'static str {
    match op {
        UnOp::Neg => "neg",
        UnOp::Not => "not",
        UnOp::BitNot => "bitnot",
    }
}

pub(crate) fn store_op_symbol(op: StoreOp) -> &'static str {
    match op {
        StoreOp::Assign => "=",
        StoreOp::Add => "+=",
        StoreOp::Sub => "-=",
        StoreOp::Mul => "*=",
        StoreOp::Div => "/=",
        StoreOp::Max => "max=",
    }
}

struct Printer<'a> {
    out: String,
    kernel: &'a Kernel,
}

impl<'a> Printer<'a> {
    fn kernel(&mut self) -> fmt::Result {
        let k = self.kernel;
        writeln!(self.out, "kernel {} {{", k.name)?;
        for p in &k.params {
            match &p.kind {
                ParamKind::Tensor {
                    elem,
                    dims,
                    written,
                } => {
                    let dims: Vec<String> = dims
                        .iter()
                        .map(|d| match d {
                            Dim::Sym(s) => s.clone(),
                            Dim::Lit(v) => v.to_string(),
                        })
                        .collect();
                    write!(
                        self.out,
                        "  param {}: tensor<{elem}>[{}]",
                        p.name,
                        dims.join(", ")
                    )?;
                    if *written {
                        self.out.push_str(" written");
                    }
                    self.out.push('\n');
                }
                ParamKind::Scalar { dtype } => writeln!(self.out, "  param {}: {dtype}", p.name)?,
            }
        }
        for t in &k.tune {
            let kind = match t.kind {
                TuneKind::Autotune => "autotune",
                TuneKind::Cluster => "cluster",
            };
            let values: Vec<String> = t.values.iter().map(i64::to_string).collect();
            writeln!(self.out, "  tune {} {kind} [{}]", t.name, values.join(", "))?;
        }
        self.out.push_str("  grid [");
        for (i, g) in k.grid.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.expr(g)?;
        }
        self.out.push_str("]\n");
        if let Some(l) = &k.launch {
            let opt = |v: Option<i64>| v.map_or_else(|| "_".to_string(), |v| v.to_string());
            writeln!(
                self.out,
                "  launch {} {} {}",
                l.threads,
                opt(l.min_blocks),
                opt(l.max_regs)
            )?;
        }
        if k.pipeline {
            self.out.push_str("  pipeline\n");
        }
        if k.tensorcore {
            self.out.push_str("  tensorcore\n");
        }
        if let Some(name) = &k.host_impl {
            writeln!(self.out, "  host_impl {name}")?;
        }
        self.out.push_str("  body ");
        self.block(&k.body, 1)?;
        self.out.push_str("\n}\n");
        Ok(())
    }

    fn block(&mut self, block: &Block, depth: usize) -> fmt::Result {
        self.out.push_str("{\n");
        for s in block {
            self.stmt(s, depth + 1)?;
        }
        self.indent(depth);
        self.out.push('}');
        Ok(())
    }

    fn indent(&mut self, depth: usize) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
    }

    fn local(&self, id: super::LocalId) -> Option<&'a Local> {
        self.kernel.local(id)
    }

    fn local_name(&mut self, id: super::LocalId) -> fmt::Result {
        match self.local(id) {
            Some(l) => write!(self.out, "%{}", l.name),
            // The verifier rejects this; print something a reader can see.
            None => write!(self.out, "%<bad local {}>", id.0),
        }
    }

    fn stmt(&mut self, s: &Stmt, depth: usize) -> fmt::Result {
        self.indent(depth);
        match &s.kind {
            StmtKind::Let { local, value } => {
                let (kw, ty) = match self.local(*local) {
                    Some(l) => (
                        if l.mutable { "var" } else { "let" },
                        type_to_string(l.elem, &l.shape),
                    ),
                    None => ("let", "?".to_string()),
                };
                write!(self.out, "{kw} ")?;
                self.local_name(*local)?;
                write!(self.out, ": {ty} = ")?;
                self.expr(value)?;
            }
            StmtKind::Assign { local, value } => {
                self.local_name(*local)?;
                self.out.push_str(" = ");
                self.expr(value)?;
            }
            StmtKind::Store {
                tensor,
                index,
                op,
                value,
            } => {
                write!(self.out, "store {tensor}")?;
                self.slices(index)?;
                write!(self.out, " {} ", store_op_symbol(*op))?;
                self.expr(value)?;
            }
            StmtKind::AtomicAdd {
                tensor,
                index,
                value,
            } => {
                write!(self.out, "atomic_add {tensor}")?;
                self.slices(index)?;
                self.out.push_str(" += ");
                self.expr(value)?;
            }
            StmtKind::Prefetch { tensor, index } => {
                write!(self.out, "prefetch {tensor}")?;
                self.slices(index)?;
            }
            StmtKind::For {
                var,
                start,
                end,
                step,
                body,
            } => {
                self.out.push_str("for ");
                self.local_name(*var)?;
                let ty = self
                    .local(*var)
                    .map_or_else(|| "?".to_string(), |l| type_to_string(l.elem, &l.shape));
                write!(self.out, ": {ty} in range(")?;
                self.expr(start)?;
                self.out.push_str(", ");
                self.expr(end)?;
                self.out.push_str(", ");
                self.expr(step)?;
                self.out.push_str(") ");
                self.block(body, depth)?;
            }
            StmtKind::While { cond, body } => {
                self.out.push_str("while ");
                self.expr(cond)?;
                self.out.push(' ');
                self.block(body, depth)?;
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                self.out.push_str("if ");
                self.expr(cond)?;
                self.out.push(' ');
                self.block(then_body, depth)?;
                if !else_body.is_empty() {
                    self.out.push_str(" else ");
                    self.block(else_body, depth)?;
                }
            }
            StmtKind::Expr(e) => {
                self.out.push_str("eval ");
                self.expr(e)?;
            }
        }
        self.out.push('\n');
        Ok(())
    }

    fn slices(&mut self, index: &[Slice]) -> fmt::Result {
        self.out.push('[');
        for (i, s) in index.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            match s {
                Slice::Point(e) => {
                    self.out.push_str("point(");
                    self.expr(e)?;
                    self.out.push(')');
                }
                Slice::Span { start, len } => {
                    self.out.push_str("span(");
                    self.expr(start)?;
                    write!(self.out, ", {len})")?;
                }
                Slice::Full => self.out.push_str("full"),
            }
        }
        self.out.push(']');
        Ok(())
    }

    fn ty(&mut self, e: &Expr) {
        self.out.push(':');
        self.out.push_str(&type_to_string(e.elem, &e.shape));
    }

    fn call(&mut self, name: &str, args: &[&Expr], e: &Expr) -> fmt::Result {
        write!(self.out, "{name}(")?;
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.expr(a)?;
        }
        self.out.push(')');
        self.ty(e);
        Ok(())
    }

    fn expr(&mut self, e: &Expr) -> fmt::Result {
        match &e.kind {
            ExprKind::Int(v) => {
                write!(self.out, "{v}")?;
                self.ty(e);
            }
            ExprKind::Float(v) => {
                write!(self.out, "{v:?}")?;
                self.ty(e);
            }
            ExprKind::Bool(v) => {
                write!(self.out, "{v}")?;
                self.ty(e);
            }
            ExprKind::Local(id) => self.local_name(*id)?,
            ExprKind::Param(n) => write!(self.out, "param({n})")?,
            ExprKind::Dim(n) => write!(self.out, "dim({n})")?,
            ExprKind::Tune(n) => write!(self.out, "tune({n})")?,
            ExprKind::Load {
                tensor,
                index,
                other,
            } => {
                write!(self.out, "load({tensor}")?;
                self.slices(index)?;
                if let Some(o) = other {
                    self.out.push_str(", ");
                    self.expr(o)?;
                }
                self.out.push(')');
                self.ty(e);
            }
            ExprKind::Slice { base, index } => {
                self.out.push_str("slice(");
                self.expr(base)?;
                self.slices(index)?;
                self.out.push(')');
                self.ty(e);
            }
            ExprKind::Unary { op, arg } => self.call(unop_name(*op), &[arg], e)?,
            ExprKind::Binary { op, lhs, rhs } => self.call(op.name(), &[lhs, rhs], e)?,
            ExprKind::Cast(a) => self.call("cast", &[a], e)?,
            ExprKind::Broadcast(a) => self.call("broadcast", &[a], e)?,
            ExprKind::Call { func, args } => {
                let args: Vec<&Expr> = args.iter().collect();
                self.call(func.name(), &args, e)?;
            }
        }
        Ok(())
    }
}
