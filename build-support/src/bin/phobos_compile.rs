//! `phobos-compile FILE.ph [--chip sm_XY] [--index-bits 32|64] [--config
//! K=V ...] [--kernel NAME] [-v] [-o out.ptx]`: compiles one variant of a
//! kernel to PTX through MLIR (feature `ptx`, on by default) and writes it.
//!
//! `--emit tokens|ast|ir` prints an earlier phase instead. The PTX-only
//! flags and an output named `*.ptx` then contradict the request and are an
//! error, never silently ignored: `--emit ir -o k.ptx` must not leave IR
//! text in a file every tool will read as PTX.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, ValueEnum};
use phobos_build::{Source, check_source, front, ir, lex, parse};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Emit {
    /// The token stream with spans.
    Tokens,
    /// The syntax tree, printed back as normalized source.
    Ast,
    /// The typed tile IR text.
    Ir,
    /// PTX of one variant from the MLIR back end (the default).
    Ptx,
}

impl Emit {
    fn flag(self) -> &'static str {
        match self {
            Emit::Tokens => "--emit tokens",
            Emit::Ast => "--emit ast",
            Emit::Ir => "--emit ir",
            Emit::Ptx => "--emit ptx",
        }
    }
}

/// The PTX defaults: the chip every build targets first, and the offset
/// width the runtime launches.
#[cfg(feature = "ptx")]
const DEFAULT_CHIP: &str = "sm_80";
#[cfg(feature = "ptx")]
const DEFAULT_INDEX_BITS: u32 = 32;

#[derive(Debug, Parser)]
#[command(
    version,
    about = "Compile a Phobos kernel file to PTX (or print an earlier phase with --emit)"
)]
struct Args {
    /// The `.ph` file to compile.
    file: PathBuf,
    /// What to produce: PTX unless another phase is asked for.
    #[arg(long, value_enum)]
    emit: Option<Emit>,
    /// PTX only: the chip, `sm_XY` [default: sm_80].
    #[arg(long)]
    chip: Option<String>,
    /// PTX only: width of tensor offsets in the kernel, 32 or 64 [default: 32].
    #[arg(long, value_parser = index_bits)]
    index_bits: Option<u32>,
    /// PTX only: a tune parameter's value, `NAME=VALUE` (repeatable);
    /// unset ones take their default (first) value.
    #[arg(long = "config", value_name = "NAME=VALUE")]
    config: Vec<String>,
    /// PTX only: which kernel of the file (needed when it has several).
    #[arg(long)]
    kernel: Option<String>,
    /// PTX only: also run `ptxas -v` (found as the build finds it:
    /// `PHOBOS_PTXAS`, PATH, the PyPI package) and print the registers,
    /// spills and whether the CTA fits the register file to stderr.
    #[arg(short = 'v', long)]
    verbose: bool,
    /// Write the output here instead of stdout.
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
}

fn index_bits(text: &str) -> Result<u32, String> {
    match text {
        "32" => Ok(32),
        "64" => Ok(64),
        _ => Err(format!("`{text}`: the index width is 32 or 64")),
    }
}

impl Args {
    /// What to produce, or why the flags contradict each other.
    fn emit(&self) -> anyhow::Result<Emit> {
        let emit = self.emit.unwrap_or(Emit::Ptx);
        if emit == Emit::Ptx {
            return Ok(emit);
        }
        let ptx_only: Vec<&str> = [
            (self.chip.is_some(), "--chip"),
            (self.index_bits.is_some(), "--index-bits"),
            (!self.config.is_empty(), "--config"),
            (self.kernel.is_some(), "--kernel"),
            (self.verbose, "--verbose"),
        ]
        .into_iter()
        .filter_map(|(given, flag)| given.then_some(flag))
        .collect();
        if !ptx_only.is_empty() {
            let (verb, pronoun) = if ptx_only.len() == 1 {
                ("applies", "it")
            } else {
                ("apply", "them")
            };
            anyhow::bail!(
                "{} only {verb} to PTX, but {} asks for another output: drop {pronoun} or the --emit",
                ptx_only.join(", "),
                emit.flag(),
            );
        }
        if let Some(path) = self.output.as_deref().filter(|p| names_ptx(p)) {
            anyhow::bail!(
                "-o {}: a `.ptx` file would hold the output of {}, which is not PTX; \
                 drop the --emit to write PTX, or name the file otherwise",
                path.display(),
                emit.flag()
            );
        }
        Ok(emit)
    }
}

fn names_ptx(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("ptx"))
}

/// Source errors render with their spans, exit status 1; other errors
/// print as one line, `error: ` and their causes, also status 1 (usage
/// errors are clap's, status 2): no backtrace even under `RUST_BACKTRACE`,
/// which `fn main() -> Result` would print.
fn main() -> ExitCode {
    run().unwrap_or_else(|err| {
        eprintln!("error: {err:#}");
        ExitCode::FAILURE
    })
}

fn run() -> anyhow::Result<ExitCode> {
    let args = Args::parse();
    let emit = args.emit()?;
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("reading kernel file {}", args.file.display()))?;
    let source = Source::file(args.file.display().to_string(), text);
    let output = match emit {
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
    let chip = args.chip.as_deref().unwrap_or(DEFAULT_CHIP);
    let index_bits = args.index_bits.unwrap_or(DEFAULT_INDEX_BITS);
    let variant = phobos_build::back::mlir::compile_ptx(&kernel, &config, chip, index_bits)
        .with_context(|| format!("compiling `{}` [{config}] for {chip}", kernel.name))?;
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
        "PTX needs phobos-build's feature `ptx` (on by default; this binary was built \
         without it) and LLVM/MLIR 22 (scripts/setup_llvm.sh): \
         cargo run -p phobos-build --bin phobos-compile -- ..., or --emit ir for the IR"
    )
}
