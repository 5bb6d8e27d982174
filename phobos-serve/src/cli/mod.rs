//! Subcommands that run a model: `run` and `bench`.

pub mod bench;
pub mod load;
pub mod run;
