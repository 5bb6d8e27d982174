//! The front end: source (text or macro tokens) to tokens to AST.

pub mod ast;
pub mod lex;
pub mod parse;
pub mod print;
pub mod token;

pub use lex::{Lexed, lex_text, lex_tokens};
pub use parse::parse_program;
pub use token::{Token, TokenKind};
