//! Models: GGUF, quant formats, tokenizers, chat templates.

pub mod gguf;
pub mod quant;
pub mod tokenizer;
pub mod chat;
