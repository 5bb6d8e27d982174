//! Models: GGUF, quant formats, tokenizers, chat templates.
