//! `phobos-cluster`: tensor files, planning and running cluster jobs.

mod procs;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use phobos_cluster::exec;
use phobos_cluster::job::{self, Job};
use phobos_cluster::plan::{self, Ingest, Machine, PlanOptions};
use phobos_cluster::store::{self, Fill};
use phobos_rt::DType;

#[derive(Parser)]
#[command(
    name = "phobos-cluster",
    version,
    about = "Phobos cluster runtime: tensor files, job planning and execution"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create or inspect raw tensor files (little-endian, row-major, no header).
    Tensor {
        #[command(subcommand)]
        action: TensorAction,
    },
    /// Plan a job and print the plan (or the per-node instruction DAG).
    Plan {
        job: PathBuf,
        #[command(flatten)]
        options: PlanArgs,
        /// Print the per-node instruction DAG as Graphviz DOT.
        #[arg(long)]
        dot: bool,
    },
    /// Plan a job and run every supertile in this process, then commit
    /// the outputs (all or nothing) and print their URIs.
    Run {
        job: PathBuf,
        #[command(flatten)]
        options: PlanArgs,
        /// One worker process per node (this process schedules, detects
        /// dead or silent workers and recomputes their supertiles).
        #[arg(long)]
        processes: bool,
        /// Worker heartbeat interval; a worker silent for 4 intervals is
        /// declared dead.
        #[arg(long, default_value_t = 500)]
        heartbeat_ms: u64,
    },
    /// (internal) One node's worker process, started by `run --processes`.
    #[command(hide = true)]
    Worker {
        job: PathBuf,
        #[command(flatten)]
        options: PlanArgs,
        #[arg(long)]
        node: usize,
        #[arg(long, default_value_t = 0)]
        attempt: usize,
        #[arg(long, default_value_t = 500)]
        heartbeat_ms: u64,
        /// Comma-separated supertile ids, run in this order.
        #[arg(long)]
        supertiles: String,
    },
}

#[derive(clap::Args)]
struct PlanArgs {
    /// Nodes (pods) to plan for.
    #[arg(long, default_value_t = 1)]
    nodes: usize,
    /// Bytes of tensor regions one node may hold at once.
    #[arg(long)]
    budget: Option<u64>,
    /// How nodes get inputs: direct (each reads the file store) or home-fetch.
    #[arg(long, default_value = "direct")]
    ingest: Ingest,
    /// Leaf compute rate of one node, flop/s (cost model input).
    #[arg(long)]
    leaf_flops: Option<f64>,
    /// Link bandwidth of one node, bytes/s (cost model input).
    #[arg(long)]
    link_bw: Option<f64>,
}

impl PlanArgs {
    /// The same options as command-line arguments, for worker processes.
    fn forward(&self) -> Vec<String> {
        let mut out = vec!["--nodes".to_string(), self.nodes.to_string()];
        if let Some(b) = self.budget {
            out.extend(["--budget".to_string(), b.to_string()]);
        }
        let ingest = match self.ingest {
            Ingest::Direct => "direct",
            Ingest::HomeFetch => "home-fetch",
        };
        out.extend(["--ingest".to_string(), ingest.to_string()]);
        if let Some(f) = self.leaf_flops {
            out.extend(["--leaf-flops".to_string(), f.to_string()]);
        }
        if let Some(b) = self.link_bw {
            out.extend(["--link-bw".to_string(), b.to_string()]);
        }
        out
    }

