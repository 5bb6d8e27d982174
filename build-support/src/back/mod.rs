//! Back ends: each turns the typed tile IR into something that runs.
//!
//! - [`host`]: Rust source compiled inside the user's crate, run on the CPU.
//! - `mlir` (feature `ptx`): PTX through MLIR.

pub mod host;
#[cfg(feature = "ptx")]
pub mod mlir;
