//! Models: GGUF, quant formats, tokenizers, chat templates.

pub mod chat;
pub mod gguf;
pub mod quant;
pub mod tokenizer;
