//! The `phobos` command line.

mod cli;
mod inspect;
mod server;
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
    /// Generate text: one answer to PROMPT, or an interactive chat without one.
    Run(cli::run::RunArgs),
    /// Measure prompt processing and generation speed (llama-bench's tests).
    Bench(cli::bench::BenchArgs),
    /// Print a GGUF file's metadata, tensor counts by type and parameter count.
    Inspect {
        model: PathBuf,
        /// Also list every tensor (name, type, shape, offset).
        #[arg(long)]
        tensors: bool,
    },
    /// Tokenize text with the model's own tokenizer; prints ids as a JSON array.
    ///
    /// The text is TEXT, or the bytes of --file PATH, or standard input when
    /// TEXT is `-` or when neither is given and stdin is not a terminal. Text
    /// from a file or stdin is taken verbatim (a final newline is part of it).
    /// Text that begins with `-` goes after `--`: `phobos tokenize M -- -x`
    /// (a lone `-` still means stdin).
    Tokenize {
        model: PathBuf,
        text: Option<String>,
        /// Read the text from this file instead.
        #[arg(long, value_name = "PATH", conflicts_with = "text")]
        file: Option<PathBuf>,
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
    /// Serve the model over an OpenAI-compatible HTTP API, with a chat page
    /// at / (see README "Serving").
    Serve(server::ServeArgs),
}

/// An error prints as one line, `error: ` and its causes, with exit status
/// 1: bad input is not a crash, so no backtrace even under `RUST_BACKTRACE`
/// (which `fn main() -> Result` would print). Usage errors are clap's
/// (status 2).
fn main() -> std::process::ExitCode {
    phobos_rt::allocator::keep_freed_memory();
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {}", one_line(&err));
            std::process::ExitCode::FAILURE
        }
    }
}

/// The error and its causes joined by `: `, leaving out a cause whose text
/// its parent already ends with (an I/O error that its GGUF error both
/// shows and holds as its source).
fn one_line(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if line.ends_with(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // The server logs its requests by default; while its dashboard owns the
    // terminal, log lines are dropped instead of drawn over it.
    let serving = match &cli.command {
        Command::Serve(_) => true,
        Command::Run(args) => args.listen.is_some(),
        _ => false,
    };
    let default_level = if serving { "info" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_env("PHOBOS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| -> Box<dyn std::io::Write> {
            if server::dashboard::is_active() {
                Box::new(std::io::sink())
            } else {
                Box::new(std::io::stderr())
            }
        })
        .init();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match cli.command {
        Command::Run(args) => cli::run::run(args),
        Command::Bench(args) => cli::bench::run(args),
        Command::Inspect { model, tensors } => inspect::run(&model, tensors, &mut out),
        Command::Tokenize {
            model,
            text,
            file,
            pieces,
            no_bos,
            no_parse_special,
        } => tokenize::run(
            &model,
            tokenize::Input::from_args(text, file),
            tokenize::Options {
                pieces,
                add_bos: !no_bos,
                parse_special: !no_parse_special,
            },
            &mut out,
        ),
        Command::Serve(args) => {
            // The server's threads print too: release the lock first.
            drop(out);
            server::run(args)
        }
    }
}
