//! Dtype promotion (with Triton-style weak literals), implicit conversion
//! and NumPy broadcasting over symbolic shapes.

use crate::diag::Diagnostic;
use crate::ir::{Config, DType, Elem, Expr, ExprKind, Shape, ShapeExpr};
use crate::span::Span;

/// How strongly an expression holds its dtype. A number literal (and
/// arithmetic on literals only) is weak: it adopts the other operand's type
/// of the same kind (int literal -> that int type; float literal -> that
/// float type; int literal with a float -> the float).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weak {
    No,
    Int,
    Float,
}

/// A checked expression and its literal weakness.
#[derive(Clone, Debug)]
pub struct Typed {
    pub expr: Expr,
    pub weak: Weak,
}

impl Typed {
    pub fn strong(expr: Expr) -> Typed {
        Typed {
            expr,
            weak: Weak::No,
        }
    }

    pub fn dtype(&self) -> Option<DType> {
        self.expr.elem.scalar()
    }

    pub fn shape(&self) -> &Shape {
        &self.expr.shape
    }

    pub fn span(&self) -> Span {
        self.expr.span
    }
}

/// The common dtype of two strong dtypes: same -> same; bool yields to the
/// other; floats widen (f16 with bf16 -> f32); int with float -> the float;
/// ints widen, and at equal width mixed signedness -> unsigned.
pub fn promote_strong(a: DType, b: DType) -> DType {
    use DType::*;
    if a == b {
        return a;
    }
    match (a, b) {
        (Bool, x) | (x, Bool) => x,
        (F64, _) | (_, F64) => F64,
        (F16, Bf16) | (Bf16, F16) => F32,
        _ if a.is_float() && b.is_float() => {
            if a.bits() >= b.bits() {
                a
            } else {
                b
            }
        }
        _ if a.is_float() => a,
        _ if b.is_float() => b,
        _ if a.bits() != b.bits() => {
            if a.bits() > b.bits() {
                a
            } else {
                b
            }
        }
        _ if a.is_unsigned_int() => a,
        _ => b,
    }
}

/// The common dtype of two operands, honouring weak literals, and whether
/// the result is itself weak.
pub fn promote(a: DType, wa: Weak, b: DType, wb: Weak) -> (DType, Weak) {
    match (wa, wb) {
        (Weak::No, Weak::No) => (promote_strong(a, b), Weak::No),
        (Weak::No, w) => (adopt(a, w), Weak::No),
        (w, Weak::No) => (adopt(b, w), Weak::No),
        (Weak::Int, Weak::Int) => (DType::I32, Weak::Int),
        _ => (DType::F32, Weak::Float),
    }
}

/// The dtype a weak literal of kind `w` takes next to a strong `strong`.
fn adopt(strong: DType, w: Weak) -> DType {
    match w {
        Weak::Int if strong == DType::Bool => DType::I32,
        Weak::Float if !strong.is_float() => DType::F32,
        _ => strong,
    }
}

/// Converts `t` to `to`: literals are re-typed in place, anything else is
/// wrapped in an explicit `Cast`.
pub fn convert(t: Typed, to: DType) -> Expr {
    let e = t.expr;
    if e.elem == Elem::Scalar(to) {
        return e;
    }
    let kind = match (&e.kind, to.is_float(), to == DType::Bool) {
        (ExprKind::Int(v), true, _) => Some(ExprKind::Float(*v as f64)),
        (ExprKind::Int(v), false, false) => Some(ExprKind::Int(*v)),
        (ExprKind::Float(v), true, _) => Some(ExprKind::Float(*v)),
        _ => None,
    };
    match kind {
        Some(kind) => Expr {
            kind,
            elem: Elem::Scalar(to),
            ..e
        },
        None => Expr {
            elem: Elem::Scalar(to),
            shape: e.shape.clone(),
            span: e.span,
            kind: ExprKind::Cast(Box::new(e)),
        },
    }
}

/// Whether a value of `from` may become `to` without a written cast in a
/// `let`/`var` declaration or assignment: the same type, a weak literal, or
/// a widening (the promotion of both is `to`).
pub fn implicitly_converts(from: DType, weak: Weak, to: DType) -> bool {
    from == to || promote(from, weak, to, Weak::No).0 == to
}

/// Broadcasting over the configs of one kernel.
pub struct Shapes<'a> {
    pub configs: &'a [Config],
}

