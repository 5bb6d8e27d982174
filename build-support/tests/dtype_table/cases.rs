//! SPEC.md's typing rules for every operator and built-in, restated here
//! from the SPEC text (§6, §9, §10) and independently of the checker: this
//! is the oracle the checker, the host back end and the PTX back end are
//! held to. Each [`Op`] says, for every tuple of operand dtypes, whether
//! SPEC allows it and which type the result has.

use phobos_build::ir::DType::{self, *};

/// Every scalar dtype but `bool`.
pub const NUMBERS: [DType; 11] = [I8, U8, I16, U16, I32, U32, I64, F16, Bf16, F32, F64];

/// SPEC.md §6, two strong operands: same type unchanged; `bool` yields to
/// the other; float with float the wider (`f16` with `bf16`: `f32`); int
/// with float the float; int with int the wider, and at the same width the
/// unsigned one.
pub fn promote(a: DType, b: DType) -> DType {
    let width = |d: DType| match d {
        Bool | I8 | U8 => 8,
        I16 | U16 | F16 | Bf16 => 16,
        I32 | U32 | F32 => 32,
        I64 | F64 => 64,
    };
    let float = |d: DType| matches!(d, F16 | Bf16 | F32 | F64);
    let unsigned = |d: DType| matches!(d, U8 | U16 | U32);
    match (a, b) {
        _ if a == b => a,
        (Bool, x) | (x, Bool) => x,
        (F16, Bf16) | (Bf16, F16) => F32,
        _ if float(a) != float(b) => {
            if float(a) {
                a
            } else {
                b
            }
        }
        _ if width(a) != width(b) => {
            if width(a) > width(b) {
                a
            } else {
                b
            }
        }
        _ if unsigned(a) => a,
        _ => b,
    }
}

fn is_int(d: DType) -> bool {
    matches!(d, I8 | U8 | I16 | U16 | I32 | U32 | I64)
}

fn is_float(d: DType) -> bool {
    matches!(d, F16 | Bf16 | F32 | F64)
}

/// What an allowed combination computes: the operands are converted to
/// `compute` (the promoted type) and the value has type `result`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Typing {
    pub compute: DType,
    pub result: DType,
}

fn same(d: DType) -> Option<Typing> {
    Some(Typing {
        compute: d,
        result: d,
    })
}

