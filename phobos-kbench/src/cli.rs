//! Command-line arguments.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "phobos-kbench",
    about = "Bundled Phobos kernels at stated sizes, next to references measured in the same run"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// `host` or `cuda`.
    #[arg(long, default_value = "host")]
    pub backend: String,
    /// Only these benches (repeatable): gemm_f32, softmax, rmsnorm,
    /// layernorm, flash_attn_f32, saxpy, launch_latency.
    #[arg(long)]
    pub bench: Vec<String>,
    /// Sizes (repeatable), in the bench's form: gemm `N` or `MxNxK`,
    /// row-wise kernels `RxC`, flash attention `HxS` (head dim 64), saxpy
    /// `N`. Default: each bench's stated sizes.
    #[arg(long)]
    pub size: Vec<String>,
    /// Pin the config instead of the tuned one, e.g. "TILE_M=64 TILE_N=128"
    /// (parameters a bench's kernel lacks are an error).
    #[arg(long)]
    pub autotune: Option<String>,
    /// Also write every row to this CSV file.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// After the run, write the tune cache as a table for PHOBOS_TUNE_TABLE.
    #[arg(long)]
    pub export_tune: Option<PathBuf>,
    /// Skip the numpy (OpenBLAS) reference even when python3 has numpy.
    #[arg(long)]
    pub no_numpy: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Quantized matmul (phobos-rt `host::qmatmul`) on Gemma 3 270M's
    /// shapes, next to ggml's `test-backend-ops perf -o MUL_MAT` in the
    /// same run; prints a Markdown table.
    Qmatmul(crate::benches::qmatmul::Options),
    /// The user's tune cache: list, clear, or export it as a table.
    Tune {
        #[command(subcommand)]
        action: TuneAction,
    },
}

#[derive(Debug, Subcommand)]
pub enum TuneAction {
    /// Every stored winner (and unreadable files).
    List,
    /// Removes every stored winner.
    Clear,
    /// Writes the stored winners as a table for PHOBOS_TUNE_TABLE.
    Export { file: PathBuf },
}
