//! Reads the IR text form printed by [`super::print`] (see there for the
//! syntax). Spans of the result are [`Span::DUMMY`]. Line ends are
//! whitespace: every statement starts with its own keyword or a `%local`.

use std::collections::HashMap;

use super::{
    BinOp, Block, Builtin, DType, Dim, Elem, Expr, ExprKind, Kernel, Launch, Local, LocalId,
    Module, Param, ParamKind, Shape, ShapeExpr, ShapeOp, Slice, Stmt, StmtKind, StoreOp, TuneKind,
    TuneParam, UnOp,
};
use crate::span::Span;

/// A syntax error in IR text, with its 1-based line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("IR text line {line}: {message}")]
pub struct IrParseError {
    pub line: usize,
    pub message: String,
}

/// Parses the text form of a module.
pub fn parse_module(text: &str) -> Result<Module, IrParseError> {
    let tokens = tokenize(text)?;
    let mut p = Parser {
        tokens,
        pos: 0,
        locals: Vec::new(),
        by_name: HashMap::new(),
    };
    let mut kernels = Vec::new();
    while !p.at_end() {
        let mut k = p.kernel()?;
        fix_param_types(&mut k);
        kernels.push(k);
    }
    Ok(Module { kernels })
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Word(String),
    Local(String),
    Int(i64),
    Float(f64),
    Punct(&'static str),
}

const PUNCTS: [&str; 16] = [
    "max=", "+=", "-=", "*=", "/=", "(", ")", "[", "]", "{", "}", ",", ":", "=", "<", ">",
];
const SHAPE_OPS: [&str; 5] = ["+", "-", "*", "/", "%"];

fn tokenize(text: &str) -> Result<Vec<(Tok, usize)>, IrParseError> {
    let mut out = Vec::new();
    let mut line = 1;
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let word_char = |c: char| c.is_ascii_alphanumeric() || c == '_';
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
            continue;
        }
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let number_start = c.is_ascii_digit()
            || (c == '-'
                && chars
                    .get(i + 1)
                    .is_some_and(|n| n.is_ascii_digit() || *n == 'i'));
        if number_start {
            i += 1;
            while i < chars.len()
                && (word_char(chars[i])
                    || chars[i] == '.'
                    || ((chars[i] == '-' || chars[i] == '+') && matches!(chars[i - 1], 'e' | 'E')))
            {
                i += 1;
            }
            let s: String = chars[start..i].iter().collect();
            let tok = if let Ok(v) = s.parse::<i64>() {
                Tok::Int(v)
            } else if let Ok(v) = s.parse::<f64>() {
                Tok::Float(v)
            } else {
                return Err(IrParseError {
                    line,
                    message: format!("bad number `{s}`"),
                });
            };
            out.push((tok, line));
            continue;
        }
        // `%name` is a local; `%` before a space is the remainder operator.
        if c == '%'
            && chars
                .get(i + 1)
                .is_some_and(|n| n.is_ascii_alphabetic() || *n == '_')
        {
            i += 1;
            while i < chars.len() && word_char(chars[i]) {
                i += 1;
            }
            out.push((Tok::Local(chars[start + 1..i].iter().collect()), line));
            continue;
        }
        if word_char(c) {
            while i < chars.len() && word_char(chars[i]) {
                i += 1;
            }
            let w: String = chars[start..i].iter().collect();
            // `max=` is one token (a store op); `max(` is the built-in.
            if w == "max" && chars.get(i) == Some(&'=') {
                i += 1;
                out.push((Tok::Punct("max="), line));
            } else {
                match w.as_str() {
                    "inf" => out.push((Tok::Float(f64::INFINITY), line)),
                    "NaN" => out.push((Tok::Float(f64::NAN), line)),
                    _ => out.push((Tok::Word(w), line)),
                }
            }
            continue;
        }
        let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
        if let Some(p) = PUNCTS
            .iter()
            .chain(SHAPE_OPS.iter())
            .find(|p| rest.starts_with(*p))
        {
            i += p.chars().count();
            out.push((Tok::Punct(p), line));
            continue;
        }
        return Err(IrParseError {
            line,
            message: format!("unexpected character `{c}`"),
        });
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<(Tok, usize)>,
    pos: usize,
    locals: Vec<Local>,
    by_name: HashMap<String, LocalId>,
}

type PResult<T> = Result<T, IrParseError>;

fn dummy(kind: ExprKind, elem: Elem, shape: Shape) -> Expr {
    Expr {
        kind,
        elem,
        shape,
        span: Span::DUMMY,
    }
}

