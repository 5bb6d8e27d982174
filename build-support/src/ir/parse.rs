//! Reads the IR text form printed by [`super::print`].

use super::Module;

/// A syntax error in IR text, with its 1-based line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("IR text line {line}: {message}")]
pub struct IrParseError {
    pub line: usize,
    pub message: String,
}

/// Parses the text form of a module.
pub fn parse_module(text: &str) -> Result<Module, IrParseError> {
    let _ = text;
    Err(IrParseError {
        line: 1,
        message: "the IR text parser is not built yet".into(),
    })
}
