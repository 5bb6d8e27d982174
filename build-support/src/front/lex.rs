//! The two lexers: `.ph` text, and a `proc_macro2::TokenStream` from the
//! `kernel!` macro. Both produce the same [`Token`]s, with
//! [`TokenKind::Newline`] where a line end may end a statement.
//!
//! Line ends are dropped inside `(...)` and `[...]` and after a token that
//! cannot end a statement ([`TokenKind::continues_line`]), so long argument
//! lists and `a +` / `b` continuations need no `;` games. In the macro the
//! line of each token comes from `Span::start().line` (proc-macro2's
//! `span-locations`).

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

use super::token::{Token, TokenKind};
use crate::diag::{Diagnostic, Diagnostics};
use crate::span::{SourceMap, Span};

/// Tokens with their source map.
#[derive(Clone, Debug)]
pub struct Lexed {
    pub tokens: Vec<Token>,
    pub source_map: SourceMap,
}

/// Collects tokens and decides where line ends matter.
struct Builder {
    tokens: Vec<Token>,
    /// Open `(`/`[`/`{` delimiters; line ends inside `(` and `[` are dropped.
    open: Vec<TokenKind>,
}

impl Builder {
    fn new() -> Builder {
        Builder {
            tokens: Vec::new(),
            open: Vec::new(),
        }
    }

    fn push(&mut self, kind: TokenKind, span: Span) {
        match kind {
            TokenKind::LParen | TokenKind::LBracket | TokenKind::LBrace => {
                self.open.push(kind.clone())
            }
            TokenKind::RParen | TokenKind::RBracket | TokenKind::RBrace => {
                self.open.pop();
            }
            _ => {}
        }
        self.tokens.push(Token { kind, span });
    }

    fn newline(&mut self, span: Span) {
        if matches!(
            self.open.last(),
            Some(TokenKind::LParen | TokenKind::LBracket)
        ) {
            return;
        }
        match self.tokens.last() {
            None => {}
            Some(t) if t.kind.continues_line() => {}
            Some(_) => self.tokens.push(Token {
                kind: TokenKind::Newline,
                span,
            }),
        }
    }

    fn finish(mut self, span: Span) -> Vec<Token> {
        // A final line end says nothing; dropping it makes text and token
        // sources (which have none) lex alike.
        if self
            .tokens
            .last()
            .is_some_and(|t| t.kind == TokenKind::Newline)
        {
            self.tokens.pop();
        }
        self.tokens.push(Token {
            kind: TokenKind::Eof,
            span,
        });
        self.tokens
    }
}

/// Lexes `.ph` text; spans are byte ranges.
pub fn lex_text(name: &str, text: &str) -> Result<Lexed, Diagnostics> {
    let mut b = Builder::new();
    let mut errors = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0usize;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        if c == b'\n' {
            b.newline(Span::new(i as u32, i as u32 + 1));
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'/' && bytes.get(i + 1) == Some(&b'/') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let word = &text[start..i];
            let kind =
                TokenKind::keyword(word).unwrap_or_else(|| TokenKind::Ident(word.to_string()));
            b.push(kind, Span::new(start as u32, i as u32));
        } else if c.is_ascii_digit() {
            i = scan_number(bytes, i);
            let span = Span::new(start as u32, i as u32);
            match number_token(&text[start..i]) {
                Ok(kind) => b.push(kind, span),
                Err(msg) => errors.push(Diagnostic::error(span, msg)),
            }
        } else if let Some((spelling, kind)) = TokenKind::PUNCTS
            .iter()
            .find(|(s, _)| text[i..].starts_with(s))
        {
            i += spelling.len();
            b.push(kind.clone(), Span::new(start as u32, i as u32));
        } else {
            let ch = text[i..].chars().next().unwrap_or('?');
            i += ch.len_utf8();
            errors.push(Diagnostic::error(
                Span::new(start as u32, i as u32),
                format!("unexpected character `{ch}`"),
            ));
        }
    }
    let source_map = SourceMap::Text {
        name: name.to_string(),
        text: text.to_string(),
    };
    if !errors.is_empty() {
        return Err(Diagnostics::new(source_map, errors));
    }
    let end = text.len() as u32;
    Ok(Lexed {
        tokens: b.finish(Span::new(end, end)),
        source_map,
    })
}

