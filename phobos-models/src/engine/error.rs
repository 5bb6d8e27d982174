use crate::gguf::GgufError;
use crate::ops::QMatmulError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Gguf(#[from] GgufError),
    #[error("tokenizer: {0}")]
    Tokenizer(#[from] crate::tokenizer::TokenizerError),
    #[error("chat template: {0}")]
    Chat(#[from] crate::chat::ChatTemplateError),
    #[error("architecture '{arch}' is not supported (supported: {supported})")]
    UnknownArch { arch: String, supported: String },
    #[error("model is missing tensor '{name}'")]
    MissingTensor { name: String },
    #[error("tensor '{name}' has shape {found:?} and type {ty}, expected shape {expected:?}")]
    TensorShape {
        name: String,
        expected: Vec<u64>,
        found: Vec<u64>,
        ty: &'static str,
    },
    #[error("metadata '{key}': {reason}")]
    Metadata { key: String, reason: String },
    #[error(
        "context length exceeded: the session holds {held} tokens and {requested} more were given, but its context is {n_ctx} tokens"
    )]
    ContextFull {
        n_ctx: usize,
        held: usize,
        requested: usize,
    },
    #[error(
        "requested context of {requested} tokens is over the model's training context of {n_ctx_train}"
    )]
    ContextTooLarge {
        requested: usize,
        n_ctx_train: usize,
    },
    #[error("token id {id} is outside the vocabulary of {n_vocab} tokens")]
    TokenOutOfRange { id: u32, n_vocab: usize },
    #[error("a session of another model was passed to this model")]
    ForeignSession,
    #[error(transparent)]
    Matmul(#[from] QMatmulError),
    #[error(transparent)]
    Attention(#[from] crate::ops::attention::AttentionError),
    #[error(transparent)]
    RowOp(#[from] crate::ops::rows::RowOpError),
    #[error(transparent)]
    Embed(#[from] crate::ops::embed::EmbedError),
    #[error("threads: {0}")]
    Threads(String),
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;
