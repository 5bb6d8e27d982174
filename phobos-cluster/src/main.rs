//! `phobos-cluster`: tensor files, planning and running cluster jobs.

mod launch;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use phobos_cluster::job::{self, Job};
use phobos_cluster::net::auth::Token;
use phobos_cluster::net::tls::TlsArgs;
use phobos_cluster::plan::{self, Ingest, Machine, PlanOptions};
use phobos_cluster::store::{self, Fill};
use phobos_cluster::{exec, placement, pod, sched};
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
    /// Run a job: a scheduler and N pods as child processes on this
    /// machine, over gRPC on loopback with a fresh token (or, with
    /// --in-process, every supertile in this process). Prints the output
    /// URIs once every output is stored.
    Run {
        job: PathBuf,
        #[command(flatten)]
        options: PlanArgs,
        /// Run every supertile in this process (no scheduler, no pods).
        #[arg(long)]
        in_process: bool,
        #[command(flatten)]
        liveness: Liveness,
        /// Mutual TLS between the children (all use the same files).
        #[command(flatten)]
        tls: TlsArgs,
    },
    /// The scheduler: waits for N pods, plans, runs, prints the output
    /// URIs, exits 0 when every output is stored.
    Sched {
        #[arg(long, default_value = "127.0.0.1:7070")]
        listen: String,
        #[arg(long)]
        job: PathBuf,
        #[command(flatten)]
        options: PlanArgs,
        /// The shared token (default: PHOBOS_CLUSTER_TOKEN).
        #[arg(long)]
        token: Option<String>,
        #[command(flatten)]
        liveness: Liveness,
        /// How long to wait for all pods to join, ms.
        #[arg(long, default_value_t = 120_000)]
        join_timeout_ms: u64,
        #[command(flatten)]
        tls: TlsArgs,
    },
    /// One pod (one process per device): registers with the scheduler,
    /// runs the supertiles it is sent, serves tiles to its peers.
    Pod {
        /// The pod's index, 0..N; default: SLURM_PROCID or
        /// JOB_COMPLETION_INDEX (Kubernetes indexed Jobs).
        #[arg(long)]
        id: Option<usize>,
        /// The scheduler's host:port.
        #[arg(long)]
        sched: String,
        /// Where this pod serves tiles to its peers (port 0: any free one).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: String,
        /// The host:port peers reach this pod at (default: the bound
        /// address, or HOSTNAME:PORT when listening on 0.0.0.0).
        #[arg(long)]
        advertise: Option<String>,
        /// Bytes of supertile working sets held at once.
        #[arg(long, default_value_t = 4 << 30)]
        arena: u64,
        #[arg(long, value_enum, default_value = "host")]
        backend: BackendArg,
        /// The shared token (default: PHOBOS_CLUSTER_TOKEN).
        #[arg(long)]
        token: Option<String>,
        /// How long to keep trying to reach the scheduler, ms.
        #[arg(long, default_value_t = 30_000)]
        connect_timeout_ms: u64,
        /// Supertiles in flight at once (as the arena allows).
        #[arg(long, default_value_t = 2)]
        concurrency: usize,
        /// --backend cuda: the CUDA device ordinal.
        #[arg(long, default_value_t = 0)]
        gpu: usize,
        /// --backend cuda: where compiled PTX is cached by content hash
        /// (default: $XDG_CACHE_HOME/phobos/cluster-ptx or ~/.cache/...).
        #[arg(long)]
        ptx_cache: Option<PathBuf>,
        #[command(flatten)]
        tls: TlsArgs,
    },
    /// Print a Slurm batch script that runs a job: one pod per allocated
    /// GPU (or task), the scheduler on the first node.
    Slurm {
        job: PathBuf,
        #[command(flatten)]
        placement: placement::slurm::SlurmArgs,
    },
    /// Print Kubernetes manifests that run a job: a scheduler Deployment
    /// and Service, the pods as an indexed Job.
    K8s {
        job: PathBuf,
        #[command(flatten)]
        placement: placement::k8s::K8sArgs,
    },
}

#[derive(clap::Args)]
struct Liveness {
    /// Pods send a heartbeat at this interval; a pod silent for 4
    /// intervals is dead and its unstored supertiles are recomputed.
    #[arg(long, default_value_t = 500)]
    heartbeat_ms: u64,
    /// With every pod dead, how long to wait for a restarted one to
    /// rejoin before failing (0: fail at once).
    #[arg(long, default_value_t = 0)]
    rejoin_wait_ms: u64,
}

