//! `phobos-compile FILE.ph [--emit tokens|ast|ir|ptx]`: runs the Phobos
//! compiler's phases on a file and prints the requested one.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, ValueEnum};
use phobos_build::{Source, check_source, front, ir, lex, parse};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Emit {
    /// The token stream with spans.
    Tokens,
    /// The syntax tree, printed back as normalized source.
    Ast,
    /// The typed tile IR text.
    Ir,
    /// PTX from the MLIR back end (not built yet).
    Ptx,
}

#[derive(Debug, Parser)]
#[command(
    version,
    about = "Compile a Phobos kernel file and print a phase's output"
)]
struct Args {
    /// The `.ph` file to compile.
    file: PathBuf,
    /// Which phase's output to print.
    #[arg(long, value_enum, default_value = "ir")]
    emit: Emit,
}

fn main() -> anyhow::Result<ExitCode> {
    let args = Args::parse();
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("reading kernel file {}", args.file.display()))?;
    let source = Source::file(args.file.display().to_string(), text);
    let output = match args.emit {
        Emit::Tokens => lex(&source).map(|lexed| {
            lexed
                .tokens
                .iter()
                .map(|t| format!("{t}\n"))
                .collect::<String>()
        }),
        Emit::Ast => parse(&source).map(|(program, _)| front::print::program_to_string(&program)),
        Emit::Ir => check_source(&source).map(|module| ir::print::module_to_string(&module)),
        Emit::Ptx => match check_source(&source) {
            // Source errors still come out as errors; only then the gap.
            Ok(_) => anyhow::bail!("--emit ptx: the MLIR/PTX back end is not built yet"),
            Err(d) => Err(d),
        },
    };
    match output {
        Ok(text) => {
            print!("{text}");
            Ok(ExitCode::SUCCESS)
        }
        Err(diagnostics) => {
            eprint!("{}", diagnostics.render());
            Ok(ExitCode::from(1))
        }
    }
}
