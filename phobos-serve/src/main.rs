//! The `phobos` command line.

use clap::Parser;

#[derive(Parser)]
#[command(
    name = "phobos",
    version,
    about = "Run, serve and inspect GGUF models on Phobos kernels"
)]
struct Cli {}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("PHOBOS_LOG"))
        .init();
    let _cli = Cli::parse();
    Ok(())
}
