//! Tokens shared by the text lexer and the token-stream lexer.

use std::fmt;

use crate::span::Span;

#[derive(Clone, Debug, PartialEq)]
pub enum TokenKind {
    Ident(String),
    Int(i64),
    Float(f64),
    // Keywords.
    Kernel,
    Let,
    Var,
    If,
    Else,
    For,
    In,
    While,
    True,
    False,
    // Delimiters and punctuation.
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Colon,
    /// `:+`, the span-length slice operator.
    ColonPlus,
    Semi,
    At,
    // Operators.
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Assign,
    PlusAssign,
    MinusAssign,
    StarAssign,
    SlashAssign,
    EqEq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Shl,
    Shr,
    AndAnd,
    OrOr,
    Amp,
    Pipe,
    Caret,
    Bang,
    Tilde,
    /// The end of a line that may end a statement.
    Newline,
    Eof,
}

impl TokenKind {
    /// The keyword an identifier spells, if any.
    pub fn keyword(word: &str) -> Option<TokenKind> {
        Some(match word {
            "kernel" => TokenKind::Kernel,
            "let" => TokenKind::Let,
            "var" => TokenKind::Var,
            "if" => TokenKind::If,
            "else" => TokenKind::Else,
            "for" => TokenKind::For,
            "in" => TokenKind::In,
            "while" => TokenKind::While,
            "true" => TokenKind::True,
            "false" => TokenKind::False,
            _ => return None,
        })
    }

    /// Operators and punctuation by spelling, longest first, for the lexers'
    /// longest-match rule.
    pub const PUNCTS: [(&'static str, TokenKind); 37] = [
        ("<<", TokenKind::Shl),
        (">>", TokenKind::Shr),
        ("<=", TokenKind::Le),
        (">=", TokenKind::Ge),
        ("==", TokenKind::EqEq),
        ("!=", TokenKind::Ne),
        ("&&", TokenKind::AndAnd),
        ("||", TokenKind::OrOr),
        ("+=", TokenKind::PlusAssign),
        ("-=", TokenKind::MinusAssign),
        ("*=", TokenKind::StarAssign),
        ("/=", TokenKind::SlashAssign),
        (":+", TokenKind::ColonPlus),
        ("(", TokenKind::LParen),
        (")", TokenKind::RParen),
        ("[", TokenKind::LBracket),
        ("]", TokenKind::RBracket),
        ("{", TokenKind::LBrace),
        ("}", TokenKind::RBrace),
        (",", TokenKind::Comma),
        (":", TokenKind::Colon),
        (";", TokenKind::Semi),
        ("@", TokenKind::At),
        ("+", TokenKind::Plus),
        ("-", TokenKind::Minus),
        ("*", TokenKind::Star),
        ("/", TokenKind::Slash),
        ("%", TokenKind::Percent),
        ("=", TokenKind::Assign),
        ("<", TokenKind::Lt),
        (">", TokenKind::Gt),
        ("&", TokenKind::Amp),
        ("|", TokenKind::Pipe),
        ("^", TokenKind::Caret),
        ("!", TokenKind::Bang),
        ("~", TokenKind::Tilde),
        ("\n", TokenKind::Newline),
    ];

    /// A line end right after this token continues the statement (an
    /// operator, comma, opening delimiter or another line end).
    pub fn continues_line(&self) -> bool {
        !matches!(
            self,
            TokenKind::Ident(_)
                | TokenKind::Int(_)
                | TokenKind::Float(_)
                | TokenKind::True
                | TokenKind::False
                | TokenKind::RParen
                | TokenKind::RBracket
                | TokenKind::RBrace
                | TokenKind::Semi
                | TokenKind::Eof
        )
    }

    /// How the token reads in an error message.
    pub fn describe(&self) -> String {
        match self {
            TokenKind::Ident(s) => format!("`{s}`"),
            TokenKind::Int(v) => format!("`{v}`"),
            TokenKind::Float(v) => format!("`{v:?}`"),
            TokenKind::Newline => "end of line".into(),
            TokenKind::Eof => "end of input".into(),
            other => format!("`{}`", other.spelling()),
        }
    }

    /// The source spelling of keywords and punctuation.
    pub fn spelling(&self) -> &'static str {
        match self {
            TokenKind::Kernel => "kernel",
            TokenKind::Let => "let",
            TokenKind::Var => "var",
            TokenKind::If => "if",
            TokenKind::Else => "else",
            TokenKind::For => "for",
            TokenKind::In => "in",
            TokenKind::While => "while",
            TokenKind::True => "true",
            TokenKind::False => "false",
            other => TokenKind::PUNCTS
                .iter()
                .find(|(_, k)| k == other)
                .map_or("?", |(s, _)| s),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub kind: TokenKind,
    pub span: Span,
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            TokenKind::Ident(s) => write!(f, "Ident({s})"),
            TokenKind::Int(v) => write!(f, "Int({v})"),
            TokenKind::Float(v) => write!(f, "Float({v:?})"),
            TokenKind::Newline => f.write_str("Newline"),
            TokenKind::Eof => f.write_str("Eof"),
            other => write!(f, "`{}`", other.spelling()),
        }?;
        write!(f, " @{}", self.span)
    }
}
