#[cfg(feature = "ptx")]
pub mod mlir;
