//! The typed tile IR: the contract between the front end and every back end
//! (host Rust code generation, MLIR/PTX, the cluster planner).
//!
//! # Shape of the IR
//!
//! A [`Module`] holds [`Kernel`]s. A kernel is a structured program (not SSA)
//! run once per point of its launch [`Kernel::grid`]:
//!
//! - [`Kernel::params`]: tensors in global memory ([`ParamKind::Tensor`],
//!   with element type, dims as symbolic names or literals, and whether the
//!   kernel writes it) and scalars ([`ParamKind::Scalar`]).
//! - [`Kernel::tune`]: compile-time integer parameters from `@autotune` and
//!   `@cluster`, each with its value list; the first value is the default.
//!   A [`Config`] binds every one of them; [`Kernel::configs`] enumerates the
//!   cartesian product, all of which the checker has validated.
//! - attributes: `grid` (1 to 3 `i32` expressions over dims, tune parameters
//!   and literals), `launch`, `pipeline`, `tensorcore`, `host_impl`.
//! - [`Kernel::locals`]: every local value (`let`, `var`, loop variable) with
//!   its element type and shape. [`LocalId`] indexes this table; names are
//!   unique within a kernel (the checker renames shadowed locals `x_1`,
//!   `x_2`, ...), so back ends may use them as identifiers.
//! - [`Kernel::body`]: a [`Block`] of [`Stmt`]s over [`Expr`]s.
//!
//! # Types
//!
//! Every [`Expr`] carries its element type ([`Expr::elem`], a scalar
//! [`DType`] or, only for tiles sliced from quantized tensors, a
//! [`QuantType`]) and its [`Shape`]. Rank 0 is a scalar. Shape dims are
//! [`ShapeExpr`]s over literals and tune parameters, so one IR serves every
//! config; [`ShapeExpr::eval`] gives the extent under a config. Tensor dims
//! (`M`, `N`, ...) never appear in shapes: they are runtime values.
//!
//! Grid values (`program_id`, `num_programs`), tensor dims and tune
//! parameters read as `i32` scalars. Back ends compute addresses in `i64`.
//!
//! # Conversions and broadcasting are explicit
//!
//! The checker turns every implicit conversion into an [`ExprKind::Cast`]
//! (target type = the cast's own `elem`), and every implicit broadcast that
//! must produce an exact shape (the value of a `let`/`var`/assignment/store,
//! `where` operands are not required to) into an [`ExprKind::Broadcast`]
//! (target = its own `shape`, NumPy rules: align trailing dims, extent-1
//! dims and missing leading dims stretch). Binary operands always share one
//! element type; their shapes may still differ by NumPy broadcasting and the
//! node records the broadcast result shape.
//!
//! # Slices and masking
//!
//! Tensors are read by [`ExprKind::Load`] and written by [`StmtKind::Store`]
//! and [`StmtKind::AtomicAdd`], each indexed by one [`Slice`] per tensor dim:
//! `Point(i)` (dim dropped from the result), `Span { start, len }` (runtime
//! start, compile-time length) or `Full` (only where the tensor dim is a
//! literal). Element `start + j` of a span is in bounds when
//! `0 <= start + j < extent`; a point index is in bounds when
//! `0 <= i < extent`. Out-of-bounds elements load as `other` (default 0)
//! and are skipped by stores and atomics. Local tiles are sliced by
//! [`ExprKind::Slice`] with the same slice forms and the same masking
//! (out-of-range elements read as 0); the checker rejects slices it can
//! prove out of range for some config.
//!
//! # Invariants
//!
//! [`verify()`] checks them; its module doc lists every one.
//!
//! # Text form
//!
//! [`print::module_to_string`] prints a module and [`parse::parse_module`]
//! reads it back; printing the re-parsed module gives the same text.

pub mod dtype;
pub mod parse;
pub mod print;
pub mod shape;
pub mod verify;
pub mod visit;

pub use dtype::{DType, Elem, QuantType};
pub use shape::{Config, Shape, ShapeEvalError, ShapeExpr, ShapeOp};
pub use verify::{VerifyError, verify};

use crate::span::Span;

/// A compilation unit: the kernels of one `.ph` file or one macro call.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Module {
    pub kernels: Vec<Kernel>,
}