fn i32_leaf(kind: ExprKind) -> Expr {
    dummy(kind, Elem::Scalar(DType::I32), Shape::scalar())
}

impl Parser {
    fn at_end(&self) -> bool {
        self.pos >= self.tokens.len()
    }

    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos).map(|(t, _)| t)
    }

    fn line(&self) -> usize {
        self.tokens
            .get(self.pos)
            .or_else(|| self.tokens.last())
            .map_or(1, |(_, l)| *l)
    }

    fn err<T>(&self, message: impl Into<String>) -> PResult<T> {
        Err(IrParseError {
            line: self.line(),
            message: message.into(),
        })
    }

    fn next(&mut self) -> PResult<Tok> {
        match self.tokens.get(self.pos) {
            Some((t, _)) => {
                self.pos += 1;
                Ok(t.clone())
            }
            None => self.err("unexpected end of IR text"),
        }
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(q)) if *q == p)
    }

    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Tok::Word(q)) if q == w)
    }

    fn punct(&mut self, p: &str) -> PResult<()> {
        if self.is_punct(p) {
            self.pos += 1;
            Ok(())
        } else {
            let found = format!("{:?}", self.peek());
            self.err(format!("expected `{p}`, found {found}"))
        }
    }

    fn eat_punct(&mut self, p: &str) -> bool {
        let yes = self.is_punct(p);
        if yes {
            self.pos += 1;
        }
        yes
    }

    fn keyword(&mut self, w: &str) -> PResult<()> {
        if self.is_word(w) {
            self.pos += 1;
            Ok(())
        } else {
            let found = format!("{:?}", self.peek());
            self.err(format!("expected `{w}`, found {found}"))
        }
    }

    fn word(&mut self) -> PResult<String> {
        match self.next()? {
            Tok::Word(w) => Ok(w),
            other => self.err(format!("expected a name, found {other:?}")),
        }
    }

    fn int(&mut self) -> PResult<i64> {
        match self.next()? {
            Tok::Int(v) => Ok(v),
            other => self.err(format!("expected an integer, found {other:?}")),
        }
    }

    fn kernel(&mut self) -> PResult<Kernel> {
        self.keyword("kernel")?;
        let name = self.word()?;
        self.punct("{")?;
        self.locals.clear();
        self.by_name.clear();
        let mut k = Kernel {
            name,
            params: Vec::new(),
            tune: Vec::new(),
            grid: Vec::new(),
            launch: None,
            pipeline: false,
            tensorcore: false,
            host_impl: None,
            locals: Vec::new(),
            body: Vec::new(),
            span: Span::DUMMY,
        };
        loop {
            let head = self.word()?;
            match head.as_str() {
                "param" => k.params.push(self.param()?),
                "tune" => {
                    let name = self.word()?;
                    let kind = match self.word()?.as_str() {
                        "autotune" => TuneKind::Autotune,
                        "cluster" => TuneKind::Cluster,
                        other => {
                            return self
                                .err(format!("expected autotune or cluster, found `{other}`"));
                        }
                    };
                    self.punct("[")?;
                    let mut values = vec![self.int()?];
                    while self.eat_punct(",") {
                        values.push(self.int()?);
                    }
                    self.punct("]")?;
                    k.tune.push(TuneParam {
                        name,
                        kind,
                        values,
                        span: Span::DUMMY,
                    });
                }
                "grid" => {
                    self.punct("[")?;
                    k.grid.push(self.expr()?);
                    while self.eat_punct(",") {
                        k.grid.push(self.expr()?);
                    }
                    self.punct("]")?;
                }
                "launch" => {
                    let threads = self.int()?;
                    let min_blocks = self.opt_int()?;
                    let max_regs = self.opt_int()?;
                    k.launch = Some(Launch {
                        threads,
                        min_blocks,
                        max_regs,
                    });
                }
                "pipeline" => k.pipeline = true,
                "tensorcore" => k.tensorcore = true,
                "host_impl" => k.host_impl = Some(self.word()?),
                "body" => {
                    k.body = self.block()?;
                    self.punct("}")?;
                    k.locals = std::mem::take(&mut self.locals);
                    return Ok(k);
                }
                other => return self.err(format!("unknown kernel header `{other}`")),
            }
        }
    }

    fn opt_int(&mut self) -> PResult<Option<i64>> {
        if self.is_word("_") {
            self.pos += 1;
            return Ok(None);
        }
        Ok(Some(self.int()?))
    }

    fn param(&mut self) -> PResult<Param> {
        let name = self.word()?;
        self.punct(":")?;
        let head = self.word()?;
        let kind = if head == "tensor" {
            self.punct("<")?;
            let elem_name = self.word()?;
            let Some(elem) = Elem::from_name(&elem_name) else {
                return self.err(format!("unknown element type `{elem_name}`"));
            };
            self.punct(">")?;
            self.punct("[")?;
            let mut dims = vec![self.dim()?];
            while self.eat_punct(",") {
                dims.push(self.dim()?);
            }
            self.punct("]")?;
            let written = self.is_word("written");
            if written {
                self.pos += 1;
            }
            ParamKind::Tensor {
                elem,
                dims,
                written,
            }
        } else {
            let Some(dtype) = DType::from_name(&head) else {
                return self.err(format!("unknown scalar type `{head}`"));
            };
            ParamKind::Scalar { dtype }
        };
        Ok(Param {
            name,
            kind,
            span: Span::DUMMY,
        })
    }

    fn dim(&mut self) -> PResult<Dim> {
        match self.next()? {
            Tok::Word(w) => Ok(Dim::Sym(w)),
            Tok::Int(v) => Ok(Dim::Lit(v)),
            other => self.err(format!("expected a tensor dim, found {other:?}")),
        }
    }

    fn ty(&mut self) -> PResult<(Elem, Shape)> {
        let name = self.word()?;
        let Some(elem) = Elem::from_name(&name) else {
            return self.err(format!("unknown element type `{name}`"));
        };
        let mut dims = Vec::new();
        if self.eat_punct("[") {
            if !self.is_punct("]") {
                dims.push(self.shape_expr(0)?);
                while self.eat_punct(",") {
                    dims.push(self.shape_expr(0)?);
                }
            }
            self.punct("]")?;
        }
        Ok((elem, Shape(dims)))
    }

    fn shape_expr(&mut self, min_prec: u8) -> PResult<ShapeExpr> {
        let mut lhs = self.shape_primary()?;
        loop {
            let (op, prec) = match self.peek() {
                Some(Tok::Punct("+")) => (ShapeOp::Add, 1),
                Some(Tok::Punct("-")) => (ShapeOp::Sub, 1),
                Some(Tok::Punct("*")) => (ShapeOp::Mul, 2),
                Some(Tok::Punct("/")) => (ShapeOp::Div, 2),
                Some(Tok::Punct("%")) => (ShapeOp::Rem, 2),
                _ => return Ok(lhs),
            };
            if prec < min_prec {
                return Ok(lhs);
            }
            self.pos += 1;
            let rhs = self.shape_expr(prec + 1)?;
            // No folding: the text must come back exactly as printed.
            lhs = ShapeExpr::Bin(op, Box::new(lhs), Box::new(rhs));
        }
    }

    fn shape_primary(&mut self) -> PResult<ShapeExpr> {
        match self.next()? {
            Tok::Int(v) => Ok(ShapeExpr::Lit(v)),
            Tok::Punct("(") => {
                let e = self.shape_expr(0)?;
                self.punct(")")?;
                Ok(e)
            }
            Tok::Word(w) if matches!(w.as_str(), "cdiv" | "min" | "max") && self.is_punct("(") => {
                let op = match w.as_str() {
                    "cdiv" => ShapeOp::Cdiv,
                    "min" => ShapeOp::Min,
                    _ => ShapeOp::Max,
                };
                self.punct("(")?;
                let a = self.shape_expr(0)?;
                self.punct(",")?;
                let b = self.shape_expr(0)?;
                self.punct(")")?;
                Ok(ShapeExpr::Bin(op, Box::new(a), Box::new(b)))
            }
            Tok::Word(w) => Ok(ShapeExpr::Tune(w)),
            other => self.err(format!("expected a shape expression, found {other:?}")),
        }
    }

    fn block(&mut self) -> PResult<Block> {
        self.punct("{")?;
        let mut out = Vec::new();
        while !self.eat_punct("}") {
            out.push(self.stmt()?);
        }
        Ok(out)
    }

    fn declare(
        &mut self,
        name: String,
        elem: Elem,
        shape: Shape,
        mutable: bool,
    ) -> PResult<LocalId> {
        if self.by_name.contains_key(&name) {
            return self.err(format!("local `%{name}` is declared twice"));
        }
        let id = LocalId(self.locals.len() as u32);
        self.locals.push(Local {
            name: name.clone(),
            elem,
            shape,
            mutable,
        });
        self.by_name.insert(name, id);
        Ok(id)
    }

    fn local_ref(&self, name: &str) -> PResult<LocalId> {
        match self.by_name.get(name) {
            Some(id) => Ok(*id),
            None => self.err(format!("local `%{name}` is used before its declaration")),
        }
    }

    fn stmt(&mut self) -> PResult<Stmt> {
        let kind = match self.next()? {
            Tok::Word(w) if w == "let" || w == "var" => {
                let Tok::Local(name) = self.next()? else {
                    return self.err("expected a `%local` after let/var");
                };
                self.punct(":")?;
                let (elem, shape) = self.ty()?;
                self.punct("=")?;
                let value = self.expr()?;
                let local = self.declare(name, elem, shape, w == "var")?;
                StmtKind::Let { local, value }
            }
            Tok::Local(name) => {
                let local = self.local_ref(&name)?;
                self.punct("=")?;
                StmtKind::Assign {
                    local,
                    value: self.expr()?,
                }
            }
            Tok::Word(w) if w == "store" => {
                let tensor = self.word()?;
                let index = self.slices()?;
                let op = match self.next()? {
                    Tok::Punct("=") => StoreOp::Assign,
                    Tok::Punct("+=") => StoreOp::Add,
                    Tok::Punct("-=") => StoreOp::Sub,
                    Tok::Punct("*=") => StoreOp::Mul,
                    Tok::Punct("/=") => StoreOp::Div,
                    Tok::Punct("max=") => StoreOp::Max,
                    other => {
                        return self.err(format!("expected a store operator, found {other:?}"));
                    }
                };
                StmtKind::Store {
                    tensor,
                    index,
                    op,
                    value: self.expr()?,
                }
            }
            Tok::Word(w) if w == "atomic_add" => {
                let tensor = self.word()?;
                let index = self.slices()?;
                self.punct("+=")?;
                StmtKind::AtomicAdd {
                    tensor,
                    index,
                    value: self.expr()?,
                }
            }
            Tok::Word(w) if w == "prefetch" => {
                let tensor = self.word()?;
                let index = self.slices()?;
                StmtKind::Prefetch { tensor, index }
            }
            Tok::Word(w) if w == "for" => {
                let Tok::Local(name) = self.next()? else {
                    return self.err("expected a `%local` after for");
                };
                self.punct(":")?;
                let (elem, shape) = self.ty()?;
                self.keyword("in")?;
                self.keyword("range")?;
                self.punct("(")?;
                let start = self.expr()?;
                self.punct(",")?;
                let end = self.expr()?;
                self.punct(",")?;
                let step = self.expr()?;
                self.punct(")")?;
                let var = self.declare(name, elem, shape, false)?;
                StmtKind::For {
                    var,
                    start,
                    end,
                    step,
                    body: self.block()?,
                }
            }
            Tok::Word(w) if w == "while" => {
                let cond = self.expr()?;
                StmtKind::While {
                    cond,
                    body: self.block()?,
                }
            }
            Tok::Word(w) if w == "if" => {
                let cond = self.expr()?;
                let then_body = self.block()?;
                let else_body = if self.is_word("else") {
                    self.pos += 1;
                    self.block()?
                } else {
                    Vec::new()
                };
                StmtKind::If {
                    cond,
                    then_body,
                    else_body,
                }
            }
            Tok::Word(w) if w == "eval" => StmtKind::Expr(self.expr()?),
            other => return self.err(format!("expected a statement, found {other:?}")),
        };
        Ok(Stmt {
            kind,
            span: Span::DUMMY,
        })
    }

    fn slices(&mut self) -> PResult<Vec<Slice>> {
        self.punct("[")?;
        let mut out = vec![self.slice()?];
        while self.eat_punct(",") {
            out.push(self.slice()?);
        }
        self.punct("]")?;
        Ok(out)
    }

    fn slice(&mut self) -> PResult<Slice> {
        match self.word()?.as_str() {
            "full" => Ok(Slice::Full),
            "point" => {
                self.punct("(")?;
                let e = self.expr()?;
                self.punct(")")?;
                Ok(Slice::Point(e))
            }
            "span" => {
                self.punct("(")?;
                let start = self.expr()?;
                self.punct(",")?;
                let len = self.shape_expr(0)?;
                self.punct(")")?;
                Ok(Slice::Span { start, len })
            }
            other => self.err(format!("expected point, span or full, found `{other}`")),
        }
    }

    fn typed(&mut self, kind: ExprKind) -> PResult<Expr> {
        self.punct(":")?;
        let (elem, shape) = self.ty()?;
        Ok(dummy(kind, elem, shape))
    }

    fn args(&mut self) -> PResult<Vec<Expr>> {
        self.punct("(")?;
        let mut out = Vec::new();
        if !self.is_punct(")") {
            out.push(self.expr()?);
            while self.eat_punct(",") {
                out.push(self.expr()?);
            }
        }
        self.punct(")")?;
        Ok(out)
    }

    fn named_leaf(&mut self) -> PResult<String> {
        self.punct("(")?;
        let n = self.word()?;
        self.punct(")")?;
        Ok(n)
    }

    fn expr(&mut self) -> PResult<Expr> {
        match self.next()? {
            Tok::Int(v) => self.typed(ExprKind::Int(v)),
            Tok::Float(v) => self.typed(ExprKind::Float(v)),
            Tok::Local(name) => {
                let id = self.local_ref(&name)?;
                let l = &self.locals[id.0 as usize];
                Ok(dummy(ExprKind::Local(id), l.elem, l.shape.clone()))
            }
            Tok::Word(w) => match w.as_str() {
                "true" | "false" => self.typed(ExprKind::Bool(w == "true")),
                "param" => {
                    let n = self.named_leaf()?;
                    // The param's dtype is not known here; the caller
                    // (kernel) fixes it in `fix_params`.
                    Ok(dummy(
                        ExprKind::Param(n),
                        Elem::Scalar(DType::F32),
                        Shape::scalar(),
                    ))
                }
                "dim" => Ok(i32_leaf(ExprKind::Dim(self.named_leaf()?))),
                "tune" => Ok(i32_leaf(ExprKind::Tune(self.named_leaf()?))),
                "load" => {
                    self.punct("(")?;
                    let tensor = self.word()?;
                    let index = self.slices()?;
                    let other = if self.eat_punct(",") {
                        Some(Box::new(self.expr()?))
                    } else {
                        None
                    };
                    self.punct(")")?;
                    self.typed(ExprKind::Load {
                        tensor,
                        index,
                        other,
                    })
                }
                "slice" => {
                    self.punct("(")?;
                    let base = Box::new(self.expr()?);
                    let index = self.slices()?;
                    self.punct(")")?;
                    self.typed(ExprKind::Slice { base, index })
                }
                name => {
                    let args = self.args()?;
                    let kind = self.op_kind(name, args)?;
                    self.typed(kind)
                }
            },
            other => self.err(format!("expected an expression, found {other:?}")),
        }
    }

    fn op_kind(&self, name: &str, mut args: Vec<Expr>) -> PResult<ExprKind> {
        let arity = |n: usize| {
            if args.len() == n {
                Ok(())
            } else {
                self.err(format!("`{name}` takes {n} operands, found {}", args.len()))
            }
        };
        if let Some(op) = unop(name) {
            arity(1)?;
            return Ok(ExprKind::Unary {
                op,
                arg: Box::new(args.remove(0)),
            });
        }
        if let Some(op) = binop(name) {
            arity(2)?;
            let rhs = Box::new(args.remove(1));
            return Ok(ExprKind::Binary {
                op,
                lhs: Box::new(args.remove(0)),
                rhs,
            });
        }
        match name {
            "cast" => {
                arity(1)?;
                Ok(ExprKind::Cast(Box::new(args.remove(0))))
            }
            "broadcast" => {
                arity(1)?;
                Ok(ExprKind::Broadcast(Box::new(args.remove(0))))
            }
            _ => match Builtin::from_name(name) {
                Some(func) => Ok(ExprKind::Call { func, args }),
                None => self.err(format!("unknown operation `{name}`")),
            },
        }
    }
}

fn unop(name: &str) -> Option<UnOp> {
    [UnOp::Neg, UnOp::Not, UnOp::BitNot]
        .into_iter()
        .find(|op| super::print::unop_name(*op) == name)
}

fn binop(name: &str) -> Option<BinOp> {
    BinOp::ALL.into_iter().find(|op| op.name() == name)
}

/// Gives `param(x)` leaves their parameter's dtype (the text does not
/// repeat it). Called once per kernel after parsing.
fn fix_param_types(kernel: &mut Kernel) {
    let dtypes: HashMap<String, DType> = kernel
        .params
        .iter()
        .filter_map(|p| match p.kind {
            ParamKind::Scalar { dtype } => Some((p.name.clone(), dtype)),
            ParamKind::Tensor { .. } => None,
        })
        .collect();
    let fix = &mut |e: &mut Expr| {
        if let ExprKind::Param(n) = &e.kind
            && let Some(d) = dtypes.get(n)
        {
            e.elem = Elem::Scalar(*d);
        }
    };
    super::visit::exprs_mut(&mut kernel.body, fix);
    for g in &mut kernel.grid {
        super::visit::expr_mut(g, fix);
    }
}
