//! GGUF files: a validating reader over a memory map, and a writer for
//! tests and tools.
//!
//! ```no_run
//! # fn main() -> Result<(), phobos_models::gguf::GgufError> {
//! let g = phobos_models::gguf::Gguf::open("model.gguf")?;
//! let n_layers = g.arch_u32("block_count")?;
//! let tokens: &[String] = g.get_str_array("tokenizer.ggml.tokens")?;
//! let embd = g.tensor("token_embd.weight")?; // bytes borrowed from the map
//! # let _ = (n_layers, tokens, embd);
//! # Ok(()) }
//! ```

mod cursor;
mod error;
mod file;
mod parse;
mod tensor;
mod value;
mod writer;

pub use error::{GgufError, Result};
pub use file::{Gguf, dequantize_view};
pub use parse::{ALIGNMENT_KEY, DEFAULT_ALIGNMENT, GGUF_MAGIC, MAX_ARRAY_DEPTH, MAX_DIMS};
pub use tensor::{TensorInfo, TensorView};
pub use value::{Array, Value, ValueType};
pub use writer::{GgufWriteError, GgufWriter};