/// One kernel; see the module doc.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    pub name: String,
    pub params: Vec<Param>,
    pub tune: Vec<TuneParam>,
    /// 1 to 3 `i32` scalar expressions (leaves: literals, [`ExprKind::Dim`],
    /// [`ExprKind::Tune`]). A kernel without `@grid` has grid `[1]`.
    pub grid: Vec<Expr>,
    pub launch: Option<Launch>,
    /// `@pipeline`: double-buffer the tiles a loop loads.
    pub pipeline: bool,
    /// `@tensorcore`: contractions on tensor cores, or a reported reason why not.
    pub tensorcore: bool,
    /// `@host_impl(name)`: a hand-written Rust function that the host
    /// backend's launch runs instead of the generated body (which stays
    /// reachable as `launch_generated`). Back ends other than the host one
    /// ignore it.
    pub host_impl: Option<String>,
    pub locals: Vec<Local>,
    pub body: Block,
    pub span: Span,
}

impl Kernel {
    /// The parameter called `name`.
    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }

    /// The local with id `id`.
    pub fn local(&self, id: LocalId) -> Option<&Local> {
        self.locals.get(id.0 as usize)
    }

    /// Symbolic tensor dims (`M`, `K`, ...) in order of first appearance.
    pub fn dims(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for p in &self.params {
            if let ParamKind::Tensor { dims, .. } = &p.kind {
                for d in dims {
                    if let Dim::Sym(name) = d
                        && !out.contains(&name.as_str())
                    {
                        out.push(name);
                    }
                }
            }
        }
        out
    }

    /// Every tune parameter at its first (default) value.
    pub fn default_config(&self) -> Config {
        Config {
            values: self
                .tune
                .iter()
                .map(|t| (t.name.clone(), t.values.first().copied().unwrap_or(0)))
                .collect(),
        }
    }

    /// The cartesian product of all tune parameters' values (autotune and
    /// cluster), the default config first. One config when there are none.
    pub fn configs(&self) -> Vec<Config> {
        Kernel::configs_of(&self.tune)
    }

    /// The configs the autotuner searches: the product of the `@autotune`
    /// parameters' values, with every `@cluster` parameter at its default.
    /// The default config first.
    pub fn autotune_configs(&self) -> Vec<Config> {
        let pinned: Vec<TuneParam> = self
            .tune
            .iter()
            .map(|t| match t.kind {
                TuneKind::Autotune => t.clone(),
                TuneKind::Cluster => TuneParam {
                    values: t.values.iter().take(1).copied().collect(),
                    ..t.clone()
                },
            })
            .collect();
        Kernel::configs_of(&pinned)
    }

    /// The cartesian product of the given tune parameters' values, in
    /// order (the last parameter varies fastest).
    pub fn configs_of(tune: &[TuneParam]) -> Vec<Config> {
        let mut out = vec![Config::default()];
        for t in tune {
            let mut next = Vec::with_capacity(out.len() * t.values.len());
            for c in &out {
                for v in &t.values {
                    let mut c = c.clone();
                    c.values.push((t.name.clone(), *v));
                    next.push(c);
                }
            }
            out = next;
        }
        out
    }
}

/// A kernel parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    pub kind: ParamKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ParamKind {
    /// A tensor in global memory, row-major unless the launcher passes strides.
    Tensor {
        elem: Elem,
        dims: Vec<Dim>,
        /// True when the body stores to it or `atomic_add`s into it.
        written: bool,
    },
    /// A scalar passed by value.
    Scalar { dtype: DType },
}

/// A tensor dim: a name bound at launch, or a literal extent.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    Sym(String),
    Lit(i64),
}

/// Where a tune parameter comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TuneKind {
    /// `@autotune`: searched by the autotuner.
    Autotune,
    /// `@cluster`: supertile sizes searched by the cluster planner.
    Cluster,
}

/// A compile-time integer parameter with the values it may take.
#[derive(Clone, Debug, PartialEq)]
pub struct TuneParam {
    pub name: String,
    pub kind: TuneKind,
    /// Non-empty, positive, distinct; `values[0]` is the default.
    pub values: Vec<i64>,
    pub span: Span,
}

/// `@launch(threads[, min_blocks[, max_regs]])`: CTA hints for PTX.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    pub threads: i64,
    pub min_blocks: Option<i64>,
    pub max_regs: Option<i64>,
}

/// Index into [`Kernel::locals`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocalId(pub u32);