impl Shapes<'_> {
    /// Whether two dims have the same extent under every config.
    pub fn same_dim(&self, a: &ShapeExpr, b: &ShapeExpr) -> bool {
        a == b
            || self
                .configs
                .iter()
                .all(|c| matches!((a.try_eval(c), b.try_eval(c)), (Ok(x), Ok(y)) if x == y))
    }

    fn is_one(&self, d: &ShapeExpr) -> bool {
        self.same_dim(d, &ShapeExpr::Lit(1))
    }

    /// Whether the shapes are equal under every config.
    pub fn same(&self, a: &Shape, b: &Shape) -> bool {
        a.rank() == b.rank() && a.0.iter().zip(&b.0).all(|(x, y)| self.same_dim(x, y))
    }

    /// The NumPy broadcast of two shapes, or `None` when some pair of dims
    /// is neither equal nor 1 in every config.
    pub fn broadcast(&self, a: &Shape, b: &Shape) -> Option<Shape> {
        let rank = a.rank().max(b.rank());
        let mut out = Vec::with_capacity(rank);
        for i in 0..rank {
            let da = (i + a.rank()).checked_sub(rank).map(|j| &a.0[j]);
            let db = (i + b.rank()).checked_sub(rank).map(|j| &b.0[j]);
            let d = match (da, db) {
                (Some(x), None) | (None, Some(x)) => x.clone(),
                (Some(x), Some(y)) if self.same_dim(x, y) => x.clone(),
                (Some(x), Some(y)) if self.is_one(x) => y.clone(),
                (Some(x), Some(y)) if self.is_one(y) => x.clone(),
                _ => return None,
            };
            out.push(d);
        }
        Some(Shape(out))
    }

    /// Whether `from` broadcasts to exactly `to`.
    pub fn broadcasts_to(&self, from: &Shape, to: &Shape) -> bool {
        from.rank() <= to.rank() && self.broadcast(from, to).is_some_and(|s| self.same(&s, to))
    }

    /// A config under which two shapes differ, for error notes.
    pub fn witness(&self, a: &Shape, b: &Shape) -> Option<&Config> {
        self.configs.iter().find(|c| a.eval(c) != b.eval(c))
    }
}

/// Stretches `e` to `to` with an explicit `Broadcast` (unless already equal).
pub fn broadcast_to(shapes: &Shapes, e: Expr, to: &Shape, what: &str) -> Result<Expr, Diagnostic> {
    if shapes.same(&e.shape, to) {
        // Keep the target's spelling so equal shapes print alike.
        return Ok(Expr {
            shape: to.clone(),
            ..e
        });
    }
    if !shapes.broadcasts_to(&e.shape, to) {
        return Err(Diagnostic::error(
            e.span,
            format!(
                "shape mismatch in {what}: the value has shape {} but {to} is expected",
                e.shape
            ),
        )
        .with_help("broadcasting stretches dims of extent 1 and adds leading dims"));
    }
    Ok(Expr {
        elem: e.elem,
        shape: to.clone(),
        span: e.span,
        kind: ExprKind::Broadcast(Box::new(e)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::*;

    #[test]
    fn strong_promotion_follows_the_language() {
        assert_eq!(promote_strong(F16, F32), F32);
        assert_eq!(promote_strong(F16, Bf16), F32);
        assert_eq!(promote_strong(I32, F16), F16);
        assert_eq!(promote_strong(I8, I32), I32);
        assert_eq!(promote_strong(I32, U32), U32);
        assert_eq!(promote_strong(Bool, I8), I8);
        assert_eq!(promote_strong(F32, F64), F64);
    }

    #[test]
    fn weak_literals_adopt_the_other_type() {
        assert_eq!(promote(F16, Weak::No, F32, Weak::Float), (F16, Weak::No));
        assert_eq!(promote(I32, Weak::Int, I8, Weak::No), (I8, Weak::No));
        assert_eq!(promote(I64, Weak::No, F32, Weak::Float), (F32, Weak::No));
        assert_eq!(promote(I32, Weak::Int, F16, Weak::No), (F16, Weak::No));
        assert_eq!(
            promote(I32, Weak::Int, F32, Weak::Float),
            (F32, Weak::Float)
        );
        assert_eq!(promote(I32, Weak::Int, I32, Weak::Int), (I32, Weak::Int));
    }

    #[test]
    fn broadcast_stretches_ones_and_adds_leading_dims() {
        let cfgs = vec![Config {
            values: vec![("T".into(), 4)],
        }];
        let s = Shapes { configs: &cfgs };
        let t = ShapeExpr::Tune("T".into());
        let col = Shape(vec![t.clone(), ShapeExpr::Lit(1)]);
        let row = Shape(vec![ShapeExpr::Lit(8)]);
        assert_eq!(
            s.broadcast(&col, &row),
            Some(Shape(vec![t.clone(), ShapeExpr::Lit(8)]))
        );
        assert_eq!(s.broadcast(&Shape(vec![ShapeExpr::Lit(3)]), &row), None);
        // T is 4 in every config, so it matches a literal 4.
        assert!(s.same(&Shape(vec![t]), &Shape(vec![ShapeExpr::Lit(4)])));
    }
}