/// Where the operands come from and what shape the value has; each form is
/// rendered to kernel text by `render`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `x OP y`, elementwise, tile and scalar forms.
    Binary(&'static str),
    /// `OP x`.
    Unary(&'static str),
    /// `f(x)`, elementwise.
    Call1(&'static str),
    /// `f(x, y)`, elementwise.
    Call2(&'static str),
    /// `where(c, x, y)` with a `bool` `c`.
    Where,
    /// `T(x)`.
    Cast(DType),
    /// `f(p)` over a `[4, 4]` tile, to `[4, 1]`.
    RowReduce(&'static str),
    /// `f(p)` over a `[4, 4]` tile, to a scalar.
    Reduce(&'static str),
    /// `f(p)`: `[4, 4]` to `[4, 4]` (`cumsum`, `transpose`, `tril`).
    Layout(&'static str),
    /// `reshape(p, 2, 8)`.
    Reshape,
    /// `f(p, q)`: `[4, 4]` x `[4, 4]` (`dot`, `dot_t`).
    Contract(&'static str),
    /// `load(x[2 :+ 4], y[0])`: half the span is out of bounds.
    Load,
    /// `atomic_add(o[..], x)` (a statement; the first dtype is the tensor's).
    AtomicAdd,
    /// `program_id(0)`, `num_programs(0)`, `arange(4)`: no operands.
    Nullary(&'static str),
}

impl Form {
    /// Elementwise forms are also checked on rank-0 operands, which the host
    /// back end generates differently from tiles.
    pub fn elementwise(self) -> bool {
        matches!(
            self,
            Form::Binary(_)
                | Form::Unary(_)
                | Form::Call1(_)
                | Form::Call2(_)
                | Form::Where
                | Form::Cast(_)
        )
    }
}

/// One operator or built-in of SPEC.md.
#[derive(Clone, Copy)]
pub struct Op {
    /// Rust-identifier name of its kernel and test (`add`, `cast_f16`).
    pub name: &'static str,
    /// The name SPEC.md's tables give it (`+`, `rowsum`, `f16`).
    pub spelling: &'static str,
    pub form: Form,
    /// How many operand dtypes a combination has.
    pub arity: usize,
    /// `None`: SPEC forbids the combination (a checker error with a span).
    pub rule: fn(&[DType]) -> Option<Typing>,
}

impl Op {
    /// Every dtype tuple of this op's arity.
    pub fn tuples(&self) -> Vec<Vec<DType>> {
        let mut out = vec![vec![]];
        for _ in 0..self.arity {
            out = out
                .into_iter()
                .flat_map(|t| {
                    DType::ALL.into_iter().map(move |d| {
                        let mut t = t.clone();
                        t.push(d);
                        t
                    })
                })
                .collect();
        }
        out
    }

    /// The combinations SPEC allows, with their typing.
    pub fn allowed(&self) -> Vec<(Vec<DType>, Typing)> {
        self.tuples()
            .into_iter()
            .filter_map(|t| (self.rule)(&t).map(|ty| (t, ty)))
            .collect()
    }

    /// The combinations SPEC forbids.
    pub fn forbidden(&self) -> Vec<Vec<DType>> {
        self.tuples()
            .into_iter()
            .filter(|t| (self.rule)(t).is_none())
            .collect()
    }
}

fn arith(t: &[DType]) -> Option<Typing> {
    (t[0] != Bool && t[1] != Bool).then(|| same(promote(t[0], t[1])))?
}

fn ints2(t: &[DType]) -> Option<Typing> {
    (is_int(t[0]) && is_int(t[1])).then(|| same(promote(t[0], t[1])))?
}

fn bitwise(t: &[DType]) -> Option<Typing> {
    let ok = (t[0] == Bool && t[1] == Bool) || (is_int(t[0]) && is_int(t[1]));
    ok.then(|| same(promote(t[0], t[1])))?
}

fn logical(t: &[DType]) -> Option<Typing> {
    (t[0] == Bool && t[1] == Bool).then(|| same(Bool))?
}

fn compare(t: &[DType]) -> Option<Typing> {
    Some(Typing {
        compute: promote(t[0], t[1]),
        result: Bool,
    })
}

fn neg(t: &[DType]) -> Option<Typing> {
    (t[0] != Bool).then(|| same(t[0]))?
}

fn not(t: &[DType]) -> Option<Typing> {
    (t[0] == Bool).then(|| same(Bool))?
}

fn bitnot(t: &[DType]) -> Option<Typing> {
    is_int(t[0]).then(|| same(t[0]))?
}

/// §10: one number; integers become `f32` first.
fn float_fn(t: &[DType]) -> Option<Typing> {
    (t[0] != Bool).then(|| same(if is_float(t[0]) { t[0] } else { F32 }))?
}

fn any_keep(t: &[DType]) -> Option<Typing> {
    same(t[0])
}

fn where_(t: &[DType]) -> Option<Typing> {
    same(promote(t[0], t[1]))
}

/// §10: `sum`, `rowsum`, `cumsum` of `bool`, 8- and 16-bit integers give
/// `i32`; other types keep theirs.
fn sum_like(t: &[DType]) -> Option<Typing> {
    same(match t[0] {
        Bool | I8 | U8 | I16 | U16 => I32,
        d => d,
    })
}

/// §10: operands promoted; `f16 bf16 f32 -> f32`, `f64 -> f64`, 8- and
/// 16-bit integers `-> i32`, `i32 u32 i64` keep their type; `bool` refused.
fn contract(t: &[DType]) -> Option<Typing> {
    if t[0] == Bool || t[1] == Bool {
        return None;
    }
    // u8 x i8 is the mixed-sign (VNNI/dp4a) dot: both widen to i32.
    let compute = match (t[0], t[1]) {
        (U8, I8) | (I8, U8) => I32,
        _ => promote(t[0], t[1]),
    };
    let result = match compute {
        F16 | Bf16 | F32 => F32,
        I8 | U8 | I16 | U16 => I32,
        d => d,
    };
    Some(Typing { compute, result })
}

/// §8: `other` is a scalar converted to the tensor's type.
fn load(t: &[DType]) -> Option<Typing> {
    same(t[0])
}

/// §9: the tensor holds numbers; the value converts to its type.
fn atomic_add(t: &[DType]) -> Option<Typing> {
    (t[0] != Bool).then(|| same(t[0]))?
}

fn index(_: &[DType]) -> Option<Typing> {
    same(I32)
}

macro_rules! casts {
    ($($name:ident $d:ident),*) => {
        [$(Op {
            name: concat!("cast_", stringify!($name)),
            spelling: stringify!($name),
            form: Form::Cast($d),
            arity: 1,
            rule: |t: &[DType]| Some(Typing { compute: t[0], result: $d }),
        }),*]
    };
}

/// Every operator and built-in of SPEC.md §6 and §10, except the
/// quantized-operand built-ins `dequant`, `qlevels` and `qscales`
/// (quantized operands have their own test in `main.rs`).
pub fn ops() -> Vec<Op> {
    let op = |name, spelling, form, arity, rule| Op {
        name,
        spelling,
        form,
        arity,
        rule,
    };
    let mut v = vec![
        op(
            "add",
            "+",
            Form::Binary("+"),
            2,
            arith as fn(&[DType]) -> Option<Typing>,
        ),
        op("sub", "-", Form::Binary("-"), 2, arith),
        op("mul", "*", Form::Binary("*"), 2, arith),
        op("div", "/", Form::Binary("/"), 2, arith),
        op("rem", "%", Form::Binary("%"), 2, arith),
        op("shl", "<<", Form::Binary("<<"), 2, ints2),
        op("shr", ">>", Form::Binary(">>"), 2, ints2),
        op("bitand", "&", Form::Binary("&"), 2, bitwise),
        op("bitor", "|", Form::Binary("|"), 2, bitwise),
        op("bitxor", "^", Form::Binary("^"), 2, bitwise),
        op("and", "&&", Form::Binary("&&"), 2, logical),
        op("or", "||", Form::Binary("||"), 2, logical),
        op("eq", "==", Form::Binary("=="), 2, compare),
        op("ne", "!=", Form::Binary("!="), 2, compare),
        op("lt", "<", Form::Binary("<"), 2, compare),
        op("le", "<=", Form::Binary("<="), 2, compare),
        op("gt", ">", Form::Binary(">"), 2, compare),
        op("ge", ">=", Form::Binary(">="), 2, compare),
        op("neg", "-x", Form::Unary("-"), 1, neg),
        op("not", "!x", Form::Unary("!"), 1, not),
        op("bitnot", "~x", Form::Unary("~"), 1, bitnot),
        op(
            "program_id",
            "program_id",
            Form::Nullary("program_id(0)"),
            0,
            index,
        ),
        op(
            "num_programs",
            "num_programs",
            Form::Nullary("num_programs(0)"),
            0,
            index,
        ),
        op("arange", "arange", Form::Nullary("arange(4)"), 0, index),
        op("cdiv", "cdiv", Form::Call2("cdiv"), 2, ints2),
        op("load", "load", Form::Load, 2, load),
        op("dot", "dot", Form::Contract("dot"), 2, contract),
        op("dot_t", "dot_t", Form::Contract("dot_t"), 2, contract),
    ];
    for f in [
        "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "silu", "gelu", "sin", "cos", "floor",
        "round",
    ] {
        v.push(op(f, f, Form::Call1(f), 1, float_fn));
    }
    v.extend([
        op("abs", "abs", Form::Call1("abs"), 1, neg),
        op("min2", "min", Form::Call2("min"), 2, arith),
        op("max2", "max", Form::Call2("max"), 2, arith),
        op("where_", "where", Form::Where, 2, where_),
        op("rowsum", "rowsum", Form::RowReduce("rowsum"), 1, sum_like),
        op("rowmax", "rowmax", Form::RowReduce("rowmax"), 1, any_keep),
        op("rowmin", "rowmin", Form::RowReduce("rowmin"), 1, any_keep),
        op("sum", "sum", Form::Reduce("sum"), 1, sum_like),
        op("max1", "max", Form::Reduce("max"), 1, any_keep),
        op("min1", "min", Form::Reduce("min"), 1, any_keep),
        op(
            "transpose",
            "transpose",
            Form::Layout("transpose"),
            1,
            any_keep,
        ),
        op("reshape", "reshape", Form::Reshape, 1, any_keep),
        op("cumsum", "cumsum", Form::Layout("cumsum"), 1, sum_like),
        op("tril", "tril", Form::Layout("tril"), 1, any_keep),
        op("atomic_add", "atomic_add", Form::AtomicAdd, 2, atomic_add),
    ]);
    v.extend(casts!(
        bool Bool, i8 I8, u8 U8, i16 I16, u16 U16, i32 I32, u32 U32, i64 I64, f16 F16,
        bf16 Bf16, f32 F32, f64 F64
    ));
    v
}

/// PTX back-end cases that the MLIR emitter does not lower yet, with the
/// reason. Their kernels are built for the host only (`cfg(not(feature =
/// "ptx"))` in the root test) and `pending_ptx_cases_are_still_refused`
/// fails the day one compiles, so that its entry here is deleted and the
/// root test regenerated.
pub fn ptx_pending(op: &Op, typing: Typing) -> Option<&'static str> {
    match op.name {
        // PENDING: f64 math needs libdevice (or exact implementations).
        "exp" | "log" | "tanh" | "sigmoid" | "silu" | "gelu" | "sin" | "cos"
            if typing.compute == F64 =>
        {
            Some("f64 transcendental functions")
        }
        _ => None,
    }
}
