//! The recursive-descent parser: tokens to [`super::ast::Program`].
//!
//! Operator precedence, loosest first (C's order, as LANGUAGE.md lists it):
//! `||`, `&&`, `|`, `^`, `&`, `== !=`, `< <= > >=`, `<< >>`, `+ -`,
//! `* / %`, then unary `- ! ~`, then postfix `[...]` and `(...)`. Binary
//! operators associate to the left.

use super::ast::*;
use super::token::{Token, TokenKind};
use crate::diag::Diagnostic;
use crate::span::Span;

type PResult<T> = Result<T, Diagnostic>;

/// Parses a whole program. Stops at the first syntax error.
pub fn parse_program(tokens: &[Token]) -> Result<Program, Vec<Diagnostic>> {
    let mut p = Parser { tokens, pos: 0 };
    p.program().map_err(|d| vec![d])
}

/// Parses a single expression (for tests and tools).
pub fn parse_expr(tokens: &[Token]) -> Result<Expr, Vec<Diagnostic>> {
    let mut p = Parser { tokens, pos: 0 };
    let run = |p: &mut Parser| -> PResult<Expr> {
        p.skip_newlines();
        let e = p.expr()?;
        p.skip_newlines();
        p.expect(&TokenKind::Eof, "the end of the expression")?;
        Ok(e)
    };
    run(&mut p).map_err(|d| vec![d])
}

struct Parser<'t> {
    tokens: &'t [Token],
    pos: usize,
}

const EOF_TOKEN: Token = Token {
    kind: TokenKind::Eof,
    span: Span::DUMMY,
};

fn binary_op(kind: &TokenKind) -> Option<(BinaryOp, u8)> {
    Some(match kind {
        TokenKind::OrOr => (BinaryOp::Or, 1),
        TokenKind::AndAnd => (BinaryOp::And, 2),
        TokenKind::Pipe => (BinaryOp::BitOr, 3),
        TokenKind::Caret => (BinaryOp::BitXor, 4),
        TokenKind::Amp => (BinaryOp::BitAnd, 5),
        TokenKind::EqEq => (BinaryOp::Eq, 6),
        TokenKind::Ne => (BinaryOp::Ne, 6),
        TokenKind::Lt => (BinaryOp::Lt, 7),
        TokenKind::Le => (BinaryOp::Le, 7),
        TokenKind::Gt => (BinaryOp::Gt, 7),
        TokenKind::Ge => (BinaryOp::Ge, 7),
        TokenKind::Shl => (BinaryOp::Shl, 8),
        TokenKind::Shr => (BinaryOp::Shr, 8),
        TokenKind::Plus => (BinaryOp::Add, 9),
        TokenKind::Minus => (BinaryOp::Sub, 9),
        TokenKind::Star => (BinaryOp::Mul, 10),
        TokenKind::Slash => (BinaryOp::Div, 10),
        TokenKind::Percent => (BinaryOp::Rem, 10),
        _ => return None,
    })
}

