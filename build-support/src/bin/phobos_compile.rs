//! `phobos-compile FILE.ph [--emit tokens|ast|ir|ptx]`: runs the Phobos
//! compiler's phases on a file and prints the requested one.
//!
//! `--emit ptx --chip sm_XY --index-bits 32|64 [--config K=V ...] [--kernel
//! NAME] [-o out.ptx]` compiles one variant through MLIR (feature `ptx`).

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
    /// PTX of one variant from the MLIR back end (feature `ptx`).
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
    /// `--emit ptx`: the chip, `sm_XY`.
    #[arg(long, default_value = "sm_80")]
    chip: String,
    /// `--emit ptx`: width of tensor offsets in the kernel.
    #[arg(long, default_value_t = 32)]
    index_bits: u32,
    /// `--emit ptx`: a tune parameter's value, `NAME=VALUE` (repeatable);
    /// unset ones take their default (first) value.
    #[arg(long = "config", value_name = "NAME=VALUE")]
    config: Vec<String>,
    /// `--emit ptx`: which kernel of the file (needed when it has several).
    #[arg(long)]
    kernel: Option<String>,
    /// `--emit ptx`: also run `ptxas -v` (found as the build finds it:
    /// `PHOBOS_PTXAS`, PATH, the PyPI package) and print the registers,
    /// spills and whether the CTA fits the register file to stderr.
    #[arg(short = 'v', long)]
    verbose: bool,
    /// Write the output here instead of stdout.
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
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
            Ok(module) => Ok(emit_ptx(&module, &args)?),
            Err(d) => Err(d),
        },
    };
    match output {
        Ok(text) => {
            match &args.output {
                Some(path) => std::fs::write(path, &text)
                    .with_context(|| format!("writing {}", path.display()))?,
                None => print!("{text}"),
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(diagnostics) => {
            eprint!("{}", diagnostics.render());
            Ok(ExitCode::from(1))
        }
    }
}

/// The kernel `--kernel` names (or the only one), under `--config`.
fn selected(module: &ir::Module, args: &Args) -> anyhow::Result<(ir::Kernel, ir::Config)> {
    let kernel = match &args.kernel {
        Some(name) => module
            .kernels
            .iter()
            .find(|k| &k.name == name)
            .with_context(|| format!("--kernel {name}: the file has no kernel of that name"))?,
        None => match module.kernels.as_slice() {
            [only] => only,
            kernels => anyhow::bail!(
                "the file has {} kernels ({}); choose one with --kernel NAME",
                kernels.len(),
                kernels
                    .iter()
                    .map(|k| k.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
    };
    let mut config = kernel.default_config();
    for assignment in &args.config {
        let (name, value) = assignment
            .split_once('=')
            .with_context(|| format!("--config {assignment}: expected NAME=VALUE"))?;
        let value: i64 = value
            .trim()
            .parse()
            .with_context(|| format!("--config {assignment}: VALUE must be an integer"))?;
        let slot = config
            .values
            .iter_mut()
            .find(|(n, _)| n == name.trim())
            .with_context(|| {
                format!(
                    "--config {assignment}: `{}` has no tune parameter `{name}` (it has: {})",
                    kernel.name,
                    kernel
                        .tune
                        .iter()
                        .map(|t| t.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
        slot.1 = value;
    }
    if !kernel.configs().contains(&config) {
        anyhow::bail!(
            "config [{config}] is not in the tune space of `{}` (every value must be one the @autotune lists)",
            kernel.name
        );
    }
    Ok((kernel.clone(), config))
}

#[cfg(feature = "ptx")]
fn emit_ptx(module: &ir::Module, args: &Args) -> anyhow::Result<String> {
    let (kernel, config) = selected(module, args)?;
    let variant =
        phobos_build::back::mlir::compile_ptx(&kernel, &config, &args.chip, args.index_bits)
            .with_context(|| format!("compiling `{}` [{config}] for {}", kernel.name, args.chip))?;
    eprintln!(
        "{} [{config}] {} index_bits={}: threads={} shared_bytes={}",
        kernel.name, variant.chip, variant.index_bits, variant.threads, variant.shared_bytes
    );
    if args.verbose {
        print_resource_usage(&variant)?;
    }
    Ok(variant.ptx)
}

/// `ptxas -v`'s view of `variant`, on stderr.
#[cfg(feature = "ptx")]
fn print_resource_usage(variant: &phobos_build::back::mlir::PtxVariant) -> anyhow::Result<()> {
    use phobos_build::back::mlir::ptxas::{self, Ptxas};
    let Some(ptxas) = Ptxas::detect()? else {
        eprintln!(
            "no ptxas ({}, PATH, pip package nvidia-cuda-nvcc-cu12): resource usage not measured",
            ptxas::PTXAS_ENV
        );
        return Ok(());
    };
    let usage = ptxas.measure(&variant.ptx, &variant.chip, &variant.kernel)?;
    let fit = ptxas::register_file_overflow(usage.registers, variant.threads).map_or_else(
        || "fits the register file".to_string(),
        |why| format!("does NOT fit: {why}"),
    );
    eprintln!(
        "ptxas -v ({}): registers={} spill_stores_bytes={} spill_loads_bytes={} \
         stack_frame_bytes={} shared_bytes={}; {} threads {fit}",
        ptxas.version,
        usage.registers,
        usage.spill_store_bytes,
        usage.spill_load_bytes,
        usage.stack_frame_bytes,
        usage.shared_bytes,
        variant.threads
    );
    Ok(())
}

#[cfg(not(feature = "ptx"))]
fn emit_ptx(module: &ir::Module, args: &Args) -> anyhow::Result<String> {
    // Checks the arguments first, so a bad --config is reported either way.
    selected(module, args)?;
    anyhow::bail!(
        "--emit ptx needs phobos-build's feature `ptx` (LLVM/MLIR 22: scripts/setup_llvm.sh), \
         e.g. cargo run -p phobos-build --features ptx --bin phobos-compile -- ..."
    )
}
