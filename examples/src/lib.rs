//! Example kernels, shared by the runnable examples and the tests: the
//! kernels of `kernels/*.ph` compiled with `kernel_file!`, the plain Rust
//! references each is checked against, comparison helpers and seeded
//! random inputs.

pub mod bounds;
pub mod check;
pub mod edge;
pub mod grid;
pub mod kernels;
pub mod random;
pub mod reference;
pub mod runnable;