    fn options(&self) -> PlanOptions {
        let mut machine = Machine::default();
        if let Some(f) = self.leaf_flops {
            machine.leaf_flops = f;
        }
        if let Some(b) = self.link_bw {
            machine.link_bytes_per_s = b;
        }
        PlanOptions {
            nodes: self.nodes,
            budget_bytes: self.budget,
            ingest: self.ingest,
            machine,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum FillArg {
    Zero,
    Random,
    Const,
    Iota,
}

#[derive(Subcommand)]
enum TensorAction {
    /// Create a tensor file at its full size.
    Init {
        #[arg(long)]
        uri: String,
        /// RxC or N.
        #[arg(long)]
        shape: String,
        #[arg(long, default_value = "f32")]
        dtype: String,
        #[arg(long, value_enum, default_value = "zero")]
        fill: FillArg,
        /// The value for --fill const.
        #[arg(long, default_value_t = 0.0)]
        value: f64,
        /// The seed for --fill random.
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Print a few elements spread across a tensor file.
    Peek {
        #[arg(long)]
        uri: String,
        #[arg(long)]
        shape: String,
        #[arg(long, default_value = "f32")]
        dtype: String,
        /// How many elements to print.
        #[arg(long, default_value_t = 8)]
        count: usize,
    },
}

fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("PHOBOS_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Tensor { action } => tensor(action),
        Command::Plan { job, options, dot } => plan_command(&job, &options, dot),
        Command::Run {
            job,
            options,
            processes,
            heartbeat_ms,
        } => {
            if processes {
                let (loaded, _, plan) = load(&job, &options)?;
                let exe = std::env::current_exe().context("locating this executable")?;
                let args = procs::WorkerArgs {
                    forward: options.forward(),
                    heartbeat_ms,
                };
                procs::run_processes(&exe, &job, &loaded, &plan, &args)
                    .with_context(|| format!("running {}", job.display()))?;
                for t in loaded.outputs() {
                    println!("{}", t.uri);
                }
                Ok(())
            } else {
                run_command(&job, &options)
            }
        }
        Command::Worker {
            job,
            options,
            node,
            attempt,
            heartbeat_ms,
            supertiles,
        } => {
            let (loaded, binding, plan) = load(&job, &options)?;
            let ids = supertiles
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| {
                    s.parse::<usize>()
                        .with_context(|| format!("bad supertile id `{s}`"))
                })
                .collect::<Result<Vec<_>>>()?;
            procs::worker(&loaded, &binding, &plan, node, attempt, &ids, heartbeat_ms)
        }
    }
}

fn dtype(name: &str) -> Result<DType> {
    DType::from_name(name).with_context(|| format!("unknown dtype `{name}`"))
}

fn tensor(action: TensorAction) -> Result<()> {
    match action {
        TensorAction::Init {
            uri,
            shape,
            dtype: d,
            fill,
            value,
            seed,
        } => {
            let path = store::uri_path(&uri, None)?;
            let shape = store::parse_shape(&shape)?;
            let fill = match fill {
                FillArg::Zero => Fill::Zero,
                FillArg::Random => Fill::Random { seed },
                FillArg::Const => Fill::Const(value),
                FillArg::Iota => Fill::Iota,
            };
            store::init_tensor(&path, dtype(&d)?, &shape, fill)
                .with_context(|| format!("creating {uri}"))?;
            println!(
                "{uri}: {} {:?}, {} bytes",
                d,
                shape,
                store::len_bytes(dtype(&d)?, &shape)
            );
        }
        TensorAction::Peek {
            uri,
            shape,
            dtype: d,
            count,
        } => {
            let path = store::uri_path(&uri, None)?;
            let shape = store::parse_shape(&shape)?;
            for (index, value) in store::peek_tensor(&path, dtype(&d)?, &shape, count)? {
                let at = if shape.len() == 2 {
                    format!("[{}, {}]", index / shape[1], index % shape[1])
                } else {
                    format!("[{index}]")
                };
                println!("{at} = {value}");
            }
        }
    }
    Ok(())
}

fn load(job_path: &Path, args: &PlanArgs) -> Result<(Job, job::Binding, plan::Plan)> {
    let job = Job::load(job_path)?;
    let binding = job::bind(&job)?;
    let started = Instant::now();
    let plan = plan::plan(&job, &binding, &args.options())?;
    tracing::info!(
        kernel = %plan.kernel.name,
        config = ?plan.config.values,
        grid = ?plan.grid,
        supertile_programs = ?plan.supertile_programs,
        supertiles = plan.supertiles.len(),
        nodes = plan.nodes,
        segments_per_node = ?plan.segments.iter().map(Vec::len).collect::<Vec<_>>(),
        predicted_s = plan.prediction.seconds,
        predicted_bytes = plan.prediction.bytes_moved,
        peak_segment_bytes = plan.prediction.peak_segment_bytes,
        plan_ms = started.elapsed().as_secs_f64() * 1e3,
        "planned"
    );
    Ok((job, binding, plan))
}

fn plan_command(job_path: &Path, args: &PlanArgs, dot: bool) -> Result<()> {
    let (_, _, plan) = load(job_path, args)?;
    let instrs = plan::lower(&plan);
    if dot {
        print!("{}", plan::dot::to_dot(&plan, &instrs));
        return Ok(());
    }
    for node in 0..plan.nodes {
        let mine: Vec<_> = instrs.iter().filter(|i| i.node == node).collect();
        let mut counts = std::collections::BTreeMap::new();
        for i in &mine {
            *counts.entry(i.op.name()).or_insert(0usize) += 1;
        }
        println!(
            "node{node}: {} segment(s), {} instructions {:?}",
            plan.segments[node].len(),
            mine.len(),
            counts
        );
    }
    println!(
        "predicted: {:.3} s, {:.3e} flop, {:.0} bytes moved, peak segment {} bytes",
        plan.prediction.seconds,
        plan.prediction.flops,
        plan.prediction.bytes_moved,
        plan.prediction.peak_segment_bytes
    );
    Ok(())
}

fn run_command(job_path: &Path, args: &PlanArgs) -> Result<()> {
    let (job, binding, plan) = load(job_path, args)?;
    let started = Instant::now();
    let bar = indicatif::ProgressBar::new(plan.supertiles.len() as u64).with_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40}] {pos}/{len} supertiles",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let traffic = exec::run_local(&job, &binding, &plan, &|| bar.inc(1))
        .with_context(|| format!("running {}", job_path.display()))?;
    bar.finish_and_clear();
    tracing::info!(
        seconds = started.elapsed().as_secs_f64(),
        bytes_loaded = traffic.bytes_loaded,
        bytes_stored = traffic.bytes_stored,
        "job done"
    );
    for t in job.outputs() {
        println!("{}", t.uri);
    }
    Ok(())
}