/// A local value: `let` (immutable), `var` (mutable) or a loop variable.
#[derive(Clone, Debug, PartialEq)]
pub struct Local {
    /// Unique within the kernel.
    pub name: String,
    pub elem: Elem,
    pub shape: Shape,
    pub mutable: bool,
}

pub type Block = Vec<Stmt>;

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// Declares `local` (`let` or `var`, per [`Local::mutable`]) with its
    /// first value, whose elem and shape equal the local's exactly.
    Let { local: LocalId, value: Expr },
    /// Replaces a `var`'s whole value (elem and shape equal the local's).
    /// Compound assignments to locals (`acc += x`, `m max= x`) arrive here
    /// already expanded (`acc = acc + x`, `m = max(m, x)`).
    Assign { local: LocalId, value: Expr },
    /// Writes a tensor slice, masked at the tensor's extent. `value` has the
    /// tensor's elem and exactly the slice's shape. With a compound `op` the
    /// stored value is `old op value` (a masked read-modify-write).
    Store {
        tensor: String,
        index: Vec<Slice>,
        op: StoreOp,
        value: Expr,
    },
    /// Atomically adds `value` (tensor's elem, slice's shape) into a tensor
    /// slice, masked like a store.
    AtomicAdd {
        tensor: String,
        index: Vec<Slice>,
        value: Expr,
    },
    /// A hint that the kernel will soon read a tensor slice: no effect on
    /// any result, masked at the tensor's extent like a load. The host back
    /// end spreads the slice's cache-line prefetches over the program's
    /// following elementwise loops; the PTX back end emits nothing for it.
    Prefetch { tensor: String, index: Vec<Slice> },
    /// `for var in range(start, end, step)`: `var` takes `start`,
    /// `start + step`, ... while `< end` (`> end` for a negative step). All
    /// four share one integer dtype and are scalars.
    For {
        var: LocalId,
        start: Expr,
        end: Expr,
        step: Expr,
        body: Block,
    },
    /// Runs `body` while the `bool` scalar `cond` holds.
    While { cond: Expr, body: Block },
    /// `else_body` is empty when there is no `else`.
    If {
        cond: Expr,
        then_body: Block,
        else_body: Block,
    },
    /// An expression evaluated for its effect (or not at all).
    Expr(Expr),
}

/// How a [`StmtKind::Store`] combines the stored value with the old one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StoreOp {
    /// `=`: replace.
    Assign,
    Add,
    Sub,
    Mul,
    Div,
    Max,
}

/// One dim of a slice.
#[derive(Clone, Debug, PartialEq)]
pub enum Slice {
    /// A single index (integer scalar); the dim is dropped from the result.
    Point(Expr),
    /// `len` elements from `start` (integer scalar, may be runtime).
    Span { start: Expr, len: ShapeExpr },
    /// The whole dim; its extent must be compile-time.
    Full,
}

/// A typed expression; see the module doc.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    /// Element type of the value.
    pub elem: Elem,
    /// Shape of the value; rank 0 for scalars.
    pub shape: Shape,
    pub span: Span,
}

impl Expr {
    /// The scalar dtype of the value; a quantized tile reads as `f32` (what
    /// `dequant` produces).
    pub fn dtype(&self) -> DType {
        self.elem.scalar().unwrap_or(DType::F32)
    }

