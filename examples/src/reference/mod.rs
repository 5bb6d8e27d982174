//! Plain Rust references for the example kernels: straightforward loops,
//! accumulating in f64, written for clarity rather than speed. Tests and
//! examples compare each kernel's output against these.

pub mod attention;
pub mod gemm;
pub mod gla;
pub mod norm;
pub mod saxpy;
pub mod softmax;
