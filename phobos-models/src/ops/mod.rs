//! The engine's ops: quantized matmul, norms, RoPE, attention over a KV
//! cache, softmax, the gated activations, and the short causal convolution
//! and gated delta rule of linear-attention (DeltaNet) layers.
//!
//! Each op is one function over host slices, tested against a
//! straightforward f64 reference in its file. The weight products, the
//! embedding lookup, the row ops (`rows`: norms, gated activations, adds,
//! the router's softmax) and RoPE launch as Phobos kernels through their
//! typed handles; attention, the conv and DeltaNet are host paths still.

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
