//! The `phobos-cluster` binary (scheduler, pod, tensor tools) arrives with the cluster issue.

use clap::Parser;

#[derive(Parser)]
#[command(
    name = "phobos-cluster",
    version,
    about = "Phobos distributed tensor runtime (not yet implemented)"
)]
struct Cli {}

fn main() -> anyhow::Result<()> {
    let _cli = Cli::parse();
    anyhow::bail!("the cluster runtime is not implemented yet")
}
