//! Models: GGUF, quant formats, tokenizers, chat templates.

pub mod chat;
pub mod gguf;
pub mod tokenizer;

/// The quant formats live in `phobos-quant`, below both this crate and
/// the runtime, so host kernels and the model layer share one definition.
pub use phobos_quant as quant;
