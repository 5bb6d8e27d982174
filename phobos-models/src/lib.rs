//! Models: GGUF, quant formats, tokenizers, chat templates.

pub mod arch;
pub mod chat;
pub mod engine;
pub mod gguf;
pub mod ops;
pub mod sample;
pub mod tokenizer;

/// The quant formats live in `phobos-quant`, below both this crate and
/// the runtime, so host kernels and the model layer share one definition.
pub use phobos_quant as quant;