#[derive(Clone, Copy, ValueEnum)]
enum BackendArg {
    Host,
    Cuda,
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
    /// Pick the `@cluster` values and the supertile shape with the cost
    /// model (default: `@cluster` defaults, the fewest supertiles that
    /// fit, at least one per node).
    #[arg(long)]
    autotune: bool,
    /// Device memory of one node, bytes: bounds every supertile's and
    /// segment's working set (cost model input).
    #[arg(long, requires = "autotune")]
    vram: Option<u64>,
    /// Link bandwidth of one node, bytes/s (cost model input).
    #[arg(long, requires = "autotune")]
    link_bw: Option<f64>,
    /// Leaf compute rate of one node, flop/s (cost model input).
    #[arg(long, requires = "autotune")]
    leaf_flops: Option<f64>,
}

impl PlanArgs {
    /// The same options as command-line arguments, for the scheduler.
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
        if self.autotune {
            out.push("--autotune".to_string());
        }
        if let Some(v) = self.vram {
            out.extend(["--vram".to_string(), v.to_string()]);
        }
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
        machine.vram_bytes = self.vram;
        PlanOptions {
            nodes: self.nodes,
            budget_bytes: self.budget,
            ingest: self.ingest,
            autotune: self.autotune,
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
            in_process,
            liveness,
            tls,
        } => {
            if in_process {
                run_command(&job, &options)
            } else {
                // Bad TLS files fail here, before any child starts.
                tls.load()?;
                let exe = std::env::current_exe().context("locating this executable")?;
                let mut forward = options.forward();
                forward.extend(liveness.forward());
                launch::run_children(&exe, &job, options.nodes, &forward, &tls.forward())
                    .with_context(|| format!("running {}", job.display()))
            }
        }
        Command::Sched {
            listen,
            job,
            options,
            token,
            liveness,
            join_timeout_ms,
            tls,
        } => {
            let token = Token::from_arg_or_env(token)?;
            let options = sched::SchedOptions {
                job_path: job.clone(),
                plan: options.options(),
                listen,
                token,
                tls: tls.load()?,
                heartbeat_ms: liveness.heartbeat_ms,
                join_timeout_ms,
                rejoin_wait_ms: liveness.rejoin_wait_ms,
            };
            let runtime = runtime()?;
            let report = runtime
                .block_on(sched::run(options, |address| {
                    use std::io::Write;
                    // `run` reads this line to learn the port.
                    println!("listening on {address}");
                    let _ = std::io::stdout().flush();
                }))
                .with_context(|| format!("scheduling {}", job.display()));
            // Compute threads still running for a lost cause are not waited for.
            runtime.shutdown_timeout(std::time::Duration::from_millis(200));
            let report = report?;
            tracing::info!(
                seconds = report.seconds,
                bytes_loaded = report.moved.loaded,
                bytes_fetched = report.moved.fetched,
                bytes_stored = report.moved.stored,
                bytes_moved = report.moved.loaded + report.moved.fetched + report.moved.stored,
                predicted_bytes = report.predicted_bytes,
                predicted_s = report.predicted_s,
                recomputed = report.recomputed,
                "job done"
            );
            for uri in report.outputs {
                println!("{uri}");
            }
            Ok(())
        }
        Command::Pod {
            id,
            sched,
            listen,
            advertise,
            arena,
            backend,
            token,
            connect_timeout_ms,
            concurrency,
            gpu,
            ptx_cache,
            tls,
        } => {
            let id = match id {
                Some(id) => id,
                None => placement::rank_from_env()?,
            };
            let options = pod::PodOptions {
                id,
                sched,
                listen,
                advertise,
                arena_bytes: arena,
                backend: match backend {
                    BackendArg::Host => pod::Backend::Host,
                    BackendArg::Cuda => pod::Backend::Cuda,
                },
                token: Token::from_arg_or_env(token)?,
                tls: tls.load()?,
                connect_timeout_ms,
                concurrency,
                gpu,
                ptx_cache: ptx_cache
                    .unwrap_or_else(phobos_cluster::exec::cuda::ptx_cache::PtxCache::default_dir),
            };
            let runtime = runtime()?;
            let result = runtime
                .block_on(pod::run(options))
                .with_context(|| format!("pod{id}"));
            runtime.shutdown_timeout(std::time::Duration::from_millis(200));
            result
        }
        Command::Slurm { job, placement } => {
            print!("{}", placement::slurm::script(&job, &placement)?);
            Ok(())
        }
        Command::K8s { job, placement } => {
            print!("{}", placement::k8s::manifests(&job, &placement)?);
            Ok(())
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

impl Liveness {
    fn forward(&self) -> Vec<String> {
        vec![
            "--heartbeat-ms".into(),
            self.heartbeat_ms.to_string(),
            "--rejoin-wait-ms".into(),
            self.rejoin_wait_ms.to_string(),
        ]
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
