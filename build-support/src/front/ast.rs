//! The syntax tree, as parsed: names unresolved, types unchecked. Every
//! node carries the [`Span`] of its source text.

use crate::span::Span;

#[derive(Clone, Debug, PartialEq, Default)]
pub struct Program {
    pub kernels: Vec<Kernel>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    pub attrs: Vec<Attribute>,
    pub name: Ident,
    pub params: Vec<Param>,
    pub body: Block,
    pub span: Span,
}

/// `@name` or `@name(args)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Attribute {
    pub name: Ident,
    /// `None` without parentheses.
    pub args: Option<Vec<AttrArg>>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum AttrArg {
    /// `X in [a, b, ...]`.
    Values {
        name: Ident,
        values: Vec<Literal>,
        span: Span,
    },
    /// `name = literal`.
    Named {
        name: Ident,
        value: Literal,
        span: Span,
    },
    Expr(Expr),
}

/// A possibly negated number or a bool in an attribute.
#[derive(Clone, Debug, PartialEq)]
pub struct Literal {
    pub kind: LiteralKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum LiteralKind {
    Int(i64),
    Float(f64),
    Bool(bool),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: Ident,
    pub ty: Type,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Type {
    pub kind: TypeKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TypeKind {
    /// A scalar type name such as `f32` (checked later).
    Scalar(Ident),
    /// `tensor<elem>[dims]`.
    Tensor { elem: Ident, dims: Vec<Expr> },
    /// `tile<elem>[dims]`.
    Tile { elem: Ident, dims: Vec<Expr> },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AssignOp {
    Assign,
    Add,
    Sub,
    Mul,
    Div,
    Max,
}

impl AssignOp {
    pub fn spelling(self) -> &'static str {
        match self {
            AssignOp::Assign => "=",
            AssignOp::Add => "+=",
            AssignOp::Sub => "-=",
            AssignOp::Mul => "*=",
            AssignOp::Div => "/=",
            AssignOp::Max => "max=",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// `let` (`mutable == false`) or `var`.
    Let {
        mutable: bool,
        name: Ident,
        ty: Option<Type>,
        value: Expr,
    },
    Assign {
        target: Ident,
        index: Option<Vec<Subscript>>,
        op: AssignOp,
        value: Expr,
    },
    For {
        var: Ident,
        start: Expr,
        end: Expr,
        step: Option<Expr>,
        body: Block,
    },
    While {
        cond: Expr,
        body: Block,
    },
    If {
        cond: Expr,
        then_body: Block,
        /// `else { }` or `else if` (as a block holding one `If`).
        else_body: Option<Block>,
    },
    Expr(Expr),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Not,
    BitNot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Or,
    And,
    BitOr,
    BitXor,
    BitAnd,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Shl,
    Shr,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl BinaryOp {
    pub fn spelling(self) -> &'static str {
        match self {
            BinaryOp::Or => "||",
            BinaryOp::And => "&&",
            BinaryOp::BitOr => "|",
            BinaryOp::BitXor => "^",
            BinaryOp::BitAnd => "&",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::Shl => "<<",
            BinaryOp::Shr => ">>",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Int(i64),
    Float(f64),
    Bool(bool),
    Name(String),
    Unary {
        op: UnaryOp,
        arg: Box<Expr>,
    },
    Binary {
        op: BinaryOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    Call {
        callee: Box<Expr>,
        args: Vec<Expr>,
    },
    Index {
        base: Box<Expr>,
        subs: Vec<Subscript>,
    },
    /// `( expr )`, kept so spans and printing stay faithful.
    Paren(Box<Expr>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Subscript {
    pub kind: SubscriptKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SubscriptKind {
    /// `:`
    Full,
    /// `i`
    Point(Expr),
    /// `a : b`, half-open.
    Range(Expr, Expr),
    /// `a :+ n`
    Span(Expr, Expr),
    /// `a:` or `:b`: parsed so the checker can say why it is an error.
    OpenRange(Option<Expr>, Option<Expr>),
}