impl<'t> Parser<'t> {
    fn peek(&self) -> &'t Token {
        self.tokens.get(self.pos).unwrap_or(&EOF_TOKEN)
    }

    fn peek_at(&self, ahead: usize) -> &'t Token {
        self.tokens.get(self.pos + ahead).unwrap_or(&EOF_TOKEN)
    }

    fn at(&self, kind: &TokenKind) -> bool {
        &self.peek().kind == kind
    }

    fn bump(&mut self) -> &'t Token {
        let t = self.peek();
        if self.pos < self.tokens.len() {
            self.pos += 1;
        }
        t
    }

    fn eat(&mut self, kind: &TokenKind) -> Option<&'t Token> {
        if self.at(kind) {
            Some(self.bump())
        } else {
            None
        }
    }

    fn skip_newlines(&mut self) {
        while matches!(self.peek().kind, TokenKind::Newline) {
            self.bump();
        }
    }

    fn error_here(&self, expected: &str) -> Diagnostic {
        let t = self.peek();
        Diagnostic::error(
            t.span,
            format!("expected {expected}, found {}", t.kind.describe()),
        )
    }

    fn expect(&mut self, kind: &TokenKind, expected: &str) -> PResult<&'t Token> {
        self.eat(kind).ok_or_else(|| self.error_here(expected))
    }

    fn ident(&mut self, expected: &str) -> PResult<Ident> {
        match &self.peek().kind {
            TokenKind::Ident(name) => {
                let span = self.bump().span;
                Ok(Ident {
                    name: name.clone(),
                    span,
                })
            }
            _ => Err(self.error_here(expected)),
        }
    }

    fn prev_span(&self) -> Span {
        self.pos
            .checked_sub(1)
            .and_then(|i| self.tokens.get(i))
            .map_or(Span::DUMMY, |t| t.span)
    }

    fn program(&mut self) -> PResult<Program> {
        let mut kernels = Vec::new();
        loop {
            self.skip_separators();
            if self.at(&TokenKind::Eof) {
                return Ok(Program { kernels });
            }
            kernels.push(self.kernel()?);
        }
    }

    fn skip_separators(&mut self) {
        while matches!(self.peek().kind, TokenKind::Newline | TokenKind::Semi) {
            self.bump();
        }
    }

    fn kernel(&mut self) -> PResult<Kernel> {
        let start = self.peek().span;
        let mut attrs = Vec::new();
        while self.at(&TokenKind::At) {
            attrs.push(self.attribute()?);
            self.skip_newlines();
        }
        self.expect(&TokenKind::Kernel, "`kernel` or an `@attribute`")?;
        let name = self.ident("the kernel's name")?;
        self.expect(&TokenKind::LParen, "`(` and the parameter list")?;
        let mut params = Vec::new();
        if !self.at(&TokenKind::RParen) {
            loop {
                params.push(self.param()?);
                if self.eat(&TokenKind::Comma).is_none() || self.at(&TokenKind::RParen) {
                    break;
                }
            }
        }
        self.expect(&TokenKind::RParen, "`,` or `)` after a parameter")?;
        self.skip_newlines();
        let body = self.block()?;
        Ok(Kernel {
            attrs,
            name,
            params,
            span: start.to(body.span),
            body,
        })
    }

    fn attribute(&mut self) -> PResult<Attribute> {
        let at = self.expect(&TokenKind::At, "`@`")?.span;
        let name = self.ident("an attribute name after `@`")?;
        let mut args = None;
        if self.eat(&TokenKind::LParen).is_some() {
            let mut list = Vec::new();
            if !self.at(&TokenKind::RParen) {
                loop {
                    list.push(self.attr_arg()?);
                    if self.eat(&TokenKind::Comma).is_none() || self.at(&TokenKind::RParen) {
                        break;
                    }
                }
            }
            self.expect(
                &TokenKind::RParen,
                "`,` or `)` in the attribute's arguments",
            )?;
            args = Some(list);
        }
        Ok(Attribute {
            name,
            args,
            span: at.to(self.prev_span()),
        })
    }

    fn attr_arg(&mut self) -> PResult<AttrArg> {
        if let TokenKind::Ident(_) = self.peek().kind {
            if self.peek_at(1).kind == TokenKind::In {
                let name = self.ident("a tune parameter name")?;
                self.bump();
                self.expect(&TokenKind::LBracket, "`[` and the parameter's values")?;
                let mut values = Vec::new();
                loop {
                    values.push(self.literal()?);
                    if self.eat(&TokenKind::Comma).is_none() || self.at(&TokenKind::RBracket) {
                        break;
                    }
                }
                self.expect(&TokenKind::RBracket, "`,` or `]` after a value")?;
                let span = name.span.to(self.prev_span());
                return Ok(AttrArg::Values { name, values, span });
            }
            if self.peek_at(1).kind == TokenKind::Assign {
                let name = self.ident("an argument name")?;
                self.bump();
                let value = self.literal()?;
                let span = name.span.to(value.span);
                return Ok(AttrArg::Named { name, value, span });
            }
        }
        Ok(AttrArg::Expr(self.expr()?))
    }

    fn literal(&mut self) -> PResult<Literal> {
        let start = self.peek().span;
        let negate = self.eat(&TokenKind::Minus).is_some();
        let t = self.peek();
        let kind = match (&t.kind, negate) {
            (TokenKind::Int(v), _) => LiteralKind::Int(if negate { -v } else { *v }),
            (TokenKind::Float(v), _) => LiteralKind::Float(if negate { -v } else { *v }),
            (TokenKind::True, false) => LiteralKind::Bool(true),
            (TokenKind::False, false) => LiteralKind::Bool(false),
            _ => return Err(self.error_here("a number literal")),
        };
        self.bump();
        Ok(Literal {
            kind,
            span: start.to(t.span),
        })
    }

    fn param(&mut self) -> PResult<Param> {
        let name = self.ident("a parameter name")?;
        self.expect(&TokenKind::Colon, "`:` and the parameter's type")?;
        let ty = self.ty()?;
        Ok(Param {
            span: name.span.to(ty.span),
            name,
            ty,
        })
    }

    fn ty(&mut self) -> PResult<Type> {
        let head = self.ident("a type (`f32`, `tensor<f32>[M, N]`, `tile<f32>[T, T]`, ...)")?;
        let is_shaped = head.name == "tensor" || head.name == "tile";
        if !is_shaped || !self.at(&TokenKind::Lt) {
            return Ok(Type {
                span: head.span,
                kind: TypeKind::Scalar(head),
            });
        }
        self.bump();
        let elem = self.ident("an element type such as `f32`")?;
        self.expect(&TokenKind::Gt, "`>` after the element type")?;
        self.expect(&TokenKind::LBracket, "`[` and the dims")?;
        let mut dims = Vec::new();
        loop {
            dims.push(self.expr()?);
            if self.eat(&TokenKind::Comma).is_none() || self.at(&TokenKind::RBracket) {
                break;
            }
        }
        self.expect(&TokenKind::RBracket, "`,` or `]` after a dim")?;
        let span = head.span.to(self.prev_span());
        let kind = if head.name == "tensor" {
            TypeKind::Tensor { elem, dims }
        } else {
            TypeKind::Tile { elem, dims }
        };
        Ok(Type { kind, span })
    }

    fn block(&mut self) -> PResult<Block> {
        let open = self.expect(&TokenKind::LBrace, "`{`")?.span;
        let mut stmts = Vec::new();
        loop {
            self.skip_separators();
            if let Some(close) = self.eat(&TokenKind::RBrace) {
                return Ok(Block {
                    stmts,
                    span: open.to(close.span),
                });
            }
            if self.at(&TokenKind::Eof) {
                return Err(self.error_here("`}` to close the block"));
            }
            stmts.push(self.stmt()?);
            match self.peek().kind {
                TokenKind::Newline | TokenKind::Semi | TokenKind::RBrace => {}
                _ => {
                    return Err(self.error_here("`;` or a line end after the statement"));
                }
            }
        }
    }

    fn stmt(&mut self) -> PResult<Stmt> {
        let start = self.peek().span;
        let kind = match self.peek().kind {
            TokenKind::Let | TokenKind::Var => {
                let mutable = self.bump().kind == TokenKind::Var;
                let name = self.ident("a name to bind")?;
                let ty = if self.eat(&TokenKind::Colon).is_some() {
                    Some(self.ty()?)
                } else {
                    None
                };
                self.expect(&TokenKind::Assign, "`=` and an initial value")?;
                let value = self.expr()?;
                StmtKind::Let {
                    mutable,
                    name,
                    ty,
                    value,
                }
            }
            TokenKind::For => {
                self.bump();
                let var = self.ident("a loop variable")?;
                self.expect(&TokenKind::In, "`in`")?;
                let range = self.ident("`range`")?;
                if range.name != "range" {
                    return Err(Diagnostic::error(
                        range.span,
                        format!(
                            "expected `range(start, end[, step])`, found `{}`",
                            range.name
                        ),
                    ));
                }
                self.expect(&TokenKind::LParen, "`(` after `range`")?;
                let start_e = self.expr()?;
                self.expect(&TokenKind::Comma, "`,` and the end of the range")?;
                let end = self.expr()?;
                let step = if self.eat(&TokenKind::Comma).is_some() && !self.at(&TokenKind::RParen)
                {
                    Some(self.expr()?)
                } else {
                    None
                };
                self.expect(&TokenKind::RParen, "`)` after the range")?;
                self.skip_newlines();
                let body = self.block()?;
                StmtKind::For {
                    var,
                    start: start_e,
                    end,
                    step,
                    body,
                }
            }
            TokenKind::While => {
                self.bump();
                let cond = self.expr()?;
                self.skip_newlines();
                let body = self.block()?;
                StmtKind::While { cond, body }
            }
            TokenKind::If => return self.if_stmt(),
            _ => {
                let target = self.expr()?;
                match self.assign_op() {
                    Some(op) => {
                        let (target, index) = lvalue(target)?;
                        let value = self.expr()?;
                        StmtKind::Assign {
                            target,
                            index,
                            op,
                            value,
                        }
                    }
                    None => StmtKind::Expr(target),
                }
            }
        };
        Ok(Stmt {
            kind,
            span: start.to(self.prev_span()),
        })
    }

    fn assign_op(&mut self) -> Option<AssignOp> {
        let op = match &self.peek().kind {
            TokenKind::Assign => AssignOp::Assign,
            TokenKind::PlusAssign => AssignOp::Add,
            TokenKind::MinusAssign => AssignOp::Sub,
            TokenKind::StarAssign => AssignOp::Mul,
            TokenKind::SlashAssign => AssignOp::Div,
            TokenKind::Ident(w) if w == "max" && self.peek_at(1).kind == TokenKind::Assign => {
                self.bump();
                AssignOp::Max
            }
            _ => return None,
        };
        self.bump();
        Some(op)
    }

    fn if_stmt(&mut self) -> PResult<Stmt> {
        let start = self.expect(&TokenKind::If, "`if`")?.span;
        let cond = self.expr()?;
        self.skip_newlines();
        let then_body = self.block()?;
        // `else` may start the next line; nothing else can start with it.
        let save = self.pos;
        self.skip_newlines();
        let else_body = if self.eat(&TokenKind::Else).is_some() {
            self.skip_newlines();
            if self.at(&TokenKind::If) {
                let nested = self.if_stmt()?;
                Some(Block {
                    span: nested.span,
                    stmts: vec![nested],
                })
            } else {
                Some(self.block()?)
            }
        } else {
            self.pos = save;
            None
        };
        Ok(Stmt {
            kind: StmtKind::If {
                cond,
                then_body,
                else_body,
            },
            span: start.to(self.prev_span()),
        })
    }

    fn expr(&mut self) -> PResult<Expr> {
        self.binary(1)
    }

    fn binary(&mut self, min_prec: u8) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        while let Some((op, prec)) = binary_op(&self.peek().kind) {
            if prec < min_prec {
                break;
            }
            self.bump();
            let rhs = self.binary(prec + 1)?;
            lhs = Expr {
                span: lhs.span.to(rhs.span),
                kind: ExprKind::Binary {
                    op,
                    lhs: Box::new(lhs),
                    rhs: Box::new(rhs),
                },
            };
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> PResult<Expr> {
        let op = match self.peek().kind {
            TokenKind::Minus => UnaryOp::Neg,
            TokenKind::Bang => UnaryOp::Not,
            TokenKind::Tilde => UnaryOp::BitNot,
            _ => return self.postfix(),
        };
        let start = self.bump().span;
        let arg = self.unary()?;
        Ok(Expr {
            span: start.to(arg.span),
            kind: ExprKind::Unary {
                op,
                arg: Box::new(arg),
            },
        })
    }

    fn postfix(&mut self) -> PResult<Expr> {
        let mut e = self.primary()?;
        loop {
            if self.eat(&TokenKind::LBracket).is_some() {
                let mut subs = Vec::new();
                loop {
                    subs.push(self.subscript()?);
                    if self.eat(&TokenKind::Comma).is_none() || self.at(&TokenKind::RBracket) {
                        break;
                    }
                }
                self.expect(&TokenKind::RBracket, "`,` or `]` after a subscript")?;
                e = Expr {
                    span: e.span.to(self.prev_span()),
                    kind: ExprKind::Index {
                        base: Box::new(e),
                        subs,
                    },
                };
            } else if self.eat(&TokenKind::LParen).is_some() {
                let mut args = Vec::new();
                if !self.at(&TokenKind::RParen) {
                    loop {
                        args.push(self.expr()?);
                        if self.eat(&TokenKind::Comma).is_none() || self.at(&TokenKind::RParen) {
                            break;
                        }
                    }
                }
                self.expect(&TokenKind::RParen, "`,` or `)` after an argument")?;
                e = Expr {
                    span: e.span.to(self.prev_span()),
                    kind: ExprKind::Call {
                        callee: Box::new(e),
                        args,
                    },
                };
            } else {
                return Ok(e);
            }
        }
    }

    fn primary(&mut self) -> PResult<Expr> {
        let t = self.peek();
        let kind = match &t.kind {
            TokenKind::Int(v) => ExprKind::Int(*v),
            TokenKind::Float(v) => ExprKind::Float(*v),
            TokenKind::True => ExprKind::Bool(true),
            TokenKind::False => ExprKind::Bool(false),
            TokenKind::Ident(name) => ExprKind::Name(name.clone()),
            TokenKind::LParen => {
                self.bump();
                let inner = self.expr()?;
                self.expect(&TokenKind::RParen, "`)`")?;
                return Ok(Expr {
                    span: t.span.to(self.prev_span()),
                    kind: ExprKind::Paren(Box::new(inner)),
                });
            }
            _ => return Err(self.error_here("an expression")),
        };
        self.bump();
        Ok(Expr { kind, span: t.span })
    }

    fn subscript(&mut self) -> PResult<Subscript> {
        let start = self.peek().span;
        let ends = |p: &Self| matches!(p.peek().kind, TokenKind::Comma | TokenKind::RBracket);
        if self.eat(&TokenKind::Colon).is_some() {
            if ends(self) {
                return Ok(Subscript {
                    kind: SubscriptKind::Full,
                    span: start,
                });
            }
            let hi = self.expr()?;
            return Ok(Subscript {
                span: start.to(hi.span),
                kind: SubscriptKind::OpenRange(None, Some(hi)),
            });
        }
        let lo = self.expr()?;
        let kind = if self.eat(&TokenKind::Colon).is_some() {
            if ends(self) {
                SubscriptKind::OpenRange(Some(lo), None)
            } else {
                SubscriptKind::Range(lo, self.expr()?)
            }
        } else if self.eat(&TokenKind::ColonPlus).is_some() {
            SubscriptKind::Span(lo, self.expr()?)
        } else {
            SubscriptKind::Point(lo)
        };
        Ok(Subscript {
            kind,
            span: start.to(self.prev_span()),
        })
    }
}

