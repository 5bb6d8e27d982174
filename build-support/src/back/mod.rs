//! Back ends: each turns the typed tile IR into something that runs.
//!
//! - [`host`]: Rust source compiled inside the user's crate, run on the CPU.
//! - [`mlir`]: PTX through MLIR. Emitting MLIR text needs nothing; lowering
//!   it to PTX needs feature `ptx` (LLVM/MLIR 22).
//! - [`fingerprint`]: what identifies the compiler in caches and artifacts.

pub mod fingerprint;
pub mod host;
pub mod mlir;
