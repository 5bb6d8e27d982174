//! The Phobos kernel compiler: front end, checker, typed tile IR, back ends.
//!
//! The pipeline, as [`check_source`] runs it:
//!
//! ```text
//! Source (.ph text | proc_macro2::TokenStream)
//!   -> front::lex_text / front::lex_tokens   tokens with spans
//!   -> front::parse_program                  AST (front::ast)
//!   -> check::check_program                  typed tile IR (ir), verified by ir::verify
//! ```
//!
//! The IR ([`ir`]) is the contract for every back end; its module doc is
//! its specification. Errors are [`diag::Diagnostics`]: rendered as
//! `file:line:col` with the line underlined for files
//! ([`diag::Diagnostics::render`]), or as `(proc_macro2::Span, message)`
//! pairs for the `kernel!` macro ([`diag::Diagnostics::macro_errors`]).

pub mod back;
pub mod check;
pub mod diag;
pub mod front;
pub mod ir;
pub mod span;

use diag::Diagnostics;
use span::SourceMap;

/// Kernel source: the text of a `.ph` file, or the tokens of a macro call.
#[derive(Clone, Debug)]
pub enum Source {
    /// `name` is shown in errors (`name:line:col`); usually the file path.
    Text {
        name: String,
        text: String,
    },
    Tokens(proc_macro2::TokenStream),
}

impl Source {
    pub fn file(name: impl Into<String>, text: impl Into<String>) -> Source {
        Source::Text {
            name: name.into(),
            text: text.into(),
        }
    }
}

/// Phase 1: tokens with spans, and the source map the spans refer to.
pub fn lex(source: &Source) -> Result<front::Lexed, Diagnostics> {
    match source {
        Source::Text { name, text } => front::lex_text(name, text),
        Source::Tokens(stream) => front::lex_tokens(stream.clone()),
    }
}

/// Phases 1-2: the AST, and the source map for later errors.
pub fn parse(source: &Source) -> Result<(front::ast::Program, SourceMap), Diagnostics> {
    let lexed = lex(source)?;
    match front::parse_program(&lexed.tokens) {
        Ok(program) => Ok((program, lexed.source_map)),
        Err(errors) => Err(Diagnostics::new(lexed.source_map, errors)),
    }
}

/// The whole front half: source to verified typed tile IR.
pub fn check_source(source: &Source) -> Result<ir::Module, Diagnostics> {
    check_source_mapped(source).map(|(module, _)| module)
}

/// Like [`check_source`], also returning the source map, so that later
/// phases can report errors at IR spans (`Diagnostics::new(map, errors)`).
pub fn check_source_mapped(source: &Source) -> Result<(ir::Module, SourceMap), Diagnostics> {
    let (program, source_map) = parse(source)?;
    match check::check_program(&program) {
        Ok(module) => Ok((module, source_map)),
        Err(errors) => Err(Diagnostics::new(source_map, errors)),
    }
}
