//! The engine's ops: quantized matmul, norms, RoPE, attention over a KV
//! cache, softmax, the gated activations, and the short causal convolution
//! and gated delta rule of linear-attention (DeltaNet) layers.
//!
//! Each op is one function over host slices, tested against a
//! straightforward f64 reference in its file. Every op the engine runs
//! launches as a Phobos kernel through its typed handle (the weight
//! products, the embedding lookup, the row ops, RoPE, attention, the conv,
//! DeltaNet and its gates, MoE routing); the hand-written host body behind
//! each handle is its `@host_impl`, tested against the generated one.

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
#[cfg(test)]
mod test_data;

pub use matmul::{QMatmulError, QMatrixRef, matmul};
