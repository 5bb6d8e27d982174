//! The error bounds the kernels are held to, each with its derivation, and
//! the random inputs each is stated for. The proptests
//! (`tests/kernels/*.rs`) and the device check (`examples/device_dump`)
//! both use these, so a bound is derived and written once.
//!
//! Throughout, `u` is the f32 unit roundoff (2^-24) and statistics of the
//! inputs are taken in f64.

pub mod attention;
pub mod gemm;
pub mod gla;
pub mod norms;

use crate::check::F32_UNIT_ROUNDOFF;

const U: f64 = F32_UNIT_ROUNDOFF;
