//! Symbolic tile shapes and the autotune configurations that fix them.
//!
//! A tile dim is a [`ShapeExpr`] over integer literals and tune parameters
//! (never over tensor dims, which are only known at launch), so one IR serves
//! every configuration and [`ShapeExpr::eval`] gives the extent for one.

use std::fmt;

/// One value for every tune parameter of a kernel (autotune and cluster),
/// in the order of [`super::Kernel::tune`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Config {
    pub values: Vec<(String, i64)>,
}

impl Config {
    /// The value of tune parameter `name`, if the config binds it.
    pub fn get(&self, name: &str) -> Option<i64> {
        self.values.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (name, value)) in self.values.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{name}={value}")?;
        }
        Ok(())
    }
}

/// Integer operators allowed in shape expressions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShapeOp {
    Add,
    Sub,
    Mul,
    /// Truncating division.
    Div,
    Rem,
    /// Ceiling division `(a + b - 1) / b` for positive operands.
    Cdiv,
    Min,
    Max,
}

impl ShapeOp {
    fn apply(self, a: i64, b: i64) -> Result<i64, ShapeEvalError> {
        let overflow = ShapeEvalError::Overflow;
        match self {
            ShapeOp::Add => a.checked_add(b).ok_or(overflow),
            ShapeOp::Sub => a.checked_sub(b).ok_or(overflow),
            ShapeOp::Mul => a.checked_mul(b).ok_or(overflow),
            ShapeOp::Div => a.checked_div(b).ok_or(ShapeEvalError::DivByZero),
            ShapeOp::Rem => a.checked_rem(b).ok_or(ShapeEvalError::DivByZero),
            ShapeOp::Cdiv => {
                if b == 0 {
                    return Err(ShapeEvalError::DivByZero);
                }
                let q = a / b;
                Ok(if (a % b != 0) && ((a < 0) == (b < 0)) {
                    q + 1
                } else {
                    q
                })
            }
            ShapeOp::Min => Ok(a.min(b)),
            ShapeOp::Max => Ok(a.max(b)),
        }
    }

    /// The spelling used by the IR text (`+`, `cdiv`, ...).
    pub fn symbol(self) -> &'static str {
        match self {
            ShapeOp::Add => "+",
            ShapeOp::Sub => "-",
            ShapeOp::Mul => "*",
            ShapeOp::Div => "/",
            ShapeOp::Rem => "%",
            ShapeOp::Cdiv => "cdiv",
            ShapeOp::Min => "min",
            ShapeOp::Max => "max",
        }
    }

    fn is_function(self) -> bool {
        matches!(self, ShapeOp::Cdiv | ShapeOp::Min | ShapeOp::Max)
    }

    fn precedence(self) -> u8 {
        match self {
            ShapeOp::Add | ShapeOp::Sub => 1,
            ShapeOp::Mul | ShapeOp::Div | ShapeOp::Rem => 2,
            ShapeOp::Cdiv | ShapeOp::Min | ShapeOp::Max => 3,
        }
    }
}

/// Why a shape expression has no value under a config.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShapeEvalError {
    #[error("tune parameter `{0}` is not bound by the config")]
    Unbound(String),
    #[error("division by zero")]
    DivByZero,
    #[error("integer overflow")]
    Overflow,
}

/// A compile-time integer: a literal, a tune parameter, or arithmetic on them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ShapeExpr {
    Lit(i64),
    /// A tune parameter (`@autotune` or `@cluster`), by name.
    Tune(String),
    Bin(ShapeOp, Box<ShapeExpr>, Box<ShapeExpr>),
}

impl ShapeExpr {
    /// Builds `op(a, b)`, folding literals and the identities `x*1`, `x+0`,
    /// `x/1`, so that equal shapes usually compare equal structurally.
    pub fn bin(op: ShapeOp, a: ShapeExpr, b: ShapeExpr) -> ShapeExpr {
        if let (ShapeExpr::Lit(x), ShapeExpr::Lit(y)) = (&a, &b)
            && let Ok(v) = op.apply(*x, *y)
        {
            return ShapeExpr::Lit(v);
        }
        match (op, &a, &b) {
            (ShapeOp::Mul, ShapeExpr::Lit(1), _) | (ShapeOp::Add, ShapeExpr::Lit(0), _) => b,
            (ShapeOp::Mul | ShapeOp::Div | ShapeOp::Cdiv, _, ShapeExpr::Lit(1))
            | (ShapeOp::Add | ShapeOp::Sub, _, ShapeExpr::Lit(0)) => a,
            _ => ShapeExpr::Bin(op, Box::new(a), Box::new(b)),
        }
    }

    /// The literal value, if this is a literal.
    pub fn as_lit(&self) -> Option<i64> {
        match self {
            ShapeExpr::Lit(v) => Some(*v),
            _ => None,
        }
    }

    /// The value under `config`, or why it has none.
    pub fn try_eval(&self, config: &Config) -> Result<i64, ShapeEvalError> {
        match self {
            ShapeExpr::Lit(v) => Ok(*v),
            ShapeExpr::Tune(name) => config
                .get(name)
                .ok_or_else(|| ShapeEvalError::Unbound(name.clone())),
            ShapeExpr::Bin(op, a, b) => op.apply(a.try_eval(config)?, b.try_eval(config)?),
        }
    }

