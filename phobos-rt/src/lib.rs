//! Phobos runtime: devices, tensors, launch and the host tile library.

extern crate self as phobos;

pub use phobos_macros::{kernel, kernel_file};
