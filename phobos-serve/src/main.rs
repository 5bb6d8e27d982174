//! The `phobos` command line.

mod inspect;
mod tokenize;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "phobos",
    version,
    about = "Run, serve and inspect GGUF models on Phobos kernels"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print a GGUF file's metadata, tensor counts by type and parameter count.
    Inspect {
        model: PathBuf,
        /// Also list every tensor (name, type, shape, offset).
        #[arg(long)]
        tensors: bool,
    },
    /// Tokenize text with the model's own tokenizer; prints ids as a JSON array.
    Tokenize {
        model: PathBuf,
        text: String,
        /// Print the token pieces instead of ids.
        #[arg(long)]
        pieces: bool,
        /// Do not add BOS even when the model's metadata asks for it.
        #[arg(long)]
        no_bos: bool,
        /// Treat special-token text such as `<|im_start|>` as plain text.
        #[arg(long)]
        no_parse_special: bool,
    },
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("PHOBOS_LOG"))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match cli.command {
        Command::Inspect { model, tensors } => inspect::run(&model, tensors, &mut out),
        Command::Tokenize {
            model,
            text,
            pieces,
            no_bos,
            no_parse_special,
        } => tokenize::run(
            &model,
            &text,
            tokenize::Options {
                pieces,
                add_bos: !no_bos,
                parse_special: !no_parse_special,
            },
            &mut out,
        ),
    }
}
