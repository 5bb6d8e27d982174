//! The engine's ops: quantized matmul, norms, RoPE, attention over a KV
//! cache, softmax, the gated activations, and the short causal convolution
//! and gated delta rule of linear-attention (DeltaNet) layers.
//!
//! Each op is one function over host slices. The bodies are plain host
//! paths for now (the kernel-language versions and the fast quantized
//! matmul land behind these same signatures); every op is tested against a
//! straightforward f64 reference in its file.

pub mod activation;
pub mod attention;
pub mod conv;
pub mod deltanet;
pub mod embed;
pub mod matmul;
pub mod moe;
pub mod norm;
pub mod rope;
pub mod rows;
pub mod softmax;

pub use matmul::{QMatmulError, QMatrixRef, matmul};
