//! One file per architecture family, each a forward pass written top to
//! bottom over the ops in `crate::ops`, with the metadata keys it reads.

pub(crate) mod attend;
pub(crate) mod experts;
pub mod gemma3;
pub(crate) mod hparams;
pub mod llama;
pub mod qwen35;

use crate::engine::{EngineError, Result};
use crate::gguf::Gguf;
use attend::SeqSlot;

/// Architectures this engine runs (`general.architecture`).
pub const SUPPORTED: &[&str] = &[
    "gemma3",
    "llama",
    "minicpm",
    "qwen2",
    "qwen3",
    "qwen35",
    "qwen35moe",
    "qwen3moe",
];

/// Shape facts every architecture has.
#[derive(Debug, Clone)]
pub struct ModelShape {
    pub arch: String,
    pub n_layer: usize,
    pub n_embd: usize,
    pub n_vocab: usize,
    pub n_ctx_train: usize,
    /// Widths of one cached position of each layer: keys, values.
    pub kv_widths: Vec<(usize, usize)>,
    /// Floats of one sequence's recurrent state in each layer: the conv
    /// state and the DeltaNet state ((0, 0) for attention layers).
    pub recurrent_state_lens: Vec<(usize, usize)>,
}

/// A loaded architecture: embeds tokens, runs one layer over a batch,
/// turns final hidden rows into logits.
pub(crate) trait Architecture: Send + Sync {
    fn shape(&self) -> &ModelShape;
    /// `out` is `[tokens.len()][n_embd]`.
    fn embed(&self, gguf: &Gguf, tokens: &[u32], out: &mut [f32]) -> Result<()>;
    /// Runs layer `il` on `x` (`[rows][n_embd]`) in place.
    fn layer(&self, gguf: &Gguf, il: usize, x: &mut [f32], slots: &mut [SeqSlot<'_>])
    -> Result<()>;
    /// Final norm and output projection of `x` (`[m][n_embd]`): `[m][n_vocab]`.
    fn logits(&self, gguf: &Gguf, x: &mut [f32], m: usize) -> Result<Vec<f32>>;
}

pub(crate) fn load(gguf: &Gguf) -> Result<Box<dyn Architecture>> {
    let arch = gguf.arch()?;
    match arch {
        "gemma3" => Ok(Box::new(gemma3::Gemma3::load(gguf)?)),
        "llama" | "qwen2" | "qwen3" | "qwen3moe" | "minicpm" => {
            Ok(Box::new(llama::LlamaLike::load(gguf, arch)?))
        }
        "qwen35" | "qwen35moe" => Ok(Box::new(qwen35::Qwen35::load(gguf, arch)?)),
        other => Err(EngineError::UnknownArch {
            arch: other.to_owned(),
            supported: SUPPORTED.join(", "),
        }),
    }
}

/// The vocabulary size: the embedding's row count (llama.cpp takes it from
/// the tokenizer, which must agree).
pub(crate) fn n_vocab(gguf: &Gguf) -> Result<usize> {
    let info = gguf
        .tensor_info("token_embd.weight")
        .ok_or_else(|| EngineError::MissingTensor {
            name: "token_embd.weight".into(),
        })?;
    Ok(info.dims.get(1).copied().unwrap_or(0) as usize)
}