/// Splits an assignment target into its name and optional subscripts.
fn lvalue(target: Expr) -> PResult<(Ident, Option<Vec<Subscript>>)> {
    let span = target.span;
    match target.kind {
        ExprKind::Name(name) => Ok((Ident { name, span }, None)),
        ExprKind::Index { base, subs } => match base.kind {
            ExprKind::Name(name) => Ok((
                Ident {
                    name,
                    span: base.span,
                },
                Some(subs),
            )),
            _ => Err(Diagnostic::error(
                span,
                "cannot assign to this: expected a name or a name with subscripts (`x`, `T[i :+ n]`)",
            )),
        },
        _ => Err(Diagnostic::error(
            span,
            "cannot assign to this: expected a name or a name with subscripts (`x`, `T[i :+ n]`)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::lex_text;
    use crate::front::print::{expr_to_string, program_to_string};

    fn expr(src: &str) -> String {
        let lexed = lex_text("t.ph", src).unwrap();
        expr_to_string(&parse_expr(&lexed.tokens).unwrap())
    }

    fn program(src: &str) -> String {
        let lexed = lex_text("t.ph", src).unwrap();
        program_to_string(&parse_program(&lexed.tokens).unwrap())
    }

    fn error(src: &str) -> String {
        let lexed = lex_text("t.ph", src).unwrap();
        parse_program(&lexed.tokens).unwrap_err()[0].message.clone()
    }

    #[test]
    fn precedence_follows_c() {
        assert_eq!(expr("a + b * c - d"), "(a + (b * c)) - d");
        assert_eq!(expr("x & 3 == 1"), "x & (3 == 1)");
        assert_eq!(expr("a < b && c || !d"), "((a < b) && c) || !d");
        assert_eq!(expr("1 << 2 + 3"), "1 << (2 + 3)");
        assert_eq!(expr("-a * b"), "-a * b");
        assert_eq!(expr("a | b ^ c & d"), "a | (b ^ (c & d))");
    }

    #[test]
    fn postfix_and_subscripts() {
        assert_eq!(expr("A[i, a :+ n, a : b, :]"), "A[i, a :+ n, a : b, :]");
        assert_eq!(expr("f(x)[0](y)"), "f(x)[0](y)");
        assert_eq!(expr("A[3:]"), "A[3:]");
    }

    #[test]
    fn statements_end_at_newlines_and_semicolons() {
        let p = program("kernel k() {\n  let a = 1; var b = 2\n  b += a\n  b max= 3\n}\n");
        assert_eq!(
            p,
            "kernel k() {\n  let a = 1\n  var b = 2\n  b += a\n  b max= 3\n}\n"
        );
    }

    #[test]
    fn else_may_start_the_next_line() {
        let p =
            program("kernel k() {\n  if a {\n    x = 1\n  }\n  else if b {\n  } else {\n  }\n}");
        assert!(p.contains("} else {\n    if b {"), "{p}");
    }

    #[test]
    fn long_parameter_lists_span_lines() {
        let p = program(
            "@grid(cdiv(N,\n  T))\nkernel k(a: f32,\n         b: tensor<f16>[N, 64],) {\n}",
        );
        assert!(p.contains("kernel k(a: f32, b: tensor<f16>[N, 64])"), "{p}");
    }

    #[test]
    fn attribute_arguments() {
        let p = program(
            "@autotune(T in [16, 64], U in [1, 2, 3])\n@launch(threads = 128)\n@pipeline\nkernel k() {}",
        );
        assert!(
            p.starts_with(
                "@autotune(T in [16, 64], U in [1, 2, 3])\n@launch(threads = 128)\n@pipeline\n"
            ),
            "{p}"
        );
    }

    #[test]
    fn syntax_errors_name_what_was_expected() {
        assert_eq!(
            error("kernel k( {}"),
            "expected a parameter name, found `{`"
        );
        assert_eq!(
            error("kernel k() { let = 1 }"),
            "expected a name to bind, found `=`"
        );
        assert_eq!(
            error("kernel k() { for i in 0 {} }"),
            "expected `range`, found `0`"
        );
        assert_eq!(
            error("kernel k() { f(x) = 1 }"),
            "cannot assign to this: expected a name or a name with subscripts (`x`, `T[i :+ n]`)"
        );
        assert_eq!(
            error("@grid(1) let"),
            "expected `kernel` or an `@attribute`, found `let`"
        );
    }
}