    /// The value under `config`. Total so back ends need no error path: for
    /// a verified kernel and one of its own configs the checker has already
    /// proved [`ShapeExpr::try_eval`] succeeds; otherwise an unbound name,
    /// division by zero or overflow yields 0.
    pub fn eval(&self, config: &Config) -> i64 {
        self.try_eval(config).unwrap_or(0)
    }

    /// Tune parameters this expression mentions, in order of appearance.
    pub fn tune_params(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.collect_tune(&mut out);
        out
    }

    fn collect_tune<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            ShapeExpr::Lit(_) => {}
            ShapeExpr::Tune(n) => {
                if !out.contains(&n.as_str()) {
                    out.push(n);
                }
            }
            ShapeExpr::Bin(_, a, b) => {
                a.collect_tune(out);
                b.collect_tune(out);
            }
        }
    }

    fn fmt_prec(&self, f: &mut fmt::Formatter<'_>, outer: u8) -> fmt::Result {
        match self {
            ShapeExpr::Lit(v) => write!(f, "{v}"),
            ShapeExpr::Tune(n) => f.write_str(n),
            ShapeExpr::Bin(op, a, b) if op.is_function() => {
                write!(f, "{}(", op.symbol())?;
                a.fmt_prec(f, 0)?;
                f.write_str(", ")?;
                b.fmt_prec(f, 0)?;
                f.write_str(")")
            }
            ShapeExpr::Bin(op, a, b) => {
                let p = op.precedence();
                if p < outer {
                    f.write_str("(")?;
                }
                a.fmt_prec(f, p)?;
                write!(f, " {} ", op.symbol())?;
                // Left-associative: the right operand binds one level tighter.
                b.fmt_prec(f, p + 1)?;
                if p < outer {
                    f.write_str(")")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for ShapeExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_prec(f, 0)
    }
}

/// The shape of a value: one [`ShapeExpr`] per dim; rank 0 is a scalar.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Shape(pub Vec<ShapeExpr>);

impl Shape {
    /// The rank-0 shape of a scalar.
    pub fn scalar() -> Shape {
        Shape(Vec::new())
    }

    pub fn rank(&self) -> usize {
        self.0.len()
    }

    pub fn is_scalar(&self) -> bool {
        self.0.is_empty()
    }

    pub fn dims(&self) -> &[ShapeExpr] {
        &self.0
    }

    /// The extents under `config` (see [`ShapeExpr::eval`]).
    pub fn eval(&self, config: &Config) -> Vec<i64> {
        self.0.iter().map(|d| d.eval(config)).collect()
    }

    /// The extents under `config`, or the first dim's error.
    pub fn try_eval(&self, config: &Config) -> Result<Vec<i64>, ShapeEvalError> {
        self.0.iter().map(|d| d.try_eval(config)).collect()
    }

    /// Number of elements under `config`.
    pub fn num_elements(&self, config: &Config) -> i64 {
        self.eval(config).iter().product()
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(pairs: &[(&str, i64)]) -> Config {
        Config {
            values: pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn eval_follows_the_config() {
        let e = ShapeExpr::bin(
            ShapeOp::Mul,
            ShapeExpr::Lit(2),
            ShapeExpr::Tune("TILE_M".into()),
        );
        assert_eq!(e.eval(&cfg(&[("TILE_M", 64)])), 128);
        assert_eq!(e.eval(&cfg(&[("TILE_M", 16)])), 32);
        assert_eq!(
            e.try_eval(&cfg(&[])),
            Err(ShapeEvalError::Unbound("TILE_M".into()))
        );
    }

    #[test]
    fn literals_fold_and_identities_vanish() {
        let t = ShapeExpr::Tune("T".into());
        assert_eq!(
            ShapeExpr::bin(ShapeOp::Add, ShapeExpr::Lit(3), ShapeExpr::Lit(4)),
            ShapeExpr::Lit(7)
        );
        assert_eq!(
            ShapeExpr::bin(ShapeOp::Mul, ShapeExpr::Lit(1), t.clone()),
            t
        );
        assert_eq!(
            ShapeExpr::bin(ShapeOp::Div, t.clone(), ShapeExpr::Lit(1)),
            t
        );
    }

    #[test]
    fn cdiv_rounds_up() {
        assert_eq!(ShapeOp::Cdiv.apply(10, 4), Ok(3));
        assert_eq!(ShapeOp::Cdiv.apply(8, 4), Ok(2));
        assert_eq!(ShapeOp::Cdiv.apply(1, 0), Err(ShapeEvalError::DivByZero));
    }

    #[test]
    fn display_keeps_precedence() {
        let a = ShapeExpr::Tune("A".into());
        let b = ShapeExpr::Tune("B".into());
        let sum = ShapeExpr::bin(ShapeOp::Add, a.clone(), b.clone());
        let prod = ShapeExpr::bin(ShapeOp::Mul, sum.clone(), ShapeExpr::Lit(2));
        assert_eq!(prod.to_string(), "(A + B) * 2");
        let diff = ShapeExpr::bin(ShapeOp::Sub, a, sum);
        assert_eq!(diff.to_string(), "A - (A + B)");
    }
}