/// The end of a number starting at `i`: digits, an optional fraction and
/// exponent, or a `0x` hex integer.
fn scan_number(bytes: &[u8], mut i: usize) -> usize {
    if bytes[i] == b'0' && matches!(bytes.get(i + 1), Some(b'x' | b'X')) {
        i += 2;
        while i < bytes.len() && (bytes[i].is_ascii_hexdigit() || bytes[i] == b'_') {
            i += 1;
        }
        return i;
    }
    let digits = |mut i: usize| {
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'_') {
            i += 1;
        }
        i
    };
    i = digits(i);
    // `1.5`, and `1.` as Rust lexes it (not `1..` or a `1.x` field).
    let after_dot = bytes.get(i + 1).copied();
    let bare_dot = !after_dot.is_some_and(|b| b == b'.' || b == b'_' || b.is_ascii_alphabetic());
    if bytes.get(i) == Some(&b'.') && (after_dot.is_some_and(|b| b.is_ascii_digit()) || bare_dot) {
        i = digits(i + 1);
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(bytes.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if bytes.get(j).is_some_and(u8::is_ascii_digit) {
            i = digits(j);
        }
    }
    // A trailing identifier char (a suffix such as `f32`) is kept so that it
    // is reported rather than lexed as a separate name.
    while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
        i += 1;
    }
    i
}

/// The token for a number's text, shared by both lexers.
fn number_token(text: &str) -> Result<TokenKind, String> {
    let clean: String = text.chars().filter(|c| *c != '_').collect();
    if let Some(hex) = clean
        .strip_prefix("0x")
        .or_else(|| clean.strip_prefix("0X"))
    {
        return i64::from_str_radix(hex, 16)
            .map(TokenKind::Int)
            .map_err(|_| format!("bad hex integer literal `{text}`: expected 0x followed by at most 16 hex digits"));
    }
    if clean.bytes().all(|b| b.is_ascii_digit()) {
        return clean
            .parse::<i64>()
            .map(TokenKind::Int)
            .map_err(|_| format!("integer literal `{text}` does not fit in i64"));
    }
    let is_float = clean
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
    if is_float && let Ok(v) = clean.parse::<f64>() {
        return Ok(TokenKind::Float(v));
    }
    Err(format!(
        "bad number literal `{text}`: expected digits with an optional fraction and exponent \
         (literal suffixes such as `1.0f32` are not Phobos; write `f32(1.0)`)"
    ))
}

/// Lexes the input of a `kernel!` macro. Span `i` is token `i`'s entry in
/// [`SourceMap::Tokens`].
pub fn lex_tokens(stream: TokenStream) -> Result<Lexed, Diagnostics> {
    let mut lx = TokenLexer {
        b: Builder::new(),
        spans: Vec::new(),
        last_line: None,
        errors: Vec::new(),
        puncts: Vec::new(),
    };
    lx.stream(stream);
    lx.flush_puncts();
    let end = Span::new(
        lx.spans.len().saturating_sub(1) as u32,
        lx.spans.len() as u32,
    );
    let source_map = SourceMap::Tokens { spans: lx.spans };
    if !lx.errors.is_empty() {
        return Err(Diagnostics::new(source_map, lx.errors));
    }
    Ok(Lexed {
        tokens: lx.b.finish(end),
        source_map,
    })
}

struct TokenLexer {
    b: Builder,
    spans: Vec<proc_macro2::Span>,
    /// The line the previous token ended on.
    last_line: Option<usize>,
    errors: Vec<Diagnostic>,
    /// A run of joint punctuation not yet split into operators.
    puncts: Vec<(char, proc_macro2::Span)>,
}

impl TokenLexer {
    fn stream(&mut self, stream: TokenStream) {
        for tree in stream {
            match tree {
                TokenTree::Group(g) => {
                    let (open, close) = match g.delimiter() {
                        Delimiter::Parenthesis => (TokenKind::LParen, TokenKind::RParen),
                        Delimiter::Bracket => (TokenKind::LBracket, TokenKind::RBracket),
                        Delimiter::Brace => (TokenKind::LBrace, TokenKind::RBrace),
                        Delimiter::None => {
                            self.stream(g.stream());
                            continue;
                        }
                    };
                    self.flush_puncts();
                    self.emit(open, g.span_open());
                    self.stream(g.stream());
                    self.flush_puncts();
                    self.emit(close, g.span_close());
                }
                TokenTree::Ident(id) => {
                    self.flush_puncts();
                    let word = id.to_string();
                    let word = word.strip_prefix("r#").unwrap_or(&word).to_string();
                    let kind = TokenKind::keyword(&word).unwrap_or(TokenKind::Ident(word));
                    self.emit(kind, id.span());
                }
                TokenTree::Literal(lit) => {
                    self.flush_puncts();
                    let text = lit.to_string();
                    let span = lit.span();
                    match number_token(&text) {
                        Ok(kind) => self.emit(kind, span),
                        Err(msg) => {
                            let index = self.push_span(span);
                            let msg = if text.starts_with('"') || text.starts_with('\'') {
                                format!("unexpected literal {text}: Phobos has no strings or chars")
                            } else {
                                msg
                            };
                            self.errors.push(Diagnostic::error(index, msg));
                        }
                    }
                }
                TokenTree::Punct(p) => {
                    let ends_run = p.spacing() == Spacing::Alone;
                    self.puncts.push((p.as_char(), p.span()));
                    if ends_run {
                        self.flush_puncts();
                    }
                }
            }
        }
    }

