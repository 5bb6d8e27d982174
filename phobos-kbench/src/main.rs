//! `phobos-kbench`: each bundled kernel at stated sizes on one backend,
//! GFLOP/s or GB/s with the config chosen, next to a reference measured in
//! the same run; the launch-latency row; and the tune table's CLI.
//!
//! ```text
//! phobos-kbench [--backend host|cuda] [--bench NAME].. [--size SIZE].. [--autotune "K=V .."] [--csv PATH] [--export-tune FILE]
//! phobos-kbench tune list|clear|export FILE
//! phobos-kbench qmatmul [--m 1,512] [--threads 1,2] ...
//! ```

mod benches;
mod cli;
mod measure;
mod numpy;
mod report;
mod tune_cmd;

use anyhow::{Context, Result, bail};
use clap::Parser;

use cli::{Cli, Command};

/// An error prints as one line, `error: ` and its causes, with exit status
/// 1 (usage errors are clap's, status 2): no backtrace even under
/// `RUST_BACKTRACE`, which `fn main() -> Result` would print.
fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    // Timed the way the `phobos` binary runs: a prompt-sized call's
    // activation buffers are reused from the heap, not faulted in afresh.
    phobos_rt::allocator::keep_freed_memory();
    let filter = tracing_subscriber::EnvFilter::try_from_env("PHOBOS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match &cli.command {
        Some(Command::Tune { action }) => return tune_cmd::run(action),
        Some(Command::Qmatmul(options)) => {
            let rows = benches::qmatmul::run(options)?;
            print!("{}", benches::qmatmul::markdown(&rows));
            return Ok(());
        }
        None => {}
    }
    let device = match cli.backend.as_str() {
        "host" | "cpu" => phobos::Device::host(),
        "cuda" => phobos::Device::cuda(0).context(
            "--backend cuda: no CUDA device in this build (the CUDA rows arrive with the CUDA runtime)",
        )?,
        other => bail!("--backend {other:?}: expected `host` or `cuda`"),
    };
    let registry = benches::registry();
    let selected: Vec<&dyn benches::Bench> = if cli.bench.is_empty() {
        registry.iter().map(AsRef::as_ref).collect()
    } else {
        cli.bench
            .iter()
            .map(|name| {
                registry
                    .iter()
                    .find(|b| b.name() == name)
                    .map(AsRef::as_ref)
                    .with_context(|| {
                        let names: Vec<&str> = registry.iter().map(|b| b.name()).collect();
                        format!("--bench {name:?}: expected one of {}", names.join(", "))
                    })
            })
            .collect::<Result<_>>()?
    };
    let ctx = benches::Ctx::new(device, &cli)?;
    println!("{}", ctx.header());
    let mut rows = Vec::new();
    for bench in selected {
        let sizes = if cli.size.is_empty() {
            bench
                .default_sizes()
                .iter()
                .map(|s| s.to_string())
                .collect()
        } else {
            cli.size.clone()
        };
        for size in &sizes {
            let new_rows = bench
                .run(&ctx, size)
                .with_context(|| format!("bench {} at size {size}", bench.name()))?;
            for row in &new_rows {
                println!("{}", row.display());
            }
            rows.extend(new_rows);
        }
    }
    if let Some(path) = &cli.csv {
        report::write_csv(path, &rows).with_context(|| format!("--csv {}", path.display()))?;
    }
    if let Some(path) = &cli.export_tune {
        tune_cmd::export(path)?;
    }
    Ok(())
}