    pub fn is_scalar(&self) -> bool {
        self.shape.is_scalar()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// An integer literal of the node's dtype.
    Int(i64),
    /// A float literal of the node's dtype, held exactly as parsed; back
    /// ends round it to the dtype (to nearest, ties to even).
    Float(f64),
    Bool(bool),
    Local(LocalId),
    /// A scalar parameter.
    Param(String),
    /// A symbolic tensor dim, read as `i32`.
    Dim(String),
    /// A tune parameter, read as `i32`.
    Tune(String),
    /// A masked read of a tensor slice; `other` (a scalar of the tensor's
    /// elem) fills out-of-bounds elements, 0 when absent.
    Load {
        tensor: String,
        index: Vec<Slice>,
        other: Option<Box<Expr>>,
    },
    /// A sub-tile of a tile value (one slice per dim of `base`).
    Slice {
        base: Box<Expr>,
        index: Vec<Slice>,
    },
    Unary {
        op: UnOp,
        arg: Box<Expr>,
    },
    /// Operands share one elem; shapes broadcast to this node's shape.
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// Converts to this node's elem: float to int rounds toward zero and
    /// saturates at the int's range (NaN gives 0), as Rust's `as` and PTX's
    /// `cvt.rzi` do; to `bool` tests `!= 0`; from `bool` gives 0 or 1;
    /// between floats rounds to nearest even.
    Cast(Box<Expr>),
    /// Stretches to this node's shape (NumPy rules).
    Broadcast(Box<Expr>),
    Call {
        func: Builtin,
        args: Vec<Expr>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// `-x` on numbers.
    Neg,
    /// `!x` on `bool`.
    Not,
    /// `~x` on integers.
    BitNot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    /// Integer division truncates toward zero.
    Div,
    /// Integer remainder takes the sign of the dividend; float is `fmod`.
    Rem,
    Shl,
    /// Arithmetic for signed, logical for unsigned.
    Shr,
    BitAnd,
    BitOr,
    BitXor,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// `&&` on `bool`.
    And,
    /// `||` on `bool`.
    Or,
}

impl BinOp {
    /// Every operator, for tables and tests.
    pub const ALL: [BinOp; 18] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::Rem,
        BinOp::Shl,
        BinOp::Shr,
        BinOp::BitAnd,
        BinOp::BitOr,
        BinOp::BitXor,
        BinOp::Eq,
        BinOp::Ne,
        BinOp::Lt,
        BinOp::Le,
        BinOp::Gt,
        BinOp::Ge,
        BinOp::And,
        BinOp::Or,
    ];

    /// How the operator is written in kernel source, e.g. `<<`.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }

    /// The operator's name in the IR text, which is also the host tile
    /// library's function for it, e.g. `shl`.
    pub fn name(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Mul => "mul",
            BinOp::Div => "div",
            BinOp::Rem => "rem",
            BinOp::Shl => "shl",
            BinOp::Shr => "shr",
            BinOp::BitAnd => "bitand",
            BinOp::BitOr => "bitor",
            BinOp::BitXor => "bitxor",
            BinOp::Eq => "eq",
            BinOp::Ne => "ne",
            BinOp::Lt => "lt",
            BinOp::Le => "le",
            BinOp::Gt => "gt",
            BinOp::Ge => "ge",
            BinOp::And => "and",
            BinOp::Or => "or",
        }
    }

    /// Comparisons produce `bool`.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }
}

/// The element type and shape of `qlevels(q)` / `qscales(q)` for a tile of
/// `quant` of `shape`, or `None` when `func` is neither or the format has no
/// block access.
pub fn block_access_result(
    func: Builtin,
    quant: QuantType,
    shape: &Shape,
) -> Option<(Elem, Shape)> {
    if !quant.has_block_access() || shape.rank() == 0 {
        return None;
    }
    match func {
        Builtin::QLevels => Some((Elem::Scalar(DType::I8), shape.clone())),
        Builtin::QScales => {
            let mut dims = shape.0.clone();
            let last = dims.pop()?;
            dims.push(ShapeExpr::bin(
                ShapeOp::Div,
                last,
                ShapeExpr::Lit(quant.block_len()),
            ));
            Some((Elem::Scalar(DType::F32), Shape(dims)))
        }
        _ => None,
    }
}

/// Built-in functions. Argument and result rules are in SPEC.md; the
/// checker guarantees them and [`verify()`] re-checks them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// `program_id(axis)`: args `[Int axis]` (0..=2); `i32` scalar.
    ProgramId,
    /// `num_programs(axis)`: args `[Int axis]`; `i32` scalar.
    NumPrograms,
    /// `cdiv(a, b)`: integer ceiling division, same dtype.
    Cdiv,
    /// `arange(n)`: no args; the node's shape `[n]` carries `n`; `i32`.
    Arange,
    /// `dot(a [M,K], b [K,N]) -> [M,N]`.
    Dot,
    /// `dot_t(a [M,K], b [N,K]) -> [M,N]`.
    DotT,
    /// `dequant(q)`: quantized tile to `f32`, same shape.
    Dequant,
    /// `qlevels(q)`: a quantized tile's integer levels as `i8`, same shape.
    QLevels,
    /// `qscales(q)`: each block's scale `d` as `f32`; the last dim divided
    /// by the block length.
    QScales,
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Tanh,
    Sigmoid,
    Silu,
    Gelu,
    Sin,
    Cos,
    Abs,
    Floor,
    Round,
    /// Elementwise `min(a, b)`.
    Min,
    /// Elementwise `max(a, b)`.
    Max,
    /// `where(cond, a, b)`: `cond` is `bool`; `a`, `b` share the node's elem.
    Where,
    /// Sum over the last dim, which becomes 1.
    RowSum,
    RowMax,
    RowMin,
    /// Sum of the whole tile: a scalar.
    ReduceSum,
    ReduceMax,
    ReduceMin,
    /// Swaps the two dims of a rank-2 tile.
    Transpose,
    /// Same elements, the node's shape (same element count).
    Reshape,
    /// Inclusive prefix sum down the first dim.
    Cumsum,
    /// Keeps elements with column <= row of a rank-2 tile; others become 0.
    Tril,
}