    /// Splits a run of joint punctuation by longest match (`+=`, `:+`, `<=`).
    fn flush_puncts(&mut self) {
        let run = std::mem::take(&mut self.puncts);
        let text: String = run.iter().map(|(c, _)| *c).collect();
        let mut i = 0;
        while i < run.len() {
            let rest: String = text.chars().skip(i).collect();
            match TokenKind::PUNCTS.iter().find(|(s, _)| rest.starts_with(s)) {
                Some((spelling, kind)) => {
                    let n = spelling.chars().count();
                    // Record every char's span; the token covers them all.
                    let lo = self.spans.len() as u32;
                    self.line_break_before(run[i].1);
                    for (_, s) in &run[i..i + n] {
                        self.spans.push(*s);
                    }
                    self.last_line = Some(run[i + n - 1].1.end().line);
                    self.b.push(kind.clone(), Span::new(lo, lo + n as u32));
                    i += n;
                }
                None => {
                    let index = self.push_span(run[i].1);
                    self.errors.push(Diagnostic::error(
                        index,
                        format!("unexpected character `{}`", run[i].0),
                    ));
                    i += 1;
                }
            }
        }
    }

    fn line_break_before(&mut self, span: proc_macro2::Span) {
        let line = span.start().line;
        if let Some(last) = self.last_line
            && line > last
        {
            let prev = self.spans.len().saturating_sub(1) as u32;
            self.b.newline(Span::new(prev, prev + 1));
        }
    }

    fn push_span(&mut self, span: proc_macro2::Span) -> Span {
        let index = self.spans.len() as u32;
        self.spans.push(span);
        Span::new(index, index + 1)
    }

    fn emit(&mut self, kind: TokenKind, span: proc_macro2::Span) {
        self.line_break_before(span);
        let s = self.push_span(span);
        self.last_line = Some(span.end().line);
        self.b.push(kind, s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(tokens: &[Token]) -> Vec<TokenKind> {
        tokens.iter().map(|t| t.kind.clone()).collect()
    }

    fn ident(s: &str) -> TokenKind {
        TokenKind::Ident(s.into())
    }

    #[test]
    fn text_and_tokens_agree() {
        let src = "let a = x[i :+ 4, :]\nacc += dot(a,\n  b)\nm max= -1e-5 // c\n";
        assert_eq!(
            kinds(&lex_text("t.ph", "1. + 2.5").unwrap().tokens)[..3],
            [
                TokenKind::Float(1.0),
                TokenKind::Plus,
                TokenKind::Float(2.5)
            ]
        );
        let text = lex_text("t.ph", src).unwrap();
        let stream: TokenStream = src.replace("// c", "").parse().unwrap();
        let toks = lex_tokens(stream).unwrap();
        assert_eq!(kinds(&text.tokens), kinds(&toks.tokens));
        use TokenKind::*;
        assert_eq!(
            kinds(&text.tokens),
            vec![
                Let,
                ident("a"),
                Assign,
                ident("x"),
                LBracket,
                ident("i"),
                ColonPlus,
                Int(4),
                Comma,
                Colon,
                RBracket,
                Newline,
                ident("acc"),
                PlusAssign,
                ident("dot"),
                LParen,
                ident("a"),
                Comma,
                ident("b"),
                RParen,
                Newline,
                ident("m"),
                ident("max"),
                Assign,
                Minus,
                Float(1e-5),
                Eof
            ]
        );
    }

    #[test]
    fn token_spans_index_the_side_table() {
        let stream: TokenStream = "a += b".parse().unwrap();
        let lexed = lex_tokens(stream).unwrap();
        let SourceMap::Tokens { spans } = &lexed.source_map else {
            panic!("token source expected");
        };
        // `+=` is two Rust puncts, so one token covering two side-table entries.
        assert_eq!(spans.len(), 4);
        assert_eq!(lexed.tokens[1].span, Span::new(1, 3));
        assert_eq!(lexed.tokens[2].span, Span::new(3, 4));
    }

    #[test]
    fn bad_literals_are_reported() {
        let err = lex_text("t.ph", "let a = 1.0f32").unwrap_err().errors;
        assert!(err[0].message.contains("suffixes"), "{}", err[0].message);
        let err = lex_text("t.ph", "let a = 99999999999999999999")
            .unwrap_err()
            .errors;
        assert!(err[0].message.contains("does not fit"));
        let err = lex_text("t.ph", "let a = $").unwrap_err().errors;
        assert_eq!(err[0].span, Span::new(8, 9));
    }

    #[test]
    fn operators_at_line_end_continue_the_statement() {
        let lexed = lex_text("t.ph", "a = b +\n c\nd = 1\n").unwrap();
        let newlines = lexed
            .tokens
            .iter()
            .filter(|t| t.kind == TokenKind::Newline)
            .count();
        assert_eq!(newlines, 1);
    }
}
