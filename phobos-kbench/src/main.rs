//! `phobos-kbench`: per-op kernel benchmarks. Today one bench, `qmatmul`
//! (Gemma 3 270M's matmuls against ggml's test-backend-ops in the same
//! run); prints a Markdown table.

use anyhow::Result;
use clap::{Parser, Subcommand};

mod benches;

#[derive(Parser)]
#[command(about = "Phobos per-op kernel benchmarks")]
struct Cli {
    #[command(subcommand)]
    bench: Bench,
}

#[derive(Subcommand)]
enum Bench {
    /// Quantized matmul (phobos-rt host::qmatmul) vs ggml's MUL_MAT.
    Qmatmul(benches::qmatmul::Options),
}

fn main() -> Result<()> {
    match Cli::parse().bench {
        Bench::Qmatmul(opts) => {
            let rows = benches::qmatmul::run(&opts)?;
            print!("{}", benches::qmatmul::markdown(&rows));
        }
    }
    Ok(())
}
