//! Errors of the MLIR back end.

/// Why a kernel did not become PTX.
#[derive(Debug, thiserror::Error)]
pub enum MlirError {
    /// The kernel uses something this back end does not lower yet. Never
    /// papered over: the build must say what and where.
    #[error("the MLIR back end does not support {construct} yet{}", location_suffix(.location))]
    Unsupported {
        construct: String,
        location: Option<String>,
    },
    /// The config cannot run on the chip (too much shared memory, too many
    /// threads); such configs are pruned, with this as the recorded reason.
    #[error("config does not fit: {0}")]
    DoesNotFit(String),
    /// `@pipeline` on a kernel none of whose loops can be pipelined (or a
    /// config that breaks a pipelined loop); the reason names each loop.
    #[error("@pipeline on kernel `{kernel}`: {reason}")]
    NotPipelinable { kernel: String, reason: String },
    /// A shape or tune expression has no value under the config.
    #[error("config {config}: {message}")]
    Config { config: String, message: String },
    #[error("chip `{0}` is not of the form sm_XY (for example sm_80)")]
    BadChip(String),
    #[error("index bits must be 32 or 64, got {0}")]
    BadIndexBits(u32),
    /// The emitted MLIR did not parse or verify: a bug in the emitter.
    #[error("emitted MLIR is invalid (compiler bug): {diagnostics}")]
    InvalidModule { diagnostics: String },
    /// A pass failed: a bug in the emitter or an MLIR limitation.
    #[error("MLIR phase `{phase}` failed: {diagnostics}")]
    Pass { phase: String, diagnostics: String },
    /// Serialization produced no PTX assembly.
    #[error("MLIR produced no PTX for the kernel: {0}")]
    NoPtx(String),
}

fn location_suffix(location: &Option<String>) -> String {
    location
        .as_ref()
        .map(|l| format!(" (at {l})"))
        .unwrap_or_default()
}

impl MlirError {
    pub(crate) fn unsupported(construct: impl Into<String>) -> MlirError {
        MlirError::Unsupported {
            construct: construct.into(),
            location: None,
        }
    }
}