impl Builtin {
    /// Every built-in, for name lookups.
    pub const ALL: [Builtin; 35] = [
        Builtin::ProgramId,
        Builtin::NumPrograms,
        Builtin::Cdiv,
        Builtin::Arange,
        Builtin::Dot,
        Builtin::DotT,
        Builtin::Dequant,
        Builtin::QLevels,
        Builtin::QScales,
        Builtin::Exp,
        Builtin::Log,
        Builtin::Sqrt,
        Builtin::Rsqrt,
        Builtin::Tanh,
        Builtin::Sigmoid,
        Builtin::Silu,
        Builtin::Gelu,
        Builtin::Sin,
        Builtin::Cos,
        Builtin::Abs,
        Builtin::Floor,
        Builtin::Round,
        Builtin::Min,
        Builtin::Max,
        Builtin::Where,
        Builtin::RowSum,
        Builtin::RowMax,
        Builtin::RowMin,
        Builtin::ReduceSum,
        Builtin::ReduceMax,
        Builtin::ReduceMin,
        Builtin::Transpose,
        Builtin::Reshape,
        Builtin::Cumsum,
        Builtin::Tril,
    ];

    /// The name in the IR text. Equal to the source name except the
    /// whole-tile reductions (`sum`, `max`, `min` with one argument in the
    /// source) which print as `reduce_sum`, `reduce_max`, `reduce_min`.
    pub fn name(self) -> &'static str {
        match self {
            Builtin::ProgramId => "program_id",
            Builtin::NumPrograms => "num_programs",
            Builtin::Cdiv => "cdiv",
            Builtin::Arange => "arange",
            Builtin::Dot => "dot",
            Builtin::DotT => "dot_t",
            Builtin::Dequant => "dequant",
            Builtin::QLevels => "qlevels",
            Builtin::QScales => "qscales",
            Builtin::Exp => "exp",
            Builtin::Log => "log",
            Builtin::Sqrt => "sqrt",
            Builtin::Rsqrt => "rsqrt",
            Builtin::Tanh => "tanh",
            Builtin::Sigmoid => "sigmoid",
            Builtin::Silu => "silu",
            Builtin::Gelu => "gelu",
            Builtin::Sin => "sin",
            Builtin::Cos => "cos",
            Builtin::Abs => "abs",
            Builtin::Floor => "floor",
            Builtin::Round => "round",
            Builtin::Min => "min",
            Builtin::Max => "max",
            Builtin::Where => "where",
            Builtin::RowSum => "rowsum",
            Builtin::RowMax => "rowmax",
            Builtin::RowMin => "rowmin",
            Builtin::ReduceSum => "reduce_sum",
            Builtin::ReduceMax => "reduce_max",
            Builtin::ReduceMin => "reduce_min",
            Builtin::Transpose => "transpose",
            Builtin::Reshape => "reshape",
            Builtin::Cumsum => "cumsum",
            Builtin::Tril => "tril",
        }
    }

    /// Parses an IR-text name.
    pub fn from_name(name: &str) -> Option<Builtin> {
        Builtin::ALL.into_iter().find(|b| b.name() == name)
    }

    /// Elementwise functions of one float argument (int arguments are cast
    /// to `f32` by the checker).
    pub fn is_float_unary(self) -> bool {
        matches!(
            self,
            Builtin::Exp
                | Builtin::Log
                | Builtin::Sqrt
                | Builtin::Rsqrt
                | Builtin::Tanh
                | Builtin::Sigmoid
                | Builtin::Silu
                | Builtin::Gelu
                | Builtin::Sin
                | Builtin::Cos
                | Builtin::Floor
                | Builtin::Round
        )
    }
}
