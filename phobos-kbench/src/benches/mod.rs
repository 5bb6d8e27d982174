//! One module per benchmark; each exposes `Options` and
//! `run(&Options) -> Result<Vec<Row>>` so a registry can drive it.

pub mod qmatmul;
