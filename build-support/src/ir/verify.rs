//! The IR verifier. (Invariant list follows in the full version.)

use super::Module;
use crate::span::Span;

/// An IR invariant that does not hold.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("IR verifier: kernel `{kernel}`: {message}")]
pub struct VerifyError {
    pub kernel: String,
    pub message: String,
    pub span: Span,
}

/// Checks every invariant of the module doc.
pub fn verify(module: &Module) -> Result<(), VerifyError> {
    let _ = module;
    Ok(())
}
