//! Evaluates a kernel's `@grid` rule as embedded in its artifact (text such
//! as `cdiv(M, TILE_M)`) for concrete dims and one variant's config, so a
//! launcher outside Rust gets the grid of every variant.
//!
//! The language allows literals, dims, tune parameters, `+ - * / %` and
//! `cdiv`/`min`/`max` in grid entries; arithmetic is on integers, `/`
//! truncates.

/// Why a grid entry could not be evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GridError {
    #[error("grid entry `{expr}`: {message}")]
    Syntax { expr: String, message: String },
    #[error("grid entry `{expr}` names `{name}`, which is neither a dim nor a tune parameter")]
    Unknown { expr: String, name: String },
    #[error("grid entry `{expr}` divides by zero or overflows")]
    Arithmetic { expr: String },
}

/// The value of `expr`, with every name looked up in `lookup`.
pub fn eval_grid_entry(expr: &str, lookup: impl Fn(&str) -> Option<i64>) -> Result<i64, GridError> {
    let tokens = tokenize(expr)?;
    let mut parser = Parser {
        expr,
        tokens: &tokens,
        at: 0,
        lookup: &lookup,
    };
    let value = parser.sum()?;
    if parser.at != tokens.len() {
        return Err(parser.syntax("unexpected text after the expression"));
    }
    Ok(value)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Number(i64),
    Name(String),
    Punct(char),
}

fn tokenize(expr: &str) -> Result<Vec<Token>, GridError> {
    let mut tokens = Vec::new();
    let mut chars = expr.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c.is_ascii_digit() || c.is_alphabetic() || c == '_' {
            let mut end = start;
            while let Some(&(i, d)) = chars.peek() {
                if !(d.is_alphanumeric() || d == '_') {
                    break;
                }
                end = i + d.len_utf8();
                chars.next();
            }
            let word = &expr[start..end];
            tokens.push(if c.is_ascii_digit() {
                Token::Number(word.parse().map_err(|_| GridError::Syntax {
                    expr: expr.to_string(),
                    message: format!("`{word}` is not an integer"),
                })?)
            } else {
                Token::Name(word.to_string())
            });
        } else if "+-*/%(),".contains(c) {
            tokens.push(Token::Punct(c));
            chars.next();
        } else {
            return Err(GridError::Syntax {
                expr: expr.to_string(),
                message: format!("unexpected `{c}`"),
            });
        }
    }
    Ok(tokens)
}

struct Parser<'a, F> {
    expr: &'a str,
    tokens: &'a [Token],
    at: usize,
    lookup: &'a F,
}

impl<F: Fn(&str) -> Option<i64>> Parser<'_, F> {
    fn syntax(&self, message: &str) -> GridError {
        GridError::Syntax {
            expr: self.expr.to_string(),
            message: message.to_string(),
        }
    }

    fn arithmetic(&self) -> GridError {
        GridError::Arithmetic {
            expr: self.expr.to_string(),
        }
    }

    fn eat(&mut self, punct: char) -> bool {
        let found = self.tokens.get(self.at) == Some(&Token::Punct(punct));
        if found {
            self.at += 1;
        }
        found
    }

    fn expect(&mut self, punct: char) -> Result<(), GridError> {
        if self.eat(punct) {
            Ok(())
        } else {
            Err(self.syntax(&format!("expected `{punct}`")))
        }
    }

    fn sum(&mut self) -> Result<i64, GridError> {
        let mut value = self.product()?;
        loop {
            let combined = if self.eat('+') {
                value.checked_add(self.product()?)
            } else if self.eat('-') {
                value.checked_sub(self.product()?)
            } else {
                return Ok(value);
            };
            value = combined.ok_or_else(|| self.arithmetic())?;
        }
    }

    fn product(&mut self) -> Result<i64, GridError> {
        let mut value = self.atom()?;
        loop {
            let combined = if self.eat('*') {
                value.checked_mul(self.atom()?)
            } else if self.eat('/') {
                value.checked_div(self.atom()?)
            } else if self.eat('%') {
                value.checked_rem(self.atom()?)
            } else {
                return Ok(value);
            };
            value = combined.ok_or_else(|| self.arithmetic())?;
        }
    }

    fn atom(&mut self) -> Result<i64, GridError> {
        let token = self
            .tokens
            .get(self.at)
            .cloned()
            .ok_or_else(|| self.syntax("the expression ends early"))?;
        self.at += 1;
        match token {
            Token::Number(value) => Ok(value),
            Token::Punct('(') => {
                let value = self.sum()?;
                self.expect(')')?;
                Ok(value)
            }
            Token::Punct('-') => self.atom()?.checked_neg().ok_or_else(|| self.arithmetic()),
            Token::Name(name) if self.eat('(') => {
                let a = self.sum()?;
                self.expect(',')?;
                let b = self.sum()?;
                self.expect(')')?;
                match name.as_str() {
                    "cdiv" if b > 0 && a >= 0 => a.checked_add(b - 1).map(|s| s / b),
                    "cdiv" => None,
                    "min" => Some(a.min(b)),
                    "max" => Some(a.max(b)),
                    _ => return Err(self.syntax(&format!("unknown function `{name}`"))),
                }
                .ok_or_else(|| self.arithmetic())
            }
            Token::Name(name) => (self.lookup)(&name).ok_or_else(|| GridError::Unknown {
                expr: self.expr.to_string(),
                name,
            }),
            Token::Punct(c) => Err(self.syntax(&format!("unexpected `{c}`"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{GridError, eval_grid_entry};

    fn values(name: &str) -> Option<i64> {
        match name {
            "M" => Some(333),
            "TILE_M" => Some(32),
            "H" => Some(3),
            _ => None,
        }
    }

    #[test]
    fn evaluates_the_grid_language() {
        assert_eq!(eval_grid_entry("cdiv(M, TILE_M)", values), Ok(11));
        assert_eq!(eval_grid_entry("H", values), Ok(3));
        assert_eq!(eval_grid_entry("2 + H * 4 - 1", values), Ok(13));
        assert_eq!(eval_grid_entry("(2 + H) * 4", values), Ok(20));
        assert_eq!(eval_grid_entry("M / TILE_M % 4", values), Ok(2));
        assert_eq!(eval_grid_entry("max(min(M, 7), cdiv(H, 2))", values), Ok(7));
    }

    #[test]
    fn reports_unknown_names_bad_text_and_division_by_zero() {
        assert!(matches!(
            eval_grid_entry("cdiv(M, BLOCK)", values),
            Err(GridError::Unknown { name, .. }) if name == "BLOCK"
        ));
        assert!(matches!(
            eval_grid_entry("M +", values),
            Err(GridError::Syntax { .. })
        ));
        assert!(matches!(
            eval_grid_entry("M $ 2", values),
            Err(GridError::Syntax { .. })
        ));
        assert!(matches!(
            eval_grid_entry("M H", values),
            Err(GridError::Syntax { .. })
        ));
        assert!(matches!(
            eval_grid_entry("cdiv(M, 0)", values),
            Err(GridError::Arithmetic { .. })
        ));
        assert!(matches!(
            eval_grid_entry("M / 0", values),
            Err(GridError::Arithmetic { .. })
        ));
    }
}
